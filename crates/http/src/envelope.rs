//! The response envelope and the request id that every response carries.

use serde::Serialize;
use serde_json::{Value, json};

tokio::task_local! {
    /// The id of the request being served, set by the request-id middleware around the whole
    /// handling of a request, so every response body can name it.
    pub static REQUEST_ID: String;
}

/// The current request id (empty outside a request).
pub fn request_id() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}

/// `{success: true, data, meta: {requestId}}` as a JSON value (tests and small answers).
pub fn success_body<T: Serialize>(data: &T) -> Value {
    json!({ "success": true, "data": data, "meta": { "requestId": request_id() } })
}

/// Serializes response data to JSON text (the `data` member of the envelope).
pub fn to_data<T: Serialize>(data: &T) -> Result<String, crate::error::ApiError> {
    serde_json::to_string(data).map_err(|e| {
        tracing::error!(error = %e, "response serialization failed");
        crate::error::ApiError::internal()
    })
}

/// The success envelope around already serialized `data` (request ids are base62, so they
/// need no escaping).
pub fn success_text(data: &str) -> String {
    let id = request_id();
    let mut out = String::with_capacity(data.len() + id.len() + 48);
    out.push_str("{\"success\":true,\"data\":");
    out.push_str(data);
    out.push_str(",\"meta\":{\"requestId\":\"");
    out.push_str(&id);
    out.push_str("\"}}");
    out
}

/// A success answer with `status` and `data`, serialized once.
pub fn ok<T: Serialize>(
    status: actix_web::http::StatusCode,
    data: &T,
) -> Result<actix_web::HttpResponse, crate::error::ApiError> {
    let body = success_text(&to_data(data)?);
    Ok(actix_web::HttpResponse::build(status).content_type("application/json").body(body))
}

/// `{success: false, error, meta: {requestId}}`.
pub fn error_body(error: Value) -> Value {
    error_body_with_id(error, &request_id())
}

/// The error envelope naming `request_id` explicitly.
pub fn error_body_with_id(error: Value, request_id: &str) -> Value {
    json!({ "success": false, "error": error, "meta": { "requestId": request_id } })
}
