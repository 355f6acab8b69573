//! Two-factor login of the signed-in user: its state, enrolment (a secret shown once with its
//! QR code, confirmed by a code, then ten recovery codes shown once), and turning it off.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post};
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;

use crate::json::ApiJson;
use crate::routes::dashboard::answer::with_cookie;
use crate::session::{DashboardSession, session_cookie};
use crate::wire::accounts::{DisableIn, EnrolledOut, EnrolmentOut, OtpIn, TwoFactorOut};

/// The signed-in user's two-factor state.
#[utoipa::path(
    tag = "dashboard",
    responses((status = 200, description = "The two-factor state", body = crate::wire::accounts::TwoFactorEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/two-factor")]
pub async fn get_two_factor(s: DashboardSession) -> Result<HttpResponse, ApiError> {
    let left = s.state.use_cases.accounts().recovery_codes_left(&s.current.user).await?;
    let enabled = s.current.user.two_factor_since.is_some();
    ok(StatusCode::OK, &TwoFactorOut { object: "two_factor".into(), enabled, recovery_codes_left: left })
}

/// Begin enrolment: a new secret for the authenticator app, as text, URI and QR code (shown
/// once; a new call replaces it until it is confirmed).
#[utoipa::path(
    tag = "dashboard",
    params(crate::openapi::parameters::Csrf),
    responses((status = 201, description = "The secret to enrol", body = crate::wire::accounts::EnrolmentEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/two-factor")]
pub async fn start_two_factor(s: DashboardSession) -> Result<HttpResponse, ApiError> {
    let e = s.state.use_cases.accounts().start_two_factor(&s.current).await?;
    let qr = stablepay_http::qr::svg(&e.uri).ok_or_else(ApiError::internal)?;
    ok(
        StatusCode::CREATED,
        &EnrolmentOut { object: "two_factor_enrolment".into(), secret: e.secret, otpauth_uri: e.uri, qr_code_svg: qr },
    )
}

/// Confirm enrolment with a code of the new secret: two-factor login is on, the ten recovery
/// codes are answered (once), and the session gets a new cookie and CSRF token.
#[utoipa::path(
    tag = "dashboard",
    request_body = OtpIn,
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "On, with the recovery codes; Set-Cookie: stablepay_session", body = crate::wire::accounts::EnrolledEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/two-factor/confirm")]
pub async fn confirm_two_factor(s: DashboardSession, body: ApiJson<OtpIn>) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mut current) = (body, s.current);
    let accounts = s.state.use_cases.accounts();
    let enrolled = accounts.confirm_two_factor(&mut current, &b.otp).await?;
    let out = EnrolledOut { object: "two_factor".into(), enabled: true, recovery_codes: enrolled.recovery_codes };
    let res = ok(StatusCode::OK, &out)?;
    let max_age = accounts.settings.sessions.absolute.num_seconds();
    with_cookie(res, &session_cookie(&enrolled.token, s.state.use_cases.pages(), max_age))
}

/// Turn two-factor login off, with the password and a code (or a recovery code).
#[utoipa::path(
    tag = "dashboard",
    request_body = DisableIn,
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "Off", body = crate::wire::accounts::TwoFactorEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/two-factor/disable")]
pub async fn disable_two_factor(s: DashboardSession, body: ApiJson<DisableIn>) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mut current) = (body, s.current);
    s.state.use_cases.accounts().disable_two_factor(&mut current, &b.password, &b.otp).await?;
    ok(StatusCode::OK, &TwoFactorOut { object: "two_factor".into(), enabled: false, recovery_codes_left: 0 })
}
