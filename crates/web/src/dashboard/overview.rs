//! The overview: what came in today, this week and this month per token, what is open and
//! overdue, the payments and transfers needing attention, and the merchant's diagnostics (the
//! same entries as `GET /v1/diagnostics`: activation, chain, webhooks and their incidents,
//! emails, keys, worker). Read from the reconciliation and readiness use cases; the periods
//! are the merchant's days in UTC, on the mode's clock.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use chrono::{DateTime, Datelike, Duration, TimeZone, Utc};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::reconciliation::model::Reconciliation;
use stablepay_http::state::AppState;
use stablepay_http::status::worker_facts;

use super::frame::{Place, place, refused, render};
use crate::page::{money, when};

const PATH: &str = "/dashboard/overview";

/// The starts of today, this week (Monday) and this month at `now`.
fn periods(now: DateTime<Utc>) -> [(&'static str, DateTime<Utc>); 3] {
    let day = Utc.from_utc_datetime(&now.date_naive().and_hms_opt(0, 0, 0).unwrap_or_default());
    let week = day - Duration::days(i64::from(now.weekday().num_days_from_monday()));
    let month = day - Duration::days(i64::from(now.day0()));
    [("Today", day), ("This week", week), ("This month", month)]
}

/// The overview page.
#[get("/dashboard/overview")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    match sections(&state, &p).await {
        Ok(main) => render(&p, (PATH, "Overview"), StatusCode::OK, main),
        Err(e) => refused(e),
    }
}

async fn sections(state: &AppState, p: &Place) -> Result<Markup, Error> {
    let now = state.use_cases.clock().now(&p.scope).await?;
    let end = now + Duration::seconds(1);
    let books = state.use_cases.reconciliations();
    let mut came_in = Vec::new();
    for (name, from) in periods(now) {
        came_in.push((name, books.summary(&p.scope, from, end).await?));
    }
    let month = came_in.last().map(|(_, r)| r.clone());
    let facts = worker_facts(&state.worker.snapshot(Utc::now()));
    let checks = state.use_cases.merchant_checks();
    let readiness = checks.readiness(&p.merchant, &p.scope, facts).await?;
    Ok(html! {
        h1 { "Overview" }
        p.small { "As of " (when(now)) }
        div.tiles {
            @for (name, r) in &came_in { (came_in_tile(name, r)) }
        }
        @if let Some(month) = &month { (open_amounts(month)) (attention(p, month)) }
        h2 { "Diagnostics" }
        div.table-wrap tabindex="0" role="region" aria-label="Diagnostics" { table.diagnostics {
            thead { tr { th { "Check" } th { "Status" } th { "Why" } } }
            tbody {
                @for e in &readiness.entries {
                    tr { td { (e.code.replace('_', " ")) } td { span.badge data-state=(e.status.as_str()) { (e.status.as_str()) } } td { (e.message) } }
                }
            }
        } }
    })
}

fn came_in_tile(name: &str, r: &Reconciliation) -> Markup {
    html! {
        section.tile {
            h2 { (name) }
            dl.totals {
                @for t in &r.tokens {
                    dt { (t.token.symbol()) " collected" } dd data-token=(t.token.symbol()) { (money(&t.collected)) }
                    dt { "Payments" } dd { (t.payments_credited) }
                }
            }
        }
    }
}

fn open_amounts(month: &Reconciliation) -> Markup {
    html! {
        h2 { "Open and overdue" }
        div.table-wrap tabindex="0" role="region" aria-label="Open and overdue" { table.open {
            thead { tr { th { "Token" } th.num { "Outstanding" } th.num { "Overdue" } th.num { "Overdue invoices" } } }
            tbody {
                @for t in &month.tokens {
                    tr { td { (t.token.symbol()) } td.num { (money(&t.outstanding)) } td.num { (money(&t.overdue)) } td.num { (t.overdue_count) } }
                }
            }
        } }
    }
}

fn attention(p: &Place, month: &Reconciliation) -> Markup {
    html! {
        h2 { "Needs attention this month" }
        @if month.discrepancies.is_empty() {
            p { "Nothing: every payment this month matched what was due." }
        } @else {
            ul.attention {
                @for d in &month.discrepancies {
                    li {
                        (d.kind.as_str().replace('_', " ")) " · " (money(&d.amount)) " " (d.token.symbol()) " · " (when(d.at))
                        @if let Some(inv) = &d.invoice_id {
                            " · " a href=(p.url(&format!("/dashboard/invoices/{inv}"), &[])) { "invoice" }
                        }
                        br; span.small { (d.detail) }
                    }
                }
            }
            @if month.has_more_discrepancies { p.small { "More are listed by the reconciliation export." } }
        }
    }
}
