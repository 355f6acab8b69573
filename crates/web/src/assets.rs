//! The pages' stylesheet and script, served by the service itself (`/assets/...`), and the
//! merchants' logos (`/logos/{digest}.png`): no third-party request.

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE};
use actix_web::{HttpResponse, get, web};
use stablepay_http::error::ApiError;
use stablepay_http::state::AppState;

const STYLES: &str = include_str!("assets/pages.css");
const SCRIPT: &str = include_str!("assets/pages.js");
const ICON: &[u8] = include_bytes!("assets/favicon.ico");

fn asset(content_type: &str, body: &'static [u8]) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, content_type))
        .insert_header((CACHE_CONTROL, "public, max-age=3600"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .body(body)
}

/// The pages' stylesheet.
#[get("/assets/pages.css")]
pub async fn styles() -> HttpResponse {
    asset("text/css; charset=utf-8", STYLES.as_bytes())
}

/// The pages' script (wallet, copy, countdown, live status).
#[get("/assets/pages.js")]
pub async fn script() -> HttpResponse {
    asset("text/javascript; charset=utf-8", SCRIPT.as_bytes())
}

/// The pages' icon, where browsers ask for it (a 404 there is an error in every page's console).
#[get("/favicon.ico")]
pub async fn icon() -> HttpResponse {
    asset("image/x-icon", ICON)
}

/// A merchant's logo, by the digest of its PNG file: the same address always holds the same
/// bytes, so it is cached for a year. A digest no logo has is the not-found page.
#[get("/logos/{file}")]
pub async fn logo(state: web::Data<AppState>, file: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(digest) = file.strip_suffix(".png") else { return Ok(crate::page::not_found()) };
    let Some(png) = state.use_cases.public_views().logo(digest).await? else { return Ok(crate::page::not_found()) };
    Ok(HttpResponse::Ok()
        .insert_header((CONTENT_TYPE, "image/png"))
        .insert_header((CACHE_CONTROL, "public, max-age=31536000, immutable"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Content-Security-Policy", "default-src 'none'; sandbox"))
        .body(png))
}
