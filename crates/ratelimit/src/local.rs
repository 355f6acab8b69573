//! Budgets in this process: one governor keyed limiter (GCRA) per policy.

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter as Governor};
use stablepay_domain::Error;
use stablepay_domain::ports::RateLimiter;
use stablepay_domain::ratelimit::{Policy, Verdict};

type Keyed = Governor<String, DefaultKeyedStateStore<String>, DefaultClock, StateInformationMiddleware>;

/// Checks between two clean-ups of keys whose budgets are full again.
const CLEAN_EVERY: u64 = 4096;

#[derive(Default)]
pub struct LocalLimiter {
    limiters: Mutex<HashMap<&'static str, Arc<Keyed>>>,
    clock: DefaultClock,
    checks: AtomicU64,
}

impl LocalLimiter {
    pub fn new() -> Self {
        Self::default()
    }

    fn limiter(&self, policy: &Policy) -> Result<Arc<Keyed>, Error> {
        let mut map = self.limiters.lock().map_err(|_| Error::Internal("rate limiter lock".into()))?;
        if let Some(l) = map.get(policy.name) {
            return Ok(l.clone());
        }
        let quota = NonZeroU32::new(policy.quota).ok_or_else(|| Error::Internal("a quota of 0".into()))?;
        let period = Duration::from_secs(u64::from(policy.window_seconds)) / policy.quota;
        let quota =
            Quota::with_period(period).ok_or_else(|| Error::Internal("a zero period".into()))?.allow_burst(quota);
        let limiter = Arc::new(Governor::keyed(quota).with_middleware::<StateInformationMiddleware>());
        map.insert(policy.name, limiter.clone());
        Ok(limiter)
    }
}

fn ceil_seconds(d: Duration) -> u32 {
    u32::try_from(d.as_millis().div_ceil(1000)).unwrap_or(u32::MAX)
}

#[async_trait]
impl RateLimiter for LocalLimiter {
    async fn check(&self, policy: &Policy, key: &str) -> Result<Verdict, Error> {
        let limiter = self.limiter(policy)?;
        if self.checks.fetch_add(1, Ordering::Relaxed) % CLEAN_EVERY == CLEAN_EVERY - 1 {
            limiter.retain_recent();
        }
        let period = Duration::from_secs(u64::from(policy.window_seconds)) / policy.quota.max(1);
        let key = key.to_owned();
        Ok(match limiter.check_key(&key) {
            Ok(state) => {
                let remaining = state.remaining_burst_capacity();
                let used = policy.quota.saturating_sub(remaining);
                Verdict { allowed: true, remaining, reset_seconds: ceil_seconds(period * used), retry_after_seconds: 0 }
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(self.clock.now());
                Verdict {
                    allowed: false,
                    remaining: 0,
                    reset_seconds: ceil_seconds(period * policy.quota),
                    retry_after_seconds: ceil_seconds(wait).max(1),
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn each_key_has_its_own_budget() {
        let l = LocalLimiter::new();
        let p = Policy { name: "t", quota: 3, window_seconds: 60 };
        for left in [2, 1, 0] {
            let v = l.check(&p, "a").await.unwrap();
            assert_eq!((v.allowed, v.remaining), (true, left));
        }
        let refused = l.check(&p, "a").await.unwrap();
        assert!(!refused.allowed);
        assert!((19..=20).contains(&refused.retry_after_seconds), "{refused:?}");
        assert!(l.check(&p, "b").await.unwrap().allowed);
    }
}
