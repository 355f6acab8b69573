//! `GET /v1/events` and `GET /v1/events/{id}`: recover anything a webhook missed. And the
//! transfers no checkout could be credited with: listed, read, and attributed by a person.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, post, web};
use stablepay_domain::chain::UnattributedStatus;
use stablepay_domain::event::EventType;
use stablepay_domain::ids::{CheckoutSessionId, EventId, UnattributedTransferId};
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::respond::{ok, to_data};

use crate::auth::SecretKey;
use crate::idempotency;
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::rebuild;
use crate::wire::common::ListOut;
use crate::wire::events::{AttributeIn, EventOut, UnattributedTransferOut};

/// List events, newest first.
#[utoipa::path(
    tag = "events",
    params(
        crate::openapi::parameters::Paging,
        ("type" = Option<String>, Query, description = "Only events of this type"),
    ),
    responses(
        (status = 200, description = "A page of events", body = crate::wire::events::EventListEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/events")]
pub async fn list_events(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "type"])?;
    let page = params.page()?;
    let event_type = params
        .get("type")
        .map(|t| {
            EventType::parse(t).ok_or_else(|| {
                ApiError::field(
                    ErrorCode::WEBHOOK_EVENT_UNSUPPORTED,
                    "type",
                    format!("{t} is not a supported event type."),
                )
            })
        })
        .transpose()?;
    let result = c.state.use_cases.events().list(c.scope(), event_type, &page).await?;
    let out = ListOut::new(result, |e| e.id.to_string(), EventOut::from);
    ok(StatusCode::OK, &out)
}

/// Retrieve one event.
#[utoipa::path(
    tag = "events",
    params(("id" = String, Path, description = "Event id")),
    responses(
        (status = 200, description = "The event", body = crate::wire::events::EventEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/events/{id}")]
pub async fn get_event(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = EventId::parse(&id).ok_or(Error::NotFound(Resource::Event))?;
    let event = c.state.use_cases.events().get(c.scope(), &id).await?;
    ok(StatusCode::OK, &EventOut::from(event))
}

/// List transfers into the merchant's live wallet that no checkout could be credited with
/// (each also announced by a `payment.unattributed` event), newest first: those still waiting
/// for a decision by default.
#[utoipa::path(
    tag = "events",
    params(
        crate::openapi::parameters::Paging,
        ("status" = Option<String>, Query, description = "open (the default: nobody was credited with it yet), attributed (credited since, by any path) or all"),
    ),
    responses(
        (status = 200, description = "A page of unattributed transfers", body = crate::wire::events::UnattributedListEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/unattributed-transfers")]
pub async fn list_unattributed(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "status"])?;
    let (page, status) = (params.page()?, unattributed_status(&params)?);
    let result = c.state.use_cases.follower().unattributed(c.scope(), status, &page).await?;
    let out = ListOut::new(result, |t| t.id.to_string(), UnattributedTransferOut::from);
    ok(StatusCode::OK, &out)
}

/// The `status` filter of a list of unattributed transfers: `open` unless said (`all`: any).
pub(crate) fn unattributed_status(params: &QueryParams) -> Result<Option<UnattributedStatus>, ApiError> {
    match params.get("status").unwrap_or("open") {
        "all" => Ok(None),
        s => UnattributedStatus::parse(s)
            .map(Some)
            .ok_or_else(|| ApiError::validation("status", "status must be open, attributed or all.")),
    }
}

fn transfer_id(id: &str) -> Result<UnattributedTransferId, Error> {
    UnattributedTransferId::parse(id).ok_or(Error::NotFound(Resource::UnattributedTransfer))
}

/// Retrieve one unattributed transfer.
#[utoipa::path(
    tag = "events",
    params(("id" = String, Path, description = "Unattributed transfer id (utr_...)")),
    responses(
        (status = 200, description = "The unattributed transfer", body = crate::wire::events::UnattributedEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/unattributed-transfers/{id}")]
pub async fn get_unattributed(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let record = c.state.use_cases.follower().unattributed_transfer(c.scope(), &transfer_id(&id)?).await?;
    ok(StatusCode::OK, &UnattributedTransferOut::from(record))
}

/// Attribute a recorded transfer to a checkout of the same merchant and mode: a person decides
/// where the evidence could not (a dispute, twins, a wrong amount nobody reported). Checked as
/// any verification is (the checkout's token and wallet, the checkout open at the transfer's
/// block time, an amount in range) and credited once, with the ordinary events; the record
/// becomes `attributed`. Needs `payments:write` on a restricted key.
#[utoipa::path(
    tag = "events",
    request_body = AttributeIn,
    params(
        ("id" = String, Path, description = "Unattributed transfer id (utr_...)"),
        ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer"),
    ),
    responses(
        (status = 200, description = "The transfer, attributed (status attributed, paymentId the payment that credited it)", body = crate::wire::events::UnattributedEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/unattributed-transfers/{id}/attribute")]
pub async fn attribute_transfer(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<AttributeIn>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    let id = id.into_inner();
    let again = id.clone();
    let rebuild = move |c, committed| rebuild::attributed(c, committed, again);
    idempotency::execute(caller, &req, &raw, rebuild, move |c| async move {
        let record = transfer_id(&id)?;
        let session = CheckoutSessionId::parse(&input.checkout_session_id)
            .ok_or_else(|| ApiError::field(ErrorCode::NOT_FOUND, "checkoutSessionId", "No such checkout session."))?;
        let (record, _) = c.cases().follower().attribute_by_hand(c.scope(), &record, &session, &input.reason).await?;
        Ok((StatusCode::OK, to_data(&UnattributedTransferOut::from(record))?))
    })
    .await
}
