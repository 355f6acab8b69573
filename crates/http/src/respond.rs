//! Success answers in the envelope, serialized once.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;

use crate::envelope::success_text;
use crate::error::ApiError;

/// Serializes response data to JSON text (the `data` member of the envelope).
pub fn to_data<T: Serialize>(data: &T) -> Result<String, ApiError> {
    serde_json::to_string(data).map_err(|e| {
        tracing::error!(error = %e, "response serialization failed");
        ApiError::internal()
    })
}

/// A success answer with `status` and `data`, serialized once.
pub fn ok<T: Serialize>(status: StatusCode, data: &T) -> Result<HttpResponse, ApiError> {
    let body = success_text(&to_data(data)?);
    Ok(HttpResponse::build(status).content_type("application/json").body(body))
}
