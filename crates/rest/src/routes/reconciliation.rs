//! Reconciliation (secret key): what the merchant's books say about a period, and runs that read
//! the live chain again for a period and match it with the books.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::ids::ReconciliationRunId;
use stablepay_domain::reconciliation::{ItemFilter, RunOutcome, RunStatus};
use stablepay_domain::{Error, Resource};
use stablepay_http::error::ApiError;
use stablepay_http::respond::{ok, to_data};

use crate::auth::{Caller, SecretKey};
use crate::idempotency;
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::rebuild::Rebuilt;
use crate::wire::common::ListOut;
use crate::wire::reconciliation::{
    ReconciliationItemOut, ReconciliationOut, ReconciliationRunIn, ReconciliationRunOut,
};

/// A period's figures per token (invoiced, collected, overpaid, refunded, outstanding, overdue,
/// unattributed) and its discrepancies.
#[utoipa::path(
    tag = "reconciliation",
    params(
        ("from" = String, Query, description = "RFC 3339; the period's start (included)", example = "2026-11-01T00:00:00Z"),
        ("to" = String, Query, description = "RFC 3339; the period's end (excluded); at most 366 days after from", example = "2026-12-01T00:00:00Z"),
    ),
    responses((status = 200, description = "The period's reconciliation", body = crate::wire::reconciliation::ReconciliationEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/reconciliation")]
pub async fn reconciliation(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["from", "to"])?;
    let bound = |name: &str| {
        crate::wire::fields::date_time(name, &params.get(name).map(str::to_owned))?
            .ok_or_else(|| ApiError::validation(name, format!("{name} is required (RFC 3339).")))
    };
    let (from, to) = (bound("from")?, bound("to")?);
    let r = c.cases().reconciliations().summary(c.scope(), from, to).await?;
    ok(StatusCode::OK, &ReconciliationOut::new(&r, c.scope().mode.as_str()))
}

fn run_id(text: &str) -> Result<ReconciliationRunId, Error> {
    ReconciliationRunId::parse(text).ok_or(Error::NotFound(Resource::ReconciliationRun))
}

fn rebuild(c: Caller, committed: stablepay_domain::idempotency::Committed) -> Rebuilt {
    Box::pin(async move {
        let id = committed
            .reconciliation_run
            .as_deref()
            .and_then(ReconciliationRunId::parse)
            .ok_or_else(ApiError::internal)?;
        let run = c.cases().reconciliation_runs().get(c.scope(), &id).await?;
        Ok((StatusCode::ACCEPTED, to_data(&ReconciliationRunOut::from(&run))?))
    })
}

/// Ask for a reconciliation run of a live period: a worker reads the chain's final blocks of
/// the period again and matches every transfer into the merchant's wallets with the credited
/// payments (live keys only; FEATURE_UNAVAILABLE with a test key).
#[utoipa::path(
    tag = "reconciliation",
    request_body = ReconciliationRunIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 202, description = "The run, queued", body = crate::wire::reconciliation::ReconciliationRunEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/reconciliation-runs")]
pub async fn create_run(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    body: ApiJson<ReconciliationRunIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild, move |c| async move {
        let (from, to) = input.period()?;
        let run = c.cases().reconciliation_runs().create(c.scope(), from, to).await?;
        Ok((StatusCode::ACCEPTED, to_data(&ReconciliationRunOut::from(&run))?))
    })
    .await
}

/// List reconciliation runs, newest first.
#[utoipa::path(
    tag = "reconciliation",
    params(
        crate::openapi::parameters::Paging,
        ("status" = Option<String>, Query, description = "queued, running, completed or failed"),
    ),
    responses((status = 200, description = "A page of runs", body = crate::wire::reconciliation::ReconciliationRunListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/reconciliation-runs")]
pub async fn list_runs(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "status"])?;
    let page = params.page()?;
    let status = params
        .get("status")
        .map(|s| {
            RunStatus::parse(s)
                .ok_or_else(|| ApiError::validation("status", "status must be queued, running, completed or failed."))
        })
        .transpose()?;
    let runs = c.cases().reconciliation_runs().list(c.scope(), status, &page).await?;
    let out = ListOut::new(runs, |r| r.id.to_string(), |r| ReconciliationRunOut::from(&r));
    ok(StatusCode::OK, &out)
}

/// One reconciliation run, with its totals per token once completed.
#[utoipa::path(
    tag = "reconciliation",
    params(("id" = String, Path, description = "Reconciliation run id")),
    responses((status = 200, description = "The run", body = crate::wire::reconciliation::ReconciliationRunEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/reconciliation-runs/{id}")]
pub async fn get_run(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let run = c.cases().reconciliation_runs().get(c.scope(), &run_id(&id)?).await?;
    ok(StatusCode::OK, &ReconciliationRunOut::from(&run))
}

/// A run's items in block and log order (none before it completed): every transfer log and
/// every credited payment, each `matched`, `onchain_not_credited` or `credited_not_onchain`.
#[utoipa::path(
    tag = "reconciliation",
    params(
        ("id" = String, Path, description = "Reconciliation run id"),
        crate::openapi::parameters::Paging,
        ("outcome" = Option<String>, Query, description = "matched, onchain_not_credited or credited_not_onchain"),
    ),
    responses((status = 200, description = "A page of items", body = crate::wire::reconciliation::ReconciliationItemListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/reconciliation-runs/{id}/items")]
pub async fn run_items(
    req: HttpRequest,
    SecretKey(c): SecretKey,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "outcome"])?;
    let page = params.page()?;
    let outcome = params
        .get("outcome")
        .map(|s| {
            RunOutcome::parse(s).ok_or_else(|| {
                ApiError::validation(
                    "outcome",
                    "outcome must be matched, onchain_not_credited or credited_not_onchain.",
                )
            })
        })
        .transpose()?;
    let filter = ItemFilter { run: run_id(&id)?, outcome };
    let items = c.cases().reconciliation_runs().items(c.scope(), &filter, &page).await?;
    let out = ListOut::new(items, |i| i.line.to_string(), |i| ReconciliationItemOut::from(&i));
    ok(StatusCode::OK, &out)
}
