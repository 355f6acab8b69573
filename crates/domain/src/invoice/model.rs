//! The invoice entity, its commercial fields and its activity log.

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::ids::{InvoiceId, PaymentId, PublicToken, RefundReferenceId};
use crate::invoice::collection::CollectionState;
use crate::invoice::lifecycle::LifecycleStatus;
use crate::invoice::payment::TxHash;
use crate::invoice::totals::{Discount, Totals};
use crate::merchant::model::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::{Amount, Quantity};
use crate::url::HttpUrl;

/// The largest metadata, in bytes of its compact JSON text.
pub const MAX_METADATA_BYTES: usize = 16 * 1024;
/// The deepest nesting of objects and arrays metadata may hold (the object itself is level 1).
/// Stored and echoed inside other documents (the invoice's fields, event snapshots), deeper
/// metadata could not be read back by JSON readers' nesting limits.
pub const MAX_METADATA_DEPTH: usize = 32;

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

    /// The compact JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Default)]
/// Who the invoice is for (each part optional).
pub struct Customer {
    /// The customer's name (up to 200 bytes).
    pub name: Option<String>,
    /// Their company (up to 200 bytes).
    pub company: Option<String>,
    /// Their email: needed to send the invoice or remind (up to 320 bytes).
    pub email: Option<String>,
    /// Their billing address (up to 1000 bytes).
    pub billing_address: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// One line of an itemized invoice.
pub struct LineItem {
    /// The merchant's own line id (up to 100 bytes).
    pub id: Option<String>,
    /// The merchant's SKU (up to 100 bytes).
    pub sku: Option<String>,
    /// What is sold (1-500 bytes).
    pub description: String,
    /// How many (positive).
    pub quantity: Quantity,
    /// The price of one (zero or more).
    pub unit_amount: Amount,
}

impl LineItem {
    /// `quantity x unitAmount`, half-up at six places.
    pub fn amount(&self) -> Amount {
        self.quantity.mul_round(&self.unit_amount)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// A tax the merchant computed (the service computes no rates).
pub struct TaxLine {
    /// The merchant's own tax line id.
    pub id: Option<String>,
    /// What the tax is (1-120 bytes).
    pub label: String,
    /// The tax amount.
    pub amount: Amount,
    /// Where it applies.
    pub jurisdiction: Option<String>,
    /// The merchant's tax registration.
    pub registration_reference: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// When the customer is reminded of an unpaid invoice (offsets are days, 1-30; six at most in all).
pub struct ReminderSchedule {
    /// Whether reminders are sent.
    pub enabled: bool,
    /// Days before the due date, ascending.
    pub days_before_due: Vec<u8>,
    /// Whether to remind on the due date.
    pub on_due: bool,
    /// Days after the due date, ascending.
    pub days_after_due: Vec<u8>,
}

/// Whether the invoice was itemized (draft first) or created from an amount alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InvoiceKind {
    /// Lines, a draft first, issued later.
    Itemized,
    /// An amount alone, payable at creation (checkout sessions, the legacy form).
    AmountOnly,
}

impl InvoiceKind {
    /// The kind as the API writes it: `itemized` or `amount_only`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Itemized => "itemized",
            Self::AmountOnly => "amount_only",
        }
    }

    /// Reads a kind as the API writes it.
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
    /// Who the invoice is for.
    pub customer: Option<Customer>,
    /// A discount off the subtotal.
    pub discount: Option<Discount>,
    /// Tax lines (up to 100).
    pub taxes: Vec<TaxLine>,
    /// The collection deadline (separate from checkout expiry).
    pub due_at: Option<DateTime<Utc>>,
    /// Payment terms text (up to 4000 bytes).
    pub payment_terms: Option<String>,
    /// A memo (up to 2000 bytes).
    pub memo: Option<String>,
    /// A footer (up to 2000 bytes).
    pub footer: Option<String>,
    /// The customer's purchase order number (up to 100 bytes).
    pub purchase_order_number: Option<String>,
    /// The merchant's reference (up to 255 bytes).
    pub external_reference: Option<String>,
    /// The merchant's metadata, never shown publicly.
    pub metadata: Option<Metadata>,
    /// Where the checkout returns after payment.
    pub success_url: Option<HttpUrl>,
    /// Where it returns on cancel.
    pub cancel_url: Option<HttpUrl>,
}

impl InvoiceContent {
    /// The customer's email, if one is set.
    pub fn customer_email(&self) -> Option<&str> {
        self.customer.as_ref().and_then(|c| c.email.as_deref())
    }
}

/// The commercial fields: the content and what the service settled from it (token, checkout
/// expiry, reminder schedule, the amount of an amount-only invoice). Locked after issue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceFields {
    /// What the merchant wrote.
    pub content: InvoiceContent,
    /// The amount of an amount-only invoice.
    pub amount: Option<Amount>,
    /// The token it settles in.
    pub currency: Token,
    /// How long each of its checkouts stays open, in minutes.
    pub checkout_expires_in_minutes: u32,
    /// When the customer is reminded.
    pub reminder_schedule: Option<ReminderSchedule>,
    /// The payment link the invoice was created through.
    pub payment_link: Option<LinkRef>,
}

/// The payment link an invoice came from (a single-use link completes when it is paid).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkRef {
    /// The link.
    pub id: crate::ids::PaymentLinkId,
    /// Whether it was single-use when the invoice was created.
    pub single_use: bool,
}

/// What an activity entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ActivityAction {
    /// The invoice was created.
    Created,
    /// A draft was edited.
    Updated,
    /// It was issued.
    Issued,
    /// A checkout was opened for it.
    CheckoutOpened,
    /// A payment was seen and is being verified.
    PaymentDetected,
    /// A payment was verified and credited.
    PaymentCredited,
    /// A payment failed verification.
    PaymentFailed,
    /// A transfer already credited elsewhere was reported again.
    PaymentDuplicate,
    /// The due date passed.
    PastDue,
    /// Its checkout expired unpaid.
    Expired,
    /// It was voided.
    Voided,
    /// Its remainder was voided.
    VoidRemaining,
    /// It was marked uncollectible.
    MarkedUncollectible,
    /// A refund made elsewhere was recorded.
    RefundRecorded,
    /// It was created as a copy of another invoice.
    DuplicatedFrom,
    /// An email to the customer was queued (the invoice, or a reminder).
    EmailQueued,
    /// The mail server accepted it.
    EmailSent,
    /// An attempt failed (retried later, or given up: see the detail).
    EmailFailed,
    /// A scheduled reminder was not sent (the invoice was paid or closed).
    ReminderSkipped,
    /// A person attributed a recorded transfer to one of its checkouts (the detail names the
    /// transfer and says why).
    TransferAttributed,
}

impl ActivityAction {
    /// Every action.
    pub const ALL: [ActivityAction; 20] = [
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
        Self::TransferAttributed,
    ];

    /// The action as the API writes it.
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
            Self::TransferAttributed => "transfer_attributed",
        }
    }

    /// Reads an action as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == value)
    }
}

/// Who caused a change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Actor {
    /// A merchant's API key.
    Api,
    /// A member of the merchant, in the dashboard (the entry's `by` names them).
    Dashboard,
    /// The service itself: the worker, or onchain verification.
    System,
    /// A test-mode helper (simulated payments, the test clock).
    TestHelper,
}

impl Actor {
    /// Every actor.
    pub const ALL: [Actor; 4] = [Self::Api, Self::Dashboard, Self::System, Self::TestHelper];

    /// The actor as the API writes it: `api`, `dashboard`, `system` or `test_helper`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Api => "api",
            Self::Dashboard => "dashboard",
            Self::System => "system",
            Self::TestHelper => "test_helper",
        }
    }

    /// Reads an actor as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == value)
    }
}

/// Who did what, when (newest last).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Activity {
    /// When it happened.
    pub at: DateTime<Utc>,
    /// What happened.
    pub action: ActivityAction,
    /// Who did it.
    pub actor: Actor,
    /// More about it (an amount and payment id, a reason).
    pub detail: Option<String>,
    /// The member who did it in the dashboard (their email), for actor `dashboard`.
    pub by: Option<String>,
}

/// A refund performed elsewhere: which payment, how much, why, and the transfer that made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refund {
    /// The credited payment refunded.
    pub payment_id: PaymentId,
    /// How much was refunded.
    pub amount: Amount,
    /// Why.
    pub reason: String,
    /// The refund transfer's hash.
    pub external_transaction_hash: TxHash,
    /// The chain it was on.
    pub chain_id: u64,
    /// The token contract it moved.
    pub token_contract: WalletAddress,
}

/// An externally performed refund, recorded (never executed or verified) by the service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundReference {
    /// The refund record's id.
    pub id: RefundReferenceId,
    /// The refund.
    pub refund: Refund,
    /// When it was recorded.
    pub created_at: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// An invoice: what is sold and to whom, its totals, what is collected and what remains, its states
/// and its history. Checkout sessions and payments live beside it in the
/// [`InvoiceAggregate`](crate::invoice::aggregate::InvoiceAggregate).
pub struct Invoice {
    /// The invoice's id (`inv_...`).
    pub id: InvoiceId,
    /// The merchant and mode.
    pub scope: Scope,
    /// Itemized or amount-only.
    pub kind: InvoiceKind,
    /// Its number (`INV-000042`), once issued.
    pub number: Option<String>,
    /// The merchant's number prefix when the invoice was created. Itemized invoices are
    /// numbered at issue; amount-only invoices at creation (their issue). Invoices created
    /// before numbering at creation may still be unnumbered until their first credit.
    pub number_prefix: String,
    /// Token of the hosted invoice page; set at issue.
    pub public_token: Option<PublicToken>,
    /// The commercial fields.
    pub fields: InvoiceFields,
    /// Subtotal, discount, tax and total.
    pub totals: Totals,
    /// What can still be collected.
    pub collection_state: CollectionState,
    /// The payment status.
    pub status: LifecycleStatus,
    /// Draft version, starting at 1; each accepted PATCH adds one.
    pub version: i64,
    /// Sum of credited payments (customer side).
    pub customer_amount_paid: Amount,
    /// Sum of verified receipts into the settlement wallet.
    pub merchant_amount_settled: Amount,
    /// Fee rate captured when the invoice was created.
    pub fee_basis_points: u32,
    /// The merchant's wallet payments go to.
    pub settlement_wallet: WalletAddress,
    /// Why collection was closed (void, uncollectible).
    pub close_reason: Option<String>,
    /// Refunds recorded.
    pub refunds: Vec<RefundReference>,
    /// Its history, oldest first.
    pub activity: Vec<Activity>,
    /// When it was issued.
    pub issued_at: Option<DateTime<Utc>>,
    /// When it was paid in full.
    pub paid_at: Option<DateTime<Utc>>,
    /// When collection was closed.
    pub closed_at: Option<DateTime<Utc>>,
    /// Set once invoice.past_due was emitted.
    pub past_due_at: Option<DateTime<Utc>>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
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

    /// Whether the invoice may be sent to its customer: issued and not void (a paid one is
    /// sent as its receipt). The send and the pages that offer it both ask this.
    /// Errors: `InvoiceTransitionGuardFailed` saying why.
    pub fn check_sendable(&self) -> Result<(), Error> {
        if self.number.is_none() || self.collection_state == CollectionState::Draft {
            return Err(Error::InvoiceTransitionGuardFailed("a draft cannot be sent; issue it first".into()));
        }
        if self.collection_state == CollectionState::Void {
            return Err(Error::InvoiceTransitionGuardFailed("a void invoice is not sent".into()));
        }
        Ok(())
    }

    /// Whether something is still collected on it: collection open and an amount left (an
    /// amount-only invoice made before invoices were numbered at creation is numbered at its
    /// first payment, and collects before). A new checkout needs it; the pages that offer one
    /// ask this. Errors: `InvoiceNotPayable`.
    pub fn check_collecting(&self) -> Result<(), Error> {
        if !self.collection_state.is_collectible() || self.remaining().is_zero() {
            return Err(Error::InvoiceNotPayable);
        }
        Ok(())
    }

    /// Whether a reminder of what is due may be sent: numbered (the customer was told of it)
    /// and still collecting. The reminder and the page that offers it ask this.
    /// Errors: `InvoiceNotPayable`.
    pub fn check_remindable(&self) -> Result<(), Error> {
        if self.number.is_none() {
            return Err(Error::InvoiceNotPayable);
        }
        self.check_collecting()
    }

    /// Appends an activity entry and marks the invoice updated at `at`.
    pub fn log(&mut self, at: DateTime<Utc>, action: ActivityAction, actor: Actor, detail: Option<String>) {
        self.activity.push(Activity { at, action, actor, detail, by: None });
        self.updated_at = at;
    }

    /// Formats an invoice number from the merchant's prefix and the sequence.
    pub fn format_number(prefix: &str, seq: i64) -> String {
        format!("{prefix}-{seq:06}")
    }
}

/// The longest text an invoice search takes, in UTF-8 bytes.
pub const MAX_SEARCH_BYTES: usize = 200;

/// What an invoice list is narrowed to (the dashboard's filters): every part optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InvoiceSearch {
    /// One collection state.
    pub state: Option<crate::invoice::collection::CollectionState>,
    /// One lifecycle status.
    pub status: Option<crate::invoice::lifecycle::LifecycleStatus>,
    /// Part of the invoice number, or of the customer's email or name (case ignored).
    pub text: Option<String>,
    /// Created at or after.
    pub created_from: Option<DateTime<Utc>>,
    /// Created before.
    pub created_before: Option<DateTime<Utc>>,
}

/// Who acts through a use case: a merchant's API key (the default), or a member in the
/// dashboard, whose email the activity entries of their changes carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Acting {
    /// An API key.
    #[default]
    Api,
    /// A dashboard member (their email).
    Member(String),
}

impl Acting {
    /// Attributes the entries of `activity` (those a change added) that an API key would have
    /// made to the member acting; entries of the service itself stay the service's.
    pub fn attribute(&self, activity: &mut [Activity]) {
        let Acting::Member(email) = self else { return };
        for entry in activity.iter_mut().filter(|a| a.actor == Actor::Api) {
            entry.actor = Actor::Dashboard;
            entry.by = Some(email.clone());
        }
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

    #[test]
    fn a_members_changes_name_them_and_the_services_own_entries_stay() {
        let at = chrono::Utc::now();
        let entry = |actor| Activity { at, action: ActivityAction::Issued, actor, detail: None, by: None };
        let mut added = vec![entry(Actor::Api), entry(Actor::System)];
        Acting::Api.attribute(&mut added);
        assert_eq!(added[0].actor, Actor::Api, "an API key's change is the API's");
        Acting::Member("ada@example.com".into()).attribute(&mut added);
        assert_eq!((added[0].actor, added[0].by.as_deref()), (Actor::Dashboard, Some("ada@example.com")));
        assert_eq!((added[1].actor, added[1].by.as_deref()), (Actor::System, None));
    }
}
