//! What the schedule reads.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::schedule::model::WorkKind;

/// When work comes due, across every merchant and mode (the worker's loops serve them all).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait DueTimes: Send + Sync {
    /// The earliest real time at which work of `kind` comes due: a test-mode scope's times are
    /// brought back by how far its test clock runs ahead; a time in the past is work due now
    /// but held (leased or backed off); `None` when no such work is known. Errors:
    /// `Unavailable`.
    async fn next_due(&self, kind: WorkKind) -> Result<Option<DateTime<Utc>>, Error>;

    /// Tells the idle worker loops of every process that work may be due now (a test clock
    /// moved). Errors: `Unavailable`.
    async fn announce(&self) -> Result<(), Error>;
}
