//! The records of webhooks: endpoints with their signing secrets, deliveries with their
//! attempts, incidents.

use std::fmt;

use chrono::{DateTime, Duration, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::event::model::EventType;
use crate::ids::{EventId, WebhookDeliveryId, WebhookEndpointId, WebhookIncidentId};
use crate::mode::Scope;
use crate::url::HttpUrl;

/// An endpoint's URL: an absolute http(s) URL without credentials. Errors: `Validation` on
/// `url`.
pub fn endpoint_url(text: &str) -> Result<HttpUrl, Error> {
    HttpUrl::parse(text).map_err(|e| Error::validation("url", e.to_string()))
}

/// The prefix of a signing secret; the rest is the standard base64 of 32 random bytes (the
/// Standard Webhooks secret format).
pub const SECRET_PREFIX: &str = "whsec_";
/// How long the previous secret still signs after a rotation (unless the overlap is ended).
pub const SECRET_OVERLAP_HOURS: i64 = 24;
/// Failed attempts in a row, across deliveries, after which an endpoint has an open incident.
pub const INCIDENT_AFTER_FAILURES: u32 = 3;
/// The longest response excerpt kept per attempt.
pub const RESPONSE_EXCERPT_BYTES: usize = 4096;
/// The shortest idempotency key a delivery's replay takes (the spec: at least 8 characters).
pub const MIN_REPLAY_KEY_CHARS: usize = 8;
/// At most this many endpoints per merchant and mode (archived ones do not count).
pub const MAX_ENDPOINTS: usize = 16;

/// An endpoint's signing secret in the clear (`whsec_...`). It exists in memory only to be
/// shown once or to sign; `Debug` never prints it.
#[derive(Clone, PartialEq, Eq)]
pub struct SigningSecret(String);

impl SigningSecret {
    /// A new random secret (`whsec_` and 32 random bytes in base64).
    pub fn generate(crypto: &dyn Crypto) -> Self {
        let mut bytes = [0u8; 32];
        crypto.fill_random(&mut bytes);
        Self(format!("{SECRET_PREFIX}{}", base64(&bytes)))
    }

    /// A secret read back from its sealed form.
    pub fn from_trusted(text: String) -> Self {
        Self(text)
    }

    /// The secret's text: sign with it, show it once, never log it.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(..)")
    }
}

/// Standard base64 with padding.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], chunk.get(1).copied().unwrap_or(0), chunk.get(2).copied().unwrap_or(0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[usize::try_from((n >> shift) & 63).unwrap_or(0)]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// A signing secret as stored: sealed by the `SecretBox` port (encrypted at rest).
#[derive(Clone, PartialEq, Eq)]
pub struct SealedSecret(pub Vec<u8>);

impl fmt::Debug for SealedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SealedSecret(..)")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// Whether an endpoint receives new deliveries.
pub enum EndpointState {
    /// Receives deliveries.
    Enabled,
    /// Receives nothing; its pending deliveries fail as `endpoint_disabled`.
    Disabled,
}

impl EndpointState {
    /// The state as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Enabled => "enabled",
            Self::Disabled => "disabled",
        }
    }

    /// Both states.
    pub const ALL: [EndpointState; 2] = [Self::Enabled, Self::Disabled];

    /// Reads a state as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// The event types an endpoint receives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Subscription {
    /// Every supported type, including types added later.
    All,
    /// These types only (at least one, no repeats, in the order given).
    Only(Vec<EventType>),
}

impl Subscription {
    /// Reads the event types a merchant names (`None`: every supported type). Errors:
    /// `Validation` on `event_types` (an empty list, a type named twice);
    /// `WebhookEventUnsupported` for a name that is not an event type.
    pub fn parse(types: Option<&[String]>) -> Result<Self, Error> {
        let Some(types) = types else { return Ok(Subscription::All) };
        if types.is_empty() {
            return Err(Error::validation("event_types", "must name at least one event type (omit it for all)"));
        }
        let mut parsed = Vec::with_capacity(types.len());
        for (i, text) in types.iter().enumerate() {
            let field = format!("event_types[{i}]");
            let t = EventType::parse(text)
                .ok_or_else(|| Error::WebhookEventUnsupported { field: field.clone(), value: text.clone() })?;
            if parsed.contains(&t) {
                return Err(Error::validation(field, "is listed twice"));
            }
            parsed.push(t);
        }
        Ok(Subscription::Only(parsed))
    }

    /// Whether the endpoint receives events of `event_type`.
    pub fn includes(&self, event_type: EventType) -> bool {
        match self {
            Self::All => true,
            Self::Only(types) => types.contains(&event_type),
        }
    }

    /// The types it includes now.
    pub fn types(&self) -> Vec<EventType> {
        match self {
            Self::All => EventType::ALL.to_vec(),
            Self::Only(types) => types.clone(),
        }
    }
}

/// Whom to tell about an endpoint's incidents (email delivery of these alerts arrives with the
/// email issue; the preferences are kept and shown now).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AlertPreferences {
    /// Alert when an incident opens.
    pub on_incident_opened: bool,
    /// Alert when an incident is resolved.
    pub on_incident_resolved: bool,
}

impl Default for AlertPreferences {
    fn default() -> Self {
        Self { on_incident_opened: true, on_incident_resolved: true }
    }
}

/// A secret being replaced: it still signs until `until`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreviousSecret {
    /// The old secret, sealed.
    pub secret: SealedSecret,
    /// When it stops signing.
    pub until: DateTime<Utc>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// Where a merchant receives its events: a URL, the types it subscribes to, and a signing secret
/// (stored sealed).
pub struct WebhookEndpoint {
    /// The endpoint's id (`we_...`).
    pub id: WebhookEndpointId,
    /// The merchant and mode whose events it receives.
    pub scope: Scope,
    /// Where deliveries are POSTed.
    pub url: HttpUrl,
    /// A note for the merchant.
    pub description: Option<String>,
    /// The event types it receives.
    pub subscription: Subscription,
    /// Enabled or disabled.
    pub state: EndpointState,
    /// Which incident alerts the merchant wants.
    pub alerts: AlertPreferences,
    /// The current signing secret, sealed.
    pub secret: SealedSecret,
    /// The secret being replaced during a rotation's overlap.
    pub previous_secret: Option<PreviousSecret>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// Bumped by every change; a save at a stale version changes nothing.
    pub lock_version: i64,
}

impl WebhookEndpoint {
    /// Whether an event of `event_type` goes to this endpoint now.
    pub fn receives(&self, event_type: EventType) -> bool {
        self.state == EndpointState::Enabled && self.subscription.includes(event_type)
    }

    /// The previous secret while it still signs at `now`.
    pub fn overlap(&self, now: DateTime<Utc>) -> Option<&PreviousSecret> {
        self.previous_secret.as_ref().filter(|p| p.until > now)
    }
}

/// The spec's delivery status values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeliveryStatus {
    /// Created, not attempted yet.
    Pending,
    /// An attempt is running.
    Delivering,
    /// The endpoint answered 2xx.
    Delivered,
    /// An attempt failed; another is scheduled.
    RetryScheduled,
    /// Every attempt failed, or the endpoint was disabled: nothing more is tried.
    Failed,
}

impl DeliveryStatus {
    /// Every status.
    pub const ALL: [DeliveryStatus; 5] =
        [Self::Pending, Self::Delivering, Self::Delivered, Self::RetryScheduled, Self::Failed];

    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivering => "delivering",
            Self::Delivered => "delivered",
            Self::RetryScheduled => "retry_scheduled",
            Self::Failed => "failed",
        }
    }

    /// Reads a status as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == value)
    }
}

/// Why an attempt failed (the spec's `errorCategory`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorCategory {
    /// The host name did not resolve.
    Dns,
    /// The connection failed or was refused.
    Connection,
    /// The TLS handshake or certificate failed.
    Tls,
    /// No answer in time.
    Timeout,
    /// The URL resolves to a private, loopback or otherwise blocked address.
    BlockedDestination,
    /// The endpoint answered 4xx.
    Http4xx,
    /// The endpoint answered 5xx.
    Http5xx,
    /// The endpoint answered a redirect (not followed).
    Redirect,
    /// The answer was too large.
    ResponseTooLarge,
    /// The signing secret could not be unsealed.
    SigningSecret,
    /// The endpoint was disabled.
    EndpointDisabled,
    /// A failure of the service itself.
    Internal,
}

impl ErrorCategory {
    /// Every category.
    pub const ALL: [ErrorCategory; 12] = [
        Self::Dns,
        Self::Connection,
        Self::Tls,
        Self::Timeout,
        Self::BlockedDestination,
        Self::Http4xx,
        Self::Http5xx,
        Self::Redirect,
        Self::ResponseTooLarge,
        Self::SigningSecret,
        Self::EndpointDisabled,
        Self::Internal,
    ];

    /// The category as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dns => "dns",
            Self::Connection => "connection",
            Self::Tls => "tls",
            Self::Timeout => "timeout",
            Self::BlockedDestination => "blocked_destination",
            Self::Http4xx => "http_4xx",
            Self::Http5xx => "http_5xx",
            Self::Redirect => "redirect",
            Self::ResponseTooLarge => "response_too_large",
            Self::SigningSecret => "signing_secret",
            Self::EndpointDisabled => "endpoint_disabled",
            Self::Internal => "internal",
        }
    }

    /// Reads a category as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|c| c.as_str() == value)
    }

    /// The category of an answer with HTTP status `status` that is not a success.
    pub fn of_status(status: u16) -> Self {
        match status {
            300..=399 => Self::Redirect,
            500..=599 => Self::Http5xx,
            _ => Self::Http4xx,
        }
    }
}

/// What came of sending a delivery (the sender's answer), or of not sending it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SendOutcome {
    /// How long the attempt took.
    pub duration_ms: u32,
    /// The answer's HTTP status, when one came.
    pub status_code: Option<u16>,
    /// Why it failed; `None` when it was delivered (a 2xx answer).
    pub error_category: Option<ErrorCategory>,
    /// What went wrong, in words, for the merchant (no secrets).
    pub error_message: Option<String>,
    /// The start of the answer's body, at most [`RESPONSE_EXCERPT_BYTES`], as text.
    pub response_excerpt: Option<String>,
    /// The request's headers without the signatures (evidence of what was sent).
    pub request_headers: Vec<(String, String)>,
}

impl SendOutcome {
    /// A failure before any answer, after `duration_ms`, with the headers sent (if any).
    pub fn failed(
        category: ErrorCategory,
        message: String,
        request_headers: Vec<(String, String)>,
        duration_ms: u32,
    ) -> Self {
        Self {
            duration_ms,
            status_code: None,
            error_category: Some(category),
            error_message: Some(message),
            response_excerpt: None,
            request_headers,
        }
    }
}

/// One try to deliver: its number, when it started, and what came of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Attempt {
    /// 1-based.
    pub number: u32,
    /// When the attempt started.
    pub started_at: DateTime<Utc>,
    /// What was sent and what came back.
    pub outcome: SendOutcome,
}

impl Attempt {
    /// Whether the attempt delivered the event (a 2xx answer).
    pub fn delivered(&self) -> bool {
        self.outcome.error_category.is_none()
    }
}

/// A delivery of one event to one endpoint, with its retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookDelivery {
    /// The delivery's id (`whd_...`).
    pub id: WebhookDeliveryId,
    /// The merchant and mode.
    pub scope: Scope,
    /// The endpoint it goes to.
    pub endpoint_id: WebhookEndpointId,
    /// The event it delivers.
    pub event_id: EventId,
    /// That event's type.
    pub event_type: EventType,
    /// Where it stands.
    pub status: DeliveryStatus,
    /// Attempts begun so far.
    pub attempt_count: u32,
    /// When the next attempt is due (pending and retry_scheduled deliveries).
    pub next_attempt_at: Option<DateTime<Utc>>,
    /// The latest attempt, if any.
    pub latest: Option<Attempt>,
    /// A synthetic event of `POST /v1/webhooks/test`.
    pub test: bool,
    /// The delivery this one replays.
    pub replay_of: Option<WebhookDeliveryId>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// When it was delivered.
    pub delivered_at: Option<DateTime<Utc>>,
}

impl WebhookDelivery {
    /// A new delivery of `event` to `endpoint`, due now.
    pub fn new(
        id: WebhookDeliveryId,
        endpoint: &WebhookEndpoint,
        event: (&EventId, EventType),
        test: bool,
        replay_of: Option<WebhookDeliveryId>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id,
            scope: endpoint.scope.clone(),
            endpoint_id: endpoint.id.clone(),
            event_id: event.0.clone(),
            event_type: event.1,
            status: DeliveryStatus::Pending,
            attempt_count: 0,
            next_attempt_at: Some(now),
            latest: None,
            test,
            replay_of,
            created_at: now,
            updated_at: now,
            delivered_at: None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// Whether an incident is still going on.
pub enum IncidentStatus {
    /// Deliveries to the endpoint keep failing.
    Open,
    /// A delivery succeeded again.
    Resolved,
}

impl IncidentStatus {
    /// The status as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Resolved => "resolved",
        }
    }

    /// Reads a status as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        [Self::Open, Self::Resolved].into_iter().find(|s| s.as_str() == value)
    }
}

/// A run of failed attempts on an endpoint: opened after [`INCIDENT_AFTER_FAILURES`] in a row,
/// resolved by the next delivered attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookIncident {
    /// The incident's id (`whi_...`).
    pub id: WebhookIncidentId,
    /// The merchant and mode.
    pub scope: Scope,
    /// The failing endpoint.
    pub endpoint_id: WebhookEndpointId,
    /// Open or resolved.
    pub status: IncidentStatus,
    /// When it opened.
    pub opened_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
    /// Failed attempts from the first of the run until it was resolved (or until now).
    pub failed_attempts: u32,
    /// The category of the latest failure.
    pub last_error_category: Option<ErrorCategory>,
    /// The latest failed delivery.
    pub last_delivery_id: Option<WebhookDeliveryId>,
}

/// The waits between automatic attempts: after failed attempt `n` (1-based) comes the `n`th
/// wait; the attempt after the last wait that fails ends automatic retries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetrySchedule(Vec<Duration>);

impl RetrySchedule {
    /// The spec's: 1 min, 5 min, 30 min, 2 h (five attempts in all).
    pub fn standard() -> Self {
        Self(vec![Duration::minutes(1), Duration::minutes(5), Duration::minutes(30), Duration::hours(2)])
    }

    /// A schedule of the given waits (operators and tests shorten it); at least one.
    pub fn new(waits: Vec<Duration>) -> Option<Self> {
        (!waits.is_empty() && waits.iter().all(|w| *w > Duration::zero())).then_some(Self(waits))
    }

    /// The wait after failed attempt `attempt`; `None` when it was the last.
    pub fn after(&self, attempt: u32) -> Option<Duration> {
        let index = usize::try_from(attempt).ok()?.checked_sub(1)?;
        self.0.get(index).copied()
    }

    /// Attempts in all.
    pub fn attempts(&self) -> u32 {
        u32::try_from(self.0.len()).unwrap_or(u32::MAX - 1) + 1
    }

    /// The waits between attempts, in order.
    pub fn waits(&self) -> &[Duration] {
        &self.0
    }
}

impl Default for RetrySchedule {
    fn default() -> Self {
        Self::standard()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc4648() {
        for (input, output) in [
            (&b""[..], ""),
            (b"f", "Zg=="),
            (b"fo", "Zm8="),
            (b"foo", "Zm9v"),
            (b"foob", "Zm9vYg=="),
            (b"fooba", "Zm9vYmE="),
            (b"foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(input), output);
        }
    }

    #[test]
    fn secrets_are_whsec_and_32_bytes() {
        let crypto = crate::testing::SeqCrypto::default();
        let s = SigningSecret::generate(&crypto);
        let body = s.as_str().strip_prefix(SECRET_PREFIX).unwrap();
        assert_eq!(body.len(), 44);
        assert!(body.ends_with('='));
        assert_eq!(format!("{s:?}"), "SigningSecret(..)");
    }

    #[test]
    fn schedules() {
        let s = RetrySchedule::standard();
        assert_eq!(s.attempts(), 5);
        assert_eq!(s.after(1), Some(Duration::minutes(1)));
        assert_eq!(s.after(4), Some(Duration::hours(2)));
        assert_eq!(s.after(5), None);
        assert_eq!(s.after(0), None);
        assert!(RetrySchedule::new(vec![]).is_none());
        assert!(RetrySchedule::new(vec![Duration::zero()]).is_none());
        assert_eq!(RetrySchedule::new(vec![Duration::seconds(1); 2]).unwrap().attempts(), 3);
    }

    #[test]
    fn categories_of_statuses() {
        assert_eq!(ErrorCategory::of_status(302), ErrorCategory::Redirect);
        assert_eq!(ErrorCategory::of_status(404), ErrorCategory::Http4xx);
        assert_eq!(ErrorCategory::of_status(503), ErrorCategory::Http5xx);
        for c in ErrorCategory::ALL {
            assert_eq!(ErrorCategory::parse(c.as_str()), Some(c));
        }
    }
}
