//! Liveness and readiness, outside `/v1`.

use actix_web::{HttpResponse, get, web};
use serde_json::json;

use crate::envelope::success_body;
use crate::error::ApiError;
use crate::state::AppState;

/// The process is up.
#[utoipa::path(tag = "health", responses((status = 200, description = "The process is up", body = crate::wire::HealthEnvelope)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(success_body(&json!({ "status": "ok" })))
}

/// The database is reachable.
#[utoipa::path(tag = "health", responses(
    (status = 200, description = "Ready to serve", body = crate::wire::HealthEnvelope),
    (status = 503, description = "SERVICE_UNAVAILABLE: the database is unreachable", body = crate::wire::ErrorEnvelope),
))]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state.health.ready().await?;
    Ok(HttpResponse::Ok().json(success_body(&json!({ "status": "ready" }))))
}
