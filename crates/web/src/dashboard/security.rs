//! Security: the member's two-factor login (enrol with a QR code and a code, then the recovery
//! codes shown once; or turn it off with the password and a code), whether the merchant requires
//! it of everyone, the password, signing out everywhere, and the audit log. Through the same
//! account use cases as `/v1/dashboard/...`; a privilege change (two-factor login on, a new
//! password) renews the session's token, so the answer sets the new cookie.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, post, web};
use maud::{Markup, PreEscaped, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::account::service::sign_in::Confirmation;
use stablepay_domain::account::service::two_factor::Enrolment;
use stablepay_domain::ids::PublicToken;
use stablepay_http::session::{cleared_cookie, session_cookie, with_cookie};
use stablepay_http::state::AppState;

use super::form::{Failed, Posted, Refusal, alert, form, input_in, posted, reauthenticated, reauthentication_fields};
use super::frame::{Pairs, Place, SECURITY, SETTINGS, next_link, place, refused, render};
use crate::page::{see_other, when};

const PATH: &str = SECURITY;
const AUDIT: &str = "/dashboard/settings/audit-log";

/// What a security answer shows besides the page: an enrolment to confirm, or recovery codes.
enum Shown {
    Nothing,
    Enrolling(Enrolment),
    RecoveryCodes(Vec<String>),
}

/// The security page.
#[get("/dashboard/settings/security")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    page(&state, &p, (StatusCode::OK, Shown::Nothing, None)).await
}

async fn page(state: &AppState, p: &Place, (status, shown, failed): (StatusCode, Shown, Failed<'_>)) -> HttpResponse {
    let left = match p.current.user.two_factor_since {
        Some(_) => state.use_cases.accounts().recovery_codes_left(&p.current.user).await.ok(),
        None => None,
    };
    let refusal = |action: &str| failed.filter(|f| f.0 == action).map(|f| f.1);
    let me = p.current.membership(&p.scope.merchant_id).map(|m| m.requires_two_factor).unwrap_or(false);
    let main = html! {
        h1 { "Security" }
        p { a href=(p.url(SETTINGS, &[])) { "Back to the settings" } }
        h2 { "Your two-factor login" }
        @match (&shown, p.current.user.two_factor_since) {
            (Shown::Enrolling(e), _) => (enrolment(state, p, e, refusal("confirm"))),
            (Shown::RecoveryCodes(codes), _) => section.state.warn role="status" {
                h3 { "Two-factor login is on" }
                p { "Keep these recovery codes somewhere safe: each replaces a code once, and they are shown only now." }
                ul.codes { @for c in codes { li { code { (c) } } } }
            },
            (Shown::Nothing, Some(since)) => {
                p { "On since " (when(since)) ". Recovery codes left: " (left.unwrap_or(0)) "." }
                (form(p, state, &p.url(&format!("{PATH}/two-factor/disable"), &[]), html! {
                    (alert(refusal("disable"), &["password", "otp"]))
                    (input_in("disable", "password", "Your password", ("password", ""), refusal("disable")))
                    (input_in("disable", "otp", "A code of your authenticator", ("text", ""), refusal("disable")))
                    button type="submit" { "Turn two-factor login off" }
                }))
            },
            (Shown::Nothing, None) => (form(p, state, &p.url(&format!("{PATH}/two-factor"), &[]), html! {
                (alert(refusal("start"), &["password"]))
                p { "Sign-in asks for a code of an authenticator app as well as your password." }
                (reauthentication_fields(state, p, "start", refusal("start")))
                button.primary type="submit" { "Turn on two-factor login" }
            })),
        }
        @if p.can(Action::ManageSecurity) {
            h2 { "Require two-factor login of every member" }
            (form(p, state, &p.url(&format!("{PATH}/require"), &[]), html! {
                (alert(refusal("require"), &[]))
                input type="hidden" name="on" value=(if me { "off" } else { "on" });
                p { "Now: " strong { (if me { "required" } else { "optional" }) } }
                button type="submit" { (if me { "Make it optional" } else { "Require it" }) }
            }))
        }
        h2 { "Password" }
        (form(p, state, &p.url(&format!("{PATH}/password"), &[]), html! {
            (alert(refusal("password"), &["currentPassword", "newPassword", "otp"]))
            (input_in("password", "currentPassword", "Current password", ("password", ""), refusal("password")))
            (input_in("password", "newPassword", "New password (15 to 128 characters)", ("password", ""), refusal("password")))
            @if p.current.user.two_factor_since.is_some() && state.use_cases.accounts().require_recent(&p.current).is_err() {
                (input_in("password", "otp", "A code of your authenticator", ("text", ""), refusal("password")))
            }
            button type="submit" { "Change the password" }
        }))
        h2 { "Sessions" }
        (form(p, state, &p.url(&format!("{PATH}/sessions/end"), &[]), html! {
            p { "Signs you out on every device, this one included." }
            button type="submit" { "Sign out everywhere" }
        }))
        @if p.can(Action::ReadAuditLog) { p { a href=(p.url(AUDIT, &[])) { "The audit log" } } }
    };
    render(p, (SETTINGS, "Security"), status, main)
}

fn enrolment(state: &AppState, p: &Place, e: &Enrolment, refusal: Option<&Refusal>) -> Markup {
    let qr = stablepay_http::qr::svg(&e.uri).unwrap_or_default();
    html! {
        p { "Scan the code with an authenticator app, or type the key, then enter the code it shows." }
        figure.qr role="img" aria-label="QR code of the two-factor key" { (PreEscaped(qr)) }
        p { "Key: " code.hash #totp-secret { (e.secret) } }
        (form(p, state, &p.url(&format!("{PATH}/two-factor/confirm"), &[]), html! {
            (alert(refusal, &["otp"]))
            (input_in("confirm", "otp", "The code your app shows", ("text", ""), refusal))
            button.primary type="submit" { "Confirm" }
        }))
    }
}

/// The page again with a refusal of `action`.
async fn refused_on(state: &AppState, posted: &Posted, action: &str, e: Error) -> HttpResponse {
    let refusal = Refusal::of(e);
    page(state, &posted.place, (refusal.status, Shown::Nothing, Some((action, &refusal, &posted.form)))).await
}

/// An answer with the session's renewed cookie.
fn renewed(state: &AppState, res: HttpResponse, token: &PublicToken) -> HttpResponse {
    let settings = state.use_cases.accounts().settings.sessions;
    let cookie = session_cookie(token, state.use_cases.pages(), settings.absolute.num_seconds());
    with_cookie(res, &cookie).unwrap_or_else(|e| e.error_response())
}

/// Starts enrolment: the QR code and the key, and the form for the first code.
#[post("/dashboard/settings/security/two-factor")]
pub async fn start(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let mut posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    if let Err(e) = reauthenticated(&state, &mut posted).await {
        return refused_on(&state, &posted, "start", e).await;
    }
    match state.use_cases.accounts().start_two_factor(&posted.place.current).await {
        Ok(e) => page(&state, &posted.place, (StatusCode::OK, Shown::Enrolling(e), None)).await,
        Err(e) => refused_on(&state, &posted, "start", e).await,
    }
}

/// Confirms enrolment with a code: the recovery codes, once, and a renewed session.
#[post("/dashboard/settings/security/two-factor/confirm")]
pub async fn confirm(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let mut posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let otp = posted.form.text("otp").trim().to_owned();
    match state.use_cases.accounts().confirm_two_factor(&mut posted.place.current, &otp).await {
        Ok(done) => {
            let res =
                page(&state, &posted.place, (StatusCode::OK, Shown::RecoveryCodes(done.recovery_codes), None)).await;
            renewed(&state, res, &done.token)
        }
        Err(e) => refused_on(&state, &posted, "confirm", e).await,
    }
}

/// Turns two-factor login off with the password and a code.
#[post("/dashboard/settings/security/two-factor/disable")]
pub async fn disable(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let mut posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let (password, otp) = (posted.form.text("password").to_owned(), posted.form.text("otp").trim().to_owned());
    match state.use_cases.accounts().disable_two_factor(&mut posted.place.current, &password, &otp).await {
        Ok(()) => see_other(&posted.place.url(PATH, &[])),
        Err(e) => refused_on(&state, &posted, "disable", e).await,
    }
}

/// Requires two-factor login of every member, or makes it optional.
#[post("/dashboard/settings/security/require")]
pub async fn require(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let on = posted.form.text("on") == "on";
    let (current, merchant) = (&posted.place.current, &posted.place.scope.merchant_id);
    match state.use_cases.accounts().set_require_two_factor(current, merchant, on).await {
        Ok(()) => see_other(&posted.place.url(PATH, &[])),
        Err(e) => refused_on(&state, &posted, "require", e).await,
    }
}

/// Changes the password: the other sessions end, this one is renewed.
#[post("/dashboard/settings/security/password")]
pub async fn change_password(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let mut posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let (old, new) = (posted.form.text("currentPassword").to_owned(), posted.form.text("newPassword").to_owned());
    let otp = posted.form.get("otp").map(str::trim).filter(|o| !o.is_empty()).map(str::to_owned);
    let confirmation = Confirmation { password: &old, otp: otp.as_deref() };
    match state.use_cases.accounts().change_password(&mut posted.place.current, confirmation, &new).await {
        Ok(token) => renewed(&state, see_other(&posted.place.url(PATH, &[])), &token),
        Err(e) => refused_on(&state, &posted, "password", e).await,
    }
}

/// Ends every session of the member, then the sign-in page.
#[post("/dashboard/settings/security/sessions/end")]
pub async fn end_sessions(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::Read).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    match state.use_cases.accounts().logout_everywhere(&posted.place.current.user).await {
        Ok(_) => with_cookie(see_other("/dashboard/login"), &cleared_cookie(state.use_cases.pages()))
            .unwrap_or_else(|e| e.error_response()),
        Err(e) => refused(e),
    }
}

/// The audit log, newest first, paged.
#[get("/dashboard/settings/audit-log")]
pub async fn audit_log(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::ReadAuditLog).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let listed = match state.use_cases.accounts().audit_log(&p.current, &p.scope.merchant_id, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|e| e.id.as_str())).flatten();
    let main = html! {
        h1 { "Audit log" }
        p { a href=(p.url(SETTINGS, &[])) { "Back to the settings" } }
        div.table-wrap tabindex="0" role="region" aria-label="Audit log" { table.audit.cards {
            thead { tr { th { "When" } th { "Who" } th { "What" } th { "Whom" } th { "Detail" } } }
            tbody {
                @for e in &listed.items {
                    tr {
                        td data-label="When" { (when(e.at)) }
                        td data-label="Who" { (e.actor_email.as_deref().unwrap_or("the operator")) }
                        td data-label="What" { (e.action.as_str().replace(['.', '_'], " ")) }
                        td data-label="Whom" { (e.target.as_deref().unwrap_or("")) }
                        td data-label="Detail" { (e.detail) }
                    }
                }
            }
        } }
        (next_link(&p, AUDIT, last, &[]))
    };
    render(&p, (SETTINGS, "Audit log"), StatusCode::OK, main)
}
