//! The merchant's reads of its events.

use crate::error::Error;
use crate::event::model::{Event, EventType};
use crate::event::ports::EventStore;
use crate::ids::EventId;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};

/// The event use cases over their store.
pub struct Events<'a> {
    /// The outbox, read side.
    pub store: &'a dyn EventStore,
}

impl Events<'_> {
    /// A page of `scope`'s events, newest first, optionally of one type. Errors:
    /// `InvalidCursor` when `page.starting_after` is not an event of this scope.
    pub async fn list(
        &self,
        scope: &Scope,
        event_type: Option<EventType>,
        page: &PageRequest,
    ) -> Result<Page<Event>, Error> {
        self.store.list_events(scope, event_type, page).await
    }

    /// An event of `scope`. Errors: `NotFound(Event)`; `ModeMismatch` for one of the other mode.
    pub async fn get(&self, scope: &Scope, id: &EventId) -> Result<Event, Error> {
        self.store.get_event(scope, id).await
    }
}
