//! The rules every transfer goes through: verification against what a checkout expects
//! (which checkout a transfer pays is `chain::evidence`'s to say).

use chrono::{DateTime, Utc};

use crate::chain::model::{ObservedTransaction, TokenTransfer};
use crate::invoice::payment::FailureReason;
use crate::merchant::model::WalletAddress;
use crate::money::Amount;

/// The largest transfer the service credits or records as an amount: 10^15 whole tokens, far
/// beyond any stablecoin's supply. A `Transfer` log can claim up to 2^256 - 1 base units; a
/// larger one than this is no payment anybody made, and is recorded with a reason instead.
pub fn max_transfer_amount() -> Amount {
    Amount::from_units("1000000000000000000000").unwrap_or_else(Amount::zero)
}

/// Whether `amount` is one the service can credit (at most [`max_transfer_amount`]).
pub fn in_range(amount: &Amount) -> bool {
    *amount <= max_transfer_amount()
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
    /// The checkout's creation, to the second (less the clock skew allowed, where evidence the
    /// transfer carries names the checkout): a transfer mined before it was made for
    /// something else and cannot be claimed by this checkout.
    pub not_before: DateTime<Utc>,
    /// The checkout's expiry: a transfer mined at or after it does not pay this checkout.
    pub expires_at: DateTime<Utc>,
    /// The one log the payment claims (a transfer the follower or a person attributed), or
    /// every log of the token to the recipient (a reported hash).
    pub only_log: Option<u64>,
}

/// The outcome of verification (before the duplicate check, which the store decides).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// The transfer pays the checkout.
    Verified {
        /// How much it moved.
        amount: Amount,
        /// Who sent the tokens: the `from` of its first counted `Transfer` log (not the
        /// transaction's sender, which is a spender or relayer in `transferFrom` and relayed
        /// transfers).
        payer: WalletAddress,
        /// The logs it counted, in log order.
        transfers: Vec<TokenTransfer>,
    },
    /// It does not pay the checkout.
    Failed {
        /// Why.
        reason: FailureReason,
    },
}

/// Checks success, chain id, token contract, recipient (and the claimed log), the block's time
/// against the checkout's creation and expiry, a non-zero amount and one within range, in that
/// order; the amount is the exact sum of the counted logs.
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
    let counted: Vec<TokenTransfer> = of_token
        .into_iter()
        .filter(|t| t.to == expected.recipient && expected.only_log.is_none_or(|i| t.log_index == i))
        .cloned()
        .collect();
    let Some(first) = counted.first() else { return fail(R::WrongRecipient) };
    if tx.block_time < expected.not_before {
        return fail(R::TransferBeforeCheckout);
    }
    if tx.block_time >= expected.expires_at {
        return fail(R::CheckoutExpired);
    }
    let amount = counted.iter().fold(Amount::zero(), |acc, t| acc.add(&t.amount));
    if amount.is_zero() {
        return fail(R::ZeroAmount);
    }
    if !in_range(&amount) {
        return fail(R::AmountOutOfRange);
    }
    Verdict::Verified { amount, payer: first.from.clone(), transfers: counted }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::invoice::payment::{BlockRef, TxHash};
    use crate::money::Decimal6;

    fn address(n: u8) -> WalletAddress {
        WalletAddress::parse(&format!("0x{}", format!("{n:02x}").repeat(20))).unwrap()
    }

    fn transfer(token: u8, to: u8, amount: &str) -> TokenTransfer {
        TokenTransfer {
            log_index: 0,
            token_contract: address(token),
            from: address(9),
            to: address(to),
            amount: Decimal6::parse(amount).unwrap(),
            authorization: None,
        }
    }

    fn setup() -> (Expected, ObservedTransaction) {
        let now = Utc::now();
        let expected = Expected {
            chain_id: 137,
            token_contract: address(1),
            recipient: address(2),
            not_before: now - Duration::minutes(1),
            expires_at: now + Duration::minutes(30),
            only_log: None,
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
        assert_eq!(
            reason(ObservedTransaction { block_time: e.not_before - Duration::seconds(1), ..t.clone() }),
            R::TransferBeforeCheckout
        );
        let huge = TokenTransfer { amount: Decimal6::from_units(&"9".repeat(78)).unwrap(), ..transfer(1, 2, "1") };
        assert_eq!(reason(ObservedTransaction { transfers: vec![huge], ..t.clone() }), R::AmountOutOfRange);
        assert!(in_range(&max_transfer_amount()));
        // A claimed log that is not the token's transfer to the recipient pays nothing.
        let only = Expected { only_log: Some(3), ..e.clone() };
        assert!(matches!(verify(&only, &t), Verdict::Failed { reason: R::WrongRecipient }));
    }

    #[test]
    fn a_claimed_log_counts_alone_and_the_payer_is_the_log_sender() {
        let (e, t) = setup();
        let mut second = transfer(1, 2, "6.060607");
        second.log_index = 1;
        second.from = address(7);
        let transfers = vec![transfer(1, 2, "4.040404"), second];
        let tx = ObservedTransaction { transfers, sender: Some(address(8)), ..t };
        match verify(&Expected { only_log: Some(1), ..e.clone() }, &tx) {
            Verdict::Verified { amount, payer, transfers } => {
                assert_eq!(amount, Decimal6::parse("6.060607").unwrap());
                assert_eq!(payer, address(7));
                assert_eq!(transfers.iter().map(|t| t.log_index).collect::<Vec<_>>(), [1]);
            }
            v => panic!("{v:?}"),
        }
        match verify(&e, &tx) {
            Verdict::Verified { amount, payer, .. } => {
                assert_eq!(amount, Decimal6::parse("10.101011").unwrap());
                assert_eq!(payer, address(9), "the first counted log's sender, not the transaction's");
            }
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn transfers_to_the_recipient_in_the_token_are_summed_exactly() {
        let (e, t) = setup();
        let transfers =
            vec![transfer(1, 2, "3.000001"), transfer(1, 4, "100"), transfer(3, 2, "50"), transfer(1, 2, "1.5")];
        match verify(&e, &ObservedTransaction { transfers, ..t }) {
            Verdict::Verified { amount, payer, .. } => {
                assert_eq!(amount, Decimal6::parse("4.500001").unwrap());
                assert_eq!(payer, address(9));
            }
            v => panic!("{v:?}"),
        }
    }
}
