//! A merchant's team, seen and changed by its members as their roles allow: members, roles
//! (the last owner stays), invitations, the two-factor requirement, and the audit log. Another
//! merchant's id answers NOT_FOUND.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, delete, get, patch, post, put, web};
use stablepay_domain::account::Role;
use stablepay_domain::account::members::MembershipChange;
use stablepay_domain::ids::{AccountLinkId, MerchantId, UserId};
use stablepay_domain::{Error, Resource};
use stablepay_http::error::ApiError;
use stablepay_http::respond::ok;

use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::session::DashboardSession;
use crate::wire::accounts::{
    AuditEntryOut, InvitationIn, InvitationOut, InvitationsOut, MemberOut, MembersOut, MembershipChangedOut, RoleIn,
    SecurityIn, SecurityOut,
};
use crate::wire::common::ListOut;

/// The merchant a dashboard path names (an id that is none is not found).
pub(crate) fn merchant(id: &str) -> Result<MerchantId, Error> {
    MerchantId::parse(id).ok_or(Error::NotFound(Resource::Merchant))
}

fn role(text: &str) -> Result<Role, Error> {
    Role::parse(text).ok_or_else(|| Error::validation("role", "must be owner, admin, developer, support or viewer"))
}

/// The merchant's members with their roles.
#[utoipa::path(
    tag = "dashboard",
    params(("merchantId" = String, Path, description = "A merchant the user is a member of")),
    responses((status = 200, description = "The members", body = crate::wire::accounts::MembersEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/merchants/{merchantId}/members")]
pub async fn list_members(s: DashboardSession, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let members = s.state.use_cases.accounts().members(&s.current, &merchant(&path)?).await?;
    ok(StatusCode::OK, &MembersOut { items: members.iter().map(MemberOut::of).collect() })
}

/// Change a member's role (an owner's role, or making an owner, needs an owner; the last owner
/// keeps theirs).
#[utoipa::path(
    tag = "dashboard",
    request_body = RoleIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("userId" = String, Path, description = "The member"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "The membership", body = crate::wire::accounts::MembershipChangedEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[patch("/dashboard/merchants/{merchantId}/members/{userId}")]
pub async fn change_member(
    s: DashboardSession,
    path: web::Path<(String, String)>,
    body: ApiJson<RoleIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let change = MembershipChange::SetRole(role(&b.role)?);
    membership_change(&s, &path, change).await
}

/// Remove a member (or leave: a member may always remove themself, the last owner excepted).
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("userId" = String, Path, description = "The member"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "The membership ended", body = crate::wire::accounts::MembershipChangedEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[delete("/dashboard/merchants/{merchantId}/members/{userId}")]
pub async fn remove_member(s: DashboardSession, path: web::Path<(String, String)>) -> Result<HttpResponse, ApiError> {
    membership_change(&s, &path, MembershipChange::Remove).await
}

async fn membership_change(
    s: &DashboardSession,
    (merchant_id, user_id): &(String, String),
    change: MembershipChange,
) -> Result<HttpResponse, ApiError> {
    let mer = merchant(merchant_id)?;
    let user = UserId::parse(user_id).ok_or(Error::NotFound(Resource::Member))?;
    let m = s.state.use_cases.accounts().change_member(&s.current, &mer, &user, change).await?;
    let role = match change {
        MembershipChange::SetRole(_) => Some(m.role.as_str().to_owned()),
        MembershipChange::Remove => None,
    };
    let out = MembershipChangedOut {
        object: "membership".into(),
        user_id: user.to_string(),
        merchant_id: mer.to_string(),
        role,
    };
    ok(StatusCode::OK, &out)
}

/// Invite someone by email with a role (7 days; inviting the same email again replaces the
/// earlier link).
#[utoipa::path(
    tag = "dashboard",
    request_body = InvitationIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 201, description = "The invitation; its email is on its way", body = crate::wire::accounts::InvitationEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[post("/dashboard/merchants/{merchantId}/invitations")]
pub async fn create_invitation(
    s: DashboardSession,
    path: web::Path<String>,
    body: ApiJson<InvitationIn>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(b, _) = body;
    let link = s.state.use_cases.accounts().invite(&s.current, &merchant(&path)?, &b.email, role(&b.role)?).await?;
    ok(StatusCode::CREATED, &InvitationOut::of(&link))
}

/// The merchant's open invitations (neither accepted, revoked nor expired), newest first.
#[utoipa::path(
    tag = "dashboard",
    params(("merchantId" = String, Path, description = "A merchant the user is a member of")),
    responses((status = 200, description = "The open invitations", body = crate::wire::accounts::InvitationsEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/merchants/{merchantId}/invitations")]
pub async fn list_invitations(s: DashboardSession, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let open = s.state.use_cases.accounts().invitations(&s.current, &merchant(&path)?).await?;
    ok(StatusCode::OK, &InvitationsOut { items: open.iter().map(InvitationOut::of).collect() })
}

/// Revoke an open invitation: its link stops working.
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        ("invitationId" = String, Path, description = "The invitation"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "Revoked", body = crate::wire::accounts::InvitationsEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[delete("/dashboard/merchants/{merchantId}/invitations/{invitationId}")]
pub async fn revoke_invitation(
    s: DashboardSession,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, ApiError> {
    let mer = merchant(&path.0)?;
    let id = AccountLinkId::parse(&path.1).ok_or(Error::NotFound(Resource::Invitation))?;
    let accounts = s.state.use_cases.accounts();
    accounts.revoke_invitation(&s.current, &mer, &id).await?;
    let open = accounts.invitations(&s.current, &mer).await?;
    ok(StatusCode::OK, &InvitationsOut { items: open.iter().map(InvitationOut::of).collect() })
}

/// Require (or not) two-factor login of every member (an owner who has it on themself).
#[utoipa::path(
    tag = "dashboard",
    request_body = SecurityIn,
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Csrf,
    ),
    responses((status = 200, description = "The security settings", body = crate::wire::accounts::SecurityEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[put("/dashboard/merchants/{merchantId}/security")]
pub async fn set_security(
    s: DashboardSession,
    path: web::Path<String>,
    body: ApiJson<SecurityIn>,
) -> Result<HttpResponse, ApiError> {
    let (ApiJson(b, _), mer) = (body, merchant(&path)?);
    s.state.use_cases.accounts().set_require_two_factor(&s.current, &mer, b.require_two_factor).await?;
    let out = SecurityOut {
        object: "security_settings".into(),
        merchant_id: mer.to_string(),
        require_two_factor: b.require_two_factor,
    };
    ok(StatusCode::OK, &out)
}

/// The merchant's audit log, newest first: sign-ins, password and two-factor changes of its
/// members, invitations, role changes, removals and security settings.
#[utoipa::path(
    tag = "dashboard",
    params(
        ("merchantId" = String, Path, description = "A merchant the user is a member of"),
        crate::openapi::parameters::Paging,
    ),
    responses((status = 200, description = "A page of the audit log", body = crate::wire::accounts::AuditLogEnvelope), crate::wire::common::Errors),
    security(("session" = []))
)]
#[get("/dashboard/merchants/{merchantId}/audit-log")]
pub async fn audit_log(
    req: HttpRequest,
    s: DashboardSession,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let page = QueryParams::parse(&req, &["limit", "startingAfter"])?.page()?;
    let result = s.state.use_cases.accounts().audit_log(&s.current, &merchant(&path)?, &page).await?;
    ok(StatusCode::OK, &ListOut::new(result, |e| e.id.to_string(), AuditEntryOut::from))
}
