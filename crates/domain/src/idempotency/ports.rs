//! Saved responses of idempotent requests.

use async_trait::async_trait;

use crate::error::Error;
use crate::idempotency::model::{IdempotencyBegin, IdempotencyClaim, KeyedRequest};

/// Saved responses of idempotent requests, per namespace. The response is stored as opaque
/// status and body; only the HTTP adapter interprets them.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims the key of `request`. Keys older than 24 hours are forgotten; an in-progress
    /// claim older than `stale_after_seconds` whose work did not commit is taken over (a new
    /// claim); one whose work committed answers `Committed`.
    async fn begin(&self, request: &KeyedRequest, stale_after_seconds: i64) -> Result<IdempotencyBegin, Error>;
    /// Stores the response for replay, if `claim` is still the key's claim (a request taken
    /// over stores nothing).
    async fn complete(&self, claim: &IdempotencyClaim, status: u16, body: &str) -> Result<(), Error>;
    /// Stores the response rebuilt for `request`, whose work committed without an answer.
    async fn complete_committed(&self, request: &KeyedRequest, status: u16, body: &str) -> Result<(), Error>;
    /// Forgets the claim (the request failed in a way a retry may fix), if it is still this
    /// claim and its work did not commit.
    async fn abandon(&self, claim: &IdempotencyClaim) -> Result<(), Error>;
    /// Deletes at most `limit` keys older than 24 hours, oldest first; returns how many.
    async fn purge_expired(&self, limit: u32) -> Result<u64, Error>;
}
