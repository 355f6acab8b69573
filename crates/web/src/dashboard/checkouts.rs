//! Checkout sessions and payments in the dashboard: their lists (filtered by status, paged by
//! cursors), and each one's page with the diagnosis support reads to answer "why isn't this
//! paid": where the checkout stands for its customer, every transfer reported or detected with
//! each verification check (expected against found), where its block stands, the chain, and
//! the next step. The same diagnosis as `GET /v1/checkout-sessions/{id}/diagnostics`.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use maud::{Markup, html};
use stablepay_domain::account::Action;
use stablepay_domain::chain::model::ChainHealth;
use stablepay_domain::diagnostics::model::{CheckoutDiagnosis, Finality};
use stablepay_domain::ids::{CheckoutSessionId, PaymentId};
use stablepay_domain::invoice::checkout::CheckoutStatus;
use stablepay_domain::invoice::payment::PaymentStatus;
use stablepay_domain::mode::Mode;
use stablepay_domain::{Error, Resource};
use stablepay_http::state::AppState;

use super::frame::{Filter, FilterKind, Pairs, Place, filter_form, in_this_mode, next_link, place, refused, render};
use crate::page::{money, when};

const SESSIONS: &str = "/dashboard/checkout-sessions";
const PAYMENTS: &str = "/dashboard/payments";

/// The checkout session list.
#[get("/dashboard/checkout-sessions")]
pub async fn sessions(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let filter = q.get("status").and_then(CheckoutStatus::parse);
    let listed = match state.use_cases.invoices().sessions(&p.scope, filter, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|s| s.id.as_str())).flatten();
    let options = CheckoutStatus::ALL.iter().map(|s| s.as_str()).collect();
    let main = html! {
        h1 { "Checkout sessions" }
        (filter_form(&p, SESSIONS, &[Filter { name: "status", label: "Status", kind: FilterKind::Select(options), selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No checkout sessions here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Checkout sessions" { table.sessions.cards {
                thead { tr { th { "Session" } th { "Status" } th.num { "Amount due" } th { "Invoice" } th { "Created" } } }
                tbody {
                    @for s in &listed.items {
                        tr {
                            td data-label="Session" { a href=(p.url(&format!("{SESSIONS}/{}", s.id), &[])) { code { (s.id.as_str()) } } }
                            td data-label="Status" { (s.status.as_str()) }
                            td.num data-label="Amount due" { (money(&s.amount_due)) " " (s.currency.symbol()) }
                            td data-label="Invoice" { a href=(p.url(&format!("/dashboard/invoices/{}", s.invoice_id), &[])) { "invoice" } }
                            td data-label="Created" { (when(s.created_at)) }
                        }
                    }
                }
            } }
        }
        (next_link(&p, SESSIONS, last, &[("status", filter.map(|f| f.as_str()))]))
    };
    render(&p, (SESSIONS, "Checkout sessions"), StatusCode::OK, main)
}

/// The payment list.
#[get("/dashboard/payments")]
pub async fn payments(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let q = Pairs::query(&req);
    let filter = q.get("status").and_then(PaymentStatus::parse);
    let listed = match state.use_cases.invoices().payments(&p.scope, filter, &q.page()).await {
        Ok(l) => l,
        Err(e) => return refused(e),
    };
    let last = listed.has_more.then(|| listed.items.last().map(|x| x.id.as_str())).flatten();
    let options = PaymentStatus::ALL.iter().map(|s| s.as_str()).collect();
    let main = html! {
        h1 { "Payments" }
        (filter_form(&p, PAYMENTS, &[Filter { name: "status", label: "Status", kind: FilterKind::Select(options), selected: filter.map(|f| f.as_str()) }]))
        @if listed.items.is_empty() { p { "No payments here yet." } }
        @else {
            div.table-wrap tabindex="0" role="region" aria-label="Payments" { table.payments.cards {
                thead { tr { th { "Payment" } th { "Status" } th.num { "Received" } th.num { "Credited" } th { "Detected" } } }
                tbody {
                    @for x in &listed.items {
                        tr {
                            td data-label="Payment" { a href=(p.url(&format!("{PAYMENTS}/{}", x.id), &[])) { code { (x.id.as_str()) } } }
                            td data-label="Status" { (x.status.as_str()) }
                            td.num data-label="Received" { (money(&x.amount_received)) }
                            td.num data-label="Credited" { (money(&x.customer_amount_credited)) }
                            td data-label="Detected" { (when(x.detected_at)) }
                        }
                    }
                }
            } }
        }
        (next_link(&p, PAYMENTS, last, &[("status", filter.map(|f| f.as_str()))]))
    };
    render(&p, (PAYMENTS, "Payments"), StatusCode::OK, main)
}

/// A checkout session with its diagnosis.
#[get("/dashboard/checkout-sessions/{id}")]
pub async fn session(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let Some(id) = CheckoutSessionId::parse(&path) else { return refused(Error::NotFound(Resource::CheckoutSession)) };
    let diagnostics = state.use_cases.diagnostics();
    match in_this_mode(diagnostics.checkout(&p.scope, &id).await, Resource::CheckoutSession) {
        Ok(d) => render(&p, (SESSIONS, "Checkout session"), StatusCode::OK, diagnosis(&state, &p, &d, None)),
        Err(e) => refused(e),
    }
}

/// A payment with the diagnosis of its checkout.
#[get("/dashboard/payments/{id}")]
pub async fn payment(req: HttpRequest, state: web::Data<AppState>, path: web::Path<String>) -> HttpResponse {
    let p = match place(&req, &state, Action::Read).await {
        Ok(p) => p,
        Err(e) => return refused(e),
    };
    let Some(id) = PaymentId::parse(&path) else { return refused(Error::NotFound(Resource::Payment)) };
    let diagnostics = state.use_cases.diagnostics();
    match in_this_mode(diagnostics.payment(&p.scope, &id).await, Resource::Payment) {
        Ok(d) => render(&p, (PAYMENTS, "Payment"), StatusCode::OK, diagnosis(&state, &p, &d, Some(&id))),
        Err(e) => refused(e),
    }
}

/// Why a checkout is or is not paid; `about` is the transfer the page is about, if any.
fn diagnosis(state: &AppState, p: &Place, d: &CheckoutDiagnosis, about: Option<&PaymentId>) -> Markup {
    let s = &d.session;
    let pages = state.use_cases.pages();
    html! {
        h1 { @if about.is_some() { "Payment" } @else { "Checkout session" } }
        dl.facts {
            dt { "Checkout" } dd { a href=(p.url(&format!("{SESSIONS}/{}", s.id), &[])) { code.hash { (s.id.as_str()) } } }
            dt { "Status" } dd { (s.status.as_str()) " · " (d.phase.as_str()) }
            dt { "Amount due" } dd { (money(&s.amount_due)) " " (s.currency.symbol()) }
            dt { "Invoice still asks" } dd { (money(&d.invoice_remaining)) }
            dt { "Pays to" } dd { code.hash { (s.settlement_wallet.as_str()) } }
            dt { "Expires" } dd { (when(s.expires_at)) }
            dt { "Invoice" } dd { a href=(p.url(&format!("/dashboard/invoices/{}", s.invoice_id), &[])) { "the invoice" } }
            dt { "Hosted page" } dd { a href=(pages.checkout(&s.id)) { "open" } }
        }
        section.state role="status" aria-label="Next step" { h2 { "Next step" } p { (d.next_step) } }
        h2 { "Chain" }
        p {
            @if d.chain.simulated { "Test mode: transfers are simulated." }
            @else { (health(&d.chain.health)) @if let Some(b) = d.chain.final_block { " · final block " (b) } }
        }
        h2 { "Transfers" }
        @if d.transfers.is_empty() { p { "No transfer was reported or detected for this checkout." } }
        @for t in &d.transfers {
            @let this = about == Some(&t.payment.id);
            section.tile aria-current=[this.then_some("true")] {
                h3 { code.hash { (t.payment.id.as_str()) } " · " (t.payment.status.as_str()) }
                p {
                    "Hash "
                    @if p.scope.mode == Mode::Live { a.hash href=(pages.transaction(t.payment.transaction_hash.as_str())) rel="noreferrer" { (t.payment.transaction_hash.as_str()) } }
                    @else { code.hash { (t.payment.transaction_hash.as_str()) } }
                    " · " (finality(t.finality))
                }
                @if let Some(note) = &t.payment.diagnostic { p.small { (note) } }
                div.table-wrap tabindex="0" role="region" aria-label="Checks" { table.checks {
                    thead { tr { th { "Check" } th { "Outcome" } th { "Expected" } th { "Found" } } }
                    tbody {
                        @for c in &t.checks {
                            tr {
                                td { (c.name.as_str().replace('_', " ")) }
                                td { span.badge data-state=(c.outcome.as_str()) { (c.outcome.as_str()) } }
                                td { code.hash { (c.expected.as_deref().unwrap_or("")) } }
                                td { code.hash { (c.found.as_deref().unwrap_or("")) } @if let Some(n) = &c.note { br; span.small { (n) } } }
                            }
                        }
                    }
                } }
            }
        }
        p.small { "As of " (when(d.as_of)) }
    }
}

fn finality(f: Finality) -> String {
    match f {
        Finality::Final => "its block is final".into(),
        Finality::Waiting(n) => format!("its block is {n} blocks from final"),
        Finality::NotMined => "not in a block yet".into(),
        Finality::Unknown => "the chain could not tell".into(),
    }
}

fn health(h: &ChainHealth) -> String {
    match h {
        ChainHealth::Off => "No chain endpoint is configured: live payments wait.".into(),
        ChainHealth::Ok => "The chain answers: verification runs.".into(),
        ChainHealth::Unreachable(why) => format!("No chain endpoint answers now (verification retries): {why}"),
        ChainHealth::WrongChain(why) => format!("The endpoints answer for another chain: {why}"),
    }
}
