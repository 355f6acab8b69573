//! What the email use cases need: the outbox (written with invoice changes, see
//! `InvoiceChange::emails`) and a mailer.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::email::model::{EmailCounts, EmailKind, EmailMessage, OutboundEmail};
use crate::error::Error;
use crate::ids::InvoiceId;
use crate::mode::Scope;

#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
/// Where the emails wait to be sent (the outbox, written with the invoice change that
/// queues them) and what became of each.
pub trait EmailStore: Send + Sync {
    /// How many of `scope`'s emails wait (and of those, are retried after failed attempts),
    /// and how many queued since `failed_since` were given up.
    async fn email_counts(&self, scope: &Scope, failed_since: DateTime<Utc>) -> Result<EmailCounts, Error>;
    /// The invoice's emails, oldest first.
    async fn list_emails(&self, scope: &Scope, invoice: &InvoiceId) -> Result<Vec<OutboundEmail>, Error>;
    /// The newest email of `kind` about the invoice.
    async fn last_email(
        &self,
        scope: &Scope,
        invoice: &InvoiceId,
        kind: EmailKind,
    ) -> Result<Option<OutboundEmail>, Error>;
    /// Claims up to `limit` queued emails whose next attempt is due (by the real clock), for
    /// `lease_seconds`: nobody else attempts them meanwhile. (Across merchants: each answer
    /// carries its scope.)
    async fn claim_emails(&self, limit: u32, lease_seconds: u32) -> Result<Vec<OutboundEmail>, Error>;
    /// Writes an email that is about no invoice (a statement's) as it stands after an attempt,
    /// ending its lease. (An invoice's email is written with the invoice's change.)
    async fn record_email(&self, email: &OutboundEmail) -> Result<(), Error>;
    /// Collectible invoices (of `only`, or of every merchant) with an enabled reminder schedule
    /// whose due date is within 31 days of their scope's time: those a slot may come due for.
    /// A page of at most `limit`, in id order, after the id `after` (from the start when
    /// `None`): the caller walks every page, so no candidate waits behind others.
    async fn reminder_candidates(
        &self,
        only: Option<Scope>,
        after: Option<InvoiceId>,
        limit: u32,
    ) -> Result<Vec<(Scope, InvoiceId)>, Error>;
    /// Retention (every scope, the worker's): removes at most `limit` finished emails (sent,
    /// failed, skipped) created over `days` ago, oldest first. A scheduled reminder of an
    /// invoice still collectible stays (it tells the reminder pass its slot was sent). Answers
    /// how many were removed.
    async fn purge_emails(&self, days: u32, limit: u32) -> Result<u64, Error>;
}

/// Where a failed send went wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MailError {
    /// What went wrong, for the invoice's activity and the operator (no message content).
    pub message: String,
    /// The server refused the message for good (a 5xx answer): retrying cannot help.
    pub permanent: bool,
}

#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
/// Sends one message (SMTP, or files in development).
pub trait Mailer: Send + Sync {
    /// Sends the message. Errors: a [`MailError`], permanent when the server refused it for good.
    async fn send(&self, message: &EmailMessage) -> Result<(), MailError>;
}
