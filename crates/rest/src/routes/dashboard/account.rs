//! Accounts without a session: open sign-up, password reset, email verification and accepting
//! an invitation; with one: a new verification link and a password change. The answers to
//! sign-up and reset requests are the same whether or not the email has an account.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, post, web};
use stablepay_domain::account::service::links::{Acceptance, Signup};
use stablepay_domain::account::service::sign_in::Confirmation;
use stablepay_http::error::ApiError;
use stablepay_http::ratelimit::client_of;
use stablepay_http::respond::ok;
use stablepay_http::session::account_email_quota;
use stablepay_http::state::AppState;

use crate::json::ApiJson;
use crate::routes::dashboard::answer::{session_answer, signed_in};
use crate::session::DashboardSession;
use crate::wire::accounts::{
    AcceptIn, EmailSentOut, LinkUsedOut, PasswordChangeIn, ResetConfirmIn, ResetRequestIn, SignupIn, TokenIn,
};

fn sent(object: &str, email: String, next: &str) -> Result<HttpResponse, ApiError> {
    ok(StatusCode::ACCEPTED, &EmailSentOut { object: object.into(), email, next: next.into() })
}

/// Sign up (`STABLEPAY_SIGNUP=open`): a new merchant owned by a new account, and an email to
/// verify the address. An email that has an account gets an email saying so (with a reset
/// link) instead; the answer is the same. Then sign in (test mode until the email is verified).
#[utoipa::path(
    tag = "dashboard",
    request_body = SignupIn,
    responses((status = 202, description = "The email is on its way", body = crate::wire::accounts::EmailSentEnvelope), crate::wire::common::Errors),
    security(())
)]
#[post("/dashboard/signup")]
pub async fn signup(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: ApiJson<SignupIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let email = account_email_quota(&req, &state, &b.email).await?;
    let s = Signup { email: &b.email, password: &b.password, name: &b.name, business_name: &b.business_name };
    state.use_cases.accounts().signup(s).await?;
    sent("signup", email, "Follow the link in the email to verify the address; you can sign in now.")
}

/// Ask for a password reset: an email with a link (1 hour) goes to the address if it has an
/// account; the answer is the same either way.
#[utoipa::path(
    tag = "dashboard",
    request_body = ResetRequestIn,
    responses((status = 202, description = "The email is on its way, if the address has an account", body = crate::wire::accounts::EmailSentEnvelope), crate::wire::common::Errors),
    security(())
)]
#[post("/dashboard/password-resets")]
pub async fn request_reset(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: ApiJson<ResetRequestIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let email = account_email_quota(&req, &state, &b.email).await?;
    state.use_cases.accounts().request_password_reset(&email).await?;
    sent("password_reset", email, "If the address has an account, an email with a link is on its way.")
}

/// Set a new password with the emailed link: the link is used up, and every session of the
/// account ends (sign in again).
#[utoipa::path(
    tag = "dashboard",
    request_body = ResetConfirmIn,
    responses((status = 200, description = "The password is set", body = crate::wire::accounts::LinkUsedEnvelope), crate::wire::common::Errors),
    security(())
)]
#[post("/dashboard/password-resets/confirm")]
pub async fn confirm_reset(
    state: web::Data<AppState>,
    body: ApiJson<ResetConfirmIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    state.use_cases.accounts().reset_password(&b.token, &b.password).await?;
    ok(StatusCode::OK, &LinkUsedOut { object: "password_reset".into(), done: true })
}

/// Verify the email with the emailed link (24 hours): live mode opens to the account.
#[utoipa::path(
    tag = "dashboard",
    request_body = TokenIn,
    responses((status = 200, description = "The email is verified", body = crate::wire::accounts::LinkUsedEnvelope), crate::wire::common::Errors),
    security(())
)]
#[post("/dashboard/email-verifications/confirm")]
pub async fn confirm_verification(
    state: web::Data<AppState>,
    body: ApiJson<TokenIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    state.use_cases.accounts().verify_email(&b.token).await?;
    ok(StatusCode::OK, &LinkUsedOut { object: "email_verification".into(), done: true })
}

/// Send a new verification link to the signed-in user (earlier links stop working).
#[utoipa::path(
    tag = "dashboard",
    params(crate::openapi::parameters::Csrf),
    responses((status = 202, description = "The email is on its way", body = crate::wire::accounts::EmailSentEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/email-verifications")]
pub async fn resend_verification(req: HttpRequest, s: DashboardSession) -> Result<HttpResponse, ApiError> {
    let email = account_email_quota(&req, &s.state, &s.current.user.email).await?;
    s.state.use_cases.accounts().resend_verification(&s.current).await?;
    sent("email_verification", email, "Follow the link in the email to verify the address.")
}

/// Accept an invitation with its emailed link: a new account (name and password), or what
/// login demands of the invited email's account (its password, and `otp` with two-factor login,
/// within the login quotas); then the membership and a new session.
#[utoipa::path(
    tag = "dashboard",
    request_body = AcceptIn,
    responses((status = 201, description = "The session; Set-Cookie: stablepay_session", body = crate::wire::dashboard::SessionEnvelope), crate::wire::common::Errors),
    security(())
)]
#[post("/dashboard/invitations/accept")]
pub async fn accept_invitation(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: ApiJson<AcceptIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let client = client_of(&req, &state);
    let (otp, client) = (b.otp.as_deref(), Some(client.as_str()));
    let a = Acceptance { token: &b.token, name: b.name.as_deref(), password: &b.password, otp, client };
    let signed = state.use_cases.accounts().accept_invitation(a).await?;
    signed_in(&state, StatusCode::CREATED, &signed)
}

/// Change the password (the current one confirms it, with a code under two-factor login unless
/// the session re-authenticated in the last 5 minutes; failures count in the login quota):
/// every other session ends, and this one gets a new cookie.
#[utoipa::path(
    tag = "dashboard",
    request_body = PasswordChangeIn,
    params(crate::openapi::parameters::Csrf),
    responses((status = 200, description = "The session, with a new cookie and CSRF token", body = crate::wire::dashboard::SessionEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/password")]
pub async fn change_password(s: DashboardSession, body: ApiJson<PasswordChangeIn>) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mut current) = (body, s.current);
    let confirmation = Confirmation { password: &b.current_password, otp: b.otp.as_deref() };
    let token = s.state.use_cases.accounts().change_password(&mut current, confirmation, &b.new_password).await?;
    session_answer(&s.state, StatusCode::OK, &current, &token)
}
