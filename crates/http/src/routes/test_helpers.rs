//! Test helpers (secret test-mode keys only): simulated payments and the test clock.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use serde_json::json;
use stablepay_domain::billing::TestPaymentInput;
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::payment::TxHash;
use stablepay_domain::{Error, Resource};

use crate::auth::SecretTestKey;
use crate::error::{ApiError, ErrorCode};
use crate::idempotency;
use crate::json::{ApiJson, OptionalJson};
use crate::state::AppState;
use crate::wire::timestamp;
use crate::wire_in::{ClockAdvanceIn, TestPaymentIn, amount};
use crate::wire_out::payment;

/// Simulate a transfer to a checkout: it goes through the same verification and crediting as a
/// live payment, and the answer is the payment record once verification has finished.
#[utoipa::path(
    tag = "test-helpers",
    params(
        ("id" = String, Path, description = "Checkout session id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer"),
    ),
    request_body(content = TestPaymentIn, description = "All fields optional; an empty body pays amountDue"),
    responses((status = 201, description = "The payment record", body = crate::wire_out::PaymentEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/checkout-sessions/{id}/payments")]
pub async fn simulate_payment(
    req: HttpRequest,
    key: SecretTestKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: OptionalJson<TestPaymentIn>,
) -> HttpResponse {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    let OptionalJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let id = CheckoutSessionId::parse(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
        let succeed = match input.outcome.as_deref() {
            None | Some("confirmed") => true,
            Some("failed") => false,
            Some(_) => return Err(ApiError::validation("outcome", "outcome must be confirmed or failed.")),
        };
        let parsed = TestPaymentInput {
            amount: input.amount.as_deref().map(|a| amount("amount", a, true)).transpose()?,
            transaction_hash: input
                .transaction_hash
                .as_deref()
                .map(|t| {
                    TxHash::parse(t).ok_or_else(|| {
                        ApiError::field(
                            ErrorCode::INVALID_TX_HASH,
                            "transactionHash",
                            "Must be 0x followed by 64 hexadecimal digits.",
                        )
                    })
                })
                .transpose()?,
            succeed,
        };
        let (p, _) = state.billing_with(&clock).pay_test(&scope, &id, parsed).await?;
        Ok((StatusCode::CREATED, crate::envelope::to_data(&payment(&p))?))
    })
    .await
}

/// Move this merchant's test clock forward and run every time-based transition that became
/// due (checkout and invoice expiry, past due).
#[utoipa::path(
    tag = "test-helpers",
    request_body = ClockAdvanceIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The test clock", body = crate::wire_out::ClockEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/clock/advance")]
pub async fn advance_clock(
    req: HttpRequest,
    key: SecretTestKey,
    state: web::Data<AppState>,
    body: ApiJson<ClockAdvanceIn>,
) -> HttpResponse {
    let scope = key.0.scope;
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let (offset, done) = state.billing().advance_test_clock(&scope, input.seconds).await?;
        let now = state.clock.now(&scope).await?;
        let out = json!({ "offsetSeconds": offset, "now": timestamp(now), "transitionsRun": u64::try_from(done).unwrap_or(0) });
        Ok((StatusCode::OK, crate::envelope::to_data(&out)?))
    })
    .await
}
