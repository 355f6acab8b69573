//! What every dashboard page shares: where it is (the signed-in member, the merchant and the
//! mode, from the URL), the refusal pages, the navigation with the test/live switch, and the
//! list pieces (a filter form, the next page's link) that keep filters and the cursor in the
//! URL, so that a page can be shared and the back button works.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::account::service::Current;
use stablepay_domain::account::service::accounts::Allowed;
use stablepay_domain::ids::MerchantId;
use stablepay_domain::merchant::Merchant;
use stablepay_domain::mode::{Mode, Scope};
use stablepay_domain::page::PageRequest;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::ApiError;
use stablepay_http::session::{CSRF_FIELD, current_session};
use stablepay_http::state::AppState;

use crate::page::{dashboard_page, see_other};

/// The settings page.
pub const SETTINGS: &str = "/dashboard/settings";
/// The security page (under the settings).
pub const SECURITY: &str = "/dashboard/settings/security";

/// Items per list page, unless the URL says (`limit`, 1 to 100).
pub const PAGE_SIZE: u32 = 25;

/// Name-value pairs: a page's query string, or a posted form.
#[derive(Clone)]
pub struct Pairs(Vec<(String, String)>);

impl Pairs {
    /// The query string of `req`.
    pub fn query(req: &HttpRequest) -> Self {
        Self(serde_urlencoded::from_str(req.query_string()).unwrap_or_default())
    }

    /// No pairs (the first page of a list).
    pub fn query_empty() -> Self {
        Self(Vec::new())
    }

    /// A posted `application/x-www-form-urlencoded` body.
    pub fn form(body: &[u8]) -> Self {
        Self(serde_urlencoded::from_bytes(body).unwrap_or_default())
    }

    /// The first non-empty value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.trim().is_empty())
    }

    /// The value of `name` as typed (empty when absent).
    pub fn text(&self, name: &str) -> &str {
        self.0.iter().find(|(k, _)| k == name).map_or("", |(_, v)| v.as_str())
    }

    /// The page request of a list: `limit` (1 to 100) and the cursor `after`.
    pub fn page(&self) -> PageRequest {
        let limit = self.get("limit").and_then(|l| l.parse::<u32>().ok()).map_or(PAGE_SIZE, |l| l.clamp(1, 100));
        PageRequest { limit, starting_after: self.get("after").map(str::to_owned) }
    }
}

/// Where a page is: the signed-in member, the merchant and the mode.
#[derive(Clone)]
pub struct Place {
    /// Who is signed in.
    pub current: Current,
    /// The merchant and mode of the page.
    pub scope: Scope,
    /// The merchant.
    pub merchant: Merchant,
    /// What the member may do in this merchant, in each mode (the domain's answer).
    pub allowed: Allowed,
}

impl Place {
    /// The URL of `path` in this place, with `extra` query pairs.
    pub fn url(&self, path: &str, extra: &[(&str, &str)]) -> String {
        let mut pairs = vec![("merchant", self.scope.merchant_id.as_str()), ("mode", self.scope.mode.as_str())];
        pairs.extend_from_slice(extra);
        format!("{path}?{}", serde_urlencoded::to_string(&pairs).unwrap_or_default())
    }

    /// Whether the domain allows the member `action` here: what a page offers (a refused
    /// action is not shown; forced, its use case refuses it on a page that says why).
    pub fn can(&self, action: Action) -> bool {
        self.allowed.allows(self.scope.mode, action)
    }

    /// Whether the domain allows the member `action` in `mode` of this merchant (the settings
    /// of live mode, shown on every mode's page).
    pub fn can_in(&self, mode: Mode, action: Action) -> bool {
        self.allowed.allows(mode, action)
    }
}

/// The answer of a page that cannot be shown: no session (the sign-in page), another merchant
/// (not found), a role without the action (forbidden, saying why).
pub fn refused(e: Error) -> HttpResponse {
    if e == Error::AuthRequired {
        return see_other("/dashboard/login");
    }
    refused_api(&ApiError::from(e))
}

/// The page of an answer's error.
pub fn refused_api(e: &ApiError) -> HttpResponse {
    let title = match e.code.status() {
        StatusCode::NOT_FOUND => "Not found",
        StatusCode::FORBIDDEN | StatusCode::UNAUTHORIZED => "Not allowed",
        _ => "Something went wrong",
    };
    dashboard_page(
        e.code.status(),
        title,
        None,
        html! {
            h1 { (title) }
            p role="alert" { (e.message) }
            p.small { "Code: " code { (e.code.as_str()) } }
            p { a href="/dashboard" { "Back to the dashboard" } }
        },
    )
}

/// A read of this page's mode: a record of the other mode is not found here (the two modes are
/// two worlds, as in the API).
pub fn in_this_mode<T>(read: Result<T, Error>, resource: Resource) -> Result<T, Error> {
    match read {
        Err(Error::ModeMismatch) => Err(Error::NotFound(resource)),
        other => other,
    }
}

/// The member, merchant and mode of a request (`merchant` and `mode` of its query; the first
/// membership and test mode by default), allowed `action` there.
pub async fn place(req: &HttpRequest, state: &AppState, action: Action) -> Result<Place, Error> {
    let q = Pairs::query(req);
    let current = current_session(req, state).await?;
    let merchant = match q.get("merchant") {
        Some(m) => MerchantId::parse(m).ok_or(Error::NotFound(Resource::Merchant))?,
        None => {
            current.memberships.first().map(|m| m.merchant_id.clone()).ok_or(Error::NotFound(Resource::Merchant))?
        }
    };
    let mode = match q.get("mode") {
        Some(m) => Mode::parse(m).ok_or(Error::NotFound(Resource::Merchant))?,
        None => Mode::Test,
    };
    let (loaded, allowed) = state.use_cases.accounts().place_for(&current, &merchant, (mode, action)).await?;
    Ok(Place { current, scope: Scope::new(merchant, mode), merchant: loaded, allowed })
}

/// The sections of the navigation: path, name, and the action a member needs to see it.
const SECTIONS: [(&str, &str, Action); 9] = [
    ("/dashboard/overview", "Overview", Action::Read),
    ("/dashboard/invoices", "Invoices", Action::Read),
    ("/dashboard/checkout-sessions", "Checkouts", Action::Read),
    ("/dashboard/payments", "Payments", Action::Read),
    ("/dashboard/payment-links", "Payment links", Action::Read),
    ("/dashboard/webhooks", "Webhooks", Action::Read),
    ("/dashboard/developers", "Developers", Action::ManageApiKeys),
    ("/dashboard/exports", "Exports", Action::Export),
    ("/dashboard/settings", "Settings", Action::Read),
];

/// A business page: the navigation (what the member's role may open), the test/live switch
/// (the same page in the other mode), then `main`.
pub fn render(p: &Place, (path, title): (&str, &str), status: StatusCode, main: Markup) -> HttpResponse {
    let other = if p.scope.mode == Mode::Test { Mode::Live } else { Mode::Test };
    let switch = format!(
        "{path}?{}",
        serde_urlencoded::to_string([("merchant", p.scope.merchant_id.as_str()), ("mode", other.as_str())])
            .unwrap_or_default()
    );
    let body = html! {
        nav.dashboard aria-label="Dashboard" {
            a href="/dashboard" { "Home" }
            @for (to, name, needs) in SECTIONS {
                @if p.can(needs) {
                    a href=(p.url(to, &[])) aria-current=[(path == to).then_some("page")] { (name) }
                }
            }
            a href=(switch) { "Switch to " (other.as_str()) " mode" }
            form.inline method="post" action="/dashboard/logout" {
                input type="hidden" name=(CSRF_FIELD) value=(p.current.session.csrf_token);
                button.link type="submit" { "Sign out" }
            }
        }
        p.signed { (p.merchant.name) " · " (p.current.user.email) " · " (p.scope.mode.as_str()) " mode" }
        (main)
    };
    dashboard_page(status, title, Some(p.scope.mode), body)
}

/// How a filter is typed.
pub enum FilterKind<'a> {
    /// One of these values (besides "All").
    Select(Vec<&'a str>),
    /// Free text.
    Text,
    /// A day (`YYYY-MM-DD`).
    Date,
}

/// A filter of a list: named `name`, the value in the URL (`selected`) kept.
pub struct Filter<'a> {
    /// The query parameter.
    pub name: &'a str,
    /// Its label.
    pub label: &'a str,
    /// How it is typed.
    pub kind: FilterKind<'a>,
    /// The value in the URL.
    pub selected: Option<&'a str>,
}

/// A list's filter form (GET, so the filters stay in the URL).
pub fn filter_form(p: &Place, path: &str, filters: &[Filter]) -> Markup {
    html! {
        form.filters method="get" action=(path) {
            input type="hidden" name="merchant" value=(p.scope.merchant_id.as_str());
            input type="hidden" name="mode" value=(p.scope.mode.as_str());
            @for f in filters {
                div.field {
                    label for=(f.name) { (f.label) }
                    @match &f.kind {
                        FilterKind::Select(options) => select id=(f.name) name=(f.name) {
                            option value="" selected[f.selected.is_none()] { "All" }
                            @for o in options {
                                option value=(o) selected[f.selected == Some(*o)] { (o.replace('_', " ")) }
                            }
                        },
                        FilterKind::Text => input id=(f.name) name=(f.name) type="search" value=(f.selected.unwrap_or(""));,
                        FilterKind::Date => input id=(f.name) name=(f.name) type="date" value=(f.selected.unwrap_or(""));,
                    }
                }
            }
            button type="submit" { "Filter" }
        }
    }
}

/// The link to a list's next page: after `last` (when there is more), the filters `keep`.
pub fn next_link(p: &Place, path: &str, last: Option<&str>, keep: &[(&str, Option<&str>)]) -> Markup {
    let Some(last) = last else { return html! {} };
    let mut extra = vec![("after", last)];
    extra.extend(keep.iter().filter_map(|(k, v)| v.map(|v| (*k, v))));
    html! { p { a rel="next" href=(p.url(path, &extra)) { "Next page" } } }
}
