//! The dashboard's business pages (the first of them: the invoice list), a driving adapter
//! over the same use cases as the API. A page resolves who is signed in, the merchant and the
//! mode from its URL (`merchant`, `mode`; the first membership and test mode by default), and
//! runs `Current::require` before reading anything: another merchant is not found, a role
//! without the action is refused on a page that says so. Filters and the cursor stay in the
//! URL, so a page can be shared and the back button works.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::account::service::Current;
use stablepay_domain::ids::InvoiceId;
use stablepay_domain::ids::MerchantId;
use stablepay_domain::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::mode::{Mode, Scope};
use stablepay_domain::page::PageRequest;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::ApiError;
use stablepay_http::session::current_session;
use stablepay_http::state::AppState;

use crate::page::{day, page, see_other, when};

/// Invoices per page, unless the URL says (`limit`, 1 to 100).
const PAGE_SIZE: u32 = 25;

/// The query of a dashboard page.
struct Query(Vec<(String, String)>);

impl Query {
    fn of(req: &HttpRequest) -> Self {
        Self(serde_urlencoded::from_str(req.query_string()).unwrap_or_default())
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).filter(|v| !v.is_empty())
    }
}

/// Where a page is: the signed-in member, the merchant and the mode.
struct Place {
    current: Current,
    scope: Scope,
}

impl Place {
    /// The URL of `path` in this place, with `extra` query pairs.
    fn url(&self, path: &str, extra: &[(&str, &str)]) -> String {
        let mut pairs = vec![("merchant", self.scope.merchant_id.as_str()), ("mode", self.scope.mode.as_str())];
        pairs.extend_from_slice(extra);
        format!("{path}?{}", serde_urlencoded::to_string(&pairs).unwrap_or_default())
    }
}

/// The answer of a page that cannot be shown: no session (the sign-in page), another merchant
/// (not found), a role without the action (forbidden, saying why).
fn refused(e: Error) -> HttpResponse {
    if e == Error::AuthRequired {
        return see_other("/dashboard/login");
    }
    let e = ApiError::from(e);
    let title = if e.code.status() == StatusCode::NOT_FOUND { "Not found" } else { "Not allowed" };
    page(
        e.code.status(),
        title,
        None,
        html! { h1 { (title) } p role="alert" { (e.message) } p { a href="/dashboard" { "Back to the dashboard" } } },
    )
}

/// The member, merchant and mode of a request, allowed `action` there.
async fn place(req: &HttpRequest, state: &AppState, q: &Query, action: Action) -> Result<Place, Error> {
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
    current.require(&merchant, mode, action)?;
    Ok(Place { current, scope: Scope::new(merchant, mode) })
}

/// The frame of a business page: the navigation, the test/live switch (the same page in the
/// other mode), then `main`.
fn shell(p: &Place, path: &str, main: Markup) -> Markup {
    let other = if p.scope.mode == Mode::Test { Mode::Live } else { Mode::Test };
    let switch = format!(
        "{path}?{}",
        serde_urlencoded::to_string([("merchant", p.scope.merchant_id.as_str()), ("mode", other.as_str())])
            .unwrap_or_default()
    );
    html! {
        nav.dashboard aria-label="Dashboard" {
            a href="/dashboard" { "Home" }
            " · "
            a href=(p.url("/dashboard/invoices", &[])) aria-current=[(path == "/dashboard/invoices").then_some("page")] { "Invoices" }
            " · "
            a href=(p.url("/dashboard/payment-links", &[])) aria-current=[(path == "/dashboard/payment-links").then_some("page")] { "Payment links" }
            " · "
            a href=(p.url("/dashboard/webhooks", &[])) aria-current=[(path == "/dashboard/webhooks").then_some("page")] { "Webhooks" }
            " · "
            a href=(switch) { "Switch to " (other.as_str()) " mode" }
        }
        p.signed { (p.current.user.email) " · " (p.scope.mode.as_str()) " mode" }
        (main)
    }
}

/// The invoice list: newest first, filtered by collection state, paged by the API's cursors.
#[get("/dashboard/invoices")]
pub async fn invoices(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let q = Query::of(&req);
    let p = match place(&req, &state, &q, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let filter = q.get("state").and_then(CollectionState::parse);
    let limit = q.get("limit").and_then(|l| l.parse::<u32>().ok()).map_or(PAGE_SIZE, |l| l.clamp(1, 100));
    let request = PageRequest { limit, starting_after: q.get("after").map(str::to_owned) };
    let listed = match state.use_cases.invoices().list(&p.scope, filter, &request).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let state_pair = filter.map(|f| ("state", f.as_str()));
    let limit_text = limit.to_string();
    let next = listed.has_more.then(|| listed.items.last()).flatten().map(|last| {
        let mut extra = vec![("after", last.invoice.id.as_str())];
        extra.extend(state_pair);
        if limit != PAGE_SIZE {
            extra.push(("limit", &limit_text));
        }
        p.url("/dashboard/invoices", &extra)
    });
    let main = html! {
        h1 { "Invoices" }
        form.filters method="get" action="/dashboard/invoices" {
            input type="hidden" name="merchant" value=(p.scope.merchant_id.as_str());
            input type="hidden" name="mode" value=(p.scope.mode.as_str());
            label for="state" { "Collection state" }
            select #state name="state" {
                option value="" selected[filter.is_none()] { "All" }
                @for s in CollectionState::ALL {
                    option value=(s.as_str()) selected[filter == Some(s)] { (s.as_str()) }
                }
            }
            button type="submit" { "Filter" }
        }
        @if listed.items.is_empty() {
            p { "No invoices here yet." }
        } @else {
            table.invoices {
                thead { tr { th { "Number" } th { "Customer" } th { "Total" } th { "State" } th { "Status" } th { "Created" } } }
                tbody {
                    @for agg in &listed.items {
                        @let inv = &agg.invoice;
                        @let customer = inv.fields.content.customer_email().unwrap_or("");
                        tr {
                            td { a href=(p.url(&format!("/dashboard/invoices/{}", inv.id), &[])) { (inv.number.as_deref().unwrap_or("draft")) } }
                            td { (customer) }
                            td { (inv.totals.total.to_string()) " " (inv.fields.currency.symbol()) }
                            td { (inv.collection_state.as_str()) }
                            td { (inv.status.as_str()) }
                            td { (day(inv.created_at)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next {
            p { a rel="next" href=(next) { "Next page" } }
        }
    };
    page(StatusCode::OK, "Invoices", Some(p.scope.mode), shell(&p, "/dashboard/invoices", main))
}

/// One invoice: its totals, customer, lines, checkout sessions, payments (live transaction
/// hashes linked to the explorer) and activity. Another merchant's or mode's id is not found.
#[get("/dashboard/invoices/{id}")]
pub async fn invoice(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let q = Query::of(&req);
    let p = match place(&req, &state, &q, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let Some(id) = InvoiceId::parse(&path) else { return refused(Error::NotFound(Resource::Invoice)) };
    let agg = match state.use_cases.invoices().get(&p.scope, &InvoiceKey::Id(id)).await {
        Ok(a) => a,
        // The other mode's invoice is not shown in this one.
        Err(Error::ModeMismatch) => return refused(Error::NotFound(Resource::Invoice)),
        Err(e) => return refused(e),
    };
    let title = agg.invoice.number.clone().unwrap_or_else(|| "Draft invoice".to_owned());
    let explorer = (p.scope.mode == Mode::Live).then(|| state.use_cases.pages().clone());
    let main = html! {
        p { a href=(p.url("/dashboard/invoices", &[])) { "All invoices" } }
        h1 { (title) }
        (summary(&agg))
        (lines(&agg))
        (payments(&agg, explorer.as_ref()))
        (activity(&agg))
    };
    page(StatusCode::OK, &title, Some(p.scope.mode), shell(&p, "/dashboard/invoices", main))
}

fn summary(agg: &InvoiceAggregate) -> Markup {
    let inv = &agg.invoice;
    let currency = inv.fields.currency.symbol();
    html! {
        dl.summary {
            dt { "Collection state" } dd { (inv.collection_state.as_str()) }
            dt { "Status" } dd { (inv.status.as_str()) }
            dt { "Total" } dd { (inv.totals.total.to_string()) " " (currency) }
            dt { "Paid" } dd { (inv.customer_amount_paid.to_string()) " " (currency) }
            dt { "Remaining" } dd { (inv.remaining().to_string()) " " (currency) }
            dt { "Customer" } dd { (inv.fields.content.customer_email().unwrap_or("none")) }
            @if let Some(due) = inv.fields.content.due_at {
                dt { "Due" } dd { (day(due)) }
            }
            dt { "Created" } dd { (when(inv.created_at)) }
        }
    }
}

fn lines(agg: &InvoiceAggregate) -> Markup {
    let c = &agg.invoice.fields.content;
    html! {
        @if !c.lines.is_empty() {
            h2 { "Lines" }
            table.lines {
                thead { tr { th { "Description" } th { "Quantity" } th { "Unit amount" } } }
                tbody {
                    @for l in &c.lines {
                        tr { td { (l.description) } td { (l.quantity.to_string()) } td { (l.unit_amount.to_string()) } }
                    }
                }
            }
        }
    }
}

fn payments(agg: &InvoiceAggregate, explorer: Option<&stablepay_domain::url::PublicPages>) -> Markup {
    html! {
        h2 { "Checkout sessions" }
        @if agg.sessions.is_empty() { p { "None yet." } }
        ul {
            @for s in &agg.sessions {
                li { (s.id.as_str()) " · " (s.status.as_str()) " · " (s.amount_due.to_string()) " · " (when(s.created_at)) }
            }
        }
        h2 { "Payments" }
        @if agg.payments.is_empty() { p { "None yet." } }
        ul {
            @for pay in &agg.payments {
                li {
                    (pay.status.as_str()) " · " (pay.amount_received.to_string()) " · "
                    @match explorer {
                        Some(pages) => a href=(pages.transaction(pay.transaction_hash.as_str())) rel="noreferrer" { code { (pay.transaction_hash.as_str()) } },
                        None => code { (pay.transaction_hash.as_str()) },
                    }
                }
            }
        }
    }
}

fn activity(agg: &InvoiceAggregate) -> Markup {
    html! {
        h2 { "Activity" }
        ol.activity {
            @for a in &agg.invoice.activity {
                li { (when(a.at)) " · " (a.action.as_str()) " · by " (a.actor.as_str()) @if let Some(d) = &a.detail { " · " (d) } }
            }
        }
    }
}

/// The payment link list: newest first, filtered by state (as it stands on the merchant's
/// clock), paged by the API's cursors; each with its public URL.
#[get("/dashboard/payment-links")]
pub async fn payment_links(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    use stablepay_domain::payment_link::machine::LinkState;
    use stablepay_domain::payment_link::ports::LinkFilter;
    const STATES: [LinkState; 5] =
        [LinkState::Active, LinkState::Paused, LinkState::Completed, LinkState::Expired, LinkState::Archived];
    let q = Query::of(&req);
    let p = match place(&req, &state, &q, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let filter = q.get("state").and_then(LinkState::parse);
    let request = PageRequest { limit: PAGE_SIZE, starting_after: q.get("after").map(str::to_owned) };
    let (links, wanted) = (state.use_cases.links(), LinkFilter { state: filter, ..LinkFilter::default() });
    let (listed, now) = match links.list(&p.scope, &wanted, &request).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let next = listed.has_more.then(|| listed.items.last()).flatten().map(|last| {
        let mut extra = vec![("after", last.id.as_str())];
        extra.extend(filter.map(|f| ("state", f.as_str())));
        p.url("/dashboard/payment-links", &extra)
    });
    let pages = state.use_cases.pages();
    let main = html! {
        h1 { "Payment links" }
        form.filters method="get" action="/dashboard/payment-links" {
            input type="hidden" name="merchant" value=(p.scope.merchant_id.as_str());
            input type="hidden" name="mode" value=(p.scope.mode.as_str());
            label for="state" { "State" }
            select #state name="state" {
                option value="" selected[filter.is_none()] { "All" }
                @for s in STATES { option value=(s.as_str()) selected[filter == Some(s)] { (s.as_str()) } }
            }
            button type="submit" { "Filter" }
        }
        @if listed.items.is_empty() { p { "No payment links here yet." } }
        @else {
            table.links {
                thead { tr { th { "Title" } th { "State" } th { "Token" } th { "Public page" } th { "Created" } } }
                tbody {
                    @for l in &listed.items {
                        @let url = pages.payment_link(&l.public_id);
                        tr {
                            td { (l.config.title) }
                            td { (l.state_at(now).as_str()) }
                            td { (l.config.currency.symbol()) }
                            td { a href=(url) { (url) } }
                            td { (day(l.created_at)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next { p { a rel="next" href=(next) { "Next page" } } }
    };
    page(StatusCode::OK, "Payment links", Some(p.scope.mode), shell(&p, "/dashboard/payment-links", main))
}

/// The webhook delivery log: newest first, filtered by delivery status, each with its latest
/// attempt (the answer's status, the error's category and message, the start of the answer):
/// why a webhook fails, as support reads it.
#[get("/dashboard/webhooks")]
pub async fn webhooks(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    use stablepay_domain::webhook::model::DeliveryStatus;
    use stablepay_domain::webhook::ports::DeliveryFilter;
    let q = Query::of(&req);
    let p = match place(&req, &state, &q, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let filter = q.get("status").and_then(DeliveryStatus::parse);
    let request = PageRequest { limit: PAGE_SIZE, starting_after: q.get("after").map(str::to_owned) };
    let (hooks, wanted) = (state.use_cases.webhooks(), DeliveryFilter { status: filter, ..DeliveryFilter::default() });
    let listed = match hooks.list_deliveries(&p.scope, &wanted, &request).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let next = listed.has_more.then(|| listed.items.last()).flatten().map(|last| {
        let mut extra = vec![("after", last.id.as_str())];
        extra.extend(filter.map(|f| ("status", f.as_str())));
        p.url("/dashboard/webhooks", &extra)
    });
    let main = html! {
        h1 { "Webhook deliveries" }
        form.filters method="get" action="/dashboard/webhooks" {
            input type="hidden" name="merchant" value=(p.scope.merchant_id.as_str());
            input type="hidden" name="mode" value=(p.scope.mode.as_str());
            label for="status" { "Status" }
            select #status name="status" {
                option value="" selected[filter.is_none()] { "All" }
                @for s in DeliveryStatus::ALL { option value=(s.as_str()) selected[filter == Some(s)] { (s.as_str()) } }
            }
            button type="submit" { "Filter" }
        }
        @if listed.items.is_empty() { p { "No deliveries here yet." } }
        @else {
            table.deliveries {
                thead { tr { th { "Event" } th { "Status" } th { "Attempts" } th { "Latest answer" } th { "Created" } } }
                tbody {
                    @for d in &listed.items {
                        tr {
                            td { (d.event_type.as_str()) br; code { (d.event_id.as_str()) } }
                            td { (d.status.as_str()) }
                            td { (d.attempt_count) }
                            td { (latest_answer(d)) }
                            td { (when(d.created_at)) }
                        }
                    }
                }
            }
        }
        @if let Some(next) = next { p { a rel="next" href=(next) { "Next page" } } }
    };
    page(StatusCode::OK, "Webhook deliveries", Some(p.scope.mode), shell(&p, "/dashboard/webhooks", main))
}

/// What the endpoint last answered, in a few words.
fn latest_answer(d: &stablepay_domain::webhook::model::WebhookDelivery) -> Markup {
    html! {
        @match &d.latest {
            None => "not attempted yet",
            Some(a) => {
                @if let Some(code) = a.status_code { "HTTP " (code) }
                @if let Some(c) = a.error_category { " · " (c.as_str()) }
                @if let Some(m) = &a.error_message { br; (m) }
                @if let Some(x) = &a.response_excerpt { br; code { (x) } }
            }
        }
    }
}
