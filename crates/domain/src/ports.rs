//! Every port: the traits an adapter implements, listed in one place for implementers of
//! adapters, in this repository or outside it. Each trait is defined next to its feature and
//! re-exported here; each method's documentation states its error contract. A test
//! (`tests/ports.rs`) keeps this list equal to the traits the features define, and to the list
//! in `docs/ARCHITECTURE.md`.
//!
//! Every store method that touches merchant data takes the [`Scope`](crate::Scope) (merchant
//! and mode) or the merchant id it acts for; adapters must filter by it, so an id of another
//! merchant is `Error::NotFound` and an id of the same merchant in the other mode is
//! `Error::ModeMismatch`. The deliberate exceptions are named on the methods: the hosted
//! pages' look-ups by an unguessable session id or public token, the duplicate-transaction
//! check, the worker's claims of due work (which answer the scope of each item), the follower's
//! look-ups by wallet, and the operator's merchant and key administration.
//!
//! Inside the crate, a port is imported from where it is defined, never through this file
//! (`xtask/tests/architecture.rs`).
//!
//! | port | feature | what it is |
//! | --- | --- | --- |
//! | [`Clock`] | `clock` | each scope's time (the test clock in test mode) |
//! | [`Crypto`] | `crypto` | randomness, SHA-256, and HMAC-SHA-1 for one-time codes |
//! | [`MerchantStore`] | `merchant` | merchants and their live settlement |
//! | [`AccountStore`] | `account` | users, memberships, sessions, emailed links, two-factor state and the audit log |
//! | [`PasswordHasher`] | `account` | password hashes (Argon2id) |
//! | [`TotpSealer`] | `account` | sealing of two-factor secrets at rest |
//! | [`ApiKeyStore`] | `api_key` | API key records, looked up by digest |
//! | [`InvoiceStore`] | `invoice` | invoices with their checkouts, payments and events, saved atomically |
//! | [`InvoiceRenderer`] | `invoice` | invoice PDFs |
//! | [`CheckoutSignals`] | `invoice` | signals, from any process, that a checkout may have changed (for pages that push it) |
//! | [`CheckoutSubscription`] | `invoice` | one follower of one checkout's signals |
//! | [`Chain`] | `chain` | transactions, final blocks and transfer logs of the chain |
//! | [`FollowerStore`] | `chain` | the follower's cursor, open checkouts by wallet, unattributed transfers |
//! | [`PaymentLinkStore`] | `payment_link` | payment links and their submissions |
//! | [`WebhookStore`] | `webhook` | endpoints, deliveries, attempts and incidents |
//! | [`WebhookSender`] | `webhook` | one signed delivery attempt |
//! | [`SecretBox`] | `webhook` | sealing of signing secrets at rest |
//! | [`EmailStore`] | `email` | the email outbox |
//! | [`Mailer`] | `email` | sending one message |
//! | [`EventStore`] | `event` | the outbox of events, read side |
//! | [`IdempotencyStore`] | `idempotency` | saved responses of idempotent requests |
//! | [`RateLimiter`] | `ratelimit` | rate-limit budgets |
//! | [`Health`] | `health` | whether the store answers |
//! | [`TelemetryStore`] | `telemetry` | the steps the checkout page reports, and their funnel |
//! | [`ExportStore`] | `export` | exports, their files in chunks, and the records they read |
//! | [`ExportPace`] | `export` | how the worker paces the writing of a file (pauses, stops) |
//! | [`StatementStore`] | `statement` | statement settings, monthly statements and their exports |
//! | [`ReconciliationStore`] | `reconciliation` | a period's figures per token and its discrepancies |
//! | [`ReconciliationRunStore`] | `reconciliation` | reconciliation runs, their items, and the credited payments and log owners they read |
//! | [`Relayer`] | `relay` | the relayer's account on the chain: checks, fees, signing of submissions, receipts |
//! | [`RelayStore`] | `relay` | submissions to the relayer, its account's nonce and the sender's lease |
//! | [`DueTimes`] | `schedule` | when each worker loop's work next comes due |

pub use crate::account::ports::{AccountStore, PasswordHasher, TotpSealer};
pub use crate::api_key::ports::ApiKeyStore;
pub use crate::chain::ports::{Chain, FollowerStore};
pub use crate::clock::Clock;
pub use crate::crypto::Crypto;
pub use crate::email::ports::{EmailStore, Mailer};
pub use crate::event::ports::EventStore;
pub use crate::export::ports::{ExportPace, ExportStore};
pub use crate::health::ports::Health;
pub use crate::idempotency::ports::IdempotencyStore;
pub use crate::invoice::ports::{CheckoutSignal, CheckoutSignals, CheckoutSubscription, InvoiceRenderer, InvoiceStore};
pub use crate::merchant::ports::MerchantStore;
pub use crate::payment_link::ports::PaymentLinkStore;
pub use crate::ratelimit::ports::RateLimiter;
pub use crate::reconciliation::ports::{ReconciliationRunStore, ReconciliationStore};
pub use crate::relay::ports::{RelayStore, Relayer};
pub use crate::schedule::ports::DueTimes;
pub use crate::statement::ports::StatementStore;
pub use crate::telemetry::ports::TelemetryStore;
pub use crate::webhook::ports::{SecretBox, WebhookSender, WebhookStore};

/// The mockall mocks of every port (the `mocks` feature).
#[cfg(any(test, feature = "mocks"))]
pub use crate::{
    account::ports::{MockAccountStore, MockPasswordHasher, MockTotpSealer},
    api_key::ports::MockApiKeyStore,
    chain::ports::{MockChain, MockFollowerStore},
    clock::MockClock,
    crypto::MockCrypto,
    email::ports::{MockEmailStore, MockMailer},
    event::ports::MockEventStore,
    export::ports::{MockExportPace, MockExportStore},
    health::ports::MockHealth,
    idempotency::ports::MockIdempotencyStore,
    invoice::ports::{MockCheckoutSignals, MockCheckoutSubscription, MockInvoiceRenderer, MockInvoiceStore},
    merchant::ports::MockMerchantStore,
    payment_link::ports::MockPaymentLinkStore,
    ratelimit::ports::MockRateLimiter,
    reconciliation::ports::{MockReconciliationRunStore, MockReconciliationStore},
    relay::ports::{MockRelayStore, MockRelayer},
    schedule::ports::MockDueTimes,
    statement::ports::MockStatementStore,
    telemetry::ports::MockTelemetryStore,
    webhook::ports::{MockSecretBox, MockWebhookSender, MockWebhookStore},
};
