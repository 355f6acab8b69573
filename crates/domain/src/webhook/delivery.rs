//! The delivery status machine (the spec's "Webhook delivery status moves") and what an
//! attempt's outcome makes of a delivery.

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::webhook::model::{Attempt, DeliveryStatus, ErrorCategory, RetrySchedule};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// What happens to a delivery; [`transition`] says which state it leads to.
pub enum DeliveryTrigger {
    /// A worker starts an attempt.
    AttemptBegins,
    /// The endpoint answered 2xx.
    Succeeded,
    /// An attempt failed and the schedule has another after it.
    FailedWithRetry,
    /// The last attempt of the schedule failed.
    FailedFinally,
    /// The endpoint is disabled (or gone): nothing more is tried.
    EndpointDisabled,
    /// An operator's replay (a new delivery) or a worker that stopped mid-attempt: the attempt
    /// runs again.
    AttemptLost,
}

/// The delivery state machine: the state `trigger` leads to from `from`. Errors: `Internal` for a
/// trigger that cannot happen in that state.
pub fn transition(from: DeliveryStatus, trigger: DeliveryTrigger) -> Result<DeliveryStatus, Error> {
    use DeliveryStatus as S;
    use DeliveryTrigger as T;
    match (from, trigger) {
        (S::Pending | S::RetryScheduled, T::AttemptBegins) => Ok(S::Delivering),
        (S::Delivering, T::Succeeded) => Ok(S::Delivered),
        (S::Delivering, T::FailedWithRetry) => Ok(S::RetryScheduled),
        (S::Delivering, T::FailedFinally) => Ok(S::Failed),
        (S::Pending | S::Delivering | S::RetryScheduled, T::EndpointDisabled) => Ok(S::Failed),
        (S::Delivering, T::AttemptLost) => Ok(S::Delivering),
        _ => Err(Error::Internal(format!("delivery {} cannot take {trigger:?}", from.as_str()))),
    }
}

/// What a finished attempt makes of its delivery.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Conclusion {
    /// The delivery's new state.
    pub status: DeliveryStatus,
    /// When the next automatic attempt is due (retry_scheduled only).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// When it was delivered (delivered only).
    pub delivered_at: Option<DateTime<Utc>>,
}

/// Decides the delivery's next state after `attempt` (which was attempt number
/// `attempt.number` of a delivering delivery) finished at `now`.
pub fn conclude(attempt: &Attempt, schedule: &RetrySchedule, now: DateTime<Utc>) -> Result<Conclusion, Error> {
    let trigger = match attempt.outcome.error_category {
        None => DeliveryTrigger::Succeeded,
        Some(ErrorCategory::EndpointDisabled) => DeliveryTrigger::EndpointDisabled,
        Some(_) if schedule.after(attempt.number).is_some() => DeliveryTrigger::FailedWithRetry,
        Some(_) => DeliveryTrigger::FailedFinally,
    };
    let status = transition(DeliveryStatus::Delivering, trigger)?;
    Ok(Conclusion {
        status,
        next_attempt_at: (status == DeliveryStatus::RetryScheduled)
            .then(|| schedule.after(attempt.number).map(|wait| now + wait))
            .flatten(),
        delivered_at: (status == DeliveryStatus::Delivered).then_some(now),
    })
}

#[cfg(test)]
mod tests {
    use DeliveryStatus as S;
    use DeliveryTrigger as T;
    use chrono::Duration;

    use super::*;
    use crate::webhook::model::SendOutcome;

    #[test]
    fn table() {
        let allowed = [
            (S::Pending, T::AttemptBegins, S::Delivering),
            (S::RetryScheduled, T::AttemptBegins, S::Delivering),
            (S::Delivering, T::Succeeded, S::Delivered),
            (S::Delivering, T::FailedWithRetry, S::RetryScheduled),
            (S::Delivering, T::FailedFinally, S::Failed),
            (S::Delivering, T::EndpointDisabled, S::Failed),
            (S::Pending, T::EndpointDisabled, S::Failed),
            (S::RetryScheduled, T::EndpointDisabled, S::Failed),
            (S::Delivering, T::AttemptLost, S::Delivering),
        ];
        for (from, trigger, to) in allowed {
            assert_eq!(transition(from, trigger), Ok(to), "{from:?} {trigger:?}");
        }
        for from in S::ALL {
            for trigger in [
                T::AttemptBegins,
                T::Succeeded,
                T::FailedWithRetry,
                T::FailedFinally,
                T::EndpointDisabled,
                T::AttemptLost,
            ] {
                if !allowed.iter().any(|(f, t, _)| *f == from && *t == trigger) {
                    assert!(transition(from, trigger).is_err(), "{from:?} {trigger:?}");
                }
            }
        }
    }

    fn attempt(number: u32, category: Option<ErrorCategory>) -> Attempt {
        let outcome = SendOutcome {
            duration_ms: 5,
            status_code: None,
            error_category: category,
            error_message: None,
            response_excerpt: None,
            request_headers: vec![],
        };
        Attempt { number, started_at: DateTime::<Utc>::UNIX_EPOCH, outcome }
    }

    #[test]
    fn the_standard_schedule_ends_after_the_fifth_failure() {
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let s = RetrySchedule::standard();
        let waits = [Duration::minutes(1), Duration::minutes(5), Duration::minutes(30), Duration::hours(2)];
        for (n, wait) in (1..=4).zip(waits) {
            let c = conclude(&attempt(n, Some(ErrorCategory::Http5xx)), &s, now).unwrap();
            assert_eq!((c.status, c.next_attempt_at), (S::RetryScheduled, Some(now + wait)));
        }
        let last = conclude(&attempt(5, Some(ErrorCategory::Timeout)), &s, now).unwrap();
        assert_eq!((last.status, last.next_attempt_at), (S::Failed, None));
        let ok = conclude(&attempt(3, None), &s, now).unwrap();
        assert_eq!((ok.status, ok.delivered_at), (S::Delivered, Some(now)));
        let off = conclude(&attempt(1, Some(ErrorCategory::EndpointDisabled)), &s, now).unwrap();
        assert_eq!(off.status, S::Failed);
    }
}
