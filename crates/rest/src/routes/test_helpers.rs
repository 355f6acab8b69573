//! Test helpers (secret test-mode keys only): simulated payments and the test clock.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::invoice::input::TestPaymentInput;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::respond::to_data;
use stablepay_http::timestamp::timestamp;

use crate::auth::SecretTestKey;
use crate::json::{ApiJson, OptionalJson};
use crate::wire::checkout::payment;
use crate::wire::fields::amount;
use crate::wire::test_helpers::{ClockAdvanceIn, ClockOut, TestPaymentIn};
use crate::{idempotency, rebuild};

/// Simulate a transfer to a checkout: it goes through the same verification and crediting as a
/// live payment, and the answer is the payment record once verification has finished.
#[utoipa::path(
    tag = "test-helpers",
    params(
        ("id" = String, Path, description = "Checkout session id"),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer"),
    ),
    request_body(content = TestPaymentIn, description = "All fields optional; an empty body pays amountDue"),
    responses((status = 201, description = "The payment record", body = crate::wire::checkout::PaymentEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/checkout-sessions/{id}/payments")]
pub async fn simulate_payment(
    req: HttpRequest,
    SecretTestKey(caller): SecretTestKey,
    id: web::Path<String>,
    body: OptionalJson<TestPaymentIn>,
) -> HttpResponse {
    let OptionalJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::test_payment, move |c| async move {
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
        let (p, _) = c.cases().invoices().pay_test(c.scope(), &id, parsed).await?;
        Ok((StatusCode::CREATED, to_data(&payment(&p))?))
    })
    .await
}

/// This merchant's test clock: its offset from the real time and the time it tells.
#[utoipa::path(
    tag = "test-helpers",
    responses((status = 200, description = "The test clock (transitionsRun is 0)", body = crate::wire::test_helpers::ClockEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/test-helpers/clock")]
pub async fn get_clock(SecretTestKey(c): SecretTestKey) -> Result<HttpResponse, ApiError> {
    clock_out(&c, 0).await
}

/// Set this merchant's test clock back to the real time (offset 0). Nothing is undone:
/// transitions that ran stay, and objects created while the clock was ahead keep their later
/// timestamps and deadlines. Idempotent.
#[utoipa::path(
    tag = "test-helpers",
    responses((status = 200, description = "The test clock, at the real time", body = crate::wire::test_helpers::ClockEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/clock/reset")]
pub async fn reset_clock(SecretTestKey(c): SecretTestKey) -> Result<HttpResponse, ApiError> {
    c.state.use_cases.invoices().reset_test_clock(c.scope()).await?;
    clock_out(&c, 0).await
}

/// The clock as the store tells it now (not the request's clock, read before a change).
async fn clock_out(c: &crate::auth::Caller, transitions_run: u64) -> Result<HttpResponse, ApiError> {
    let (now, offset_seconds) = c.state.use_cases.test_clock(c.scope()).await?;
    let out = ClockOut { offset_seconds, now: timestamp(now), transitions_run };
    stablepay_http::respond::ok(StatusCode::OK, &out)
}

/// Move this merchant's test clock forward and run every time-based transition that became
/// due (checkout and invoice expiry, past due).
#[utoipa::path(
    tag = "test-helpers",
    request_body = ClockAdvanceIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The test clock", body = crate::wire::test_helpers::ClockEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/clock/advance")]
pub async fn advance_clock(
    req: HttpRequest,
    SecretTestKey(caller): SecretTestKey,
    body: ApiJson<ClockAdvanceIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::none, move |c| async move {
        // The request's own clock holds the offset from before the advance: the use case reads
        // the store's.
        let moved = c.state.use_cases.advance_test_clock(c.scope(), input.seconds).await?;
        for f in &moved.due.failed {
            tracing::error!(invoice = %f.invoice, failures = f.failures, error = %f.error, "due work failed; backed off");
        }
        let out = ClockOut {
            offset_seconds: moved.offset_seconds,
            now: timestamp(moved.now),
            transitions_run: moved.transitions_run,
        };
        Ok((StatusCode::OK, to_data(&out)?))
    })
    .await
}
