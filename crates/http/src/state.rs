//! What handlers share: the ports, configuration, and the request id source.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use stablepay_domain::api_key::Principal;
use stablepay_domain::clock::{Clock, time_in_mode};
use stablepay_domain::ids::random_base62;
use stablepay_domain::invoice::service::Invoices;
use stablepay_domain::merchant::ChainSettings;
use stablepay_domain::payment_link::ports::PaymentLinkStore;
use stablepay_domain::payment_link::service::PaymentLinks;
use stablepay_domain::ports::{
    ApiKeyStore, Chain, Crypto, EventStore, FollowerStore, Health, IdempotencyStore, InvoiceStore, MerchantStore,
    RateLimiter,
};
use stablepay_domain::webhook::ports::{SecretBox, WebhookStore};
use stablepay_domain::webhook::service::{WebhookSettings, Webhooks};
use stablepay_domain::{Error, Scope};

/// The application state handed to every handler.
pub struct AppState {
    pub keys: Arc<dyn ApiKeyStore>,
    pub crypto: Arc<dyn Crypto>,
    pub clock: Arc<dyn Clock>,
    pub health: Arc<dyn Health>,
    pub events: Arc<dyn EventStore>,
    pub invoices: Arc<dyn InvoiceStore>,
    pub idempotency: Arc<dyn IdempotencyStore>,
    pub chain: Arc<dyn Chain>,
    /// The background worker of this process, as readiness and metrics show it.
    pub worker: Arc<crate::status::WorkerStatus>,
    /// What one client may make this process hold (shared by every HTTP worker).
    pub limits: Arc<RequestLimits>,
    /// The follower's store (unattributed transfers).
    pub watch: Arc<dyn FollowerStore>,
    /// Rate-limit budgets (in this process or shared through Redis).
    pub limiter: Arc<dyn RateLimiter>,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: crate::ratelimit::TrustedProxies,
    /// Webhook endpoints, deliveries and incidents.
    pub webhooks: Arc<dyn WebhookStore>,
    /// Seals endpoints' signing secrets at rest.
    pub secret_box: Arc<dyn SecretBox>,
    pub webhook_settings: WebhookSettings,
    /// Payment links and the invoices created through them.
    pub links: Arc<dyn PaymentLinkStore>,
    /// Merchants (a public submission reads the link's merchant).
    pub merchants: Arc<dyn MerchantStore>,
    /// Renders invoice PDFs.
    pub renderer: Arc<dyn stablepay_domain::ports::InvoiceRenderer>,
    /// The email outbox (the API queues; the worker delivers through `mailer`).
    pub emails: Arc<dyn stablepay_domain::email::ports::EmailStore>,
    pub mailer: Arc<dyn stablepay_domain::email::ports::Mailer>,
    /// The settlement chain and token contracts new checkouts expect.
    pub chain_settings: ChainSettings,
    /// Base URL of this service as customers reach it (checkoutUrl, hostedInvoiceUrl).
    pub public_base_url: String,
}

impl AppState {
    /// The billing use cases over this state's ports (reading the clock from the store).
    pub fn billing(&self) -> Invoices<'_> {
        self.billing_with(self.clock.as_ref())
    }

    /// The billing use cases with a given clock (a request's own, see [`RequestClock`]).
    pub fn billing_with<'a>(&'a self, clock: &'a dyn Clock) -> Invoices<'a> {
        Invoices {
            store: self.invoices.as_ref(),
            crypto: self.crypto.as_ref(),
            clock,
            chain: self.chain.as_ref(),
            settings: &self.chain_settings,
        }
    }

    /// The webhook use cases over this state's ports.
    pub fn webhooks(&self) -> Webhooks<'_> {
        Webhooks {
            store: self.webhooks.as_ref(),
            crypto: self.crypto.as_ref(),
            secrets: self.secret_box.as_ref(),
            clock: self.clock.as_ref(),
            settings: &self.webhook_settings,
        }
    }

    /// The payment-link use cases with a given clock (a request's own, or the store's).
    pub fn links_with<'a>(&'a self, clock: &'a dyn Clock) -> PaymentLinks<'a> {
        PaymentLinks {
            store: self.links.as_ref(),
            merchants: self.merchants.as_ref(),
            crypto: self.crypto.as_ref(),
            clock,
            chain: &self.chain_settings,
        }
    }

    /// The email use cases with a given clock.
    pub fn emails_with<'a>(&'a self, clock: &'a dyn Clock) -> stablepay_domain::email::service::Emails<'a> {
        stablepay_domain::email::service::Emails {
            invoices: self.invoices.as_ref(),
            store: self.emails.as_ref(),
            merchants: self.merchants.as_ref(),
            mailer: self.mailer.as_ref(),
            renderer: self.renderer.as_ref(),
            crypto: self.crypto.as_ref(),
            clock,
            public_base_url: &self.public_base_url,
        }
    }

    /// The clock of a request: its merchant's test-clock offset came with the key lookup.
    pub fn clock_for(&self, principal: &Principal) -> RequestClock {
        RequestClock {
            scope: principal.scope.clone(),
            offset_seconds: principal.test_clock_offset_seconds,
            fallback: self.clock.clone(),
        }
    }

    /// A new request id: `req_` + 22 base62 characters.
    pub fn new_request_id(&self) -> String {
        format!("req_{}", random_base62(self.crypto.as_ref(), 22))
    }
}

/// What clients may make the service hold: how long a body may take to arrive, and how much
/// memory the bodies being read may hold together.
#[derive(Debug)]
pub struct RequestLimits {
    pub body_timeout: std::time::Duration,
    /// One permit per KiB of body buffer, for every body being read in this process.
    pub body_budget: Arc<tokio::sync::Semaphore>,
}

impl RequestLimits {
    pub fn new(body_timeout: std::time::Duration, body_memory_mib: usize) -> Self {
        Self { body_timeout, body_budget: Arc::new(tokio::sync::Semaphore::new(body_memory_mib.saturating_mul(1024))) }
    }
}

impl Default for RequestLimits {
    /// 10 seconds per body, 256 MiB of bodies at once.
    fn default() -> Self {
        Self::new(std::time::Duration::from_secs(10), 256)
    }
}

/// A request's clock: the domain's time of the request's scope, from the test-clock offset read
/// with the request's key. Other scopes fall back to the store's clock.
#[derive(Clone)]
pub struct RequestClock {
    scope: Scope,
    offset_seconds: i64,
    fallback: Arc<dyn Clock>,
}

#[async_trait]
impl Clock for RequestClock {
    async fn now(&self, scope: &Scope) -> Result<DateTime<Utc>, Error> {
        if *scope != self.scope {
            return self.fallback.now(scope).await;
        }
        time_in_mode(Utc::now(), scope.mode, self.offset_seconds)
    }

    fn system_now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}
