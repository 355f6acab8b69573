//! Rate-limit adapters of stablepay, behind the domain's `RateLimiter` port:
//!
//! - [`LocalLimiter`]: budgets in this process (the domain's GCRA, one arrival time per policy and key);
//! - [`RedisLimiter`]: budgets shared by every replica through Redis (the domain's GCRA rule,
//!   run atomically by a Lua script, keys expiring with their window);
//! - [`FailOpen`]: wraps a limiter so that when it cannot answer the request goes through (with a
//!   warning, at most once a minute), never a 5xx; except the policies it is told to keep
//!   ([`FailOpen::keeping`]: the quotas of secret checks), which fall back to budgets in this
//!   process, so a Redis outage never lets every password guess through.

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

/// A limiter whose failures let requests through, but for the policies it keeps.
pub struct FailOpen<L> {
    inner: L,
    last_warning: Mutex<Option<Instant>>,
    /// The policies that fall back to this process's budgets.
    kept: Vec<&'static str>,
    fallback: LocalLimiter,
}

impl<L> FailOpen<L> {
    pub fn new(inner: L) -> Self {
        Self { inner, last_warning: Mutex::new(None), kept: Vec::new(), fallback: LocalLimiter::new() }
    }

    /// The same, keeping `policies` when the inner limiter cannot answer: their checks fall
    /// back to budgets in this process instead of letting everything through.
    pub fn keeping(mut self, policies: &[&Policy]) -> Self {
        self.kept = policies.iter().map(|p| p.name).collect();
        self
    }

    fn keeps(&self, policy: &Policy) -> bool {
        self.kept.contains(&policy.name)
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
                    tracing::warn!(error = %e, "rate limiter unavailable: requests go through unlimited, secret checks limited in this process");
                }
                if self.keeps(policy) {
                    return self.fallback.check(policy, key).await;
                }
                Err(Error::Unavailable)
            }
        }
    }

    /// Errors: `Unavailable` when the inner limiter failed (the budget stays as it was; a kept
    /// policy's fallback budget gets the refund).
    async fn refund(&self, policy: &Policy, key: &str) -> Result<(), Error> {
        match self.inner.refund(policy, key).await {
            Ok(()) => Ok(()),
            Err(_) if self.keeps(policy) => self.fallback.refund(policy, key).await,
            Err(_) => Err(Error::Unavailable),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Down;

    #[async_trait]
    impl RateLimiter for Down {
        async fn check(&self, _: &Policy, _: &str) -> Result<Verdict, Error> {
            Err(Error::Unavailable)
        }
        async fn refund(&self, _: &Policy, _: &str) -> Result<(), Error> {
            Err(Error::Unavailable)
        }
    }

    #[tokio::test]
    async fn an_outage_lets_requests_through_but_keeps_secret_checks_limited_here() {
        use stablepay_domain::ratelimit::{DASHBOARD_LOGIN_ACCOUNT, PUBLIC_READ};
        let l = FailOpen::new(Down).keeping(&[&DASHBOARD_LOGIN_ACCOUNT]);
        assert!(l.check(&PUBLIC_READ, "k").await.is_err(), "an ordinary quota goes through unlimited");
        for _ in 0..5 {
            assert!(l.check(&DASHBOARD_LOGIN_ACCOUNT, "ada").await.unwrap().allowed);
        }
        assert!(!l.check(&DASHBOARD_LOGIN_ACCOUNT, "ada").await.unwrap().allowed, "the sixth is refused");
        l.refund(&DASHBOARD_LOGIN_ACCOUNT, "ada").await.unwrap();
        assert!(l.check(&DASHBOARD_LOGIN_ACCOUNT, "ada").await.unwrap().allowed, "a refund gives one back");
    }
}
