//! The outbox record of an email and the rules of its delivery.

use chrono::{DateTime, Duration, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{AccountLinkId, EmailId, InvoiceId, NoticeId, StatementId};
use crate::invoice::model::Invoice;
use crate::invoice::validate::is_valid_email;
use crate::mode::Scope;
use crate::statement::model::Statement;

/// Attempts before an email is given up (about 4 hours of backoff).
pub const MAX_ATTEMPTS: u32 = 8;
/// At most one reminder per invoice in this many hours (requested or scheduled).
pub const REMINDER_COOLDOWN_HOURS: i64 = 24;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// What an email is about.
pub enum EmailKind {
    /// The invoice, with its PDF.
    Invoice,
    /// A reminder of what is due.
    Reminder,
    /// A monthly statement's download links, to the merchant's billing email.
    Statement,
    /// An account link (email verification, password reset, invitation), to its address.
    AccountLink,
    /// A notice to a member about their merchant (the wallet changed, a webhook incident).
    Notice,
}

impl EmailKind {
    /// Every kind.
    pub const ALL: [Self; 5] = [Self::Invoice, Self::Reminder, Self::Statement, Self::AccountLink, Self::Notice];

    /// The kind as stored: `invoice`, `reminder`, `statement`, `account_link` or `notice`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Invoice => "invoice",
            Self::Reminder => "reminder",
            Self::Statement => "statement",
            Self::AccountLink => "account_link",
            Self::Notice => "notice",
        }
    }

    /// Reads a kind as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// Where an outbox email stands.
pub enum EmailStatus {
    /// Waiting for (another) attempt.
    Queued,
    /// Accepted by the mail server.
    Sent,
    /// Given up after [`MAX_ATTEMPTS`], or refused for good by the server.
    Failed,
    /// Not needed any more: a reminder of an invoice paid or closed before it went out, an
    /// account link replaced or used before its email went, a reset asked for an address
    /// without an account.
    Skipped,
}

impl EmailStatus {
    /// Every status.
    pub const ALL: [Self; 4] = [Self::Queued, Self::Sent, Self::Failed, Self::Skipped];

    /// The status as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Sent => "sent",
            Self::Failed => "failed",
            Self::Skipped => "skipped",
        }
    }

    /// Reads a status as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// What an email is about: an invoice of a scope (the invoice and its reminders, to its
/// customer), a scope's monthly statement (to its billing email), an account link (to its
/// address) or a notice (to a member). Every email is a row of the one outbox, whatever it is
/// about; only invoice and statement emails have a scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EmailAbout {
    /// An invoice: the email is written and recorded with the invoice's changes and activity.
    Invoice(Scope, InvoiceId),
    /// A monthly statement: the email is written when both its files are ready.
    Statement(Scope, StatementId),
    /// An account link: the email is written with the link, and carries a token made at its
    /// attempt.
    AccountLink(AccountLinkId),
    /// A notice: the email is written with the notice, in the transaction of what it tells.
    Notice(NoticeId),
}

/// How long the outbox waits after `attempts` failed attempts (the schedule's
/// [`EMAIL_BACKOFF`](crate::schedule::model::EMAIL_BACKOFF)).
pub fn retry_delay(attempts: u32) -> Duration {
    crate::schedule::model::EMAIL_BACKOFF.delay(attempts)
}

/// One email in the outbox.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OutboundEmail {
    /// The email's id (also its Message-ID).
    pub id: EmailId,
    /// What it is about (with its scope, where it has one).
    pub about: EmailAbout,
    /// Invoice, reminder, statement, account link or notice.
    pub kind: EmailKind,
    /// What asked for it, unique per invoice and kind: `request:<email id>` for a request,
    /// `schedule:<slot>` for a scheduled reminder (so a slot is never sent twice),
    /// `statement:<month>` for a statement, `link:<id>` and `notice:<id>` for the others.
    pub slot: String,
    /// The recipient (the invoice's customer email, the statement's billing email, the link's
    /// address or the member's, when it was queued).
    pub to: String,
    /// Where it stands.
    pub status: EmailStatus,
    /// Attempts made so far.
    pub attempts: u32,
    /// Why the last attempt failed, if it did.
    pub last_error: Option<String>,
    /// When the next attempt is due.
    pub next_attempt_at: DateTime<Utc>,
    /// When it was queued.
    pub created_at: DateTime<Utc>,
    /// When the mail server accepted it.
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
        let about = EmailAbout::Invoice(invoice.scope.clone(), invoice.id.clone());
        Ok(Self::queued(id, (about, kind), slot, to.to_owned(), now))
    }

    /// The email of `statement` to its billing email, due at `now` (the real time).
    pub fn statement(crypto: &dyn Crypto, statement: &Statement, now: DateTime<Utc>) -> Self {
        let about = (EmailAbout::Statement(statement.scope.clone(), statement.id.clone()), EmailKind::Statement);
        let slot = format!("statement:{}", statement.month);
        Self::queued(EmailId::generate(crypto), about, slot, statement.email.clone(), now)
    }

    /// The email of the account link `link` to `to`, due at `now` (the real time).
    pub fn account_link(id: EmailId, link: &AccountLinkId, to: &str, now: DateTime<Utc>) -> Self {
        let slot = format!("link:{link}");
        Self::queued(id, (EmailAbout::AccountLink(link.clone()), EmailKind::AccountLink), slot, to.to_owned(), now)
    }

    /// The email of the notice `notice` to `to`, due at `now` (the real time).
    pub fn notice(id: EmailId, notice: &NoticeId, to: &str, now: DateTime<Utc>) -> Self {
        let slot = format!("notice:{notice}");
        Self::queued(id, (EmailAbout::Notice(notice.clone()), EmailKind::Notice), slot, to.to_owned(), now)
    }

    /// A new email, queued and due at `now`.
    fn queued(
        id: EmailId,
        (about, kind): (EmailAbout, EmailKind),
        slot: String,
        to: String,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id,
            about,
            kind,
            slot,
            to,
            status: EmailStatus::Queued,
            attempts: 0,
            last_error: None,
            next_attempt_at: now,
            created_at: now,
            sent_at: None,
        }
    }

    /// The invoice it is about, if it is about one.
    pub fn invoice_id(&self) -> Option<&InvoiceId> {
        match &self.about {
            EmailAbout::Invoice(_, id) => Some(id),
            _ => None,
        }
    }

    /// The merchant and mode of an invoice's or a statement's email (an account link's and a
    /// notice's have none).
    pub fn scope(&self) -> Option<&Scope> {
        match &self.about {
            EmailAbout::Invoice(scope, _) | EmailAbout::Statement(scope, _) => Some(scope),
            EmailAbout::AccountLink(_) | EmailAbout::Notice(_) => None,
        }
    }

    /// Marks it done without an email (a reminder no longer needed, a link replaced or asked
    /// for an address without an account).
    pub fn skipped(&mut self) {
        self.status = EmailStatus::Skipped;
    }

    /// After a failed attempt at `now`: queued again after a backoff (30 s doubled per attempt,
    /// at most an hour), or failed for good after [`MAX_ATTEMPTS`] or when `permanent`.
    pub fn attempt_failed(&mut self, error: &str, permanent: bool, now: DateTime<Utc>) {
        self.attempts += 1;
        self.last_error = Some(error.chars().take(500).collect());
        if permanent || self.attempts >= MAX_ATTEMPTS {
            self.status = EmailStatus::Failed;
        } else {
            self.next_attempt_at = now + retry_delay(self.attempts);
        }
    }

    /// Marks it sent at `now`.
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
    /// The attachment's file name (`INV-000042.pdf`).
    pub filename: String,
    /// Its MIME type.
    pub content_type: String,
    /// Its content.
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
    /// The recipient.
    pub to: String,
    /// Where replies go, if not to the sender.
    pub reply_to: Option<String>,
    /// The subject line.
    pub subject: String,
    /// The plain-text part.
    pub text: String,
    /// The HTML part.
    pub html: String,
    /// The invoice PDF, when attached (a statement attaches nothing: its files are links).
    pub attachment: Option<Attachment>,
    /// The merchant's logo, shown inline by the HTML part (`cid:` its content id).
    pub logo: Option<InlineImage>,
}

/// An image the HTML part shows inline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineImage {
    /// Its `Content-ID`, without angle brackets (the HTML says `cid:` and this).
    pub content_id: String,
    /// Its MIME type.
    pub content_type: String,
    /// Its content.
    pub bytes: Vec<u8>,
}

/// The emails of a scope, as the merchant's readiness counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmailCounts {
    /// Waiting to be sent.
    pub queued: u64,
    /// Of those, ones whose attempts failed and are retried.
    pub retrying: u64,
    /// Given up in the last [`EMAIL_FAILURE_WINDOW_DAYS`] days.
    pub failed_recently: u64,
}

/// The days of email failures readiness looks back on.
pub const EMAIL_FAILURE_WINDOW_DAYS: i64 = 7;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_attempts_back_off_then_give_up() {
        let now = Utc::now();
        let about = EmailAbout::Invoice(
            Scope::new(crate::ids::MerchantId::from_trusted("mer_1".into()), crate::Mode::Test),
            InvoiceId::from_trusted("inv_1".into()),
        );
        let id = EmailId::from_trusted("eml_1".into());
        let mut e =
            OutboundEmail::queued(id, (about, EmailKind::Invoice), "request:eml_1".into(), "a@example.com".into(), now);
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
