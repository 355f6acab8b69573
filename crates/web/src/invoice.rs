//! The hosted invoice page (`/i/{token}`): the whole invoice as its customer should read it,
//! and "Pay" opening a checkout for what is due (the public invoice route's use case), for as
//! long as the invoice is collectible.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, html};
use stablepay_domain::ids::PublicToken;
use stablepay_domain::invoice::InvoiceKey;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::payment::Payment;
use stablepay_domain::invoice::public::InvoiceView;
use stablepay_domain::invoice::totals::Discount;
use stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
use stablepay_domain::text::isolated;
use stablepay_domain::url::PublicPages;
use stablepay_domain::{Error, Mode};
use stablepay_http::body::read_body;
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::ratelimit::enforce;
use stablepay_http::state::AppState;

use crate::page::{day, forbidden, money, not_found, plain, same_origin, see_other};

async fn load(state: &AppState, token: &str) -> Result<Option<InvoiceView>, ApiError> {
    let Some(token) = PublicToken::parse(token) else { return Ok(None) };
    match state.use_cases.public_views().invoice(&token).await {
        Ok(view) => Ok(Some(view)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn state_label(state: CollectionState) -> &'static str {
    match state {
        CollectionState::Draft => "Draft",
        CollectionState::Open => "Open",
        CollectionState::PastDue => "Past due",
        CollectionState::PartiallyPaid => "Partly paid",
        CollectionState::Paid => "Paid",
        CollectionState::Void => "Void",
        CollectionState::Uncollectible => "Closed",
    }
}

/// The credited payments: amount, date and transaction (a block-explorer link in live mode).
fn payments_list(paid: &[&Payment], pages: &PublicPages, (live, cur): (bool, &str)) -> Markup {
    html! {
    @if !paid.is_empty() {
        section aria-labelledby="payments" {
            h2 id="payments" { "Payments" }
            ul.payments {
                @for p in paid {
                    li {
                        (money(&p.customer_amount_credited)) " " (cur)
                        @if let Some(at) = p.confirmed_at { " · " (day(at)) }
                        br;
                        @if live {
                            a.hash href=(pages.transaction(p.transaction_hash.as_str())) rel="noopener noreferrer" {
                                "View transaction " code.hash { (p.transaction_hash.as_str()) }
                            }
                        } @else {
                            span.small { "Transaction " code.hash { (p.transaction_hash.as_str()) } }
                        }
                    }
                }
            }
        }
    }
    }
}

/// Subtotal, discount, taxes, total, paid and the amount due.
fn totals_list(inv: &stablepay_domain::invoice::model::Invoice, cur: &str) -> Markup {
    let c = &inv.fields.content;
    html! {
    dl.totals {
        dt { "Subtotal" } dd { (money(&inv.totals.subtotal)) " " (cur) }
        @if let Some(d) = &c.discount {
            dt { "Discount" @if let Discount::Percentage(p) = d { " (" (plain(p.value())) " %)" } }
            dd { "−" (money(&inv.totals.discount)) " " (cur) }
        }
        @for t in &c.taxes {
            dt {
                (t.label)
                @if let Some(j) = &t.jurisdiction { " · " (j) }
                @if let Some(r) = &t.registration_reference { br; span.small { (r) } }
            }
            dd { (money(&t.amount)) " " (cur) }
        }
        dt.total { "Total" } dd.total { (money(&inv.totals.total)) " " (cur) }
        dt { "Paid" } dd { (money(&inv.customer_amount_paid)) " " (cur) }
        dt.due { "Amount due" } dd.due #remaining { (money(&inv.remaining())) " " (cur) }
    }
    }
}

/// The invoice page's body.
pub fn render(view: &InvoiceView, pages: &PublicPages, token: &str) -> Markup {
    let (agg, merchant) = (&view.aggregate, view.merchant_name.as_str());
    let inv = &agg.invoice;
    let live = inv.scope.mode == Mode::Live;
    let paid: Vec<&Payment> = agg.payments.iter().filter(|p| p.status.is_credited()).collect();
    let receipt = !inv.customer_amount_paid.is_zero() && inv.remaining().is_zero();
    let c = &inv.fields.content;
    let cur = inv.fields.currency.symbol();
    let state = inv.collection_state;
    let payable = state.is_collectible() && !inv.remaining().is_zero();
    html! {
        div.card.invoice {
            (crate::page::merchant(merchant, view.logo.as_ref()))
            h1 { "Invoice" @if let Some(n) = &inv.number { " " span.ref { (n) } } }
            p { span.badge data-state=(state.as_str()) { (state_label(state)) } }
            dl.facts {
                @if let Some(at) = inv.issued_at { dt { "Issued" } dd { (day(at)) } }
                @if let Some(at) = c.due_at { dt { "Due" } dd { (day(at)) } }
                @if let Some(po) = &c.purchase_order_number { dt { "Purchase order" } dd dir="auto" { (po) } }
                @if let Some(terms) = &c.payment_terms { dt { "Terms" } dd dir="auto" { (terms) } }
            }
            @if let Some(customer) = &c.customer {
                section aria-labelledby="billed-to" {
                    h2 id="billed-to" { "Billed to" }
                    address dir="auto" {
                        @if let Some(n) = &customer.name { bdi { (n) } br; }
                        @if let Some(co) = &customer.company { bdi { (co) } br; }
                        @if let Some(e) = &customer.email { (e) br; }
                        @if let Some(a) = &customer.billing_address { span.pre { (a) } }
                    }
                }
            }
            @if !c.lines.is_empty() {
                table.lines {
                    caption.sr-only { "Items" }
                    thead { tr { th scope="col" { "Item" } th.num scope="col" { "Amount" } } }
                    tbody {
                        @for l in &c.lines {
                            tr {
                                td { bdi { (l.description) } br; span.small { (plain(&l.quantity)) " × " (money(&l.unit_amount)) } }
                                td.num { (money(&l.amount())) }
                            }
                        }
                    }
                }
            }
            (totals_list(inv, cur))
            (payments_list(&paid, pages, (live, cur)))
            p.network { "Payable in " (cur) " on Polygon (chain " (stablepay_domain::merchant::POLYGON_CHAIN_ID) ")." }
            @if payable {
                form method="post" action=(format!("/i/{token}/pay") ) {
                    button.primary type="submit" { "Pay " (money(&inv.remaining())) " " (cur) }
                }
                p.help { "Opens a checkout for what is due; it stays payable for a while, and you can come back here for a new one." }
            } @else if state == CollectionState::Paid {
                p.state.ok role="status" { "This invoice is paid. Thank you." }
            } @else if state.is_closed() {
                p.state.off role="status" { "This invoice is closed and can no longer be paid; do not send anything for it." }
            }
            @if let Some(public) = &inv.public_token {
                p.download {
                    a href=(pages.invoice_pdf(public)) download {
                        @if receipt { "Download the receipt (PDF)" } @else { "Download the invoice (PDF)" }
                    }
                }
            }
            @if let Some(memo) = &c.memo { section.memo aria-label="Memo" { p.pre { (memo) } } }
            @if let Some(footer) = &c.footer { p.pre.small { (footer) } }
            @if let Some(support) = &view.support_email {
                p.support.small { "Questions? " a href=(format!("mailto:{support}")) { (support) } }
            }
        }
    }
}

/// The hosted invoice page.
#[get("/i/{token}")]
pub async fn invoice_page(state: web::Data<AppState>, token: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(view) = load(&state, &token).await? else { return Ok(not_found()) };
    let agg = &view.aggregate;
    let title = format!("Invoice {} · {}", agg.invoice.number.as_deref().unwrap_or(""), isolated(&view.merchant_name));
    let body = render(&view, state.use_cases.pages(), &token);
    Ok(crate::page::merchant_page(StatusCode::OK, &title, Some(agg.invoice.scope.mode), view.logo.as_ref(), body))
}

/// "Pay" on the invoice page: a checkout for what is due (the open one if there is one), then
/// the checkout page.
#[post("/i/{token}/pay")]
pub async fn pay_invoice(
    req: HttpRequest,
    state: web::Data<AppState>,
    token: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    read_body(&req, &mut payload.into_inner()).await?;
    if !same_origin(&req, state.use_cases.pages().base()) {
        return Ok(forbidden());
    }
    enforce(&req, &state, &PUBLIC_CHECKOUT, &["invoice", &token], ErrorCode::RATE_LIMITED).await?;
    let Some(view) = load(&state, &token).await? else { return Ok(not_found()) };
    let invoice = &view.aggregate.invoice;
    match state.use_cases.invoices().open_checkout(&invoice.scope, &InvoiceKey::Id(invoice.id.clone())).await {
        Ok(opened) => Ok(see_other(&format!("/checkout/{}", opened.session_id))),
        Err(Error::InvoiceNotPayable) => Ok(see_other(&format!("/i/{}", token.as_str()))),
        Err(e) => Err(e.into()),
    }
}
