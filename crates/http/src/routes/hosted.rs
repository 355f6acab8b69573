//! Hosted pages served to customers: the checkout page and the hosted invoice page. Plain
//! server-rendered HTML that works without JavaScript. In test mode the checkout page offers
//! "Simulate payment" (full, partial, over, failed), which runs the same verification and
//! crediting as a real payment; in live mode it shows where to pay and takes the transaction
//! hash of a transfer already sent. Wallet connect and QR codes arrive with the hosted-page issue.

use actix_web::http::header::{CACHE_CONTROL, CONTENT_TYPE, LOCATION};
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::billing::{InvoiceAggregate, PublicRef, TestPaymentInput};
use stablepay_domain::checkout::CheckoutSession;
use stablepay_domain::ids::{CheckoutSessionId, PublicToken};
use stablepay_domain::merchant::POLYGON_CHAIN_ID;
use stablepay_domain::payment::TxHash;
use stablepay_domain::url::HttpUrl;
use stablepay_domain::{Error, Mode, Resource};

use crate::error::ApiError;
use crate::state::AppState;
use crate::wire::timestamp;

/// Escapes text for HTML.
pub(crate) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

pub(crate) fn page(title: &str, body: &str, status: actix_web::http::StatusCode) -> HttpResponse {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
<title>{}</title><style>body{{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#1a1a1a}}\
dl{{display:grid;grid-template-columns:max-content 1fr;gap:.4rem 1rem}}dt{{color:#555}}dd{{margin:0;word-break:break-all}}\
.amount{{font-size:2rem;font-weight:600}}.status{{display:inline-block;padding:.1rem .5rem;border-radius:.3rem;background:#eef}}\
.test{{background:#fff4d6;padding:.5rem;border-radius:.3rem}}button{{margin:.2rem;padding:.4rem .8rem}}table{{border-collapse:collapse;width:100%}}\
td,th{{border-bottom:1px solid #ddd;padding:.3rem;text-align:left}}</style></head><body>{}</body></html>",
        esc(title),
        body
    );
    let mut res = HttpResponse::build(status);
    res.insert_header((CONTENT_TYPE, "text/html; charset=utf-8"));
    secure(&mut res);
    res.body(html)
}

/// The headers every hosted page carries: no caching, no framing by other sites, no scripts or
/// outside resources, forms posting only here, no MIME sniffing, and no referrer (the hosted
/// invoice URL holds its access token).
pub(crate) fn secure(res: &mut actix_web::HttpResponseBuilder) {
    res.insert_header((CACHE_CONTROL, "no-store"))
        .insert_header((
            "Content-Security-Policy",
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; form-action 'self'; \
             frame-ancestors 'none'; base-uri 'none'",
        ))
        .insert_header(("X-Frame-Options", "DENY"))
        .insert_header(("X-Content-Type-Options", "nosniff"))
        .insert_header(("Referrer-Policy", "no-referrer"));
}

/// Whether a form post comes from this service's own pages: its `Origin` (or, without one, its
/// `Referer`) must be the public base URL's origin. Browsers send one of them with every form
/// post, so a page of another site cannot post the form (cross-site request forgery).
pub(crate) fn same_origin(req: &HttpRequest, public_base_url: &str) -> bool {
    let Ok(ours) = HttpUrl::parse(public_base_url) else { return false };
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok());
    let theirs = header("origin").or_else(|| header("referer"));
    theirs.and_then(|t| HttpUrl::parse(t).ok()).is_some_and(|t| t.origin() == ours.origin())
}

pub(crate) fn not_found() -> HttpResponse {
    page(
        "Not found",
        "<h1>Not found</h1><p>This payment page does not exist.</p>",
        actix_web::http::StatusCode::NOT_FOUND,
    )
}

fn payment_details(agg: &InvoiceAggregate, session: &CheckoutSession) -> String {
    format!(
        "<dl><dt>Amount due</dt><dd class=\"amount\">{amount} {token}</dd>\
<dt>Token</dt><dd>{token} (contract {contract})</dd>\
<dt>Network</dt><dd>Polygon (chain {chain})</dd>\
<dt>Pay to</dt><dd><code>{wallet}</code></dd>\
<dt>Status</dt><dd><span class=\"status\">{status}</span> · invoice {state}</dd>\
<dt>Expires</dt><dd>{expires}</dd>\
<dt>Invoice</dt><dd>{number}</dd></dl>",
        amount = esc(&session.amount_due.to_string()),
        token = esc(session.currency.symbol()),
        contract = esc(session.token_contract.as_str()),
        chain = session.chain_id,
        wallet = esc(session.settlement_wallet.as_str()),
        status = esc(session.status.as_str()),
        state = esc(agg.invoice.collection_state.as_str()),
        expires = esc(&timestamp(session.expires_at)),
        number = esc(agg.invoice.number.as_deref().unwrap_or("")),
    )
}

/// The hosted checkout page.
#[get("/checkout/{id}")]
pub async fn checkout_page(state: web::Data<AppState>, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(id) = CheckoutSessionId::parse(&id) else { return Ok(not_found()) };
    let agg = match state.invoices.load_public(&PublicRef::Session(id.clone())).await {
        Ok(a) => a,
        Err(Error::NotFound(_)) => return Ok(not_found()),
        Err(e) => return Err(e.into()),
    };
    let Some(session) = agg.session(&id) else { return Ok(not_found()) };
    let now = state.clock.now(&session.scope).await?;
    let mut body = format!("<h1>Pay {}</h1>", esc(agg.invoice.number.as_deref().unwrap_or("invoice")));
    body.push_str(&payment_details(&agg, session));
    if session.scope.mode == Mode::Test {
        body.push_str("<p class=\"test\">Test mode: no real tokens move. Use the buttons to simulate a transfer.</p>");
        if session.is_payable(now) {
            body.push_str(&format!(
                "<form method=\"post\" action=\"/checkout/{}/simulate\"><strong>Simulate payment</strong><br>",
                esc(id.as_str())
            ));
            for (value, label) in [("full", "Full"), ("partial", "Partial"), ("over", "Over"), ("failed", "Failed")] {
                body.push_str(&format!("<button type=\"submit\" name=\"outcome\" value=\"{value}\">{label}</button>"));
            }
            body.push_str("</form>");
        }
    } else {
        body.push_str(
            "<p>Send exactly the amount due of the token above on Polygon to the address shown, from your \
wallet. The payment is verified on the chain itself; reload this page to follow it.</p>",
        );
        if session.is_payable(now) {
            body.push_str(&format!(
                "<form method=\"post\" action=\"/checkout/{}/transaction\"><label>Already sent it? Transaction hash \
<input name=\"transactionHash\" required pattern=\"0x[0-9a-fA-F]{{64}}\" size=\"66\" autocomplete=\"off\"></label> \
<button type=\"submit\">Check my payment</button></form>",
                esc(id.as_str())
            ));
        }
    }
    if let Some(p) = agg.latest_payment_of(&id) {
        body.push_str(&format!(
            "<h2>Latest payment</h2><dl><dt>Status</dt><dd>{}</dd><dt>Received</dt><dd>{}</dd><dt>Transaction</dt><dd><code>{}</code></dd></dl>",
            esc(p.status.as_str()),
            esc(&p.amount_received.to_string()),
            esc(p.transaction_hash.as_str())
        ));
    }
    Ok(page("Checkout", &body, actix_web::http::StatusCode::OK))
}

/// A form post from a checkout page, once its origin is checked and its session loaded.
enum PagePost {
    /// The session and the form body.
    Session(Box<CheckoutSession>, Vec<u8>),
    /// The answer already decided (a refused origin, an unknown session).
    Answer(HttpResponse),
}

/// Reads a checkout page's form post: the API's body rules (1 MiB, the body deadline, answers
/// in the envelope), the same-origin check, then the session.
async fn page_post(req: &HttpRequest, state: &AppState, id: &str, payload: web::Payload) -> Result<PagePost, ApiError> {
    let form = crate::json::read_body(req, &mut payload.into_inner()).await?;
    if !same_origin(req, &state.public_base_url) {
        return Ok(PagePost::Answer(page(
            "Forbidden",
            "<h1>Forbidden</h1><p>This form can only be sent from its own checkout page.</p>",
            actix_web::http::StatusCode::FORBIDDEN,
        )));
    }
    let Some(id) = CheckoutSessionId::parse(id) else { return Ok(PagePost::Answer(not_found())) };
    let agg = match state.invoices.load_public(&PublicRef::Session(id.clone())).await {
        Ok(a) => a,
        Err(Error::NotFound(_)) => return Ok(PagePost::Answer(not_found())),
        Err(e) => return Err(e.into()),
    };
    let session = agg.session(&id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    Ok(PagePost::Session(Box::new(session.clone()), form.to_vec()))
}

/// The value of field `name` of a URL-encoded form whose values need no decoding (buttons'
/// values, hexadecimal hashes); surrounding spaces (`+`) are dropped.
fn form_field<'a>(form: &'a [u8], name: &str) -> Option<&'a str> {
    let form = std::str::from_utf8(form).ok()?;
    form.split('&').find_map(|pair| pair.strip_prefix(name)?.strip_prefix('=')).map(|v| v.trim_matches('+'))
}

fn back_to(id: &CheckoutSessionId) -> HttpResponse {
    let mut res = HttpResponse::SeeOther();
    res.insert_header((LOCATION, format!("/checkout/{id}")));
    secure(&mut res);
    res.finish()
}

/// Live mode: the customer reports the hash of the transfer they sent from the checkout page's
/// form (the same as `POST /v1/public/checkout-sessions/{id}/payments`); the page then shows
/// the payment's status as verification goes on.
#[post("/checkout/{id}/transaction")]
pub async fn submit_from_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (session, form) = match page_post(&req, &state, &id, payload).await? {
        PagePost::Session(session, form) => (session, form),
        PagePost::Answer(answer) => return Ok(answer),
    };
    if session.scope.mode != Mode::Live {
        return Ok(not_found());
    }
    let Some(tx) = form_field(&form, "transactionHash").and_then(TxHash::parse) else {
        let body = format!(
            "<h1>Not a transaction hash</h1><p>A transaction hash is 0x followed by 64 hexadecimal characters, \
as your wallet shows it.</p><p><a href=\"/checkout/{}\">Back to the checkout</a></p>",
            esc(session.id.as_str())
        );
        return Ok(page("Not a transaction hash", &body, actix_web::http::StatusCode::BAD_REQUEST));
    };
    match state.billing().submit_payment(&session.id, &tx).await {
        Ok(_) | Err(Error::CheckoutSessionNotPayable) => Ok(back_to(&session.id)),
        Err(e) => Err(e.into()),
    }
}

/// Test mode: simulate a transfer from the checkout page's form.
#[post("/checkout/{id}/simulate")]
pub async fn simulate_from_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    id: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (session, form) = match page_post(&req, &state, &id, payload).await? {
        PagePost::Session(session, form) => (session, form),
        PagePost::Answer(answer) => return Ok(answer),
    };
    if session.scope.mode != Mode::Test {
        return Ok(not_found());
    }
    let id = session.id.clone();
    let outcome = form_field(&form, "outcome").unwrap_or("full");
    let due = session.amount_due.clone();
    let (amount, succeed) = match outcome {
        "partial" => {
            let half = due.basis_points(5000);
            (if half.is_zero() { due } else { half }, true)
        }
        "over" => (due.add(&due.basis_points(1000)).max(due.clone()), true),
        "failed" => (due, false),
        _ => (due, true),
    };
    let scope = session.scope.clone();
    match state
        .billing()
        .pay_test(&scope, &id, TestPaymentInput { amount: Some(amount), transaction_hash: None, succeed })
        .await
    {
        Ok(_) | Err(Error::CheckoutSessionNotPayable) => Ok(back_to(&id)),
        Err(e) => Err(e.into()),
    }
}

/// The hosted invoice page.
#[get("/i/{token}")]
pub async fn invoice_page(state: web::Data<AppState>, token: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(token) = PublicToken::parse(&token) else { return Ok(not_found()) };
    let agg = match state.invoices.load_public(&PublicRef::Token(token)).await {
        Ok(a) => a,
        Err(Error::NotFound(_)) => return Ok(not_found()),
        Err(e) => return Err(e.into()),
    };
    let inv = &agg.invoice;
    let now = state.clock.now(&inv.scope).await?;
    let mut body = format!("<h1>Invoice {}</h1>", esc(inv.number.as_deref().unwrap_or("")));
    if !inv.fields.content.lines.is_empty() {
        body.push_str("<table><tr><th>Item</th><th>Qty</th><th>Unit</th><th>Amount</th></tr>");
        for l in &inv.fields.content.lines {
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&l.description),
                esc(&l.quantity.to_string()),
                esc(&l.unit_amount.to_string()),
                esc(&l.amount().to_string())
            ));
        }
        body.push_str("</table>");
    }
    let token = inv.fields.currency.symbol();
    body.push_str(&format!(
        "<dl><dt>Total</dt><dd>{} {token}</dd><dt>Paid</dt><dd>{} {token}</dd><dt>Remaining</dt><dd class=\"amount\">{} {token}</dd><dt>Status</dt><dd><span class=\"status\">{}</span></dd><dt>Network</dt><dd>Polygon (chain {})</dd><dt>Pay to</dt><dd><code>{}</code></dd></dl>",
        esc(&inv.totals.total.to_string()),
        esc(&inv.customer_amount_paid.to_string()),
        esc(&inv.remaining().to_string()),
        esc(inv.collection_state.as_str()),
        POLYGON_CHAIN_ID,
        esc(inv.settlement_wallet.as_str()),
    ));
    if let Some(memo) = &inv.fields.content.memo {
        body.push_str(&format!("<p>{}</p>", esc(memo)));
    }
    let payable = agg.sessions.iter().rev().find(|s| s.is_payable(now));
    match payable {
        Some(s) => body.push_str(&format!("<p><a href=\"/checkout/{}\">Pay now</a></p>", esc(s.id.as_str()))),
        None if inv.collection_state.is_collectible() => {
            body.push_str("<p>No checkout is open for this invoice; contact the merchant.</p>")
        }
        None => {}
    }
    Ok(page("Invoice", &body, actix_web::http::StatusCode::OK))
}
