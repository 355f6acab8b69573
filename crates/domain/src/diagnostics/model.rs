//! Why a checkout is or is not paid, in words a support agent can read to a customer: each
//! transfer reported or detected for it, the checks of verification with what was expected and
//! what was found, how far the chain is, and what to do next.

use chrono::{DateTime, Utc};

use crate::chain::model::ChainHealth;
use crate::invoice::checkout::{Binding, CheckoutSession};
use crate::invoice::payment::{FailureReason, Payment, PaymentStatus};
use crate::invoice::public::CheckoutPhase;
use crate::money::Amount;

/// A check of verification (the spec's seven, and the payer of a wallet-bound checkout).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckName {
    /// The transaction exists and succeeded.
    Hash,
    /// It is on the checkout's chain.
    Chain,
    /// It moved the checkout's token.
    Token,
    /// To the merchant's settlement wallet.
    Recipient,
    /// From the wallet the checkout was bound to (wallet payments only).
    Payer,
    /// The amount due (or a part of it).
    Amount,
    /// While the checkout was open.
    Expiry,
    /// Not credited to anything else before.
    Duplicate,
}

impl CheckName {
    /// Verification's order.
    pub const ALL: [CheckName; 8] = [
        Self::Hash,
        Self::Chain,
        Self::Token,
        Self::Recipient,
        Self::Payer,
        Self::Amount,
        Self::Expiry,
        Self::Duplicate,
    ];

    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Hash => "hash",
            Self::Chain => "chain",
            Self::Token => "token",
            Self::Recipient => "recipient",
            Self::Payer => "payer",
            Self::Amount => "amount",
            Self::Expiry => "expiry",
            Self::Duplicate => "duplicate",
        }
    }

    /// The check a failure reason failed.
    pub fn of_failure(reason: FailureReason) -> Self {
        match reason {
            FailureReason::TransactionNotFound | FailureReason::TransactionReverted => Self::Hash,
            FailureReason::WrongChain => Self::Chain,
            FailureReason::WrongTokenContract => Self::Token,
            FailureReason::WrongRecipient => Self::Recipient,
            FailureReason::WrongPayer => Self::Payer,
            FailureReason::ZeroAmount | FailureReason::AmountOutOfRange => Self::Amount,
            FailureReason::CheckoutExpired | FailureReason::TransferBeforeCheckout => Self::Expiry,
            FailureReason::DuplicateTransaction
            | FailureReason::AttributedToAnotherCheckout
            | FailureReason::Disputed => Self::Duplicate,
        }
    }
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckOutcome {
    /// It held.
    Passed,
    /// It did not: the transfer was refused for it (or, for the amount, it fell short).
    Failed,
    /// Not decided yet (the transfer is still being verified).
    Pending,
    /// Not looked at (an earlier check failed, or it does not apply).
    Skipped,
}

impl CheckOutcome {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Passed => "passed",
            Self::Failed => "failed",
            Self::Pending => "pending",
            Self::Skipped => "skipped",
        }
    }
}

/// One check of one transfer, with the values compared.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    /// Which check.
    pub name: CheckName,
    /// How it came out.
    pub outcome: CheckOutcome,
    /// What the checkout asked.
    pub expected: Option<String>,
    /// What the transfer had.
    pub found: Option<String>,
    /// In words.
    pub note: Option<String>,
}

/// Where a transfer's block stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Finality {
    /// Its block is final.
    Final,
    /// Its block is this many blocks from final.
    Waiting(u64),
    /// Not seen in a block yet.
    NotMined,
    /// The chain could not tell now.
    Unknown,
}

/// One transfer reported or detected for the checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferDiagnosis {
    /// Its payment record.
    pub payment: Payment,
    /// The checks, in verification's order.
    pub checks: Vec<Check>,
    /// Where its block stands.
    pub finality: Finality,
}

/// The chain as diagnostics see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainState {
    /// Test mode: simulated (no chain is asked).
    pub simulated: bool,
    /// Whether live verification can run.
    pub health: ChainHealth,
    /// The newest final block, when the chain answered.
    pub final_block: Option<u64>,
}

/// Why a checkout is or is not paid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckoutDiagnosis {
    /// The checkout.
    pub session: CheckoutSession,
    /// The wallets wallet payment attempts bound to it (evidence its transfers are its own),
    /// first bound first.
    pub bindings: Vec<Binding>,
    /// Where it stands for its customer.
    pub phase: CheckoutPhase,
    /// What its invoice still asks.
    pub invoice_remaining: Amount,
    /// Every transfer reported or detected for it, oldest first.
    pub transfers: Vec<TransferDiagnosis>,
    /// The chain.
    pub chain: ChainState,
    /// What to do next, in words.
    pub next_step: String,
    /// When it was read (the scope's time).
    pub as_of: DateTime<Utc>,
}

/// Whether verification of `status` is over.
pub fn is_verified(status: PaymentStatus) -> bool {
    matches!(status, PaymentStatus::Confirmed | PaymentStatus::Underpaid | PaymentStatus::Overpaid)
}

/// How one entry of a merchant's readiness stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ReadinessStatus {
    /// Nothing to do.
    Ok,
    /// Works, but something should be looked at.
    Warning,
    /// Something does not work.
    Error,
}

impl ReadinessStatus {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Warning => "warning",
            Self::Error => "error",
        }
    }
}

/// One entry of a merchant's readiness: a stable code, how it stands, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReadinessEntry {
    /// Stable: `live_activation`, `chain`, `webhook_endpoints`, `webhook_incidents`, `emails`,
    /// `api_keys`, `worker`.
    pub code: &'static str,
    /// How it stands.
    pub status: ReadinessStatus,
    /// In words.
    pub message: String,
    /// The number of things the entry counts, where it counts some.
    pub count: Option<u64>,
}

/// Days without use after which a key is reported idle.
pub const KEY_IDLE_DAYS: i64 = 90;

/// The background worker as the driving adapter knows it (its loop status lives there).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkerFacts {
    /// How it stands.
    pub status: ReadinessStatus,
    /// In words (its state, failures, the follower's lag).
    pub message: String,
}

/// A merchant's readiness in one mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MerchantReadiness {
    /// The worst status of the entries.
    pub status: ReadinessStatus,
    /// Every entry, in a stable order.
    pub entries: Vec<ReadinessEntry>,
    /// When it was read.
    pub as_of: DateTime<Utc>,
}
