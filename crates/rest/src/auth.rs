//! API-key authentication extractors.
//!
//! The key is read from `Authorization: Bearer <key>` or `X-API-Key: <key>`. It alone selects
//! the merchant and mode. The plaintext never leaves this module except as a digest.

use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::http::header::AUTHORIZATION;
use actix_web::{FromRequest, HttpRequest, web};
use chrono::{DateTime, Utc};
use futures_util::future::LocalBoxFuture;
use stablepay_domain::Scope;
use stablepay_domain::api_key::model::KeyNeed;
use stablepay_domain::api_key::permission::{Access, ResourceFamily};
use stablepay_domain::api_key::{ApiKeySecret, Principal};
use stablepay_domain::clock::Clock;
use stablepay_domain::idempotency::IdempotencyClaim;
use stablepay_domain::use_cases::{Context, InContext};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::state::{AppState, RequestClock};

use crate::wire::common::Links;

/// An authenticated request's context: the application state, who is calling (merchant, mode,
/// key type) and the caller's clock. Cheap to clone; a handler moves it into its work.
#[derive(Clone)]
pub struct Caller {
    pub state: web::Data<AppState>,
    pub principal: Principal,
    pub clock: RequestClock,
    /// The request's idempotency claim, when it sent a key: every change its use cases save
    /// marks the key committed in the same transaction.
    pub claim: Option<IdempotencyClaim>,
}

impl Caller {
    fn new(state: web::Data<AppState>, principal: Principal) -> Self {
        let clock = state.clock_for(&principal);
        Self { state, principal, clock, claim: None }
    }

    /// The same caller, its work under `claim`.
    pub fn claimed(self, claim: Option<IdempotencyClaim>) -> Self {
        Self { claim, ..self }
    }

    pub fn scope(&self) -> &Scope {
        &self.principal.scope
    }

    /// The use cases in the caller's context: its clock (its key's test clock in test mode)
    /// and its idempotency claim, the API acting.
    pub fn cases(&self) -> InContext<'_> {
        self.state.use_cases.within(Context::new(&self.clock).claimed(self.claim.clone()))
    }

    /// The caller's time (its test clock in test mode).
    pub async fn now(&self) -> Result<DateTime<Utc>, ApiError> {
        Ok(self.clock.now(self.scope()).await?)
    }

    /// Where the hosted pages are, for the answers that link to them.
    pub fn links(&self) -> Links<'_> {
        Links { pages: self.state.use_cases.pages() }
    }
}

fn presented_key(req: &HttpRequest) -> Result<ApiKeySecret, ApiError> {
    let invalid = || ApiError::new(ErrorCode::INVALID_API_KEY, "The API key is invalid, revoked or expired.");
    if let Some(value) = req.headers().get(AUTHORIZATION) {
        let text = value.to_str().map_err(|_| invalid())?;
        let (scheme, key) = text.split_once(' ').ok_or_else(invalid)?;
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Err(invalid());
        }
        return Ok(ApiKeySecret::presented(key.trim()));
    }
    if let Some(value) = req.headers().get("x-api-key") {
        return Ok(ApiKeySecret::presented(value.to_str().map_err(|_| invalid())?.trim()));
    }
    Err(ApiError::new(
        ErrorCode::API_KEY_REQUIRED,
        "An API key is required: send Authorization: Bearer <key> or X-API-Key: <key>.",
    ))
}

async fn caller(req: HttpRequest, need: KeyNeed) -> Result<Caller, ApiError> {
    let presented = presented_key(&req)?;
    let state = req.app_data::<web::Data<AppState>>().ok_or_else(ApiError::internal)?.clone();
    let now = state.use_cases.clock().system_now();
    let principal = state.use_cases.authenticate(&presented, (need, needed(&req)), now).await?;
    let span = tracing::Span::current();
    span.record("merchant", principal.scope.merchant_id.as_str());
    span.record("mode", principal.scope.mode.as_str());
    if principal.record_use {
        // At most once a minute per key, and off the request's path: the answer never waits
        // for it, and a failure only leaves the last use older.
        let (state, id) = (state.clone(), principal.key_id.clone());
        actix_web::rt::spawn(async move {
            if let Err(e) = state.use_cases.record_key_use(&id, now).await {
                tracing::warn!(key = %id, error = %e, "could not record the key's use");
            }
        });
    }
    Ok(Caller::new(state, principal))
}

/// What a request needs of a restricted key, for the domain to decide: the resource family of
/// its path, and read (GET, HEAD) or write (anything else). `None` for the merchant's readiness (`/v1/diagnostics`),
/// which only an unrestricted key reads. docs/api.md, "Restricted keys", lists the families.
fn needed(req: &HttpRequest) -> Option<(ResourceFamily, Access)> {
    let access = if matches!(*req.method(), Method::GET | Method::HEAD) { Access::Read } else { Access::Write };
    let mut parts = req.path().trim_start_matches("/v1/").split('/');
    let family = match parts.next()? {
        "checkout-sessions" => ResourceFamily::CheckoutSessions,
        "invoices" => ResourceFamily::Invoices,
        "payments" | "unattributed-transfers" => ResourceFamily::Payments,
        "payment-links" => ResourceFamily::PaymentLinks,
        "webhook-endpoints" | "webhook-deliveries" | "webhook-incidents" | "webhooks" => ResourceFamily::Webhooks,
        "events" => ResourceFamily::Events,
        "exports" | "reconciliation" | "reconciliation-runs" => ResourceFamily::Exports,
        "test-helpers" => match parts.next()? {
            "checkout-sessions" => ResourceFamily::CheckoutSessions,
            "clock" => ResourceFamily::Invoices,
            _ => return None,
        },
        _ => return None,
    };
    Some((family, access))
}

/// Any valid key (publishable or secret).
pub struct AnyKey(pub Caller);

impl FromRequest for AnyKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { caller(req, KeyNeed::Any).await.map(AnyKey) })
    }
}

/// A secret key.
pub struct SecretKey(pub Caller);

impl FromRequest for SecretKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { caller(req, KeyNeed::Secret).await.map(SecretKey) })
    }
}

/// A secret test-mode key (test helpers).
pub struct SecretTestKey(pub Caller);

impl FromRequest for SecretTestKey {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { caller(req, KeyNeed::SecretTest).await.map(SecretTestKey) })
    }
}
