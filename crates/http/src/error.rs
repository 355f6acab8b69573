//! The API's error type: every code of the spec, its HTTP status, and the error envelope.
//!
//! The table in [`ErrorCode::status`] is the single place where codes meet statuses; it is
//! reproduced in `docs/api.md`.

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde_json::{Value, json};
use stablepay_domain::{Error as DomainError, Limit, Resource};

use crate::envelope;
use crate::timestamp::timestamp;

macro_rules! codes {
    ($($name:ident => $status:ident),* $(,)?) => {
        /// Every error code of the spec, plus SERVICE_UNAVAILABLE (503: the database is
        /// unreachable, or the service is shedding load) and REQUEST_TIMEOUT (408: the body did
        /// not arrive in time), additions the spec's versioning rules allow.
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum ErrorCode { $($name),* }

        impl ErrorCode {
            pub const ALL: &'static [ErrorCode] = &[$(ErrorCode::$name),*];

            /// The code as clients see it (`SCREAMING_SNAKE_CASE`).
            pub fn as_str(self) -> &'static str {
                match self { $(ErrorCode::$name => codes!(@snake $name)),* }
            }

            /// The HTTP status of the code.
            pub fn status(self) -> StatusCode {
                match self { $(ErrorCode::$name => StatusCode::$status),* }
            }
        }
    };
    (@snake $name:ident) => { stringify!($name) };
}

codes! {
    API_KEY_REQUIRED => UNAUTHORIZED,
    INVALID_API_KEY => UNAUTHORIZED,
    API_KEY_FORBIDDEN => FORBIDDEN,
    PUBLIC_KEY_FIELD_NOT_ALLOWED => FORBIDDEN,
    MODE_MISMATCH => CONFLICT,
    PERMISSION_DENIED => FORBIDDEN,
    ACCOUNT_SUSPENDED => FORBIDDEN,
    ACTIVE_MERCHANT_REQUIRED => FORBIDDEN,
    FEATURE_UNAVAILABLE => UNPROCESSABLE_ENTITY,
    AUTH_REQUIRED => UNAUTHORIZED,
    AUTH_FORBIDDEN => FORBIDDEN,
    INVALID_CREDENTIALS => UNAUTHORIZED,
    VALIDATION_ERROR => BAD_REQUEST,
    INVALID_AMOUNT => BAD_REQUEST,
    INVALID_EXPIRY => BAD_REQUEST,
    INVALID_TOTAL => UNPROCESSABLE_ENTITY,
    CURRENCY_MISMATCH => UNPROCESSABLE_ENTITY,
    CUSTOMER_EMAIL_REQUIRED => UNPROCESSABLE_ENTITY,
    INVALID_WALLET_ADDRESS => BAD_REQUEST,
    INVALID_TX_HASH => BAD_REQUEST,
    INVALID_WALLET_PAYMENT_ATTEMPT => BAD_REQUEST,
    INVALID_DEPOSIT_NETWORK => BAD_REQUEST,
    INVALID_IDEMPOTENCY_KEY => BAD_REQUEST,
    IDEMPOTENCY_KEY_CONFLICT => CONFLICT,
    DEFAULT_WALLET_REQUIRED => UNPROCESSABLE_ENTITY,
    UNSUPPORTED_DEFAULT_WALLET => UNPROCESSABLE_ENTITY,
    WALLET_PAYMENTS_UNAVAILABLE => UNPROCESSABLE_ENTITY,
    CHECKOUT_SESSION_NOT_PAYABLE => CONFLICT,
    SCAN_OR_COPY_UNAVAILABLE => UNPROCESSABLE_ENTITY,
    NOT_FOUND => NOT_FOUND,
    INVOICE_NOT_FOUND => NOT_FOUND,
    INVOICE_STATE_MISMATCH => CONFLICT,
    INVOICE_TRANSITION_GUARD_FAILED => CONFLICT,
    INVOICE_ALREADY_ISSUED => CONFLICT,
    INVOICE_NOT_EDITABLE => CONFLICT,
    INVOICE_NOT_PAYABLE => CONFLICT,
    INVOICE_PDF_UNAVAILABLE => UNPROCESSABLE_ENTITY,
    INVOICE_VERSION_CONFLICT => CONFLICT,
    PAYMENT_LINK_NOT_FOUND => NOT_FOUND,
    PAYMENT_LINK_VERSION_CONFLICT => CONFLICT,
    LINK_INACTIVE => CONFLICT,
    LINK_EXPIRED => CONFLICT,
    LINK_ALREADY_USED => CONFLICT,
    LINK_RESERVED => CONFLICT,
    AMOUNT_OUT_OF_RANGE => BAD_REQUEST,
    FIELD_REQUIRED => BAD_REQUEST,
    MODE_UNAVAILABLE => UNPROCESSABLE_ENTITY,
    CONFIG_CHANGED => CONFLICT,
    RATE_LIMITED => TOO_MANY_REQUESTS,
    EXPORT_CANCELLED => CONFLICT,
    EXPORT_EXPIRED => GONE,
    EXPORT_NOT_CANCELLABLE => CONFLICT,
    EXPORT_NOT_READY => CONFLICT,
    EXPORT_RANGE_TOO_LARGE => BAD_REQUEST,
    EXPORT_SCHEMA_UNSUPPORTED => BAD_REQUEST,
    EXPORT_TOO_LARGE_FOR_SYNC => UNPROCESSABLE_ENTITY,
    WEBHOOK_ENDPOINT_NOT_FOUND => NOT_FOUND,
    WEBHOOK_DELIVERY_NOT_FOUND => NOT_FOUND,
    WEBHOOK_EVENT_UNSUPPORTED => BAD_REQUEST,
    WEBHOOK_SIGNATURE_INVALID => BAD_REQUEST,
    WEBHOOK_ENDPOINT_DISABLED => CONFLICT,
    WEBHOOK_INCIDENT_NOT_FOUND => NOT_FOUND,
    SECRET_OVERLAP_ACTIVE => CONFLICT,
    SECRET_OVERLAP_EXPIRED => CONFLICT,
    TRANSFER_ALREADY_ATTRIBUTED => CONFLICT,
    AUTHORIZATION_USED => CONFLICT,
    AUTHORIZATION_EXPIRED => UNPROCESSABLE_ENTITY,
    AUTHORIZATION_REJECTED => UNPROCESSABLE_ENTITY,
    PAYER_BALANCE_INSUFFICIENT => UNPROCESSABLE_ENTITY,
    REQUEST_ERROR => BAD_GATEWAY,
    REQUEST_TOO_LARGE => PAYLOAD_TOO_LARGE,
    METHOD_NOT_ALLOWED => METHOD_NOT_ALLOWED,
    REQUEST_TIMEOUT => REQUEST_TIMEOUT,
    RATE_LIMIT_EXCEEDED => TOO_MANY_REQUESTS,
    INTERNAL_SERVER_ERROR => INTERNAL_SERVER_ERROR,
    INTERNAL_JOB_UNAUTHORIZED => UNAUTHORIZED,
    SERVICE_UNAVAILABLE => SERVICE_UNAVAILABLE,
}

/// An error answer: code, human message, optional details (`details.field` names the field).
#[derive(Debug, Clone)]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    extra: Box<Extra>,
}

/// The rarely set parts, boxed to keep `Result<_, ApiError>` small.
#[derive(Debug, Clone, Default)]
struct Extra {
    details: Option<Value>,
    /// Extra response headers (Retry-After).
    headers: Vec<(&'static str, String)>,
    /// The request id, when the error is rendered outside the request's scope.
    request_id: Option<String>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self { code, message: message.into(), extra: Box::default() }
    }

    pub fn field(code: ErrorCode, field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(code, message).with_details(json!({ "field": field.into() }))
    }

    pub fn details(&self) -> Option<&Value> {
        self.extra.details.as_ref()
    }

    /// Whether this refuses a change for the session's sign-in being too old
    /// (`AUTH_FORBIDDEN`, reason `reauthentication_required`): a refusal of the session, not of
    /// the request, which the same request may pass once the member gives the password again.
    pub fn needs_reauthentication(&self) -> bool {
        self.code == ErrorCode::AUTH_FORBIDDEN
            && self.details().and_then(|d| d["reason"].as_str()) == Some("reauthentication_required")
    }

    pub fn with_details(mut self, details: Value) -> Self {
        self.extra.details = Some(details);
        self
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.extra.headers.push((name, value.into()));
        self
    }

    /// The extra response headers it carries (`Retry-After`, `RateLimit`, `RateLimit-Policy`),
    /// for a driving adapter that answers the refusal in its own format (an HTML page).
    pub fn headers(&self) -> &[(&'static str, String)] {
        &self.extra.headers
    }

    /// Carries the request id so the error can be rendered after the request's scope ended.
    pub fn for_request(mut self, request_id: &str) -> Self {
        self.extra.request_id = Some(request_id.to_owned());
        self
    }

    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Self::field(ErrorCode::VALIDATION_ERROR, field, message)
    }

    pub fn internal() -> Self {
        Self::new(ErrorCode::INTERNAL_SERVER_ERROR, "An internal error occurred. Retry later.")
    }

    pub fn body(&self) -> Value {
        let mut error = json!({ "code": self.code.as_str(), "message": self.message });
        if let (Some(details), Some(obj)) = (&self.extra.details, error.as_object_mut()) {
            obj.insert("details".into(), details.clone());
        }
        error
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code.as_str(), self.message)
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.code.status()
    }

    fn error_response(&self) -> HttpResponse {
        let mut builder = HttpResponse::build(self.status_code());
        for (name, value) in &self.extra.headers {
            builder.insert_header((*name, value.as_str()));
        }
        match &self.extra.request_id {
            Some(id) => {
                builder.insert_header(("X-Request-Id", id.as_str()));
                builder.json(envelope::error_body_with_id(self.body(), id))
            }
            None => builder.json(envelope::error_body(self.body())),
        }
    }
}

fn not_found(resource: Resource) -> ApiError {
    match resource {
        Resource::Invoice => ApiError::new(ErrorCode::INVOICE_NOT_FOUND, "No such invoice."),
        Resource::WebhookEndpoint => ApiError::new(ErrorCode::WEBHOOK_ENDPOINT_NOT_FOUND, "No such webhook endpoint."),
        Resource::WebhookDelivery => ApiError::new(ErrorCode::WEBHOOK_DELIVERY_NOT_FOUND, "No such webhook delivery."),
        Resource::WebhookIncident => ApiError::new(ErrorCode::WEBHOOK_INCIDENT_NOT_FOUND, "No such webhook incident."),
        Resource::PaymentLink => ApiError::new(ErrorCode::PAYMENT_LINK_NOT_FOUND, "No such payment link."),
        other => ApiError::new(ErrorCode::NOT_FOUND, format!("No such {}.", other.as_str().replace('_', " "))),
    }
}

/// The JSON path of a domain field path: every snake_case name becomes camelCase
/// (`lines[2].unit_amount` is `lines[2].unitAmount`), and the domain's `currency` is the wire's
/// `currencyCode`.
pub fn json_path(domain: &str) -> String {
    if domain == "currency" {
        return "currencyCode".to_owned();
    }
    let mut out = String::with_capacity(domain.len());
    let mut upper = false;
    for c in domain.chars() {
        match c {
            '_' => upper = true,
            c if upper => {
                out.extend(c.to_uppercase());
                upper = false;
            }
            c => out.push(c),
        }
    }
    out
}

impl From<DomainError> for ApiError {
    fn from(err: DomainError) -> Self {
        let message = err.to_string();
        match field_code(&err) {
            // A refused member is named as it was sent; every other field is a domain path.
            Some(code) => match err.field().map(|f| match &err {
                DomainError::PublicKeyFieldNotAllowed { .. } => f.to_owned(),
                _ => json_path(f),
            }) {
                Some(field) => ApiError::field(code, field, message),
                None => ApiError::new(code, message),
            },
            None => with_details(err, message),
        }
    }
}

/// The code of a domain error answered with its message and, when it names one, its field; `None`
/// for those whose answer says more (`with_details`).
fn field_code(err: &DomainError) -> Option<ErrorCode> {
    use ErrorCode as C;
    Some(match err {
        DomainError::Validation { .. } => C::VALIDATION_ERROR,
        DomainError::InvalidAmount { .. } => C::INVALID_AMOUNT,
        DomainError::InvalidExpiry { .. } => C::INVALID_EXPIRY,
        DomainError::InvalidTotal { .. } => C::INVALID_TOTAL,
        DomainError::CurrencyMismatch { .. } => C::CURRENCY_MISMATCH,
        DomainError::CustomerEmailRequired { .. } => C::CUSTOMER_EMAIL_REQUIRED,
        DomainError::InvalidWalletAddress { .. } => C::INVALID_WALLET_ADDRESS,
        DomainError::UnsupportedDefaultWallet { .. } => C::UNSUPPORTED_DEFAULT_WALLET,
        DomainError::DefaultWalletRequired => C::DEFAULT_WALLET_REQUIRED,
        DomainError::InvalidTxHash { .. } => C::INVALID_TX_HASH,
        DomainError::InvalidDepositNetwork { .. } => C::INVALID_DEPOSIT_NETWORK,
        DomainError::InvalidWalletPaymentAttempt { .. } => C::INVALID_WALLET_PAYMENT_ATTEMPT,
        DomainError::WalletPaymentsUnavailable(_) => C::WALLET_PAYMENTS_UNAVAILABLE,
        DomainError::PublicKeyFieldNotAllowed { .. } => C::PUBLIC_KEY_FIELD_NOT_ALLOWED,
        DomainError::ApiKeyForbidden(_) => C::API_KEY_FORBIDDEN,
        DomainError::AccountSuspended => C::ACCOUNT_SUSPENDED,
        DomainError::InvalidCredentials => C::INVALID_CREDENTIALS,
        DomainError::AuthRequired => C::AUTH_REQUIRED,
        DomainError::AuthForbidden(_) => C::AUTH_FORBIDDEN,
        DomainError::ActiveMerchantRequired => C::ACTIVE_MERCHANT_REQUIRED,
        DomainError::FeatureUnavailable(_) => C::FEATURE_UNAVAILABLE,
        DomainError::InvoicePdfUnavailable(_) => C::INVOICE_PDF_UNAVAILABLE,
        DomainError::ModeFieldMismatch { .. } => C::MODE_MISMATCH,
        DomainError::InvoiceTransitionGuardFailed(_) => C::INVOICE_TRANSITION_GUARD_FAILED,
        DomainError::InvoiceAlreadyIssued => C::INVOICE_ALREADY_ISSUED,
        DomainError::InvoiceNotEditable => C::INVOICE_NOT_EDITABLE,
        DomainError::InvoiceNotPayable => C::INVOICE_NOT_PAYABLE,
        DomainError::CheckoutSessionNotPayable => C::CHECKOUT_SESSION_NOT_PAYABLE,
        DomainError::WebhookEventUnsupported { .. } => C::WEBHOOK_EVENT_UNSUPPORTED,
        DomainError::LinkInactive => C::LINK_INACTIVE,
        DomainError::LinkExpired => C::LINK_EXPIRED,
        DomainError::LinkAlreadyUsed => C::LINK_ALREADY_USED,
        DomainError::LinkReserved => C::LINK_RESERVED,
        DomainError::FieldRequired { .. } => C::FIELD_REQUIRED,
        DomainError::ModeUnavailable => C::MODE_UNAVAILABLE,
        DomainError::WebhookEndpointDisabled => C::WEBHOOK_ENDPOINT_DISABLED,
        DomainError::SecretOverlapActive => C::SECRET_OVERLAP_ACTIVE,
        DomainError::SecretOverlapExpired => C::SECRET_OVERLAP_EXPIRED,
        DomainError::ExportCancelled => C::EXPORT_CANCELLED,
        DomainError::ExportExpired => C::EXPORT_EXPIRED,
        DomainError::TransferAlreadyAttributed => C::TRANSFER_ALREADY_ATTRIBUTED,
        DomainError::AuthorizationUsed => C::AUTHORIZATION_USED,
        DomainError::AuthorizationExpired => C::AUTHORIZATION_EXPIRED,
        DomainError::InvalidApiKey
        | DomainError::PermissionDenied { .. }
        | DomainError::SecondFactor { .. }
        | DomainError::AccountLinkUnusable(_)
        | DomainError::RateLimited(_)
        | DomainError::ReauthenticationRequired
        | DomainError::ExportRangeTooLarge
        | DomainError::ExportSchemaUnsupported { .. }
        | DomainError::ExportNotReady { .. }
        | DomainError::ExportNotCancellable { .. }
        | DomainError::ExportTooLargeForSync { .. }
        | DomainError::NotFound(_)
        | DomainError::ModeMismatch
        | DomainError::InvalidCursor
        | DomainError::InvoiceStateMismatch
        | DomainError::DuplicateTransaction
        | DomainError::TransferDoesNotPay(_)
        | DomainError::ReminderCooldown { .. }
        | DomainError::InvoiceVersionConflict { .. }
        | DomainError::PaymentLinkVersionConflict { .. }
        | DomainError::ConfigChanged { .. }
        | DomainError::AmountOutOfRange { .. }
        | DomainError::LimitReached { .. }
        | DomainError::ChainUnavailable(_)
        | DomainError::RelayerUnavailable(_)
        | DomainError::RelayInFlight(_)
        | DomainError::PayerBalanceInsufficient { .. }
        | DomainError::AuthorizationRejected(_)
        | DomainError::IdempotencyClaimLost
        | DomainError::Unavailable
        | DomainError::SchemaBehind { .. }
        | DomainError::Internal(_) => return None,
    })
}

/// The answers of the export refusals that say more than their message.
fn export_error(err: DomainError, message: String) -> ApiError {
    use ErrorCode as C;
    match err {
        DomainError::ExportRangeTooLarge => ApiError::field(C::EXPORT_RANGE_TOO_LARGE, "to", message)
            .with_details(json!({ "field": "to", "maximumDays": 366 })),
        DomainError::ExportSchemaUnsupported { .. } => ApiError::field(C::EXPORT_SCHEMA_UNSUPPORTED, "schema", message),
        DomainError::ExportNotReady { status } => {
            let e = ApiError::new(C::EXPORT_NOT_READY, message).with_details(json!({ "status": status }));
            // A failed export is never ready: nothing to retry.
            if status == "failed" { e } else { e.with_header("Retry-After", "5") }
        }
        DomainError::ExportNotCancellable { status } => {
            ApiError::new(C::EXPORT_NOT_CANCELLABLE, message).with_details(json!({ "status": status }))
        }
        DomainError::ExportTooLargeForSync { rows, limit } => ApiError::new(C::EXPORT_TOO_LARGE_FOR_SYNC, message)
            .with_details(json!({ "rows": rows, "limit": limit, "use": "POST /v1/exports" })),
        other => ApiError::from(other),
    }
}

/// The answers of the credential refusals (and of an emailed link that cannot be used) that
/// say more than their message.
fn credential_error(err: DomainError, message: String) -> ApiError {
    use ErrorCode as C;
    match err {
        DomainError::InvalidApiKey => ApiError::new(C::INVALID_API_KEY, "The API key is invalid, revoked or expired."),
        DomainError::PermissionDenied { permission } => {
            ApiError::new(C::PERMISSION_DENIED, format!("This restricted key lacks the permission {permission}."))
                .with_details(json!({ "permission": permission }))
        }
        DomainError::SecondFactor { missing } => ApiError::field(C::INVALID_CREDENTIALS, "otp", message)
            .with_details(json!({ "field": "otp", "reason": if missing { "otp_required" } else { "otp_invalid" } })),
        DomainError::AccountLinkUnusable(reason) => {
            ApiError::field(C::NOT_FOUND, "token", message).with_details(json!({ "field": "token", "reason": reason }))
        }
        DomainError::RateLimited(t) => {
            let policy = stablepay_domain::ratelimit::model::Policy {
                name: t.policy,
                quota: t.quota,
                window_seconds: t.window_seconds,
            };
            let verdict = stablepay_domain::ratelimit::model::Verdict {
                allowed: false,
                remaining: 0,
                reset_seconds: t.reset_seconds,
                retry_after_seconds: t.retry_after_seconds,
            };
            let headers = crate::limit_headers::RateLimitHeaders::of(&policy, &verdict);
            ApiError::new(
                C::RATE_LIMITED,
                format!("Too many failed attempts; retry after {} seconds.", verdict.retry_after_seconds.max(1)),
            )
            .with_header("Retry-After", verdict.retry_after_seconds.max(1).to_string())
            .with_header("RateLimit", headers.ratelimit)
            .with_header("RateLimit-Policy", headers.policy)
        }
        DomainError::ReauthenticationRequired => {
            ApiError::new(C::AUTH_FORBIDDEN, message).with_details(json!({ "reason": "reauthentication_required" }))
        }
        other => ApiError::from(other),
    }
}

/// Whether `err` is a credential refusal ([`credential_error`] answers it).
fn is_credential(err: &DomainError) -> bool {
    matches!(
        err,
        DomainError::InvalidApiKey
            | DomainError::PermissionDenied { .. }
            | DomainError::SecondFactor { .. }
            | DomainError::RateLimited(_)
            | DomainError::ReauthenticationRequired
            | DomainError::AccountLinkUnusable(_)
    )
}

/// Whether `err` is a refusal that says more of why ([`refusal_with_reason`] answers it).
fn says_why(err: &DomainError) -> bool {
    matches!(
        err,
        DomainError::ReminderCooldown { .. }
            | DomainError::TransferDoesNotPay(_)
            | DomainError::RelayerUnavailable(_)
            | DomainError::RelayInFlight(_)
            | DomainError::PayerBalanceInsufficient { .. }
            | DomainError::AuthorizationRejected(_)
    )
}

/// The refusals of a state that say why in `details.reason`.
fn refusal_with_reason(err: DomainError, message: String) -> ApiError {
    use ErrorCode as C;
    match err {
        DomainError::ReminderCooldown { available_at } => {
            let seconds = (available_at - chrono::Utc::now()).num_seconds().max(1);
            ApiError::new(C::INVOICE_TRANSITION_GUARD_FAILED, message)
                .with_details(json!({ "reason": "reminder_cooldown", "availableAt": timestamp(available_at) }))
                .with_header("Retry-After", seconds.to_string())
        }
        DomainError::TransferDoesNotPay(reason) => {
            ApiError::field(C::CHECKOUT_SESSION_NOT_PAYABLE, "checkoutSessionId", format!("{message}."))
                .with_details(json!({ "field": "checkoutSessionId", "reason": reason }))
        }
        // The customer's wallet can still send the call itself: final for the relayer, and the
        // reason says whether it may be tried again later (a daily limit, a funding).
        DomainError::RelayerUnavailable(reason) => ApiError::new(C::FEATURE_UNAVAILABLE, format!("{message}."))
            .with_details(json!({ "reason": reason.as_str() })),
        DomainError::RelayInFlight(ref id) => ApiError::new(C::CHECKOUT_SESSION_NOT_PAYABLE, format!("{message}."))
            .with_details(json!({ "reason": "payment_being_sent", "relayedAuthorizationId": id.as_str() })),
        DomainError::PayerBalanceInsufficient { ref balance, ref required } => {
            ApiError::new(C::PAYER_BALANCE_INSUFFICIENT, format!("{message}."))
                .with_details(json!({ "balance": balance, "required": required }))
        }
        DomainError::AuthorizationRejected(ref reason) => {
            ApiError::new(C::AUTHORIZATION_REJECTED, format!("{message}.")).with_details(json!({ "reason": reason }))
        }
        other => ApiError::from(other),
    }
}

/// The answer of a domain error that says more than its message and field.
fn with_details(err: DomainError, message: String) -> ApiError {
    use ErrorCode as C;
    let version = |code: ErrorCode, current: i64| {
        ApiError::field(code, "version", message.clone())
            .with_details(json!({ "field": "version", "currentVersion": current }))
    };
    match err {
        e if is_credential(&e) => credential_error(e, message),
        DomainError::NotFound(resource) => not_found(resource),
        DomainError::ModeMismatch => {
            ApiError::new(C::MODE_MISMATCH, "The resource belongs to the other mode; use a key of that mode.")
        }
        DomainError::InvalidCursor => ApiError::validation(
            "startingAfter",
            "startingAfter must be the nextCursor of a page of this list (with unchanged filters).",
        ),
        DomainError::InvoiceStateMismatch | DomainError::DuplicateTransaction => {
            ApiError::new(C::INVOICE_STATE_MISMATCH, "The invoice changed state before the operation completed; retry.")
        }
        e if says_why(&e) => refusal_with_reason(e, message),
        DomainError::InvoiceVersionConflict { current, .. } => version(C::INVOICE_VERSION_CONFLICT, current),
        DomainError::PaymentLinkVersionConflict { current, .. } => version(C::PAYMENT_LINK_VERSION_CONFLICT, current),
        DomainError::ConfigChanged { current } => version(C::CONFIG_CHANGED, current),
        DomainError::AmountOutOfRange { ref minimum, ref maximum } => {
            ApiError::field(C::AMOUNT_OUT_OF_RANGE, "amount", message.clone())
                .with_details(json!({ "field": "amount", "minimum": minimum, "maximum": maximum }))
        }
        DomainError::LimitReached { what, limit } => {
            let code = match what {
                Limit::DraftVersions => C::INVOICE_NOT_EDITABLE,
                Limit::CheckoutSessions => C::INVOICE_NOT_PAYABLE,
                Limit::PaymentRecords => C::CHECKOUT_SESSION_NOT_PAYABLE,
                Limit::WebhookEndpoints => C::VALIDATION_ERROR,
            };
            ApiError::new(code, format!("{message}."))
                .with_details(json!({ "reason": "limit_reached", "limit": limit }))
        }
        DomainError::ExportRangeTooLarge
        | DomainError::ExportSchemaUnsupported { .. }
        | DomainError::ExportNotReady { .. }
        | DomainError::ExportNotCancellable { .. }
        | DomainError::ExportTooLargeForSync { .. } => export_error(err, message),
        // An upstream failure, not a refusal of the request: REQUEST_ERROR with a 5xx, which
        // clients retry (FEATURE_UNAVAILABLE would read as final).
        DomainError::ChainUnavailable(reason) => {
            tracing::warn!(reason = %reason, "chain unavailable");
            ApiError::new(C::REQUEST_ERROR, "The blockchain provider failed or cannot be used now. Retry with backoff.")
                .with_header("Retry-After", "30")
        }
        DomainError::IdempotencyClaimLost => ApiError::field(
            C::IDEMPOTENCY_KEY_CONFLICT,
            "Idempotency-Key",
            "A retry with this Idempotency-Key took over this request; wait and retry the same request.",
        )
        .with_details(json!({ "field": "Idempotency-Key", "reason": "in_progress" }))
        .with_header("Retry-After", "1"),
        DomainError::Unavailable => {
            ApiError::new(C::SERVICE_UNAVAILABLE, "The service is temporarily unavailable. Retry with backoff.")
                .with_header("Retry-After", "1")
        }
        DomainError::SchemaBehind { pending } => ApiError::new(
            C::SERVICE_UNAVAILABLE,
            "The database schema is behind this release: run `stablepay migrate`. Retry with backoff.",
        )
        .with_details(json!({ "reason": "migrations_pending", "pending": pending }))
        .with_header("Retry-After", "5"),
        DomainError::Internal(detail) => {
            tracing::error!(detail = %detail, "internal error");
            ApiError::internal()
        }
        other => {
            // Every other error is answered by `field_code`.
            tracing::error!(error = %other, "domain error without an answer");
            ApiError::internal()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn domain_fields_become_json_paths() {
        for (domain, wire) in [
            ("amount", "amount"),
            ("expires_in_minutes", "expiresInMinutes"),
            ("lines[2].unit_amount", "lines[2].unitAmount"),
            ("reminder_schedule.days_after_due[0]", "reminderSchedule.daysAfterDue[0]"),
            ("customer.billing_address", "customer.billingAddress"),
            ("currency", "currencyCode"),
            ("settlement_wallet", "settlementWallet"),
        ] {
            assert_eq!(json_path(domain), wire);
        }
        let e = ApiError::from(DomainError::validation("taxes[1].registration_reference", "too long"));
        assert_eq!(e.details().unwrap()["field"], "taxes[1].registrationReference");
        // Upstream failures are retryable 5xx answers, never a final 4xx.
        let e = ApiError::from(DomainError::ChainUnavailable("the node is on chain 1".into()));
        assert_eq!((e.code, e.code.status().as_u16()), (ErrorCode::REQUEST_ERROR, 502));
        assert!(!e.message.contains("chain 1"), "the operator's reason stays in the logs");
        assert_eq!(ApiError::from(DomainError::Unavailable).code.status().as_u16(), 503);
        let e = ApiError::from(DomainError::InvalidCursor);
        assert_eq!(
            (e.code, e.details().unwrap()["field"].as_str()),
            (ErrorCode::VALIDATION_ERROR, Some("startingAfter"))
        );
    }

    #[test]
    fn every_code_has_a_status_in_its_class() {
        for code in ErrorCode::ALL {
            let s = code.status().as_u16();
            assert!(
                [400, 401, 403, 404, 405, 408, 409, 413, 422, 429, 500, 502, 503].contains(&s) || s == 410,
                "{code:?}"
            );
        }
        // A file that existed and was deleted after its expiry is gone, not in conflict.
        assert_eq!(ErrorCode::EXPORT_EXPIRED.status().as_u16(), 410);
        assert_eq!(ErrorCode::REQUEST_TOO_LARGE.status().as_u16(), 413);
        assert_eq!(ErrorCode::API_KEY_REQUIRED.status().as_u16(), 401);
        assert_eq!(ErrorCode::INVALID_API_KEY.status().as_u16(), 401);
        assert_eq!(ErrorCode::API_KEY_FORBIDDEN.status().as_u16(), 403);
        assert_eq!(ErrorCode::MODE_MISMATCH.status().as_u16(), 409);
    }
}

#[cfg(test)]
mod doc_tests {
    use super::ErrorCode;

    #[test]
    fn docs_api_md_shows_the_same_table() {
        let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api.md")).unwrap();
        for code in ErrorCode::ALL {
            let row = format!("| {} | {} |", code.as_str(), code.status().as_u16());
            assert!(doc.contains(&row), "docs/api.md lacks the row {row}");
        }
    }
}
