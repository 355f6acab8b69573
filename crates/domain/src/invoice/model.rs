//! The invoice entity, its commercial fields and its activity log.

use chrono::{DateTime, Utc};

use crate::ids::{InvoiceId, PaymentId, PublicToken, RefundReferenceId};
use crate::invoice::collection::CollectionState;
use crate::invoice::lifecycle::LifecycleStatus;
use crate::invoice::totals::{Discount, Totals};
use crate::merchant::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::{Amount, Quantity};
use crate::payment::TxHash;
use crate::url::HttpUrl;

pub const MAX_METADATA_BYTES: usize = 16 * 1024;

/// A draft accepts this many versions (PATCHes); beyond, duplicate it into a fresh draft.
pub const MAX_DRAFT_VERSIONS: i64 = 200;
/// An invoice holds at most this many checkout sessions (remainder checkouts included).
pub const MAX_CHECKOUT_SESSIONS: usize = 100;
/// An invoice keeps at most this many payment records. Beyond, attempts that would not be
/// credited (failed, duplicate) and every simulated transfer are refused; a verified live
/// transfer is always recorded (it is money the merchant received).
pub const MAX_PAYMENT_RECORDS: usize = 200;

/// A JSON object supplied by the merchant, kept as its compact text (at most 16 KiB). The
/// domain never looks inside it; the adapter that builds one vouches that it is a JSON object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Metadata(String);

impl Metadata {
    /// Wraps the compact text of a JSON object. The caller has parsed it as an object.
    pub fn from_json_object_text(text: String) -> Self {
        Self(text)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Customer {
    pub name: Option<String>,
    pub company: Option<String>,
    pub email: Option<String>,
    pub billing_address: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineItem {
    pub id: Option<String>,
    pub sku: Option<String>,
    pub description: String,
    pub quantity: Quantity,
    pub unit_amount: Amount,
}

impl LineItem {
    /// `quantity x unitAmount`, half-up at six places.
    pub fn amount(&self) -> Amount {
        self.quantity.mul_round(&self.unit_amount)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaxLine {
    pub id: Option<String>,
    pub label: String,
    pub amount: Amount,
    pub jurisdiction: Option<String>,
    pub registration_reference: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReminderSchedule {
    pub enabled: bool,
    pub days_before_due: Vec<u8>,
    pub on_due: bool,
    pub days_after_due: Vec<u8>,
}

/// Whether the invoice was itemized (draft first) or created from an amount alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvoiceKind {
    Itemized,
    AmountOnly,
}

impl InvoiceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Itemized => "itemized",
            Self::AmountOnly => "amount_only",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "itemized" => Some(Self::Itemized),
            "amount_only" => Some(Self::AmountOnly),
            _ => None,
        }
    }
}

/// What the merchant writes on an invoice, kept as given once its rules are checked. A draft
/// replacement (PATCH) sets all of it; omitted parts are cleared.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InvoiceContent {
    /// Empty for an amount-only invoice.
    pub lines: Vec<LineItem>,
    pub customer: Option<Customer>,
    pub discount: Option<Discount>,
    pub taxes: Vec<TaxLine>,
    /// The collection deadline (separate from checkout expiry).
    pub due_at: Option<DateTime<Utc>>,
    pub payment_terms: Option<String>,
    pub memo: Option<String>,
    pub footer: Option<String>,
    pub purchase_order_number: Option<String>,
    pub external_reference: Option<String>,
    pub metadata: Option<Metadata>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
}

impl InvoiceContent {
    pub fn customer_email(&self) -> Option<&str> {
        self.customer.as_ref().and_then(|c| c.email.as_deref())
    }
}

/// The commercial fields: the content and what the service settled from it (token, checkout
/// expiry, reminder schedule, the amount of an amount-only invoice). Locked after issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceFields {
    pub content: InvoiceContent,
    /// The amount of an amount-only invoice.
    pub amount: Option<Amount>,
    pub currency: Token,
    pub checkout_expires_in_minutes: u32,
    pub reminder_schedule: Option<ReminderSchedule>,
    /// The payment link the invoice was created through.
    pub payment_link: Option<LinkRef>,
}

/// The payment link an invoice came from (a single-use link completes when it is paid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRef {
    pub id: crate::ids::PaymentLinkId,
    pub single_use: bool,
}

/// What an activity entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActivityAction {
    Created,
    Updated,
    Issued,
    CheckoutOpened,
    PaymentDetected,
    PaymentCredited,
    PaymentFailed,
    PaymentDuplicate,
    PastDue,
    Expired,
    Voided,
    VoidRemaining,
    MarkedUncollectible,
    RefundRecorded,
    DuplicatedFrom,
    /// An email to the customer was queued (the invoice, or a reminder).
    EmailQueued,
    /// The mail server accepted it.
    EmailSent,
    /// An attempt failed (retried later, or given up: see the detail).
    EmailFailed,
    /// A scheduled reminder was not sent (the invoice was paid or closed).
    ReminderSkipped,
}

impl ActivityAction {
    pub const ALL: [ActivityAction; 19] = [
        Self::Created,
        Self::Updated,
        Self::Issued,
        Self::CheckoutOpened,
        Self::PaymentDetected,
        Self::PaymentCredited,
        Self::PaymentFailed,
        Self::PaymentDuplicate,
        Self::PastDue,
        Self::Expired,
        Self::Voided,
        Self::VoidRemaining,
        Self::MarkedUncollectible,
        Self::RefundRecorded,
        Self::DuplicatedFrom,
        Self::EmailQueued,
        Self::EmailSent,
        Self::EmailFailed,
        Self::ReminderSkipped,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Updated => "updated",
            Self::Issued => "issued",
            Self::CheckoutOpened => "checkout_opened",
            Self::PaymentDetected => "payment_detected",
            Self::PaymentCredited => "payment_credited",
            Self::PaymentFailed => "payment_failed",
            Self::PaymentDuplicate => "payment_duplicate",
            Self::PastDue => "past_due",
            Self::Expired => "expired",
            Self::Voided => "voided",
            Self::VoidRemaining => "void_remaining",
            Self::MarkedUncollectible => "marked_uncollectible",
            Self::RefundRecorded => "refund_recorded",
            Self::DuplicatedFrom => "duplicated_from",
            Self::EmailQueued => "email_queued",
            Self::EmailSent => "email_sent",
            Self::EmailFailed => "email_failed",
            Self::ReminderSkipped => "reminder_skipped",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == value)
    }
}

/// Who caused a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// A merchant's API key.
    Api,
    /// The service itself: the worker, or onchain verification.
    System,
    /// A test-mode helper (simulated payments, the test clock).
    TestHelper,
}

impl Actor {
    pub const ALL: [Actor; 3] = [Self::Api, Self::System, Self::TestHelper];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::System => "system",
            Self::TestHelper => "test_helper",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == value)
    }
}

/// Who did what, when (newest last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    pub at: DateTime<Utc>,
    pub action: ActivityAction,
    pub actor: Actor,
    pub detail: Option<String>,
}

/// An externally performed refund, recorded (never executed or verified) by the service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundReference {
    pub id: RefundReferenceId,
    pub payment_id: PaymentId,
    pub amount: Amount,
    pub reason: String,
    pub external_transaction_hash: TxHash,
    pub chain_id: u64,
    pub token_contract: WalletAddress,
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invoice {
    pub id: InvoiceId,
    pub scope: Scope,
    pub kind: InvoiceKind,
    pub number: Option<String>,
    /// The merchant's number prefix when the invoice was created. Itemized invoices are
    /// numbered at issue; amount-only invoices when their first payment is credited.
    pub number_prefix: String,
    /// Token of the hosted invoice page; set at issue.
    pub public_token: Option<PublicToken>,
    pub fields: InvoiceFields,
    pub totals: Totals,
    pub collection_state: CollectionState,
    pub status: LifecycleStatus,
    /// Draft version, starting at 1; each accepted PATCH adds one.
    pub version: i64,
    /// Sum of credited payments (customer side).
    pub customer_amount_paid: Amount,
    /// Sum of verified receipts into the settlement wallet.
    pub merchant_amount_settled: Amount,
    /// Fee rate captured when the invoice was created.
    pub fee_basis_points: u32,
    pub settlement_wallet: WalletAddress,
    pub close_reason: Option<String>,
    pub refunds: Vec<RefundReference>,
    pub activity: Vec<Activity>,
    pub issued_at: Option<DateTime<Utc>>,
    pub paid_at: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// Set once invoice.past_due was emitted.
    pub past_due_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Optimistic-concurrency counter of the stored row (internal, never rendered).
    pub lock_version: i64,
}

impl Invoice {
    /// What remains to collect: total minus credited payments, never negative.
    pub fn remaining(&self) -> Amount {
        self.totals.total.saturating_sub(&self.customer_amount_paid)
    }

    /// Credited payments above the total.
    pub fn overpayment(&self) -> Amount {
        self.customer_amount_paid.saturating_sub(&self.totals.total)
    }

    /// The platform fee on the total, at the invoice's rate.
    pub fn platform_fee(&self) -> Amount {
        self.totals.total.basis_points(self.fee_basis_points)
    }

    /// Expected net receipts: total minus platform fee.
    pub fn net_amount(&self) -> Amount {
        self.totals.total.saturating_sub(&self.platform_fee())
    }

    /// Appends an activity entry and marks the invoice updated at `at`.
    pub fn log(&mut self, at: DateTime<Utc>, action: ActivityAction, actor: Actor, detail: Option<String>) {
        self.activity.push(Activity { at, action, actor, detail });
        self.updated_at = at;
    }

    /// Formats an invoice number from the merchant's prefix and the sequence.
    pub fn format_number(prefix: &str, seq: i64) -> String {
        format!("{prefix}-{seq:06}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in ActivityAction::ALL {
            assert_eq!(ActivityAction::parse(a.as_str()), Some(a));
        }
        for a in Actor::ALL {
            assert_eq!(Actor::parse(a.as_str()), Some(a));
        }
        assert_eq!(Actor::parse("robot"), None);
    }
}
