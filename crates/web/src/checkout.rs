//! The checkout page (`/checkout/{id}`): the amount due now (the remainder after a partial
//! payment), the phase of the checkout, where and how to pay, and the latest payment, as the
//! domain's public view of the checkout says (the page's script follows the same view as JSON,
//! `GET /v1/public/checkout-sessions/{id}`).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use maud::{Markup, PreEscaped, html};
use stablepay_domain::ids::CheckoutSessionId;
use stablepay_domain::invoice::input::TestPaymentInput;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::public::{CheckoutPhase, CheckoutView};
use stablepay_domain::text::isolated;
use stablepay_domain::url::PublicPages;
use stablepay_domain::{Error, Mode, Resource};
use stablepay_http::body::read_body;
use stablepay_http::error::ApiError;
use stablepay_http::state::AppState;
use stablepay_http::timestamp::timestamp;

use crate::page::{forbidden, merchant, merchant_page, money, not_found, page, same_origin, see_other, typed, when};

/// The view of checkout `id` (`None`: no such checkout).
async fn load(state: &AppState, id: &str) -> Result<Option<CheckoutView>, ApiError> {
    let Some(id) = CheckoutSessionId::parse(id) else { return Ok(None) };
    match state.use_cases.public_views().checkout(&id).await {
        Ok(view) => Ok(Some(view)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn copyable(label: &str, value: &str, id: &str) -> Markup {
    html! {
        div.copy-row {
            span.label id=(format!("{id}-label")) { (label) }
            code id=(id) aria-labelledby=(format!("{id}-label")) { (value) }
            button.copy type="button" data-copy=(value) hidden { "Copy" }
        }
    }
}

fn hash_form(v: &CheckoutView) -> Markup {
    html! {
        form.hash method="post" action=(format!("/checkout/{}/transaction", v.session.id)) {
            label for="transactionHash" { "Already sent it? Paste the transaction hash" }
            input id="transactionHash" name="transactionHash" required pattern="0x[0-9a-fA-F]{64}"
                autocomplete="off" spellcheck="false" placeholder="0x…" aria-describedby="hash-help";
            p.help id="hash-help" { "0x followed by 64 characters, as your wallet shows it. We check it on Polygon ourselves." }
            button type="submit" { "Check my payment" }
        }
    }
}

fn live_payment(v: &CheckoutView) -> Markup {
    let s = &v.session;
    let token = s.currency.symbol();
    html! {
        section.way aria-labelledby="way-wallet" {
            h2 id="way-wallet" { "Pay with a browser wallet" }
            button.primary #wallet-pay type="button" hidden
                data-chain-id=(s.chain_id) data-attempt=(format!("/v1/public/checkout-sessions/{}/wallet-payment-attempts", s.id)) {
                "Pay " (money(&v.amount_due)) " " (token) " with my wallet"
            }
            p.help #wallet-status role="status" aria-live="polite" { "Needs a browser wallet (such as MetaMask) and JavaScript." }
        }
        @match v.scan_or_copy {
            Ok(()) => {
                section.way aria-labelledby="way-scan" {
                    h2 id="way-scan" { "Scan with a wallet app" }
                    @if let Some(svg) = stablepay_http::qr::svg(&v.payment_uri()) {
                        div.qr role="img" aria-label=(format!("QR code: send {} {token} on Polygon", money(&v.amount_due))) { (PreEscaped(svg)) }
                    }
                    p.help { "The code asks your wallet for exactly this transfer (EIP-681)." }
                }
                section.way aria-labelledby="way-copy" {
                    h2 id="way-copy" { "Or send it yourself" }
                    p { "Send exactly this amount of " (token) " on Polygon (chain " (s.chain_id) ") to this address:" }
                    (copyable("Address", s.settlement_wallet.as_str(), "pay-address"))
                    (copyable("Amount", &typed(&v.amount_due), "pay-amount"))
                    (copyable(&format!("{token} contract"), s.token_contract.as_str(), "pay-token"))
                }
            }
            Err(reason) => {
                p.notice #scan-unavailable data-code="SCAN_OR_COPY_UNAVAILABLE" { (reason.message()) }
                (copyable("Address", s.settlement_wallet.as_str(), "pay-address"))
            }
        }
        (hash_form(v))
    }
}

fn test_payment(v: &CheckoutView) -> Markup {
    html! {
        section.way aria-labelledby="way-simulate" {
            h2 id="way-simulate" { "Simulate a payment" }
            p { "This is a test checkout: the buttons simulate a transfer, which is verified and credited exactly like a real one." }
            form method="post" action=(format!("/checkout/{}/simulate", v.session.id)) {
                div.buttons {
                    button.primary type="submit" name="outcome" value="full" { "Pay in full (" (money(&v.amount_due)) ")" }
                    button type="submit" name="outcome" value="partial" { "Pay half" }
                    button type="submit" name="outcome" value="over" { "Overpay by 10 %" }
                    button type="submit" name="outcome" value="failed" { "Failed transfer" }
                }
            }
        }
    }
}

fn latest_payment(v: &CheckoutView) -> Markup {
    let Some(p) = &v.latest else { return html! {} };
    let token = v.session.currency.symbol();
    html! {
        section.latest aria-labelledby="latest" {
            h2 id="latest" { "Latest payment" }
            dl {
                dt { "Status" } dd #payment-status { (p.status.as_str()) }
                dt { "Received" } dd { (money(&p.amount_received)) " " (token) }
                dt { "Transaction" } dd { code.hash { (p.transaction_hash.as_str()) } }
                @if let Some(reason) = p.failure_reason { dt { "Why" } dd { (reason.as_str().replace('_', " ")) } }
            }
        }
    }
}

/// What the customer is paying for: the invoice's lines (or its reference), who it is for, and
/// the full invoice.
fn summary(v: &CheckoutView) -> Markup {
    let inv = &v.aggregate.invoice;
    let c = &inv.fields.content;
    let token = v.session.currency.symbol();
    let customer = c.customer.as_ref().and_then(|c| c.name.clone().or_else(|| c.company.clone()));
    html! {
        section.summary aria-labelledby="paying-for" {
            h2 id="paying-for" { "What you are paying for" }
            @if c.lines.is_empty() {
                p { (c.external_reference.as_deref().unwrap_or("Payment")) }
            } @else {
                table.lines {
                    caption.sr-only { "Items" }
                    tbody {
                        @for l in &c.lines {
                            tr {
                                td { bdi { (l.description) } @if l.quantity != stablepay_domain::money::Amount::one() { span.small { " × " (crate::page::plain(&l.quantity)) } } }
                                td.num { (money(&l.amount())) " " (token) }
                            }
                        }
                        tr.total { td { "Total" } td.num { (money(&inv.totals.total)) " " (token) } }
                    }
                }
            }
            @if let Some(name) = &customer { p.small { "For " (name) } }
            @if let Some(t) = &inv.public_token {
                p.small { a href=(format!("/i/{}", t.as_str())) { "See the full invoice" } }
            }
        }
    }
}

/// The paid state: thanks, the transaction on the explorer (live), the receipt, the way back.
fn paid_block(v: &CheckoutView, pages: &PublicPages) -> Markup {
    let live = v.session.scope.mode == Mode::Live;
    html! {
        div.state.ok role="status" {
            h2 { "Paid" }
            p { "Thank you: " bdi { (v.merchant_name) } " received your payment." }
            @if let Some(m) = &v.success_message { p { (m) } }
            @if let (true, Some(p)) = (live, &v.latest) {
                p { a #explorer href=(pages.transaction(p.transaction_hash.as_str())) rel="noopener noreferrer" { "View the transaction on Polygonscan" } }
            }
            @if let Some(t) = &v.aggregate.invoice.public_token {
                p { a #receipt href=(pages.invoice_pdf(t)) download { "Download the receipt (PDF)" } }
            }
            @if let Some(url) = &v.session.success_url {
                p { a.button.primary href=(url.to_string()) data-redirect=(url.to_string()) { "Return to " bdi { (v.merchant_name) } } }
            }
        }
    }
}

fn status_block(v: &CheckoutView, pages: &PublicPages) -> Markup {
    let token = v.session.currency.symbol();
    let invoice_url = v.aggregate.invoice.public_token.as_ref().map(|t| format!("/i/{}", t.as_str()));
    html! {
        @match v.phase {
            CheckoutPhase::Paid => {
                (paid_block(v, pages))
            }
            CheckoutPhase::Validating => {
                div.state role="status" {
                    h2 { "Verifying your payment" }
                    p { "Your transfer was received and is being verified on Polygon. This page updates by itself once its block is final." }
                }
            }
            CheckoutPhase::Underpaid => {
                div.state.warn role="status" {
                    h2 { "Partly paid" }
                    p { "Your transfer was less than the amount due. " strong { (money(&v.amount_due)) " " (token) } " is still due." }
                }
            }
            CheckoutPhase::Failed => {
                div.state.warn role="status" {
                    h2 { "The last transfer was not accepted" }
                    p { "Nothing was credited. You can pay again below." }
                }
            }
            CheckoutPhase::Held => {
                div.state.warn role="status" {
                    h2 { "Your transfer is being reviewed" }
                    p { "The transfer reported for this checkout is claimed for another checkout as well, so " bdi { (v.merchant_name) } " will decide where it belongs. If you sent it, do not pay again: nothing is lost, and it will be credited once the merchant has reviewed it." }
                    @if let Some(email) = &v.support_email {
                        p { "Questions: " a href=(format!("mailto:{email}")) { (email) } }
                    }
                }
            }
            CheckoutPhase::Expired | CheckoutPhase::Cancelled => {
                div.state.off role="status" {
                    h2 { @if v.phase == CheckoutPhase::Expired { "This checkout has expired" } @else { "This checkout was cancelled" } }
                    p { "It can no longer be paid; do not send anything to it." }
                    @if let (Some(url), true) = (&invoice_url, v.aggregate.invoice.collection_state.is_collectible()) {
                        p { a.button href=(url) { "Open the invoice to pay what is due" } }
                    }
                }
            }
            CheckoutPhase::Pay => {}
        }
    }
}

/// The checkout page's body.
pub fn render(v: &CheckoutView, pages: &PublicPages) -> Markup {
    let s = &v.session;
    let token = s.currency.symbol();
    let reference = v.aggregate.invoice.number.clone().or_else(|| s.external_reference.clone());
    html! {
        div.card data-status-url=(format!("/v1/public/checkout-sessions/{}", s.id))
            data-events-url=(format!("/checkout/{}/events", s.id))
            data-telemetry=(format!("/v1/public/checkout-sessions/{}/telemetry", s.id)) data-phase=(v.phase.as_str())
            data-payment=(v.latest.as_ref().map_or("", |p| p.status.as_str())) {
            (merchant(&v.merchant_name, v.logo.as_ref()))
            h1 {
                @if v.phase.payable() { "Amount due" } @else { "Checkout" }
                @if let Some(r) = &reference { span.ref { " · " (r) } }
            }
            @if v.phase != CheckoutPhase::Paid {
                p.amount #amount-due { (money(&v.amount_due)) " " span.token { (token) } }
            }
            p.network { (token) " on Polygon (chain " (s.chain_id) ")" }
            @if v.phase.payable() {
                p.expiry {
                    "Expires in "
                    time #countdown datetime=(timestamp(s.expires_at)) data-seconds-left=(v.seconds_left()) {
                        (format!("{} min", (v.seconds_left() + 59) / 60))
                    }
                    " (" (when(s.expires_at)) ")"
                }
            }
            (status_block(v, pages))
            @if v.phase.payable() {
                @if s.scope.mode == Mode::Test { (test_payment(v)) } @else { (live_payment(v)) }
            }
            (latest_payment(v))
            (summary(v))
            @if v.phase.payable() {
                @if let Some(url) = &s.cancel_url {
                    p.cancel { a href=(url.to_string()) { "Cancel and return to " bdi { (v.merchant_name) } } }
                }
            }
            @if let Some(support) = &v.support_email {
                p.support.small { "Questions? " a href=(format!("mailto:{support}")) { (support) } }
            }
        }
    }
}

/// The hosted checkout page.
#[get("/checkout/{id}")]
pub async fn checkout_page(state: web::Data<AppState>, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(v) = load(&state, &id).await? else { return Ok(not_found()) };
    let title =
        format!("Pay {} · {} {}", isolated(&v.merchant_name), money(&v.amount_due), v.session.currency.symbol());
    let body = render(&v, state.use_cases.pages());
    Ok(merchant_page(StatusCode::OK, &title, Some(v.session.scope.mode), v.logo.as_ref(), body))
}

/// A form post from a checkout page: the API's body rules (1 MiB, the body deadline, answers in
/// the envelope), the same-origin check, then the checkout, which must be of `mode` (the other
/// mode's form does not exist: not found).
async fn page_post(
    req: &HttpRequest,
    state: &AppState,
    (id, mode): (&str, Mode),
    payload: web::Payload,
) -> Result<Result<(CheckoutView, Vec<u8>), HttpResponse>, ApiError> {
    let form = read_body(req, &mut payload.into_inner()).await?;
    if !same_origin(req, state.use_cases.pages().base()) {
        return Ok(Err(forbidden()));
    }
    Ok(match load(state, id).await? {
        Some(v) if v.session.scope.mode == mode => Ok((v, form.to_vec())),
        _ => Err(not_found()),
    })
}

/// The value of field `name` of a URL-encoded form.
pub fn form_field(form: &[u8], name: &str) -> Option<String> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(form)
        .ok()?
        .into_iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim().to_owned())
}

/// Live mode: the customer reports the hash of the transfer they sent (the same as `POST
/// /v1/public/checkout-sessions/{id}/payments`); the page then follows its verification.
#[post("/checkout/{id}/transaction")]
pub async fn submit_from_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (v, form) = match page_post(&req, &state, (&id, Mode::Live), payload).await? {
        Ok(found) => found,
        Err(answer) => return Ok(answer),
    };
    let back = format!("/checkout/{}", v.session.id);
    let Some(tx) = form_field(&form, "transactionHash").as_deref().and_then(TxHash::parse) else {
        let body = html! {
            h1 { "Not a transaction hash" }
            p { "A transaction hash is 0x followed by 64 hexadecimal characters, as your wallet shows it." }
            p { a href=(back) { "Back to the checkout" } }
        };
        return Ok(page(StatusCode::BAD_REQUEST, "Not a transaction hash", Some(Mode::Live), body));
    };
    match state.use_cases.invoices().submit_payment(&v.session.id, &tx).await {
        Ok(_) | Err(Error::CheckoutSessionNotPayable) => Ok(see_other(&back)),
        Err(e) => Err(e.into()),
    }
}

/// Test mode: simulate a transfer of the amount due now (full, half, 10 % over, or a failed
/// one) from the checkout page's form.
#[post("/checkout/{id}/simulate")]
pub async fn simulate_from_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (v, form) = match page_post(&req, &state, (&id, Mode::Test), payload).await? {
        Ok(found) => found,
        Err(answer) => return Ok(answer),
    };
    let due = v.amount_due.clone();
    let (amount, succeed) = match form_field(&form, "outcome").as_deref() {
        Some("full") | None => (due, true),
        Some("partial") => {
            let half = due.basis_points(5000);
            (if half.is_zero() { due } else { half }, true)
        }
        Some("over") => (due.add(&due.basis_points(1000)).max(due.clone()), true),
        Some("failed") => (due, false),
        Some(_) => {
            let body = html! {
                h1 { "Unknown outcome" }
                p { "Choose one of the simulate buttons: full, half, over or failed." }
                p { a href=(format!("/checkout/{}", v.session.id)) { "Back to the checkout" } }
            };
            return Ok(page(StatusCode::BAD_REQUEST, "Unknown outcome", Some(Mode::Test), body));
        }
    };
    let input = TestPaymentInput { amount: Some(amount), transaction_hash: None, succeed };
    match state.use_cases.invoices().pay_test(&v.session.scope, &v.session.id, input).await {
        Ok(_) | Err(Error::CheckoutSessionNotPayable) => Ok(see_other(&format!("/checkout/{}", v.session.id))),
        Err(e) => Err(e.into()),
    }
}

/// A checkout id from a path (an unknown shape is an unknown checkout).
pub fn session_id(text: &str) -> Result<CheckoutSessionId, Error> {
    CheckoutSessionId::parse(text).ok_or(Error::NotFound(Resource::CheckoutSession))
}
