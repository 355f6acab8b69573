//! Dashboard sessions as both driving adapters read them (the REST API's JSON routes and the
//! dashboard's pages): the `stablepay_session` cookie, the CSRF rule of every change made with
//! a session, the cookie's flags, and a login within its failure-only quotas.

use actix_web::HttpRequest;
use stablepay_domain::Error;
use stablepay_domain::account::service::{Current, Secrets, SignedIn};
use stablepay_domain::ids::PublicToken;
use stablepay_domain::url::{HttpUrl, PublicPages};

use crate::error::{ApiError, ErrorCode};
use crate::ratelimit::{client_of, enforce_as};
use crate::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "stablepay_session";
/// The header a JSON mutation carries the session's CSRF token in.
pub const CSRF_HEADER: &str = "X-CSRF-Token";
/// The form field a page's form carries it in.
pub const CSRF_FIELD: &str = "csrfToken";

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get_all(actix_web::http::header::COOKIE)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.to_owned())
}

/// The live session the request's cookie names. Errors: `AuthRequired`.
pub async fn current_session(req: &HttpRequest, state: &AppState) -> Result<Current, Error> {
    let token = cookie(req, COOKIE).ok_or(Error::AuthRequired)?;
    state.use_cases.accounts().current(&token).await
}

/// Equal bytes, compared in a time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `origin` (an `Origin` header) is the origin of the public base URL `base`.
fn is_our_origin(origin: &str, base: &str) -> bool {
    let origin_of = |text: &str| HttpUrl::parse(text).ok().map(|u| u.origin().to_owned());
    origin_of(origin).is_some_and(|o| Some(o) == origin_of(base))
}

/// A mutation's CSRF rule: the session's token `presented` (the header, or the form's field),
/// and, when the browser says where the request comes from (`Origin`, `Sec-Fetch-Site`), this
/// service's own origin. Errors: `AuthForbidden`.
pub fn check_csrf(
    req: &HttpRequest,
    current: &Current,
    pages: &PublicPages,
    presented: Option<&str>,
) -> Result<(), Error> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if !presented.is_some_and(|t| same_secret(t, &current.session.csrf_token)) {
        return Err(Error::AuthForbidden(format!(
            "a change made with a session sends its CSRF token ({CSRF_HEADER}, or the form's {CSRF_FIELD})"
        )));
    }
    let origin_ok = header("Origin").is_none_or(|o| is_our_origin(o, pages.base()));
    let site_ok = header("Sec-Fetch-Site").is_none_or(|s| matches!(s, "same-origin" | "none"));
    if !(origin_ok && site_ok) {
        return Err(Error::AuthForbidden("a change made with a session comes from the dashboard's own origin".into()));
    }
    Ok(())
}

/// The `Set-Cookie` value of a new session: `HttpOnly`, `SameSite=Lax`, `Path=/`, kept
/// `max_age_seconds`, and `Secure` when the service is served over https.
pub fn session_cookie(token: &PublicToken, pages: &PublicPages, max_age_seconds: i64) -> String {
    let secure = if pages.base().starts_with("https://") { "; Secure" } else { "" };
    format!("{COOKIE}={}; HttpOnly; SameSite=Lax; Path=/; Max-Age={max_age_seconds}{secure}", token.as_str())
}

/// `res` with a `Set-Cookie` of `cookie` appended. Errors: `Internal` for a value a header
/// cannot carry (a cookie this module made always can).
pub fn with_cookie(mut res: actix_web::HttpResponse, cookie: &str) -> Result<actix_web::HttpResponse, ApiError> {
    let value = actix_web::http::header::HeaderValue::from_str(cookie).map_err(|_| ApiError::internal())?;
    res.headers_mut().append(actix_web::http::header::SET_COOKIE, value);
    Ok(res)
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn cleared_cookie(pages: &PublicPages) -> String {
    let secure = if pages.base().starts_with("https://") { "; Secure" } else { "" };
    format!("{COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0{secure}")
}

/// A login from this request: the domain's one way to become signed in, within the
/// failure-only quotas of the account and of the request's client address (see
/// `Accounts::login`); a refusal past a quota answers 429 RATE_LIMITED, the right password
/// included.
pub async fn throttled_login(
    req: &HttpRequest,
    state: &AppState,
    (email, password, otp): (&str, &str, Option<&str>),
) -> Result<SignedIn, ApiError> {
    let client = client_of(req, state);
    let secrets = Secrets { password, otp, client: Some(&client) };
    Ok(state.use_cases.accounts().login(email, secrets).await?)
}

/// An account email asked for (sign-up, reset, a new verification link) within its quotas: 5
/// per hour per recipient, 30 per hour per client address; answers the email as accounts keep
/// it. Errors: VALIDATION_ERROR (`email`); 429 RATE_LIMITED.
pub async fn account_email_quota(req: &HttpRequest, state: &AppState, email: &str) -> Result<String, ApiError> {
    use stablepay_domain::ratelimit::{DASHBOARD_EMAIL, DASHBOARD_EMAIL_CLIENT};
    let email = stablepay_domain::account::normalize_email("email", email)?;
    enforce_as(req, state, &DASHBOARD_EMAIL_CLIENT, &client_of(req, state), &["email"], ErrorCode::RATE_LIMITED)
        .await?;
    enforce_as(req, state, &DASHBOARD_EMAIL, &email, &["email"], ErrorCode::RATE_LIMITED).await?;
    Ok(email)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_secrets() {
        assert!(is_our_origin("https://pay.example.com", "https://pay.example.com/base"));
        assert!(is_our_origin("http://127.0.0.1:8080", "http://127.0.0.1:8080"));
        assert!(!is_our_origin("https://evil.example", "https://pay.example.com"));
        assert!(!is_our_origin("null", "https://pay.example.com"));
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd") && !same_secret("abc", "abcd"));
    }

    #[test]
    fn the_cookie_is_http_only_lax_and_secure_over_https() {
        let token = PublicToken::from_trusted("t".repeat(43));
        let https = session_cookie(&token, &PublicPages::new("https://pay.example.com"), 604_800);
        assert_eq!(
            https,
            format!("stablepay_session={}; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800; Secure", "t".repeat(43))
        );
        let http = session_cookie(&token, &PublicPages::new("http://127.0.0.1:8080"), 60);
        assert!(!http.contains("Secure"));
        assert!(cleared_cookie(&PublicPages::new("http://x")).contains("Max-Age=0"));
    }
}
