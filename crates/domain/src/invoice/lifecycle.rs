//! The invoice lifecycle status: where its payment stands, separate from its commercial
//! collectionState.

use crate::error::Error;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// The invoice's payment status (the spec's lifecycle `status`), driven by payment events;
/// [`transition`] is its state machine. It runs beside the collection state, which says what can
/// still be collected.
pub enum LifecycleStatus {
    /// Awaiting payment (drafts and issued invoices with nothing in flight).
    Pending,
    /// A payment is being verified.
    Processing,
    /// Verified payments cover the total exactly.
    Paid,
    /// Verified payments cover part of the total.
    Underpaid,
    /// Verified payments exceed the total.
    Overpaid,
    /// The checkout expired before any payment.
    Expired,
    /// The last attempt failed and nothing is credited.
    Failed,
    /// Collection closed (void or uncollectible) before it was paid.
    Cancelled,
}

impl LifecycleStatus {
    /// Every status, in the spec's order.
    pub const ALL: [LifecycleStatus; 8] = [
        Self::Pending,
        Self::Processing,
        Self::Paid,
        Self::Underpaid,
        Self::Overpaid,
        Self::Expired,
        Self::Failed,
        Self::Cancelled,
    ];

    /// The status as the API writes it (`pending`, `processing`, `paid` ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Processing => "processing",
            Self::Paid => "paid",
            Self::Underpaid => "underpaid",
            Self::Overpaid => "overpaid",
            Self::Expired => "expired",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Reads a status as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// How much the credited payments cover after a verified payment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Coverage {
    /// The credited payments cover part of the total.
    Partial,
    /// They cover the total exactly.
    Full,
    /// They exceed the total.
    Over,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// What happens to an invoice's payments; [`transition`] says which status it leads to.
pub enum LifecycleTrigger {
    /// A payment attempt was captured and its verification started.
    PaymentDetected,
    /// A payment was verified and credited.
    PaymentCredited(Coverage),
    /// An attempt failed verification; `has_credit`: earlier payments are credited.
    PaymentFailed {
        /// Earlier payments of the invoice are credited.
        has_credit: bool,
    },
    /// The invoice's checkout expired.
    CheckoutExpired,
    /// A new checkout session was opened for the remainder.
    CheckoutOpened,
    /// Collection closed by void, void-remaining or mark-uncollectible.
    CollectionClosed,
}

/// `(status, trigger) -> status` or a refusal (`INVOICE_TRANSITION_GUARD_FAILED`).
pub fn transition(from: LifecycleStatus, trigger: LifecycleTrigger) -> Result<LifecycleStatus, Error> {
    use LifecycleStatus as S;
    use LifecycleTrigger as T;
    let refuse =
        || Err(Error::InvoiceTransitionGuardFailed(format!("status {} cannot take {trigger:?}", from.as_str())));
    match (from, trigger) {
        (S::Pending | S::Underpaid | S::Expired | S::Failed | S::Processing, T::PaymentDetected) => Ok(S::Processing),
        (S::Paid | S::Overpaid | S::Cancelled, T::PaymentDetected) => Ok(from),
        (S::Pending | S::Processing | S::Underpaid | S::Expired | S::Failed, T::PaymentCredited(c)) => Ok(match c {
            Coverage::Partial => S::Underpaid,
            Coverage::Full => S::Paid,
            Coverage::Over => S::Overpaid,
        }),
        (S::Paid | S::Overpaid, T::PaymentCredited(_)) => Ok(S::Overpaid),
        (S::Cancelled, T::PaymentCredited(_)) => Ok(S::Cancelled),
        (S::Pending | S::Processing | S::Failed | S::Expired, T::PaymentFailed { has_credit: false }) => Ok(S::Failed),
        (S::Pending | S::Processing | S::Underpaid | S::Failed | S::Expired, T::PaymentFailed { has_credit: true }) => {
            Ok(S::Underpaid)
        }
        (S::Paid | S::Overpaid | S::Cancelled, T::PaymentFailed { .. }) => Ok(from),
        (S::Underpaid, T::PaymentFailed { has_credit: false }) => refuse(),
        (S::Pending | S::Failed, T::CheckoutExpired) => Ok(S::Expired),
        // Explicit no-ops: an invoice with credited payments, or a closed or already expired
        // one, does not expire with its checkout.
        (S::Underpaid | S::Paid | S::Overpaid | S::Cancelled | S::Expired, T::CheckoutExpired) => Ok(from),
        // Processing lasts only inside one crediting decision; it is never stored.
        (S::Processing, T::CheckoutExpired) => refuse(),
        (S::Expired | S::Failed, T::CheckoutOpened) => Ok(S::Pending),
        (S::Pending | S::Underpaid, T::CheckoutOpened) => Ok(from),
        (_, T::CheckoutOpened) => refuse(),
        (S::Pending | S::Processing | S::Underpaid | S::Expired | S::Failed, T::CollectionClosed) => {
            Ok(if from == S::Underpaid { S::Underpaid } else { S::Cancelled })
        }
        (_, T::CollectionClosed) => refuse(),
    }
}

#[cfg(test)]
mod tests {
    use LifecycleStatus as S;
    use LifecycleTrigger as T;

    use super::*;

    #[test]
    fn allowed() {
        let cases = [
            (S::Pending, T::PaymentDetected, S::Processing),
            (S::Underpaid, T::PaymentDetected, S::Processing),
            (S::Expired, T::PaymentDetected, S::Processing),
            (S::Paid, T::PaymentDetected, S::Paid),
            (S::Processing, T::PaymentCredited(Coverage::Partial), S::Underpaid),
            (S::Processing, T::PaymentCredited(Coverage::Full), S::Paid),
            (S::Processing, T::PaymentCredited(Coverage::Over), S::Overpaid),
            (S::Paid, T::PaymentCredited(Coverage::Over), S::Overpaid),
            (S::Cancelled, T::PaymentCredited(Coverage::Full), S::Cancelled),
            (S::Processing, T::PaymentFailed { has_credit: false }, S::Failed),
            (S::Processing, T::PaymentFailed { has_credit: true }, S::Underpaid),
            (S::Paid, T::PaymentFailed { has_credit: true }, S::Paid),
            (S::Pending, T::CheckoutExpired, S::Expired),
            (S::Failed, T::CheckoutExpired, S::Expired),
            (S::Underpaid, T::CheckoutExpired, S::Underpaid),
            (S::Paid, T::CheckoutExpired, S::Paid),
            (S::Overpaid, T::CheckoutExpired, S::Overpaid),
            (S::Cancelled, T::CheckoutExpired, S::Cancelled),
            (S::Expired, T::CheckoutExpired, S::Expired),
            (S::Expired, T::CheckoutOpened, S::Pending),
            (S::Underpaid, T::CheckoutOpened, S::Underpaid),
            (S::Pending, T::CollectionClosed, S::Cancelled),
            (S::Expired, T::CollectionClosed, S::Cancelled),
            (S::Underpaid, T::CollectionClosed, S::Underpaid),
        ];
        for (from, trigger, expected) in cases {
            assert_eq!(transition(from, trigger), Ok(expected), "{from:?} {trigger:?}");
        }
    }

    #[test]
    fn refused() {
        let cases = [
            (S::Processing, T::CheckoutExpired),
            (S::Paid, T::CheckoutOpened),
            (S::Cancelled, T::CheckoutOpened),
            (S::Paid, T::CollectionClosed),
            (S::Overpaid, T::CollectionClosed),
            (S::Cancelled, T::CollectionClosed),
            (S::Underpaid, T::PaymentFailed { has_credit: false }),
        ];
        for (from, trigger) in cases {
            assert!(
                matches!(transition(from, trigger), Err(Error::InvoiceTransitionGuardFailed(_))),
                "{from:?} {trigger:?}"
            );
        }
        for s in LifecycleStatus::ALL {
            assert_eq!(LifecycleStatus::parse(s.as_str()), Some(s));
        }
    }
}
