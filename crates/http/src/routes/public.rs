//! Public routes (no merchant key): what a customer's browser or wallet may call. The
//! unguessable checkout session id is the capability, as for the hosted page.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, post, web};
use serde::Deserialize;
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::payment::TxHash;
use stablepay_domain::{Error, Resource};
use utoipa::ToSchema;

use crate::envelope::ok;
use crate::error::{ApiError, ErrorCode};
use crate::json::ApiJson;
use crate::state::AppState;
use crate::wire_out::SubmittedPaymentOut;

/// `POST /v1/public/checkout-sessions/{id}/payments` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SubmitPaymentIn {
    /// The hash of the customer's transfer: 0x followed by 64 hexadecimal digits.
    #[schema(pattern = r"^0x[0-9a-fA-F]{64}$")]
    pub transaction_hash: String,
}

/// Report the transaction that pays a live checkout. The service verifies it onchain itself
/// (nothing the browser says is trusted): the answer is the payment as recorded, `detected`
/// until the transfer is seen, then `validating` until its block is final. The same hash for
/// the same checkout answers the same payment.
#[utoipa::path(
    tag = "public",
    request_body = SubmitPaymentIn,
    params(("id" = String, Path, description = "Checkout session id")),
    responses(
        (status = 202, description = "The payment, accepted for verification", body = crate::wire_out::SubmittedPaymentEnvelope),
        (status = 400, description = "VALIDATION_ERROR, INVALID_TX_HASH", body = crate::wire::ErrorEnvelope),
        (status = 404, description = "NOT_FOUND: no such checkout session", body = crate::wire::ErrorEnvelope),
        (status = 409, description = "CHECKOUT_SESSION_NOT_PAYABLE (expired or completed), CHECKOUT_SESSION_NOT_PAYABLE with details.reason limit_reached", body = crate::wire::ErrorEnvelope),
        (status = 422, description = "FEATURE_UNAVAILABLE: a test-mode checkout (simulate transfers with the test helpers)", body = crate::wire::ErrorEnvelope),
        (status = 503, description = "SERVICE_UNAVAILABLE", body = crate::wire::ErrorEnvelope),
    )
)]
#[post("/public/checkout-sessions/{id}/payments")]
pub async fn submit_payment(
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<SubmitPaymentIn>,
) -> Result<HttpResponse, ApiError> {
    let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let ApiJson(input, _) = body;
    let tx = TxHash::parse(&input.transaction_hash).ok_or_else(|| {
        ApiError::field(ErrorCode::INVALID_TX_HASH, "transactionHash", "Must be 0x followed by 64 hexadecimal digits.")
    })?;
    let payment = state.billing().submit_payment(&id, &tx).await?;
    ok(StatusCode::ACCEPTED, &SubmittedPaymentOut::from(&payment))
}
