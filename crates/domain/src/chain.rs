//! The chain port and the verification rules every payment goes through, in test mode (the
//! simulated transfer of the test helpers) and in live mode (Polygon) alike.
//!
//! A transaction is verified against what its checkout expects: it succeeded, on the expected
//! chain, with ERC-20 `Transfer` logs of the session's token contract to the session's
//! settlement wallet (summed exactly), mined before the checkout expired, for a non-zero amount.
//! Whether the hash was credited before is decided by the store's unique index when crediting.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::event::EventData;
use crate::ids::{CheckoutSessionId, UnattributedTransferId};
use crate::merchant::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::Amount;
use crate::payment::{BlockRef, FailureReason, TxHash};

/// One ERC-20 `Transfer` log, its value in the token's 6-decimal units.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenTransfer {
    /// The token's contract.
    pub token_contract: WalletAddress,
    /// Who sent the tokens.
    pub from: WalletAddress,
    /// Who received them.
    pub to: WalletAddress,
    /// How much moved.
    pub amount: Amount,
}

/// A transaction as the chain reports it: where it was included, whether it succeeded, the
/// token transfers it made, and whether its block is final.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObservedTransaction {
    /// The transaction's hash.
    pub tx_hash: TxHash,
    /// The chain it is on.
    pub chain_id: u64,
    /// False when the transaction reverted.
    pub succeeded: bool,
    /// The block it was included in.
    pub block: BlockRef,
    /// That block's time.
    pub block_time: DateTime<Utc>,
    /// The account that sent the transaction.
    pub sender: Option<WalletAddress>,
    /// The token transfers it made.
    pub transfers: Vec<TokenTransfer>,
    /// At or below the node's finalized block (or, where the node has no `finalized` tag, the
    /// configured number of confirmations deep). Only a final transfer is credited.
    pub finalized: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// What the chain says about a transaction.
pub enum Observation {
    /// The chain does not know the transaction (yet, or any more after a reorganisation).
    NotFound,
    /// Included in a block, as observed.
    Included(ObservedTransaction),
}

/// A transfer to a watched wallet, found by following the chain's logs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedTransfer {
    /// The transaction's hash.
    pub tx_hash: TxHash,
    /// The log's index in its block.
    pub log_index: u64,
    /// The block it is in.
    pub block: BlockRef,
    /// The transfer.
    pub transfer: TokenTransfer,
}

/// A live checkout still open for payment, as detection sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenCheckout {
    /// The checkout's merchant and mode.
    pub scope: Scope,
    /// The checkout.
    pub session_id: CheckoutSessionId,
    /// What it asks for.
    pub amount_due: Amount,
}

/// Why a transfer to a merchant's wallet was not attributed to a checkout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnattributedReason {
    /// No checkout of that wallet and token was open.
    NoOpenCheckout,
    /// Open checkouts exist, but none asks for exactly this amount.
    NoMatchingAmount,
    /// Several open checkouts ask for exactly this amount.
    SeveralMatchingCheckouts,
}

impl UnattributedReason {
    /// Every reason.
    pub const ALL: [UnattributedReason; 3] =
        [Self::NoOpenCheckout, Self::NoMatchingAmount, Self::SeveralMatchingCheckouts];

    /// The reason as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NoOpenCheckout => "no_open_checkout",
            Self::NoMatchingAmount => "no_matching_amount",
            Self::SeveralMatchingCheckouts => "several_matching_checkouts",
        }
    }

    /// Reads a reason as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// The checkout a transfer of `amount` pays: the only open checkout (of its wallet and token)
/// asking for exactly that amount. Anything else is never guessed.
pub fn attribute<'a>(amount: &Amount, open: &'a [OpenCheckout]) -> Result<&'a OpenCheckout, UnattributedReason> {
    if open.is_empty() {
        return Err(UnattributedReason::NoOpenCheckout);
    }
    let mut matching = open.iter().filter(|c| &c.amount_due == amount);
    match (matching.next(), matching.next()) {
        (Some(only), None) => Ok(only),
        (Some(_), Some(_)) => Err(UnattributedReason::SeveralMatchingCheckouts),
        (None, _) => Err(UnattributedReason::NoMatchingAmount),
    }
}

/// A transfer into a merchant's live settlement wallet that no checkout could be credited
/// with. It is recorded (with an event) for the merchant to reconcile: never guessed, never
/// lost.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnattributedTransfer {
    /// The transfer's id (`utr_...`).
    pub id: UnattributedTransferId,
    /// The merchant and mode whose wallet received it.
    pub scope: Scope,
    /// The chain it happened on.
    pub chain_id: u64,
    /// The transfer, as logged.
    pub logged: LoggedTransfer,
    /// The token it moved.
    pub token: Token,
    /// Why it could not be credited.
    pub reason: UnattributedReason,
    /// When it was found.
    pub detected_at: DateTime<Utc>,
}

impl UnattributedTransfer {
    /// The data of its `payment.unattributed` event.
    pub fn event_data(&self) -> EventData {
        fn s(v: impl ToString) -> EventData {
            EventData::string(v)
        }
        let t = &self.logged.transfer;
        EventData::map([
            ("object", s("unattributed_transfer")),
            ("id", s(&self.id)),
            ("chainId", EventData::Int(i64::try_from(self.chain_id).unwrap_or(i64::MAX))),
            ("transactionHash", s(self.logged.tx_hash.as_str())),
            ("logIndex", EventData::Int(i64::try_from(self.logged.log_index).unwrap_or(i64::MAX))),
            ("blockNumber", EventData::Int(i64::try_from(self.logged.block.number).unwrap_or(i64::MAX))),
            ("currencyCode", s(self.token.symbol())),
            ("tokenContract", s(&t.token_contract)),
            ("from", s(&t.from)),
            ("to", s(&t.to)),
            ("amount", s(&t.amount)),
            ("reason", s(self.reason.as_str())),
            ("detectedAt", s(self.detected_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))),
        ])
    }
}

/// Whether live verification can run, for readiness.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChainHealth {
    /// No RPC endpoint configured: live payments wait as detected.
    Off,
    /// An endpoint answers on the expected chain.
    Ok,
    /// No endpoint answers now (verification retries).
    Unreachable(String),
    /// The endpoints answer for another chain: live payments are not verified.
    WrongChain(String),
}

/// The chain, as verification and detection see it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Chain: Send + Sync {
    /// What the chain says of `tx` for `scope`'s mode. Errors: `Unavailable` when the chain
    /// cannot be asked now (the caller retries later); `ChainUnavailable` when the mode has no
    /// usable chain (no RPC configured, or the node is on another chain), with the reason.
    async fn observe(&self, scope: &Scope, tx: &TxHash) -> Result<Observation, Error>;
    /// Whether live verification can run (cheap: from what the adapter last learned, asking
    /// the node only when it knows nothing recent).
    async fn health(&self) -> ChainHealth;
    /// The newest final block of the live chain (the node's `finalized` block, or the head less
    /// the configured confirmations). Errors: as for `observe`.
    async fn final_head(&self) -> Result<u64, Error>;
    /// The `Transfer` logs of `tokens` to `wallets` in blocks `from..=to` of the live chain.
    /// Errors: as for `observe`.
    async fn transfers(
        &self,
        from: u64,
        to: u64,
        tokens: &[WalletAddress],
        wallets: &[WalletAddress],
    ) -> Result<Vec<LoggedTransfer>, Error>;
}

/// What a payment must match.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Expected {
    /// The chain the checkout expects.
    pub chain_id: u64,
    /// The token contract it expects.
    pub token_contract: WalletAddress,
    /// The wallet it expects (the merchant's).
    pub recipient: WalletAddress,
    /// The checkout's expiry: a transfer mined at or after it does not pay this checkout.
    pub expires_at: DateTime<Utc>,
}

/// The outcome of verification (before the duplicate check, which the store decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The transfer pays the checkout.
    Verified {
        /// How much it moved.
        amount: Amount,
        /// Who sent the transaction, when known.
        sender: Option<WalletAddress>,
    },
    /// It does not pay the checkout.
    Failed {
        /// Why.
        reason: FailureReason,
    },
}

/// Checks success, chain id, token contract, recipient, expiry and a non-zero amount, in that
/// order; the amount is the exact sum of the token's transfers to the recipient.
pub fn verify(expected: &Expected, tx: &ObservedTransaction) -> Verdict {
    use FailureReason as R;
    let fail = |reason| Verdict::Failed { reason };
    if !tx.succeeded {
        return fail(R::TransactionReverted);
    }
    if tx.chain_id != expected.chain_id {
        return fail(R::WrongChain);
    }
    let of_token: Vec<&TokenTransfer> =
        tx.transfers.iter().filter(|t| t.token_contract == expected.token_contract).collect();
    if of_token.is_empty() {
        return fail(R::WrongTokenContract);
    }
    let to_recipient: Vec<&&TokenTransfer> = of_token.iter().filter(|t| t.to == expected.recipient).collect();
    if to_recipient.is_empty() {
        return fail(R::WrongRecipient);
    }
    if tx.block_time >= expected.expires_at {
        return fail(R::CheckoutExpired);
    }
    let amount = to_recipient.iter().fold(Amount::zero(), |acc, t| acc.add(&t.amount));
    if amount.is_zero() {
        return fail(R::ZeroAmount);
    }
    let sender = tx.sender.clone().or_else(|| to_recipient.first().map(|t| t.from.clone()));
    Verdict::Verified { amount, sender }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::money::Decimal6;
    use chrono::Duration;

    fn address(n: u8) -> WalletAddress {
        WalletAddress::parse(&format!("0x{}", format!("{n:02x}").repeat(20))).unwrap()
    }

    fn transfer(token: u8, to: u8, amount: &str) -> TokenTransfer {
        TokenTransfer {
            token_contract: address(token),
            from: address(9),
            to: address(to),
            amount: Decimal6::parse(amount).unwrap(),
        }
    }

    fn setup() -> (Expected, ObservedTransaction) {
        let now = Utc::now();
        let expected = Expected {
            chain_id: 137,
            token_contract: address(1),
            recipient: address(2),
            expires_at: now + Duration::minutes(30),
        };
        let t = ObservedTransaction {
            tx_hash: TxHash::parse(&format!("0x{}", "a".repeat(64))).unwrap(),
            chain_id: 137,
            succeeded: true,
            block: BlockRef { number: 7, hash: format!("0x{}", "b".repeat(64)) },
            block_time: now,
            sender: None,
            transfers: vec![transfer(1, 2, "10")],
            finalized: true,
        };
        (expected, t)
    }

    #[test]
    fn every_rule() {
        let (e, t) = setup();
        let reason = |t: ObservedTransaction| match verify(&e, &t) {
            Verdict::Failed { reason } => reason,
            v => panic!("{v:?}"),
        };
        use FailureReason as R;
        assert_eq!(reason(ObservedTransaction { succeeded: false, ..t.clone() }), R::TransactionReverted);
        assert_eq!(reason(ObservedTransaction { chain_id: 1, ..t.clone() }), R::WrongChain);
        assert_eq!(
            reason(ObservedTransaction { transfers: vec![transfer(3, 2, "10")], ..t.clone() }),
            R::WrongTokenContract
        );
        assert_eq!(reason(ObservedTransaction { transfers: vec![], ..t.clone() }), R::WrongTokenContract);
        assert_eq!(
            reason(ObservedTransaction { transfers: vec![transfer(1, 4, "10")], ..t.clone() }),
            R::WrongRecipient
        );
        assert_eq!(reason(ObservedTransaction { block_time: e.expires_at, ..t.clone() }), R::CheckoutExpired);
        assert_eq!(reason(ObservedTransaction { transfers: vec![transfer(1, 2, "0")], ..t.clone() }), R::ZeroAmount);
    }

    #[test]
    fn attribution_never_guesses() {
        use crate::ids::MerchantId;
        use crate::mode::Mode;
        let checkout = |n: &str, amount: &str| OpenCheckout {
            scope: Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Live),
            session_id: CheckoutSessionId::from_trusted(format!("cs_{n}")),
            amount_due: Decimal6::parse(amount).unwrap(),
        };
        let d = |s: &str| Decimal6::parse(s).unwrap();
        assert_eq!(attribute(&d("5"), &[]), Err(UnattributedReason::NoOpenCheckout));
        let open = [checkout("a", "5"), checkout("b", "7")];
        assert_eq!(attribute(&d("7"), &open).map(|c| c.session_id.as_str()), Ok("cs_b"));
        assert_eq!(attribute(&d("6"), &open), Err(UnattributedReason::NoMatchingAmount));
        let twins = [checkout("a", "5"), checkout("b", "5")];
        assert_eq!(attribute(&d("5"), &twins), Err(UnattributedReason::SeveralMatchingCheckouts));
        for r in UnattributedReason::ALL {
            assert_eq!(UnattributedReason::parse(r.as_str()), Some(r));
        }
    }

    #[test]
    fn transfers_to_the_recipient_in_the_token_are_summed_exactly() {
        let (e, t) = setup();
        let transfers =
            vec![transfer(1, 2, "3.000001"), transfer(1, 4, "100"), transfer(3, 2, "50"), transfer(1, 2, "1.5")];
        match verify(&e, &ObservedTransaction { transfers, ..t }) {
            Verdict::Verified { amount, sender, .. } => {
                assert_eq!(amount, Decimal6::parse("4.500001").unwrap());
                assert_eq!(sender, Some(address(9)));
            }
            v => panic!("{v:?}"),
        }
    }
}
