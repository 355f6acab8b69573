//! Dashboard session authentication for the JSON routes, beside (and independent of) API-key
//! authentication: the `stablepay_session` cookie names the session; every mutation made with
//! it carries the session's CSRF token in `X-CSRF-Token` and comes from the service's own
//! origin (the rules are `stablepay_http::session`'s, shared with the dashboard's pages).

use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use stablepay_domain::account::service::Current;
use stablepay_http::error::ApiError;
pub use stablepay_http::session::{COOKIE, CSRF_HEADER, cleared_cookie, session_cookie};
use stablepay_http::session::{check_csrf, current_session};
use stablepay_http::state::AppState;

/// A request made with a live dashboard session (and, for a mutation, its CSRF token).
pub struct DashboardSession {
    /// The application state.
    pub state: web::Data<AppState>,
    /// The session, its user and memberships.
    pub current: Current,
}

impl FromRequest for DashboardSession {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = req.app_data::<web::Data<AppState>>().cloned().ok_or_else(ApiError::internal)?;
            let current = current_session(&req, &state).await?;
            if !matches!(*req.method(), Method::GET | Method::HEAD) {
                let presented = req.headers().get(CSRF_HEADER).and_then(|v| v.to_str().ok());
                check_csrf(&req, &current, state.use_cases.pages(), presented)?;
            }
            Ok(DashboardSession { state, current })
        })
    }
}
