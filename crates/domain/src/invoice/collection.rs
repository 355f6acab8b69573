//! The invoice's commercial state (`collectionState`) and its transitions.
//!
//! After issue the state is `open`; a void (or void-remaining) gives `void`. Both choices are
//! ours where the spec says "not shown", and are documented in `docs/api.md`.

use crate::error::Error;
use crate::event::model::EventType;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// What can still be collected on an invoice (the spec's `collectionState`); [`transition`] is its
/// state machine, answering the events each transition emits.
pub enum CollectionState {
    /// Being edited; not payable.
    Draft,
    /// Issued and payable.
    Open,
    /// Issued, payable, and past its due date.
    PastDue,
    /// Part of the total is paid; the rest is payable.
    PartiallyPaid,
    /// Paid in full (or more).
    Paid,
    /// Voided: nothing more is collected.
    Void,
    /// Marked uncollectible by the merchant.
    Uncollectible,
}

impl CollectionState {
    /// Every state, in the spec's order.
    pub const ALL: [CollectionState; 7] =
        [Self::Draft, Self::Open, Self::PastDue, Self::PartiallyPaid, Self::Paid, Self::Void, Self::Uncollectible];

    /// The state as the API writes it (`draft`, `open`, `past_due` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Draft => "draft",
            Self::Open => "open",
            Self::PastDue => "past_due",
            Self::PartiallyPaid => "partially_paid",
            Self::Paid => "paid",
            Self::Void => "void",
            Self::Uncollectible => "uncollectible",
        }
    }

    /// Reads a state as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }

    /// The states of an invoice issued and still collecting: the one list (the store's
    /// statements that filter on it are tested against it).
    pub const COLLECTIBLE: [CollectionState; 3] = [Self::Open, Self::PastDue, Self::PartiallyPaid];

    /// Issued and still collecting: a payment reduces its remainder.
    pub fn is_collectible(self) -> bool {
        Self::COLLECTIBLE.contains(&self)
    }

    /// Collection was closed by the merchant.
    pub fn is_closed(self) -> bool {
        matches!(self, Self::Void | Self::Uncollectible)
    }
}

/// What happened to the invoice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CollectionTrigger {
    /// PATCH of the draft.
    Edit,
    /// Issue (or creation with issue=true).
    Issue,
    /// The due date passed.
    DueDatePassed,
    /// A verified payment was credited. `remaining_zero`: the credited sum covers the total;
    /// `over`: the credited sum exceeds the total.
    PaymentCredited {
        /// The credited sum covers the total.
        remaining_zero: bool,
        /// The credited sum exceeds the total.
        over: bool,
    },
    /// Void the invoice (no payment was credited).
    Void,
    /// Close the remaining collection of an invoice that received payments.
    VoidRemaining {
        /// Payments were credited before.
        has_payments: bool,
    },
    /// Mark the invoice uncollectible.
    MarkUncollectible,
}

/// The result of an allowed transition.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CollectionTransition {
    /// The state it leads to.
    pub to: CollectionState,
    /// The events the transition emits, in order.
    pub events: Vec<EventType>,
}

fn to(state: CollectionState, events: &[EventType]) -> Result<CollectionTransition, Error> {
    Ok(CollectionTransition { to: state, events: events.to_vec() })
}

fn guard(message: &str) -> Result<CollectionTransition, Error> {
    Err(Error::InvoiceTransitionGuardFailed(message.to_owned()))
}

/// The collectionState machine: `(state, trigger) -> (new state, events)` or a typed refusal.
pub fn transition(from: CollectionState, trigger: CollectionTrigger) -> Result<CollectionTransition, Error> {
    use CollectionState as S;
    use CollectionTrigger as T;
    use EventType as E;
    match (from, trigger) {
        (S::Draft, T::Edit) => to(S::Draft, &[]),
        (_, T::Edit) => Err(Error::InvoiceNotEditable),
        (S::Draft, T::Issue) => to(S::Open, &[E::InvoiceIssued]),
        (_, T::Issue) => Err(Error::InvoiceAlreadyIssued),
        (S::Open | S::PartiallyPaid, T::DueDatePassed) => to(S::PastDue, &[E::InvoicePastDue]),
        // Explicit no-ops: a draft is not collectible yet, a past-due invoice already is, and a
        // paid or closed one has nothing left to collect.
        (S::Draft | S::PastDue | S::Paid | S::Void | S::Uncollectible, T::DueDatePassed) => to(from, &[]),
        (S::Draft, T::PaymentCredited { .. }) => Err(Error::InvoiceNotPayable),
        (S::Open | S::PastDue | S::PartiallyPaid, T::PaymentCredited { remaining_zero: false, .. }) => {
            let next = if from == S::PastDue { S::PastDue } else { S::PartiallyPaid };
            to(next, &[E::InvoicePartiallyPaid])
        }
        (S::Open | S::PastDue | S::PartiallyPaid, T::PaymentCredited { remaining_zero: true, over: false }) => {
            to(S::Paid, &[E::InvoicePaid])
        }
        (S::Open | S::PastDue | S::PartiallyPaid, T::PaymentCredited { remaining_zero: true, over: true }) => {
            to(S::Paid, &[E::InvoicePaid, E::InvoiceOverpaid])
        }
        (S::Paid, T::PaymentCredited { .. }) => to(S::Paid, &[E::InvoiceOverpaid]),
        (S::Void, T::PaymentCredited { .. }) => to(S::Void, &[E::InvoicePaymentReceivedAfterVoid]),
        (S::Uncollectible, T::PaymentCredited { .. }) => {
            to(S::Uncollectible, &[E::InvoicePaymentReceivedAfterUncollectible])
        }
        (S::Open | S::PastDue | S::PartiallyPaid, T::Void) => to(S::Void, &[E::InvoiceVoided]),
        (S::Draft, T::Void) => guard("a draft has no open collection to void"),
        (_, T::Void) => guard("the invoice has no open collection to void"),
        (S::PartiallyPaid | S::PastDue, T::VoidRemaining { has_payments: true }) => to(S::Void, &[E::InvoiceVoided]),
        (_, T::VoidRemaining { .. }) => guard("void-remaining needs a partially paid invoice"),
        (S::Open | S::PastDue | S::PartiallyPaid, T::MarkUncollectible) => {
            to(S::Uncollectible, &[E::InvoiceUncollectible])
        }
        (_, T::MarkUncollectible) => guard("only an invoice with open collection can be marked uncollectible"),
    }
}

#[cfg(test)]
mod tests {
    use CollectionState as S;
    use CollectionTrigger as T;
    use EventType as E;

    use super::*;

    const PART: T = T::PaymentCredited { remaining_zero: false, over: false };
    const FULL: T = T::PaymentCredited { remaining_zero: true, over: false };
    const OVER: T = T::PaymentCredited { remaining_zero: true, over: true };

    #[test]
    fn allowed_transitions() {
        let cases: &[(S, T, S, &[E])] = &[
            (S::Draft, T::Edit, S::Draft, &[]),
            (S::Draft, T::Issue, S::Open, &[E::InvoiceIssued]),
            (S::Open, T::DueDatePassed, S::PastDue, &[E::InvoicePastDue]),
            (S::PartiallyPaid, T::DueDatePassed, S::PastDue, &[E::InvoicePastDue]),
            (S::Draft, T::DueDatePassed, S::Draft, &[]),
            (S::PastDue, T::DueDatePassed, S::PastDue, &[]),
            (S::Paid, T::DueDatePassed, S::Paid, &[]),
            (S::Void, T::DueDatePassed, S::Void, &[]),
            (S::Uncollectible, T::DueDatePassed, S::Uncollectible, &[]),
            (S::Open, PART, S::PartiallyPaid, &[E::InvoicePartiallyPaid]),
            (S::PartiallyPaid, PART, S::PartiallyPaid, &[E::InvoicePartiallyPaid]),
            (S::PastDue, PART, S::PastDue, &[E::InvoicePartiallyPaid]),
            (S::Open, FULL, S::Paid, &[E::InvoicePaid]),
            (S::PastDue, FULL, S::Paid, &[E::InvoicePaid]),
            (S::PartiallyPaid, FULL, S::Paid, &[E::InvoicePaid]),
            (S::Open, OVER, S::Paid, &[E::InvoicePaid, E::InvoiceOverpaid]),
            (S::Paid, OVER, S::Paid, &[E::InvoiceOverpaid]),
            (S::Void, PART, S::Void, &[E::InvoicePaymentReceivedAfterVoid]),
            (S::Void, FULL, S::Void, &[E::InvoicePaymentReceivedAfterVoid]),
            (S::Uncollectible, FULL, S::Uncollectible, &[E::InvoicePaymentReceivedAfterUncollectible]),
            (S::Open, T::Void, S::Void, &[E::InvoiceVoided]),
            (S::PastDue, T::Void, S::Void, &[E::InvoiceVoided]),
            (S::PartiallyPaid, T::Void, S::Void, &[E::InvoiceVoided]),
            (S::PartiallyPaid, T::VoidRemaining { has_payments: true }, S::Void, &[E::InvoiceVoided]),
            (S::PastDue, T::VoidRemaining { has_payments: true }, S::Void, &[E::InvoiceVoided]),
            (S::Open, T::MarkUncollectible, S::Uncollectible, &[E::InvoiceUncollectible]),
            (S::PastDue, T::MarkUncollectible, S::Uncollectible, &[E::InvoiceUncollectible]),
            (S::PartiallyPaid, T::MarkUncollectible, S::Uncollectible, &[E::InvoiceUncollectible]),
        ];
        for (from, trigger, expected, events) in cases {
            let t = transition(*from, *trigger).unwrap_or_else(|e| panic!("{from:?} {trigger:?}: {e:?}"));
            assert_eq!(t.to, *expected, "{from:?} {trigger:?}");
            assert_eq!(t.events, events.to_vec(), "{from:?} {trigger:?}");
        }
    }

    type Check = fn(&Error) -> bool;

    #[test]
    fn refused_transitions() {
        let guard = |e: &Error| matches!(e, Error::InvoiceTransitionGuardFailed(_));
        let cases: &[(S, T, Check)] = &[
            (S::Open, T::Edit, |e| *e == Error::InvoiceNotEditable),
            (S::Paid, T::Edit, |e| *e == Error::InvoiceNotEditable),
            (S::Void, T::Edit, |e| *e == Error::InvoiceNotEditable),
            (S::Open, T::Issue, |e| *e == Error::InvoiceAlreadyIssued),
            (S::Paid, T::Issue, |e| *e == Error::InvoiceAlreadyIssued),
            (S::Draft, FULL, |e| *e == Error::InvoiceNotPayable),
            (S::Draft, T::Void, guard),
            (S::Paid, T::Void, guard),
            (S::Void, T::Void, guard),
            (S::Uncollectible, T::Void, guard),
            (S::Open, T::VoidRemaining { has_payments: false }, guard),
            (S::PastDue, T::VoidRemaining { has_payments: false }, guard),
            (S::Paid, T::VoidRemaining { has_payments: true }, guard),
            (S::Draft, T::MarkUncollectible, guard),
            (S::Paid, T::MarkUncollectible, guard),
            (S::Void, T::MarkUncollectible, guard),
            (S::Uncollectible, T::MarkUncollectible, guard),
        ];
        for (from, trigger, check) in cases {
            let err = transition(*from, *trigger).expect_err("must be refused");
            assert!(check(&err), "{from:?} {trigger:?}: {err:?}");
        }
    }

    #[test]
    fn names_round_trip() {
        for s in CollectionState::ALL {
            assert_eq!(CollectionState::parse(s.as_str()), Some(s));
        }
    }
}
