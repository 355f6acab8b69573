//! Budgets in this process: the GCRA step of `stablepay_domain::ratelimit::gcra` (the same rule
//! the Redis script runs), one arrival time per policy and key, on a monotonic clock.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use async_trait::async_trait;
use stablepay_domain::Error;
use stablepay_domain::ports::RateLimiter;
use stablepay_domain::ratelimit::{Policy, Verdict, gcra, gcra_refund};

/// Checks between two clean-ups of keys whose budgets are full again.
const CLEAN_EVERY: u64 = 4096;

pub struct LocalLimiter {
    /// The theoretical arrival time (milliseconds since `start`) per policy and key.
    tats: Mutex<HashMap<(&'static str, String), i64>>,
    start: Instant,
    checks: AtomicU64,
}

impl Default for LocalLimiter {
    fn default() -> Self {
        Self { tats: Mutex::new(HashMap::new()), start: Instant::now(), checks: AtomicU64::new(0) }
    }
}

impl LocalLimiter {
    pub fn new() -> Self {
        Self::default()
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.start.elapsed().as_millis()).unwrap_or(i64::MAX)
    }
}

fn locked() -> Error {
    Error::Internal("rate limiter lock".into())
}

#[async_trait]
impl RateLimiter for LocalLimiter {
    async fn check(&self, policy: &Policy, key: &str) -> Result<Verdict, Error> {
        let now = self.now_ms();
        let mut tats = self.tats.lock().map_err(|_| locked())?;
        if self.checks.fetch_add(1, Ordering::Relaxed) % CLEAN_EVERY == CLEAN_EVERY - 1 {
            tats.retain(|_, tat| *tat > now);
        }
        let slot = (policy.name, key.to_owned());
        let (verdict, tat) = gcra(policy, now, tats.get(&slot).copied());
        tats.insert(slot, tat);
        Ok(verdict)
    }

    async fn refund(&self, policy: &Policy, key: &str) -> Result<(), Error> {
        let now = self.now_ms();
        let mut tats = self.tats.lock().map_err(|_| locked())?;
        let slot = (policy.name, key.to_owned());
        match gcra_refund(policy, now, tats.get(&slot).copied()) {
            Some(tat) => tats.insert(slot, tat),
            None => tats.remove(&slot),
        };
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_quota_refills_per_period_and_a_refund_gives_one_back() {
        let l = LocalLimiter::new();
        let p = Policy { name: "p", quota: 3, window_seconds: 3600 };
        for remaining in [2, 1, 0] {
            let v = l.check(&p, "k").await.unwrap();
            assert_eq!((v.allowed, v.remaining), (true, remaining));
        }
        let refused = l.check(&p, "k").await.unwrap();
        assert!(!refused.allowed && refused.retry_after_seconds >= 1199, "{refused:?}");
        assert!(l.check(&p, "other").await.unwrap().allowed, "keys are apart");
        l.refund(&p, "k").await.unwrap();
        assert!(l.check(&p, "k").await.unwrap().allowed);
        assert!(!l.check(&p, "k").await.unwrap().allowed);
    }
}
