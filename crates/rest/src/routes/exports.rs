//! Exports (secret key): ask for one, read and list them, cancel one, download its CSV, or
//! export a small range at once. The files are not enveloped.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::export::{ExportListFilter, ExportStatus, ExportType};
use stablepay_domain::ids::ExportId;
use stablepay_domain::{Error, Resource};
use stablepay_http::download::{self, csv_response};
use stablepay_http::error::ApiError;
use stablepay_http::respond::{ok, to_data};

use crate::auth::{Caller, SecretKey};
use crate::idempotency;
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::rebuild::Rebuilt;
use crate::wire::common::ListOut;
use crate::wire::exports::{ExportIn, ExportOut};

fn export_id(text: &str) -> Result<ExportId, Error> {
    ExportId::parse(text).ok_or(Error::NotFound(Resource::Export))
}

fn rebuild(c: Caller, committed: stablepay_domain::idempotency::Committed) -> Rebuilt {
    Box::pin(async move {
        let id = committed.export.as_deref().and_then(ExportId::parse).ok_or_else(ApiError::internal)?;
        let export = c.cases().exports().get(c.scope(), &id).await?;
        Ok((StatusCode::ACCEPTED, to_data(&ExportOut::from(&export))?))
    })
}

/// Ask for an export: a worker writes the CSV file (`GET /v1/exports/{id}/file` once `ready`).
#[utoipa::path(
    tag = "exports",
    request_body = ExportIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 202, description = "The export, queued", body = crate::wire::exports::ExportEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/exports")]
pub async fn create_export(req: HttpRequest, SecretKey(caller): SecretKey, body: ApiJson<ExportIn>) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild, move |c| async move {
        let spec = input.into_spec()?;
        let export = c.cases().exports().create(c.scope(), spec).await?;
        Ok((StatusCode::ACCEPTED, to_data(&ExportOut::from(&export))?))
    })
    .await
}

/// The CSV of a range at once (200, `text/csv`, not enveloped, gzip-encoded when the request
/// accepts it) when it holds at most 10,000 rows; EXPORT_TOO_LARGE_FOR_SYNC otherwise (decided
/// before any row is sent).
#[utoipa::path(
    tag = "exports",
    request_body = ExportIn,
    responses(
        (status = 200, description = "text/csv; charset=utf-8 (not enveloped), Content-Disposition: attachment; filename=\"<type>-<from>-<to>.csv\", Cache-Control: no-store", content_type = "text/csv", body = String),
        crate::wire::common::Errors
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/exports/sync", wrap = "actix_web::middleware::Compress::default()")]
pub async fn sync_export(SecretKey(c): SecretKey, body: ApiJson<ExportIn>) -> Result<HttpResponse, ApiError> {
    let spec = body.0.into_spec()?;
    let (csv, _) = c.cases().exports().sync(c.scope(), &spec).await?;
    let name = spec.file_name();
    Ok(csv_response(&name).body(csv))
}

/// List exports, newest first.
#[utoipa::path(
    tag = "exports",
    params(
        crate::openapi::parameters::Paging,
        ("status" = Option<String>, Query, description = "queued, running, ready, failed, cancelled or expired"),
        ("type" = Option<String>, Query, description = "invoices, invoice_lines, payments, payment_links, refund_references, webhook_deliveries, unattributed_transfers or reconciliation"),
    ),
    responses((status = 200, description = "A page of exports", body = crate::wire::exports::ExportListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/exports")]
pub async fn list_exports(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "status", "type"])?;
    let page = params.page()?;
    let status = params
        .get("status")
        .map(|s| {
            ExportStatus::parse(s).ok_or_else(|| {
                ApiError::validation("status", "status must be queued, running, ready, failed, cancelled or expired.")
            })
        })
        .transpose()?;
    let export_type = params
        .get("type")
        .map(|t| {
            ExportType::parse(t).ok_or_else(|| {
                let names = ExportType::ALL.map(ExportType::as_str).join(", ");
                ApiError::validation("type", format!("type must be one of {names}."))
            })
        })
        .transpose()?;
    let exports = c.cases().exports().list(c.scope(), &ExportListFilter { status, export_type }, &page).await?;
    let out = ListOut::new(exports, |e| e.id.to_string(), |e| ExportOut::from(&e));
    ok(StatusCode::OK, &out)
}

/// One export.
#[utoipa::path(
    tag = "exports",
    params(("id" = String, Path, description = "Export id")),
    responses((status = 200, description = "The export", body = crate::wire::exports::ExportEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/exports/{id}")]
pub async fn get_export(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let export = c.cases().exports().get(c.scope(), &export_id(&id)?).await?;
    ok(StatusCode::OK, &ExportOut::from(&export))
}

/// Cancel a queued or running export (EXPORT_NOT_CANCELLABLE once it is ready, failed or
/// expired; a cancelled one is answered again).
#[utoipa::path(
    tag = "exports",
    params(("id" = String, Path, description = "Export id")),
    responses((status = 200, description = "The export, cancelled", body = crate::wire::exports::ExportEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/exports/{id}/cancel")]
pub async fn cancel_export(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let export = c.cases().exports().cancel(c.scope(), &export_id(&id)?).await?;
    ok(StatusCode::OK, &ExportOut::from(&export))
}

/// The export's CSV file, streamed (not enveloped), gzip-encoded when the request accepts it
/// (`Accept-Encoding: gzip`). EXPORT_NOT_READY (with Retry-After) before it is ready,
/// EXPORT_CANCELLED, EXPORT_EXPIRED (410) after `expiresAt`.
#[utoipa::path(
    tag = "exports",
    params(("id" = String, Path, description = "Export id")),
    responses(
        (status = 200, description = "text/csv; charset=utf-8 (not enveloped), Content-Disposition: attachment; filename=\"<type>-<from>-<to>.csv\", Cache-Control: no-store", content_type = "text/csv", body = String),
        crate::wire::common::Errors
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/exports/{id}/file", wrap = "actix_web::middleware::Compress::default()")]
pub async fn export_file(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = export_id(&id)?;
    let export = c.cases().exports().downloadable(c.scope(), &id).await?;
    download::export_file(c.state.clone(), c.scope().clone(), &export).await
}
