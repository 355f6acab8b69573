//! Payment links in the dashboard: the list, filtered by state (as it stands on the merchant's
//! clock) and paged by the API's cursors, each with its public URL.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::html;
use stablepay_domain::account::Action;
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::ports::LinkFilter;
use stablepay_http::state::AppState;

use super::frame::{Filter, Pairs, filter_form, next_link, place, refused, render};
use crate::page::day;

const LIST: &str = "/dashboard/payment-links";
const STATES: [LinkState; 5] =
    [LinkState::Active, LinkState::Paused, LinkState::Completed, LinkState::Expired, LinkState::Archived];

/// The payment link list: newest first, filtered by state, each with its public URL.
#[get("/dashboard/payment-links")]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let filter = q.get("state").and_then(LinkState::parse);
    let (links, wanted) = (state.use_cases.links(), LinkFilter { state: filter, ..LinkFilter::default() });
    let (listed, now) = match links.list(&p.scope, &wanted, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|l| l.id.as_str())).flatten();
    let pages = state.use_cases.pages();
    let options = STATES.iter().map(|s| s.as_str()).collect();
    let main = html! {
        h1 { "Payment links" }
        (filter_form(&p, LIST, &[Filter { name: "state", label: "State", options, selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No payment links here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Payment links" { table.links {
                thead { tr { th { "Title" } th { "State" } th { "Token" } th { "Public page" } th { "Created" } } }
                tbody {
                    @for l in &listed.items {
                        @let url = pages.payment_link(&l.public_id);
                        tr {
                            td { (l.config.title) }
                            td { (l.state_at(now).as_str()) }
                            td { (l.config.currency.symbol()) }
                            td { a.hash href=(url) { (url) } }
                            td { (day(l.created_at)) }
                        }
                    }
                }
            } }
        }
        (next_link(&p, LIST, last, &[("state", filter.map(|f| f.as_str()))]))
    };
    render(&p, (LIST, "Payment links"), StatusCode::OK, main)
}
