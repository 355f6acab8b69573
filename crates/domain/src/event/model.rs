//! Event types (the spec's "Events" table) and the event record written to the outbox.

use chrono::{DateTime, Utc};

use crate::ids::EventId;
use crate::mode::Scope;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// The events the service emits (the spec's event types), as the API writes them.
pub enum EventType {
    /// `invoice.issued`: a draft was issued.
    InvoiceIssued,
    /// `invoice.paid`: credited payments cover the total.
    InvoicePaid,
    /// `invoice.partially_paid`: a payment covered part of the total.
    InvoicePartiallyPaid,
    /// `invoice.past_due`: the due date passed with something left to collect.
    InvoicePastDue,
    /// `invoice.overpaid`: credited payments exceed the total.
    InvoiceOverpaid,
    /// `invoice.voided`: the invoice (or its remainder) was voided.
    InvoiceVoided,
    /// `invoice.uncollectible`: the merchant marked it uncollectible.
    InvoiceUncollectible,
    /// `invoice.refund_recorded`: a refund made elsewhere was recorded.
    InvoiceRefundRecorded,
    /// `invoice.payment_received_after_void`: a transfer arrived for a voided invoice.
    InvoicePaymentReceivedAfterVoid,
    /// `invoice.payment_received_after_uncollectible`: a transfer arrived for an uncollectible
    /// invoice.
    InvoicePaymentReceivedAfterUncollectible,
    /// `invoice.expired`: its checkout expired unpaid.
    InvoiceExpired,
    /// `payment_link.completed`: a single-use link's invoice was paid.
    PaymentLinkCompleted,
    /// `payment_link.expired`: a link's expiresAt passed.
    PaymentLinkExpired,
    /// `payment.failed`: a payment failed verification.
    PaymentFailed,
    /// `payment.underpaid`: a verified payment was less than asked.
    PaymentUnderpaid,
    /// `payment.overpaid`: a verified payment was more than asked.
    PaymentOverpaid,
    /// `payment.unattributed`: a transfer to a merchant's wallet matched no single checkout.
    PaymentUnattributed,
}

impl EventType {
    /// Every type, in the spec's order.
    pub const ALL: [EventType; 17] = [
        Self::InvoiceIssued,
        Self::InvoicePaid,
        Self::InvoicePartiallyPaid,
        Self::InvoicePastDue,
        Self::InvoiceOverpaid,
        Self::InvoiceVoided,
        Self::InvoiceUncollectible,
        Self::InvoiceRefundRecorded,
        Self::InvoicePaymentReceivedAfterVoid,
        Self::InvoicePaymentReceivedAfterUncollectible,
        Self::InvoiceExpired,
        Self::PaymentLinkCompleted,
        Self::PaymentLinkExpired,
        Self::PaymentFailed,
        Self::PaymentUnderpaid,
        Self::PaymentOverpaid,
        Self::PaymentUnattributed,
    ];

    /// The type as the API writes it (`invoice.paid` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::InvoiceIssued => "invoice.issued",
            Self::InvoicePaid => "invoice.paid",
            Self::InvoicePartiallyPaid => "invoice.partially_paid",
            Self::InvoicePastDue => "invoice.past_due",
            Self::InvoiceOverpaid => "invoice.overpaid",
            Self::InvoiceVoided => "invoice.voided",
            Self::InvoiceUncollectible => "invoice.uncollectible",
            Self::InvoiceRefundRecorded => "invoice.refund_recorded",
            Self::InvoicePaymentReceivedAfterVoid => "invoice.payment_received_after_void",
            Self::InvoicePaymentReceivedAfterUncollectible => "invoice.payment_received_after_uncollectible",
            Self::InvoiceExpired => "invoice.expired",
            Self::PaymentLinkCompleted => "payment_link.completed",
            Self::PaymentLinkExpired => "payment_link.expired",
            Self::PaymentFailed => "payment.failed",
            Self::PaymentUnderpaid => "payment.underpaid",
            Self::PaymentOverpaid => "payment.overpaid",
            Self::PaymentUnattributed => "payment.unattributed",
        }
    }

    /// Reads a type as the API writes it; `None` for an unsupported one.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == value)
    }
}

/// An event as written to the outbox, in the same transaction as the change that emitted it.
/// `data` is a structured snapshot of the facts at emission time; the HTTP adapter renders it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// The event's id (`evt_...`).
    pub id: EventId,
    /// The merchant and mode.
    pub scope: Scope,
    /// Its type.
    pub event_type: EventType,
    /// When it happened (the scope's clock).
    pub created_at: DateTime<Utc>,
    /// Its data: a snapshot of the object it is about.
    pub data: EventData,
}

/// A small, adapter-neutral value tree for event data (the domain has no serde). Maps keep
/// their insertion order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventData {
    /// JSON null.
    Null,
    /// A boolean.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A string (amounts are strings too).
    String(String),
    /// A list.
    List(Vec<EventData>),
    /// An object, its keys in order.
    Map(Vec<(String, EventData)>),
}

impl EventData {
    /// Builds a map from pairs.
    pub fn map<const N: usize>(pairs: [(&str, EventData); N]) -> Self {
        EventData::Map(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// A string value.
    pub fn string(value: impl ToString) -> Self {
        EventData::String(value.to_string())
    }

    /// A string value, or null.
    pub fn opt_string<T: ToString>(value: Option<T>) -> Self {
        value.map_or(EventData::Null, |v| EventData::String(v.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in EventType::ALL {
            assert_eq!(EventType::parse(t.as_str()), Some(t));
        }
        assert_eq!(EventType::parse("invoice.created"), None);
    }
}
