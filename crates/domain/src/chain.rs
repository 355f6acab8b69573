//! The chain port and the verification rules every payment goes through, in test mode (the
//! simulated chain) and in live mode (Polygon) alike.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::merchant::WalletAddress;
use crate::mode::Scope;
use crate::money::Amount;
use crate::payment::{FailureReason, TxHash};

/// A token transfer as the chain reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedTransfer {
    pub tx_hash: TxHash,
    pub chain_id: u64,
    pub token_contract: WalletAddress,
    pub recipient: WalletAddress,
    pub sender: Option<String>,
    pub amount: Amount,
    /// False when the transaction reverted.
    pub succeeded: bool,
    pub block_time: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Observation {
    Found(ObservedTransfer),
    /// The chain does not know the transaction (yet).
    NotFound,
}

/// The chain, as verification sees it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Chain: Send + Sync {
    /// What the chain says of `tx` for `scope`'s mode. Errors: `Unavailable` when the chain
    /// cannot be asked now; `FeatureUnavailable` when the mode's chain is not configured.
    async fn observe(&self, scope: &Scope, tx: &TxHash) -> Result<Observation, Error>;
}

/// What a payment must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    pub chain_id: u64,
    pub token_contract: WalletAddress,
    pub recipient: WalletAddress,
    /// The checkout's expiry: a transfer mined after it does not pay this checkout.
    pub expires_at: DateTime<Utc>,
}

/// The outcome of verification (before the duplicate check, which needs the store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    Verified { amount: Amount, sender: Option<String>, at: DateTime<Utc> },
    Failed { reason: FailureReason },
}

/// Checks chain id, token contract, recipient, success, expiry and a non-zero amount.
pub fn verify(expected: &Expected, observation: &Observation) -> Verdict {
    use FailureReason as R;
    let fail = |reason| Verdict::Failed { reason };
    let t = match observation {
        Observation::NotFound => return fail(R::TransactionNotFound),
        Observation::Found(t) => t,
    };
    if !t.succeeded {
        return fail(R::TransactionReverted);
    }
    if t.chain_id != expected.chain_id {
        return fail(R::WrongChain);
    }
    if t.token_contract != expected.token_contract {
        return fail(R::WrongTokenContract);
    }
    if t.recipient != expected.recipient {
        return fail(R::WrongRecipient);
    }
    if t.block_time >= expected.expires_at {
        return fail(R::CheckoutExpired);
    }
    if t.amount.is_zero() {
        return fail(R::ZeroAmount);
    }
    Verdict::Verified { amount: t.amount.clone(), sender: t.sender.clone(), at: t.block_time }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merchant::Token;
    use crate::money::Decimal6;
    use chrono::Duration;

    fn setup() -> (Expected, ObservedTransfer) {
        let now = Utc::now();
        let wallet = WalletAddress::parse("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed").unwrap();
        let expected = Expected {
            chain_id: 137,
            token_contract: Token::Usdc.polygon_contract(),
            recipient: wallet.clone(),
            expires_at: now + Duration::minutes(30),
        };
        let t = ObservedTransfer {
            tx_hash: TxHash::parse(&format!("0x{}", "a".repeat(64))).unwrap(),
            chain_id: 137,
            token_contract: Token::Usdc.polygon_contract(),
            recipient: wallet,
            sender: None,
            amount: Decimal6::parse("10").unwrap(),
            succeeded: true,
            block_time: now,
        };
        (expected, t)
    }

    #[test]
    fn every_rule() {
        let (e, t) = setup();
        assert!(matches!(verify(&e, &Observation::Found(t.clone())), Verdict::Verified { .. }));
        let reason = |t: ObservedTransfer| match verify(&e, &Observation::Found(t)) {
            Verdict::Failed { reason } => reason,
            v => panic!("{v:?}"),
        };
        use FailureReason as R;
        assert_eq!(reason(ObservedTransfer { succeeded: false, ..t.clone() }), R::TransactionReverted);
        assert_eq!(reason(ObservedTransfer { chain_id: 1, ..t.clone() }), R::WrongChain);
        assert_eq!(
            reason(ObservedTransfer { token_contract: Token::Usdt.polygon_contract(), ..t.clone() }),
            R::WrongTokenContract
        );
        assert_eq!(
            reason(ObservedTransfer { recipient: Token::Usdt.polygon_contract(), ..t.clone() }),
            R::WrongRecipient
        );
        assert_eq!(reason(ObservedTransfer { block_time: e.expires_at, ..t.clone() }), R::CheckoutExpired);
        assert_eq!(reason(ObservedTransfer { amount: Decimal6::zero(), ..t.clone() }), R::ZeroAmount);
        assert!(matches!(verify(&e, &Observation::NotFound), Verdict::Failed { .. }));
    }
}
