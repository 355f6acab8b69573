//! The id of the request being served: set around the whole handling of a request, so every
//! response body and header can name it.

use actix_web::http::header::HeaderName;

tokio::task_local! {
    /// The id of the request being served, set by the request-id middleware around the whole
    /// handling of a request, so every response body can name it.
    pub static REQUEST_ID: String;
}

/// The response header that carries the request id.
pub static X_REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// The current request id (empty outside a request).
pub fn request_id() -> String {
    REQUEST_ID.try_with(Clone::clone).unwrap_or_default()
}
