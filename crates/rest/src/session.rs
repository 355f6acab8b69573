//! Dashboard session authentication, beside (and independent of) API-key authentication: the
//! `stablepay_session` cookie names the session; every mutation made with it must carry the
//! session's CSRF token in `X-CSRF-Token` and come from the service's own origin.

use actix_web::dev::Payload;
use actix_web::http::Method;
use actix_web::{FromRequest, HttpRequest, web};
use futures_util::future::LocalBoxFuture;
use stablepay_domain::Error;
use stablepay_domain::account::service::Current;
use stablepay_domain::ids::PublicToken;
use stablepay_domain::url::{HttpUrl, PublicPages};
use stablepay_http::error::ApiError;
use stablepay_http::state::AppState;

/// The session cookie's name.
pub const COOKIE: &str = "stablepay_session";
/// The header a mutation carries the session's CSRF token in.
pub const CSRF_HEADER: &str = "X-CSRF-Token";

/// A request made with a live dashboard session (and, for a mutation, its CSRF token).
pub struct DashboardSession {
    /// The application state.
    pub state: web::Data<AppState>,
    /// The session, its user and memberships.
    pub current: Current,
}

impl FromRequest for DashboardSession {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move {
            let state = req.app_data::<web::Data<AppState>>().cloned().ok_or_else(ApiError::internal)?;
            let token = cookie(&req, COOKIE).ok_or(Error::AuthRequired)?;
            let current = state.use_cases.accounts().current(&token).await?;
            if !matches!(*req.method(), Method::GET | Method::HEAD) {
                check_csrf(&req, &current, state.use_cases.pages())?;
            }
            Ok(DashboardSession { state, current })
        })
    }
}

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

/// Equal bytes, compared in a time that does not depend on where they differ.
fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Whether `origin` (an `Origin` header) is the origin of the public base URL `base`.
fn is_our_origin(origin: &str, base: &str) -> bool {
    let origin_of = |text: &str| HttpUrl::parse(text).ok().map(|u| u.origin().to_owned());
    origin_of(origin).is_some_and(|o| Some(o) == origin_of(base))
}

/// A mutation's CSRF rule: the session's token in [`CSRF_HEADER`], and, when the browser says
/// where the request comes from (`Origin`, `Sec-Fetch-Site`), this service's own origin.
/// Errors: `AuthForbidden`.
fn check_csrf(req: &HttpRequest, current: &Current, pages: &PublicPages) -> Result<(), Error> {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let token_ok = header(CSRF_HEADER).is_some_and(|t| same_secret(t, &current.session.csrf_token));
    if !token_ok {
        return Err(Error::AuthForbidden(format!(
            "a change made with a session sends its CSRF token as {CSRF_HEADER}"
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

/// The `Set-Cookie` value that removes the session cookie.
pub fn cleared_cookie(pages: &PublicPages) -> String {
    let secure = if pages.base().starts_with("https://") { "; Secure" } else { "" };
    format!("{COOKIE}=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0{secure}")
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
