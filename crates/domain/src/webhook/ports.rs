//! What the webhook use cases need from adapters: the store, the sender, and the box that keeps
//! signing secrets sealed at rest.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::event::model::{Event, EventType};
use crate::ids::{EventId, WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::url::HttpUrl;
use crate::webhook::delivery::Conclusion;
use crate::webhook::model::{
    Attempt, DeliveryStatus, SealedSecret, SendOutcome, SigningSecret, WebhookDelivery, WebhookEndpoint,
    WebhookIncident,
};

/// Which deliveries a list shows (every filter optional, all must hold).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeliveryFilter {
    /// Only deliveries to this endpoint.
    pub endpoint: Option<WebhookEndpointId>,
    /// Only deliveries of this event.
    pub event: Option<EventId>,
    /// Only deliveries of events of this type.
    pub event_type: Option<EventType>,
    /// Only deliveries in this state.
    pub status: Option<DeliveryStatus>,
}

/// A delivery a worker claimed for one attempt.
#[derive(Clone, Debug)]
pub struct ClaimedDelivery {
    /// Its status is `delivering` and `attempt_count` is the number of this attempt.
    pub delivery: WebhookDelivery,
    /// Identifies this claim: a result is recorded only while the claim holds.
    pub claim: String,
    /// `None` when the endpoint was archived since the delivery was created.
    pub endpoint: Option<WebhookEndpoint>,
    /// The event to deliver.
    pub event: Event,
}

/// A finished attempt to record, with what it makes of its delivery.
#[derive(Clone, Debug)]
pub struct AttemptRecord {
    /// The delivery's merchant and mode.
    pub scope: Scope,
    /// The delivery.
    pub delivery_id: WebhookDeliveryId,
    /// Its endpoint.
    pub endpoint_id: WebhookEndpointId,
    /// The claim the attempt ran under (nothing is recorded once another worker holds it).
    pub claim: String,
    /// The attempt, as made.
    pub attempt: Attempt,
    /// What it makes of the delivery.
    pub conclusion: Conclusion,
    /// The id of the incident this attempt opens, if it is the
    /// [`INCIDENT_AFTER_FAILURES`](crate::webhook::model::INCIDENT_AFTER_FAILURES)th failure
    /// in a row of its endpoint and none is open.
    pub new_incident_id: WebhookIncidentId,
}

#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
/// Webhook endpoints, deliveries, attempts and incidents; scoped by merchant and mode.
pub trait WebhookStore: Send + Sync {
    /// Endpoints of `scope` that are not archived.
    async fn count_endpoints(&self, scope: &Scope) -> Result<usize, Error>;
    /// Inserts a new endpoint. Errors: `Internal` when the id is taken.
    async fn insert_endpoint(&self, endpoint: &WebhookEndpoint) -> Result<(), Error>;
    /// Errors: `NotFound(WebhookEndpoint)` for an unknown, archived or foreign id;
    /// `ModeMismatch` for one of the other mode.
    async fn get_endpoint(&self, scope: &Scope, id: &WebhookEndpointId) -> Result<WebhookEndpoint, Error>;
    /// Endpoints of `scope` that are not archived, newest first.
    async fn list_endpoints(&self, scope: &Scope, page: &PageRequest) -> Result<Page<WebhookEndpoint>, Error>;
    /// Writes `endpoint` if its stored lock version is `expected_lock_version`; answers
    /// whether it did.
    async fn update_endpoint(&self, endpoint: &WebhookEndpoint, expected_lock_version: i64) -> Result<bool, Error>;
    /// Archives the endpoint: it receives nothing more and disappears from reads; its
    /// deliveries stay readable. Errors: as `get_endpoint`.
    async fn archive_endpoint(&self, scope: &Scope, id: &WebhookEndpointId, now: DateTime<Utc>) -> Result<(), Error>;
    /// A new delivery (a replay), kept with its event. Errors: `NotFound(Event)` when the
    /// event is no longer stored (past its retention).
    async fn insert_delivery(&self, delivery: &WebhookDelivery) -> Result<(), Error>;
    /// A synthetic test event and its deliveries, in one transaction. The event is kept for
    /// its deliveries only: event lists and the outbox's fan-out never see it.
    async fn insert_test_event(&self, event: &Event, deliveries: &[WebhookDelivery]) -> Result<(), Error>;
    /// Deliveries of `scope`, newest first. Errors: `InvalidCursor`.
    async fn list_deliveries(
        &self,
        scope: &Scope,
        filter: &DeliveryFilter,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, Error>;
    /// A delivery with every attempt, oldest first. Errors: `NotFound(WebhookDelivery)`,
    /// `ModeMismatch`.
    async fn get_delivery(
        &self,
        scope: &Scope,
        id: &WebhookDeliveryId,
    ) -> Result<(WebhookDelivery, Vec<Attempt>), Error>;
    /// Incidents of one endpoint (archived endpoints included), newest first.
    async fn list_incidents(
        &self,
        scope: &Scope,
        endpoint: &WebhookEndpointId,
        page: &PageRequest,
    ) -> Result<Page<WebhookIncident>, Error>;
    /// Errors: `NotFound(WebhookIncident)`, `ModeMismatch`.
    async fn get_incident(&self, scope: &Scope, id: &WebhookIncidentId) -> Result<WebhookIncident, Error>;
    /// Claims up to `limit` deliveries due now, across merchants (each answered with its
    /// scope), for `lease_ms`: pending and retry_scheduled ones whose next attempt is due
    /// (their attempt count goes up by one), and delivering ones whose worker's lease ran out
    /// (the same attempt runs again). Several workers never claim the same delivery at once.
    async fn claim_deliveries(&self, limit: u32, lease_ms: u32) -> Result<Vec<ClaimedDelivery>, Error>;
    /// Records finished attempts, each only while its claim holds (a record whose claim was
    /// taken over is dropped), with its delivery's new state, its endpoint's run of failures
    /// and the endpoint's incident (opened at the run's
    /// [`INCIDENT_AFTER_FAILURES`](crate::webhook::model::INCIDENT_AFTER_FAILURES)th failure,
    /// resolved by a delivered attempt). Atomic per record.
    async fn record_attempts(&self, records: &[AttemptRecord]) -> Result<(), Error>;
}

/// An attempt to send.
#[derive(Clone, Debug)]
pub struct OutgoingDelivery {
    /// The delivery being attempted.
    pub delivery_id: WebhookDeliveryId,
    /// Where to send it.
    pub url: HttpUrl,
    /// The event sent.
    pub event: Event,
    /// The secrets that sign it, newest first (two during a rotation's overlap).
    pub secrets: Vec<SigningSecret>,
    /// The signatures' timestamp.
    pub sent_at: DateTime<Utc>,
}

#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
/// Sends one signed delivery over HTTP.
pub trait WebhookSender: Send + Sync {
    /// Renders, signs and posts the event; never fails, it reports.
    async fn send(&self, delivery: OutgoingDelivery) -> SendOutcome;
}

/// Keeps signing secrets sealed at rest (they must be recoverable to sign, so they are
/// encrypted, not hashed).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait SecretBox: Send + Sync {
    /// Errors: `FeatureUnavailable` when no key is configured.
    fn seal(&self, secret: &SigningSecret) -> Result<SealedSecret, Error>;
    /// Errors: `FeatureUnavailable` when no key is configured; `Internal` when the sealed
    /// secret does not open with it.
    fn open(&self, sealed: &SealedSecret) -> Result<SigningSecret, Error>;
}
