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
        let key = std::iter::once(client).chain(parts.iter().copied()).collect::<Vec<_>>().join("|");
        self.limiter.check(policy, &key).await.ok()
    }
}
