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

/// `{success: true, data, meta: {requestId}}`.
pub fn success_body<T: Serialize>(data: &T) -> Value {
    json!({ "success": true, "data": data, "meta": { "requestId": request_id() } })
}

/// `{success: false, error, meta: {requestId}}`.
pub fn error_body(error: Value) -> Value {
    error_body_with_id(error, &request_id())
}

/// The error envelope naming `request_id` explicitly.
pub fn error_body_with_id(error: Value, request_id: &str) -> Value {
    json!({ "success": false, "error": error, "meta": { "requestId": request_id } })
}
