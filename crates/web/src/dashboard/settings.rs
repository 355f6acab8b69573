//! Settings: the merchant (its live status, the settlement wallet confirmed with the password
//! and a code, the live activation request), the team (members and their roles, invitations),
//! the member's webhook incident alerts. Each change goes through the account use cases, which
//! apply the roles (what a role may not change is not offered), write the audit log in the
//! change's transaction, and email the owners where the rules say so. Two-factor login, the
//! password, sessions and the audit log are on the security page (`security`).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::account::capability::Role;
use stablepay_domain::account::members::MembershipChange;
use stablepay_domain::account::service::sign_in::Confirmation;
use stablepay_domain::ids::{AccountLinkId, UserId};
use stablepay_domain::mode::Mode;
use stablepay_http::state::AppState;

use super::form::{Failed, Posted, Work, alert, form, input_in, once, posted};
use super::frame::{Place, SECURITY, SETTINGS, place, refused, render};
use crate::page::{see_other, when};

const PATH: &str = SETTINGS;

/// The settings page.
#[get("/dashboard/settings")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let done = super::frame::Pairs::query(&req).get("done").map(str::to_owned);
    page(&state, &p, (StatusCode::OK, done.as_deref(), None)).await
}

async fn page(
    state: &AppState,
    p: &Place,
    (status, done, failed): (StatusCode, Option<&str>, Failed<'_>),
) -> HttpResponse {
    match sections(state, p, done, failed).await {
        Ok(main) => render(p, (PATH, "Settings"), status, main),
        Err(e) => refused(e),
    }
}

async fn sections(state: &AppState, p: &Place, done: Option<&str>, failed: Failed<'_>) -> Result<Markup, Error> {
    let accounts = state.use_cases.accounts();
    let merchant = &p.scope.merchant_id;
    let live = accounts.live_status(&p.current, merchant).await?;
    let members = accounts.members(&p.current, merchant).await?;
    let invitations =
        if p.can(Action::ManageMembers) { accounts.invitations(&p.current, merchant).await? } else { Vec::new() };
    let me = p.current.membership(merchant)?;
    Ok(html! {
        h1 { "Settings" }
        @if let Some(d) = done { p.state.ok role="status" { (d.replace('_', " ")) } }
        p { a href=(p.url(SECURITY, &[])) { "Security: two-factor login, password, sessions and the audit log" } }
        h2 { (p.merchant.name) }
        dl.facts {
            dt { "Live mode" }
            dd {
                @match &live.live {
                    Some(l) => { "active since " (when(l.activated_at)) ", settles " (l.token.symbol()) " to " code.hash { (l.wallet.as_str()) } },
                    None => @match &live.requested {
                        Some(r) if r.requested_at.is_some() => { "activation requested: " code.hash { (r.wallet.as_str()) } " (" (r.token.symbol()) ")" },
                        Some(r) => { "not active; wallet chosen: " code.hash { (r.wallet.as_str()) } },
                        None => "not active; choose a settlement wallet first",
                    },
                }
            }
        }
        @if p.can_in(Mode::Live, Action::ChangeSettlementWallet) {
            (wallet_form(state, p, failed))
        }
        @if let Some(l) = live.live.as_ref().filter(|_| p.can_in(Mode::Live, Action::ManageUniqueAmounts)) {
            h3 { "Unique amounts" }
            (form(p, state, &p.url(&format!("{PATH}/unique-amounts"), &[]), html! {
                (alert(failed.filter(|f| f.0 == "unique-amounts").map(|f| f.1), &[]))
                input type="hidden" name="on" value=(if l.unique_amounts { "off" } else { "on" });
                p { "Each new live checkout asks a few base units more than it collects (at most 0.000999), so every transfer sent without its transaction hash is matched to its checkout by its amount alone: " strong { (if l.unique_amounts { "on" } else { "off" }) } }
                button type="submit" { (if l.unique_amounts { "Turn unique amounts off" } else { "Turn unique amounts on" }) }
            }))
        }
        @if live.live.is_none() && p.can_in(Mode::Test, Action::ActivateLive) {
            (form(p, state, &p.url(&format!("{PATH}/activation"), &[]), html! {
                (alert(failed.filter(|f| f.0 == "activation").map(|f| f.1), &[]))
                button type="submit" { "Request live activation" }
            }))
        }
        h2 { "Webhook incident alerts" }
        (form(p, state, &p.url(&format!("{PATH}/alerts"), &[]), html! {
            input type="hidden" name="on" value=(if me.webhook_alerts { "off" } else { "on" });
            p { "Emails to you when a webhook endpoint starts failing and when it recovers: " strong { (if me.webhook_alerts { "on" } else { "off" }) } }
            button type="submit" { (if me.webhook_alerts { "Stop the alerts" } else { "Email me the alerts" }) }
        }))
        h2 { "Team" }
        (team(state, p, &members, failed))
        @if p.can(Action::ManageMembers) {
            h3 { "Invitations" }
            ul { @for i in &invitations {
                li {
                    (i.email) " · " (i.invitation.as_ref().map(|x| x.role.as_str()).unwrap_or("")) " · until " (when(i.expires_at))
                    (form(p, state, &p.url(&format!("{PATH}/invitations/{}/revoke", i.id), &[]), html! {
                        button type="submit" aria-label=(format!("Revoke the invitation of {}", i.email)) { "Revoke" }
                    }))
                }
            } }
            (invite_form(state, p, failed))
        }
    })
}

fn wallet_form(state: &AppState, p: &Place, failed: Failed<'_>) -> Markup {
    let failed = failed.filter(|f| f.0 == "wallet");
    let r = failed.map(|f| f.1);
    let typed = |name: &str| failed.map(|f| f.2.text(name).to_owned()).unwrap_or_default();
    form(
        p,
        state,
        &p.url(&format!("{PATH}/wallet"), &[]),
        html! {
            h3 { "Settlement wallet" }
            (alert(r, &["wallet", "password", "otp"]))
            (input_in("wallet", "wallet", "Wallet address (0x…)", ("text", &typed("wallet")), r))
            div.field {
                label for="wallet-token" { "Token" }
                select #wallet-token name="token" { option value="USDC" { "USDC" } option value="USDT" selected[typed("token") == "USDT"] { "USDT" } }
            }
            (input_in("wallet", "password", "Your password", ("password", ""), r))
            @if p.current.user.two_factor_since.is_some() { (input_in("wallet", "otp", "Two-factor code", ("text", ""), r)) }
            button type="submit" { "Change the wallet" }
        },
    )
}

fn team(
    state: &AppState,
    p: &Place,
    members: &[(stablepay_domain::account::model::Membership, stablepay_domain::account::model::User)],
    failed: Failed<'_>,
) -> Markup {
    let manage = p.can(Action::ManageMembers);
    html! {
        (alert(failed.filter(|f| f.0 == "member").map(|f| f.1), &[]))
        div.table-wrap tabindex="0" role="region" aria-label="Team" { table.team {
            thead { tr { th { "Member" } th { "Role" } th { "Two-factor" } @if manage { th { "Change" } } } }
            tbody {
                @for (m, u) in members {
                    tr {
                        td { (u.name) br; span.small { (u.email) } }
                        td { (m.role.as_str()) }
                        td { (if u.two_factor_since.is_some() { "on" } else { "off" }) }
                        @if manage {
                            td {
                                (form(p, state, &p.url(&format!("{PATH}/members/{}", m.user_id), &[]), html! {
                                    label.sr-only for=(format!("role-{}", m.user_id)) { "Role of " (u.email) }
                                    select id=(format!("role-{}", m.user_id)) name="role" {
                                        @for r in Role::ALL { option value=(r.as_str()) selected[r == m.role] { (r.as_str()) } }
                                        option value="remove" { "remove from the team" }
                                    }
                                    " " button type="submit" aria-label=(format!("Apply to {}", u.email)) { "Apply" }
                                }))
                            }
                        }
                    }
                }
            }
        } }
    }
}

fn invite_form(state: &AppState, p: &Place, failed: Failed<'_>) -> Markup {
    let failed = failed.filter(|f| f.0 == "invite");
    let r = failed.map(|f| f.1);
    let typed = |name: &str| failed.map(|f| f.2.text(name).to_owned()).unwrap_or_default();
    form(
        p,
        state,
        &p.url(&format!("{PATH}/invitations"), &[]),
        html! {
            h3 { "Invite someone" }
            (alert(r, &["email"]))
            (input_in("invite", "email", "Email", ("email", &typed("email")), r))
            div.field {
                label for="invite-role" { "Role" }
                select #invite-role name="role" {
                    @for role in Role::ALL { option value=(role.as_str()) selected[typed("role") == role.as_str() || (typed("role").is_empty() && role == Role::Viewer)] { (role.as_str()) } }
                }
            }
            button.primary type="submit" { "Send the invitation" }
        },
    )
}

/// The change a settings form asks for.
fn change(action: &str, posted: &Posted, target: Option<String>) -> Option<Change> {
    let f = &posted.form;
    Some(match action {
        "wallet" => Change::Wallet {
            wallet: f.text("wallet").trim().into(),
            token: f.text("token").into(),
            password: f.text("password").into(),
            otp: f.get("otp").map(str::to_owned),
        },
        "activation" => Change::Activation,
        "alerts" => Change::Alerts(f.text("on") == "on"),
        "unique-amounts" => Change::UniqueAmounts(f.text("on") == "on"),
        "invite" => Change::Invite { email: f.text("email").into(), role: f.text("role").into() },
        "member" => Change::Member { user: target?, role: f.text("role").into() },
        "revoke-invitation" => Change::RevokeInvitation(target?),
        _ => return None,
    })
}

enum Change {
    Wallet { wallet: String, token: String, password: String, otp: Option<String> },
    Activation,
    Alerts(bool),
    UniqueAmounts(bool),
    Invite { email: String, role: String },
    Member { user: String, role: String },
    RevokeInvitation(String),
}

/// Runs a settings change through its account use case; answers what the page says after it.
async fn apply(state: &AppState, p: &Place, change: Change) -> Result<&'static str, Error> {
    let accounts = state.use_cases.accounts();
    let (current, merchant) = (&p.current, &p.scope.merchant_id);
    match change {
        Change::Wallet { wallet, token, password, otp } => {
            let confirmation = Confirmation { password: &password, otp: otp.as_deref() };
            accounts
                .set_settlement_wallet(&mut current.clone(), merchant, (&wallet, &token), confirmation)
                .await
                .map(|_| "wallet_changed")
        }
        Change::Activation => {
            accounts.request_live_activation(current, merchant).await.map(|_| "live_activation_requested")
        }
        Change::Alerts(on) => accounts.set_webhook_alerts(current, merchant, on).await.map(|()| "alerts_changed"),
        Change::UniqueAmounts(on) => {
            accounts.set_unique_amounts(current, merchant, on).await.map(|_| "unique_amounts_changed")
        }
        Change::Invite { email, role } => {
            let role = Role::parse(&role).ok_or_else(|| Error::validation("role", "choose a role"))?;
            accounts.invite(current, merchant, &email, role).await.map(|_| "invitation_sent")
        }
        Change::Member { user, role } => {
            let user = UserId::parse(&user).ok_or(Error::NotFound(stablepay_domain::Resource::Member))?;
            let change = match role.as_str() {
                "remove" => MembershipChange::Remove,
                r => {
                    MembershipChange::SetRole(Role::parse(r).ok_or_else(|| Error::validation("role", "choose a role"))?)
                }
            };
            accounts.change_member(current, merchant, &user, change).await.map(|_| "team_changed")
        }
        Change::RevokeInvitation(id) => {
            let id = AccountLinkId::parse(&id).ok_or(Error::NotFound(stablepay_domain::Resource::Invitation))?;
            accounts.revoke_invitation(current, merchant, &id).await.map(|()| "invitation_revoked")
        }
    }
}

async fn submit(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
    (action, target): (&str, Option<String>),
) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let Some(change) = change(action, &posted, target) else {
        return refused(Error::NotFound(stablepay_domain::Resource::Merchant));
    };
    let settings = posted.place.url(PATH, &[]);
    let (s, again, place) = (state.clone(), settings.clone(), posted.place.clone());
    let work = move |_claim| {
        let work: Work = Box::pin(async move {
            let done = apply(&s, &place, change).await?;
            Ok(format!("{settings}&done={done}"))
        });
        work
    };
    match once(&state, (&posted, &req, &body), move |_| Some(again), work).await {
        Ok(location) => see_other(&location),
        Err(refusal) => {
            page(&state, &posted.place, (refusal.status, None, Some((action, &refusal, &posted.form)))).await
        }
    }
}

/// Changes the settlement wallet.
#[post("/dashboard/settings/wallet")]
pub async fn change_wallet(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, ("wallet", None)).await
}

/// Asks for live activation.
#[post("/dashboard/settings/activation")]
pub async fn activation(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, ("activation", None)).await
}

/// Turns the member's incident alerts on or off.
#[post("/dashboard/settings/alerts")]
pub async fn alerts(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, ("alerts", None)).await
}

/// Turns unique amounts on or off for new live checkouts.
#[post("/dashboard/settings/unique-amounts")]
pub async fn unique_amounts(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, ("unique-amounts", None)).await
}

/// Invites someone.
#[post("/dashboard/settings/invitations")]
pub async fn invite(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    submit(req, state, body, ("invite", None)).await
}

/// Revokes an invitation.
#[post("/dashboard/settings/invitations/{id}/revoke")]
pub async fn revoke_invitation(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    submit(req, state, body, ("revoke-invitation", Some(path.into_inner()))).await
}

/// Changes a member's role, or removes them.
#[post("/dashboard/settings/members/{id}")]
pub async fn member(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    submit(req, state, body, ("member", Some(path.into_inner()))).await
}
