//! Response wire types shared across routes, and their OpenAPI schemas.

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;
use serde_json::{Map, Value};
use stablepay_domain::event::{Event, EventData};
use stablepay_domain::page::Page;
use utoipa::ToSchema;

/// RFC 3339 in UTC with millisecond precision, e.g. `2026-11-22T04:19:16.123Z`.
pub fn timestamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// `meta` of every envelope.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Meta {
    /// Equal to the X-Request-Id response header.
    pub request_id: String,
}

/// `error` of the error envelope.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// Stable machine-readable code; clients branch on it.
    pub code: String,
    /// Human-readable explanation.
    pub message: String,
    /// Field-level context: `field` names the offending field or header.
    #[schema(value_type = Option<Object>)]
    pub details: Option<Value>,
}

/// The error envelope.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    /// Always false.
    pub success: bool,
    pub error: ErrorBody,
    pub meta: Meta,
}

/// Declares a success envelope type `{success, data: $data, meta}` for the OpenAPI document.
macro_rules! envelope {
    ($(#[$doc:meta])* $name:ident, $data:ty) => {
        $(#[$doc])*
        #[derive(Serialize, ToSchema)]
        pub struct $name {
            /// Always true.
            pub success: bool,
            pub data: $data,
            pub meta: Meta,
        }
    };
}

/// Health answer.
#[derive(Serialize, ToSchema)]
pub struct HealthOut {
    pub status: String,
}

pub(crate) use envelope;

envelope!(/// Health envelope.
    HealthEnvelope, HealthOut);

/// Readiness answer.
#[derive(Serialize, ToSchema)]
pub struct ReadyOut {
    /// `ready`.
    pub status: String,
    /// This process's background worker.
    pub worker: crate::status::WorkerSnapshot,
    /// Live verification's chain.
    pub chain: ChainOut,
}

/// Whether live payments can be verified.
#[derive(Serialize, ToSchema, Debug)]
pub struct ChainOut {
    /// `off` (no RPC endpoint configured: live payments wait as detected), `ok`,
    /// `unreachable` (verification retries) or `wrong_chain` (readiness fails).
    pub state: String,
    pub detail: Option<String>,
}

impl From<stablepay_domain::chain::ChainHealth> for ChainOut {
    fn from(h: stablepay_domain::chain::ChainHealth) -> Self {
        use stablepay_domain::chain::ChainHealth as H;
        let (state, detail) = match h {
            H::Off => ("off", None),
            H::Ok => ("ok", None),
            H::Unreachable(d) => ("unreachable", Some(d)),
            H::WrongChain(d) => ("wrong_chain", Some(d)),
        };
        Self { state: state.into(), detail }
    }
}

envelope!(/// Readiness envelope.
    ReadyEnvelope, ReadyOut);

/// A page of a cursor-paginated list.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListOut<T> {
    pub items: Vec<T>,
    pub has_more: bool,
    /// Pass as `startingAfter` to get the next page; null on the last page.
    pub next_cursor: Option<String>,
}

impl<T> ListOut<T> {
    pub fn new<D>(page: Page<D>, id: impl Fn(&D) -> String, render: impl Fn(D) -> T) -> Self {
        let next_cursor = if page.has_more { page.items.last().map(&id) } else { None };
        Self { items: page.items.into_iter().map(render).collect(), has_more: page.has_more, next_cursor }
    }

    /// Like [`ListOut::new`] with a rendering that can fail.
    pub fn try_new<D, E>(
        page: Page<D>,
        id: impl Fn(&D) -> String,
        render: impl Fn(D) -> Result<T, E>,
    ) -> Result<Self, E> {
        let next_cursor = if page.has_more { page.items.last().map(&id) } else { None };
        let items = page.items.into_iter().map(render).collect::<Result<_, E>>()?;
        Ok(Self { items, has_more: page.has_more, next_cursor })
    }
}

/// An event (the spec's event envelope).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventOut {
    pub id: String,
    /// The literal `event`.
    pub object: String,
    /// One of the supported event types, e.g. `invoice.paid`.
    #[serde(rename = "type")]
    pub event_type: String,
    /// `test` or `live`.
    pub mode: String,
    pub created_at: String,
    /// Snapshot of the facts at emission time.
    #[schema(value_type = Object)]
    pub data: Value,
}

/// Renders domain event data as JSON.
pub fn event_data_json(data: &EventData) -> Value {
    match data {
        EventData::Null => Value::Null,
        EventData::Bool(b) => Value::Bool(*b),
        EventData::Int(i) => Value::from(*i),
        EventData::String(s) => Value::String(s.clone()),
        EventData::List(items) => Value::Array(items.iter().map(event_data_json).collect()),
        EventData::Map(pairs) => {
            Value::Object(pairs.iter().map(|(k, v)| (k.clone(), event_data_json(v))).collect::<Map<_, _>>())
        }
    }
}

impl From<Event> for EventOut {
    fn from(e: Event) -> Self {
        Self {
            id: e.id.to_string(),
            object: "event".into(),
            event_type: e.event_type.as_str().into(),
            mode: e.scope.mode.as_str().into(),
            created_at: timestamp(e.created_at),
            data: event_data_json(&e.data),
        }
    }
}

envelope!(/// One event.
    EventEnvelope, EventOut);
envelope!(/// A page of events.
    EventListEnvelope, ListOut<EventOut>);

/// The error answers every authenticated route may give (each in the error envelope; clients
/// branch on `error.code`).
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)] // documentation only: never constructed, read by the OpenAPI derive
pub enum Errors {
    /// VALIDATION_ERROR (details.field names the field or header), INVALID_AMOUNT, INVALID_EXPIRY,
    /// INVALID_WALLET_ADDRESS, INVALID_TX_HASH, INVALID_IDEMPOTENCY_KEY.
    #[response(status = 400)]
    BadRequest(ErrorEnvelope),
    /// API_KEY_REQUIRED, INVALID_API_KEY.
    #[response(status = 401)]
    Unauthorized(ErrorEnvelope),
    /// API_KEY_FORBIDDEN, PUBLIC_KEY_FIELD_NOT_ALLOWED, ACCOUNT_SUSPENDED, ACTIVE_MERCHANT_REQUIRED.
    #[response(status = 403)]
    Forbidden(ErrorEnvelope),
    /// NOT_FOUND, INVOICE_NOT_FOUND.
    #[response(status = 404)]
    NotFound(ErrorEnvelope),
    /// MODE_MISMATCH, IDEMPOTENCY_KEY_CONFLICT, state conflicts (INVOICE_* and
    /// CHECKOUT_SESSION_NOT_PAYABLE).
    #[response(status = 409)]
    Conflict(ErrorEnvelope),
    /// REQUEST_TOO_LARGE: the body exceeds 1 MiB.
    #[response(status = 413)]
    TooLarge(ErrorEnvelope),
    /// INVALID_TOTAL, CURRENCY_MISMATCH, CUSTOMER_EMAIL_REQUIRED, FEATURE_UNAVAILABLE.
    #[response(status = 422)]
    Unprocessable(ErrorEnvelope),
    /// RATE_LIMIT_EXCEEDED (checkout creation with a publishable key: 20 per minute per key
    /// and client address), with Retry-After, RateLimit and RateLimit-Policy.
    #[response(status = 429)]
    TooMany(ErrorEnvelope),
    /// INTERNAL_SERVER_ERROR.
    #[response(status = 500)]
    Internal(ErrorEnvelope),
    /// SERVICE_UNAVAILABLE: the database is unreachable; retry with backoff.
    #[response(status = 503)]
    Unavailable(ErrorEnvelope),
}
