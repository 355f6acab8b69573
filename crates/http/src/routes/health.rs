//! Liveness and readiness, outside `/v1`.

use actix_web::{HttpResponse, get, web};
use serde_json::json;

use crate::envelope::success_body;
use crate::error::{ApiError, ErrorCode};
use crate::state::AppState;
use crate::wire::{ChainOut, ReadyOut};

/// The process is up.
#[utoipa::path(tag = "health", responses((status = 200, description = "The process is up", body = crate::wire::HealthEnvelope)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(success_body(&json!({ "status": "ok" })))
}

/// Ready to serve: the database answers, this process's background worker (if it runs one) is
/// not stalled, and the chain endpoints (if configured) serve the configured chain. The answer
/// shows the worker's and the chain's state either way.
#[utoipa::path(tag = "health", responses(
    (status = 200, description = "Ready to serve", body = crate::wire::ReadyEnvelope),
    (status = 503, description = "SERVICE_UNAVAILABLE: the database is unreachable, the worker is stalled (details.worker), or the chain endpoints serve another chain (details.chain)", body = crate::wire::ErrorEnvelope),
))]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    state.health.ready().await?;
    let now = state.clock.system_now();
    let worker = state.worker.snapshot(now);
    let chain = ChainOut::from(state.chain.health().await);
    if state.worker.is_stalled(now) {
        return Err(ApiError::new(
            ErrorCode::SERVICE_UNAVAILABLE,
            "The background worker has not completed a pass for too long; see the logs.",
        )
        .with_details(json!({ "worker": worker, "chain": chain })));
    }
    if chain.state == "wrong_chain" {
        return Err(ApiError::new(
            ErrorCode::SERVICE_UNAVAILABLE,
            "The chain RPC endpoints serve another chain: live payments are not verified.",
        )
        .with_details(json!({ "worker": worker, "chain": chain })));
    }
    Ok(HttpResponse::Ok().json(success_body(&ReadyOut { status: "ready".into(), worker, chain })))
}
