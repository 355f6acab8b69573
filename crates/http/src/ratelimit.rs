//! Rate limits on the routes the spec limits: the check of the client (`client`) against the
//! domain's rate-limit use case, the 429 answer, and the
//! `RateLimit` / `RateLimit-Policy` headers (IETF RateLimit header fields draft) on every
//! limited response.
//!
//! A limiter that cannot answer lets the request through without the headers (their absence
//! means no advertised quota); it never turns a request into a 5xx.

use actix_web::{HttpMessage, HttpRequest};
use stablepay_domain::ratelimit::Policy;

use crate::client::client_address;
use crate::error::{ApiError, ErrorCode};
use crate::limit_headers::RateLimitHeaders;
use crate::state::AppState;

/// Counts this request against `policy` for the client and `parts` (the resource it is about).
/// Refused: the error `refusal` (429) with `Retry-After` and the headers.
pub async fn enforce(
    req: &HttpRequest,
    state: &AppState,
    policy: &Policy,
    parts: &[&str],
    refusal: ErrorCode,
) -> Result<(), ApiError> {
    enforce_as(req, state, policy, &client_of(req, state), parts, refusal).await
}

/// The client's address as budgets name it.
pub fn client_of(req: &HttpRequest, state: &AppState) -> String {
    client_address(req, &state.trusted_proxies).map_or_else(|| "unknown".to_owned(), |a| a.to_string())
}

/// Gives back the request [`enforce_as`] counted for `who` and `parts` (a failure-only quota:
/// the attempt succeeded).
pub async fn refund_as(state: &AppState, policy: &Policy, who: &str, parts: &[&str]) {
    state.use_cases.rate_limits().refund(policy, who, parts).await;
}

/// Like [`enforce`], for the budget of `who` (an account, say) rather than the client's.
pub async fn enforce_as(
    req: &HttpRequest,
    state: &AppState,
    policy: &Policy,
    who: &str,
    parts: &[&str],
    refusal: ErrorCode,
) -> Result<(), ApiError> {
    let Some(verdict) = state.use_cases.rate_limits().check(policy, who, parts).await else { return Ok(()) };
    let headers = RateLimitHeaders::of(policy, &verdict);
    if verdict.allowed {
        req.extensions_mut().insert(headers);
        return Ok(());
    }
    Err(ApiError::new(refusal, format!("Too many requests; retry after {} seconds.", verdict.retry_after_seconds))
        .with_header("Retry-After", verdict.retry_after_seconds.max(1).to_string())
        .with_header("RateLimit", headers.ratelimit)
        .with_header("RateLimit-Policy", headers.policy))
}
