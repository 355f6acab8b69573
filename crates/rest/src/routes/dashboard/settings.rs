//! A merchant's self-service settings: where live mode stands, the settlement wallet (owners,
//! confirmed with the password, and a code with two-factor login), the live activation request, and the signed-in
//! member's webhook alert emails.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, put, web};
use stablepay_domain::account::service::sign_in::Confirmation;
use stablepay_domain::ids::{CheckoutSessionId, UnattributedTransferId};
use stablepay_domain::invoice::model::Acting;
use stablepay_domain::use_cases::Context;
use stablepay_domain::{Error, Mode, Resource, Scope};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::respond::ok;

use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::routes::dashboard::team::merchant;
use crate::session::DashboardSession;
use crate::wire::accounts::{
    DashboardAttributeIn, NotificationsIn, NotificationsOut, SettlementOut, UniqueAmountsIn, UniqueAmountsOut, WalletIn,
};
use crate::wire::common::ListOut;
use crate::wire::events::UnattributedTransferOut;

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
        crate::openapi::parameters::Csrf,
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
    let (ApiJson(b, _), mer, mut current) = (body, merchant(&path)?, s.current);
    let accounts = s.state.use_cases.accounts();
    let confirmation = Confirmation { password: &b.password, otp: b.otp.as_deref() };
    accounts.set_settlement_wallet(&mut current, &mer, (&b.wallet, &b.token), confirmation).await?;
    let status = accounts.live_status(&current, &mer).await?;
    ok(StatusCode::OK, &SettlementOut::of(&mer, &status))
}

/// Ask for live activation with the chosen wallet (owners): activated at once where the
/// operator allows self-activation, else waiting for the operator. Before a wallet is set:
/// DEFAULT_WALLET_REQUIRED.
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Csrf,
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
        crate::openapi::parameters::Csrf,
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

/// Turn unique amounts on or off for the merchant's new live checkouts (owners and admins,
/// `manage_unique_amounts`): each then asks a few base units more than it collects, so that
/// every transfer sent without its hash is attributable by its amount alone. Open checkouts
/// keep what they ask. Before live activation: ACTIVE_MERCHANT_REQUIRED.
#[utoipa::path(
    tag = "dashboard",
    request_body = UniqueAmountsIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "The setting now", body = crate::wire::accounts::UniqueAmountsEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[put("/dashboard/merchants/{merchantId}/unique-amounts")]
pub async fn set_unique_amounts(
    s: DashboardSession,
    path: web::Path<String>,
    body: ApiJson<UniqueAmountsIn>,
) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mer) = (body, merchant(&path)?);
    let enabled = s.state.use_cases.accounts().set_unique_amounts(&s.current, &mer, b.enabled).await?;
    ok(StatusCode::OK, &UniqueAmountsOut { object: "unique_amounts".into(), merchant_id: mer.to_string(), enabled })
}

/// The merchant's live transfers no checkout could be credited with, newest first: the open
/// ones by default (`status`: `open`, `attributed` or `all`), as `GET /v1/unattributed-transfers`.
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Paging,
        ("status" = Option<String>, Query, description = "open (the default), attributed or all"),
    ),
    responses((status = 200, description = "A page of unattributed transfers", body = crate::wire::events::UnattributedListEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/merchants/{merchantId}/unattributed-transfers")]
pub async fn dashboard_unattributed(
    req: HttpRequest,
    s: DashboardSession,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let read = (Mode::Live, stablepay_domain::account::Action::Read);
    let mer = s.state.use_cases.accounts().merchant_for(&s.current, &merchant(&path)?, read).await?;
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "status"])?;
    let status = crate::routes::events::unattributed_status(&params)?;
    let scope = Scope::new(mer.id, Mode::Live);
    let page = s.state.use_cases.follower().unattributed(&scope, status, &params.page()?).await?;
    ok(StatusCode::OK, &ListOut::new(page, |t| t.id.to_string(), UnattributedTransferOut::from))
}

/// Attribute a recorded transfer to a checkout of the merchant's live mode (owners and admins,
/// `attribute_transfers`, confirmed with `password`, and with two-factor login an `otp` too),
/// as `POST /v1/unattributed-transfers/{id}/attribute` does: credited once, the member named in
/// the invoice's activity and in the audit log.
#[utoipa::path(
    tag = "dashboard",
    request_body = DashboardAttributeIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("id" = String, Path, description = "Unattributed transfer id (utr_...)"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "The transfer, attributed", body = crate::wire::events::UnattributedEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/merchants/{merchantId}/unattributed-transfers/{id}/attribute")]
pub async fn dashboard_attribute(
    s: DashboardSession,
    path: web::Path<(String, String)>,
    body: ApiJson<DashboardAttributeIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let (mer, id) = path.into_inner();
    let mer = merchant(&mer)?;
    let accounts = s.state.use_cases.accounts();
    let confirmation = Confirmation { password: &b.password, otp: b.otp.as_deref() };
    let mut current = s.current.clone();
    accounts.confirm_attribution(&mut current, &mer, confirmation).await?;
    let id = UnattributedTransferId::parse(&id).ok_or(Error::NotFound(Resource::UnattributedTransfer))?;
    let session = CheckoutSessionId::parse(&b.checkout_session_id)
        .ok_or_else(|| ApiError::field(ErrorCode::NOT_FOUND, "checkoutSessionId", "No such checkout session."))?;
    let scope = Scope::new(mer.clone(), Mode::Live);
    let context = Context::new(s.state.use_cases.clock()).acting(Acting::Member(s.current.user.email.clone()));
    let follower = s.state.use_cases.within(context).follower();
    let (record, payment) = follower.attribute_by_hand(&scope, &id, &session, &b.reason).await?;
    let why = format!("{session} (payment {}): {}", payment.id, b.reason.trim());
    accounts.audit_attribution(&s.current, &mer, (record.id.as_str(), &why)).await?;
    ok(StatusCode::OK, &UnattributedTransferOut::from(record))
}
