//! The dashboard's account pages: sign in and out, the signed-in home, and the pages the
//! emailed links open (verify the email, choose a new password, accept an invitation) with the
//! forgotten-password form. Every form posts to its own path and goes through the same domain
//! use cases (and the same login quotas) as the JSON API. A link's page never uses its token on
//! GET, since mail scanners follow links: a button posts it.

use actix_web::ResponseError;
use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::link::SignupMode;
use stablepay_domain::account::model::{MAX_PASSWORD_CHARS, MIN_PASSWORD_CHARS};
use stablepay_domain::account::service::links::{Acceptance, Signup};
use stablepay_http::error::ApiError;
use stablepay_http::ratelimit::client_of;
use stablepay_http::session::{
    CSRF_FIELD, account_email_quota, check_csrf, cleared_cookie, current_session, session_cookie, throttled_login,
};
use stablepay_http::state::AppState;

use crate::page::{forbidden, page, same_origin, see_other};

/// A form's fields, as posted.
struct Form(Vec<(String, String)>);

impl Form {
    fn of(body: &[u8]) -> Self {
        Self(serde_urlencoded::from_bytes(body).unwrap_or_default())
    }

    fn get(&self, name: &str) -> &str {
        self.0.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }
}

/// The `token` of a link's query string.
fn token_of(req: &HttpRequest) -> String {
    let pairs: Vec<(String, String)> = serde_urlencoded::from_str(req.query_string()).unwrap_or_default();
    pairs.into_iter().find(|(k, _)| k == "token").map(|(_, v)| v).unwrap_or_default()
}

/// What a refusal says on a page: the domain's message, in a sentence.
fn in_words(e: &ApiError) -> String {
    let m = e.message.trim_end_matches('.');
    format!(
        "{}{}.",
        m.chars().next().map(|c| c.to_uppercase().to_string()).unwrap_or_default(),
        m.chars().skip(1).collect::<String>()
    )
}

/// A page whose answer carries a cookie (a page, never an error envelope: a cookie this
/// service made always fits a header).
fn with_cookie(res: HttpResponse, cookie: &str) -> HttpResponse {
    stablepay_http::session::with_cookie(res, cookie).unwrap_or_else(|e| e.error_response())
}

/// An account page: a heading, an optional message (a refusal, `role=alert`), then `body`.
fn account_page(status: StatusCode, title: &str, message: Option<&str>, body: Markup) -> HttpResponse {
    page(
        status,
        title,
        None,
        html! {
            h1 { (title) }
            @if let Some(m) = message {
                p.error role="alert" { (m) }
            }
            (body)
        },
    )
}

fn password_hint() -> String {
    format!("{MIN_PASSWORD_CHARS} to {MAX_PASSWORD_CHARS} characters; a passphrase of a few words is best.")
}

fn login_form(email: &str) -> Markup {
    html! {
        form method="post" action="/dashboard/login" {
            label for="email" { "Email" }
            input #email type="email" name="email" value=(email) autocomplete="username" required;
            label for="password" { "Password" }
            input #password type="password" name="password" autocomplete="current-password" required;
            label for="otp" { "Two-factor code (only if you turned it on)" }
            input #otp type="text" name="otp" inputmode="numeric" autocomplete="one-time-code";
            button type="submit" { "Sign in" }
        }
        p { a href="/dashboard/forgot-password" { "Forgot your password?" } }
    }
}

/// The sign-in page (a signed-in visitor goes to the dashboard).
#[get("/dashboard/login")]
pub async fn login_page(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if current_session(&req, &state).await.is_ok() {
        return see_other("/dashboard");
    }
    account_page(StatusCode::OK, "Sign in", None, login_form(""))
}

/// Signs in: the session cookie, then the dashboard; a refusal shows the form again with the
/// same words as the API's (a wrong email or password reads the same), and a closed quota its
/// `Retry-After`.
#[post("/dashboard/login")]
pub async fn login(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    let otp = Some(form.get("otp")).filter(|o| !o.trim().is_empty());
    match throttled_login(&req, &state, (form.get("email"), form.get("password"), otp)).await {
        Ok(signed) => {
            let settings = state.use_cases.accounts().settings.sessions;
            let cookie = session_cookie(&signed.token, state.use_cases.pages(), settings.absolute.num_seconds());
            with_cookie(see_other("/dashboard"), &cookie)
        }
        Err(e) => {
            let mut res = account_page(e.code.status(), "Sign in", Some(&in_words(&e)), login_form(form.get("email")));
            for (name, value) in e.headers() {
                if let (Ok(n), Ok(v)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                    res.headers_mut().insert(n, v);
                }
            }
            res
        }
    }
}

/// Signs out (the form carries the session's CSRF token), then the sign-in page.
#[post("/dashboard/logout")]
pub async fn logout(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let Ok(current) = current_session(&req, &state).await else { return see_other("/dashboard/login") };
    let form = Form::of(&body);
    if check_csrf(&req, &current, state.use_cases.pages(), Some(form.get(CSRF_FIELD))).is_err() {
        return forbidden();
    }
    if state.use_cases.accounts().logout(&current.session).await.is_err() {
        return account_page(StatusCode::SERVICE_UNAVAILABLE, "Sign out", Some("Please try again."), html! {});
    }
    with_cookie(see_other("/dashboard/login"), &cleared_cookie(state.use_cases.pages()))
}

/// The signed-in home: who is signed in, the merchants they belong to with their roles, and
/// sign out. Without a session: the sign-in page.
#[get("/dashboard")]
pub async fn home(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let current = match current_session(&req, &state).await {
        Ok(c) => c,
        Err(Error::AuthRequired) => return see_other("/dashboard/login"),
        Err(_) => {
            return account_page(StatusCode::SERVICE_UNAVAILABLE, "Dashboard", Some("Please try again."), html! {});
        }
    };
    let accounts = state.use_cases.accounts();
    let mut merchants = Vec::new();
    for m in &current.memberships {
        let name = accounts.merchants.get_merchant(&m.merchant_id).await.map(|x| x.name).unwrap_or_default();
        merchants.push((name, m));
    }
    let u = &current.user;
    account_page(
        StatusCode::OK,
        "Dashboard",
        None,
        html! {
            p { "Signed in as " strong { (u.name) } " (" (u.email) ")." }
            @if u.email_verified_at.is_none() {
                p.notice { "Verify your email (the link is in your inbox) to use live mode." }
            }
            h2 { "Your merchants" }
            ul {
                @for (name, m) in &merchants {
                    li {
                        strong { (name) } " · " (m.role.as_str()) " · "
                        a href=(format!("/dashboard/invoices?merchant={}&mode=test", m.merchant_id)) { "Invoices" }
                        @if m.requires_two_factor && u.two_factor_since.is_none() {
                            " · requires two-factor login: turn it on to continue"
                        }
                    }
                }
            }
            form method="post" action="/dashboard/logout" {
                input type="hidden" name=(CSRF_FIELD) value=(current.session.csrf_token);
                button type="submit" { "Sign out" }
            }
        },
    )
}

fn token_form(action: &str, token: &str, button: &str, fields: Markup) -> Markup {
    html! {
        form method="post" action=(action) {
            input type="hidden" name="token" value=(token);
            (fields)
            button type="submit" { (button) }
        }
    }
}

/// The page an email verification link opens: a button that uses the link.
#[get("/dashboard/verify-email")]
pub async fn verify_page(req: HttpRequest) -> HttpResponse {
    let form = token_form("/dashboard/verify-email", &token_of(&req), "Verify my email", html! {});
    account_page(StatusCode::OK, "Verify your email", None, form)
}

/// Uses a verification link.
#[post("/dashboard/verify-email")]
pub async fn verify(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    match state.use_cases.accounts().verify_email(form.get("token")).await {
        Ok(()) => account_page(
            StatusCode::OK,
            "Email verified",
            None,
            html! {
                p { "Your email is verified: live mode is open to you." }
                p { a href="/dashboard" { "Go to the dashboard" } }
            },
        ),
        Err(e) => {
            let e = ApiError::from(e);
            account_page(
                e.code.status(),
                "Verify your email",
                Some(&in_words(&e)),
                html! {
                    p { "Sign in and ask for a new link from the dashboard." }
                },
            )
        }
    }
}

fn reset_form(token: &str) -> Markup {
    token_form(
        "/dashboard/reset-password",
        token,
        "Set the new password",
        html! {
            label for="password" { "New password" }
            input #password type="password" name="password" autocomplete="new-password" required minlength=(MIN_PASSWORD_CHARS) maxlength=(MAX_PASSWORD_CHARS) aria-describedby="password-hint";
            p #password-hint.hint { (password_hint()) }
        },
    )
}

/// The page a reset link opens: the new password's form.
#[get("/dashboard/reset-password")]
pub async fn reset_page(req: HttpRequest) -> HttpResponse {
    account_page(StatusCode::OK, "Choose a new password", None, reset_form(&token_of(&req)))
}

/// Sets the new password with the link: every session ends, then the sign-in page's link.
#[post("/dashboard/reset-password")]
pub async fn reset(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    match state.use_cases.accounts().reset_password(form.get("token"), form.get("password")).await {
        Ok(()) => account_page(
            StatusCode::OK,
            "Password changed",
            None,
            html! {
                p { "Your new password is set, and every session of your account has ended." }
                p { a href="/dashboard/login" { "Sign in" } }
            },
        ),
        Err(e) => {
            let e = ApiError::from(e);
            account_page(e.code.status(), "Choose a new password", Some(&in_words(&e)), reset_form(form.get("token")))
        }
    }
}

fn forgot_form(email: &str) -> Markup {
    html! {
        form method="post" action="/dashboard/forgot-password" {
            label for="email" { "Email" }
            input #email type="email" name="email" value=(email) autocomplete="username" required;
            button type="submit" { "Email me a link" }
        }
    }
}

/// The forgotten-password form.
#[get("/dashboard/forgot-password")]
pub async fn forgot_page() -> HttpResponse {
    account_page(StatusCode::OK, "Forgot your password?", None, forgot_form(""))
}

/// Emails a reset link if the address has an account; the page says the same either way.
#[post("/dashboard/forgot-password")]
pub async fn forgot(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    let asked = match account_email_quota(&req, &state, form.get("email")).await {
        Ok(email) => state.use_cases.accounts().request_password_reset(&email).await.map_err(ApiError::from),
        Err(e) => Err(e),
    };
    match asked {
        Ok(()) => account_page(
            StatusCode::OK,
            "Check your email",
            None,
            html! {
                p { "If this address has an account, an email with a link is on its way. The link works once, for an hour." }
            },
        ),
        Err(e) => {
            account_page(e.code.status(), "Forgot your password?", Some(&in_words(&e)), forgot_form(form.get("email")))
        }
    }
}

fn signup_form(name: &str, business: &str, email: &str) -> Markup {
    html! {
        form method="post" action="/dashboard/signup" {
            label for="name" { "Your name" }
            input #name type="text" name="name" value=(name) autocomplete="name" required;
            label for="business" { "Your business" }
            input #business type="text" name="businessName" value=(business) autocomplete="organization" required;
            label for="email" { "Email" }
            input #email type="email" name="email" value=(email) autocomplete="username" required;
            label for="password" { "Password" }
            input #password type="password" name="password" autocomplete="new-password" required aria-describedby="password-hint";
            p.small #password-hint { (password_hint()) }
            button type="submit" { "Create the account" }
        }
        p { "Have an account? " a href="/dashboard/login" { "Sign in" } }
    }
}

/// The sign-up form (`STABLEPAY_SIGNUP=open`; otherwise a page saying how accounts are made).
#[get("/dashboard/signup")]
pub async fn signup_page(state: web::Data<AppState>) -> HttpResponse {
    if state.use_cases.accounts().settings.signup != SignupMode::Open {
        let closed = html! { p { "Accounts on this service are made by invitation. Ask the owner of your shop to invite you." } };
        return account_page(StatusCode::NOT_FOUND, "Sign up", None, closed);
    }
    account_page(StatusCode::OK, "Create your account", None, signup_form("", "", ""))
}

/// Signs up: a new merchant owned by the new account, and a verification email; the page says
/// the same for an email that has an account (it gets an email saying so). Then sign in.
#[post("/dashboard/signup")]
pub async fn signup(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    let (name, business, email) = (form.get("name"), form.get("businessName"), form.get("email"));
    let done = match account_email_quota(&req, &state, email).await {
        Ok(_) => {
            let s = Signup { email, password: form.get("password"), name, business_name: business };
            state.use_cases.accounts().signup(s).await.map_err(ApiError::from)
        }
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => account_page(
            StatusCode::OK,
            "Check your email",
            None,
            html! {
                p { "A link to verify the address is on its way. You can sign in now and use test mode; live mode waits for the verified email." }
                p { a href="/dashboard/login" { "Sign in" } }
            },
        ),
        Err(e) => account_page(
            e.code.status(),
            "Create your account",
            Some(&in_words(&e)),
            signup_form(name, business, email),
        ),
    }
}

fn accept_form(token: &str, name: &str) -> Markup {
    token_form(
        "/dashboard/accept-invitation",
        token,
        "Join",
        html! {
            label for="name" { "Your name (for a new account)" }
            input #name type="text" name="name" value=(name) autocomplete="name";
            label for="password" { "Password" }
            input #password type="password" name="password" autocomplete="new-password" required aria-describedby="password-hint";
            p #password-hint.hint { "For a new account: " (password_hint()) " If your email has an account, its password." }
            label for="otp" { "Your two-factor code (if your existing account has two-factor login)" }
            input #otp type="text" name="otp" autocomplete="one-time-code" inputmode="numeric";
        },
    )
}

/// The page an invitation opens: a name and a password (or the existing account's password).
#[get("/dashboard/accept-invitation")]
pub async fn accept_page(req: HttpRequest) -> HttpResponse {
    account_page(StatusCode::OK, "Accept the invitation", None, accept_form(&token_of(&req), ""))
}

/// Accepts the invitation: the membership, a session, then the dashboard.
#[post("/dashboard/accept-invitation")]
pub async fn accept(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    if !same_origin(&req, state.use_cases.pages().base()) {
        return forbidden();
    }
    let form = Form::of(&body);
    let name = Some(form.get("name")).filter(|n| !n.trim().is_empty());
    let client = client_of(&req, &state);
    let otp = Some(form.get("otp")).filter(|o| !o.trim().is_empty());
    let a = Acceptance { token: form.get("token"), name, password: form.get("password"), otp, client: Some(&client) };
    let accounts = state.use_cases.accounts();
    match accounts.accept_invitation(a).await {
        Ok(signed) => {
            let max_age = accounts.settings.sessions.absolute.num_seconds();
            with_cookie(see_other("/dashboard"), &session_cookie(&signed.token, state.use_cases.pages(), max_age))
        }
        Err(e) => {
            let e = ApiError::from(e);
            let form_again = accept_form(form.get("token"), form.get("name"));
            account_page(e.code.status(), "Accept the invitation", Some(&in_words(&e)), form_again)
        }
    }
}
