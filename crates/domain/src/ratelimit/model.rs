//! Rate limits (the spec's "Limits" table) and the port that keeps their budgets.
//!
//! Each policy is a generic cell rate (GCRA): `quota` requests per `window_seconds`, at most
//! `quota` at once after a quiet window, refilled at one request per `window / quota`. The
//! `RateLimiter` port keeps one budget per policy and key (in this process, or shared through
//! Redis by several replicas); [`gcra`] is the rule both adapters follow.

/// A quota: `quota` requests per `window_seconds` for each key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    /// The name shown in `RateLimit` and `RateLimit-Policy`.
    pub name: &'static str,
    /// Requests allowed per window for each key.
    pub quota: u32,
    /// The window's length in seconds.
    pub window_seconds: u32,
}

/// Checkout creation with a publishable key: 20 per minute per key and client address.
pub const PUBLISHABLE_CHECKOUT: Policy = Policy { name: "publishable-checkout", quota: 20, window_seconds: 60 };
/// Public invoice and payment-link reads: 120 per minute per client address and resource
/// family.
pub const PUBLIC_READ: Policy = Policy { name: "public-read", quota: 120, window_seconds: 60 };
/// Public checkout submissions: 10 per minute per client address and invoice token, payment
/// link or checkout session.
pub const PUBLIC_CHECKOUT: Policy = Policy { name: "public-checkout", quota: 10, window_seconds: 60 };

/// Steps the hosted checkout page reports (telemetry): 60 per minute per client address and
/// checkout.
pub const CHECKOUT_TELEMETRY: Policy = Policy { name: "checkout-telemetry", quota: 60, window_seconds: 60 };

/// Failed dashboard logins per client address: 20 per 15 minutes (each attempt reserves one,
/// a successful login gives it back).
pub const DASHBOARD_LOGIN: Policy = Policy { name: "dashboard-login", quota: 20, window_seconds: 900 };
/// Failed dashboard logins per account (its normalized email): 5 per 15 minutes, the spec's
/// failure-only quota (each attempt reserves one, a successful login gives it back).
pub const DASHBOARD_LOGIN_ACCOUNT: Policy = Policy { name: "dashboard-login-account", quota: 5, window_seconds: 900 };
/// The quotas of secret checks (passwords, codes): kept in each process when the shared
/// budgets cannot be reached, never let through unlimited.
pub const SECRET_CHECKS: [&Policy; 2] = [&DASHBOARD_LOGIN, &DASHBOARD_LOGIN_ACCOUNT];
/// Account emails asked for (sign-up, password reset, a new verification link) per recipient:
/// 5 per hour, so nobody floods an inbox through the service.
pub const DASHBOARD_EMAIL: Policy = Policy { name: "dashboard-email", quota: 5, window_seconds: 3600 };
/// Account emails asked for per client address: 30 per hour.
pub const DASHBOARD_EMAIL_CLIENT: Policy = Policy { name: "dashboard-email-client", quota: 30, window_seconds: 3600 };

/// What a check answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Whether the request may go on.
    pub allowed: bool,
    /// Requests left now (after this one, when it was allowed).
    pub remaining: u32,
    /// Seconds until the whole quota is available again.
    pub reset_seconds: u32,
    /// Seconds to wait before a refused request can succeed (at least 1 when refused).
    pub retry_after_seconds: u32,
}

/// The GCRA step at `now_ms` for a key whose theoretical arrival time is `tat_ms` (`None`:
/// unseen). Answers the verdict and the new arrival time to store (unchanged when refused).
pub fn gcra(policy: &Policy, now_ms: i64, tat_ms: Option<i64>) -> (Verdict, i64) {
    let window = i64::from(policy.window_seconds) * 1000;
    let period = (window / i64::from(policy.quota.max(1))).max(1);
    let tat = tat_ms.unwrap_or(now_ms).max(now_ms);
    let new_tat = tat + period;
    let allow_at = new_tat - window;
    let seconds = |ms: i64| u32::try_from((ms.max(0) + 999) / 1000).unwrap_or(u32::MAX);
    if now_ms < allow_at {
        let verdict = Verdict {
            allowed: false,
            remaining: 0,
            reset_seconds: seconds(tat - now_ms),
            retry_after_seconds: seconds(allow_at - now_ms).max(1),
        };
        return (verdict, tat);
    }
    let remaining = u32::try_from((now_ms + window - new_tat) / period).unwrap_or(0);
    let verdict =
        Verdict { allowed: true, remaining, reset_seconds: seconds(new_tat - now_ms), retry_after_seconds: 0 };
    (verdict, new_tat)
}

/// Gives back one request a check counted, at `now_ms`, for a key whose arrival time is
/// `tat_ms`: the new arrival time to store, or `None` when the budget is then full (the key
/// can be forgotten).
pub fn gcra_refund(policy: &Policy, now_ms: i64, tat_ms: Option<i64>) -> Option<i64> {
    let window = i64::from(policy.window_seconds) * 1000;
    let period = (window / i64::from(policy.quota.max(1))).max(1);
    tat_ms.map(|tat| tat - period).filter(|tat| *tat > now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refund_gives_back_one_request() {
        let p = Policy { name: "p", quota: 5, window_seconds: 900 };
        let mut tat = None;
        for _ in 0..5 {
            let (v, t) = gcra(&p, 0, tat);
            assert!(v.allowed);
            tat = Some(t);
        }
        assert!(!gcra(&p, 0, tat).0.allowed, "five used");
        tat = gcra_refund(&p, 0, tat);
        let (v, t) = gcra(&p, 0, tat);
        assert!(v.allowed, "the refunded one is available again");
        assert!(!gcra(&p, 0, Some(t)).0.allowed);
        assert_eq!(gcra_refund(&p, 0, Some(180_000)), None, "one request's worth left: the budget is full");
        assert_eq!(gcra_refund(&p, 0, None), None);
    }

    const P: Policy = Policy { name: "p", quota: 10, window_seconds: 60 };

    #[test]
    fn a_full_quota_then_one_per_period() {
        let mut tat = None;
        let mut now = 1_000_000;
        for left in (0..10).rev() {
            let (v, t) = gcra(&P, now, tat);
            assert!(v.allowed);
            assert_eq!(v.remaining, left);
            tat = Some(t);
        }
        let (v, t) = gcra(&P, now, tat);
        assert_eq!((v.allowed, v.remaining, v.retry_after_seconds), (false, 0, 6));
        assert_eq!(v.reset_seconds, 60);
        assert_eq!(Some(t), tat, "a refusal uses nothing");
        // One period later, one more.
        now += 6_000;
        let (v, t) = gcra(&P, now, tat);
        assert_eq!((v.allowed, v.remaining), (true, 0));
        tat = Some(t);
        assert!(!gcra(&P, now + 10, tat).0.allowed);
        // After a quiet window, the whole quota again.
        let (v, _) = gcra(&P, now + 60_000, tat);
        assert_eq!((v.allowed, v.remaining), (true, 9));
    }
}
