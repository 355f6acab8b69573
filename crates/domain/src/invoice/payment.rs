//! Payment records and their status machine.

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{CheckoutSessionId, InvoiceId, PaymentId};
use crate::merchant::model::WalletAddress;
use crate::mode::Scope;
use crate::money::Amount;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A transaction hash: `0x` + 64 hex digits, kept lower-case.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TxHash(String);

impl TxHash {
    /// Accepts `0x` followed by 64 hexadecimal digits; `None` otherwise.
    pub fn parse(input: &str) -> Option<Self> {
        let hex = input.strip_prefix("0x")?;
        (hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit())).then(|| Self(input.to_ascii_lowercase()))
    }

    /// Wraps a value read back from storage without checking it.
    pub fn from_trusted(value: String) -> Self {
        Self(value)
    }

    /// A random hash (simulated transfers of test mode).
    pub fn generate(crypto: &dyn Crypto) -> Self {
        let mut bytes = [0u8; 32];
        crypto.fill_random(&mut bytes);
        let mut text = String::with_capacity(66);
        text.push_str("0x");
        for b in bytes {
            text.push(char::from(HEX[usize::from(b >> 4)]));
            text.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
        Self(text)
    }

    /// The hash as text (lower-case).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A block a transaction was included in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockRef {
    /// The block's number.
    pub number: u64,
    /// `0x` + 64 hex digits, lower-case.
    pub hash: String,
}

/// A payment attempt and what verification found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Payment {
    /// The payment's id (`pay_...`).
    pub id: PaymentId,
    /// The merchant and mode.
    pub scope: Scope,
    /// The invoice it pays.
    pub invoice_id: InvoiceId,
    /// The checkout it was made for.
    pub checkout_session_id: CheckoutSessionId,
    /// Where its verification stands.
    pub status: PaymentStatus,
    /// What the payment was expected to pay: the session's amount when the attempt was made,
    /// and once credited what was due of it then (the invoice's remainder, when less).
    pub amount_expected: Amount,
    /// What verification saw arrive (zero until verified or when failed).
    pub amount_received: Amount,
    /// What counts toward the invoice's customerAmountPaid.
    pub customer_amount_credited: Amount,
    /// What verifiably reached the settlement wallet.
    pub merchant_amount_settled: Amount,
    /// The transfer's transaction hash.
    pub transaction_hash: TxHash,
    /// The chain it was sent on.
    pub chain_id: u64,
    /// The token contract it moved.
    pub token_contract: WalletAddress,
    /// The wallet it paid (the merchant's).
    pub settlement_wallet: WalletAddress,
    /// The sender of the transfer, when known.
    pub payer_address: Option<String>,
    /// Why it failed, when it failed.
    pub failure_reason: Option<FailureReason>,
    /// The block the transfer was seen in (while validating, and once settled).
    pub block: Option<BlockRef>,
    /// That block's time (the chain's clock): what expiry and the checkout's creation are
    /// compared with.
    pub block_time: Option<DateTime<Utc>>,
    /// Why verification is waiting, when it cannot go on now (no chain configured, node down).
    pub diagnostic: Option<String>,
    /// When it was first seen.
    pub detected_at: DateTime<Utc>,
    /// When it was verified and credited.
    pub confirmed_at: Option<DateTime<Utc>>,
    /// The one transfer log it claims: set when the chain follower attributed that log to the
    /// checkout; `None` for a reported hash, which claims every log of the checkout's token to
    /// its wallet.
    pub claimed_log: Option<u64>,
    /// The logs verification counted (while validating, and once credited); empty otherwise.
    /// Each log is credited once in the whole service.
    pub logs: Vec<u64>,
    /// Since when the transaction is missing, when that is later than `detected_at` (its block
    /// was reorganised away): the not-found wait counts from here.
    pub missing_since: Option<DateTime<Utc>>,
    /// What named this payment's checkout as the one its transfer pays (live mode): the
    /// strongest evidence, set when the follower attributed the transfer, when a person did, or
    /// once a reported hash was verified; `None` for simulated transfers and before.
    pub evidence: Option<Evidence>,
}

impl Payment {
    /// A transfer `tx` just reported or found for `session`, at `now`: detected, nothing
    /// verified or credited yet.
    pub fn detected(
        crypto: &dyn Crypto,
        session: &crate::invoice::checkout::CheckoutSession,
        tx: &TxHash,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: PaymentId::generate(crypto),
            scope: session.scope.clone(),
            invoice_id: session.invoice_id.clone(),
            checkout_session_id: session.id.clone(),
            status: PaymentStatus::Detected,
            amount_expected: session.amount_due.clone(),
            amount_received: Amount::zero(),
            customer_amount_credited: Amount::zero(),
            merchant_amount_settled: Amount::zero(),
            transaction_hash: tx.clone(),
            chain_id: session.chain_id,
            token_contract: session.token_contract.clone(),
            settlement_wallet: session.settlement_wallet.clone(),
            payer_address: None,
            failure_reason: None,
            block: None,
            block_time: None,
            diagnostic: None,
            detected_at: now,
            confirmed_at: None,
            claimed_log: None,
            logs: Vec::new(),
            missing_since: None,
            evidence: None,
        }
    }

    /// Still being verified: detected (not yet seen, or seen no more after a reorganisation)
    /// or validating (seen in a block that is not final yet).
    pub fn in_flight(&self) -> bool {
        matches!(self.status, PaymentStatus::Detected | PaymentStatus::Validating)
    }
}

/// Why a payment was not credited.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailureReason {
    /// The chain does not know the transaction.
    TransactionNotFound,
    /// The transaction failed onchain.
    TransactionReverted,
    /// The transaction is on another chain.
    WrongChain,
    /// The transfer moved another token.
    WrongTokenContract,
    /// The transfer went to another wallet.
    WrongRecipient,
    /// The transfer was mined after the checkout expired.
    CheckoutExpired,
    /// The transfer moved nothing.
    ZeroAmount,
    /// The transaction was already credited to another payment.
    DuplicateTransaction,
    /// The transfer was mined before the checkout existed.
    TransferBeforeCheckout,
    /// The transfer moved more than any stablecoin holds.
    AmountOutOfRange,
    /// A reported transfer asks exactly the amount of exactly one other open checkout: it is
    /// that checkout's.
    AttributedToAnotherCheckout,
    /// Recorded by payments that failed before bindings stopped restricting payers: a wallet
    /// payment attempt no longer refuses other wallets' transfers (no longer written).
    WrongPayer,
    /// Evidence of equal strength names another checkout as well: the transfer is held, as an
    /// unattributed transfer with its candidates, for the merchant to decide.
    Disputed,
}

impl FailureReason {
    /// Every reason, in the order docs/api.md lists them.
    pub const ALL: [FailureReason; 13] = [
        Self::TransactionNotFound,
        Self::TransactionReverted,
        Self::WrongChain,
        Self::WrongTokenContract,
        Self::WrongRecipient,
        Self::CheckoutExpired,
        Self::ZeroAmount,
        Self::DuplicateTransaction,
        Self::TransferBeforeCheckout,
        Self::AmountOutOfRange,
        Self::AttributedToAnotherCheckout,
        Self::WrongPayer,
        Self::Disputed,
    ];

    /// The reason as the API writes it (`transaction_not_found` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::TransactionNotFound => "transaction_not_found",
            Self::TransactionReverted => "transaction_reverted",
            Self::WrongChain => "wrong_chain",
            Self::WrongTokenContract => "wrong_token_contract",
            Self::WrongRecipient => "wrong_recipient",
            Self::CheckoutExpired => "checkout_expired",
            Self::ZeroAmount => "zero_amount",
            Self::DuplicateTransaction => "duplicate_transaction",
            Self::TransferBeforeCheckout => "transfer_before_checkout",
            Self::AmountOutOfRange => "amount_out_of_range",
            Self::AttributedToAnotherCheckout => "attributed_to_another_checkout",
            Self::WrongPayer => "wrong_payer",
            Self::Disputed => "disputed",
        }
    }

    /// Reads a reason as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == value)
    }
}

/// What named the checkout a live transfer pays, strongest first (the order of the variants):
/// see [`crate::chain::evidence`] for how they are weighed. A rank above `Report` is evidence
/// the transfer itself carries (its sender, its exact amount); `Report` and `Amount` are claims
/// anyone could make or amounts several checkouts could ask, which decide only when they agree.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Evidence {
    /// The transfer was made by an EIP-3009 authorization whose nonce the service derived for
    /// the checkout (for the sender's wallet payment attempt): the transfer names its checkout.
    Authorization,
    /// The sender's wallet was bound to the checkout by a wallet payment attempt before the
    /// transfer, and the transfer is exactly what the checkout asks now.
    BoundWallet,
    /// The transfer is exactly the unique amount the checkout asks (unique amounts, not partly
    /// paid): no other open checkout of the wallet asks it.
    UniqueAmount,
    /// Its hash was reported for the checkout (or its sender was bound to it, but the amount
    /// differs).
    ReportedHash,
    /// The transfer is exactly what the checkout asks now, an amount other checkouts could ask
    /// as well.
    Amount,
    /// A person attributed the recorded transfer to the checkout.
    Manual,
}

impl Evidence {
    /// Every kind, strongest first.
    pub const ALL: [Evidence; 6] =
        [Self::Authorization, Self::BoundWallet, Self::UniqueAmount, Self::ReportedHash, Self::Amount, Self::Manual];

    /// The evidence as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Authorization => "authorization",
            Self::BoundWallet => "bound_wallet",
            Self::UniqueAmount => "unique_amount",
            Self::ReportedHash => "reported_hash",
            Self::Amount => "amount",
            Self::Manual => "manual",
        }
    }

    /// Reads the evidence as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.as_str() == value)
    }

    /// Evidence the transfer itself carries (its sender bound beforehand, a unique amount):
    /// it outranks any report, and it alone lets a transfer mined a little before its
    /// checkout's creation (clock skew) pay it.
    pub fn is_strong(self) -> bool {
        matches!(self, Self::Authorization | Self::BoundWallet | Self::UniqueAmount)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// Where a payment's verification stands.
pub enum PaymentStatus {
    /// The transaction hash was already used; never credited again.
    Duplicate,
    /// Attempt captured.
    Detected,
    /// Settlement being verified onchain.
    Validating,
    /// Verified: the amount received equals the amount expected.
    Confirmed,
    /// Verification failed (wrong recipient, token, chain, reverted, expired, ...).
    Failed,
    /// Verified, below the amount expected.
    Underpaid,
    /// Verified, above the amount expected.
    Overpaid,
}

impl PaymentStatus {
    /// Every status, in the spec's order.
    pub const ALL: [PaymentStatus; 7] = [
        Self::Duplicate,
        Self::Detected,
        Self::Validating,
        Self::Confirmed,
        Self::Failed,
        Self::Underpaid,
        Self::Overpaid,
    ];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Duplicate => "duplicate",
            Self::Detected => "detected",
            Self::Validating => "validating",
            Self::Confirmed => "confirmed",
            Self::Failed => "failed",
            Self::Underpaid => "underpaid",
            Self::Overpaid => "overpaid",
        }
    }

    /// Reads a status as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// Whether the payment counts toward customerAmountPaid.
    pub fn is_credited(self) -> bool {
        matches!(self, Self::Confirmed | Self::Underpaid | Self::Overpaid)
    }

    /// Whether verification is over (confirmed or failed in some way): nothing will change it.
    pub fn is_terminal(self) -> bool {
        !matches!(self, Self::Detected | Self::Validating)
    }
}

/// The outcome of verifying a transfer against what was expected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaymentTrigger {
    /// The transfer was seen in a block that passes every check (final or not yet).
    VerificationStarted,
    /// The block it was seen in was reorganised away before it became final.
    Reorganized,
    /// The transaction hash is already used by another payment.
    DuplicateTransaction,
    /// Verified; the received amount compared to the expected amount.
    Verified(std::cmp::Ordering),
    /// Verification failed.
    VerificationFailed,
}

/// `(status, trigger) -> status` or a refusal (`INVOICE_TRANSITION_GUARD_FAILED`; a terminal
/// payment never changes).
pub fn transition(from: PaymentStatus, trigger: PaymentTrigger) -> Result<PaymentStatus, Error> {
    use std::cmp::Ordering::*;

    use PaymentStatus as S;
    use PaymentTrigger as T;
    match (from, trigger) {
        (S::Detected, T::VerificationStarted) => Ok(S::Validating),
        (S::Validating, T::Reorganized) => Ok(S::Detected),
        (S::Detected | S::Validating, T::DuplicateTransaction) => Ok(S::Duplicate),
        (S::Validating, T::Verified(Equal)) => Ok(S::Confirmed),
        (S::Validating, T::Verified(Less)) => Ok(S::Underpaid),
        (S::Validating, T::Verified(Greater)) => Ok(S::Overpaid),
        (S::Detected | S::Validating, T::VerificationFailed) => Ok(S::Failed),
        _ => Err(Error::InvoiceTransitionGuardFailed(format!(
            "payment status {} cannot take {trigger:?}",
            from.as_str()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering::*;

    use PaymentStatus as S;
    use PaymentTrigger as T;

    use super::*;

    #[test]
    fn table() {
        let allowed = [
            (S::Detected, T::VerificationStarted, S::Validating),
            (S::Validating, T::Reorganized, S::Detected),
            (S::Detected, T::DuplicateTransaction, S::Duplicate),
            (S::Validating, T::DuplicateTransaction, S::Duplicate),
            (S::Validating, T::Verified(Equal), S::Confirmed),
            (S::Validating, T::Verified(Less), S::Underpaid),
            (S::Validating, T::Verified(Greater), S::Overpaid),
            (S::Detected, T::VerificationFailed, S::Failed),
            (S::Validating, T::VerificationFailed, S::Failed),
        ];
        for (from, trigger, to) in allowed {
            assert_eq!(transition(from, trigger), Ok(to), "{from:?} {trigger:?}");
        }
        let triggers = [
            T::VerificationStarted,
            T::Reorganized,
            T::DuplicateTransaction,
            T::Verified(Equal),
            T::VerificationFailed,
        ];
        for from in PaymentStatus::ALL.into_iter().filter(|s| s.is_terminal()) {
            for trigger in triggers {
                assert!(transition(from, trigger).is_err(), "{from:?} {trigger:?}");
            }
        }
        assert!(transition(S::Validating, T::VerificationStarted).is_err());
        assert!(transition(S::Detected, T::Verified(Equal)).is_err());
        assert!(transition(S::Detected, T::Reorganized).is_err());
    }

    #[test]
    fn crediting() {
        let credited: Vec<_> = PaymentStatus::ALL.into_iter().filter(|s| s.is_credited()).collect();
        assert_eq!(credited, vec![S::Confirmed, S::Underpaid, S::Overpaid]);
        for s in PaymentStatus::ALL {
            assert_eq!(PaymentStatus::parse(s.as_str()), Some(s));
        }
        for r in FailureReason::ALL {
            assert_eq!(FailureReason::parse(r.as_str()), Some(r));
        }
        for e in Evidence::ALL {
            assert_eq!(Evidence::parse(e.as_str()), Some(e));
        }
        let mut sorted = Evidence::ALL;
        sorted.sort();
        assert_eq!(sorted, Evidence::ALL, "strongest first");
    }
}
