//! Checkout sessions and payments.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::api_key::KeyType;
use stablepay_domain::billing::InvoiceKey;
use stablepay_domain::ids::{CheckoutSessionId, PaymentId};
use stablepay_domain::{Error, Resource};

use crate::auth::{AnyKey, SecretKey};
use crate::envelope::{ok, to_data};
use crate::error::{ApiError, ErrorCode};
use crate::idempotency;
use crate::json::ApiJson;
use crate::state::AppState;
use crate::wire_in::CheckoutCreate;
use crate::wire_out::{Links, SessionView, checkout_session, payment};

/// Create a hosted checkout and its linked invoice. A publishable key may send only amount and
/// externalReference.
#[utoipa::path(
    tag = "checkout",
    request_body = CheckoutCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer for the same request within 24 hours")),
    responses((status = 201, description = "The checkout session", body = crate::wire_out::CheckoutSessionEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/checkout-sessions")]
pub async fn create_checkout_session(
    req: HttpRequest,
    key: AnyKey,
    state: web::Data<AppState>,
    body: ApiJson<CheckoutCreate>,
) -> HttpResponse {
    let principal = key.0;
    let ApiJson(input, raw) = body;
    if principal.key_type == KeyType::Publishable
        && let Some(field) = input.secret_only_field()
    {
        return actix_web::ResponseError::error_response(&ApiError::field(
            ErrorCode::PUBLIC_KEY_FIELD_NOT_ALLOWED,
            field,
            format!("A publishable key may send only amount and externalReference; {field} needs a secret key."),
        ));
    }
    let scope = principal.scope.clone();
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let input = input.into_domain()?;
        let clock = state.clock_for(&principal);
        let agg = state.billing_with(&clock).create_checkout(&principal.merchant, &scope, input).await?;
        let session = agg.sessions.first().ok_or_else(ApiError::internal)?;
        let view = SessionView { retrieval: false, secret: principal.key_type == KeyType::Secret };
        let out = checkout_session(&agg, session, view, &Links { base: &state.public_base_url });
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
    .await
}

/// Retrieve a checkout session with its latest payment facts.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Checkout session id")),
    responses((status = 200, description = "The checkout session", body = crate::wire_out::CheckoutSessionEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/checkout-sessions/{id}")]
pub async fn get_checkout_session(
    key: AnyKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let principal = key.0;
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let agg = state.invoices.load_invoice(&principal.scope, &InvoiceKey::Session(id.clone())).await?;
    let session = agg.session(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let view = SessionView { retrieval: true, secret: principal.key_type == KeyType::Secret };
    let out = checkout_session(&agg, session, view, &Links { base: &state.public_base_url });
    ok(StatusCode::OK, &out)
}

/// Retrieve a payment record.
#[utoipa::path(
    tag = "checkout",
    params(("id" = String, Path, description = "Payment id")),
    responses((status = 200, description = "The payment", body = crate::wire_out::PaymentEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payments/{id}")]
pub async fn get_payment(
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let id = PaymentId::parse(&id).ok_or(Error::NotFound(Resource::Payment))?;
    let p = state.invoices.get_payment(&key.0.scope, &id).await?;
    ok(StatusCode::OK, &payment(&p))
}
