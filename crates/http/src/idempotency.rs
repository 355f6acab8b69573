//! `Idempotency-Key` handling for mutations: the same key with the same method, path and body
//! within 24 hours replays the stored status and body (`Idempotency-Replayed: true`); a
//! changed request gives IDEMPOTENCY_KEY_CONFLICT; a request with the same key still in flight
//! gets a 409 asking the client to retry; it is never executed twice.
//!
//! A claimed request runs in a task of its own, which finishes the work and records the answer
//! even when the client hangs up (actix drops the handler then): a client that times out and
//! retries gets the replay, never a second execution.
//!
//! A crash leaves no window: the work runs with its claim ([`IdempotencyClaim`]), and the store
//! marks the key committed in the work's own transaction. A retry after a crash finds either no
//! work (the claim is taken over after its lease, and the request runs) or the marker (the
//! answer is rebuilt from what the work committed, recorded, and replayed): one result.

use std::future::Future;
use std::panic::AssertUnwindSafe;

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use futures_util::FutureExt;
use serde_json::{Value, json};
use stablepay_domain::Scope;
use stablepay_domain::idempotency::{
    Committed, IdempotencyBegin, IdempotencyClaim, IdempotencyNamespace, KeyedRequest, Requester, well_formed,
};
use tracing::Instrument;

use crate::envelope::{error_body, success_text};
use crate::error::{ApiError, ErrorCode};
use crate::request_id::{REQUEST_ID, request_id};
use crate::state::AppState;

/// The validated key of a request, if it sent one.
pub fn key_of(req: &HttpRequest) -> Result<Option<String>, ApiError> {
    let Some(value) = req.headers().get("idempotency-key") else { return Ok(None) };
    let bad = || {
        ApiError::field(
            ErrorCode::INVALID_IDEMPOTENCY_KEY,
            "Idempotency-Key",
            "Idempotency-Key must be 1-255 visible ASCII characters without spaces.",
        )
    };
    let text = value.to_str().map_err(|_| bad())?;
    if !well_formed(text) {
        return Err(bad());
    }
    Ok(Some(text.to_owned()))
}

/// A rendered outcome: status and the serialized `data` (success), or the error.
pub type Outcome = Result<(StatusCode, String), ApiError>;

pub fn render(outcome: &Outcome) -> (StatusCode, String) {
    match outcome {
        Ok((status, data)) => (*status, success_text(data)),
        Err(e) => (e.code.status(), error_body(e.body()).to_string()),
    }
}

pub fn respond(status: StatusCode, body: String, extra: &[(&str, String)]) -> HttpResponse {
    let mut b = HttpResponse::build(status);
    b.content_type("application/json");
    for (k, v) in extra {
        b.insert_header((*k, v.as_str()));
    }
    b.body(body)
}

/// Where a public submission's idempotency key comes from.
#[derive(Clone, Copy)]
pub enum SubmissionKey<'a> {
    /// An API route's `Idempotency-Key` header, required (INVALID_IDEMPOTENCY_KEY without one).
    Header,
    /// A hosted page form's hidden field (so a double click or a resent form creates nothing
    /// twice). Form keys live apart from the API's (`page|` prefix).
    Form(&'a str),
}

impl SubmissionKey<'_> {
    /// The key claimed for `resource`, or the refusal of a missing or malformed one.
    fn claimed(self, req: &HttpRequest, resource: &str) -> Result<String, ApiError> {
        match self {
            Self::Header => match key_of(req)? {
                Some(key) => Ok(format!("{resource}|{key}")),
                None => Err(ApiError::field(
                    ErrorCode::INVALID_IDEMPOTENCY_KEY,
                    "Idempotency-Key",
                    "This submission needs an Idempotency-Key header (1-255 visible ASCII characters).",
                )),
            },
            Self::Form(key) if well_formed(key) => Ok(format!("page|{resource}|{key}")),
            Self::Form(_) => {
                Err(ApiError::field(ErrorCode::INVALID_IDEMPOTENCY_KEY, "idempotencyKey", "The form's key is missing."))
            }
        }
    }
}

/// The keyed request of a public route or a hosted page's form (no merchant key), for
/// [`keyed`]: keys are separate per merchant, mode and public `resource` (a link's public id, an
/// invoice's token), and `source` says where the key is. Errors: the key is missing or not
/// well formed.
pub fn public_request(
    state: &AppState,
    scope: Scope,
    (resource, source): (&str, SubmissionKey<'_>),
    req: &HttpRequest,
    body: &[u8],
) -> Result<KeyedRequest, ApiError> {
    let key = source.claimed(req, resource)?;
    let namespace = IdempotencyNamespace { scope, requester: Requester::Public };
    Ok(KeyedRequest { namespace, key, fingerprint: fingerprint(state, req, body) })
}

/// Claims the key of `request` and, when this request is the first, runs it in a task of its
/// own under its claim; when its work committed before a crash, answers with `rebuild` of what
/// it committed.
pub async fn keyed<F, Fut, R, RFut>(
    state: web::Data<AppState>,
    request: KeyedRequest,
    (run, rebuild): (F, R),
) -> HttpResponse
where
    F: FnOnce(Option<IdempotencyClaim>) -> Fut + 'static,
    Fut: Future<Output = Outcome> + 'static,
    R: FnOnce(Committed) -> RFut + 'static,
    RFut: Future<Output = Outcome> + 'static,
{
    // From the claim on, the request runs in its own task (with the request's id and span): a
    // client that hangs up drops this handler, never a claim without its work or its answer.
    let task = async move {
        match state.use_cases.idempotency().claim(&request).await {
            Err(e) => ApiError::from(e).error_response(),
            Ok(IdempotencyBegin::Started(claim)) => run_claimed(state, claim, run).await,
            Ok(IdempotencyBegin::Committed(committed)) => answer_again(state, &request, rebuild(committed)).await,
            Ok(other) => answer_known(other),
        }
    };
    let task = REQUEST_ID.scope(request_id(), task.instrument(tracing::Span::current()));
    actix_web::rt::spawn(task).await.unwrap_or_else(|_| ApiError::internal().error_response())
}

/// The answer for a key that was used before: its replay, a conflict, or "still running".
fn answer_known(begun: IdempotencyBegin) -> HttpResponse {
    match begun {
        IdempotencyBegin::Replay { status, body } => {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
            let original_id = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| v["meta"]["requestId"].as_str().map(str::to_owned))
                .unwrap_or_else(request_id);
            respond(status, body, &[("Idempotency-Replayed", "true".into()), ("X-Request-Id", original_id)])
        }
        IdempotencyBegin::Conflict => {
            metrics::counter!("stablepay_idempotency_conflicts_total", "kind" => "different_request").increment(1);
            ApiError::field(
                ErrorCode::IDEMPOTENCY_KEY_CONFLICT,
                "Idempotency-Key",
                "This Idempotency-Key was used with a different request; use a new key for new input.",
            )
            .error_response()
        }
        IdempotencyBegin::InProgress | IdempotencyBegin::Started(_) | IdempotencyBegin::Committed(_) => {
            metrics::counter!("stablepay_idempotency_conflicts_total", "kind" => "in_progress").increment(1);
            ApiError::field(
                ErrorCode::IDEMPOTENCY_KEY_CONFLICT,
                "Idempotency-Key",
                "A request with this Idempotency-Key is still in progress; wait and retry the same request.",
            )
            .with_details(json!({ "field": "Idempotency-Key", "reason": "in_progress" }))
            .with_header("Retry-After", "1")
            .error_response()
        }
    }
}

/// The answer of a key whose work committed before its answer was recorded (a crash between
/// the two): rebuilt from what the work committed, recorded, and replayed. A failure to
/// rebuild is answered as it is and recorded nothing (the next retry rebuilds again).
async fn answer_again(
    state: web::Data<AppState>,
    request: &KeyedRequest,
    rebuilt: impl Future<Output = Outcome>,
) -> HttpResponse {
    let outcome = AssertUnwindSafe(rebuilt).catch_unwind().await.unwrap_or_else(|_| Err(ApiError::internal()));
    let Ok(_) = &outcome else { return render_error(outcome) };
    let (status, text) = render(&outcome);
    if let Err(e) = state.use_cases.idempotency().record_committed(request, status.as_u16(), &text).await {
        tracing::warn!(error = %e, "could not record the rebuilt idempotent response");
    }
    metrics::counter!("stablepay_idempotency_rebuilt_total").increment(1);
    respond(status, text, &[("Idempotency-Replayed", "true".into())])
}

fn render_error(outcome: Outcome) -> HttpResponse {
    match outcome {
        Ok(_) => {
            let (status, text) = render(&outcome);
            respond(status, text, &[])
        }
        Err(e) => e.error_response(),
    }
}

/// Runs a claimed request and records its answer (or releases the key when a retry may do
/// better). A panic is answered 500 and releases the key.
async fn run_claimed<F, Fut>(state: web::Data<AppState>, claim: IdempotencyClaim, run: F) -> HttpResponse
where
    F: FnOnce(Option<IdempotencyClaim>) -> Fut,
    Fut: Future<Output = Outcome>,
{
    let outcome = AssertUnwindSafe(run(Some(claim.clone()))).catch_unwind().await.unwrap_or_else(|_| {
        tracing::error!("handler panicked");
        Err(ApiError::internal())
    });
    let (status, text) = render(&outcome);
    // Server failures, concurrency conflicts and a sign-in too old for the change may succeed
    // on retry: forget the key so the retry executes. Everything else is stored and replayed.
    // A claim taken over by a retry records nothing: the retry's answer is the one.
    let lost = matches!(&outcome, Err(e) if e.code == ErrorCode::IDEMPOTENCY_KEY_CONFLICT);
    let retryable = status.is_server_error()
        || matches!(&outcome, Err(e) if e.code == ErrorCode::INVOICE_STATE_MISMATCH || e.needs_reauthentication());
    let stored = if lost {
        Ok(())
    } else if retryable {
        release(state.clone(), claim).await
    } else {
        state.use_cases.idempotency().record(&claim, status.as_u16(), &text).await
    };
    if let Err(e) = stored {
        tracing::warn!(error = %e, "could not record the idempotent response");
    }
    match outcome {
        Ok(_) => respond(status, text, &[]),
        Err(e) => e.error_response(),
    }
}

/// Releases the claim of a request a retry may do better. When the database cannot be reached
/// (the failure that made the request fail, often), the release is tried again in the
/// background, with a growing pause, for as long as the claim's lease: a client's retry after
/// a failover then runs at once instead of answering `in_progress` until the lease ends. The
/// release only ever removes this attempt's own uncommitted claim, so a late one is harmless.
async fn release(state: web::Data<AppState>, claim: IdempotencyClaim) -> Result<(), stablepay_domain::Error> {
    let first = state.use_cases.idempotency().release(&claim).await;
    if !matches!(first, Err(stablepay_domain::Error::Unavailable)) {
        return first;
    }
    let lease = std::time::Duration::from_secs(state.use_cases.idempotency().lease_seconds.unsigned_abs());
    actix_web::rt::spawn(async move {
        let start = std::time::Instant::now();
        let mut pause = std::time::Duration::from_millis(250);
        while start.elapsed() < lease {
            tokio::time::sleep(pause).await;
            match state.use_cases.idempotency().release(&claim).await {
                Err(stablepay_domain::Error::Unavailable) => pause = (pause * 2).min(std::time::Duration::from_secs(5)),
                Err(e) => return tracing::warn!(error = %e, "could not release an idempotency key"),
                Ok(()) => return,
            }
        }
    });
    Ok(())
}

/// The request's fingerprint under its key: method, path and body.
pub fn fingerprint(state: &AppState, req: &HttpRequest, body: &[u8]) -> [u8; 32] {
    state.use_cases.idempotency().fingerprint(req.method().as_str(), req.path(), body)
}
