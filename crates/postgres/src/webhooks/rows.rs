//! Row types of the webhook tables and their conversions.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use serde_json::Value;
use stablepay_domain::event::EventType;
use stablepay_domain::ids::{EventId, MerchantId, WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use stablepay_domain::url::HttpUrl;
use stablepay_domain::webhook::model::{
    AlertPreferences, Attempt, DeliveryStatus, EndpointState, ErrorCategory, IncidentStatus, PreviousSecret,
    SealedSecret, SendOutcome, Subscription, WebhookDelivery, WebhookEndpoint, WebhookIncident,
};
use stablepay_domain::{Error, Scope};

use crate::rows::{corrupt, mode};
use crate::schema::{webhook_attempts, webhook_deliveries, webhook_endpoints, webhook_incidents};

fn scope(merchant_id: String, mode_text: &str) -> Result<Scope, Error> {
    Ok(Scope::new(MerchantId::from_trusted(merchant_id), mode(mode_text)?))
}

fn count(n: i32) -> u32 {
    u32::try_from(n).unwrap_or(0)
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = webhook_endpoints, check_for_backend(diesel::pg::Pg))]
pub(crate) struct EndpointRow {
    pub(crate) id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) url: String,
    pub(crate) description: Option<String>,
    pub(crate) event_types: Option<Vec<String>>,
    pub(crate) state: String,
    pub(crate) alert_on_incident_opened: bool,
    pub(crate) alert_on_incident_resolved: bool,
    pub(crate) secret: Vec<u8>,
    pub(crate) previous_secret: Option<Vec<u8>>,
    pub(crate) previous_secret_until: Option<DateTime<Utc>>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) lock_version: i64,
}

impl EndpointRow {
    pub(crate) fn from_domain(e: &WebhookEndpoint) -> Self {
        Self {
            id: e.id.to_string(),
            merchant_id: e.scope.merchant_id.to_string(),
            mode: e.scope.mode.as_str().to_owned(),
            url: e.url.to_string(),
            description: e.description.clone(),
            event_types: match &e.subscription {
                Subscription::All => None,
                Subscription::Only(types) => Some(types.iter().map(|t| t.as_str().to_owned()).collect()),
            },
            state: e.state.as_str().to_owned(),
            alert_on_incident_opened: e.alerts.on_incident_opened,
            alert_on_incident_resolved: e.alerts.on_incident_resolved,
            secret: e.secret.0.clone(),
            previous_secret: e.previous_secret.as_ref().map(|p| p.secret.0.clone()),
            previous_secret_until: e.previous_secret.as_ref().map(|p| p.until),
            created_at: e.created_at,
            updated_at: e.updated_at,
            lock_version: e.lock_version,
        }
    }

    pub(crate) fn into_domain(self) -> Result<WebhookEndpoint, Error> {
        let subscription = match self.event_types {
            None => Subscription::All,
            Some(types) => Subscription::Only(
                types
                    .iter()
                    .map(|t| EventType::parse(t).ok_or_else(|| corrupt("endpoint event type")))
                    .collect::<Result<_, _>>()?,
            ),
        };
        let previous_secret = match (self.previous_secret, self.previous_secret_until) {
            (Some(secret), Some(until)) => Some(PreviousSecret { secret: SealedSecret(secret), until }),
            _ => None,
        };
        Ok(WebhookEndpoint {
            id: WebhookEndpointId::from_trusted(self.id),
            scope: scope(self.merchant_id, &self.mode)?,
            url: HttpUrl::parse(&self.url).map_err(|_| corrupt("endpoint url"))?,
            description: self.description,
            subscription,
            state: EndpointState::parse(&self.state).ok_or_else(|| corrupt("endpoint state"))?,
            alerts: AlertPreferences {
                on_incident_opened: self.alert_on_incident_opened,
                on_incident_resolved: self.alert_on_incident_resolved,
            },
            secret: SealedSecret(self.secret),
            previous_secret,
            created_at: self.created_at,
            updated_at: self.updated_at,
            lock_version: self.lock_version,
        })
    }
}

#[derive(Queryable, Selectable, QueryableByName)]
#[diesel(table_name = webhook_deliveries, check_for_backend(diesel::pg::Pg))]
pub(crate) struct DeliveryRow {
    pub(crate) id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) endpoint_id: String,
    pub(crate) event_id: String,
    pub(crate) event_type: String,
    pub(crate) status: String,
    pub(crate) attempt_count: i32,
    pub(crate) next_attempt_at: Option<DateTime<Utc>>,
    pub(crate) claim: Option<String>,
    pub(crate) test: bool,
    pub(crate) replay_of: Option<String>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) delivered_at: Option<DateTime<Utc>>,
}

impl DeliveryRow {
    pub(crate) fn into_domain(self, latest: Option<Attempt>) -> Result<WebhookDelivery, Error> {
        Ok(WebhookDelivery {
            id: WebhookDeliveryId::from_trusted(self.id),
            scope: scope(self.merchant_id, &self.mode)?,
            endpoint_id: WebhookEndpointId::from_trusted(self.endpoint_id),
            event_id: EventId::from_trusted(self.event_id),
            event_type: EventType::parse(&self.event_type).ok_or_else(|| corrupt("delivery event type"))?,
            status: DeliveryStatus::parse(&self.status).ok_or_else(|| corrupt("delivery status"))?,
            attempt_count: count(self.attempt_count),
            next_attempt_at: self.next_attempt_at,
            latest,
            test: self.test,
            replay_of: self.replay_of.map(WebhookDeliveryId::from_trusted),
            created_at: self.created_at,
            updated_at: self.updated_at,
            delivered_at: self.delivered_at,
        })
    }
}

#[derive(Insertable)]
#[diesel(table_name = webhook_deliveries, check_for_backend(diesel::pg::Pg))]
pub(crate) struct NewDeliveryRow {
    id: String,
    merchant_id: String,
    mode: String,
    endpoint_id: String,
    event_id: String,
    event_type: String,
    status: String,
    attempt_count: i32,
    next_attempt_at: Option<DateTime<Utc>>,
    test: bool,
    replay_of: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
    /// When its event was stored: the month the delivery is kept in, with its event.
    event_stored_at: DateTime<Utc>,
}

impl NewDeliveryRow {
    pub(crate) fn from_domain(d: &WebhookDelivery, event_stored_at: DateTime<Utc>) -> Self {
        Self {
            id: d.id.to_string(),
            merchant_id: d.scope.merchant_id.to_string(),
            mode: d.scope.mode.as_str().to_owned(),
            endpoint_id: d.endpoint_id.to_string(),
            event_id: d.event_id.to_string(),
            event_type: d.event_type.as_str().to_owned(),
            status: d.status.as_str().to_owned(),
            attempt_count: i32::try_from(d.attempt_count).unwrap_or(i32::MAX),
            next_attempt_at: d.next_attempt_at,
            test: d.test,
            replay_of: d.replay_of.as_ref().map(ToString::to_string),
            created_at: d.created_at,
            updated_at: d.updated_at,
            event_stored_at,
        }
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_attempts, check_for_backend(diesel::pg::Pg))]
pub(crate) struct AttemptRow {
    pub(crate) delivery_id: String,
    pub(crate) number: i32,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) duration_ms: i32,
    pub(crate) status_code: Option<i32>,
    pub(crate) error_category: Option<String>,
    pub(crate) error_message: Option<String>,
    pub(crate) response_excerpt: Option<String>,
    pub(crate) request_headers: Value,
}

/// Request headers as stored: a JSON array of `[name, value]` pairs, in the order sent.
pub(crate) fn headers_json(headers: &[(String, String)]) -> Value {
    Value::Array(
        headers.iter().map(|(k, v)| Value::Array(vec![Value::String(k.clone()), Value::String(v.clone())])).collect(),
    )
}

impl AttemptRow {
    pub(crate) fn into_domain(self) -> Result<Attempt, Error> {
        let headers = match self.request_headers {
            Value::Array(pairs) => pairs
                .into_iter()
                .filter_map(|p| match p {
                    Value::Array(kv) => match kv.as_slice() {
                        [Value::String(k), Value::String(v)] => Some((k.clone(), v.clone())),
                        _ => None,
                    },
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        let outcome = SendOutcome {
            duration_ms: count(self.duration_ms),
            status_code: self.status_code.and_then(|c| u16::try_from(c).ok()),
            error_category: self
                .error_category
                .map(|c| ErrorCategory::parse(&c).ok_or_else(|| corrupt("attempt error category")))
                .transpose()?,
            error_message: self.error_message,
            response_excerpt: self.response_excerpt,
            request_headers: headers,
        };
        Ok(Attempt { number: count(self.number), started_at: self.started_at, outcome })
    }
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = webhook_incidents, check_for_backend(diesel::pg::Pg))]
pub(crate) struct IncidentRow {
    pub(crate) id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) endpoint_id: String,
    pub(crate) status: String,
    pub(crate) opened_at: DateTime<Utc>,
    pub(crate) resolved_at: Option<DateTime<Utc>>,
    pub(crate) failed_attempts: i32,
    pub(crate) last_error_category: Option<String>,
    pub(crate) last_delivery_id: Option<String>,
}

impl IncidentRow {
    pub(crate) fn into_domain(self) -> Result<WebhookIncident, Error> {
        Ok(WebhookIncident {
            id: WebhookIncidentId::from_trusted(self.id),
            scope: scope(self.merchant_id, &self.mode)?,
            endpoint_id: WebhookEndpointId::from_trusted(self.endpoint_id),
            status: IncidentStatus::parse(&self.status).ok_or_else(|| corrupt("incident status"))?,
            opened_at: self.opened_at,
            resolved_at: self.resolved_at,
            failed_attempts: count(self.failed_attempts),
            last_error_category: self.last_error_category.and_then(|c| ErrorCategory::parse(&c)),
            last_delivery_id: self.last_delivery_id.map(WebhookDeliveryId::from_trusted),
        })
    }
}
