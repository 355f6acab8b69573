//! The outbox record of an email and the rules of its delivery.

use chrono::{DateTime, Duration, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{EmailId, InvoiceId};
use crate::invoice::model::Invoice;
use crate::invoice::validate::is_valid_email;
use crate::mode::Scope;

/// Attempts before an email is given up (about 4 hours of backoff).
pub const MAX_ATTEMPTS: u32 = 8;
/// At most one reminder per invoice in this many hours (requested or scheduled).
pub const REMINDER_COOLDOWN_HOURS: i64 = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmailKind {
    /// The invoice, with its PDF.
    Invoice,
    /// A reminder of what is due.
    Reminder,
}

impl EmailKind {
    pub const ALL: [Self; 2] = [Self::Invoice, Self::Reminder];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invoice => "invoice",
            Self::Reminder => "reminder",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmailStatus {
    /// Waiting for (another) attempt.
    Queued,
    /// Accepted by the mail server.
    Sent,
    /// Given up after [`MAX_ATTEMPTS`], or refused for good by the server.
    Failed,
    /// A reminder no longer needed (the invoice was paid or closed before it went out).
    Skipped,
}

impl EmailStatus {
    pub const ALL: [Self; 4] = [Self::Queued, Self::Sent, Self::Failed, Self::Skipped];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Sent => "sent",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// One email in the outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboundEmail {
    pub id: EmailId,
    pub scope: Scope,
    pub invoice_id: InvoiceId,
    pub kind: EmailKind,
    /// What asked for it, unique per invoice and kind: `request:<email id>` for a request,
    /// `schedule:<slot>` for a scheduled reminder (so a slot is never sent twice).
    pub slot: String,
    pub to: String,
    pub status: EmailStatus,
    pub attempts: u32,
    pub last_error: Option<String>,
    pub next_attempt_at: DateTime<Utc>,
    pub created_at: DateTime<Utc>,
    pub sent_at: Option<DateTime<Utc>>,
}

impl OutboundEmail {
    /// A new email of `kind` about `invoice` to its customer, due at once. `slot`: `None` for a
    /// request. Errors: `CustomerEmailRequired` (`customer.email`).
    pub fn queue(
        crypto: &dyn Crypto,
        invoice: &Invoice,
        kind: EmailKind,
        slot: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Self, Error> {
        let to = invoice
            .fields
            .content
            .customer_email()
            .filter(|e| is_valid_email(e))
            .ok_or_else(|| Error::CustomerEmailRequired { field: "customer.email".into() })?;
        let id = EmailId::generate(crypto);
        let slot = slot.map_or_else(|| format!("request:{id}"), |s| format!("schedule:{s}"));
        Ok(Self {
            id,
            scope: invoice.scope.clone(),
            invoice_id: invoice.id.clone(),
            kind,
            slot,
            to: to.to_owned(),
            status: EmailStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: now,
            created_at: now,
            sent_at: None,
        })
    }

    /// After a failed attempt at `now`: queued again after a backoff (30 s doubled per attempt,
    /// at most an hour), or failed for good after [`MAX_ATTEMPTS`] or when `permanent`.
    pub fn attempt_failed(&mut self, error: &str, permanent: bool, now: DateTime<Utc>) {
        self.attempts += 1;
        self.last_error = Some(error.chars().take(500).collect());
        if permanent || self.attempts >= MAX_ATTEMPTS {
            self.status = EmailStatus::Failed;
        } else {
            let seconds = 30i64.saturating_mul(1i64 << (self.attempts - 1).min(20)).min(3600);
            self.next_attempt_at = now + Duration::seconds(seconds);
        }
    }

    pub fn sent(&mut self, now: DateTime<Utc>) {
        self.attempts += 1;
        self.status = EmailStatus::Sent;
        self.sent_at = Some(now);
        self.last_error = None;
    }
}

/// A file attached to a message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attachment {
    pub filename: String,
    pub content_type: String,
    pub bytes: Vec<u8>,
}

/// A message as the mailer sends it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailMessage {
    /// Also its `Message-ID` (`<eml_...@stablepay>`): one per outbox row, so a receiver can
    /// tell a resend of the same email.
    pub id: EmailId,
    /// The sender's display name (the merchant's).
    pub from_name: String,
    pub to: String,
    pub reply_to: Option<String>,
    pub subject: String,
    pub text: String,
    pub html: String,
    pub attachment: Option<Attachment>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_attempts_back_off_then_give_up() {
        let now = Utc::now();
        let mut e = OutboundEmail {
            id: EmailId::from_trusted("eml_1".into()),
            scope: Scope::new(crate::ids::MerchantId::from_trusted("mer_1".into()), crate::Mode::Test),
            invoice_id: InvoiceId::from_trusted("inv_1".into()),
            kind: EmailKind::Invoice,
            slot: "request:eml_1".into(),
            to: "a@example.com".into(),
            status: EmailStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: now,
            created_at: now,
            sent_at: None,
        };
        let mut waits = Vec::new();
        while e.status == EmailStatus::Queued {
            e.attempt_failed("451 try later", false, now);
            waits.push((e.next_attempt_at - now).num_seconds());
        }
        assert_eq!(e.attempts, MAX_ATTEMPTS);
        assert_eq!(&waits[..4], &[30, 60, 120, 240]);
        assert!(waits.iter().all(|w| *w <= 3600));
        let mut p = e.clone();
        p.status = EmailStatus::Queued;
        p.attempts = 0;
        p.attempt_failed("550 no such user", true, now);
        assert_eq!((p.status, p.attempts), (EmailStatus::Failed, 1));
    }
}
