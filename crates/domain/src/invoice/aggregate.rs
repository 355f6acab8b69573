//! The invoice aggregate (an invoice with its checkout sessions and payments), how it is
//! addressed, and what a use case decides about it: an atomic [`InvoiceChange`] for the store
//! and the answer the use case returns ([`Decision`]).

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::event::model::{Event, EventData, EventType};
use crate::ids::{CheckoutSessionId, EventId, InvoiceId, PaymentId, PublicToken};
use crate::invoice::checkout::CheckoutSession;
use crate::invoice::model::Invoice;
use crate::invoice::payment::Payment;
use crate::invoice::snapshot;

/// How an invoice is addressed by a merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvoiceKey {
    /// By id (`inv_...`).
    Id(InvoiceId),
    /// An issued invoice number (GET only).
    Number(String),
    /// The invoice of a checkout session.
    Session(CheckoutSessionId),
    /// The invoice of a payment.
    Payment(PaymentId),
}

/// How the public hosted pages address an invoice: by an unguessable reference, never by a
/// merchant's scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicRef {
    /// The hosted checkout page of a session.
    Session(CheckoutSessionId),
    /// The hosted invoice page's token.
    Token(PublicToken),
}

/// An invoice with its checkout sessions and payments (oldest first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceAggregate {
    /// The invoice.
    pub invoice: Invoice,
    /// Its checkout sessions, oldest first.
    pub sessions: Vec<CheckoutSession>,
    /// Its payments, oldest first.
    pub payments: Vec<Payment>,
}

impl InvoiceAggregate {
    /// A new invoice with no sessions or payments yet.
    pub fn new(invoice: Invoice) -> Self {
        Self { invoice, sessions: Vec::new(), payments: Vec::new() }
    }

    /// The session with this id, if it is the invoice's.
    pub fn session(&self, id: &CheckoutSessionId) -> Option<&CheckoutSession> {
        self.sessions.iter().find(|s| &s.id == id)
    }

    /// The payment with this id, if it is the invoice's.
    pub fn payment(&self, id: &PaymentId) -> Option<&Payment> {
        self.payments.iter().find(|p| &p.id == id)
    }

    /// The newest payment on a session.
    pub fn latest_payment_of(&self, session: &CheckoutSessionId) -> Option<&Payment> {
        self.payments.iter().rev().find(|p| &p.checkout_session_id == session)
    }
}

/// An event decided by a use case; its data is rendered from the final state when saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEvent {
    /// The event's id (`evt_...`).
    pub id: EventId,
    /// Its type.
    pub event_type: EventType,
    /// For payment.* events: the payment it is about.
    pub payment_id: Option<PaymentId>,
    /// Data decided when the event was (payment_link.* events); otherwise rendered from the
    /// saved aggregate.
    pub data: Option<EventData>,
    /// When it happened (the scope's clock).
    pub created_at: DateTime<Utc>,
}

impl PendingEvent {
    /// A new event of `event_type` at `at`, about the payment `payment_id` when given (its data is
    /// rendered from the final state when the change is saved).
    pub fn new(crypto: &dyn Crypto, event_type: EventType, payment_id: Option<PaymentId>, at: DateTime<Utc>) -> Self {
        Self { id: EventId::generate(crypto), event_type, payment_id, data: None, created_at: at }
    }
}

/// What a save is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeKind {
    /// A new invoice: inserted with every session of the aggregate.
    Create,
    /// An existing invoice, written only if its stored lock version still equals
    /// `expected_lock_version` (the version it was loaded with).
    Update {
        /// The lock version the invoice was loaded with.
        expected_lock_version: i64,
    },
}

/// One atomic change of an invoice aggregate: the store writes all of it, with its events and
/// (when asked) the next invoice number, in one transaction, or nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceChange {
    /// A creation or an update at a lock version.
    pub kind: ChangeKind,
    /// The new state.
    pub aggregate: InvoiceAggregate,
    /// Assign the next invoice number with this prefix.
    pub assign_number: Option<String>,
    /// Sessions to insert or update.
    pub changed_sessions: Vec<CheckoutSessionId>,
    /// Payments to insert or update.
    pub changed_payments: Vec<PaymentId>,
    /// Events the change emits, saved with it.
    pub events: Vec<PendingEvent>,
    /// Outbox emails to insert, or to update after a delivery attempt (by id), with the change.
    pub emails: Vec<crate::email::model::OutboundEmail>,
    /// The idempotency key of the request this change answers: marked committed in the same
    /// transaction.
    pub claim: Option<crate::idempotency::model::IdempotencyClaim>,
    /// The refund reference this change records, if it records one.
    pub recorded_refund: Option<crate::ids::RefundReferenceId>,
}

impl InvoiceChange {
    /// What this change answers a keyed request with after a crash: its invoice, the session
    /// it created or changed last, the email it queued.
    pub fn committed(&self) -> crate::idempotency::model::Committed {
        crate::idempotency::model::Committed {
            invoice: Some(self.aggregate.invoice.id.to_string()),
            session: self.changed_sessions.last().map(ToString::to_string),
            email: self.emails.first().map(|e| e.id.to_string()),
            link: self.aggregate.invoice.fields.payment_link.as_ref().map(|l| l.id.to_string()),
            refund: self.recorded_refund.as_ref().map(ToString::to_string),
            payment: self.changed_payments.first().map(ToString::to_string),
            export: None,
            reconciliation_run: None,
        }
    }

    /// Creates `aggregate`'s invoice and every session it holds.
    pub fn create(aggregate: InvoiceAggregate) -> Self {
        let changed_sessions = aggregate.sessions.iter().map(|s| s.id.clone()).collect();
        Self::with(ChangeKind::Create, aggregate, changed_sessions)
    }

    /// Updates an invoice loaded at `aggregate.invoice.lock_version`.
    pub fn update(aggregate: InvoiceAggregate) -> Self {
        let kind = ChangeKind::Update { expected_lock_version: aggregate.invoice.lock_version };
        Self::with(kind, aggregate, Vec::new())
    }

    fn with(kind: ChangeKind, aggregate: InvoiceAggregate, changed_sessions: Vec<CheckoutSessionId>) -> Self {
        Self {
            kind,
            aggregate,
            assign_number: None,
            changed_sessions,
            recorded_refund: None,
            changed_payments: Vec::new(),
            events: Vec::new(),
            emails: Vec::new(),
            claim: None,
        }
    }

    /// Adds a new session to the aggregate and to what is written.
    pub fn push_session(&mut self, session: CheckoutSession) {
        self.changed_sessions.push(session.id.clone());
        self.aggregate.sessions.push(session);
    }

    /// Adds a new payment to the aggregate and to what is written.
    pub fn push_payment(&mut self, payment: Payment) {
        self.changed_payments.push(payment.id.clone());
        self.aggregate.payments.push(payment);
    }

    /// Emits an event about the invoice (or, with `payment`, about that payment).
    pub fn emit(&mut self, crypto: &dyn Crypto, event_type: EventType, payment: Option<PaymentId>, at: DateTime<Utc>) {
        self.events.push(PendingEvent::new(crypto, event_type, payment, at));
    }

    /// An event with data of its own (not a snapshot of this invoice or one of its payments).
    pub fn emit_data(&mut self, crypto: &dyn Crypto, event_type: EventType, data: EventData, at: DateTime<Utc>) {
        let mut e = PendingEvent::new(crypto, event_type, None, at);
        e.data = Some(data);
        self.events.push(e);
    }

    /// Called by the store inside its transaction: sets the allocated number (when one was
    /// asked for) and the lock version the row will have, and renders the events from the
    /// final state.
    pub fn finalize(&mut self, number_seq: Option<i64>) -> Vec<Event> {
        if let (Some(prefix), Some(seq)) = (&self.assign_number, number_seq) {
            self.aggregate.invoice.number = Some(Invoice::format_number(prefix, seq));
        }
        self.aggregate.invoice.lock_version = match self.kind {
            ChangeKind::Create => 1,
            ChangeKind::Update { expected_lock_version } => expected_lock_version + 1,
        };
        let agg = &self.aggregate;
        self.events
            .iter()
            .map(|e| {
                let data = match (&e.data, e.payment_id.as_ref().and_then(|id| agg.payment(id))) {
                    (Some(data), _) => data.clone(),
                    (None, Some(p)) => snapshot::payment_data(p),
                    (None, None) => snapshot::invoice_data(&agg.invoice, &agg.payments),
                };
                Event {
                    id: e.id.clone(),
                    scope: agg.invoice.scope.clone(),
                    event_type: e.event_type,
                    created_at: e.created_at,
                    data,
                }
            })
            .collect()
    }
}

/// What a use case decided after looking at the current aggregate: the change to save (none
/// when there is nothing to do) and the answer it returns once the change is saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision<T> {
    /// The change to save; `None` when there is nothing to do.
    pub change: Option<InvoiceChange>,
    /// What the use case answers once the change is saved.
    pub output: T,
}

impl<T> Decision<T> {
    /// Nothing to save; answer `output`.
    pub fn unchanged(output: T) -> Self {
        Self { change: None, output }
    }

    /// Save `change`, then answer `output`.
    pub fn save(change: InvoiceChange, output: T) -> Self {
        Self { change: Some(change), output }
    }
}

impl Decision<()> {
    /// Save `change`; the answer is the saved aggregate.
    pub fn of(change: InvoiceChange) -> Self {
        Self::save(change, ())
    }
}
