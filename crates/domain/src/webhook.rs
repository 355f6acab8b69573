//! Webhook delivery status machine and retry schedule (the spec's "Webhook delivery status
//! moves" and "Delivery behaviour").

use chrono::Duration;

use crate::error::Error;

/// Automatic attempts before a delivery fails.
pub const MAX_ATTEMPTS: u32 = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    Pending,
    Delivering,
    Delivered,
    RetryScheduled,
    Failed,
}

impl DeliveryStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivering => "delivering",
            Self::Delivered => "delivered",
            Self::RetryScheduled => "retry_scheduled",
            Self::Failed => "failed",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeliveryTrigger {
    AttemptBegins,
    /// The endpoint answered 2xx.
    Succeeded,
    /// The attempt numbered `attempt` (1-based) failed.
    AttemptFailed {
        attempt: u32,
    },
    EndpointDisabled,
}

/// The wait after failed attempt `attempt` (1-4): 1 min, 5 min, 30 min, 2 h; `None` after the
/// fifth.
pub fn retry_delay(attempt: u32) -> Option<Duration> {
    match attempt {
        1 => Some(Duration::minutes(1)),
        2 => Some(Duration::minutes(5)),
        3 => Some(Duration::minutes(30)),
        4 => Some(Duration::hours(2)),
        _ => None,
    }
}

pub fn transition(from: DeliveryStatus, trigger: DeliveryTrigger) -> Result<DeliveryStatus, Error> {
    use DeliveryStatus as S;
    use DeliveryTrigger as T;
    match (from, trigger) {
        (S::Pending | S::RetryScheduled, T::AttemptBegins) => Ok(S::Delivering),
        (S::Delivering, T::Succeeded) => Ok(S::Delivered),
        (S::Delivering, T::AttemptFailed { attempt }) => {
            Ok(if retry_delay(attempt).is_some() { S::RetryScheduled } else { S::Failed })
        }
        (S::Pending | S::Delivering | S::RetryScheduled, T::EndpointDisabled) => Ok(S::Failed),
        _ => Err(Error::InvoiceTransitionGuardFailed(format!("delivery {} cannot take {trigger:?}", from.as_str()))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DeliveryStatus as S;
    use DeliveryTrigger as T;

    #[test]
    fn table() {
        let allowed = [
            (S::Pending, T::AttemptBegins, S::Delivering),
            (S::RetryScheduled, T::AttemptBegins, S::Delivering),
            (S::Delivering, T::Succeeded, S::Delivered),
            (S::Delivering, T::AttemptFailed { attempt: 1 }, S::RetryScheduled),
            (S::Delivering, T::AttemptFailed { attempt: 4 }, S::RetryScheduled),
            (S::Delivering, T::AttemptFailed { attempt: 5 }, S::Failed),
            (S::Delivering, T::EndpointDisabled, S::Failed),
            (S::Pending, T::EndpointDisabled, S::Failed),
        ];
        for (from, trigger, to) in allowed {
            assert_eq!(transition(from, trigger), Ok(to), "{from:?} {trigger:?}");
        }
        let refused = [
            (S::Delivering, T::AttemptBegins),
            (S::Delivered, T::AttemptBegins),
            (S::Failed, T::AttemptBegins),
            (S::Pending, T::Succeeded),
            (S::RetryScheduled, T::AttemptFailed { attempt: 1 }),
            (S::Delivered, T::EndpointDisabled),
        ];
        for (from, trigger) in refused {
            assert!(transition(from, trigger).is_err(), "{from:?} {trigger:?}");
        }
        let delays: Vec<_> = (1..=5).map(retry_delay).collect();
        assert_eq!(
            delays,
            vec![
                Some(Duration::minutes(1)),
                Some(Duration::minutes(5)),
                Some(Duration::minutes(30)),
                Some(Duration::hours(2)),
                None
            ]
        );
    }
}
