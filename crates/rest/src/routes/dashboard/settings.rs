//! A merchant's self-service settings: where live mode stands, the settlement wallet (owners,
//! confirmed with the password, and a code with two-factor login), the live activation request, and the signed-in
//! member's webhook alert emails.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, get, post, put, web};
use stablepay_domain::account::service::settings::Confirmation;
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;

use crate::json::ApiJson;
use crate::routes::dashboard::team::merchant;
use crate::session::DashboardSession;
use crate::wire::accounts::{NotificationsIn, NotificationsOut, SettlementOut, WalletIn};

/// Where live mode stands: the live settlement once activated, or the wallet chosen and the
/// activation request before.
#[utoipa::path(
    tag = "dashboard",
    params(("merchantId" = String, Path, description = "A merchant the user is a member of")),
    responses((status = 200, description = "Where live mode stands", body = crate::wire::accounts::SettlementEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/merchants/{merchantId}/settlement")]
pub async fn get_settlement(s: DashboardSession, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let mer = merchant(&path)?;
    let status = s.state.use_cases.accounts().live_status(&s.current, &mer).await?;
    ok(StatusCode::OK, &SettlementOut::of(&mer, &status))
}

/// Set the settlement wallet (owners; confirmed with `password`, and with two-factor login an
/// `otp` too): the live settlement's when active, else the one activation will use. Every owner
/// is emailed.
#[utoipa::path(
    tag = "dashboard",
    request_body = WalletIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("X-CSRF-Token" = String, Header, description = "The session's csrfToken"),
    ),
    responses((status = 200, description = "Where live mode stands", body = crate::wire::accounts::SettlementEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[put("/dashboard/merchants/{merchantId}/settlement-wallet")]
pub async fn set_settlement_wallet(
    s: DashboardSession,
    path: web::Path<String>,
    body: ApiJson<WalletIn>,
) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mer) = (body, merchant(&path)?);
    let accounts = s.state.use_cases.accounts();
    let confirmation = Confirmation { password: &b.password, otp: b.otp.as_deref() };
    accounts.set_settlement_wallet(&s.current, &mer, (&b.wallet, &b.token), confirmation).await?;
    let status = accounts.live_status(&s.current, &mer).await?;
    ok(StatusCode::OK, &SettlementOut::of(&mer, &status))
}

/// Ask for live activation with the chosen wallet (owners): activated at once where the
/// operator allows self-activation, else waiting for the operator. Before a wallet is set:
/// DEFAULT_WALLET_REQUIRED.
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("X-CSRF-Token" = String, Header, description = "The session's csrfToken"),
    ),
    responses((status = 200, description = "Where live mode stands", body = crate::wire::accounts::SettlementEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/merchants/{merchantId}/live-activation")]
pub async fn request_live_activation(s: DashboardSession, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let mer = merchant(&path)?;
    let status = s.state.use_cases.accounts().request_live_activation(&s.current, &mer).await?;
    ok(StatusCode::OK, &SettlementOut::of(&mer, &status))
}

/// The signed-in member's own webhook alert emails, on or off.
#[utoipa::path(
    tag = "dashboard",
    request_body = NotificationsIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("X-CSRF-Token" = String, Header, description = "The session's csrfToken"),
    ),
    responses((status = 200, description = "The member's notifications", body = crate::wire::accounts::NotificationsEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[put("/dashboard/merchants/{merchantId}/notifications")]
pub async fn set_notifications(
    s: DashboardSession,
    path: web::Path<String>,
    body: ApiJson<NotificationsIn>,
) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mer) = (body, merchant(&path)?);
    s.state.use_cases.accounts().set_webhook_alerts(&s.current, &mer, b.webhook_alerts).await?;
    let out = NotificationsOut {
        object: "notifications".into(),
        merchant_id: mer.to_string(),
        webhook_alerts: b.webhook_alerts,
    };
    ok(StatusCode::OK, &out)
}
