//! Liveness and readiness, outside `/v1`.

use actix_web::{HttpResponse, get, web};
use serde_json::json;
use stablepay_http::envelope::success_body;
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::state::AppState;

use crate::wire::health::{ChainOut, ReadyOut, RelayerOut};

/// How long readiness waits for the relayer's state (its balance and fees from the chain).
const RELAYER_PROBE: std::time::Duration = std::time::Duration::from_secs(2);

/// The relayer's state for readiness, within [`RELAYER_PROBE`].
async fn relayer(state: &AppState) -> RelayerOut {
    match actix_web::rt::time::timeout(RELAYER_PROBE, state.use_cases.relays().status()).await {
        Ok(Ok(Some(status))) => RelayerOut::from(&status),
        Ok(Ok(None)) => RelayerOut::off(),
        Ok(Err(_)) | Err(_) => RelayerOut { state: "unreachable".into(), ..RelayerOut::off() },
    }
}

/// The process is up.
#[utoipa::path(tag = "health", responses((status = 200, description = "The process is up", body = crate::wire::health::HealthEnvelope)))]
#[get("/healthz")]
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(success_body(&json!({ "status": "ok" })))
}

/// Ready to serve: the database answers and holds every migration this release knows, this
/// process's background worker (if it runs one) is
/// not stalled, and the chain endpoints (if configured) serve the configured chain. The answer
/// shows the worker's, the chain's and the relayer's state either way (the relayer's never
/// fails readiness).
#[utoipa::path(tag = "health", responses(
    (status = 200, description = "Ready to serve", body = crate::wire::health::ReadyEnvelope),
    (status = 503, description = "SERVICE_UNAVAILABLE: the database is unreachable or lacks a migration of this release (details.reason migrations_pending, details.pending), the worker is stalled (details.worker), or the chain endpoints serve another chain (details.chain)", body = crate::wire::common::ErrorEnvelope),
))]
#[get("/readyz")]
pub async fn readyz(state: web::Data<AppState>) -> Result<HttpResponse, ApiError> {
    let chain = ChainOut::from(state.use_cases.readiness().check().await?);
    let now = state.use_cases.clock().system_now();
    let worker = state.worker.snapshot(now);
    let relayer = relayer(&state).await;
    if state.worker.is_stalled(now) {
        return Err(ApiError::new(
            ErrorCode::SERVICE_UNAVAILABLE,
            "The background worker has not completed a pass for too long; see the logs.",
        )
        .with_details(json!({ "worker": worker, "chain": chain, "relayer": relayer })));
    }
    if chain.state == "wrong_chain" {
        return Err(ApiError::new(
            ErrorCode::SERVICE_UNAVAILABLE,
            "The chain RPC endpoints serve another chain: live payments are not verified.",
        )
        .with_details(json!({ "worker": worker, "chain": chain, "relayer": relayer })));
    }
    Ok(HttpResponse::Ok().json(success_body(&ReadyOut { status: "ready".into(), worker, chain, relayer })))
}
