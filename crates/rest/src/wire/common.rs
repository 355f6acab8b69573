//! What every answer shares: the envelope's parts and the `envelope!` macro that names an answer's
//! schema, list pages, the error answers every route may give, and where the hosted pages are.

use serde::Serialize;
use serde_json::Value;
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::model::Invoice;
use stablepay_domain::page::Page;
use stablepay_domain::url::PublicPages;
use utoipa::ToSchema;

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
        #[derive(serde::Serialize, utoipa::ToSchema)]
        pub struct $name {
            /// Always true.
            pub success: bool,
            pub data: $data,
            pub meta: $crate::wire::common::Meta,
        }
    };
}

pub(crate) use envelope;

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

/// Where customers reach the hosted pages, for the answers that link to them (the rule is the
/// domain's `PublicPages`).
pub struct Links<'a> {
    pub pages: &'a PublicPages,
}

impl Links<'_> {
    pub fn checkout(&self, session: &CheckoutSession) -> String {
        self.pages.checkout(&session.id)
    }

    pub fn hosted_invoice(&self, invoice: &Invoice) -> Option<String> {
        invoice.public_token.as_ref().map(|t| self.pages.invoice(t))
    }
}
