//! Every use case, over the ports one deployment wires: what a driving adapter (the HTTP API,
//! the hosted pages, the worker, admin tooling) holds. The ports are private to it, so a driving
//! adapter calls use cases and never reads a store itself.
//!
//! A use case whose answer depends on the time takes a clock: [`UseCases::clock`] reads each
//! scope's time from the store, and a request may bring its own (its merchant's test-clock
//! offset read with its key), passed to the `*_at` constructors.

use std::sync::Arc;

use chrono::{DateTime, Utc};

use crate::account::ports::{AccountStore, PasswordHasher, TotpSealer};
use crate::account::service::accounts::AccountSettings;
use crate::account::service::accounts::Accounts;
use crate::api_key::model::{ApiKeySecret, Principal};
use crate::api_key::ports::ApiKeyStore;
use crate::api_key::service::authenticate;
use crate::chain::ports::{Chain, FollowerStore};
use crate::chain::service::Follower;
use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::diagnostics::service::{Diagnostics, MerchantChecks};
use crate::email::ports::{EmailStore, Mailer};
use crate::email::service::Emails;
use crate::error::Error;
use crate::event::ports::EventStore;
use crate::event::service::Events;
use crate::export::ports::ExportStore;
use crate::export::service::Exports;
use crate::health::ports::Health;
use crate::health::service::Readiness;
use crate::idempotency::model::IdempotencySettings;
use crate::idempotency::ports::IdempotencyStore;
use crate::idempotency::service::Idempotency;
use crate::ids::{ApiKeyId, CheckoutSessionId};
use crate::invoice::aggregate::InvoiceKey;
use crate::invoice::document::InvoiceDocument;
use crate::invoice::ports::{CheckoutSignals, CheckoutSubscription, InvoiceRenderer, InvoiceStore};
use crate::invoice::service::{Collections, DueReport, Invoices, PublicViews};
use crate::merchant::model::{ChainSettings, Merchant};
use crate::merchant::ports::MerchantStore;
use crate::mode::Scope;
use crate::payment_link::ports::PaymentLinkStore;
use crate::payment_link::service::PaymentLinks;
use crate::ratelimit::ports::RateLimiter;
use crate::ratelimit::service::RateLimits;
use crate::reconciliation::ports::{ReconciliationRunStore, ReconciliationStore};
use crate::reconciliation::service::Reconciliations;
use crate::reconciliation::service::runs::ReconciliationRuns;
use crate::relay::model::RelaySettings;
use crate::relay::ports::{RelayStore, Relayer};
use crate::relay::service::Relays;
use crate::statement::ports::StatementStore;
use crate::statement::service::Statements;
use crate::telemetry::ports::TelemetryStore;
use crate::telemetry::service::CheckoutTelemetry;
use crate::url::PublicPages;
use crate::webhook::ports::{SecretBox, WebhookStore};
use crate::webhook::service::{WebhookSettings, Webhooks};

/// The ports of one deployment.
pub struct Ports {
    /// Merchants.
    pub merchants: Arc<dyn MerchantStore>,
    /// API keys.
    pub keys: Arc<dyn ApiKeyStore>,
    /// Invoices with their sessions, payments and events.
    pub invoices: Arc<dyn InvoiceStore>,
    /// Invoice PDFs.
    pub renderer: Arc<dyn InvoiceRenderer>,
    /// Signals that a checkout may have changed, from any process.
    pub signals: Arc<dyn CheckoutSignals>,
    /// The chain.
    pub chain: Arc<dyn Chain>,
    /// The follower's store.
    pub follower: Arc<dyn FollowerStore>,
    /// Payment links.
    pub links: Arc<dyn PaymentLinkStore>,
    /// Webhook endpoints, deliveries and incidents.
    pub webhooks: Arc<dyn WebhookStore>,
    /// Sealing of signing secrets.
    pub secrets: Arc<dyn SecretBox>,
    /// The email outbox.
    pub emails: Arc<dyn EmailStore>,
    /// Sending of emails.
    pub mailer: Arc<dyn Mailer>,
    /// Events, read side.
    pub events: Arc<dyn EventStore>,
    /// Saved answers of idempotent requests.
    pub idempotency: Arc<dyn IdempotencyStore>,
    /// Rate-limit budgets.
    pub limiter: Arc<dyn RateLimiter>,
    /// Whether the store answers.
    pub health: Arc<dyn Health>,
    /// The checkout page's reported steps.
    pub telemetry: Arc<dyn TelemetryStore>,
    /// Exports, their files and the records they read.
    pub exports: Arc<dyn ExportStore>,
    /// A period's figures and discrepancies.
    pub reconciliation: Arc<dyn ReconciliationStore>,
    /// Reconciliation runs and what they read from the books.
    pub reconciliation_runs: Arc<dyn ReconciliationRunStore>,
    /// Statement settings and monthly statements.
    pub statements: Arc<dyn StatementStore>,
    /// Submissions to the relayer.
    pub relays: Arc<dyn RelayStore>,
    /// The relayer's account on the chain.
    pub relayer: Arc<dyn Relayer>,
    /// Users, memberships and sessions.
    pub accounts: Arc<dyn AccountStore>,
    /// Password hashes.
    pub passwords: Arc<dyn PasswordHasher>,
    /// Sealing of two-factor secrets.
    pub totp_sealer: Arc<dyn TotpSealer>,
    /// Each scope's time, from the store.
    pub clock: Arc<dyn Clock>,
    /// When the worker's loops have work next.
    pub due_times: Arc<dyn crate::schedule::ports::DueTimes>,
    /// Randomness and hashes.
    pub crypto: Arc<dyn Crypto>,
}

/// What one deployment is configured with.
#[derive(Clone, Debug, Default)]
pub struct Settings {
    /// The settlement chain and token contracts of new checkouts.
    pub chain: ChainSettings,
    /// How webhook deliveries are retried.
    pub webhooks: WebhookSettings,
    /// Where customers reach the hosted pages.
    pub pages: PublicPages,
    /// How long an idempotency claim whose work did not commit blocks its retries.
    pub idempotency: IdempotencySettings,
    /// How long dashboard sessions last, and who may sign up.
    pub accounts: AccountSettings,
    /// How long events, deliveries and finished emails are kept.
    pub retention: crate::retention::model::RetentionSettings,
    /// The relayer's limits.
    pub relay: RelaySettings,
}

/// The test clock of a merchant after it moved, and what the move set off.
#[derive(Debug, PartialEq)]
pub struct TestClock {
    /// The clock's offset from the real time, in whole seconds.
    pub offset_seconds: i64,
    /// The merchant's time now.
    pub now: DateTime<Utc>,
    /// Transitions the move ran: invoices changed, links announced expired, reminders queued.
    pub transitions_run: u64,
    /// Invoices whose due work failed (each backed off and retried later).
    pub due: DueReport,
}

/// Every use case over one deployment's ports.
pub struct UseCases {
    ports: Ports,
    settings: Settings,
}

impl UseCases {
    /// The use cases over `ports`, configured with `settings`.
    pub fn new(ports: Ports, settings: Settings) -> Self {
        Self { ports, settings }
    }

    /// The deployment's settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// Where customers reach the hosted pages.
    pub fn pages(&self) -> &PublicPages {
        &self.settings.pages
    }

    /// Each scope's time, as the store tells it (the test clock in test mode).
    pub fn clock(&self) -> &dyn Clock {
        self.ports.clock.as_ref()
    }

    /// The store's clock, to share (a request's own clock falls back to it for other scopes).
    pub fn shared_clock(&self) -> Arc<dyn Clock> {
        self.ports.clock.clone()
    }

    /// Randomness (request ids, form keys) and hashes.
    pub fn crypto(&self) -> &dyn Crypto {
        self.ports.crypto.as_ref()
    }

    /// The use cases in `context`: who acts, when (its clock) and under which idempotency
    /// claim. Every use case that follows a scope's clock or marks a request's key is built
    /// from one.
    pub fn within<'a>(&'a self, context: Context<'a>) -> InContext<'a> {
        InContext { cases: self, context }
    }

    /// The worker's context: the store's clock, no claim, the system acting.
    fn worker(&self) -> InContext<'_> {
        self.within(Context::new(self.clock()))
    }

    /// Checkout sessions, invoices and payments, in the worker's context.
    pub fn invoices(&self) -> Invoices<'_> {
        self.worker().invoices()
    }

    /// Follows checkout `id`'s changes, for a page that pushes them to its customer: subscribe,
    /// read the checkout ([`PublicViews::checkout`]), then wait for the subscription's next
    /// signal and read it again.
    pub fn follow_checkout(&self, id: &CheckoutSessionId) -> Box<dyn CheckoutSubscription> {
        self.ports.signals.subscribe(id)
    }

    /// A checkout and an invoice as their customer sees them.
    pub fn public_views(&self) -> PublicViews<'_> {
        PublicViews {
            invoices: self.ports.invoices.as_ref(),
            merchants: self.ports.merchants.as_ref(),
            links: self.ports.links.as_ref(),
            clock: self.clock(),
            telemetry: self.ports.telemetry.as_ref(),
            chain: self.ports.chain.as_ref(),
            crypto: self.crypto(),
            chain_settings: &self.settings.chain,
        }
    }

    /// The relayer: customers' signed authorizations submitted, followed and sent.
    pub fn relays(&self) -> Relays<'_> {
        Relays {
            views: self.public_views(),
            invoices: self.invoices(),
            store: self.ports.relays.as_ref(),
            relayer: self.ports.relayer.as_ref(),
            settings: &self.settings.relay,
        }
    }

    /// The checkout page's reported steps, and the merchant's funnel.
    pub fn telemetry(&self) -> CheckoutTelemetry<'_> {
        CheckoutTelemetry { store: self.ports.telemetry.as_ref(), clock: self.clock() }
    }

    /// The collections review (open invoices, what is overdue).
    pub fn collections(&self) -> Collections<'_> {
        Collections { store: self.ports.invoices.as_ref(), clock: self.clock() }
    }

    /// Payment links, in the worker's context.
    pub fn links(&self) -> PaymentLinks<'_> {
        self.worker().links()
    }

    /// Emails (the one outbox), in the worker's context.
    pub fn emails(&self) -> Emails<'_> {
        self.worker().emails()
    }

    /// Webhook endpoints, deliveries, incidents and test events.
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks {
            store: self.ports.webhooks.as_ref(),
            crypto: self.crypto(),
            secrets: self.ports.secrets.as_ref(),
            clock: self.clock(),
            settings: &self.settings.webhooks,
        }
    }

    /// The chain follower, and the transfers it could not attribute, in the worker's context.
    pub fn follower(&self) -> Follower<'_> {
        self.worker().follower()
    }

    /// Exports of a merchant's records, in the worker's context.
    pub fn exports(&self) -> Exports<'_> {
        self.worker().exports()
    }

    /// How long the worker's idle loops rest.
    pub fn schedule(&self) -> crate::schedule::service::Schedule<'_> {
        crate::schedule::service::Schedule { times: self.ports.due_times.as_ref(), clock: self.clock() }
    }

    /// The worker's purge of what is past its retention.
    pub fn retention(&self) -> crate::retention::service::Retention<'_> {
        crate::retention::service::Retention {
            events: self.ports.events.as_ref(),
            emails: self.ports.emails.as_ref(),
            idempotency: self.ports.idempotency.as_ref(),
            settings: self.settings.retention,
        }
    }

    /// The operator's administration of merchants and keys (the CLI, admin tooling; on the
    /// real time).
    pub fn operator(&self) -> crate::merchant::service::Operator<'_> {
        crate::merchant::service::Operator {
            merchants: self.ports.merchants.as_ref(),
            keys: self.ports.keys.as_ref(),
            accounts: self.ports.accounts.as_ref(),
            crypto: self.crypto(),
            clock: self.clock(),
        }
    }

    /// A merchant's API keys, as the dashboard manages them (on the real time).
    pub fn api_keys(&self) -> crate::api_key::service::ApiKeys<'_> {
        crate::api_key::service::ApiKeys { store: self.ports.keys.as_ref(), crypto: self.crypto(), clock: self.clock() }
    }

    /// Users, memberships and sessions (on the real time).
    pub fn accounts(&self) -> Accounts<'_> {
        Accounts {
            store: self.ports.accounts.as_ref(),
            merchants: self.ports.merchants.as_ref(),
            hasher: self.ports.passwords.as_ref(),
            sealer: self.ports.totp_sealer.as_ref(),
            crypto: self.crypto(),
            clock: self.clock(),
            limiter: self.ports.limiter.as_ref(),
            pages: &self.settings.pages,
            chain: &self.settings.chain,
            settings: self.settings.accounts,
        }
    }

    /// Monthly statements, on the store's clock.
    pub fn statements(&self) -> Statements<'_> {
        Statements { store: self.ports.statements.as_ref(), crypto: self.crypto(), clock: self.clock() }
    }

    /// Reconciliation of a merchant's books, in the worker's context.
    pub fn reconciliations(&self) -> Reconciliations<'_> {
        self.worker().reconciliations()
    }

    /// Reconciliation runs against the live chain, in the worker's context.
    pub fn reconciliation_runs(&self) -> ReconciliationRuns<'_> {
        self.worker().reconciliation_runs()
    }

    /// Diagnostics of checkouts and payments, in the worker's context.
    pub fn diagnostics(&self) -> Diagnostics<'_> {
        self.worker().diagnostics()
    }

    /// A merchant's readiness, in the worker's context.
    pub fn merchant_checks(&self) -> MerchantChecks<'_> {
        self.worker().merchant_checks()
    }

    /// The merchant's events.
    pub fn events(&self) -> Events<'_> {
        Events { store: self.ports.events.as_ref() }
    }

    /// Idempotency keys of requests.
    pub fn idempotency(&self) -> Idempotency<'_> {
        Idempotency {
            store: self.ports.idempotency.as_ref(),
            crypto: self.crypto(),
            lease_seconds: self.settings.idempotency.lease_seconds,
        }
    }

    /// Rate limits.
    pub fn rate_limits(&self) -> RateLimits<'_> {
        RateLimits { limiter: self.ports.limiter.as_ref() }
    }

    /// Whether the deployment can serve.
    pub fn readiness(&self) -> Readiness<'_> {
        Readiness { store: self.ports.health.as_ref(), chain: self.ports.chain.as_ref() }
    }

    /// Which merchant, mode and capability a presented key gives, for a route that takes the
    /// keys `need` says and a request that `needs` a resource family and an access (see
    /// [`authenticate`]: a restricted key, and a key the route does not take, are refused
    /// here).
    pub async fn authenticate(
        &self,
        presented: &ApiKeySecret,
        (need, needs): (
            crate::api_key::model::KeyNeed,
            Option<(crate::api_key::permission::ResourceFamily, crate::api_key::permission::Access)>,
        ),
        now: DateTime<Utc>,
    ) -> Result<Principal, Error> {
        authenticate(self.ports.keys.as_ref(), self.crypto(), presented, (need, needs, now)).await
    }

    /// Records that key `id` was used at `at` (callers do it at most once a minute per key, off
    /// the request's path; see `Principal::record_use`).
    pub async fn record_key_use(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error> {
        self.ports.keys.record_key_use(id, at).await
    }

    /// The document of the invoice `key` of `merchant` in `scope`, with the merchant's logo.
    /// Errors: as [`Invoices::document`].
    pub async fn invoice_document(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
    ) -> Result<InvoiceDocument, Error> {
        let document = self.invoices().document(merchant, scope, key, self.pages()).await?;
        Ok(document.with_logo(self.ports.merchants.logo_image(merchant).await?))
    }

    /// The PDF of an invoice document. Rendering is CPU work: callers run it off their async
    /// workers.
    pub fn render_pdf(&self, document: &InvoiceDocument) -> Result<Vec<u8>, Error> {
        self.ports.renderer.render_pdf(document)
    }

    /// The test clock of `scope`'s merchant: its time and its offset from the real time.
    pub async fn test_clock(&self, scope: &Scope) -> Result<(DateTime<Utc>, i64), Error> {
        let now = self.clock().now(scope).await?;
        // The offset is whole seconds; the two readings are a moment apart, so round.
        let offset_seconds = ((now - self.clock().system_now()).num_milliseconds() + 500).div_euclid(1000);
        Ok((now, offset_seconds))
    }

    /// Moves `scope`'s test clock forward by `seconds` and runs everything the move made due:
    /// invoice and checkout transitions, link expiries (announced a batch at a time),
    /// scheduled reminders (queued; the worker delivers them) and the monthly statement that
    /// came due (issued; the worker writes its files and mails it). Errors: as
    /// [`Invoices::advance_test_clock`].
    pub async fn advance_test_clock(&self, scope: &Scope, seconds: i64) -> Result<TestClock, Error> {
        let (offset_seconds, due) = self.invoices().advance_test_clock(scope, seconds).await?;
        let mut announced = 0;
        for _ in 0..100 {
            let batch = self.links().announce_expiries(Some(scope)).await?;
            announced += batch;
            if batch == 0 {
                break;
            }
        }
        let reminders = self.emails().schedule_reminders(Some(scope)).await?;
        let statements = self.statements().issue_due(Some(scope)).await?;
        // What else the move made due (test-mode records past retention, emails to retry) is
        // the worker's: its idle loops are woken, after the scope's own transitions ran here.
        // The move is done: a lost wake-up only delays that work to the worker's next look
        // (within a minute), so it never fails the move (a retry would move the clock twice).
        let _ = self.ports.due_times.announce().await;
        let now = self.clock().now(scope).await?;
        let transitions_run = u64::try_from(due.changed + announced + reminders + statements).unwrap_or(0);
        Ok(TestClock { offset_seconds, now, transitions_run, due })
    }
}

/// Who acts, when and under which claim: what a driving adapter hands the use cases (a REST
/// request: its key's clock and its idempotency claim; a dashboard post: the member and the
/// post's claim; the worker: the store's clock, nobody's claim).
#[derive(Clone)]
pub struct Context<'a> {
    /// The time of each scope (a request's own clock holds its test clock's offset).
    pub clock: &'a dyn Clock,
    /// The request's idempotency claim: every change its use cases save marks the key
    /// committed in the same transaction.
    pub claim: Option<crate::idempotency::model::IdempotencyClaim>,
    /// Who acts, as an invoice's activity names them.
    pub acting: crate::invoice::model::Acting,
}

impl<'a> Context<'a> {
    /// A context on `clock`, with no claim, the API acting.
    pub fn new(clock: &'a dyn Clock) -> Self {
        Self { clock, claim: None, acting: crate::invoice::model::Acting::Api }
    }

    /// The same context, its work under `claim`.
    pub fn claimed(self, claim: Option<crate::idempotency::model::IdempotencyClaim>) -> Self {
        Self { claim, ..self }
    }

    /// The same context, `acting` named in the activity of its changes.
    pub fn acting(self, acting: crate::invoice::model::Acting) -> Self {
        Self { acting, ..self }
    }
}

/// The use cases of one context (see [`UseCases::within`]). Each is built on the context's
/// clock, claim and actor; none holds a port a caller could read.
pub struct InContext<'a> {
    cases: &'a UseCases,
    context: Context<'a>,
}

impl<'a> InContext<'a> {
    /// Checkout sessions, invoices and payments.
    pub fn invoices(&self) -> Invoices<'a> {
        let c = self.cases;
        Invoices {
            store: c.ports.invoices.as_ref(),
            crypto: c.ports.crypto.as_ref(),
            clock: self.context.clock,
            chain: c.ports.chain.as_ref(),
            settings: &c.settings.chain,
            claim: self.context.claim.clone(),
            acting: self.context.acting.clone(),
        }
    }

    /// The chain follower and the transfers it could not attribute (their attribution by a
    /// person runs through this context's invoices).
    pub fn follower(&self) -> Follower<'a> {
        Follower { invoices: self.invoices(), store: self.cases.ports.follower.as_ref() }
    }

    /// Payment links.
    pub fn links(&self) -> PaymentLinks<'a> {
        let c = self.cases;
        PaymentLinks {
            store: c.ports.links.as_ref(),
            merchants: c.ports.merchants.as_ref(),
            crypto: c.ports.crypto.as_ref(),
            clock: self.context.clock,
            chain: &c.settings.chain,
            claim: self.context.claim.clone(),
        }
    }

    /// Emails (the one outbox: customers', members', account links').
    pub fn emails(&self) -> Emails<'a> {
        let c = self.cases;
        Emails {
            invoices: c.ports.invoices.as_ref(),
            store: c.ports.emails.as_ref(),
            accounts: c.ports.accounts.as_ref(),
            merchants: c.ports.merchants.as_ref(),
            mailer: c.ports.mailer.as_ref(),
            statements: c.ports.statements.as_ref(),
            renderer: c.ports.renderer.as_ref(),
            crypto: c.ports.crypto.as_ref(),
            clock: self.context.clock,
            pages: &c.settings.pages,
            claim: self.context.claim.clone(),
            acting: self.context.acting.clone(),
            export_file_days: c.settings.retention.export_files_days,
        }
    }

    /// Exports of a merchant's records.
    pub fn exports(&self) -> Exports<'a> {
        let c = self.cases;
        Exports {
            store: c.ports.exports.as_ref(),
            crypto: c.ports.crypto.as_ref(),
            clock: self.context.clock,
            claim: self.context.claim.clone(),
            file_days: c.settings.retention.export_files_days,
        }
    }

    /// Reconciliation of a merchant's books.
    pub fn reconciliations(&self) -> Reconciliations<'a> {
        Reconciliations { store: self.cases.ports.reconciliation.as_ref(), clock: self.context.clock }
    }

    /// Reconciliation runs against the live chain.
    pub fn reconciliation_runs(&self) -> ReconciliationRuns<'a> {
        let c = self.cases;
        ReconciliationRuns {
            store: c.ports.reconciliation_runs.as_ref(),
            chain: c.ports.chain.as_ref(),
            merchants: c.ports.merchants.as_ref(),
            settings: &c.settings.chain,
            crypto: c.ports.crypto.as_ref(),
            clock: self.context.clock,
            claim: self.context.claim.clone(),
        }
    }

    /// Diagnostics of checkouts and payments.
    pub fn diagnostics(&self) -> Diagnostics<'a> {
        let c = self.cases;
        Diagnostics {
            invoices: c.ports.invoices.as_ref(),
            follower: c.ports.follower.as_ref(),
            chain: c.ports.chain.as_ref(),
            clock: self.context.clock,
        }
    }

    /// A merchant's readiness.
    pub fn merchant_checks(&self) -> MerchantChecks<'a> {
        let c = self.cases;
        MerchantChecks {
            chain: c.ports.chain.as_ref(),
            webhooks: c.ports.webhooks.as_ref(),
            emails: c.ports.emails.as_ref(),
            keys: c.ports.keys.as_ref(),
            clock: self.context.clock,
            clock_skew_allowed: c.settings.chain.clock_skew,
        }
    }
}
