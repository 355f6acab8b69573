//! Event types (the spec's "Events" table) and the event record written to the outbox.

use chrono::{DateTime, Utc};

use crate::ids::EventId;
use crate::mode::Scope;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    InvoiceIssued,
    InvoicePaid,
    InvoicePartiallyPaid,
    InvoicePastDue,
    InvoiceOverpaid,
    InvoiceVoided,
    InvoiceUncollectible,
    InvoiceRefundRecorded,
    InvoicePaymentReceivedAfterVoid,
    InvoicePaymentReceivedAfterUncollectible,
    InvoiceExpired,
    PaymentLinkCompleted,
    PaymentLinkExpired,
    PaymentFailed,
    PaymentUnderpaid,
    PaymentOverpaid,
    PaymentUnattributed,
}

impl EventType {
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

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == value)
    }
}

/// An event as written to the outbox, in the same transaction as the change that emitted it.
/// `data` is a structured snapshot of the facts at emission time; the HTTP adapter renders it.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub id: EventId,
    pub scope: Scope,
    pub event_type: EventType,
    pub created_at: DateTime<Utc>,
    pub data: EventData,
}

/// A small, adapter-neutral value tree for event data (the domain has no serde). Maps keep
/// their insertion order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventData {
    Null,
    Bool(bool),
    Int(i64),
    String(String),
    List(Vec<EventData>),
    Map(Vec<(String, EventData)>),
}

impl EventData {
    /// Builds a map from pairs.
    pub fn map<const N: usize>(pairs: [(&str, EventData); N]) -> Self {
        EventData::Map(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    pub fn string(value: impl ToString) -> Self {
        EventData::String(value.to_string())
    }

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
