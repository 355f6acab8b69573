//! What a merchant's books say about a period, per token, and what does not add up.

use chrono::{DateTime, Utc};

use crate::merchant::model::Token;
use crate::money::Amount;

/// Most discrepancies one reconciliation lists (`has_more_discrepancies` tells of the rest).
pub const MAX_DISCREPANCIES: u32 = 100;

/// Seconds after its detection from which a payment still unverified is a discrepancy.
pub const UNVERIFIED_AFTER_SECONDS: i64 = 3600;

/// One token's figures for a period (`from` included, `to` excluded).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenSummary {
    /// The token.
    pub token: Token,
    /// Invoices issued in the period.
    pub invoices_issued: u64,
    /// Their totals, summed.
    pub invoiced_total: Amount,
    /// Credited payments (confirmed, underpaid or overpaid) confirmed in the period.
    pub payments_credited: u64,
    /// What they credited, summed.
    pub collected: Amount,
    /// What overpaid payments of the period carried above what was due of them.
    pub overpaid_excess: Amount,
    /// Refund references recorded in the period.
    pub refunds_count: u64,
    /// Their amounts, summed.
    pub refunds_referenced: Amount,
    /// What collectible invoices issued before `to` still ask (as they stand now).
    pub outstanding: Amount,
    /// Of that, what is past its due date at `to`.
    pub overdue: Amount,
    /// The invoices behind `overdue`.
    pub overdue_count: u64,
    /// Transfers into the merchant's wallet no checkout could be credited with, detected in the
    /// period and still waiting for a decision (one credited since counts once, as its payment),
    /// within what a stablecoin can hold.
    pub unattributed_count: u64,
    /// Their amounts, summed.
    pub unattributed_total: Amount,
    /// Transfers whose `Transfer` log claims more than any stablecoin holds
    /// ([`max_transfer_amount`](crate::chain::verify::max_transfer_amount)): counted apart,
    /// never summed.
    pub unattributed_out_of_range: u64,
}

impl TokenSummary {
    /// A token's figures with nothing in them.
    pub fn empty(token: Token) -> Self {
        Self {
            token,
            invoices_issued: 0,
            invoiced_total: Amount::zero(),
            payments_credited: 0,
            collected: Amount::zero(),
            overpaid_excess: Amount::zero(),
            refunds_count: 0,
            refunds_referenced: Amount::zero(),
            outstanding: Amount::zero(),
            overdue: Amount::zero(),
            overdue_count: 0,
            unattributed_count: 0,
            unattributed_total: Amount::zero(),
            unattributed_out_of_range: 0,
        }
    }
}

/// What does not add up, for someone to look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiscrepancyKind {
    /// A transfer into the wallet that no checkout was credited with.
    UnattributedTransfer,
    /// A payment that carried more than was due of it.
    OverpaidPayment,
    /// A payment that carried less than was due of it.
    UnderpaidPayment,
    /// A payment still not verified an hour after it was detected.
    UnverifiedPayment,
}

impl DiscrepancyKind {
    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnattributedTransfer => "unattributed_transfer",
            Self::OverpaidPayment => "overpaid_payment",
            Self::UnderpaidPayment => "underpaid_payment",
            Self::UnverifiedPayment => "unverified_payment",
        }
    }
}

/// Which discrepancies to read: those of the period `[from, to)`, counting as unverified the
/// payments detected before `unverified_before` and not yet decided, at most `limit`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiscrepancyQuery {
    /// The period's start (included).
    pub from: DateTime<Utc>,
    /// Its end (excluded).
    pub to: DateTime<Utc>,
    /// A payment detected before it and still undecided is a discrepancy.
    pub unverified_before: DateTime<Utc>,
    /// How many at the most.
    pub limit: u32,
}

/// One discrepancy: what it is about and by how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Discrepancy {
    /// Its kind.
    pub kind: DiscrepancyKind,
    /// The record it is about (`utr_...` or `pay_...`).
    pub id: String,
    /// The invoice concerned, when there is one.
    pub invoice_id: Option<String>,
    /// The token.
    pub token: Token,
    /// The amount at stake: the transfer, the excess, the shortfall, or what is unverified.
    pub amount: Amount,
    /// When it happened (detection, or confirmation).
    pub at: DateTime<Utc>,
    /// In words, for support and finance.
    pub detail: String,
}

/// A period's reconciliation of the books.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reconciliation {
    /// The period's start (included).
    pub from: DateTime<Utc>,
    /// The period's end (excluded).
    pub to: DateTime<Utc>,
    /// When the figures were read (the scope's time).
    pub as_of: DateTime<Utc>,
    /// Every token's figures (each token listed, with zeros when nothing happened).
    pub tokens: Vec<TokenSummary>,
    /// What does not add up, oldest first, at most [`MAX_DISCREPANCIES`].
    pub discrepancies: Vec<Discrepancy>,
    /// Whether more discrepancies exist than listed.
    pub has_more_discrepancies: bool,
}
