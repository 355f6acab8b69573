//! What a collections review reads: a merchant's open invoices in one mode, with what remains
//! and what is overdue at the merchant's clock.

use chrono::{DateTime, Utc};

use crate::invoice::collection::CollectionState;
use crate::money::Amount;

/// One invoice still to collect.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenInvoice {
    /// The invoice id (`inv_...`).
    pub id: String,
    /// Its number (`INV-000042`); `None` only for invoices created before numbering at creation.
    pub number: Option<String>,
    /// `open`, `past_due` or `partially_paid`.
    pub state: CollectionState,
    /// The invoice's total.
    pub total: Amount,
    /// What is still to collect ([`Invoice::remaining`](crate::invoice::model::Invoice::remaining)).
    pub remaining: Amount,
    /// The collection deadline, if any.
    pub due_at: Option<DateTime<Utc>>,
    /// Whole days past the deadline at the merchant's clock (0 when not overdue).
    pub days_overdue: i64,
}

/// A merchant's open invoices in one mode, with the sums a collections review needs.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenInvoicesReport {
    /// The merchant's time when the report was made (the test clock in test mode).
    pub as_of: DateTime<Utc>,
    /// Every collectible invoice, newest first.
    pub invoices: Vec<OpenInvoice>,
    /// The sum of what remains to collect.
    pub outstanding: Amount,
    /// The part of it that is past its due date.
    pub overdue: Amount,
}

/// The states in which an invoice still has something to collect
/// ([`CollectionState::COLLECTIBLE`], named here for the report's readers).
pub const COLLECTIBLE: [CollectionState; 3] = CollectionState::COLLECTIBLE;
