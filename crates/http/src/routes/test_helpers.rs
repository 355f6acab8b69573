//! Test helpers (secret test-mode keys only): simulated payments and the test clock.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::invoice::input::TestPaymentInput;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::{Error, Resource};

use crate::auth::SecretTestKey;
use crate::envelope::to_data;
use crate::error::{ApiError, ErrorCode};
use crate::idempotency;
use crate::json::{ApiJson, OptionalJson};
use crate::wire::timestamp;
use crate::wire_in::{ClockAdvanceIn, TestPaymentIn, amount};
use crate::wire_out::{ClockOut, payment};

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
    SecretTestKey(caller): SecretTestKey,
    id: web::Path<String>,
    body: OptionalJson<TestPaymentIn>,
) -> HttpResponse {
    let OptionalJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, move |c| async move {
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
        let (p, _) = c.billing().pay_test(c.scope(), &id, parsed).await?;
        Ok((StatusCode::CREATED, to_data(&payment(&p))?))
    })
    .await
}

/// This merchant's test clock: its offset from the real time and the time it tells.
#[utoipa::path(
    tag = "test-helpers",
    responses((status = 200, description = "The test clock (transitionsRun is 0)", body = crate::wire_out::ClockEnvelope), crate::wire::Errors),
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
    responses((status = 200, description = "The test clock, at the real time", body = crate::wire_out::ClockEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/test-helpers/clock/reset")]
pub async fn reset_clock(SecretTestKey(c): SecretTestKey) -> Result<HttpResponse, ApiError> {
    c.state.billing().reset_test_clock(c.scope()).await?;
    clock_out(&c, 0).await
}

/// The clock as the store tells it now (not the request's clock, read before a change).
async fn clock_out(c: &crate::auth::Caller, transitions_run: u64) -> Result<HttpResponse, ApiError> {
    let now = c.state.clock.now(c.scope()).await?;
    // The offset is whole seconds; the two readings are a moment apart, so round.
    let offset_seconds = ((now - c.state.clock.system_now()).num_milliseconds() + 500).div_euclid(1000);
    let out = ClockOut { offset_seconds, now: timestamp(now), transitions_run };
    crate::envelope::ok(StatusCode::OK, &out)
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
    SecretTestKey(caller): SecretTestKey,
    body: ApiJson<ClockAdvanceIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, move |c| async move {
        // The request's own clock holds the offset from before the advance: read the store's.
        let state = &c.state;
        let (offset, report) = state.billing().advance_test_clock(c.scope(), input.seconds).await?;
        for f in &report.failed {
            tracing::error!(invoice = %f.invoice, failures = f.failures, error = %f.error, "due work failed; backed off");
        }
        // Links whose expiry the advance passed (a batch at a time).
        let mut announced = 0;
        for _ in 0..100 {
            let batch = state.links_with(state.clock.as_ref()).announce_expiries(Some(c.scope())).await?;
            announced += batch;
            if batch == 0 {
                break;
            }
        }
        // Reminder slots the advance reached are queued at once (the worker delivers them).
        let reminders = state.emails_with(state.clock.as_ref()).schedule_reminders(Some(c.scope())).await?;
        let now = state.clock.now(c.scope()).await?;
        let transitions_run = u64::try_from(report.changed + announced + reminders).unwrap_or(0);
        let out = ClockOut { offset_seconds: offset, now: timestamp(now), transitions_run };
        Ok((StatusCode::OK, to_data(&out)?))
    })
    .await
}
