//! The hosted page of a payment link (`url` of a link): plain server-rendered HTML that works
//! without JavaScript. It shows the link and posts its form here; the form goes through the same
//! submission as `POST /v1/public/payment-links/{publicId}/checkout` (same rules, same rate
//! limit, exactly once per rendered form), then redirects to the new checkout page.

use actix_web::http::StatusCode;
use actix_web::http::header::LOCATION;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use serde_json::Value;
use stablepay_domain::Mode;
use stablepay_domain::ids::random_base62;
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::{AmountRule, MAX_CUSTOMER_AMOUNT};
use stablepay_domain::payment_link::service::PublicLink;
use stablepay_domain::{Error, Resource};

use crate::error::ApiError;
use crate::routes::hosted::{esc, not_found, page, same_origin, secure};
use crate::routes::links::{public_id, submit};
use crate::state::AppState;
use crate::wire::timestamp;
use crate::wire_links::LinkCheckoutIn;

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
            Some(at) if at > now => Some(format!("This link opens at {}.", timestamp(at))),
            _ if link.reserved_at(now) => Some(
                "Someone is paying through this link right now. If their checkout expires unpaid, the link opens \
again; try later."
                    .into(),
            ),
            _ => None,
        },
    }
}

fn field(label: &str, name: &str, kind: &str, extra: &str) -> String {
    format!(
        "<p><label>{label}<br><input type=\"{kind}\" name=\"{name}\" required{extra}></label></p>",
        label = esc(label),
        name = esc(name),
        kind = esc(kind),
    )
}

fn render(shown: &PublicLink, key: &str, error: Option<&str>) -> String {
    let (link, c) = (&shown.link, &shown.link.config);
    let token = c.currency.symbol();
    let mut body = format!("<p>{}</p><h1>{}</h1>", esc(&shown.merchant_name), esc(&c.title));
    if link.scope.mode == Mode::Test {
        body.push_str("<p class=\"test\">Test mode: no real tokens move.</p>");
    }
    if let Some(d) = &c.description {
        body.push_str(&format!("<p>{}</p>", esc(d)));
    }
    if let AmountRule::Fixed(amount) = &c.amount {
        body.push_str(&format!("<p class=\"amount\">{} {}</p>", esc(&amount.to_string()), esc(token)));
    }
    body.push_str(&format!("<p>Paid in {} on Polygon.</p>", esc(token)));
    if let Some(reason) = closed_reason(shown) {
        body.push_str(&format!("<p class=\"status\">{}</p>", esc(&reason)));
        return body;
    }
    if let Some(e) = error {
        body.push_str(&format!("<p class=\"test\" role=\"alert\">{}</p>", esc(e)));
    }
    body.push_str(&format!(
        "<form method=\"post\" action=\"/l/{id}\"><input type=\"hidden\" name=\"version\" value=\"{version}\">\
<input type=\"hidden\" name=\"idempotencyKey\" value=\"{key}\">",
        id = esc(link.public_id.as_str()),
        version = link.version,
        key = esc(key),
    ));
    if let AmountRule::CustomerEntered { minimum, maximum } = &c.amount {
        let max = maximum.as_ref().map_or_else(|| MAX_CUSTOMER_AMOUNT.to_owned(), ToString::to_string);
        body.push_str(&field(
            &format!("Amount ({token}, {} to {})", minimum, max),
            "amount",
            "text",
            &format!(
                " inputmode=\"decimal\" pattern=\"[0-9]+(\\.[0-9]{{1,6}})?\" placeholder=\"{}\"",
                esc(&minimum.to_string())
            ),
        ));
    }
    if c.collect.email {
        body.push_str(&field("Email", "email", "email", " maxlength=\"254\" autocomplete=\"email\""));
    }
    if c.collect.name {
        body.push_str(&field("Name", "name", "text", " maxlength=\"200\" autocomplete=\"name\""));
    }
    if c.collect.reference {
        body.push_str(&field("Reference", "customerReference", "text", " maxlength=\"200\""));
    }
    body.push_str("<button type=\"submit\">Continue to payment</button></form>");
    body
}

async fn load(state: &AppState, public: &str) -> Result<Option<PublicLink>, ApiError> {
    let Ok(id) = public_id(public) else { return Ok(None) };
    match state.links_with(state.clock.as_ref()).public(&id).await {
        Ok(shown) => Ok(Some(shown)),
        Err(Error::NotFound(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The hosted page of a payment link.
#[get("/l/{publicId}")]
pub async fn link_page(state: web::Data<AppState>, public: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let Some(shown) = load(&state, &public).await? else { return Ok(not_found()) };
    let key = random_base62(state.crypto.as_ref(), 22);
    Ok(page(&shown.link.config.title, &render(&shown, &key, None), StatusCode::OK))
}

/// The form's fields (URL-encoded); an empty field is an absent one.
fn form_fields(form: &[u8]) -> Option<Vec<(String, String)>> {
    serde_urlencoded::from_bytes::<Vec<(String, String)>>(form).ok()
}

fn value(fields: &[(String, String)], name: &str) -> Option<String> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_owned()).filter(|v| !v.is_empty())
}

/// The link page's form: a submission, then the checkout page (or the page again with what went
/// wrong).
#[post("/l/{publicId}")]
pub async fn submit_link_page(
    req: HttpRequest,
    state: web::Data<AppState>,
    public: web::Path<String>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let form = crate::json::read_body(&req, &mut payload.into_inner()).await?;
    if !same_origin(&req, &state.public_base_url) {
        return Ok(page(
            "Forbidden",
            "<h1>Forbidden</h1><p>This form can only be sent from its own payment link page.</p>",
            StatusCode::FORBIDDEN,
        ));
    }
    let Some(shown) = load(&state, &public).await? else { return Ok(not_found()) };
    let title = shown.link.config.title.clone();
    let again = |message: &str, status: StatusCode| {
        let key = random_base62(state.crypto.as_ref(), 22);
        page(&title, &render(&shown, &key, Some(message)), status)
    };
    let policy = &stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
    let parts = ["payment_link", public.as_str()];
    if let Err(e) = crate::ratelimit::enforce(&req, &state, policy, &parts, crate::error::ErrorCode::RATE_LIMITED).await
    {
        return Ok(again(&e.message, e.code.status()));
    }
    let Some(fields) = form_fields(&form) else {
        return Ok(again("The form could not be read; please try again.", StatusCode::BAD_REQUEST));
    };
    let Some(version) = value(&fields, "version").and_then(|v| v.parse::<i64>().ok()) else {
        return Ok(again("The form could not be read; please try again.", StatusCode::BAD_REQUEST));
    };
    let key = value(&fields, "idempotencyKey").unwrap_or_default();
    let input = LinkCheckoutIn {
        version,
        amount: value(&fields, "amount"),
        email: value(&fields, "email"),
        name: value(&fields, "name"),
        customer_reference: value(&fields, "customerReference"),
    };
    let scope = shown.link.scope.clone();
    let id = shown.link.public_id.clone();
    let run_state = state.clone();
    let answer =
        crate::idempotency::execute_page(state.clone(), scope, public.as_str(), &key, &req, &form, move || {
            submit(run_state, id, input)
        })
        .await;
    let status = answer.status();
    let body = actix_web::body::to_bytes(answer.into_body()).await.map_err(|_| ApiError::internal())?;
    let json: Value = serde_json::from_slice(&body).map_err(|_| ApiError::internal())?;
    if status.is_success() {
        let session = json["data"]["checkoutSessionId"].as_str().ok_or(Error::NotFound(Resource::CheckoutSession))?;
        let mut res = HttpResponse::SeeOther();
        res.insert_header((LOCATION, format!("/checkout/{session}")));
        secure(&mut res);
        return Ok(res.finish());
    }
    let message = json["error"]["message"].as_str().unwrap_or("Something went wrong; please try again.");
    // The link as it stands now (a changed configuration, a reservation taken meanwhile).
    let Some(current) = load(&state, &public).await? else { return Ok(not_found()) };
    let key = random_base62(state.crypto.as_ref(), 22);
    Ok(page(&current.link.config.title, &render(&current, &key, Some(message)), status))
}
