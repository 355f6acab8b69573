//! The `RateLimit` and `RateLimit-Policy` headers (IETF RateLimit header fields draft) of a
//! policy's verdict: set on every limited response, and on a 429.

use stablepay_domain::ratelimit::model::{Policy, Verdict};

/// The headers of a limited response, kept in the request's extensions for the middleware.
#[derive(Clone, Debug)]
pub struct RateLimitHeaders {
    pub ratelimit: String,
    pub policy: String,
}

impl RateLimitHeaders {
    /// The headers of `policy`'s verdict `v`.
    pub fn of(policy: &Policy, v: &Verdict) -> Self {
        Self {
            ratelimit: format!("\"{}\";r={};t={}", policy.name, v.remaining, v.reset_seconds),
            policy: format!("\"{}\";q={};w={}", policy.name, policy.quota, policy.window_seconds),
        }
    }
}
