//! Payment link lifecycle states. The spec names the operations (pause, resume, archive,
//! duplicate) but not the states; ours are `active`, `paused`, `completed` (a single-use link
//! that was paid), `expired` and `archived`. Duplicate creates a new link and changes nothing.

use crate::error::Error;
use crate::event::model::EventType;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
/// A payment link's state; [`transition`] is its state machine.
pub enum LinkState {
    /// Takes submissions (between its activeAt and expiresAt).
    Active,
    /// Paused by the merchant: takes no submissions until resumed.
    Paused,
    /// A single-use link whose invoice was paid: takes no more submissions.
    Completed,
    /// Its expiresAt passed.
    Expired,
    /// Archived by the merchant: final.
    Archived,
}

impl LinkState {
    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Completed => "completed",
            Self::Expired => "expired",
            Self::Archived => "archived",
        }
    }

    /// Reads a state as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        [Self::Active, Self::Paused, Self::Completed, Self::Expired, Self::Archived]
            .into_iter()
            .find(|s| s.as_str() == value)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// What happens to a link; [`transition`] says which state it leads to.
pub enum LinkTrigger {
    /// The merchant pauses it.
    Pause,
    /// The merchant resumes it.
    Resume,
    /// The merchant archives it.
    Archive,
    /// A single-use link's invoice was paid.
    Complete,
    /// `expiresAt` passed.
    Expire,
}

/// `(state, trigger) -> (state, events)` or a refusal (a guard failure; the use cases answer
/// the refusal with the error its state calls for, see [`refusal`]).
pub fn transition(from: LinkState, trigger: LinkTrigger) -> Result<(LinkState, Vec<EventType>), Error> {
    use LinkState as S;
    use LinkTrigger as T;
    match (from, trigger) {
        (S::Active, T::Pause) => Ok((S::Paused, vec![])),
        (S::Paused, T::Resume) => Ok((S::Active, vec![])),
        (S::Active | S::Paused | S::Completed | S::Expired, T::Archive) => Ok((S::Archived, vec![])),
        (S::Active | S::Paused, T::Complete) => Ok((S::Completed, vec![EventType::PaymentLinkCompleted])),
        (S::Active | S::Paused, T::Expire) => Ok((S::Expired, vec![EventType::PaymentLinkExpired])),
        _ => {
            Err(Error::InvoiceTransitionGuardFailed(format!("payment link {} cannot take {trigger:?}", from.as_str())))
        }
    }
}

/// The error a merchant gets for a lifecycle change its link's state refuses.
pub fn refusal(from: LinkState) -> Error {
    match from {
        LinkState::Archived => Error::LinkInactive,
        LinkState::Completed => Error::LinkAlreadyUsed,
        LinkState::Expired => Error::LinkExpired,
        LinkState::Active | LinkState::Paused => Error::LinkInactive,
    }
}

#[cfg(test)]
mod tests {
    use LinkState as S;
    use LinkTrigger as T;

    use super::*;

    #[test]
    fn table() {
        let allowed = [
            (S::Active, T::Pause, S::Paused),
            (S::Paused, T::Resume, S::Active),
            (S::Active, T::Archive, S::Archived),
            (S::Paused, T::Archive, S::Archived),
            (S::Completed, T::Archive, S::Archived),
            (S::Expired, T::Archive, S::Archived),
            (S::Active, T::Complete, S::Completed),
            (S::Active, T::Expire, S::Expired),
            (S::Paused, T::Expire, S::Expired),
        ];
        for (from, trigger, to) in allowed {
            assert_eq!(transition(from, trigger).map(|t| t.0), Ok(to), "{from:?} {trigger:?}");
        }
        let refused = [
            (S::Paused, T::Pause),
            (S::Active, T::Resume),
            (S::Archived, T::Resume),
            (S::Archived, T::Archive),
            (S::Completed, T::Complete),
            (S::Expired, T::Expire),
            (S::Completed, T::Resume),
            (S::Archived, T::Pause),
        ];
        for (from, trigger) in refused {
            assert!(transition(from, trigger).is_err(), "{from:?} {trigger:?}");
        }
        assert_eq!(transition(S::Active, T::Complete).unwrap().1, vec![EventType::PaymentLinkCompleted]);
    }
}
