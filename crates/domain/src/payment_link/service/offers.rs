//! What a member may do with one payment link: one answer, from their role (the capability
//! table) and the link's state (its machine), that the dashboard uses both for the buttons it
//! shows and for the form it accepts.

use chrono::{DateTime, Utc};

use crate::account::capability::Action;
use crate::account::service::accounts::Current;
use crate::error::Error;
use crate::mode::Scope;
use crate::payment_link::machine::{LinkState, LinkTrigger, transition};
use crate::payment_link::model::{Lifecycle, PaymentLink};

/// Something a member can do with a payment link from its page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum LinkAction {
    /// Replace its configuration (at its version).
    Edit,
    /// Stop it taking submissions until resumed.
    Pause,
    /// Let a paused link take submissions again.
    Resume,
    /// Archive it (final).
    Archive,
    /// Copy its configuration into a new active link.
    Duplicate,
}

impl LinkAction {
    /// Every action, in the order a page offers them.
    pub const ALL: [Self; 5] = [Self::Edit, Self::Pause, Self::Resume, Self::Archive, Self::Duplicate];

    /// The action's name in the dashboard's addresses.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Edit => "edit",
            Self::Pause => "pause",
            Self::Resume => "resume",
            Self::Archive => "archive",
            Self::Duplicate => "duplicate",
        }
    }

    /// Reads an action's name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == name)
    }

    /// The capability the action needs.
    pub fn needs(self) -> Action {
        Action::ManagePaymentLinks
    }

    /// Whether the link's state at `now` allows the action and it would change something (a
    /// paused link is not offered a pause: the use case would answer it unchanged).
    pub fn allowed(self, link: &PaymentLink, now: DateTime<Utc>) -> bool {
        let state = link.state_at(now);
        let moves = |trigger: LinkTrigger, to: LinkState| state != to && transition(state, trigger).is_ok();
        match self {
            Self::Edit => link.lifecycle != Lifecycle::Archived,
            Self::Pause => moves(LinkTrigger::Pause, LinkState::Paused),
            Self::Resume => moves(LinkTrigger::Resume, LinkState::Active),
            Self::Archive => moves(LinkTrigger::Archive, LinkState::Archived),
            Self::Duplicate => true,
        }
    }

    /// Whether `current` may take the action in `scope` by their role. Errors:
    /// `NotFound(Merchant)`, `AuthForbidden`.
    pub fn permitted(self, current: &Current, scope: &Scope) -> Result<(), Error> {
        current.require(&scope.merchant_id, scope.mode, self.needs()).map(|_| ())
    }
}

/// What `current` may do with `link` in `scope` at `now`, in the order a page offers them.
pub fn offers(current: &Current, scope: &Scope, link: &PaymentLink, now: DateTime<Utc>) -> Vec<LinkAction> {
    LinkAction::ALL.into_iter().filter(|a| a.allowed(link, now) && a.permitted(current, scope).is_ok()).collect()
}
