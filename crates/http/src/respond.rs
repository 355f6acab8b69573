//! Success answers in the envelope, serialized once.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;

use crate::error::ApiError;

/// Serializes response data to JSON text (the `data` member of the envelope).
pub fn to_data<T: Serialize>(data: &T) -> Result<String, ApiError> {
    serde_json::to_string(data).map_err(|e| {
        tracing::error!(error = %e, "response serialization failed");
        ApiError::internal()
    })
}

/// A success answer with `status` and `data`, serialized once, straight into the envelope's
/// buffer (sized for a typical answer, so it rarely grows).
pub fn ok<T: Serialize>(status: StatusCode, data: &T) -> Result<HttpResponse, ApiError> {
    let id = crate::request_id::request_id();
    let mut body = Vec::with_capacity(4096);
    body.extend_from_slice(b"{\"success\":true,\"data\":");
    serde_json::to_writer(&mut body, data).map_err(|e| {
        tracing::error!(error = %e, "response serialization failed");
        ApiError::internal()
    })?;
    // Request ids are base62: no escaping.
    body.extend_from_slice(b",\"meta\":{\"requestId\":\"");
    body.extend_from_slice(id.as_bytes());
    body.extend_from_slice(b"\"}}");
    Ok(HttpResponse::build(status).content_type("application/json").body(body))
}
