//! The domain's error type. Each variant is one stable, documented outcome; the HTTP adapter
//! maps each to its public code and status (see `docs/api.md`).
//!
//! Field-level errors name the domain's own field path in snake case (`lines[2].unit_amount`,
//! `customer.email`, `expires_in_minutes`); adapters translate it to their own naming (the
//! HTTP adapter to the JSON path, `lines[2].unitAmount`).

/// What an invoice can accumulate, each with its documented limit
/// (`invoice::model::MAX_*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    DraftVersions,
    CheckoutSessions,
    PaymentRecords,
    /// Webhook endpoints of a merchant in one mode (`webhook::model::MAX_ENDPOINTS`).
    WebhookEndpoints,
}

/// The kinds of resource a NOT_FOUND can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Merchant,
    ApiKey,
    Invoice,
    CheckoutSession,
    Payment,
    Event,
    WebhookEndpoint,
    WebhookDelivery,
    WebhookIncident,
    PaymentLink,
}

impl Resource {
    pub fn as_str(self) -> &'static str {
        match self {
            Resource::Merchant => "merchant",
            Resource::ApiKey => "api_key",
            Resource::Invoice => "invoice",
            Resource::CheckoutSession => "checkout_session",
            Resource::Payment => "payment",
            Resource::Event => "event",
            Resource::WebhookEndpoint => "webhook_endpoint",
            Resource::WebhookDelivery => "webhook_delivery",
            Resource::WebhookIncident => "webhook_incident",
            Resource::PaymentLink => "payment_link",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Input that is well-formed JSON but breaks a field rule.
    #[error("{field}: {message}")]
    Validation { field: String, message: String },
    #[error("{field}: {message}")]
    InvalidAmount { field: String, message: String },
    #[error("{field}: {message}")]
    InvalidExpiry { field: String, message: String },
    #[error("{field}: {message}")]
    InvalidTotal { field: String, message: String },
    #[error("{field}: {message}")]
    CurrencyMismatch { field: String, message: String },
    #[error("a valid customer email is required")]
    CustomerEmailRequired { field: String },
    #[error("{field}: {message}")]
    InvalidWalletAddress { field: String, message: String },
    #[error("{field}: not a valid transaction hash")]
    InvalidTxHash { field: String },

    #[error("invalid API key")]
    InvalidApiKey,
    #[error("this key cannot perform this operation")]
    ApiKeyForbidden,
    #[error("publishable keys may only send amount and externalReference")]
    PublicKeyFieldNotAllowed { field: String },
    #[error("the merchant account is suspended")]
    AccountSuspended,
    #[error("live mode requires an activated merchant")]
    ActiveMerchantRequired,
    #[error("{0} is not available yet")]
    FeatureUnavailable(&'static str),
    /// The invoice has no document (a draft), or it could not be rendered.
    #[error("the invoice PDF is unavailable: {0}")]
    InvoicePdfUnavailable(String),

    #[error("{} not found", .0.as_str())]
    NotFound(Resource),
    /// The id exists for this merchant but in the other mode.
    #[error("the resource belongs to the other mode")]
    ModeMismatch,
    /// A request field names the other mode than its key's.
    #[error("{field} must equal the key's mode")]
    ModeFieldMismatch { field: String },
    /// A list cursor that is not an item of the list (of this merchant and mode).
    #[error("the cursor is not an item of this list")]
    InvalidCursor,

    #[error("the invoice changed state before the operation completed")]
    InvoiceStateMismatch,
    #[error("{0}")]
    InvoiceTransitionGuardFailed(String),
    #[error("the invoice is already issued")]
    InvoiceAlreadyIssued,
    #[error("the invoice's commercial fields are locked")]
    InvoiceNotEditable,
    #[error("the invoice has no collectible remainder or is closed")]
    InvoiceNotPayable,
    /// A reminder was sent less than the cooldown ago; the next may be queued at `available_at`.
    #[error("a reminder was sent recently; the next one can be sent from {available_at}")]
    ReminderCooldown { available_at: chrono::DateTime<chrono::Utc> },
    #[error("version {provided} is stale; the current version is {current}")]
    InvoiceVersionConflict { provided: i64, current: i64 },
    #[error("the checkout session is expired, terminal or not ready")]
    CheckoutSessionNotPayable,
    /// The invoice holds as much of something as it may (see [`Limit`]); nothing is changed.
    #[error("the limit of {limit} {} is reached", match .what {
        Limit::DraftVersions => "draft versions per invoice",
        Limit::CheckoutSessions => "checkout sessions per invoice",
        Limit::PaymentRecords => "payment records per invoice",
        Limit::WebhookEndpoints => "webhook endpoints per merchant and mode",
    })]
    LimitReached { what: Limit, limit: usize },
    /// A store outcome: the transaction hash was already credited to another payment. The
    /// use case records the attempt as a duplicate instead; it never reaches a client.
    #[error("the transaction was already credited")]
    DuplicateTransaction,

    #[error("version {provided} is stale; the current version is {current}")]
    PaymentLinkVersionConflict { provided: i64, current: i64 },
    #[error("the payment link is not active")]
    LinkInactive,
    #[error("the payment link has expired")]
    LinkExpired,
    #[error("the single-use payment link was already used")]
    LinkAlreadyUsed,
    #[error("the single-use payment link is reserved by a checkout in progress")]
    LinkReserved,
    /// A value the link's configuration requires was not sent.
    #[error("{field} is required")]
    FieldRequired { field: String },
    /// The configuration changed since the page was shown.
    #[error("the payment link changed (now version {current}); reload it")]
    ConfigChanged { current: i64 },
    #[error("the amount must be from {minimum} to {maximum}")]
    AmountOutOfRange { minimum: String, maximum: String },
    /// The link's mode cannot take payments now (live mode of a merchant not activated).
    #[error("this payment link cannot take payments now")]
    ModeUnavailable,
    /// An event type that does not exist (or cannot be subscribed to).
    #[error("{field}: {value} is not a supported event type")]
    WebhookEventUnsupported { field: String, value: String },
    #[error("the webhook endpoint is disabled")]
    WebhookEndpointDisabled,
    #[error("a secret rotation is already in its overlap; end it first")]
    SecretOverlapActive,
    #[error("no secret overlap is running")]
    SecretOverlapExpired,

    /// The chain cannot be used as configured (no RPC endpoint, or the node is on another
    /// chain); the text says why, for operators. Payments wait until it is fixed.
    #[error("the chain is not usable: {0}")]
    ChainUnavailable(String),
    /// The store could not be reached; the caller may retry.
    #[error("storage unavailable")]
    Unavailable,
    /// A bug or an unexpected failure; the text is for logs only.
    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Validation { field: field.into(), message: message.into() }
    }

    pub fn invalid_amount(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::InvalidAmount { field: field.into(), message: message.to_string() }
    }

    pub fn invalid_total(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::InvalidTotal { field: field.into(), message: message.into() }
    }

    /// The field a field-level error names.
    pub fn field(&self) -> Option<&str> {
        match self {
            Error::Validation { field, .. }
            | Error::InvalidAmount { field, .. }
            | Error::InvalidExpiry { field, .. }
            | Error::InvalidTotal { field, .. }
            | Error::CurrencyMismatch { field, .. }
            | Error::CustomerEmailRequired { field }
            | Error::InvalidWalletAddress { field, .. }
            | Error::InvalidTxHash { field }
            | Error::WebhookEventUnsupported { field, .. }
            | Error::FieldRequired { field }
            | Error::ModeFieldMismatch { field }
            | Error::PublicKeyFieldNotAllowed { field } => Some(field),
            _ => None,
        }
    }
}
