//! The port that keeps rate-limit budgets.

use async_trait::async_trait;

use crate::error::Error;
use crate::ratelimit::model::{Policy, Verdict};

/// Keeps the budgets.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait RateLimiter: Send + Sync {
    /// Counts one request of `key` against `policy`. Errors: `Unavailable` when the budgets
    /// cannot be reached (callers let the request through).
    async fn check(&self, policy: &Policy, key: &str) -> Result<Verdict, Error>;
    /// Gives back one request a [`RateLimiter::check`] of `key` counted (a failure-only quota
    /// refunds the attempts that succeeded). Errors: `Unavailable`, as for a check.
    async fn refund(&self, policy: &Policy, key: &str) -> Result<(), Error>;
}
