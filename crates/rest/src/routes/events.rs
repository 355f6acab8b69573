//! `GET /v1/events` and `GET /v1/events/{id}`: recover anything a webhook missed.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, get, web};
use stablepay_domain::event::EventType;
use stablepay_domain::ids::EventId;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::respond::ok;

use crate::auth::SecretKey;
use crate::query::QueryParams;
use crate::wire::common::ListOut;
use crate::wire::events::EventOut;

/// List events, newest first.
#[utoipa::path(
    tag = "events",
    params(
        ("limit" = Option<u32>, Query, description = "Page size 1-100, default 25", minimum = 1, maximum = 100),
        ("startingAfter" = Option<String>, Query, description = "nextCursor of the previous page"),
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
/// (each also announced by a `payment.unattributed` event), newest first.
#[utoipa::path(
    tag = "events",
    params(
        ("limit" = Option<u32>, Query, description = "Page size 1-100, default 25", minimum = 1, maximum = 100),
        ("startingAfter" = Option<String>, Query, description = "nextCursor of the previous page"),
    ),
    responses(
        (status = 200, description = "A page of unattributed transfers", body = crate::wire::events::UnattributedListEnvelope),
        crate::wire::common::Errors,
    ),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/unattributed-transfers")]
pub async fn list_unattributed(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let page = QueryParams::parse(&req, &["limit", "startingAfter"])?.page()?;
    let result = c.state.use_cases.follower().unattributed(c.scope(), &page).await?;
    let out = ListOut::new(result, |t| t.id.to_string(), crate::wire::events::UnattributedTransferOut::from);
    ok(StatusCode::OK, &out)
}
