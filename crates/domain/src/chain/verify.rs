//! The rules every transfer goes through: verification against what a checkout expects, and
//! attribution of a transfer found by following the chain to the one checkout it pays.

use chrono::{DateTime, Utc};

use crate::chain::model::{ObservedTransaction, OpenCheckout, TokenTransfer, UnattributedReason};
use crate::invoice::payment::FailureReason;
use crate::merchant::model::WalletAddress;
use crate::money::Amount;

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
    use chrono::Duration;

    use super::*;
    use crate::ids::CheckoutSessionId;
    use crate::invoice::payment::{BlockRef, TxHash};
    use crate::mode::Scope;
    use crate::money::Decimal6;

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
