//! What every page shares: the layout (a test-mode banner in test mode), the security
//! headers, the answers for a page that does not exist and a form from elsewhere, the
//! same-origin check of form posts, and how amounts and times read.

use actix_web::http::StatusCode;
use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder};
use maud::{DOCTYPE, Markup, html};
use stablepay_domain::Mode;
use stablepay_domain::merchant::Logo;
use stablepay_domain::url::HttpUrl;

/// The Content-Security-Policy of every page: only this service's own stylesheet, script,
/// status requests and form targets; no framing; no base URL changes.
pub const CSP: &str = "default-src 'none'; style-src 'self'; script-src 'self'; img-src 'self' data:; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The headers every page carries: no caching, the policy above, no framing by other sites, no
/// MIME sniffing, and no referrer to other sites (the hosted invoice URL holds its access
/// token). `same-origin` rather than `no-referrer`: with `no-referrer` browsers send `Origin:
/// null` on the pages' own form posts, which the same-origin check must refuse.
pub fn secure(res: &mut HttpResponseBuilder) {
    res.insert_header((CACHE_CONTROL, "no-store"))
        .insert_header(("Content-Security-Policy", CSP))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Referrer-Policy", "same-origin"));
}

/// Where a merchant's logo is served (content-addressed: a new logo has a new address).
pub fn logo_url(logo: &Logo) -> String {
    format!("/logos/{}.png", logo.digest)
}

/// Whom a page is from: the merchant's logo (when set) above its name. The logo is decorative
/// beside the name, so its text alternative is empty.
pub fn merchant(name: &str, logo: Option<&Logo>) -> Markup {
    html! {
        @if let Some(logo) = logo {
            @let (width, height) = logo.fit(200, 48);
            img.logo src=(logo_url(logo)) alt="" width=(width) height=(height);
        }
        p.merchant dir="auto" { (name) }
    }
}

/// Whose page it is: a customer's (narrow, with the service's footer) or the dashboard's
/// (wide, for tables).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Frame {
    /// A hosted page for customers.
    Customer,
    /// A page of the merchant's dashboard.
    Dashboard,
}

/// A whole page: `title`, a test-mode banner in test mode, then `main`; the page icon is the
/// merchant's logo when set.
pub fn layout(title: &str, mode: Option<Mode>, icon: Option<&Logo>, main: Markup) -> Markup {
    framed(Frame::Customer, title, (mode, icon), main)
}

/// [`layout`] in `frame`.
pub fn framed(frame: Frame, title: &str, (mode, icon): (Option<Mode>, Option<&Logo>), main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) }
                link rel="stylesheet" href="/assets/pages.css";
                @if let Some(logo) = icon {
                    link rel="icon" href=(logo_url(logo)) type="image/png";
                } @else {
                    link rel="icon" href="/favicon.ico" type="image/x-icon";
                }
                script src="/assets/pages.js" defer {}
            }
            body {
                @if mode == Some(Mode::Test) {
                    div.test-banner role="note" {
                        strong { "Test mode" } " · no real tokens move; nothing here can be paid with real money."
                    }
                }
                @if frame == Frame::Dashboard {
                    main.wide { (main) }
                } @else {
                    main { (main) }
                    footer.powered { "Payments verified on Polygon by this merchant's checkout service." }
                }
            }
        }
    }
}

/// A rendered page with `status`.
pub fn page(status: StatusCode, title: &str, mode: Option<Mode>, main: Markup) -> HttpResponse {
    merchant_page(status, title, mode, None, main)
}

/// A rendered page of a merchant with `status`, its logo as the page icon when set.
pub fn merchant_page(
    status: StatusCode,
    title: &str,
    mode: Option<Mode>,
    logo: Option<&Logo>,
    main: Markup,
) -> HttpResponse {
    let mut res = HttpResponse::build(status);
    res.insert_header((CONTENT_TYPE, "text/html; charset=utf-8"));
    secure(&mut res);
    res.body(layout(title, mode, logo, main).into_string())
}

/// A rendered dashboard page with `status`.
pub fn dashboard_page(status: StatusCode, title: &str, mode: Option<Mode>, main: Markup) -> HttpResponse {
    let mut res = HttpResponse::build(status);
    res.insert_header((CONTENT_TYPE, "text/html; charset=utf-8"));
    secure(&mut res);
    res.body(framed(Frame::Dashboard, title, (mode, None), main).into_string())
}

/// The page of something that does not exist (or is not for customers).
pub fn not_found() -> HttpResponse {
    missing("This payment page does not exist. Check the link you were given, or ask the merchant for a new one.")
}

/// A "Not found" page (404) saying `why` in the customer's words.
pub fn missing(why: &str) -> HttpResponse {
    page(
        StatusCode::NOT_FOUND,
        "Not found",
        None,
        html! {
            h1 { "Not found" }
            p { (why) }
        },
    )
}

/// A form post refused because it did not come from this service's own page.
pub fn forbidden() -> HttpResponse {
    page(
        StatusCode::FORBIDDEN,
        "Forbidden",
        None,
        html! {
            h1 { "Forbidden" }
            p { "This form can only be sent from its own payment page." }
        },
    )
}

/// 303 to `location` (a path of this service).
pub fn see_other(location: &str) -> HttpResponse {
    let mut res = HttpResponse::SeeOther();
    res.insert_header((LOCATION, location));
    secure(&mut res);
    res.finish()
}

/// Whether a form post comes from this service's own pages (no cross-site request forgery):
/// a browser's `Sec-Fetch-Site` must say `same-origin`; without it, the `Origin` (or, without
/// one, the `Referer`) must be the public base URL's origin. Browsers send one of them with
/// every form post, so a page of another site cannot post the form.
pub fn same_origin(req: &HttpRequest, public_base_url: &str) -> bool {
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = header("sec-fetch-site") {
        return site == "same-origin";
    }
    let Ok(ours) = HttpUrl::parse(public_base_url) else { return false };
    let theirs = header("origin").or_else(|| header("referer"));
    theirs.and_then(|t| HttpUrl::parse(t).ok()).is_some_and(|t| t.origin() == ours.origin())
}

/// An amount as people read it: exact, thousands grouped, at least two decimals (`1,849.99`,
/// `12.505`).
pub fn money(amount: &stablepay_domain::money::Decimal6) -> String {
    amount.readable(2, stablepay_domain::money::NumberStyle::English)
}

/// An amount as a person types or pastes it (into a wallet, or a form's field): exact, at
/// least two decimals, never grouped (`1849.99`, `12.500003`). What is copied to pay with.
pub fn typed(amount: &stablepay_domain::money::Decimal6) -> String {
    amount.to_trimmed(2)
}

/// A quantity or percentage as customers read it: exact, without trailing zeros (`2`, `1.5`).
pub fn plain(value: &stablepay_domain::money::Decimal6) -> String {
    value.to_trimmed(0)
}

/// A timestamp as customers read it (UTC, to the minute).
pub fn when(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%-d %b %Y, %H:%M UTC").to_string()
}

/// A date as customers read it.
pub fn day(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%-d %b %Y").to_string()
}
