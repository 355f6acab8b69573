//! Invoices (secret key).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, patch, post, web};
use stablepay_domain::billing::{CloseAction, InvoiceAggregate, InvoiceKey};
use stablepay_domain::ids::InvoiceId;
use stablepay_domain::invoice::CollectionState;
use stablepay_domain::ports::Clock;
use stablepay_domain::{Error, Resource, Scope};

use crate::auth::SecretKey;
use crate::envelope::{ok, to_data};
use crate::error::ApiError;
use crate::idempotency::{self, Outcome};
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::state::AppState;
use crate::wire::ListOut;
use crate::wire_in::{InvoiceCreate, InvoiceForm, InvoicePatch, IssueIn, ReasonIn, RefundIn};
use crate::wire_out::{InvoiceOut, Links, RefundRecordedOut, RemainderCheckoutOut, invoice, refund};

/// A path segment: an invoice id, or (for reads) an issued invoice number.
fn key(segment: &str, allow_number: bool) -> Result<InvoiceKey, ApiError> {
    if let Some(id) = InvoiceId::parse(segment) {
        return Ok(InvoiceKey::Id(id));
    }
    if allow_number && !segment.is_empty() && segment.len() <= 128 {
        return Ok(InvoiceKey::Number(segment.to_owned()));
    }
    Err(Error::NotFound(Resource::Invoice).into())
}

async fn view(
    state: &AppState,
    clock: &dyn Clock,
    scope: &Scope,
    agg: &InvoiceAggregate,
) -> Result<InvoiceOut, ApiError> {
    let now = clock.now(scope).await?;
    Ok(invoice(agg, &Links { base: &state.public_base_url }, now))
}

async fn render(
    state: &AppState,
    clock: &dyn Clock,
    scope: &Scope,
    agg: &InvoiceAggregate,
    status: StatusCode,
) -> Outcome {
    Ok((status, to_data(&view(state, clock, scope, agg).await?)?))
}

/// Create an itemized draft (or issue it at once), or a legacy amount-only invoice that is
/// payable at once.
#[utoipa::path(
    tag = "invoices",
    request_body = InvoiceCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The invoice", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices")]
pub async fn create_invoice(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    body: ApiJson<InvoiceCreate>,
) -> HttpResponse {
    let principal = key.0;
    let clock = state.clock_for(&principal);
    let scope = principal.scope.clone();
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let billing = state.billing_with(&clock);
        let agg = match input.into_form()? {
            InvoiceForm::Itemized { input, issue, send } => {
                billing.create_invoice(&principal.merchant, &scope, *input, issue, send).await?
            }
            InvoiceForm::AmountOnly(input) => billing.create_amount_only(&principal.merchant, &scope, input).await?,
        };
        render(&state, &clock, &scope, &agg, StatusCode::CREATED).await
    })
    .await
}

/// List invoices, newest first.
#[utoipa::path(
    tag = "invoices",
    params(
        ("limit" = Option<u32>, Query, description = "1-100, default 25", minimum = 1, maximum = 100),
        ("startingAfter" = Option<String>, Query, description = "nextCursor of the previous page; keep the filters unchanged"),
        ("collectionState" = Option<String>, Query, description = "draft, open, past_due, partially_paid, paid, void or uncollectible"),
    ),
    responses((status = 200, description = "A page of invoices", body = crate::wire_out::InvoiceListEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices")]
pub async fn list_invoices(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
) -> Result<HttpResponse, ApiError> {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "collectionState"])?;
    let page = params.page()?;
    let filter = params
        .get("collectionState")
        .map(|s| {
            CollectionState::parse(s).ok_or_else(|| ApiError::validation("collectionState", "Unknown collectionState."))
        })
        .transpose()?;
    let result = state.invoices.list_invoices(&scope, filter, &page).await?;
    let now = clock.now(&scope).await?;
    let links = Links { base: &state.public_base_url };
    let out = ListOut::new(result, |a| a.invoice.id.to_string(), |a| invoice(&a, &links, now));
    ok(StatusCode::OK, &out)
}

/// Retrieve an invoice by id or by its issued invoice number.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id or issued invoice number")),
    responses((status = 200, description = "The invoice", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices/{id}")]
pub async fn get_invoice(
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    let agg = state.invoices.load_invoice(&scope, &key_or_number(&id)?).await?;
    ok(StatusCode::OK, &view(&state, &clock, &scope, &agg).await?)
}

fn key_or_number(segment: &str) -> Result<InvoiceKey, ApiError> {
    key(segment, true)
}

/// Replace a draft's editable fields (all of them) at its current version.
#[utoipa::path(
    tag = "invoices",
    request_body = InvoicePatch,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The updated draft with its new version", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[patch("/invoices/{id}")]
pub async fn update_invoice(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<InvoicePatch>,
) -> HttpResponse {
    let principal = key.0;
    let clock = state.clock_for(&principal);
    let scope = principal.scope.clone();
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let k = self::key(&id, false)?;
        let (version, draft) = input.into_domain()?;
        let agg = state.billing_with(&clock).update_draft(&principal.merchant, &scope, &k, version, draft).await?;
        render(&state, &clock, &scope, &agg, StatusCode::OK).await
    })
    .await
}

/// Issue a draft: invoice number, hosted invoice page and first checkout session.
#[utoipa::path(
    tag = "invoices",
    request_body = IssueIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The issued invoice (see checkout for its checkout session)", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/issue")]
pub async fn issue_invoice(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<IssueIn>,
) -> HttpResponse {
    let principal = key.0;
    let clock = state.clock_for(&principal);
    let scope = principal.scope.clone();
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let k = self::key(&id, false)?;
        let agg = state.billing_with(&clock).issue(&scope, &k, input.version, input.send.unwrap_or(false)).await?;
        render(&state, &clock, &scope, &agg, StatusCode::OK).await
    })
    .await
}

/// Open (or reuse) a checkout session for the collectible remainder.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The remainder checkout", body = crate::wire_out::RemainderCheckoutEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/checkout-sessions")]
pub async fn open_checkout(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> HttpResponse {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    idempotency::execute(&state, &scope, &req, &[], || async {
        let k = self::key(&id, false)?;
        let opened = state.billing_with(&clock).open_checkout(&scope, &k).await?;
        let session = opened.aggregate.session(&opened.session_id).ok_or_else(ApiError::internal)?;
        let links = Links { base: &state.public_base_url };
        let expires = crate::wire::timestamp(session.expires_at);
        let out = RemainderCheckoutOut {
            invoice_id: opened.aggregate.invoice.id.to_string(),
            checkout_session_id: session.id.to_string(),
            checkout_url: links.checkout(session),
            amount: session.amount_due.to_string(),
            expiry: expires.clone(),
            expires_at: expires,
            reused: opened.reused,
        };
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
    .await
}

async fn close(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: String,
    body: ApiJson<ReasonIn>,
    action: CloseAction,
) -> HttpResponse {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let k = self::key(&id, false)?;
        let agg = state.billing_with(&clock).close(&scope, &k, action, &input.reason).await?;
        render(&state, &clock, &scope, &agg, StatusCode::OK).await
    })
    .await
}

/// Void the invoice's collection. Payment records stay; no funds move.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The closed invoice (collectionState void)", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/void")]
pub async fn void_invoice(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, key, state, id.into_inner(), body, CloseAction::Void).await
}

/// Close the remaining collection of a partially paid invoice. Received payments stay.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The invoice with its remaining collection closed", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/void-remaining")]
pub async fn void_remaining(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, key, state, id.into_inner(), body, CloseAction::VoidRemaining).await
}

/// Mark the remaining collection uncollectible. Onchain payments are unchanged.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The invoice marked uncollectible", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/mark-uncollectible")]
pub async fn mark_uncollectible(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, key, state, id.into_inner(), body, CloseAction::MarkUncollectible).await
}

/// Record a refund performed outside the service (never executed nor verified by it).
#[utoipa::path(
    tag = "invoices",
    request_body = RefundIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The invoice and the recorded adjustment", body = crate::wire_out::RefundRecordedEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/refund-references")]
pub async fn refund_reference(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
    body: ApiJson<RefundIn>,
) -> HttpResponse {
    let clock = state.clock_for(&key.0);
    let scope = key.0.scope;
    let ApiJson(input, raw) = body;
    idempotency::execute(&state, &scope, &req, &raw, || async {
        let k = self::key(&id, false)?;
        let input = input.into_domain()?;
        let (agg, refund_id) = state.billing_with(&clock).record_refund(&scope, &k, input).await?;
        let adjustment =
            agg.invoice.refunds.iter().find(|r| r.id == refund_id).map(refund).ok_or_else(ApiError::internal)?;
        let out = RefundRecordedOut { invoice: view(&state, &clock, &scope, &agg).await?, adjustment };
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
    .await
}

/// Make a new draft with the same commercial fields.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The new draft", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/duplicate")]
pub async fn duplicate_invoice(
    req: HttpRequest,
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> HttpResponse {
    let principal = key.0;
    let clock = state.clock_for(&principal);
    let scope = principal.scope.clone();
    idempotency::execute(&state, &scope, &req, &[], || async {
        let k = self::key(&id, false)?;
        let agg = state.billing_with(&clock).duplicate(&principal.merchant, &scope, &k).await?;
        render(&state, &clock, &scope, &agg, StatusCode::CREATED).await
    })
    .await
}

async fn unavailable(state: &AppState, scope: &Scope, id: &str, what: &'static str) -> Result<HttpResponse, ApiError> {
    // The invoice must exist for this merchant and mode; the capability itself comes later.
    state.invoices.load_invoice(scope, &key(id, false)?).await?;
    Err(Error::FeatureUnavailable(what).into())
}

/// Send the invoice by email (arrives with the email issue: FEATURE_UNAVAILABLE until then).
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 202, description = "Queued email (accepted is not delivered)", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/send")]
pub async fn send_invoice(
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    unavailable(&state, &key.0.scope, &id, "sending invoices by email").await
}

/// Send a payment reminder (FEATURE_UNAVAILABLE until email delivery exists).
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 202, description = "Queued reminder", body = crate::wire_out::InvoiceEnvelope), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/remind")]
pub async fn remind_invoice(
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    unavailable(&state, &key.0.scope, &id, "invoice reminders").await
}

/// The invoice as a PDF (FEATURE_UNAVAILABLE until the PDF issue).
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id")),
    responses((status = 200, description = "application/pdf bytes (not enveloped)", content_type = "application/pdf", body = Vec<u8>), crate::wire::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices/{id}/pdf")]
pub async fn invoice_pdf(
    key: SecretKey,
    state: web::Data<AppState>,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    unavailable(&state, &key.0.scope, &id, "invoice PDFs").await
}
