//! Webhook endpoints, deliveries, incidents and test events (secret keys).

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, delete, get, patch, post, web};
use stablepay_domain::event::EventType;
use stablepay_domain::ids::{EventId, WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use stablepay_domain::webhook::model::DeliveryStatus;
use stablepay_domain::webhook::model::MIN_REPLAY_KEY_CHARS;
use stablepay_domain::webhook::ports::DeliveryFilter;
use stablepay_domain::{Error, Resource};
use stablepay_http::error::{ApiError, ErrorCode};
use stablepay_http::idempotency::Outcome;
use stablepay_http::respond::{ok, to_data};

use crate::auth::SecretKey;
use crate::json::ApiJson;
use crate::query::QueryParams;
use crate::wire::common::ListOut;
use crate::wire::events::EventOut;
use crate::wire::webhooks::{
    ArchivedEndpointOut, WebhookDeliveryOut, WebhookEndpointCreate, WebhookEndpointOut, WebhookEndpointPatch,
    WebhookIncidentOut, WebhookTestIn, WebhookTestOut,
};
use crate::{idempotency, rebuild};

fn endpoint_id(text: &str) -> Result<WebhookEndpointId, Error> {
    WebhookEndpointId::parse(text).ok_or(Error::NotFound(Resource::WebhookEndpoint))
}

fn delivery_id(text: &str) -> Result<WebhookDeliveryId, Error> {
    WebhookDeliveryId::parse(text).ok_or(Error::NotFound(Resource::WebhookDelivery))
}

fn done<T: serde::Serialize>(status: StatusCode, data: &T) -> Outcome {
    Ok((status, to_data(data)?))
}

/// Register an endpoint; its signing secret is in this answer only. Not idempotent: an
/// Idempotency-Key is not used (each call creates an endpoint).
#[utoipa::path(
    tag = "webhooks",
    request_body = WebhookEndpointCreate,
    responses((status = 201, description = "The endpoint, with its signingSecret (shown once)", body = crate::wire::webhooks::WebhookEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/webhook-endpoints")]
pub async fn create_endpoint(
    SecretKey(c): SecretKey,
    body: ApiJson<WebhookEndpointCreate>,
) -> Result<HttpResponse, ApiError> {
    let ApiJson(input, _) = body;
    let webhooks = c.state.use_cases.webhooks();
    let (endpoint, secret) = webhooks.create_endpoint(c.scope(), input.try_into()?).await?;
    let now = c.state.use_cases.clock().system_now();
    ok(StatusCode::CREATED, &WebhookEndpointOut::new(&endpoint, Some(secret.as_str().to_owned()), now))
}

/// List endpoints (archived ones are gone), newest first.
#[utoipa::path(
    tag = "webhooks",
    params(
        crate::openapi::parameters::Paging,
    ),
    responses((status = 200, description = "A page of endpoints", body = crate::wire::webhooks::WebhookEndpointListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-endpoints")]
pub async fn list_endpoints(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let page = QueryParams::parse(&req, &["limit", "startingAfter"])?.page()?;
    let result = c.state.use_cases.webhooks().list_endpoints(c.scope(), &page).await?;
    let now = c.state.use_cases.clock().system_now();
    ok(StatusCode::OK, &ListOut::new(result, |e| e.id.to_string(), |e| WebhookEndpointOut::new(&e, None, now)))
}

/// Retrieve an endpoint (never its secret).
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id")),
    responses((status = 200, description = "The endpoint", body = crate::wire::webhooks::WebhookEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-endpoints/{id}")]
pub async fn get_endpoint(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let endpoint = c.state.use_cases.webhooks().get_endpoint(c.scope(), &endpoint_id(&id)?).await?;
    ok(StatusCode::OK, &WebhookEndpointOut::new(&endpoint, None, c.state.use_cases.clock().system_now()))
}

/// Change an endpoint's URL, state, subscriptions, description or alert preferences.
#[utoipa::path(
    tag = "webhooks",
    request_body = WebhookEndpointPatch,
    params(("id" = String, Path, description = "Endpoint id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The endpoint", body = crate::wire::webhooks::WebhookEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[patch("/webhook-endpoints/{id}")]
pub async fn update_endpoint(
    req: HttpRequest,
    SecretKey(caller): SecretKey,
    id: web::Path<String>,
    body: ApiJson<WebhookEndpointPatch>,
) -> HttpResponse {
    let ApiJson(input, raw) = body;
    idempotency::execute(caller, &req, &raw, rebuild::none, move |c| async move {
        let endpoint =
            c.state.use_cases.webhooks().update_endpoint(c.scope(), &endpoint_id(&id)?, input.try_into()?).await?;
        done(StatusCode::OK, &WebhookEndpointOut::new(&endpoint, None, c.state.use_cases.clock().system_now()))
    })
    .await
}

/// Archive an endpoint: it receives nothing more and disappears from reads; its deliveries
/// stay readable.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "Archived", body = crate::wire::webhooks::ArchivedEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[delete("/webhook-endpoints/{id}")]
pub async fn delete_endpoint(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::none, move |c| async move {
        let id = endpoint_id(&id)?;
        c.state.use_cases.webhooks().archive_endpoint(c.scope(), &id).await?;
        done(
            StatusCode::OK,
            &ArchivedEndpointOut { id: id.to_string(), object: "webhook_endpoint".into(), archived: true },
        )
    })
    .await
}

/// A new signing secret (in this answer only); the previous one also signs for 24 hours, or
/// until the overlap is ended.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The endpoint, with its new signingSecret", body = crate::wire::webhooks::WebhookEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/webhook-endpoints/{id}/rotate-secret")]
pub async fn rotate_secret(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::none, move |c| async move {
        let (endpoint, secret) = c.state.use_cases.webhooks().rotate_secret(c.scope(), &endpoint_id(&id)?).await?;
        let now = c.state.use_cases.clock().system_now();
        done(StatusCode::OK, &WebhookEndpointOut::new(&endpoint, Some(secret.as_str().to_owned()), now))
    })
    .await
}

/// End a rotation's overlap: only the new secret signs from now on.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Endpoint id"), ("Idempotency-Key" = Option<String>, Header, description = "Replays the first answer")),
    responses((status = 200, description = "The endpoint", body = crate::wire::webhooks::WebhookEndpointEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/webhook-endpoints/{id}/end-secret-overlap")]
pub async fn end_secret_overlap(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    idempotency::execute(caller, &req, &[], rebuild::none, move |c| async move {
        let endpoint = c.state.use_cases.webhooks().end_secret_overlap(c.scope(), &endpoint_id(&id)?).await?;
        done(StatusCode::OK, &WebhookEndpointOut::new(&endpoint, None, c.state.use_cases.clock().system_now()))
    })
    .await
}

/// An endpoint's incidents, newest first.
#[utoipa::path(
    tag = "webhooks",
    params(
        ("id" = String, Path, description = "Endpoint id"),
        crate::openapi::parameters::Paging,
    ),
    responses((status = 200, description = "A page of incidents", body = crate::wire::webhooks::WebhookIncidentListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-endpoints/{id}/incidents")]
pub async fn list_incidents(
    req: HttpRequest,
    SecretKey(c): SecretKey,
    id: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let page = QueryParams::parse(&req, &["limit", "startingAfter"])?.page()?;
    let result = c.state.use_cases.webhooks().list_incidents(c.scope(), &endpoint_id(&id)?, &page).await?;
    ok(StatusCode::OK, &ListOut::new(result, |i| i.id.to_string(), |i| WebhookIncidentOut::from(&i)))
}

/// Retrieve an incident.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Incident id")),
    responses((status = 200, description = "The incident", body = crate::wire::webhooks::WebhookIncidentEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-incidents/{id}")]
pub async fn get_incident(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let id = WebhookIncidentId::parse(&id).ok_or(Error::NotFound(Resource::WebhookIncident))?;
    let incident = c.state.use_cases.webhooks().get_incident(c.scope(), &id).await?;
    ok(StatusCode::OK, &WebhookIncidentOut::from(&incident))
}

/// List deliveries, newest first.
#[utoipa::path(
    tag = "webhooks",
    params(
        crate::openapi::parameters::Paging,
        ("endpointId" = Option<String>, Query, description = "Only deliveries to this endpoint"),
        ("eventId" = Option<String>, Query, description = "Only deliveries of this event"),
        ("eventType" = Option<String>, Query, description = "Only deliveries of events of this type"),
        ("status" = Option<String>, Query, description = "pending, delivering, delivered, retry_scheduled or failed"),
    ),
    responses((status = 200, description = "A page of deliveries", body = crate::wire::webhooks::WebhookDeliveryListEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-deliveries")]
pub async fn list_deliveries(req: HttpRequest, SecretKey(c): SecretKey) -> Result<HttpResponse, ApiError> {
    let params = QueryParams::parse(&req, &["limit", "startingAfter", "endpointId", "eventId", "eventType", "status"])?;
    let page = params.page()?;
    let filter = DeliveryFilter {
        endpoint: params
            .get("endpointId")
            .map(|t| {
                WebhookEndpointId::parse(t)
                    .ok_or_else(|| ApiError::validation("endpointId", "Not a webhook endpoint id."))
            })
            .transpose()?,
        event: params
            .get("eventId")
            .map(|t| EventId::parse(t).ok_or_else(|| ApiError::validation("eventId", "Not an event id.")))
            .transpose()?,
        event_type: params
            .get("eventType")
            .map(|t| {
                EventType::parse(t).ok_or_else(|| {
                    ApiError::field(
                        ErrorCode::WEBHOOK_EVENT_UNSUPPORTED,
                        "eventType",
                        format!("{t} is not a supported event type."),
                    )
                })
            })
            .transpose()?,
        status: params
            .get("status")
            .map(|t| {
                DeliveryStatus::parse(t).ok_or_else(|| {
                    ApiError::validation("status", "Must be pending, delivering, delivered, retry_scheduled or failed.")
                })
            })
            .transpose()?,
    };
    let result = c.state.use_cases.webhooks().list_deliveries(c.scope(), &filter, &page).await?;
    ok(StatusCode::OK, &ListOut::new(result, |d| d.id.to_string(), |d| WebhookDeliveryOut::new(&d, None)))
}

/// Retrieve a delivery with its attempts.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Delivery id")),
    responses((status = 200, description = "The delivery", body = crate::wire::webhooks::WebhookDeliveryEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[get("/webhook-deliveries/{id}")]
pub async fn get_delivery(SecretKey(c): SecretKey, id: web::Path<String>) -> Result<HttpResponse, ApiError> {
    let (delivery, attempts) = c.state.use_cases.webhooks().get_delivery(c.scope(), &delivery_id(&id)?).await?;
    ok(StatusCode::OK, &WebhookDeliveryOut::new(&delivery, Some(&attempts)))
}

/// Send a delivery's event to its endpoint again, as a new delivery. Needs an Idempotency-Key
/// of at least 8 characters.
#[utoipa::path(
    tag = "webhooks",
    params(("id" = String, Path, description = "Delivery id"), ("Idempotency-Key" = String, Header, description = "At least 8 characters; replays the first answer")),
    responses((status = 202, description = "The new delivery, pending", body = crate::wire::webhooks::WebhookDeliveryEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/webhook-deliveries/{id}/replay")]
pub async fn replay_delivery(req: HttpRequest, SecretKey(caller): SecretKey, id: web::Path<String>) -> HttpResponse {
    match stablepay_http::idempotency::key_of(&req) {
        Ok(Some(key)) if key.len() >= MIN_REPLAY_KEY_CHARS => {}
        Ok(_) => {
            return ApiError::field(
                ErrorCode::INVALID_IDEMPOTENCY_KEY,
                "Idempotency-Key",
                "Replaying a delivery needs an Idempotency-Key of at least 8 characters.",
            )
            .error_response();
        }
        Err(e) => return e.error_response(),
    }
    idempotency::execute(caller, &req, &[], rebuild::none, move |c| async move {
        let delivery = c.state.use_cases.webhooks().replay(c.scope(), &delivery_id(&id)?).await?;
        done(StatusCode::ACCEPTED, &WebhookDeliveryOut::new(&delivery, None))
    })
    .await
}

/// Send a synthetic event (`data.test = true`) to one endpoint, or to every enabled endpoint
/// that receives its type. Not idempotent: each call sends a new event.
#[utoipa::path(
    tag = "webhooks",
    request_body = WebhookTestIn,
    responses((status = 202, description = "The event and its deliveries (none when no endpoint receives it)", body = crate::wire::webhooks::WebhookTestEnvelope), crate::wire::common::Errors),
    security(("bearer" = []), ("apiKey" = []))
)]
#[post("/webhooks/test")]
pub async fn send_test(SecretKey(c): SecretKey, body: ApiJson<WebhookTestIn>) -> Result<HttpResponse, ApiError> {
    let ApiJson(input, _) = body;
    let endpoint = input.endpoint_id.as_deref().map(endpoint_id).transpose()?;
    let (event, deliveries) =
        c.state.use_cases.webhooks().send_test(c.scope(), &input.event_type, endpoint.as_ref()).await?;
    let out = WebhookTestOut {
        event: EventOut::from(event),
        deliveries: deliveries.iter().map(|d| WebhookDeliveryOut::new(d, None)).collect(),
    };
    ok(StatusCode::ACCEPTED, &out)
}
