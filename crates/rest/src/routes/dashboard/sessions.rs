//! Dashboard sessions (their own tag, outside the merchant API's key authentication): log in,
//! read the session, log out here or everywhere.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, post, web};
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;
use stablepay_http::session::throttled_login;
use stablepay_http::state::AppState;

use crate::json::ApiJson;
use crate::routes::dashboard::answer::{signed_in, with_cookie};
use crate::session::{DashboardSession, cleared_cookie};
use crate::wire::accounts::ReauthenticationIn;
use crate::wire::dashboard::{SessionIn, SessionOut, SessionsEndedOut};

/// Log in: a new session, its token in the `stablepay_session` cookie (HttpOnly, SameSite=Lax,
/// Secure over https). A wrong email and a wrong password answer the same INVALID_CREDENTIALS;
/// an account with two-factor login also sends `otp` (without it, INVALID_CREDENTIALS with
/// `details.reason` `otp_required`).
#[utoipa::path(
    tag = "dashboard",
    request_body = SessionIn,
    responses(
        (status = 201, description = "The session; Set-Cookie: stablepay_session", body = crate::wire::dashboard::SessionEnvelope),
        crate::wire::common::Errors
    ),
    security(())
)]
#[post("/dashboard/sessions")]
pub async fn create_session(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: ApiJson<SessionIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(body, _) = body;
    let signed = throttled_login(&req, &state, (&body.email, &body.password, body.otp.as_deref())).await?;
    signed_in(&state, StatusCode::CREATED, &signed)
}

/// The current session: the user, the merchants they belong to with their roles, and the CSRF
/// token every change made with the session sends as `X-CSRF-Token`.
#[utoipa::path(
    tag = "dashboard",
    responses((status = 200, description = "The session", body = crate::wire::dashboard::SessionEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/session")]
pub async fn get_session(s: DashboardSession) -> Result<HttpResponse, ApiError> {
    let settings = s.state.use_cases.accounts().settings.sessions;
    ok(StatusCode::OK, &SessionOut::of(&s.current, s.current.session.ends_at(&settings)))
}

/// Re-authenticate: the password (and the code, with two-factor login) again, checked within
/// the account's login quota; for the next 5 minutes the session may enrol two-factor login and
/// make the changes that can take the account over (`reauthenticatedAt` in the answer).
#[utoipa::path(
    tag = "dashboard",
    request_body = ReauthenticationIn,
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "The session, re-authenticated", body = crate::wire::dashboard::SessionEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/sessions/current/reauthentication")]
pub async fn reauthenticate(s: DashboardSession, body: ApiJson<ReauthenticationIn>) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mut current) = (body, s.current);
    let accounts = s.state.use_cases.accounts();
    accounts.reauthenticate(&mut current, &b.password, b.otp.as_deref()).await?;
    ok(StatusCode::OK, &SessionOut::of(&current, current.session.ends_at(&accounts.settings.sessions)))
}

/// Log out: ends this session and removes its cookie (`X-CSRF-Token` required).
#[utoipa::path(
    tag = "dashboard",
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "The session ended", body = crate::wire::dashboard::SessionsEndedEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[delete("/dashboard/sessions/current")]
pub async fn end_session(s: DashboardSession) -> Result<HttpResponse, ApiError> {
    s.state.use_cases.accounts().logout(&s.current.session).await?;
    let res = ok(StatusCode::OK, &SessionsEndedOut { object: "sessions_ended".into(), ended: 1 })?;
    with_cookie(res, &cleared_cookie(s.state.use_cases.pages()))
}

/// Log out everywhere: ends every session of the user, this one included
/// (`X-CSRF-Token` required).
#[utoipa::path(
    tag = "dashboard",
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "The sessions ended", body = crate::wire::dashboard::SessionsEndedEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[delete("/dashboard/sessions")]
pub async fn end_all_sessions(s: DashboardSession) -> Result<HttpResponse, ApiError> {
    let ended = s.state.use_cases.accounts().logout_everywhere(&s.current.user).await?;
    let res = ok(StatusCode::OK, &SessionsEndedOut { object: "sessions_ended".into(), ended })?;
    with_cookie(res, &cleared_cookie(s.state.use_cases.pages()))
}
