//! Payment links: the merchant's routes (secret keys) and the public ones behind the hosted
//! link page (no key; the link's public id is the capability).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, patch, post, web};
use stablepay_domain::idempotency::IdempotencyClaim;
use stablepay_domain::ids::{PaymentLinkId, PublicToken};
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::AmountType;
use stablepay_domain::payment_link::model::MAX_SEARCH_TEXT_BYTES;
use stablepay_domain::payment_link::model::{Lifecycle, Usage};
use stablepay_domain::payment_link::ports::LinkFilter;
use stablepay_domain::use_cases::Context;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::idempotency::Outcome;
use stablepay_http::respond::{ok, to_data};
use stablepay_http::state::AppState;

use crate::auth::{Caller, SecretKey};
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::wire::common::ListOut;
use crate::wire::invoices::output::invoice;
use crate::wire::links::{LinkCheckoutIn, LinkCheckoutOut, PaymentLinkIn, PaymentLinkOut, PublicPaymentLinkOut};
use crate::{idempotency, rebuild};

fn link_id(text: &str) -> Result<PaymentLinkId, Error> {
    PaymentLinkId::parse(text).ok_or(Error::NotFound(Resource::PaymentLink))
}

/// A public id from a path (an unknown shape is an unknown link).
pub fn public_id(text: &str) -> Result<PublicToken, Error> {
    PublicToken::parse(text).ok_or(Error::NotFound(Resource::PaymentLink))
}

fn render(
    c: &Caller,
    link: &stablepay_domain::payment_link::model::PaymentLink,
    now: chrono::DateTime<chrono::Utc>,
    status: StatusCode,
) -> Outcome {
    Ok((status, to_data(&PaymentLinkOut::new(link, c.state.use_cases.pages(), now)?)?))
}

/// Create a payment link.
#[utoipa::path(
    tag = "payment-links",
    request_body = PaymentLinkIn,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The link, with its publicId and url", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/payment-links")]
pub async fn create_link(req: HttpRequest, SecretKey(caller): SecretKey, body: ApiJson<PaymentLinkIn>) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::link_with(StatusCode::CREATED), move |c| async move {
        if input.version.is_some() {
            return Err(ApiError::validation("version", "version is set by the service; send it only to PATCH."));
        }
        let input = input.into_input()?;
        let link = c.cases().links().create(&c.principal.merchant, c.scope(), input).await?;
        render(&c, &link, link.created_at, StatusCode::CREATED)
    })
    .await
}

fn filter(params: &QueryParams) -> Result<LinkFilter, ApiError> {
    let time = |name: &str| {
        params
            .get(name)
            .map(|t| {
                crate::wire::fields::date_time(name, &Some(t.to_owned()))?
                    .ok_or_else(|| ApiError::validation(name, format!("{name} must be an RFC 3339 timestamp.")))
            })
            .transpose()
    };
    let state = params
        .get("status")
        .map(|s| {
            LinkState::parse(s).ok_or_else(|| {
                ApiError::validation("status", "status must be active, paused, archived, completed or expired.")
            })
        })
        .transpose()?;
    let amount_type = params
        .get("amountType")
        .map(|t| {
            AmountType::parse(t)
                .ok_or_else(|| ApiError::validation("amountType", "amountType must be fixed or customer_entered."))
        })
        .transpose()?;
    let amount = params.get("amount").map(|a| crate::wire::fields::amount("amount", a, true)).transpose()?;
    let usage = params
        .get("usage")
        .map(|u| Usage::parse(u).ok_or_else(|| ApiError::validation("usage", "usage must be single_use or reusable.")))
        .transpose()?;
    let currency = params
        .get("token")
        .map(|t| {
            stablepay_domain::merchant::Token::parse(t)
                .ok_or_else(|| ApiError::validation("token", "token must be USDC or USDT."))
        })
        .transpose()?;
    let text = params.get("text").map(str::trim).filter(|t| !t.is_empty()).map(str::to_owned);
    if text.as_ref().is_some_and(|t| t.len() > MAX_SEARCH_TEXT_BYTES) {
        return Err(ApiError::validation("text", format!("text must be at most {MAX_SEARCH_TEXT_BYTES} bytes.")));
    }
    Ok(LinkFilter {
        state,
        amount_type,
        amount,
        usage,
        currency,
        text,
        created_after: time("createdAfter")?,
        created_before: time("createdBefore")?,
    })
}

/// List payment links, newest first.
#[utoipa::path(
    tag = "payment-links",
    params(
        crate::openapi::parameters::Paging,
        ("status" = Option<String>, Query, description = "active, paused, archived, completed or expired"),
        ("amountType" = Option<String>, Query, description = "fixed or customer_entered"),
        ("amount" = Option<String>, Query, description = "Fixed links of exactly this amount"),
        ("usage" = Option<String>, Query, description = "single_use or reusable"),
        ("token" = Option<String>, Query, description = "USDC or USDT"),
        ("text" = Option<String>, Query, description = "Found in the title or description (case-insensitive)"),
        ("createdAfter" = Option<String>, Query, description = "RFC 3339; created at or after"),
        ("createdBefore" = Option<String>, Query, description = "RFC 3339; created before"),
    ),
    responses((status = 200, description = "A page of links", body = crate::wire::links::PaymentLinkListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payment-links")]
pub async fn list_links(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(
        &req,
        &[
            "limit",
            "startingAfter",
            "status",
            "amountType",
            "amount",
            "usage",
            "token",
            "text",
            "createdAfter",
            "createdBefore",
        ],
    )?;
    let page = params.page()?;
    let filter = filter(&params)?;
    let (links, now) = c.cases().links().list(c.scope(), &filter, &page).await?;
    let pages = c.state.use_cases.pages();
    let out = ListOut::try_new(links, |l| l.id.to_string(), |l| PaymentLinkOut::new(&l, pages, now))?;
    ok(StatusCode::OK, &out)
}

/// Retrieve a payment link.
#[utoipa::path(
    tag = "payment-links",
    params(("id" = String, Path, description = "Payment link id")),
    responses((status = 200, description = "The link", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payment-links/{id}")]
pub async fn get_link(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (link, now) = c.cases().links().get(c.scope(), &link_id(&id)?).await?;
    ok(StatusCode::OK, &PaymentLinkOut::new(&link, c.state.use_cases.pages(), now)?)
}

/// Replace a link's whole configuration at its current `version` (an omitted optional field is
/// cleared). Invoices already created keep what they were created with.
#[utoipa::path(
    tag = "payment-links",
    request_body = PaymentLinkIn,
    params(("id" = String, Path, description = "Payment link id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The link with its new version", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[patch("/payment-links/{id}")]
pub async fn update_link(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<PaymentLinkIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::link_with(StatusCode::OK), move |c| async move {
        let id = link_id(&id)?;
        let version = input
            .version
            .ok_or_else(|| ApiError::validation("version", "version (the link's current one) is required."))?;
        let input = input.into_input()?;
        let links = c.cases().links();
        let (link, now) = links.update(&c.principal.merchant, c.scope(), &id, version, input).await?;
        render(&c, &link, now, StatusCode::OK)
    })
    .await
}

/// The invoices created through a link (each with its checkouts and payments), newest first.
#[utoipa::path(
    tag = "payment-links",
    params(
        ("id" = String, Path, description = "Payment link id"),
        crate::openapi::parameters::Paging,
    ),
    responses((status = 200, description = "A page of invoices", body = crate::wire::invoices::output::InvoiceListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/payment-links/{id}/payments")]
pub async fn link_payments(
    req: HttpRequest,
    SecretKey(c): SecretKey,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let page = QueryParams::parse(&req, &["limit", "startingAfter"])?.page()?;
    let id = link_id(&id)?;
    let found = c.cases().links().invoices(c.scope(), &id, &page).await?;
    let ids: Vec<_> = found.items.iter().map(|item| item.invoice_id.clone()).collect();
    let invoices = c.cases().invoices().get_many(c.scope(), &ids).await?;
    let (now, links) = (c.now().await?, c.links());
    let page = stablepay_domain::page::Page { items: invoices, has_more: found.has_more };
    let out = ListOut::try_new(page, |a| a.invoice.id.to_string(), |a| invoice(&a, &links, now))?;
    ok(StatusCode::OK, &out)
}

async fn lifecycle(req: HttpRequest, caller: Caller, id: String, target: Lifecycle) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::link_with(StatusCode::OK), move |c| async move {
        let (link, now) = c.cases().links().set_lifecycle(c.scope(), &link_id(&id)?, target).await?;
        render(&c, &link, now, StatusCode::OK)
    })
    .await
}

/// Pause a link: its page stays up but takes no submission (LINK_INACTIVE) until resumed.
/// Pausing a paused link changes nothing.
#[utoipa::path(
    tag = "payment-links",
    params(("id" = String, Path, description = "Payment link id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The link", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/payment-links/{id}/pause")]
pub async fn pause_link(req: HttpRequest, SecretKey(c): SecretKey, id: web::Path<String>) -> HttpResponse {
    lifecycle(req, c, id.into_inner(), Lifecycle::Paused).await
}

/// Resume a paused link. An expired link (LINK_EXPIRED) or a completed one (LINK_ALREADY_USED)
/// cannot be resumed; duplicate it instead.
#[utoipa::path(
    tag = "payment-links",
    params(("id" = String, Path, description = "Payment link id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The link", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/payment-links/{id}/resume")]
pub async fn resume_link(req: HttpRequest, SecretKey(c): SecretKey, id: web::Path<String>) -> HttpResponse {
    lifecycle(req, c, id.into_inner(), Lifecycle::Active).await
}

/// Archive a link for good: its public page and routes answer not found; the merchant still
/// reads it and its invoices. Archiving an archived link changes nothing.
#[utoipa::path(
    tag = "payment-links",
    params(("id" = String, Path, description = "Payment link id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The link", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/payment-links/{id}/archive")]
pub async fn archive_link(req: HttpRequest, SecretKey(c): SecretKey, id: web::Path<String>) -> HttpResponse {
    lifecycle(req, c, id.into_inner(), Lifecycle::Archived).await
}

/// A new active link with the same configuration, a new id and public id (an expiry already
/// past is dropped).
#[utoipa::path(
    tag = "payment-links",
    params(("id" = String, Path, description = "Payment link id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The new link", body = crate::wire::links::PaymentLinkEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/payment-links/{id}/duplicate")]
pub async fn duplicate_link(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::link_with(StatusCode::CREATED), move |c| async move {
        let links = c.cases().links();
        let link = links.duplicate(&c.principal.merchant, c.scope(), &link_id(&id)?).await?;
        render(&c, &link, link.created_at, StatusCode::CREATED)
    })
    .await
}

/// A link as its customers see it: display configuration only.
#[utoipa::path(
    tag = "public",
    params(("publicId" = String, Path, description = "The link's publicId")),
    responses(
        (status = 200, description = "The link's public view", body = crate::wire::links::PublicPaymentLinkEnvelope),
        crate::wire::common::Errors,
    )
)]
#[get("/public/payment-links/{publicId}")]
pub async fn get_public_link(
    req: HttpRequest,
    state: web::Data<AppState>,
    public: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let policy = &stablepay_domain::ratelimit::PUBLIC_READ;
    stablepay_http::ratelimit::enforce(&req, &state, policy, &["payment_link"], ErrorCode::RATE_LIMITED).await?;
    let shown = state.use_cases.links().public(&public_id(&public)?).await?;
    ok(StatusCode::OK, &PublicPaymentLinkOut::new(&shown))
}

/// Submit a link: a new invoice and its checkout session (a single-use link is reserved for it
/// until the checkout expires unpaid). Needs an Idempotency-Key.
#[utoipa::path(
    tag = "public",
    request_body = LinkCheckoutIn,
    params(
        ("publicId" = String, Path, description = "The link's publicId"),
        ("Idempotency-Key" = String, Header, description = "Required; replays the first answer"),
    ),
    responses(
        (status = 201, description = "The checkout to pay", body = crate::wire::links::LinkCheckoutEnvelope),
        crate::wire::common::Errors,
    )
)]
#[post("/public/payment-links/{publicId}/checkout")]
pub async fn public_link_checkout(
    req: HttpRequest,
    state: web::Data<AppState>,
    public: web::Path<String>,
    body: ApiJson<LinkCheckoutIn>,
) -> Result<HttpResponse, ApiError> {
    let policy = &stablepay_domain::ratelimit::PUBLIC_CHECKOUT;
    stablepay_http::ratelimit::enforce(&req, &state, policy, &["payment_link", &public], ErrorCode::RATE_LIMITED)
        .await?;
    let id = public_id(&public)?;
    let scope = state.use_cases.links().public_scope(&id).await?;
    let ApiJson(input, raw) = body;
    let run_state = state.clone();
    let key_resource = public.into_inner();
    let again = rebuild::link_checkout(state.clone(), scope.clone());
    let work = move |claim| async move { submit(run_state, id, input, claim).await };
    let source = (key_resource.as_str(), stablepay_http::idempotency::SubmissionKey::Header);
    let request = stablepay_http::idempotency::public_request(&state, scope, source, &req, &raw)?;
    Ok(stablepay_http::idempotency::keyed(state, request, (work, again)).await)
}

/// A submission (the API's and the hosted page's), its work under `claim`.
pub async fn submit(
    state: web::Data<AppState>,
    id: PublicToken,
    input: LinkCheckoutIn,
    claim: Option<IdempotencyClaim>,
) -> Outcome {
    let submission = input.into_submission()?;
    let links = state.use_cases.within(Context::new(state.use_cases.clock()).claimed(claim)).links();
    let created = links.submit(&id, submission).await?;
    Ok((StatusCode::CREATED, to_data(&LinkCheckoutOut::new(&created, state.use_cases.pages()))?))
}
