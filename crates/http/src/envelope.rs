//! The response envelope: `{success, data | error, meta: {requestId}}`.

use serde::Serialize;
use serde_json::{Value, json};

use crate::request_id::request_id;

/// `{success: true, data, meta: {requestId}}` as a JSON value (tests and small answers).
pub fn success_body<T: Serialize>(data: &T) -> Value {
    json!({ "success": true, "data": data, "meta": { "requestId": request_id() } })
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

/// `{success: false, error, meta: {requestId}}`.
pub fn error_body(error: Value) -> Value {
    error_body_with_id(error, &request_id())
}

/// The error envelope naming `request_id` explicitly.
pub fn error_body_with_id(error: Value, request_id: &str) -> Value {
    json!({ "success": false, "error": error, "meta": { "requestId": request_id } })
}
