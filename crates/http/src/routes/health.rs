//! Liveness and readiness, outside `/v1`.

use actix_web::{HttpResponse, get, web};
use serde_json::json;

use crate::envelope::success_body;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::wire::ReadyOut;

/// The process is up.
#[utoipa::path(tag = "health", responses((status = 200, description = "The process is up", body = crate::wire::HealthEnvelope)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(success_body(&json!({ "status": "ok" })))
}

/// Ready to serve: the database answers and this process's background worker (if it runs one)
/// is not stalled. The answer shows the worker's state either way.
#[utoipa::path(tag = "health", responses(
    (status = 200, description = "Ready to serve", body = crate::wire::ReadyEnvelope),
    (status = 503, description = "SERVICE_UNAVAILABLE: the database is unreachable, or the worker is stalled (details.worker)", body = crate::wire::ErrorEnvelope),
))]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state.health.ready().await?;
    let now = state.clock.system_now();
    let worker = state.worker.snapshot(now);
    if state.worker.is_stalled(now) {
        return Err(ApiError::new(
            ErrorCode::SERVICE_UNAVAILABLE,
            "The background worker has not completed a pass for too long; see the logs.",
        )
        .with_details(json!({ "worker": worker })));
    }
    Ok(HttpResponse::Ok().json(success_body(&ReadyOut { status: "ready".into(), worker })))
}

/// Operational metrics in the Prometheus text format (the background worker's counters).
#[utoipa::path(tag = "health", responses(
    (status = 200, description = "Prometheus text exposition", content_type = "text/plain", body = String),
))]
#[get("/metrics")]
pub async fn metrics(state: web::Data<AppState>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(state.worker.metrics(state.clock.system_now()))
}
