//! Webhook endpoints, deliveries, attempts, incidents and test events, and the event payload
//! schemas of the document.

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use stablepay_domain::Error as DomainError;
use stablepay_domain::webhook::model::EndpointState;
use stablepay_domain::webhook::model::endpoint_url;
use stablepay_domain::webhook::model::{
    Attempt, DeliveryStatus, Subscription, WebhookDelivery, WebhookEndpoint, WebhookIncident,
};
use stablepay_domain::webhook::service::{EndpointInput, EndpointPatch};
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{ListOut, envelope};
use crate::wire::events::{EventOut, event_schema};

/// A field that may be absent (unchanged), `null` (cleared) or a value.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Ok(Some(Option::deserialize(d)?))
}

/// `POST /v1/webhook-endpoints` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookEndpointCreate {
    /// Where events are posted: an absolute http or https URL (https recommended), at most
    /// 2048 bytes.
    pub url: String,
    /// The event types to receive; omitted: every supported type, including types added later.
    pub event_types: Option<Vec<String>>,
    /// A note for the merchant, at most 500 bytes.
    pub description: Option<String>,
}

impl TryFrom<WebhookEndpointCreate> for EndpointInput {
    type Error = ApiError;

    fn try_from(b: WebhookEndpointCreate) -> Result<Self, ApiError> {
        Ok(Self {
            url: endpoint_url(&b.url)?,
            event_types: Subscription::parse(b.event_types.as_deref())?,
            description: b.description,
        })
    }
}

/// Whom to alert about incidents.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AlertPreferencesIn {
    pub on_incident_opened: Option<bool>,
    pub on_incident_resolved: Option<bool>,
}

/// `PATCH /v1/webhook-endpoints/{id}` body: every field given is changed.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookEndpointPatch {
    pub url: Option<String>,
    /// A list of types, or null for every supported type.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Vec<String>>, nullable)]
    pub event_types: Option<Option<Vec<String>>>,
    /// `enabled` or `disabled`. A disabled endpoint gets no new deliveries, and its pending
    /// ones fail as `endpoint_disabled`.
    pub state: Option<String>,
    /// A note, or null to clear it.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<String>, nullable)]
    pub description: Option<Option<String>>,
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_object")]
    pub alert_preferences: Option<AlertPreferencesIn>,
}

impl TryFrom<WebhookEndpointPatch> for EndpointPatch {
    type Error = ApiError;

    fn try_from(b: WebhookEndpointPatch) -> Result<Self, ApiError> {
        let (opened, resolved) =
            b.alert_preferences.map_or((None, None), |a| (a.on_incident_opened, a.on_incident_resolved));
        let state = |s: &str| {
            EndpointState::parse(s).ok_or_else(|| DomainError::validation("state", "must be enabled or disabled"))
        };
        Ok(Self {
            url: b.url.as_deref().map(endpoint_url).transpose()?,
            event_types: b.event_types.map(|t| Subscription::parse(t.as_deref())).transpose()?,
            state: b.state.as_deref().map(state).transpose()?,
            description: b.description,
            on_incident_opened: opened,
            on_incident_resolved: resolved,
        })
    }
}

/// `POST /v1/webhooks/test` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WebhookTestIn {
    /// The event type to simulate.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Only this endpoint (even if it does not subscribe to the type); omitted: every enabled
    /// endpoint that receives the type.
    pub endpoint_id: Option<String>,
}

/// Whom the endpoint alerts about incidents.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AlertPreferencesOut {
    pub on_incident_opened: bool,
    pub on_incident_resolved: bool,
}

/// A secret rotation's overlap: the previous secret also signs until `endsAt`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecretOverlapOut {
    pub ends_at: String,
}

/// A webhook endpoint.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookEndpointOut {
    pub id: String,
    /// The literal `webhook_endpoint`.
    pub object: String,
    pub mode: String,
    pub url: String,
    pub description: Option<String>,
    /// The types it receives now.
    pub event_types: Vec<String>,
    /// Whether it receives every supported type, including types added later.
    pub all_event_types: bool,
    /// `enabled` or `disabled`.
    pub state: String,
    pub alert_preferences: AlertPreferencesOut,
    /// Set during a rotation's overlap.
    pub secret_overlap: Option<SecretOverlapOut>,
    /// Only in the answers of creation and rotation: shown once, never again.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl WebhookEndpointOut {
    pub fn new(e: &WebhookEndpoint, secret: Option<String>, now: chrono::DateTime<chrono::Utc>) -> Self {
        Self {
            id: e.id.to_string(),
            object: "webhook_endpoint".into(),
            mode: e.scope.mode.as_str().into(),
            url: e.url.to_string(),
            description: e.description.clone(),
            event_types: e.subscription.types().iter().map(|t| t.as_str().to_owned()).collect(),
            all_event_types: e.subscription == Subscription::All,
            state: e.state.as_str().into(),
            alert_preferences: AlertPreferencesOut {
                on_incident_opened: e.alerts.on_incident_opened,
                on_incident_resolved: e.alerts.on_incident_resolved,
            },
            secret_overlap: e.overlap(now).map(|p| SecretOverlapOut { ends_at: timestamp(p.until) }),
            signing_secret: secret,
            created_at: timestamp(e.created_at),
            updated_at: timestamp(e.updated_at),
        }
    }
}

/// The answer of `DELETE /v1/webhook-endpoints/{id}`.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArchivedEndpointOut {
    pub id: String,
    /// The literal `webhook_endpoint`.
    pub object: String,
    /// Always true: the endpoint receives nothing more; its deliveries stay readable.
    pub archived: bool,
}

/// Request headers sent (without the signatures), by name.
fn headers(pairs: &[(String, String)]) -> Value {
    Value::Object(pairs.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect::<Map<_, _>>())
}

/// One attempt of a delivery.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookAttemptOut {
    /// 1-based.
    pub number: u32,
    pub started_at: String,
    pub duration_ms: u32,
    /// The endpoint's HTTP status, when it answered.
    pub status_code: Option<u16>,
    /// Why it failed: dns, connection, tls, timeout, blocked_destination, http_4xx, http_5xx,
    /// redirect, response_too_large, signing_secret, endpoint_disabled or internal; null when
    /// delivered.
    pub error_category: Option<String>,
    pub error: Option<String>,
    /// The start of the answer (at most 4 KB), control characters replaced.
    pub response_excerpt: Option<String>,
    /// The request's headers, signatures left out.
    #[schema(value_type = Object)]
    pub request_headers: Value,
}

impl From<&Attempt> for WebhookAttemptOut {
    fn from(a: &Attempt) -> Self {
        Self {
            number: a.number,
            started_at: timestamp(a.started_at),
            duration_ms: a.outcome.duration_ms,
            status_code: a.outcome.status_code,
            error_category: a.outcome.error_category.map(|c| c.as_str().to_owned()),
            error: a.outcome.error_message.clone(),
            response_excerpt: a.outcome.response_excerpt.clone(),
            request_headers: headers(&a.outcome.request_headers),
        }
    }
}

/// A delivery of one event to one endpoint.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookDeliveryOut {
    pub id: String,
    /// The literal `webhook_delivery`.
    pub object: String,
    pub mode: String,
    pub endpoint_id: String,
    /// The event's id: the receiver's deduplication key.
    pub event_id: String,
    pub event_type: String,
    /// pending, delivering, delivered, retry_scheduled or failed.
    pub status: String,
    pub attempt_count: u32,
    /// When the next automatic attempt is due (pending and retry_scheduled).
    pub next_attempt_at: Option<String>,
    pub last_attempt_at: Option<String>,
    /// The latest attempt's HTTP status, when the endpoint answered.
    pub latest_response_code: Option<u16>,
    /// The latest attempt's error, in words.
    pub latest_error: Option<String>,
    /// The latest attempt's error category (see attempts).
    pub error_category: Option<String>,
    /// The latest attempt's duration.
    pub duration_ms: Option<u32>,
    /// The latest attempt's request headers, signatures left out.
    #[schema(value_type = Option<Object>)]
    pub request_headers: Option<Value>,
    /// The start of the latest answer (at most 4 KB).
    pub response_excerpt: Option<String>,
    /// A synthetic event of `POST /v1/webhooks/test`.
    pub test: bool,
    /// The delivery this one replays.
    pub replay_of: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub delivered_at: Option<String>,
    /// Every attempt, oldest first (on retrieval only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<WebhookAttemptOut>>,
}

impl WebhookDeliveryOut {
    pub fn new(d: &WebhookDelivery, attempts: Option<&[Attempt]>) -> Self {
        let latest = d.latest.as_ref();
        let sent = latest.map(|a| &a.outcome);
        Self {
            id: d.id.to_string(),
            object: "webhook_delivery".into(),
            mode: d.scope.mode.as_str().into(),
            endpoint_id: d.endpoint_id.to_string(),
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str().into(),
            status: d.status.as_str().into(),
            attempt_count: d.attempt_count,
            next_attempt_at: d
                .next_attempt_at
                .filter(|_| matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::RetryScheduled))
                .map(timestamp),
            last_attempt_at: latest.map(|a| timestamp(a.started_at)),
            latest_response_code: sent.and_then(|a| a.status_code),
            latest_error: sent.and_then(|a| a.error_message.clone()),
            error_category: sent.and_then(|a| a.error_category).map(|c| c.as_str().to_owned()),
            duration_ms: sent.map(|a| a.duration_ms),
            request_headers: sent.map(|a| headers(&a.request_headers)),
            response_excerpt: sent.and_then(|a| a.response_excerpt.clone()),
            test: d.test,
            replay_of: d.replay_of.as_ref().map(ToString::to_string),
            created_at: timestamp(d.created_at),
            updated_at: timestamp(d.updated_at),
            delivered_at: d.delivered_at.map(timestamp),
            attempts: attempts.map(|list| list.iter().map(WebhookAttemptOut::from).collect()),
        }
    }
}

/// An incident of an endpoint: a run of failed attempts.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookIncidentOut {
    pub id: String,
    /// The literal `webhook_incident`.
    pub object: String,
    pub mode: String,
    pub endpoint_id: String,
    /// `open` or `resolved`.
    pub status: String,
    pub opened_at: String,
    pub resolved_at: Option<String>,
    /// Failed attempts in a row when it was last updated.
    pub failed_attempts: u32,
    pub last_error_category: Option<String>,
    pub last_delivery_id: Option<String>,
}

impl From<&WebhookIncident> for WebhookIncidentOut {
    fn from(i: &WebhookIncident) -> Self {
        Self {
            id: i.id.to_string(),
            object: "webhook_incident".into(),
            mode: i.scope.mode.as_str().into(),
            endpoint_id: i.endpoint_id.to_string(),
            status: i.status.as_str().into(),
            opened_at: timestamp(i.opened_at),
            resolved_at: i.resolved_at.map(timestamp),
            failed_attempts: i.failed_attempts,
            last_error_category: i.last_error_category.map(|c| c.as_str().to_owned()),
            last_delivery_id: i.last_delivery_id.as_ref().map(ToString::to_string),
        }
    }
}

/// The answer of `POST /v1/webhooks/test`: the synthetic event and its deliveries.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WebhookTestOut {
    pub event: EventOut,
    pub deliveries: Vec<WebhookDeliveryOut>,
}

envelope!(/// A webhook endpoint.
    WebhookEndpointEnvelope, WebhookEndpointOut);
envelope!(/// A page of webhook endpoints.
    WebhookEndpointListEnvelope, ListOut<WebhookEndpointOut>);
envelope!(/// An archived webhook endpoint.
    ArchivedEndpointEnvelope, ArchivedEndpointOut);
envelope!(/// A webhook delivery.
    WebhookDeliveryEnvelope, WebhookDeliveryOut);
envelope!(/// A page of webhook deliveries.
    WebhookDeliveryListEnvelope, ListOut<WebhookDeliveryOut>);
envelope!(/// A webhook incident.
    WebhookIncidentEnvelope, WebhookIncidentOut);
envelope!(/// A page of webhook incidents.
    WebhookIncidentListEnvelope, ListOut<WebhookIncidentOut>);
envelope!(/// A test event and its deliveries.
    WebhookTestEnvelope, WebhookTestOut);

// Event payloads, by type (for the OpenAPI document: the `webhooks` section and the
// components; deliveries and `GET /v1/events` render the same data). Synthetic test events
// add `test: true` to `data`.

/// `data` of every `invoice.*` event: the invoice's money at emission time.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceEventData {
    /// The literal `invoice`.
    pub object: String,
    pub id: String,
    pub invoice_number: Option<String>,
    pub collection_state: String,
    pub status: String,
    pub currency_code: String,
    pub total: String,
    /// Cumulative credited payments.
    pub customer_amount_paid: String,
    pub customer_amount_remaining: String,
    pub overpayment_amount: String,
    pub merchant_amount_settled: String,
    pub platform_fee: String,
    pub net_amount: String,
    /// Every credited payment.
    pub credited_payment_ids: Vec<String>,
    /// The latest payment (the payment resource's fields), or null.
    pub latest_payment: Option<crate::wire::checkout::PaymentOut>,
    pub external_reference: Option<String>,
    /// The reason given to void or mark uncollectible.
    pub reason: Option<String>,
    /// Only on synthetic test events: true.
    pub test: Option<bool>,
}

/// `data` of `payment_link.*` events.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLinkEventData {
    /// The literal `payment_link`.
    pub object: String,
    pub id: String,
    pub mode: String,
    /// `completed` or `expired`.
    pub status: String,
    /// `payment_link.completed`: the invoice that paid the single-use link.
    pub invoice_id: Option<String>,
    /// Only on synthetic test events: true.
    pub test: Option<bool>,
}

event_schema!(/// An `invoice.*` event.
    InvoiceEvent, InvoiceEventData);
event_schema!(/// A `payment.failed`, `payment.underpaid` or `payment.overpaid` event: `data` is the payment.
    PaymentEvent, crate::wire::checkout::PaymentOut);
event_schema!(/// A `payment.unattributed` event: `data` is the unattributed transfer.
    UnattributedTransferEvent, crate::wire::events::UnattributedTransferOut);
event_schema!(/// A `payment_link.*` event.
    PaymentLinkEvent, PaymentLinkEventData);

/// The schema name of the envelope of events of `event_type`.
pub fn event_schema_name(event_type: stablepay_domain::event::EventType) -> &'static str {
    let name = event_type.as_str();
    if name == "payment.unattributed" {
        "UnattributedTransferEvent"
    } else if name.starts_with("invoice.") {
        "InvoiceEvent"
    } else if name.starts_with("payment_link.") {
        "PaymentLinkEvent"
    } else {
        "PaymentEvent"
    }
}
