//! Checkout sessions and payments.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, post, web};
use stablepay_domain::ids::{CheckoutSessionId, PaymentId};
use stablepay_domain::invoice::InvoiceKey;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::respond::{ok, to_data};

use crate::auth::{AnyKey, SecretKey};
use crate::json::OptionalJson;
use crate::wire::checkout::{CheckoutCreate, SessionView, checkout_session, payment};
use crate::{idempotency, rebuild};

/// Create a hosted checkout and its linked invoice. A publishable key may send only amount and
/// externalReference.
#[utoipa::path(
    tag = "checkout",
    request_body = CheckoutCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for the same request within 24 hours")),
    responses((status = 201, description = "The checkout session", body = crate::wire::checkout::CheckoutSessionEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/checkout-sessions")]
pub async fn create_checkout_session(
    req: HttpRequest,
    AnyKey(caller): AnyKey,
    body: OptionalJson<serde_json::Value>,
) -> HttpResponse {
    // Read as a JSON value first: the key's check names any member it may not send, known or
    // not. (An empty body reads as null and is refused below, naming `amount`.)
    let OptionalJson(value, raw) = body;
    let key_type = caller.principal.key_type;
    let members = value.as_object().into_iter().flat_map(|body| body.keys());
    if let Err(e) = key_type.check_checkout_members(members.map(|k| (k.as_str(), CheckoutCreate::member(k)))) {
        return ApiError::from(e).error_response();
    }
    let value = if value.is_null() { serde_json::Value::Object(Default::default()) } else { value };
    let input: CheckoutCreate = match crate::json::from_value(value) {
        Ok(input) => input,
        Err(e) => return e.error_response(),
    };
    if let Some(policy) = key_type.checkout_quota() {
        let key_id = caller.principal.key_id.to_string();
        if let Err(e) =
            stablepay_http::ratelimit::enforce(&req, &caller.state, policy, &[&key_id], ErrorCode::RATE_LIMIT_EXCEEDED)
                .await
        {
            return e.error_response();
        }
    }
    idempotency::execute(caller, &req, &raw, rebuild::checkout_created, move |c| async move {
        let agg = c.cases().invoices().create_checkout(&c.principal.merchant, c.scope(), input.into_domain()?).await?;
        let session = agg.sessions.first().ok_or_else(ApiError::internal)?;
        let view = SessionView { retrieval: false, secret: c.principal.key_type.sees_settlement() };
        let out = checkout_session(&agg, session, view, &c.links());
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
    .await
}

/// Retrieve a checkout session with its latest payment facts.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Checkout session id")),
    responses((status = 200, description = "The checkout session", body = crate::wire::checkout::CheckoutSessionEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/checkout-sessions/{id}")]
pub async fn get_checkout_session(AnyKey(c): AnyKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let agg = c.cases().invoices().get(c.scope(), &InvoiceKey::Session(id.clone())).await?;
    let session = agg.session(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let view = SessionView { retrieval: true, secret: c.principal.key_type.sees_settlement() };
    ok(StatusCode::OK, &checkout_session(&agg, session, view, &c.links()))
}

/// Retrieve a payment record.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Payment id")),
    responses((status = 200, description = "The payment", body = crate::wire::checkout::PaymentEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payments/{id}")]
pub async fn get_payment(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = PaymentId::parse(&id).ok_or(Error::NotFound(Resource::Payment))?;
    let p = c.cases().invoices().payment(c.scope(), &id).await?;
    ok(StatusCode::OK, &payment(&p))
}

/// Why a checkout is or is not paid: every transfer reported or detected for it with each
/// verification check (expected vs found), the chain's state and the next step in words.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Checkout session id")),
    responses((status = 200, description = "The checkout's diagnosis", body = crate::wire::diagnostics::DiagnosisEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/checkout-sessions/{id}/diagnostics")]
pub async fn checkout_diagnostics(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let d = c.cases().diagnostics().checkout(c.scope(), &id).await?;
    ok(StatusCode::OK, &crate::wire::diagnostics::DiagnosisOut::from(&d))
}

/// A payment's diagnosis: its checkout's, with this transfer alone.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Payment id")),
    responses((status = 200, description = "The payment's diagnosis", body = crate::wire::diagnostics::DiagnosisEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payments/{id}/diagnostics")]
pub async fn payment_diagnostics(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = PaymentId::parse(&id).ok_or(Error::NotFound(Resource::Payment))?;
    let d = c.cases().diagnostics().payment(c.scope(), &id).await?;
    ok(StatusCode::OK, &crate::wire::diagnostics::DiagnosisOut::from(&d))
}

/// The merchant's readiness in one place: live activation and wallet, the chain for the mode,
/// webhook endpoints and open incidents, emails, keys never used or idle, the worker. Each entry
/// has a stable `code` and a `status` of ok, warning or error.
#[utoipa::path(
    tag = "checkout",
    responses((status = 200, description = "The merchant's readiness", body = crate::wire::readiness::ReadinessEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/diagnostics")]
pub async fn merchant_diagnostics(SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let facts = stablepay_http::status::worker_facts(&c.state.worker.snapshot(chrono::Utc::now()));
    let r = c.cases().merchant_checks().readiness(&c.principal.merchant, c.scope(), facts).await?;
    ok(StatusCode::OK, &crate::wire::readiness::ReadinessOut::new(&r, c.scope().mode.as_str()))
}
