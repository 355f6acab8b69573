//! The webhook use cases: endpoints and their secrets, deliveries and replays, test events,
//! incidents, and one attempt of the delivery worker.
//!
//! Webhook records use the real time in both modes (signatures must carry the real time); the
//! test clock moves invoices, not deliveries.

use chrono::{DateTime, Duration, Utc};

use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::{Error, Limit};
use crate::event::model::{Event, EventType};
use crate::ids::{EventId, WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::url::HttpUrl;
use crate::webhook::delivery::conclude;
use crate::webhook::destination::check_endpoint;
use crate::webhook::model::{
    AlertPreferences, Attempt, EndpointState, ErrorCategory, MAX_ENDPOINTS, PreviousSecret, RetrySchedule,
    SECRET_OVERLAP_HOURS, SendOutcome, SigningSecret, Subscription, WebhookDelivery, WebhookEndpoint, WebhookIncident,
};
use crate::webhook::ports::{
    AttemptRecord, ClaimedDelivery, DeliveryFilter, OutgoingDelivery, SecretBox, WebhookSender, WebhookStore,
};
use crate::webhook::sample::sample_data;

/// The longest endpoint description, in bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 500;
/// Times a use case reloads an endpoint that changed under it before giving up.
const MAX_ATTEMPTS: usize = 5;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
/// How webhook deliveries are retried.
pub struct WebhookSettings {
    /// The delays between attempts.
    pub schedule: RetrySchedule,
    /// Whether endpoints may be on loopback and private addresses
    /// (`STABLEPAY_WEBHOOK_ALLOW_PRIVATE`; see [`destination`](crate::webhook::destination)).
    pub allow_private: bool,
}

/// `POST /v1/webhook-endpoints`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EndpointInput {
    /// The endpoint's absolute http(s) URL ([`endpoint_url`](crate::webhook::model::endpoint_url)).
    pub url: HttpUrl,
    /// The event types it receives.
    pub event_types: Subscription,
    /// A note for the merchant (up to 500 bytes).
    pub description: Option<String>,
}

/// `PATCH /v1/webhook-endpoints/{id}`: each field given is changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EndpointPatch {
    /// A new URL.
    pub url: Option<HttpUrl>,
    /// New subscriptions (`Subscription::All`: back to every supported type).
    pub event_types: Option<Subscription>,
    /// Enabled or disabled.
    pub state: Option<EndpointState>,
    /// `Some(None)` clears it.
    pub description: Option<Option<String>>,
    /// Whether the merchant wants an alert when an incident opens (kept and shown).
    pub on_incident_opened: Option<bool>,
    /// Whether the merchant wants an alert when an incident is resolved (kept and shown).
    pub on_incident_resolved: Option<bool>,
}

fn parse_description(text: Option<&String>) -> Result<Option<String>, Error> {
    match text {
        Some(d) if d.len() > MAX_DESCRIPTION_BYTES => {
            Err(Error::validation("description", format!("must be at most {MAX_DESCRIPTION_BYTES} bytes")))
        }
        other => Ok(other.cloned()),
    }
}

/// The webhook use cases: endpoints and their secrets, deliveries, replays, incidents and test
/// events.
pub struct Webhooks<'a> {
    /// Endpoints, deliveries and incidents.
    pub store: &'a dyn WebhookStore,
    /// Ids and signing secrets.
    pub crypto: &'a dyn Crypto,
    /// Encrypts signing secrets at rest.
    pub secrets: &'a dyn SecretBox,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// The retry schedule.
    pub settings: &'a WebhookSettings,
}

impl Webhooks<'_> {
    fn now(&self) -> DateTime<Utc> {
        self.clock.system_now()
    }

    /// A new endpoint and its signing secret (shown once). Errors: `Validation` (url,
    /// event_types, description), `WebhookEventUnsupported`, `LimitReached`,
    /// `FeatureUnavailable` when secrets cannot be sealed (no key configured).
    pub async fn create_endpoint(
        &self,
        scope: &Scope,
        input: EndpointInput,
    ) -> Result<(WebhookEndpoint, SigningSecret), Error> {
        let (url, subscription) = (input.url, input.event_types);
        check_endpoint(&url, self.settings.allow_private)?;
        let description = parse_description(input.description.as_ref())?;
        if self.store.count_endpoints(scope).await? >= MAX_ENDPOINTS {
            return Err(Error::LimitReached { what: Limit::WebhookEndpoints, limit: MAX_ENDPOINTS });
        }
        let secret = SigningSecret::generate(self.crypto);
        let now = self.now();
        let endpoint = WebhookEndpoint {
            id: WebhookEndpointId::generate(self.crypto),
            scope: scope.clone(),
            url,
            description,
            subscription,
            state: EndpointState::Enabled,
            alerts: AlertPreferences::default(),
            secret: self.secrets.seal(&secret)?,
            previous_secret: None,
            created_at: now,
            updated_at: now,
            lock_version: 1,
        };
        self.store.insert_endpoint(&endpoint).await?;
        Ok((endpoint, secret))
    }

    /// One endpoint. Errors: `NotFound(WebhookEndpoint)`.
    pub async fn get_endpoint(&self, scope: &Scope, id: &WebhookEndpointId) -> Result<WebhookEndpoint, Error> {
        self.store.get_endpoint(scope, id).await
    }

    /// The scope's endpoints, newest first. Errors: `InvalidCursor`.
    pub async fn list_endpoints(&self, scope: &Scope, page: &PageRequest) -> Result<Page<WebhookEndpoint>, Error> {
        self.store.list_endpoints(scope, page).await
    }

    /// Loads the endpoint, lets `change` edit a copy, and saves it at the loaded lock version
    /// (reloading when another change won). Answers the saved endpoint and `change`'s output.
    async fn change<T>(
        &self,
        scope: &Scope,
        id: &WebhookEndpointId,
        change: impl Fn(&mut WebhookEndpoint, DateTime<Utc>) -> Result<T, Error>,
    ) -> Result<(WebhookEndpoint, T), Error> {
        for _ in 0..MAX_ATTEMPTS {
            let current = self.store.get_endpoint(scope, id).await?;
            let now = self.now();
            let mut next = current.clone();
            let output = change(&mut next, now)?;
            next.updated_at = now;
            next.lock_version = current.lock_version + 1;
            if self.store.update_endpoint(&next, current.lock_version).await? {
                return Ok((next, output));
            }
        }
        Err(Error::Internal("the webhook endpoint kept changing".into()))
    }

    /// Errors: as creation, and `NotFound(WebhookEndpoint)`.
    pub async fn update_endpoint(
        &self,
        scope: &Scope,
        id: &WebhookEndpointId,
        patch: EndpointPatch,
    ) -> Result<WebhookEndpoint, Error> {
        let (url, subscription, state) = (patch.url, patch.event_types, patch.state);
        if let Some(url) = &url {
            check_endpoint(url, self.settings.allow_private)?;
        }
        let description = patch.description.as_ref().map(|d| parse_description(d.as_ref())).transpose()?;
        let (endpoint, ()) = self
            .change(scope, id, |e, _| {
                if let Some(url) = &url {
                    e.url = url.clone();
                }
                if let Some(subscription) = &subscription {
                    e.subscription = subscription.clone();
                }
                if let Some(state) = state {
                    e.state = state;
                }
                if let Some(description) = &description {
                    e.description = description.clone();
                }
                if let Some(on) = patch.on_incident_opened {
                    e.alerts.on_incident_opened = on;
                }
                if let Some(on) = patch.on_incident_resolved {
                    e.alerts.on_incident_resolved = on;
                }
                Ok(())
            })
            .await?;
        Ok(endpoint)
    }

    /// Archives an endpoint: it receives nothing more; its deliveries stay readable. Errors:
    /// `NotFound(WebhookEndpoint)`.
    pub async fn archive_endpoint(&self, scope: &Scope, id: &WebhookEndpointId) -> Result<(), Error> {
        self.store.archive_endpoint(scope, id, self.now()).await
    }

    /// A new signing secret (shown once); the current one keeps signing for
    /// [`SECRET_OVERLAP_HOURS`] or until the overlap is ended. Errors: `SecretOverlapActive`
    /// during an overlap, `NotFound(WebhookEndpoint)`.
    pub async fn rotate_secret(
        &self,
        scope: &Scope,
        id: &WebhookEndpointId,
    ) -> Result<(WebhookEndpoint, SigningSecret), Error> {
        let secret = SigningSecret::generate(self.crypto);
        let sealed = self.secrets.seal(&secret)?;
        let (endpoint, ()) = self
            .change(scope, id, |e, now| {
                if e.overlap(now).is_some() {
                    return Err(Error::SecretOverlapActive);
                }
                let old = std::mem::replace(&mut e.secret, sealed.clone());
                e.previous_secret =
                    Some(PreviousSecret { secret: old, until: now + Duration::hours(SECRET_OVERLAP_HOURS) });
                Ok(())
            })
            .await?;
        Ok((endpoint, secret))
    }

    /// Ends a rotation's overlap: only the new secret signs. Errors: `SecretOverlapExpired`
    /// when none is running.
    pub async fn end_secret_overlap(&self, scope: &Scope, id: &WebhookEndpointId) -> Result<WebhookEndpoint, Error> {
        let (endpoint, ()) = self
            .change(scope, id, |e, now| {
                if e.overlap(now).is_none() {
                    return Err(Error::SecretOverlapExpired);
                }
                e.previous_secret = None;
                Ok(())
            })
            .await?;
        Ok(endpoint)
    }

    /// Deliveries of `scope` matching the filter, newest first. Errors: `InvalidCursor`.
    pub async fn list_deliveries(
        &self,
        scope: &Scope,
        filter: &DeliveryFilter,
        page: &PageRequest,
    ) -> Result<Page<WebhookDelivery>, Error> {
        self.store.list_deliveries(scope, filter, page).await
    }

    /// One delivery with its attempts. Errors: `NotFound(WebhookDelivery)`.
    pub async fn get_delivery(
        &self,
        scope: &Scope,
        id: &WebhookDeliveryId,
    ) -> Result<(WebhookDelivery, Vec<Attempt>), Error> {
        self.store.get_delivery(scope, id).await
    }

    /// Sends the delivery's event to its endpoint again, as a new delivery (the event id stays
    /// the receiver's deduplication key). Errors: `NotFound(WebhookDelivery)`,
    /// `NotFound(WebhookEndpoint)` when the endpoint was archived, `WebhookEndpointDisabled`.
    pub async fn replay(&self, scope: &Scope, id: &WebhookDeliveryId) -> Result<WebhookDelivery, Error> {
        let (original, _) = self.store.get_delivery(scope, id).await?;
        let endpoint = self.store.get_endpoint(scope, &original.endpoint_id).await?;
        if endpoint.state != EndpointState::Enabled {
            return Err(Error::WebhookEndpointDisabled);
        }
        let delivery = WebhookDelivery::new(
            WebhookDeliveryId::generate(self.crypto),
            &endpoint,
            (&original.event_id, original.event_type),
            original.test,
            Some(original.id.clone()),
            self.now(),
        );
        self.store.insert_delivery(&delivery).await?;
        Ok(delivery)
    }

    /// A synthetic event of `event_type` (`data.test = true`) delivered to `endpoint` (even
    /// if it is not subscribed to the type), or else to every enabled endpoint that receives
    /// the type. Answers the event and its deliveries (none when no endpoint receives it).
    /// Errors: `WebhookEventUnsupported` (field `type`), `NotFound(WebhookEndpoint)`,
    /// `WebhookEndpointDisabled`.
    pub async fn send_test(
        &self,
        scope: &Scope,
        event_type: &str,
        endpoint: Option<&WebhookEndpointId>,
    ) -> Result<(Event, Vec<WebhookDelivery>), Error> {
        let event_type = EventType::parse(event_type)
            .ok_or_else(|| Error::WebhookEventUnsupported { field: "type".into(), value: event_type.into() })?;
        let targets = match endpoint {
            Some(id) => {
                let e = self.store.get_endpoint(scope, id).await?;
                if e.state != EndpointState::Enabled {
                    return Err(Error::WebhookEndpointDisabled);
                }
                vec![e]
            }
            None => all_endpoints(self.store, scope).await?.into_iter().filter(|e| e.receives(event_type)).collect(),
        };
        let now = self.now();
        let event = Event {
            id: EventId::generate(self.crypto),
            scope: scope.clone(),
            event_type,
            created_at: now,
            data: sample_data(scope, event_type, now),
        };
        let deliveries: Vec<_> = targets
            .iter()
            .map(|e| {
                WebhookDelivery::new(
                    WebhookDeliveryId::generate(self.crypto),
                    e,
                    (&event.id, event_type),
                    true,
                    None,
                    now,
                )
            })
            .collect();
        self.store.insert_test_event(&event, &deliveries).await?;
        Ok((event, deliveries))
    }

    /// Errors: `NotFound(WebhookEndpoint)`.
    pub async fn list_incidents(
        &self,
        scope: &Scope,
        endpoint: &WebhookEndpointId,
        page: &PageRequest,
    ) -> Result<Page<WebhookIncident>, Error> {
        self.store.get_endpoint(scope, endpoint).await?;
        self.store.list_incidents(scope, endpoint, page).await
    }

    /// One incident. Errors: `NotFound(WebhookIncident)`.
    pub async fn get_incident(&self, scope: &Scope, id: &WebhookIncidentId) -> Result<WebhookIncident, Error> {
        self.store.get_incident(scope, id).await
    }

    /// The worker: claims up to `limit` deliveries due now, across merchants, each for
    /// `lease_ms` (pending and retry-scheduled ones whose attempt is due, and delivering ones
    /// whose worker's lease ran out: the same attempt runs again).
    pub async fn claim_due(&self, limit: u32, lease_ms: u32) -> Result<Vec<ClaimedDelivery>, Error> {
        self.store.claim_deliveries(limit, lease_ms).await
    }

    /// The worker: records finished attempts (one transaction), each only while its claim
    /// holds, with its delivery's next state and its endpoint's run of failures and incident.
    pub async fn record(&self, records: &[AttemptRecord]) -> Result<(), Error> {
        self.store.record_attempts(records).await
    }

    /// The worker's attempt at a claimed delivery: sends it (unless its endpoint is disabled
    /// or gone, or its secrets cannot be opened) and decides what follows. Never fails: every
    /// outcome is an attempt to record.
    pub async fn attempt(&self, sender: &dyn WebhookSender, claimed: ClaimedDelivery) -> AttemptRecord {
        let started_at = self.now();
        let number = claimed.delivery.attempt_count.max(1);
        let refused = |category: ErrorCategory, message: &str| SendOutcome::failed(category, message.into(), vec![], 0);
        let outcome = match &claimed.endpoint {
            None => refused(ErrorCategory::EndpointDisabled, "the endpoint was deleted"),
            Some(e) if e.state != EndpointState::Enabled => {
                refused(ErrorCategory::EndpointDisabled, "the endpoint is disabled")
            }
            Some(e) => match self.open_secrets(e, started_at) {
                // The domain logs nothing: the category and message tell the operator.
                Err(_) => refused(ErrorCategory::SigningSecret, "the signing secret could not be read"),
                Ok(secrets) => {
                    let outgoing = OutgoingDelivery {
                        delivery_id: claimed.delivery.id.clone(),
                        url: e.url.clone(),
                        event: claimed.event.clone(),
                        secrets,
                        sent_at: started_at,
                    };
                    sender.send(outgoing).await
                }
            },
        };
        let attempt = Attempt { number, started_at, outcome };
        let finished = self.now();
        // A delivering delivery takes every outcome (see the machine's table); were that ever
        // broken, the delivery fails rather than being retried forever.
        let conclusion =
            conclude(&attempt, &self.settings.schedule, finished).unwrap_or(crate::webhook::delivery::Conclusion {
                status: crate::webhook::model::DeliveryStatus::Failed,
                next_attempt_at: None,
                delivered_at: None,
            });
        AttemptRecord {
            scope: claimed.delivery.scope.clone(),
            delivery_id: claimed.delivery.id.clone(),
            endpoint_id: claimed.delivery.endpoint_id.clone(),
            claim: claimed.claim,
            attempt,
            conclusion,
            new_incident_id: WebhookIncidentId::generate(self.crypto),
        }
    }

    /// The secrets that sign now, newest first.
    fn open_secrets(&self, endpoint: &WebhookEndpoint, now: DateTime<Utc>) -> Result<Vec<SigningSecret>, Error> {
        let mut secrets = vec![self.secrets.open(&endpoint.secret)?];
        if let Some(previous) = endpoint.overlap(now) {
            secrets.push(self.secrets.open(&previous.secret)?);
        }
        Ok(secrets)
    }
}

/// Every endpoint of `scope` that is not archived.
async fn all_endpoints(store: &dyn WebhookStore, scope: &Scope) -> Result<Vec<WebhookEndpoint>, Error> {
    let page = PageRequest { limit: 100, starting_after: None };
    let found = store.list_endpoints(scope, &page).await?;
    if found.items.len() > MAX_ENDPOINTS {
        return Err(Error::Internal(format!("more than {MAX_ENDPOINTS} endpoints")));
    }
    Ok(found.items)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::clock::MockClock;
    use crate::event::model::EventData;
    use crate::ids::MerchantId;
    use crate::mode::Mode;
    use crate::testing::SeqCrypto;
    use crate::webhook::model::{DeliveryStatus, SealedSecret, endpoint_url};
    use crate::webhook::ports::{MockSecretBox, MockWebhookSender, MockWebhookStore};

    fn scope() -> Scope {
        Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Test)
    }

    fn now() -> DateTime<Utc> {
        DateTime::<Utc>::UNIX_EPOCH + Duration::days(20_000)
    }

    fn clock() -> MockClock {
        let mut c = MockClock::new();
        c.expect_system_now().returning(now);
        c
    }

    fn secrets() -> MockSecretBox {
        let mut b = MockSecretBox::new();
        b.expect_seal().returning(|s| Ok(SealedSecret(s.as_str().as_bytes().to_vec())));
        b.expect_open().returning(|s| Ok(SigningSecret::from_trusted(String::from_utf8(s.0.clone()).unwrap())));
        b
    }

    fn endpoint(state: EndpointState, previous: Option<PreviousSecret>) -> WebhookEndpoint {
        WebhookEndpoint {
            id: WebhookEndpointId::from_trusted("we_a".into()),
            scope: scope(),
            url: HttpUrl::parse("https://hooks.example/a").unwrap(),
            description: None,
            subscription: Subscription::All,
            state,
            alerts: AlertPreferences::default(),
            secret: SealedSecret(b"whsec_current".to_vec()),
            previous_secret: previous,
            created_at: now(),
            updated_at: now(),
            lock_version: 1,
        }
    }

    fn claimed(endpoint: Option<WebhookEndpoint>) -> ClaimedDelivery {
        let e = endpoint.clone().unwrap_or_else(|| self::endpoint(EndpointState::Enabled, None));
        let event = Event {
            id: EventId::from_trusted("evt_a".into()),
            scope: scope(),
            event_type: EventType::InvoicePaid,
            created_at: now(),
            data: EventData::Null,
        };
        let mut delivery = WebhookDelivery::new(
            WebhookDeliveryId::from_trusted("whd_a".into()),
            &e,
            (&event.id, event.event_type),
            false,
            None,
            now(),
        );
        delivery.status = DeliveryStatus::Delivering;
        delivery.attempt_count = 2;
        ClaimedDelivery { delivery, claim: "c1".into(), endpoint, event }
    }

    fn service<'a>(
        store: &'a MockWebhookStore,
        secrets: &'a MockSecretBox,
        clock: &'a MockClock,
        crypto: &'a SeqCrypto,
        settings: &'a WebhookSettings,
    ) -> Webhooks<'a> {
        Webhooks { store, crypto, secrets, clock, settings }
    }

    #[tokio::test]
    async fn creation_validates_before_it_writes() {
        let (secrets, clock, crypto, settings) = (secrets(), clock(), SeqCrypto::default(), WebhookSettings::default());
        let mut store = MockWebhookStore::new();
        store.expect_count_endpoints().returning(|_| Ok(0));
        let inserted = std::sync::Arc::new(Mutex::new(Vec::new()));
        let sink = inserted.clone();
        store.expect_insert_endpoint().returning(move |e| {
            sink.lock().unwrap().push(e.clone());
            Ok(())
        });
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        // The input is parsed at the edge with the model's parsers, then created.
        let bad = |url: &str, types: Option<Vec<&str>>| -> Result<EndpointInput, Error> {
            let names: Option<Vec<String>> = types.map(|t| t.into_iter().map(str::to_owned).collect());
            Ok(EndpointInput {
                url: endpoint_url(url)?,
                event_types: Subscription::parse(names.as_deref())?,
                description: None,
            })
        };
        let create = |input: Result<EndpointInput, Error>| async { w.create_endpoint(&scope(), input?).await };
        assert_eq!(create(bad("ftp://x", None)).await.unwrap_err().field(), Some("url"));
        let err = create(bad("https://x.example", Some(vec!["invoice.paid", "nope"]))).await;
        assert!(matches!(err, Err(Error::WebhookEventUnsupported { ref field, .. }) if field == "event_types[1]"));
        let err = create(bad("https://x.example", Some(vec!["invoice.paid", "invoice.paid"]))).await;
        assert_eq!(err.unwrap_err().field(), Some("event_types[1]"));
        assert!(inserted.lock().unwrap().is_empty(), "refusals write nothing");
        let (e, secret) = create(bad("https://x.example", Some(vec!["payment.failed"]))).await.unwrap();
        assert!(secret.as_str().starts_with("whsec_"));
        assert_eq!(e.secret.0, secret.as_str().as_bytes(), "stored only through the secret box");
        assert!(e.receives(EventType::PaymentFailed) && !e.receives(EventType::InvoicePaid));
        assert_eq!(inserted.lock().unwrap().len(), 1);
    }

    #[tokio::test]
    async fn the_limit_of_endpoints_is_kept() {
        let (secrets, clock, crypto, settings) = (secrets(), clock(), SeqCrypto::default(), WebhookSettings::default());
        let mut store = MockWebhookStore::new();
        store.expect_count_endpoints().returning(|_| Ok(MAX_ENDPOINTS));
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        let input = EndpointInput {
            url: endpoint_url("https://x.example").unwrap(),
            event_types: Subscription::All,
            description: None,
        };
        assert!(matches!(
            w.create_endpoint(&scope(), input).await,
            Err(Error::LimitReached { what: Limit::WebhookEndpoints, limit: MAX_ENDPOINTS })
        ));
    }

    #[tokio::test]
    async fn a_disabled_or_deleted_endpoint_fails_the_delivery_without_sending() {
        let (secrets, clock, crypto, settings) = (secrets(), clock(), SeqCrypto::default(), WebhookSettings::default());
        let store = MockWebhookStore::new();
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        let mut sender = MockWebhookSender::new();
        sender.expect_send().never();
        for endpoint in [Some(endpoint(EndpointState::Disabled, None)), None] {
            let record = w.attempt(&sender, claimed(endpoint)).await;
            assert_eq!(record.attempt.outcome.error_category, Some(ErrorCategory::EndpointDisabled));
            assert_eq!(record.conclusion.status, DeliveryStatus::Failed);
            assert_eq!(record.attempt.number, 2);
        }
    }

    #[tokio::test]
    async fn an_attempt_signs_with_every_secret_of_an_overlap_and_schedules_the_retry() {
        let (secrets, clock, crypto, settings) = (secrets(), clock(), SeqCrypto::default(), WebhookSettings::default());
        let store = MockWebhookStore::new();
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        let mut sender = MockWebhookSender::new();
        sender
            .expect_send()
            .withf(|d| {
                d.secrets.iter().map(SigningSecret::as_str).collect::<Vec<_>>() == ["whsec_current", "whsec_old"]
            })
            .returning(|_| SendOutcome {
                duration_ms: 12,
                status_code: Some(503),
                error_category: Some(ErrorCategory::Http5xx),
                error_message: Some("answered 503".into()),
                response_excerpt: None,
                request_headers: vec![],
            });
        let overlap = PreviousSecret { secret: SealedSecret(b"whsec_old".to_vec()), until: now() + Duration::hours(1) };
        let record = w.attempt(&sender, claimed(Some(endpoint(EndpointState::Enabled, Some(overlap))))).await;
        assert_eq!(record.conclusion.status, DeliveryStatus::RetryScheduled);
        assert_eq!(record.conclusion.next_attempt_at, Some(now() + Duration::minutes(5)), "after attempt 2: 5 min");
        assert_eq!(record.claim, "c1");
    }

    #[tokio::test]
    async fn rotation_refuses_a_second_overlap_and_ending_needs_one() {
        let (secrets, clock, crypto, settings) = (secrets(), clock(), SeqCrypto::default(), WebhookSettings::default());
        let overlapping =
            PreviousSecret { secret: SealedSecret(b"whsec_old".to_vec()), until: now() + Duration::hours(1) };
        let mut store = MockWebhookStore::new();
        let current = Mutex::new(endpoint(EndpointState::Enabled, Some(overlapping)));
        store.expect_get_endpoint().returning(move |_, _| Ok(current.lock().unwrap().clone()));
        store.expect_update_endpoint().returning(|_, _| Ok(true));
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        let id = WebhookEndpointId::from_trusted("we_a".into());
        assert!(matches!(w.rotate_secret(&scope(), &id).await, Err(Error::SecretOverlapActive)));
        let ended = w.end_secret_overlap(&scope(), &id).await.unwrap();
        assert_eq!((ended.previous_secret, ended.lock_version), (None, 2));

        let mut store = MockWebhookStore::new();
        store.expect_get_endpoint().returning(|_, _| Ok(endpoint(EndpointState::Enabled, None)));
        store.expect_update_endpoint().returning(|_, _| Ok(true));
        let w = service(&store, &secrets, &clock, &crypto, &settings);
        assert!(matches!(w.end_secret_overlap(&scope(), &id).await, Err(Error::SecretOverlapExpired)));
        let (rotated, secret) = w.rotate_secret(&scope(), &id).await.unwrap();
        assert_eq!(rotated.secret.0, secret.as_str().as_bytes());
        let previous = rotated.previous_secret.unwrap();
        assert_eq!(
            (previous.secret.0.as_slice(), previous.until),
            (&b"whsec_current"[..], now() + Duration::hours(24))
        );
    }
}
