//! Counting requests against the policies.

use crate::ratelimit::model::{Policy, Verdict};
use crate::ratelimit::ports::RateLimiter;

/// The rate-limit use case over the budgets.
pub struct RateLimits<'a> {
    /// The budgets.
    pub limiter: &'a dyn RateLimiter,
}

impl RateLimits<'_> {
    /// Counts one request of `client` about `parts` (the resource it concerns) against
    /// `policy`. `None` when the budgets cannot be reached: a rate limit never fails a request,
    /// it goes through unlimited.
    pub async fn check(&self, policy: &Policy, client: &str, parts: &[&str]) -> Option<Verdict> {
        self.limiter.check(policy, &key(client, parts)).await.ok()
    }

    /// Gives back the request [`RateLimits::check`] counted for `client` and `parts` (a
    /// failure-only quota, for an attempt that succeeded). A limiter that cannot be reached
    /// is left as it is.
    pub async fn refund(&self, policy: &Policy, client: &str, parts: &[&str]) {
        let _ = self.limiter.refund(policy, &key(client, parts)).await;
    }
}

/// The budget's key of `client` about `parts`.
fn key(client: &str, parts: &[&str]) -> String {
    std::iter::once(client).chain(parts.iter().copied()).collect::<Vec<_>>().join("|")
}
