//! Invoices (secret key).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, patch, post, web};
use serde_json::Value;
use stablepay_domain::ids::InvoiceId;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::input::CloseAction;
use stablepay_domain::invoice::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::{Error, Resource};
use stablepay_http::error::ApiError;
use stablepay_http::idempotency::Outcome;
use stablepay_http::respond::{ok, to_data};

use crate::auth::{Caller, SecretKey};
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::wire::common::ListOut;
use crate::wire::invoices::input::{self, InvoiceForm, IssueIn, ReasonIn, RefundIn};
use crate::wire::invoices::output::{InvoiceOut, RefundRecordedOut, RemainderCheckoutOut, invoice, refund};
use crate::{idempotency, rebuild};

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

async fn view(c: &Caller, agg: &InvoiceAggregate) -> Result<InvoiceOut, ApiError> {
    invoice(agg, &c.links(), c.now().await?)
}

async fn render(c: &Caller, agg: &InvoiceAggregate, status: StatusCode) -> Outcome {
    Ok((status, to_data(&view(c, agg).await?)?))
}

/// Create an itemized draft (or issue it at once), or a legacy amount-only invoice that is
/// payable at once.
#[utoipa::path(
    tag = "invoices",
    request_body = crate::wire::invoices::input::InvoiceCreate,
    params(("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The invoice", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices")]
pub async fn create_invoice(req: HttpRequest, SecretKey(caller): SecretKey, body: ApiJson<Value>) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::invoice_with(StatusCode::CREATED), move |c| async move {
        let m = &c.principal.merchant;
        let agg = match input::invoice_form(input)? {
            InvoiceForm::Itemized { input, issue, send } => {
                c.cases().invoices().create_invoice(m, c.scope(), *input, issue, send).await?
            }
            InvoiceForm::AmountOnly(input) => c.cases().invoices().create_amount_only(m, c.scope(), input).await?,
        };
        render(&c, &agg, StatusCode::CREATED).await
    })
    .await
}

/// List invoices, newest first.
#[utoipa::path(
    tag = "invoices",
    params(
        crate::openapi::parameters::Paging,
        ("collectionState" = Option<String>, Query, description = "draft, open, past_due, partially_paid, paid, void or uncollectible"),
    ),
    responses((status = 200, description = "A page of invoices", body = crate::wire::invoices::output::InvoiceListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices")]
pub async fn list_invoices(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "collectionState"])?;
    let page = params.page()?;
    let filter = params
        .get("collectionState")
        .map(|s| {
            CollectionState::parse(s).ok_or_else(|| ApiError::validation("collectionState", "Unknown collectionState."))
        })
        .transpose()?;
    let result = c.cases().invoices().list(c.scope(), filter, &page).await?;
    let (now, links) = (c.now().await?, c.links());
    let out = ListOut::try_new(result, |a| a.invoice.id.to_string(), |a| invoice(&a, &links, now))?;
    ok(StatusCode::OK, &out)
}

/// Retrieve an invoice by id or by its issued invoice number.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id or issued invoice number")),
    responses((status = 200, description = "The invoice", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices/{id}")]
pub async fn get_invoice(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let agg = c.cases().invoices().get(c.scope(), &key(&id, true)?).await?;
    ok(StatusCode::OK, &view(&c, &agg).await?)
}

/// Replace a draft's editable fields (all of them) at its current version.
#[utoipa::path(
    tag = "invoices",
    request_body = crate::wire::invoices::input::InvoicePatch,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The updated draft with its new version", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[patch("/invoices/{id}")]
pub async fn update_invoice(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<Value>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::invoice_with(StatusCode::OK), move |c| async move {
        let k = key(&id, false)?;
        let (version, draft) = input::invoice_patch(input)?;
        let agg = c.cases().invoices().update_draft(&c.principal.merchant, c.scope(), &k, version, draft).await?;
        render(&c, &agg, StatusCode::OK).await
    })
    .await
}

/// Issue a draft: invoice number, hosted invoice page and first checkout session.
#[utoipa::path(
    tag = "invoices",
    request_body = IssueIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The issued invoice (see checkout for its checkout session)", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/issue")]
pub async fn issue_invoice(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<IssueIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::invoice_with(StatusCode::OK), move |c| async move {
        let agg = c
            .cases()
            .invoices()
            .issue(&c.principal.merchant, c.scope(), &key(&id, false)?, (input.version, input.send.unwrap_or(false)))
            .await?;
        render(&c, &agg, StatusCode::OK).await
    })
    .await
}

/// Open (or reuse) a checkout session for the collectible remainder.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The remainder checkout", body = crate::wire::invoices::output::RemainderCheckoutEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/checkout-sessions")]
pub async fn open_checkout(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::remainder_checkout, move |c| async move {
        let opened = c.cases().invoices().open_checkout(c.scope(), &key(&id, false)?).await?;
        let session = opened.aggregate.session(&opened.session_id).ok_or_else(ApiError::internal)?;
        let expires = stablepay_http::timestamp::timestamp(session.expires_at);
        let out = RemainderCheckoutOut {
            invoice_id: opened.aggregate.invoice.id.to_string(),
            checkout_session_id: session.id.to_string(),
            checkout_url: c.links().checkout(session),
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
    caller: Caller,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
    action: CloseAction,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::invoice_with(StatusCode::OK), move |c| async move {
        let agg = c.cases().invoices().close(c.scope(), &key(&id, false)?, action, &input.reason).await?;
        render(&c, &agg, StatusCode::OK).await
    })
    .await
}

/// Void the invoice's collection. Payment records stay; no funds move.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The closed invoice (collectionState void)", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/void")]
pub async fn void_invoice(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, caller, id, body, CloseAction::Void).await
}

/// Close the remaining collection of a partially paid invoice. Received payments stay.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The invoice with its remaining collection closed", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/void-remaining")]
pub async fn void_remaining(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, caller, id, body, CloseAction::VoidRemaining).await
}

/// Mark the remaining collection uncollectible. Onchain payments are unchanged.
#[utoipa::path(
    tag = "invoices",
    request_body = ReasonIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The invoice marked uncollectible", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/mark-uncollectible")]
pub async fn mark_uncollectible(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<ReasonIn>,
) -> HttpResponse {
    close(req, caller, id, body, CloseAction::MarkUncollectible).await
}

/// Record a refund performed outside the service (never executed nor verified by it).
#[utoipa::path(
    tag = "invoices",
    request_body = RefundIn,
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The invoice and the recorded adjustment", body = crate::wire::invoices::output::RefundRecordedEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/refund-references")]
pub async fn refund_reference(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<RefundIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::refund_recorded, move |c| async move {
        let k = key(&id, false)?;
        let (agg, refund_id) = c.cases().invoices().record_refund(c.scope(), &k, input.into_domain()?).await?;
        let adjustment =
            agg.invoice.refunds.iter().find(|r| r.id == refund_id).map(refund).ok_or_else(ApiError::internal)?;
        let out = RefundRecordedOut { invoice: view(&c, &agg).await?, adjustment };
        Ok((StatusCode::CREATED, to_data(&out)?))
    })
    .await
}

/// Make a new draft with the same commercial fields.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 201, description = "The new draft", body = crate::wire::invoices::output::InvoiceEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/duplicate")]
pub async fn duplicate_invoice(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::invoice_with(StatusCode::CREATED), move |c| async move {
        let agg = c.cases().invoices().duplicate(&c.principal.merchant, c.scope(), &key(&id, false)?).await?;
        render(&c, &agg, StatusCode::CREATED).await
    })
    .await
}

/// Queue the invoice (its PDF attached, with the hosted invoice link) to the customer's email.
/// Accepted is not delivered: the worker sends it, retrying with a backoff, and records each
/// attempt in the invoice's activity.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer (one email per key)")),
    responses(
        (status = 202, description = "The queued email", body = crate::wire::invoices::output::InvoiceEmailEnvelope),
        crate::wire::common::Errors
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/send")]
pub async fn send_invoice(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::email_queued, move |c| async move {
        let email = c.cases().emails().send(c.scope(), &key(&id, false)?).await?;
        Ok((StatusCode::ACCEPTED, to_data(&crate::wire::invoices::output::InvoiceEmailOut::from(&email))?))
    })
    .await
}

/// Queue a reminder of what is due to the customer's email: a collectible issued invoice, at
/// most one reminder (requested or scheduled) per 24 hours.
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses(
        (status = 202, description = "The queued reminder", body = crate::wire::invoices::output::InvoiceEmailEnvelope),
        crate::wire::common::Errors
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/invoices/{id}/remind")]
pub async fn remind_invoice(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::email_queued, move |c| async move {
        let email = c.cases().emails().remind(c.scope(), &key(&id, false)?).await?;
        Ok((StatusCode::ACCEPTED, to_data(&crate::wire::invoices::output::InvoiceEmailOut::from(&email))?))
    })
    .await
}

/// The invoice as a PDF, to download (not enveloped; errors are): an issued invoice only
/// (INVOICE_PDF_UNAVAILABLE for a draft).
#[utoipa::path(
    tag = "invoices",
    params(("id" = String, Path, description = "Invoice id or invoice number")),
    responses(
        (status = 200, description = "application/pdf bytes (not enveloped), Content-Disposition: attachment; filename=\"<invoice number>.pdf\", Cache-Control: no-store", content_type = "application/pdf", body = Vec<u8>),
        crate::wire::common::Errors
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/invoices/{id}/pdf")]
pub async fn invoice_pdf(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let document = c.state.use_cases.invoice_document(&c.principal.merchant, c.scope(), &key(&id, true)?).await?;
    stablepay_http::download::pdf_file(c.state.clone(), document).await
}
