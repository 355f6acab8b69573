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
    /// Retention (the worker's) of what a month's drop does not reach: removes at most `limit`
    /// test-mode events of merchants whose test clock runs ahead, older than `days` by that
    /// clock, oldest first, each with its webhook deliveries and their attempts, in one
    /// transaction. An event with a delivery still pending or being delivered stays. Answers
    /// how many events were removed.
    async fn purge_events(&self, days: u32, limit: u32) -> Result<u64, Error>;
    /// Events are kept by the month they were recorded in (real time, UTC): makes the current
    /// month and the `ahead` months after it ready to hold events, each if not yet. Answers how
    /// many months were made.
    async fn prepare_months(&self, ahead: u32) -> Result<u32, Error>;
    /// Retention (the worker's) a month at a time: removes at once every month of events that
    /// ended more than `days` days ago, each with its events' webhook deliveries and their
    /// attempts, except a month with a delivery still pending or being delivered. Every event
    /// of such a month is past `days` in its scope's time too (a test clock only runs ahead).
    /// A month whose tables are busy is left for a later call. Answers how many months went.
    async fn drop_months(&self, days: u32) -> Result<u32, Error>;
}
