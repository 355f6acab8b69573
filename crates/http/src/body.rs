//! Request bodies as every route reads them: at most 1 MiB (413), within the body deadline
//! (408), holding room in the process's body budget while they arrive (503 when it stays
//! full).

use std::sync::Arc;

use actix_web::dev::Payload;
use actix_web::{HttpRequest, web};
use futures_util::StreamExt;
use tokio::sync::OwnedSemaphorePermit;

use crate::error::{ApiError, ErrorCode};

/// The global request body ceiling: 1 MiB.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

pub fn too_large_error() -> ApiError {
    ApiError::new(ErrorCode::REQUEST_TOO_LARGE, "The request body exceeds 1 MiB.")
}

/// What clients may make the service hold: how long a body may take to arrive, and how much
/// memory the bodies being read may hold together.
#[derive(Debug)]
pub struct RequestLimits {
    pub body_timeout: std::time::Duration,
    /// One permit per KiB of body buffer, for every body being read in this process.
    pub body_budget: Arc<tokio::sync::Semaphore>,
}

impl RequestLimits {
    pub fn new(body_timeout: std::time::Duration, body_memory_mib: usize) -> Self {
        Self { body_timeout, body_budget: Arc::new(tokio::sync::Semaphore::new(body_memory_mib.saturating_mul(1024))) }
    }
}

impl Default for RequestLimits {
    /// 10 seconds per body, 256 MiB of bodies at once.
    fn default() -> Self {
        Self::new(std::time::Duration::from_secs(10), 256)
    }
}

/// How long a body waits for room in the memory budget before the request is turned away. Short
/// on purpose: a body that is not being read still pins actix's buffers of its connection.
const BUDGET_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

fn kib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024)).unwrap_or(u32::MAX)
}

/// Reads the body: at most 1 MiB (413), within the body deadline (408, and the connection is
/// closed), holding room in the process's body budget for its buffer while it arrives (503
/// when the budget stays full).
pub async fn read_body(req: &HttpRequest, payload: &mut Payload) -> Result<Vec<u8>, ApiError> {
    let limits = req.app_data::<web::Data<RequestLimits>>().map(|l| l.clone().into_inner()).unwrap_or_default();
    let deadline = tokio::time::Instant::now() + limits.body_timeout;
    let mut body = Vec::new();
    let mut held: Option<OwnedSemaphorePermit> = None;
    loop {
        let next = tokio::time::timeout_at(deadline, payload.next()).await.map_err(|_| body_timeout())?;
        let Some(chunk) = next else { break };
        let chunk = chunk.map_err(|e| match e {
            actix_web::error::PayloadError::Overflow => too_large_error(),
            other => ApiError::validation("body", format!("The request body could not be read: {other}")),
        })?;
        if body.len() + chunk.len() > MAX_BODY_BYTES {
            return Err(too_large_error());
        }
        let needed = body.len() + chunk.len();
        if needed > body.capacity() {
            // Room for the larger buffer is taken from the budget before it is allocated.
            let target = needed.max(body.capacity().saturating_mul(2)).min(MAX_BODY_BYTES);
            let need = kib(target).saturating_sub(held.as_ref().map_or(0, kib_of));
            if need > 0 {
                let more = tokio::time::timeout(BUDGET_WAIT, limits.body_budget.clone().acquire_many_owned(need))
                    .await
                    .map_err(|_| busy())?
                    .map_err(|_| ApiError::internal())?;
                match held.as_mut() {
                    Some(p) => p.merge(more),
                    None => held = Some(more),
                }
            }
            body.reserve_exact(target - body.len());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

fn kib_of(permit: &OwnedSemaphorePermit) -> u32 {
    u32::try_from(permit.num_permits()).unwrap_or(u32::MAX)
}

fn body_timeout() -> ApiError {
    ApiError::new(ErrorCode::REQUEST_TIMEOUT, "The request body did not arrive in time.")
        .with_header("Connection", "close")
}

fn busy() -> ApiError {
    ApiError::new(ErrorCode::SERVICE_UNAVAILABLE, "The service is reading too many large requests; retry shortly.")
        .with_header("Retry-After", "1")
}
