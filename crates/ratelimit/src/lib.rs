//! Rate-limit adapters of stablepay, behind the domain's `RateLimiter` port:
//!
//! - [`LocalLimiter`]: budgets in this process (the domain's GCRA, one arrival time per policy and key);
//! - [`RedisLimiter`]: budgets shared by every replica through Redis (the domain's GCRA rule,
//!   run atomically by a Lua script, keys expiring with their window);
//! - [`FailOpen`]: wraps a limiter so that when it cannot answer the request goes through (with a
//!   warning, at most once a minute), never a 5xx.

mod local;
mod redis;

pub use local::LocalLimiter;
pub use redis::RedisLimiter;

use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use stablepay_domain::Error;
use stablepay_domain::ports::RateLimiter;
use stablepay_domain::ratelimit::{Policy, Verdict};

/// A limiter whose failures let requests through.
pub struct FailOpen<L> {
    inner: L,
    last_warning: Mutex<Option<Instant>>,
}

impl<L> FailOpen<L> {
    pub fn new(inner: L) -> Self {
        Self { inner, last_warning: Mutex::new(None) }
    }
}

#[async_trait]
impl<L: RateLimiter> RateLimiter for FailOpen<L> {
    /// Errors: `Unavailable` when the inner limiter failed (the caller lets the request
    /// through, without rate-limit headers).
    async fn check(&self, policy: &Policy, key: &str) -> Result<Verdict, Error> {
        match self.inner.check(policy, key).await {
            Ok(v) => Ok(v),
            Err(e) => {
                if let Ok(mut last) = self.last_warning.lock()
                    && last.is_none_or(|t| t.elapsed() > Duration::from_secs(60))
                {
                    *last = Some(Instant::now());
                    tracing::warn!(error = %e, "rate limiter unavailable: requests go through unlimited");
                }
                Err(Error::Unavailable)
            }
        }
    }

    /// Errors: `Unavailable` when the inner limiter failed (the budget stays as it was).
    async fn refund(&self, policy: &Policy, key: &str) -> Result<(), Error> {
        self.inner.refund(policy, key).await.map_err(|_| Error::Unavailable)
    }
}
