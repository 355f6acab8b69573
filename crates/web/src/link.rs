//! The page of a payment link (a link's `url`): it shows the link and its form, which goes
//! through the same submission as `POST /v1/public/payment-links/{publicId}/checkout` (same
//! rules, same rate limit, exactly once per rendered form), then to the new checkout's page. A
//! refused field is shown next to its input with the service's message.

use actix_web::http::StatusCode;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, ResponseError, get, post, web};
use maud::{Markup, html};
use serde_json::{Value, json};
use stablepay_domain::Error;
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::{PublicToken, random_base62};
use stablepay_domain::money::Decimal6;
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::{AmountRule, MAX_CUSTOMER_AMOUNT};
use stablepay_domain::payment_link::service::{LinkSubmission, PublicLink};
use stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
use stablepay_domain::use_cases::Context;
use stablepay_http::body::read_body;
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::idempotency::{Outcome, SubmissionKey, keyed, public_request};
use stablepay_http::ratelimit::enforce;
use stablepay_http::respond::to_data;
use stablepay_http::state::AppState;

use crate::page::{forbidden, merchant, merchant_page, money, not_found, same_origin, see_other, typed, when};

/// What the customer sent, and what was wrong with it.
#[derive(Default)]
struct Sent {
    amount: String,
    email: String,
    name: String,
    reference: String,
    /// The field the refusal names (`amount`, `email`, `name`, `customerReference`), if any.
    field: Option<String>,
    message: Option<String>,
}

/// Why the page takes no submission now, in the customer's words.
fn closed_reason(shown: &PublicLink) -> Option<String> {
    let (link, now) = (&shown.link, shown.now);
    match link.state_at(now) {
        LinkState::Paused => Some("This link is not accepting payments right now.".into()),
        LinkState::Expired => Some("This link has expired.".into()),
        LinkState::Completed => Some("This link was already used and paid.".into()),
        LinkState::Archived => Some("This link is no longer available.".into()),
        LinkState::Active if !shown.available => Some("This merchant cannot take payments right now.".into()),
        LinkState::Active => match link.config.active_at {
            Some(at) if at > now => Some(format!("This link opens on {}.", when(at))),
            _ if link.reserved_at(now) => Some(
                "Someone is paying through this link right now. If their checkout expires unpaid, the link opens \
again; try again later."
                    .into(),
            ),
            _ => None,
        },
    }
}

/// A labelled input with its error (if the refusal names it).
fn input(sent: &Sent, name: &str, label: &str, kind: &str, value: &str, attrs: Markup) -> Markup {
    let error = sent.field.as_deref().filter(|f| *f == name).and(sent.message.as_deref());
    let id = format!("f-{name}");
    html! {
        div.field {
            label for=(id) { (label) }
            input id=(id) name=(name) type=(kind) value=(value) required
                aria-invalid=[error.map(|_| "true")] aria-describedby=[error.map(|_| format!("{id}-error"))] { (attrs) }
            @if let Some(e) = error { p.error id=(format!("{id}-error")) { (e) } }
        }
    }
}

fn render(shown: &PublicLink, key: &str, sent: &Sent) -> Markup {
    let (link, c) = (&shown.link, &shown.link.config);
    let token = c.currency.symbol();
    let closed = closed_reason(shown);
    // A refusal of no particular input is shown above the form.
    let general = sent
        .message
        .as_deref()
        .filter(|_| !matches!(sent.field.as_deref(), Some("amount" | "email" | "name" | "customerReference")));
    html! {
        div.card {
            (merchant(&shown.merchant_name, shown.logo.as_ref()))
            h1 dir="auto" { (c.title) }
            @if let Some(d) = &c.description { p.pre dir="auto" { (d) } }
            @if let AmountRule::Fixed(amount) = &c.amount {
                p.amount { (money(amount)) " " span.token { (token) } }
            }
            p.network { "Paid in " (token) " on Polygon." }
            @if let Some(reason) = &closed {
                p.state.off role="status" { (reason) }
            } @else {
                @if let Some(m) = general { p.error role="alert" { (m) } }
                form method="post" action=(format!("/l/{}", link.public_id.as_str())) novalidate {
                    input type="hidden" name="version" value=(link.version);
                    input type="hidden" name="idempotencyKey" value=(key);
                    @if let AmountRule::CustomerEntered { minimum, maximum } = &c.amount {
                        @let max = maximum.as_ref().map_or_else(|| MAX_CUSTOMER_AMOUNT.to_owned(), typed);
                        (input(sent, "amount", &format!("Amount in {token} (from {} to {max})", typed(minimum)), "text", &sent.amount,
                            html! { }))
                    }
                    @if c.collect.email { (input(sent, "email", "Email", "email", &sent.email, html! {})) }
                    @if c.collect.name { (input(sent, "name", "Name", "text", &sent.name, html! {})) }
                    @if c.collect.reference { (input(sent, "customerReference", "Your reference", "text", &sent.reference, html! {})) }
                    button.primary type="submit" { "Continue to payment" }
                }
            }
        }
    }
}

async fn load(state: &AppState, public: &str) -> Result<Option<PublicLink>, ApiError> {
    let Some(id) = PublicToken::parse(public) else { return Ok(None) };
    match state.use_cases.links().public(&id).await {
        Ok(shown) => Ok(Some(shown)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

fn show(state: &AppState, shown: &PublicLink, sent: &Sent, status: StatusCode) -> HttpResponse {
    let key = random_base62(state.use_cases.crypto(), 22);
    let body = render(shown, &key, sent);
    merchant_page(
        status,
        &stablepay_domain::text::isolated(&shown.link.config.title),
        Some(shown.link.scope.mode),
        shown.logo.as_ref(),
        body,
    )
}

/// The hosted page of a payment link.
#[get("/l/{publicId}")]
pub async fn link_page(state: web::Data<AppState>, public: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(shown) = load(&state, &public).await? else { return Ok(not_found()) };
    Ok(show(&state, &shown, &Sent::default(), StatusCode::OK))
}

fn value(fields: &[(String, String)], name: &str) -> String {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_owned()).unwrap_or_default()
}

fn some(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

/// A refusal in the customer's words.
fn in_words(error: &Value) -> String {
    let details = &error["details"];
    match (error["code"].as_str().unwrap_or(""), details["field"].as_str().unwrap_or("")) {
        ("FIELD_REQUIRED", "amount") => "Enter the amount you want to pay.".into(),
        ("FIELD_REQUIRED", "email") => "Enter your email address.".into(),
        ("FIELD_REQUIRED", "name") => "Enter your name.".into(),
        ("FIELD_REQUIRED", _) => "Enter your reference.".into(),
        ("AMOUNT_OUT_OF_RANGE", _) => {
            let bound = |name: &str, fallback: &str| {
                details[name]
                    .as_str()
                    .and_then(|t| stablepay_domain::money::Decimal6::parse(t).ok())
                    .map_or_else(|| fallback.to_owned(), |d| typed(&d))
            };
            format!("Enter an amount from {} to {}.", bound("minimum", "the minimum"), bound("maximum", "the maximum"))
        }
        ("INVALID_AMOUNT", _) => "Enter an amount such as 12.50 (at most six decimals).".into(),
        ("VALIDATION_ERROR", "email") => "Enter a valid email address, such as name@example.com.".into(),
        ("VALIDATION_ERROR", "name" | "customerReference") => "This is too long (at most 200 characters).".into(),
        ("CONFIG_CHANGED", _) => "This link changed while you were on the page: check it and continue again.".into(),
        _ => error["message"].as_str().unwrap_or("Something went wrong; please try again.").to_owned(),
    }
}

/// The link page's form: a submission, then the checkout page (or the page again with what went
/// wrong, next to its field).
#[post("/l/{publicId}")]
pub async fn submit_link_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    public: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let form = read_body(&req, &mut payload.into_inner()).await?;
    if !same_origin(&req, state.use_cases.pages().base()) {
        return Ok(forbidden());
    }
    let Some(shown) = load(&state, &public).await? else { return Ok(not_found()) };
    let fields = serde_urlencoded::from_bytes::<Vec<(String, String)>>(&form).unwrap_or_default();
    let mut sent = Sent {
        amount: value(&fields, "amount"),
        email: value(&fields, "email"),
        name: value(&fields, "name"),
        reference: value(&fields, "customerReference"),
        ..Sent::default()
    };
    let parts = ["payment_link", public.as_str()];
    if let Err(e) = enforce(&req, &state, &PUBLIC_CHECKOUT, &parts, ErrorCode::RATE_LIMITED).await {
        sent.message = Some(e.message.clone());
        // The page carries the refusal's headers as the API's 429 does (Retry-After, RateLimit,
        // RateLimit-Policy).
        let mut refused = show(&state, &shown, &sent, e.code.status());
        for (name, value) in e.headers() {
            if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name.as_bytes()), HeaderValue::from_str(value)) {
                refused.headers_mut().insert(name, value);
            }
        }
        return Ok(refused);
    }
    let Ok(version) = value(&fields, "version").parse::<i64>() else {
        sent.message = Some("The form could not be read; please try again.".into());
        return Ok(show(&state, &shown, &sent, StatusCode::BAD_REQUEST));
    };
    let amount = some(&sent.amount);
    let submission = LinkSubmission {
        version,
        amount: None,
        email: some(&sent.email),
        name: some(&sent.name),
        customer_reference: some(&sent.reference),
    };
    let (scope, id) = (shown.link.scope.clone(), shown.link.public_id.clone());
    let key = value(&fields, "idempotencyKey");
    let run_state = state.clone();
    let work = move |claim| submit(run_state, id, amount, submission, claim);
    // After a crash between the work and its answer: the checkout the work created.
    let again = |committed: Committed| async move {
        let session = committed.session.ok_or_else(ApiError::internal)?;
        Ok((StatusCode::CREATED, to_data(&json!({ "checkoutSessionId": session }))?))
    };
    let answer = match public_request(&state, scope, (public.as_str(), SubmissionKey::Form(&key)), &req, &form) {
        Ok(request) => keyed(state.clone(), request, (work, again)).await,
        Err(e) => e.error_response(),
    };
    let status = answer.status();
    let body = actix_web::body::to_bytes(answer.into_body()).await.map_err(|_| ApiError::internal())?;
    let json: Value = serde_json::from_slice(&body).map_err(|_| ApiError::internal())?;
    if status.is_success() {
        let session = json["data"]["checkoutSessionId"].as_str().ok_or_else(ApiError::internal)?;
        return Ok(see_other(&format!("/checkout/{session}")));
    }
    sent.field = json["error"]["details"]["field"].as_str().map(str::to_owned);
    sent.message = Some(in_words(&json["error"]));
    // The link as it stands now (a changed configuration, a reservation taken meanwhile).
    let Some(current) = load(&state, &public).await? else { return Ok(not_found()) };
    Ok(show(&state, &current, &sent, status))
}

/// The page's submission, through the same use case as the API's. The answer is recorded under
/// the form's key, so it names only what the page needs: the new checkout.
async fn submit(
    state: web::Data<AppState>,
    id: PublicToken,
    amount: Option<String>,
    mut submission: LinkSubmission,
    claim: Option<IdempotencyClaim>,
) -> Outcome {
    submission.amount =
        amount.map(|a| Decimal6::parse(&a).map_err(|e| Error::invalid_amount("amount", e))).transpose()?;
    let links = state.use_cases.within(Context::new(state.use_cases.clock()).claimed(claim)).links();
    let created = links.submit(&id, submission).await?;
    Ok((StatusCode::CREATED, to_data(&json!({ "checkoutSessionId": created.checkout_session_id.to_string() }))?))
}
