//! Webhooks in the dashboard: the delivery log, newest first, filtered by delivery status, each
//! with its latest attempt (the answer's status, the error's category and message, the start of
//! the answer): why a webhook fails, as support reads it.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::webhook::model::{DeliveryStatus, WebhookDelivery};
use stablepay_domain::webhook::ports::DeliveryFilter;
use stablepay_http::state::AppState;

use super::frame::{Filter, Pairs, filter_form, next_link, place, refused, render};
use crate::page::when;

const LIST: &str = "/dashboard/webhooks";

/// The delivery log.
#[get("/dashboard/webhooks")]
pub async fn list(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let filter = q.get("status").and_then(DeliveryStatus::parse);
    let (hooks, wanted) = (state.use_cases.webhooks(), DeliveryFilter { status: filter, ..DeliveryFilter::default() });
    let listed = match hooks.list_deliveries(&p.scope, &wanted, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|d| d.id.as_str())).flatten();
    let options = DeliveryStatus::ALL.iter().map(|s| s.as_str()).collect();
    let main = html! {
        h1 { "Webhook deliveries" }
        (filter_form(&p, LIST, &[Filter { name: "status", label: "Status", options, selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No deliveries here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Deliveries" { table.deliveries {
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
            } }
        }
        (next_link(&p, LIST, last, &[("status", filter.map(|f| f.as_str()))]))
    };
    render(&p, (LIST, "Webhook deliveries"), StatusCode::OK, main)
}

/// What the endpoint last answered, in a few words.
fn latest_answer(d: &WebhookDelivery) -> Markup {
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
