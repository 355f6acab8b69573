//! Wiring: the adapters behind the domain's ports.

use std::sync::Arc;

use actix_web::web;
use stablepay_chain::{ModalChain, RpcSettings};
use stablepay_domain::merchant::ChainSettings;
use stablepay_domain::ports::{ApiKeyStore, RateLimiter};
use stablepay_domain::url::PublicPages;
use stablepay_domain::use_cases::{Ports, Settings, UseCases};
use stablepay_domain::webhook::model::RetrySchedule;
use stablepay_domain::webhook::service::WebhookSettings;
use stablepay_http::state::AppState;
use stablepay_http::status::WorkerStatus;
use stablepay_postgres::{PgClock, PgStore, PoolSettings};
use stablepay_ratelimit::{FailOpen, LocalLimiter, RedisLimiter};
use stablepay_webhooks::{AesSecretBox, HttpSender};

use crate::config::Config;
use crate::crypto::{Argon2Passwords, RingCrypto};

/// Every adapter, built once per process.
#[derive(Clone)]
pub struct Adapters {
    pub store: PgStore,
    pub crypto: Arc<RingCrypto>,
    /// Password hashes (Argon2id).
    pub passwords: Arc<Argon2Passwords>,
    pub chain: Arc<ModalChain>,
    pub chain_settings: ChainSettings,
    /// The gasless relayer (off without `STABLEPAY_RELAYER_KEY`).
    pub relayer: Arc<stablepay_chain::EvmRelayer>,
    /// Its limits.
    pub relay_settings: stablepay_domain::relay::model::RelaySettings,
    pub sender: Arc<HttpSender>,
    pub secret_box: Arc<AesSecretBox>,
    pub webhook_settings: WebhookSettings,
    /// How long a claimed delivery stays claimed: an attempt's time limit and time to record it.
    pub webhook_lease: std::time::Duration,
    /// Rate-limit budgets, one for the whole process (or shared through Redis).
    pub limiter: Arc<dyn RateLimiter>,
    /// Invoice PDFs (fonts parsed once).
    pub renderer: Arc<stablepay_pdf::KrillaRenderer>,
    /// SMTP, or `.eml` files.
    pub mailer: Arc<stablepay_email::LettreMailer>,
    /// How long a claimed email stays claimed: an attempt's time limit and the store's round
    /// trips around it (load, clock, record), each bounded by the pool's timeout.
    pub email_lease: std::time::Duration,
    /// Base URL of hosted pages (links in emails).
    pub public_base_url: String,
    /// The block explorer live transactions link to.
    pub explorer_url: String,
    /// How long an uncommitted idempotency claim blocks its retries.
    pub idempotency: stablepay_domain::idempotency::IdempotencySettings,
    /// How long dashboard sessions last, and who may sign up.
    pub accounts: stablepay_domain::account::service::AccountSettings,
    /// How long events, deliveries and finished emails are kept.
    pub retention: stablepay_domain::retention::RetentionSettings,
    /// Authenticated keys, shared by the HTTP workers; emptied by `NOTIFY` on key changes.
    pub key_cache: Arc<stablepay_postgres::KeyCache>,
    /// Signals that a checkout may have changed: queued by every pool's saves, sent by
    /// `send_checkout_signals` and received by a `LISTEN` connection while the process runs.
    pub checkout_signals: stablepay_postgres::CheckoutSignalHub,
}

/// A connection pool of `size` to the configured database.
fn pool(config: &Config, size: usize) -> anyhow_lite::Result<PgStore> {
    PgStore::connect(&config.database_url, &PoolSettings { max_size: size, timeout: config.db_timeout })
        .map_err(|e| anyhow_lite::msg(format!("database pool: {e}")))
}

/// The chain settings of `config`, with the nonces' key.
fn chain_settings(config: &Config) -> anyhow_lite::Result<ChainSettings> {
    let c = &config.chain;
    Ok(ChainSettings {
        chain_id: c.chain_id,
        usdc: c.usdc.clone(),
        usdt: c.usdt.clone(),
        not_found_after: chrono::Duration::from_std(c.not_found_after)
            .map_err(|_| anyhow_lite::msg("STABLEPAY_CHAIN_NOT_FOUND_SECONDS: out of range"))?,
        clock_skew: chrono::Duration::from_std(c.clock_skew)
            .map_err(|_| anyhow_lite::msg("STABLEPAY_CHAIN_CLOCK_SKEW_SECONDS: out of range"))?,
        recheck_after: chrono::Duration::from_std(c.recheck_after)
            .map_err(|_| anyhow_lite::msg("STABLEPAY_CHAIN_RECHECK_SECONDS: out of range"))?,
        nonce_key: nonce_key(config.webhooks.secret_key.as_ref()),
    })
}

/// The key authorization nonces are derived with: from the operator's secret key when set, else
/// random for this process (nonces are stored with their attempts and looked up, never
/// recomputed: the key only makes them unpredictable).
fn nonce_key(secret: Option<&[u8; 32]>) -> stablepay_domain::merchant::model::NonceKey {
    use stablepay_domain::ports::Crypto;
    let crypto = RingCrypto::new();
    let key = match secret {
        Some(k) => crypto.hmac_sha256(k, b"stablepay/eip3009-nonce-key/v1"),
        None => {
            let mut k = [0u8; 32];
            crypto.fill_random(&mut k);
            k
        }
    };
    stablepay_domain::merchant::model::NonceKey(key.to_vec())
}

/// The gasless relayer of `config` over `chain`'s endpoints (off without a key), and its limits.
fn relayer(
    config: &Config,
    chain: &ModalChain,
) -> anyhow_lite::Result<(stablepay_chain::EvmRelayer, stablepay_domain::relay::model::RelaySettings)> {
    let r = &config.relayer;
    let key = match &r.key {
        Some(text) => Some(
            stablepay_chain::RelayerKey::parse(text)
                .map_err(|e| anyhow_lite::msg(format!("STABLEPAY_RELAYER_KEY: {e}")))?,
        ),
        None => None,
    };
    let settings = stablepay_domain::relay::model::RelaySettings {
        daily_gas_limit: r.daily_gas_limit,
        max_fee_per_gas: u128::from(r.max_fee_gwei) * stablepay_domain::relay::model::GWEI,
        bump_after: chrono::Duration::from_std(r.bump_after)
            .map_err(|_| anyhow_lite::msg("STABLEPAY_RELAYER_BUMP_SECONDS: out of range"))?,
    };
    Ok((chain.relayer(key, config.chain.usdc.clone(), config.chain.chain_id), settings))
}

impl Adapters {
    pub fn new(config: &Config) -> anyhow_lite::Result<Self> {
        let checkout_signals = stablepay_postgres::CheckoutSignalHub::new();
        let store = checkout_signals.attach(pool(config, config.db_pool_size)?);
        let c = &config.chain;
        let rpc = RpcSettings {
            urls: c.rpc_urls.clone(),
            chain_id: c.chain_id,
            confirmations: c.confirmations,
            request_timeout: c.request_timeout,
            chain_id_recheck: c.chain_id_recheck,
        };
        let chain = ModalChain::new(rpc).map_err(|e| anyhow_lite::msg(format!("STABLEPAY_CHAIN_RPC_URLS: {e}")))?;
        let chain_settings = chain_settings(config)?;
        let (relayer, relay_settings) = relayer(config, &chain)?;
        let w = &config.webhooks;
        let schedule = RetrySchedule::new(
            w.retry_schedule.iter().map(|d| chrono::Duration::from_std(*d).unwrap_or(chrono::Duration::MAX)).collect(),
        )
        .ok_or_else(|| anyhow_lite::msg("STABLEPAY_WEBHOOK_RETRY_SCHEDULE: empty"))?;
        let sender = HttpSender::new(w.allow_private, w.timeout).map_err(anyhow_lite::msg)?;
        let kept = &stablepay_domain::ratelimit::SECRET_CHECKS;
        let limiter: Arc<dyn RateLimiter> = match &config.redis_url {
            Some(url) => Arc::new(
                FailOpen::new(RedisLimiter::new(url, &config.redis_prefix).map_err(anyhow_lite::msg)?).keeping(kept),
            ),
            None => Arc::new(FailOpen::new(LocalLimiter::new()).keeping(kept)),
        };
        let renderer =
            stablepay_pdf::KrillaRenderer::new().map_err(|e| anyhow_lite::msg(format!("PDF renderer: {e}")))?;
        let e = &config.email;
        // Message-IDs name the host the hosted pages are served from.
        let host = stablepay_domain::url::HttpUrl::parse(&config.public_base_url)
            .map(|u| u.host().trim_matches(['[', ']']).to_owned())
            .unwrap_or_else(|_| "stablepay.invalid".to_owned());
        let mailer = stablepay_email::LettreMailer::new(
            e.smtp_url.as_deref(),
            &e.from,
            std::path::PathBuf::from(&e.folder),
            (e.timeout, &host),
        )
        .map_err(anyhow_lite::msg)?;
        Ok(Self {
            key_cache: Arc::new(stablepay_postgres::KeyCache::default()),
            checkout_signals,
            renderer: Arc::new(renderer),
            mailer: Arc::new(mailer),
            email_lease: e.timeout + config.db_timeout * 4 + std::time::Duration::from_secs(5),
            public_base_url: config.public_base_url.clone(),
            explorer_url: config.explorer_url.clone(),
            idempotency: stablepay_domain::idempotency::IdempotencySettings {
                lease_seconds: config.idempotency_lease_seconds,
            },
            accounts: stablepay_domain::account::service::AccountSettings {
                sessions: config.sessions,
                signup: config.signup,
                self_activation: config.self_activation,
            },
            retention: config.retention,
            limiter,
            sender: Arc::new(sender),
            secret_box: Arc::new(AesSecretBox::new(w.secret_key)),
            webhook_settings: WebhookSettings { schedule, allow_private: w.allow_private },
            webhook_lease: w.timeout + std::time::Duration::from_secs(5),
            crypto: Arc::new(RingCrypto::new()),
            passwords: Arc::new(Argon2Passwords::new().map_err(|e| anyhow_lite::msg(e.to_string()))?),
            chain: Arc::new(chain),
            chain_settings,
            relayer: Arc::new(relayer),
            relay_settings,
            store,
        })
    }

    /// The ports of this process over `store` (the worker's pool, or an HTTP worker's), with
    /// `keys` in front of the key store.
    fn ports(&self, store: &Arc<PgStore>, keys: Arc<dyn ApiKeyStore>) -> Ports {
        Ports {
            merchants: store.clone(),
            keys,
            invoices: store.clone(),
            renderer: self.renderer.clone(),
            signals: Arc::new(self.checkout_signals.clone()),
            chain: self.chain.clone(),
            follower: store.clone(),
            links: store.clone(),
            webhooks: store.clone(),
            secrets: self.secret_box.clone(),
            emails: store.clone(),
            mailer: self.mailer.clone(),
            events: store.clone(),
            idempotency: store.clone(),
            limiter: self.limiter.clone(),
            health: store.clone(),
            telemetry: store.clone(),
            exports: store.clone(),
            reconciliation: store.clone(),
            reconciliation_runs: store.clone(),
            statements: store.clone(),
            relays: store.clone(),
            relayer: self.relayer.clone(),
            accounts: store.clone(),
            passwords: self.passwords.clone(),
            totp_sealer: self.secret_box.clone(),
            clock: Arc::new(PgClock::new((**store).clone())),
            due_times: store.clone(),
            crypto: self.crypto.clone(),
        }
    }

    fn settings(&self) -> Settings {
        Settings {
            chain: self.chain_settings.clone(),
            webhooks: self.webhook_settings.clone(),
            pages: PublicPages::new(self.public_base_url.clone()).with_explorer(self.explorer_url.clone()),
            idempotency: self.idempotency,
            accounts: self.accounts,
            retention: self.retention,
            relay: self.relay_settings.clone(),
        }
    }

    /// Every use case over the worker's pool.
    pub fn use_cases(&self) -> UseCases {
        let store = Arc::new(self.store.clone());
        UseCases::new(self.ports(&store, store.clone()), self.settings())
    }

    /// The states of the HTTP workers, built before the server starts (a bad setting stops
    /// start-up). Each worker gets its own connection pool (its share of
    /// `STABLEPAY_DB_POOL_SIZE`): a connection's driver runs on the thread that opened it, so a
    /// pool shared by workers would cross threads twice on every query.
    pub fn http_states(
        &self,
        config: &Config,
        worker: &Arc<WorkerStatus>,
    ) -> anyhow_lite::Result<(Vec<web::Data<AppState>>, Vec<PgStore>)> {
        let share = (config.db_pool_size / config.http_workers.max(1)).max(1);
        let mut pools = Vec::new();
        let states = (0..config.http_workers.max(1))
            .map(|_| {
                let store = self.checkout_signals.attach(pool(config, share)?).with_key_cache(self.key_cache.clone());
                pools.push(store.clone());
                let keys = Arc::new(stablepay_postgres::CachedKeyStore::new(store.clone(), self.key_cache.clone()));
                let ports = self.ports(&Arc::new(store), keys);
                Ok(web::Data::new(AppState {
                    use_cases: UseCases::new(ports, self.settings()),
                    worker: worker.clone(),
                    trusted_proxies: config.trusted_proxies.clone(),
                }))
            })
            .collect::<anyhow_lite::Result<Vec<_>>>()?;
        Ok((states, pools))
    }
}

/// A minimal error type for the binary's top level: a message for the operator.
pub mod anyhow_lite {
    pub type Result<T> = std::result::Result<T, Error>;

    #[derive(Debug)]
    pub struct Error(pub String);

    impl std::fmt::Display for Error {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }

    pub fn msg(text: impl Into<String>) -> Error {
        Error(text.into())
    }
}
