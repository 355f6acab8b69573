//! Exports and reconciliation: ask for an export of a type over a range of days (once per
//! form), watch it (the list shows each export's status; a queued or running one can be
//! cancelled), download its file; and the reconciliation of the same range per token with what
//! does not add up. The same use cases as `/v1/exports` and `GET /v1/reconciliation`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use chrono::{DateTime, Duration, NaiveDate, TimeZone, Utc};
use maud::{Markup, html};
use stablepay_domain::Error;
use stablepay_domain::account::Action;
use stablepay_domain::export::model::{Export, ExportFilters, ExportListFilter, ExportSpec, ExportStatus, ExportType};
use stablepay_domain::export::service::Exports;
use stablepay_domain::ids::ExportId;
use stablepay_http::download::export_file;
use stablepay_http::state::AppState;

use super::form::{Failed, Refusal, Work, alert, form, input, once, posted};
use super::frame::{Pairs, Place, in_this_mode, next_link, place, refused, refused_api, render};
use crate::page::{day, money, see_other, when};

const PATH: &str = "/dashboard/exports";

/// A day typed as `YYYY-MM-DD`: its start (UTC). Errors name `field`.
fn day_start(field: &str, text: &str) -> Result<DateTime<Utc>, Error> {
    let d = NaiveDate::parse_from_str(text.trim(), "%Y-%m-%d")
        .map_err(|_| Error::validation(field, "must be a date (YYYY-MM-DD)"))?;
    Ok(Utc.from_utc_datetime(&d.and_hms_opt(0, 0, 0).unwrap_or_default()))
}

/// The range of a form or a URL: `from` (included) to the end of `to` (its next day's start).
fn range(pairs: &Pairs, now: DateTime<Utc>) -> Result<(DateTime<Utc>, DateTime<Utc>), Error> {
    let today = now.format("%Y-%m-%d").to_string();
    let first = now.format("%Y-%m-01").to_string();
    let from = day_start("from", pairs.get("from").unwrap_or(&first))?;
    let to = day_start("to", pairs.get("to").unwrap_or(&today))? + Duration::days(1);
    Ok((from, to))
}

/// The exports, the form, and the reconciliation of the range in the URL.
#[get("/dashboard/exports")]
pub async fn show(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Export).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    page(&state, &p, &Pairs::query(&req), (StatusCode::OK, None)).await
}

async fn page(state: &AppState, p: &Place, q: &Pairs, (status, failed): (StatusCode, Failed<'_>)) -> HttpResponse {
    match sections(state, p, q, failed).await {
        Ok(main) => render(p, (PATH, "Exports"), status, main),
        Err(e) => refused(e),
    }
}

async fn sections(state: &AppState, p: &Place, q: &Pairs, failed: Failed<'_>) -> Result<Markup, Error> {
    let now = state.use_cases.clock().now(&p.scope).await?;
    let listed = state.use_cases.exports().list(&p.scope, &ExportListFilter::default(), &q.page()).await?;
    let last = listed.has_more.then(|| listed.items.last().map(|e| e.id.as_str())).flatten();
    let (from, to) = range(q, now)?;
    let books = state.use_cases.reconciliations().summary(&p.scope, from, to).await?;
    Ok(html! {
        h1 { "Exports and reconciliation" }
        h2 { "New export" }
        (export_form(state, p, now, failed))
        h2 { "Exports" }
        @if listed.items.is_empty() { p { "No exports yet." } }
        ul.exports { @for e in &listed.items { li { (export_item(state, p, e)) } } }
        (next_link(p, PATH, last, &[]))
        h2 { "Reconciliation, " (day(from)) " to " (day(to - Duration::days(1))) }
        div.table-wrap tabindex="0" role="region" aria-label="Reconciliation" { table.reconciliation {
            thead { tr { th { "Token" } th.num { "Invoiced" } th.num { "Collected" } th.num { "Refunded" } th.num { "Outstanding" } th.num { "Unattributed" } } }
            tbody {
                @for t in &books.tokens {
                    tr {
                        td { (t.token.symbol()) }
                        td.num { (money(&t.invoiced_total)) }
                        td.num { (money(&t.collected)) }
                        td.num { (money(&t.refunds_referenced)) }
                        td.num { (money(&t.outstanding)) }
                        td.num { (t.unattributed_count) }
                    }
                }
            }
        } }
        p { (books.discrepancies.len()) " discrepancies in the range." }
    })
}

fn export_item(state: &AppState, p: &Place, e: &Export) -> Markup {
    let url = |tail: &str| p.url(&format!("{PATH}/{}{tail}", e.id), &[]);
    html! {
        code { (e.id.as_str()) } " · " (e.spec.export_type.as_str()) " · " (day(e.spec.from)) " to " (day(e.spec.to))
        " · " span.badge data-state=(e.status.as_str()) { (e.status.as_str()) }
        @if let Some(rows) = e.row_count { " · " (rows) " rows" }
        @if let Some(m) = &e.failure_message { br; span.small { (m) } }
        @match e.status {
            ExportStatus::Ready => { " · " a href=(url("/file")) { "Download " (e.file_name()) } },
            ExportStatus::Queued | ExportStatus::Running => (form(p, state, &url("/cancel"), html! {
                button type="submit" aria-label=(format!("Cancel {}", e.id)) { "Cancel" }
            })),
            _ => {},
        }
        " · " span.small { (when(e.created_at)) }
    }
}

fn export_form(state: &AppState, p: &Place, now: DateTime<Utc>, failed: Failed<'_>) -> Markup {
    let refusal = failed.map(|(_, r, _)| r);
    let typed = |name: &str, default: String| {
        failed.map(|(_, _, f)| f.text(name).to_owned()).filter(|v| !v.is_empty()).unwrap_or(default)
    };
    let kind = typed("type", "invoices".into());
    form(
        p,
        state,
        &p.url(PATH, &[]),
        html! {
            (alert(refusal, &["from", "to"]))
            div.grid {
                div.field {
                    label for="export-type" { "Records" }
                    select #export-type name="type" {
                        @for t in ExportType::ALL.iter().filter(|t| **t != ExportType::Reconciliation) {
                            option value=(t.as_str()) selected[kind == t.as_str()] { (t.as_str().replace('_', " ")) }
                        }
                    }
                }
                (input("from", "From (day)", ("date", &typed("from", now.format("%Y-%m-01").to_string())), refusal))
                (input("to", "To (day, included)", ("date", &typed("to", now.format("%Y-%m-%d").to_string())), refusal))
            }
            button.primary type="submit" { "Export" }
        },
    )
}

/// Asks for an export (once per form), then the list that shows it.
#[post("/dashboard/exports")]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, body: web::Bytes) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::Export).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let p = &posted.place;
    let (s, scope, form) = (state.clone(), p.scope.clone(), posted.form.clone());
    let list = p.url(PATH, &[]);
    let again = list.clone();
    let work = move |claim| {
        let work: Work = Box::pin(async move {
            let now = s.use_cases.clock().now(&scope).await?;
            let export_type = ExportType::parse(form.text("type"))
                .filter(|t| *t != ExportType::Reconciliation)
                .ok_or_else(|| Error::validation("type", "choose the records to export"))?;
            let spec = ExportSpec::new(export_type, None, range(&form, now)?, ExportFilters::default())?;
            Exports { claim, ..s.use_cases.exports() }.create(&scope, spec).await?;
            Ok(list)
        });
        work
    };
    match once(&state, (&posted, &req, &body), move |_| Some(again), work).await {
        Ok(location) => see_other(&location),
        Err(refusal) => {
            page(&state, p, &Pairs::query(&req), (refusal.status, Some(("export", &refusal, &posted.form)))).await
        }
    }
}

/// Cancels a queued or running export.
#[post("/dashboard/exports/{id}/cancel")]
pub async fn cancel(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let posted = match posted(&req, &state, &body, Action::Export).await {
        Ok(p) => p,
        Err(res) => return res,
    };
    let p = &posted.place;
    let id = ExportId::parse(&path).ok_or(Error::NotFound(stablepay_domain::Resource::Export));
    let done = match id {
        Ok(id) => state.use_cases.exports().cancel(&p.scope, &id).await.map(|_| ()),
        Err(e) => Err(e),
    };
    match done {
        Ok(()) => see_other(&p.url(PATH, &[])),
        Err(e) => {
            let refusal = Refusal::of(e);
            page(&state, p, &Pairs::query(&req), (refusal.status, Some(("cancel", &refusal, &posted.form)))).await
        }
    }
}

/// An export's file (a ready export of the place; otherwise a page saying why not).
#[get("/dashboard/exports/{id}/file")]
pub async fn file(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Export).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let Some(id) = ExportId::parse(&path) else { return refused(Error::NotFound(stablepay_domain::Resource::Export)) };
    match in_this_mode(state.use_cases.exports().downloadable(&p.scope, &id).await, stablepay_domain::Resource::Export)
    {
        Ok(export) => export_file(state.clone(), p.scope.clone(), &export).await.unwrap_or_else(|e| refused_api(&e)),
        Err(e) => refused(e),
    }
}
