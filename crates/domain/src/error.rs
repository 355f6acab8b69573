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
    /// Draft versions of one invoice.
    DraftVersions,
    /// Checkout sessions of one invoice.
    CheckoutSessions,
    /// Payment records of one invoice.
    PaymentRecords,
    /// Webhook endpoints of a merchant in one mode (`webhook::model::MAX_ENDPOINTS`).
    WebhookEndpoints,
}

/// Why the relayer cannot submit an authorization now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RelayerUnavailable {
    /// The operator set no relayer key.
    Off,
    /// The day's gas budget (`STABLEPAY_RELAYER_DAILY_GAS_LIMIT`) would be exceeded.
    DailyGasLimit,
    /// The relayer's balance does not pay the gas of one more submission.
    Unfunded,
    /// The token's EIP-712 domain cannot be read now.
    TokenDomain,
}

impl RelayerUnavailable {
    /// The reason as `details.reason` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Off => "relayer_off",
            Self::DailyGasLimit => "relayer_daily_gas_limit",
            Self::Unfunded => "relayer_unfunded",
            Self::TokenDomain => "token_domain_unavailable",
        }
    }

    /// What the customer reads.
    pub fn message(self) -> &'static str {
        match self {
            Self::Off => "this service does not submit authorizations: send the transaction from your wallet",
            Self::DailyGasLimit => {
                "the relayer reached its daily limit: send the transaction from your wallet (it pays the network fee)"
            }
            Self::Unfunded => {
                "the relayer cannot pay the network fee now: send the transaction from your wallet (it pays the fee)"
            }
            Self::TokenDomain => "the token cannot be read now: send the transaction from your wallet",
        }
    }
}

/// The kinds of resource a NOT_FOUND can name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    /// A merchant.
    Merchant,
    /// An API key.
    ApiKey,
    /// An invoice.
    Invoice,
    /// A checkout session.
    CheckoutSession,
    /// A payment.
    Payment,
    /// An event.
    Event,
    /// A webhook endpoint.
    WebhookEndpoint,
    /// A webhook delivery.
    WebhookDelivery,
    /// A webhook incident.
    WebhookIncident,
    /// A payment link.
    PaymentLink,
    /// An export.
    Export,
    /// A reconciliation run.
    ReconciliationRun,
    /// A monthly statement (or its download link).
    Statement,
    /// A member of a merchant (a user with a membership there).
    Member,
    /// An invitation to a merchant.
    Invitation,
    /// A transfer recorded as unattributed.
    UnattributedTransfer,
    /// An authorization submitted to the relayer.
    RelayedAuthorization,
}

impl Resource {
    /// The resource's name in messages (`invoice`, `checkout_session` ...).
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
            Resource::Export => "export",
            Resource::ReconciliationRun => "reconciliation_run",
            Resource::Statement => "statement",
            Resource::Member => "member",
            Resource::Invitation => "invitation",
            Resource::UnattributedTransfer => "unattributed_transfer",
            Resource::RelayedAuthorization => "relayed_authorization",
        }
    }
}

/// Every outcome a use case or port can refuse with. Each variant is one stable, documented
/// outcome that adapters map to a public code (named in each variant's documentation).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Input that is well-formed JSON but breaks a field rule.
    #[error("{field}: {message}")]
    Validation {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// An amount that is not a valid decimal string for its field (INVALID_AMOUNT).
    #[error("{field}: {message}")]
    InvalidAmount {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// An expiry outside 5-1440 minutes (INVALID_EXPIRY).
    #[error("{field}: {message}")]
    InvalidExpiry {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Totals that do not add up: zero, negative, or too large (INVALID_TOTAL).
    #[error("{field}: {message}")]
    InvalidTotal {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A token other than the mode's settlement token (CURRENCY_MISMATCH).
    #[error("{field}: {message}")]
    CurrencyMismatch {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// Sending or reminding needs a valid customer email (CUSTOMER_EMAIL_REQUIRED).
    #[error("a valid customer email is required")]
    CustomerEmailRequired {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
    },
    /// Not an EVM address, or a bad EIP-55 checksum (INVALID_WALLET_ADDRESS).
    #[error("{field}: {message}")]
    InvalidWalletAddress {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A chain other than the one this service settles on (INVALID_DEPOSIT_NETWORK).
    #[error("{field}: {message}")]
    InvalidDepositNetwork {
        /// The field it is about (`chain_id`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// A hosted wallet payment attempt that cannot be read: a missing or malformed wallet
    /// address or chain (INVALID_WALLET_PAYMENT_ATTEMPT).
    #[error("{field}: {message}")]
    InvalidWalletPaymentAttempt {
        /// The field it is about (`wallet_address`, `chain_id`).
        field: String,
        /// What is wrong with it.
        message: String,
    },
    /// The checkout does not offer payment from a browser wallet: test mode, which is
    /// simulated (WALLET_PAYMENTS_UNAVAILABLE). The text says why, for the customer.
    #[error("{0}")]
    WalletPaymentsUnavailable(&'static str),
    /// Not `0x` followed by 64 hexadecimal digits (INVALID_TX_HASH).
    #[error("{field}: not a valid transaction hash")]
    InvalidTxHash {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
    },

    /// No such key, or revoked or expired (INVALID_API_KEY).
    #[error("invalid API key")]
    InvalidApiKey,
    /// The key may not do this: a publishable key on a secret route, a live key on a test helper (API_KEY_FORBIDDEN).
    #[error("{0}")]
    ApiKeyForbidden(&'static str),
    /// A publishable key sent a field only a secret key may send (PUBLIC_KEY_FIELD_NOT_ALLOWED).
    #[error("A publishable key may send only amount and externalReference; {field} needs a secret key.")]
    PublicKeyFieldNotAllowed {
        /// The body member refused, exactly as the caller sent it (not a domain path: it may be
        /// a member the domain does not know).
        field: String,
    },
    /// The merchant is suspended (ACCOUNT_SUSPENDED).
    #[error("the merchant account is suspended")]
    AccountSuspended,
    /// A restricted key used outside its permissions (PERMISSION_DENIED); names the permission
    /// it lacks (`invoices:write`, or `unrestricted`).
    #[error("this key lacks the permission {permission}")]
    PermissionDenied {
        /// The permission the request needs.
        permission: String,
    },
    /// A dashboard login whose email and password do not match an account; the same for an
    /// unknown email and a wrong password (INVALID_CREDENTIALS).
    #[error("the email or the password is wrong")]
    InvalidCredentials,
    /// A dashboard login whose password matched an account with two-factor login, and whose
    /// `otp` was missing (`missing`) or wrong (INVALID_CREDENTIALS, `details.field` `otp`).
    #[error("{}", if *.missing { "enter the code of your authenticator app, or a recovery code" } else { "the code is wrong or was used already" })]
    SecondFactor {
        /// No code was sent (the password was right: ask for the code).
        missing: bool,
    },
    /// An emailed account link that cannot be used (NOT_FOUND on `token`): `unknown` (never
    /// sent, or a newer one replaced it and was sent), `used` (followed, replaced or revoked)
    /// or `expired`.
    #[error("{}", match *.0 {
        "used" => "this link was already used, or a newer one replaced it",
        "expired" => "this link has expired; ask for a new one",
        _ => "this link is not valid; use the newest email",
    })]
    AccountLinkUnusable(&'static str),
    /// No dashboard session, or one that ended (AUTH_REQUIRED).
    #[error("sign in first")]
    AuthRequired,
    /// A dashboard session whose role does not allow the action, or a mutation without its
    /// session's CSRF token (AUTH_FORBIDDEN); names the action.
    #[error("not allowed: {0}")]
    AuthForbidden(String),
    /// Live activation asked for before a settlement wallet was set (DEFAULT_WALLET_REQUIRED).
    #[error("set a settlement wallet first")]
    DefaultWalletRequired,
    /// A settlement wallet that cannot receive the merchant's payments: the zero address, a
    /// precompiled contract, or a token's own contract (UNSUPPORTED_DEFAULT_WALLET).
    #[error("{field}: {message}")]
    UnsupportedDefaultWallet {
        /// The field it is about.
        field: String,
        /// Why it cannot receive.
        message: String,
    },
    /// Live mode before the merchant was activated (ACTIVE_MERCHANT_REQUIRED).
    #[error("live mode requires an activated merchant")]
    ActiveMerchantRequired,
    /// A feature this deployment does not offer (yet); the text names it (FEATURE_UNAVAILABLE).
    #[error("{0} is not available yet")]
    FeatureUnavailable(&'static str),
    /// The invoice has no document (a draft), or it could not be rendered.
    #[error("the invoice PDF is unavailable: {0}")]
    InvoicePdfUnavailable(String),

    /// No such resource for this merchant (NOT_FOUND, or the resource's own code).
    #[error("{} not found", .0.as_str())]
    NotFound(Resource),
    /// The id exists for this merchant but in the other mode.
    #[error("the resource belongs to the other mode")]
    ModeMismatch,
    /// A request field names the other mode than its key's.
    #[error("{field} must equal the key's mode")]
    ModeFieldMismatch {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
    },
    /// A list cursor that is not an item of the list (of this merchant and mode).
    #[error("the cursor is not an item of this list")]
    InvalidCursor,

    /// The invoice changed while the operation ran; retry (INVOICE_STATE_MISMATCH).
    #[error("the invoice changed state before the operation completed")]
    InvoiceStateMismatch,
    /// The invoice's state does not allow this transition; the text says why (INVOICE_TRANSITION_GUARD_FAILED).
    #[error("{0}")]
    InvoiceTransitionGuardFailed(String),
    /// Issue on an invoice that is not a draft (INVOICE_ALREADY_ISSUED).
    #[error("the invoice is already issued")]
    InvoiceAlreadyIssued,
    /// An edit of an issued invoice, or too many draft versions (INVOICE_NOT_EDITABLE).
    #[error("the invoice's commercial fields are locked")]
    InvoiceNotEditable,
    /// Nothing left to collect, or the invoice is closed (INVOICE_NOT_PAYABLE).
    #[error("the invoice has no collectible remainder or is closed")]
    InvoiceNotPayable,
    /// A reminder was sent less than the cooldown ago; the next may be queued at `available_at`.
    #[error(
        "a reminder was sent recently; the next one can be sent from {}",
        .available_at.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
    )]
    ReminderCooldown {
        /// When the next reminder may be sent.
        available_at: chrono::DateTime<chrono::Utc>,
    },
    /// An invoice change sent with a stale version (INVOICE_VERSION_CONFLICT).
    #[error("version {provided} is stale; the current version is {current}")]
    InvoiceVersionConflict {
        /// The version the caller sent.
        provided: i64,
        /// The current version.
        current: i64,
    },
    /// The checkout is expired, completed or not ready (CHECKOUT_SESSION_NOT_PAYABLE).
    #[error("the checkout session is expired, terminal or not ready")]
    CheckoutSessionNotPayable,
    /// The invoice holds as much of something as it may (see [`Limit`]); nothing is changed.
    #[error("the limit of {limit} {} is reached", match .what {
        Limit::DraftVersions => "draft versions per invoice",
        Limit::CheckoutSessions => "checkout sessions per invoice",
        Limit::PaymentRecords => "payment records per invoice",
        Limit::WebhookEndpoints => "webhook endpoints per merchant and mode",
    })]
    LimitReached {
        /// What reached its limit.
        what: Limit,
        /// The limit.
        limit: usize,
    },
    /// A store outcome: the transaction hash was already credited to another payment. The
    /// use case records the attempt as a duplicate instead; it never reaches a client.
    #[error("the transaction was already credited")]
    DuplicateTransaction,
    /// A recorded transfer a person attributes does not pay the checkout they chose, for the
    /// reason verification gives (CHECKOUT_SESSION_NOT_PAYABLE on `checkout_session_id`, with the
    /// reason as payments write it: `checkout_expired`, `transfer_before_checkout`...).
    #[error("the transfer cannot pay this checkout: {0}")]
    TransferDoesNotPay(&'static str),
    /// A recorded transfer was credited already, by a person or any other path
    /// (TRANSFER_ALREADY_ATTRIBUTED).
    #[error("the transfer was credited already")]
    TransferAlreadyAttributed,

    /// A link change sent with a stale version (PAYMENT_LINK_VERSION_CONFLICT).
    #[error("version {provided} is stale; the current version is {current}")]
    PaymentLinkVersionConflict {
        /// The version the caller sent.
        provided: i64,
        /// The current version.
        current: i64,
    },
    /// The link is paused, archived or not active yet (LINK_INACTIVE).
    #[error("the payment link is not active")]
    LinkInactive,
    /// The link's expiresAt passed (LINK_EXPIRED).
    #[error("the payment link has expired")]
    LinkExpired,
    /// A single-use link whose invoice was paid (LINK_ALREADY_USED).
    #[error("the single-use payment link was already used")]
    LinkAlreadyUsed,
    /// A single-use link held by a checkout in progress (LINK_RESERVED).
    #[error("the single-use payment link is reserved by a checkout in progress")]
    LinkReserved,
    /// A value the link's configuration requires was not sent.
    #[error("{field} is required")]
    FieldRequired {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
    },
    /// The configuration changed since the page was shown.
    #[error("the payment link changed (now version {current}); reload it")]
    ConfigChanged {
        /// The current version.
        current: i64,
    },
    /// A customer-entered amount outside the link's bounds (AMOUNT_OUT_OF_RANGE).
    #[error("the amount must be from {minimum} to {maximum}")]
    AmountOutOfRange {
        /// The lowest amount accepted.
        minimum: String,
        /// The highest amount accepted.
        maximum: String,
    },
    /// The link's mode cannot take payments now (live mode of a merchant not activated).
    #[error("this payment link cannot take payments now")]
    ModeUnavailable,
    /// An event type that does not exist (or cannot be subscribed to).
    #[error("{field}: {value} is not a supported event type")]
    WebhookEventUnsupported {
        /// The field it is about (the domain's snake-case path, such as `lines[2].unit_amount`).
        field: String,
        /// The value sent.
        value: String,
    },
    /// The endpoint is disabled (WEBHOOK_ENDPOINT_DISABLED).
    #[error("the webhook endpoint is disabled")]
    WebhookEndpointDisabled,
    /// A rotation while the previous rotation's overlap runs (SECRET_OVERLAP_ACTIVE).
    #[error("a secret rotation is already in its overlap; end it first")]
    SecretOverlapActive,
    /// Ending an overlap when none runs (SECRET_OVERLAP_EXPIRED).
    #[error("no secret overlap is running")]
    SecretOverlapExpired,
    /// An export's range is longer than 366 days (EXPORT_RANGE_TOO_LARGE, on `to`).
    #[error("an export covers at most 366 days; split the range")]
    ExportRangeTooLarge,
    /// A schema that is not one of the export type's (EXPORT_SCHEMA_UNSUPPORTED, on `schema`).
    #[error("{message}")]
    ExportSchemaUnsupported {
        /// Which schemas the type has.
        message: String,
    },
    /// The export's file is not written yet (EXPORT_NOT_READY, with Retry-After).
    #[error("the export is {status}; its file is not ready yet")]
    ExportNotReady {
        /// Its status (`queued`, `running`, `failed`).
        status: &'static str,
    },
    /// The export was cancelled: it has no file (EXPORT_CANCELLED).
    #[error("the export was cancelled")]
    ExportCancelled,
    /// The export's file was deleted after its expiry (EXPORT_EXPIRED).
    #[error("the export's file expired and was deleted; create the export again")]
    ExportExpired,
    /// Only a queued or running export can be cancelled (EXPORT_NOT_CANCELLABLE).
    #[error("the export is {status}; only a queued or running export can be cancelled")]
    ExportNotCancellable {
        /// Its status.
        status: &'static str,
    },
    /// A synchronous export of more rows than it answers (EXPORT_TOO_LARGE_FOR_SYNC).
    #[error(
        "the range holds {rows} rows, more than the {limit} a synchronous export answers; create it with POST /v1/exports"
    )]
    ExportTooLargeForSync {
        /// Rows the range holds.
        rows: u64,
        /// The most a synchronous export answers.
        limit: u64,
    },

    /// The relayer cannot submit an authorization now (FEATURE_UNAVAILABLE, with the reason):
    /// the customer's wallet may still send the call itself.
    #[error("{}", .0.message())]
    RelayerUnavailable(RelayerUnavailable),
    /// Another submission of the checkout is being sent (CHECKOUT_SESSION_NOT_PAYABLE, with
    /// `details.reason` `payment_being_sent` and that submission's id): one payment at a time.
    #[error("a payment of this checkout is being sent; follow it before paying again")]
    RelayInFlight(crate::ids::RelayId),
    /// The authorization's nonce was used on the chain already (AUTHORIZATION_USED): the transfer
    /// it made is what pays; nothing is sent again.
    #[error("this authorization was used already; the transfer it made pays the checkout")]
    AuthorizationUsed,
    /// The authorization is past its `validBefore`, or too close to it to be mined in time, by
    /// the chain's clock (AUTHORIZATION_EXPIRED).
    #[error("this authorization expires before it could be mined; ask a new wallet payment attempt")]
    AuthorizationExpired,
    /// The payer's token balance does not cover the authorization's value
    /// (PAYER_BALANCE_INSUFFICIENT).
    #[error("the paying wallet holds {balance}, less than the {required} it authorized")]
    PayerBalanceInsufficient {
        /// What the wallet holds.
        balance: String,
        /// What the authorization moves.
        required: String,
    },
    /// The token refuses the exact call (a simulated `eth_call` reverts); the text is its
    /// reason (AUTHORIZATION_REJECTED).
    #[error("the token refuses this authorization: {0}")]
    AuthorizationRejected(String),

    /// The chain cannot be used as configured (no RPC endpoint, or the node is on another
    /// chain); the text says why, for operators. Payments wait until it is fixed.
    #[error("the chain is not usable: {0}")]
    ChainUnavailable(String),
    /// The request's idempotency claim was taken over by a retry after its lease ran out: its
    /// work was rolled back, and the retry's answer is the one (IDEMPOTENCY_KEY_CONFLICT,
    /// in progress).
    #[error("the idempotency key's claim was taken over by a retry")]
    IdempotencyClaimLost,
    /// Too many failed secret checks (a password, a code) of one account or one client within
    /// the policy's window (RATE_LIMITED, with Retry-After and the RateLimit headers).
    #[error("too many failed attempts; retry after {} seconds", .0.retry_after_seconds)]
    RateLimited(Throttle),
    /// What can take an account over (two-factor enrolment, an API key, the password...) needs
    /// the password, and the code with two-factor login, given within the last 5 minutes
    /// (AUTH_FORBIDDEN, `details.reason` `reauthentication_required`).
    #[error(
        "confirm your password (and your two-factor code) first: this change needs a sign-in from the last 5 minutes"
    )]
    ReauthenticationRequired,
    /// The database lacks migrations this binary knows (`pending`, their versions): nothing is
    /// served until `stablepay migrate` runs (SERVICE_UNAVAILABLE).
    #[error("the database schema is behind this binary: {} migrations pending", pending.len())]
    SchemaBehind {
        /// The versions missing.
        pending: Vec<String>,
    },
    /// The store could not be reached; the caller may retry.
    #[error("storage unavailable")]
    Unavailable,
    /// A bug or an unexpected failure; the text is for logs only.
    #[error("internal error: {0}")]
    Internal(String),
}

/// A quota's refusal, as the `RateLimit` and `RateLimit-Policy` headers say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    /// The policy's name.
    pub policy: &'static str,
    /// Its quota per window.
    pub quota: u32,
    /// Its window in seconds.
    pub window_seconds: u32,
    /// Seconds until the whole quota is available again.
    pub reset_seconds: u32,
    /// Seconds to wait before a retry can succeed (at least 1).
    pub retry_after_seconds: u32,
}

impl Error {
    /// The same refusal about `field` instead: a shared rule (the password policy) reported
    /// under the name the request used. Other errors are unchanged.
    pub fn renamed(self, field: &str) -> Self {
        match self {
            Self::Validation { message, .. } => Self::Validation { field: field.to_owned(), message },
            other => other,
        }
    }

    /// A [`Error::Validation`] of `field`.
    pub fn validation(field: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Validation { field: field.into(), message: message.into() }
    }

    /// An [`Error::InvalidAmount`] of `field`.
    pub fn invalid_amount(field: impl Into<String>, message: impl std::fmt::Display) -> Self {
        Error::InvalidAmount { field: field.into(), message: message.to_string() }
    }

    /// An [`Error::InvalidTotal`] of `field`.
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
            | Error::UnsupportedDefaultWallet { field, .. }
            | Error::InvalidTxHash { field }
            | Error::InvalidDepositNetwork { field, .. }
            | Error::InvalidWalletPaymentAttempt { field, .. }
            | Error::WebhookEventUnsupported { field, .. }
            | Error::FieldRequired { field }
            | Error::ModeFieldMismatch { field }
            | Error::PublicKeyFieldNotAllowed { field } => Some(field),
            _ => None,
        }
    }
}
