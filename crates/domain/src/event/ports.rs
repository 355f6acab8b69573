//! The outbox, read side.

use async_trait::async_trait;

use crate::error::Error;
use crate::event::model::{Event, EventType};
use crate::ids::EventId;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};

/// The outbox, read side.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Events of `scope`, newest first. Errors: `InvalidCursor` when `starting_after` is not
    /// an event of this scope.
    async fn list_events(
        &self,
        scope: &Scope,
        event_type: Option<EventType>,
        page: &PageRequest,
    ) -> Result<Page<Event>, Error>;
    /// Errors: `NotFound(Event)`; `ModeMismatch` for an event of the other mode.
    async fn get_event(&self, scope: &Scope, id: &EventId) -> Result<Event, Error>;
}
