//! Configuration: built-in defaults, then an optional TOML file, then environment variables.
//! A bad value stops start-up with a message naming it.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::url::{HttpUrl, Mask, masked};

pub const DEFAULT_DATABASE_URL: &str = "postgres://postgres@127.0.0.1:5432/postgres";

#[derive(Clone, Debug)]
pub struct Config {
    pub database_url: String,
    pub bind: SocketAddr,
    /// Base URL customers reach this service at (checkoutUrl, hostedInvoiceUrl).
    pub public_base_url: String,
    /// Whether `public_base_url` was configured; if not it follows the bound address.
    pub public_base_url_explicit: bool,
    /// The block explorer live transactions link to (its `/tx/{hash}`).
    pub explorer_url: String,
    pub db_pool_size: usize,
    pub db_timeout: Duration,
    pub http_workers: usize,
    /// How often the worker looks for due work.
    pub worker_interval: Duration,
    /// On SIGTERM or SIGINT: how long in-flight requests and the worker's current batch may
    /// take before the process exits anyway.
    pub shutdown_grace: Duration,
    /// Where `/metrics` is served (Prometheus text); `None` when turned off.
    pub metrics_bind: Option<SocketAddr>,
    /// How long a client may take to send a request body (408 after).
    pub body_timeout: Duration,
    /// Connections served at once by this process (more wait in the listen backlog).
    pub max_connections: usize,
    /// Memory that request bodies being read may hold at once, in MiB.
    pub body_memory_mib: usize,
    /// Seconds after which an idempotency claim whose work did not commit (its process died)
    /// is taken over by a retry.
    pub idempotency_lease_seconds: i64,
    /// Live verification's chain.
    pub chain: ChainConfig,
    pub webhooks: WebhookConfig,
    /// Rate limits: where budgets are shared (none: in this process) and whose forwarding
    /// headers are believed.
    pub redis_url: Option<String>,
    pub redis_prefix: String,
    pub trusted_proxies: stablepay_http::client::TrustedProxies,
    pub email: EmailConfig,
    /// How long dashboard sessions last.
    pub sessions: stablepay_domain::account::SessionSettings,
    /// Who may create an account.
    pub signup: stablepay_domain::account::link::SignupMode,
    /// Whether an owner's live activation request activates at once.
    pub self_activation: bool,
    /// How long events, deliveries and finished emails are kept.
    pub retention: stablepay_domain::retention::RetentionSettings,
    /// The gasless relayer (off without a key).
    pub relayer: RelayerConfig,
}

/// The gasless relayer: its key (a secret: never printed) and its limits.
#[derive(Clone)]
pub struct RelayerConfig {
    /// The relayer account's private key, in hex, checked to be one; `None`: no relaying.
    pub key: Option<String>,
    /// Gas the relayer may spend per UTC day.
    pub daily_gas_limit: u64,
    /// The highest fee per gas it offers, in gwei.
    pub max_fee_gwei: u64,
    /// How long a sent transaction waits before it is replaced with higher fees.
    pub bump_after: Duration,
}

impl std::fmt::Debug for RelayerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RelayerConfig")
            .field("key", &self.key.as_ref().map(|_| "(set)"))
            .field("daily_gas_limit", &self.daily_gas_limit)
            .field("max_fee_gwei", &self.max_fee_gwei)
            .field("bump_after", &self.bump_after)
            .finish()
    }
}

/// Email delivery.
#[derive(Clone)]
pub struct EmailConfig {
    /// `smtp://`, `smtp://...?tls=required` or `smtps://` (with `user:password@` for auth);
    /// none: `.eml` files in `folder`.
    pub smtp_url: Option<String>,
    /// The sender's address (the merchant's name is the display name).
    pub from: String,
    /// Where `.eml` files go without an SMTP URL.
    pub folder: String,
    /// The time limit of one SMTP attempt.
    pub timeout: Duration,
}

impl std::fmt::Debug for EmailConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The SMTP URL may hold a password.
        f.debug_struct("EmailConfig")
            .field("smtp_url", &self.smtp_url.as_ref().map(|_| "(set)"))
            .field("from", &self.from)
            .field("folder", &self.folder)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Webhook delivery.
#[derive(Clone)]
pub struct WebhookConfig {
    /// The key that seals signing secrets at rest (none: endpoints cannot be created).
    pub secret_key: Option<[u8; 32]>,
    /// Waits between automatic attempts (the attempt after the last wait that fails is final).
    pub retry_schedule: Vec<Duration>,
    /// Deliver to loopback and private addresses too.
    pub allow_private: bool,
    /// The time limit of one attempt (the spec's 10 s; tests shorten it).
    pub timeout: Duration,
}

impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookConfig")
            .field("secret_key", &self.secret_key.map(|_| "(set)"))
            .field("retry_schedule", &self.retry_schedule)
            .field("allow_private", &self.allow_private)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// A duration such as `500ms`, `30s`, `5m`, `2h` or `1d`.
fn duration(text: &str) -> Option<Duration> {
    let text = text.trim();
    let split = text.find(|c: char| !c.is_ascii_digit())?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number.parse().ok()?;
    let d = match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n.checked_mul(60)?),
        "h" => Duration::from_secs(n.checked_mul(3600)?),
        "d" => Duration::from_secs(n.checked_mul(86_400)?),
        _ => return None,
    };
    (d > Duration::ZERO && d <= Duration::from_secs(7 * 86_400)).then_some(d)
}

/// The live chain: where to ask, which chain and tokens to expect, how often to look.
#[derive(Clone, Debug)]
pub struct ChainConfig {
    /// JSON-RPC endpoints, tried in order (none: live payments wait with a diagnostic).
    pub rpc_urls: Vec<String>,
    pub chain_id: u64,
    /// Depth that counts as final where a node has no `finalized` tag.
    pub confirmations: u64,
    pub usdc: WalletAddress,
    pub usdt: WalletAddress,
    /// How often the worker verifies payments in flight and follows transfers.
    pub poll: Duration,
    /// How long a reported hash may stay unknown to the chain before it fails as not found.
    pub not_found_after: Duration,
    /// The longest wait for one RPC answer.
    pub request_timeout: Duration,
    /// How often each endpoint's chain id is asked again (an endpoint may be repointed).
    pub chain_id_recheck: Duration,
    /// How far the service's clock may run ahead of the chain's, for attribution by evidence
    /// the transfer carries.
    pub clock_skew: Duration,
    /// How long after a range of final blocks was first read it is read once more.
    pub recheck_after: Duration,
}

/// The TOML file's keys (all optional; same names as the environment without the prefix,
/// lower-case).
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct FileConfig {
    database_url: Option<String>,
    bind: Option<String>,
    public_base_url: Option<String>,
    explorer_url: Option<String>,
    db_pool_size: Option<String>,
    db_timeout_ms: Option<String>,
    http_workers: Option<String>,
    worker_interval_ms: Option<String>,
    shutdown_grace: Option<String>,
    metrics_bind: Option<String>,
    body_timeout_ms: Option<String>,
    max_connections: Option<String>,
    body_memory_mib: Option<String>,
    idempotency_lease_seconds: Option<String>,
    chain_rpc_urls: Option<String>,
    chain_id: Option<String>,
    chain_confirmations: Option<String>,
    usdc_contract: Option<String>,
    usdt_contract: Option<String>,
    chain_poll_ms: Option<String>,
    chain_not_found_seconds: Option<String>,
    chain_timeout_ms: Option<String>,
    chain_id_recheck_seconds: Option<String>,
    chain_clock_skew_seconds: Option<String>,
    chain_recheck_seconds: Option<String>,
    secret_key: Option<String>,
    webhook_retry_schedule: Option<String>,
    webhook_allow_private: Option<String>,
    webhook_timeout_ms: Option<String>,
    redis_url: Option<String>,
    redis_prefix: Option<String>,
    trusted_proxies: Option<String>,
    smtp_url: Option<String>,
    email_from: Option<String>,
    email_dir: Option<String>,
    smtp_timeout_ms: Option<String>,
    session_idle_minutes: Option<String>,
    session_absolute_hours: Option<String>,
    signup: Option<String>,
    self_activation: Option<String>,
    retention_events_days: Option<String>,
    retention_emails_days: Option<String>,
    retention_export_files_days: Option<String>,
    relayer_key: Option<String>,
    relayer_daily_gas_limit: Option<String>,
    relayer_max_fee_gwei: Option<String>,
    relayer_bump_seconds: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("configuration file {path}: {message}")]
    File { path: String, message: String },
    #[error("{name}: {message} (got {value:?})")]
    Value { name: &'static str, value: String, message: String },
}

/// A refused value; what is shown of it is what [`printable`] lets through.
fn bad(name: &'static str, value: &str, message: &str) -> ConfigError {
    ConfigError::Value { name, value: printable(name, value), message: message.to_owned() }
}

/// Where settings come from: the environment first, then the file, then the default.
struct Source<'a, E: Fn(&str) -> Option<String>> {
    env: &'a E,
    file: FileConfig,
}

impl<E: Fn(&str) -> Option<String>> Source<'_, E> {
    fn pick(&self, name: &str, file_value: &Option<String>, default: &str) -> String {
        (self.env)(name).or_else(|| file_value.clone()).unwrap_or_else(|| default.to_owned())
    }

    /// An integer from `min` to `max`.
    fn number(
        &self,
        name: &'static str,
        file_value: &Option<String>,
        default: &str,
        (min, max): (u64, u64),
    ) -> Result<u64, ConfigError> {
        let text = self.pick(name, file_value, default);
        text.parse::<u64>()
            .ok()
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| bad(name, &text, &format!("must be an integer from {min} to {max}")))
    }

    /// A number of milliseconds from `min` to `max`.
    fn millis(
        &self,
        name: &'static str,
        file_value: &Option<String>,
        default: &str,
        range: (u64, u64),
    ) -> Result<Duration, ConfigError> {
        self.number(name, file_value, default, range).map(Duration::from_millis)
    }

    fn size(
        &self,
        name: &'static str,
        file_value: &Option<String>,
        default: &str,
        range: (u64, u64),
    ) -> Result<usize, ConfigError> {
        let n = self.number(name, file_value, default, range)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    fn address(
        &self,
        name: &'static str,
        file_value: &Option<String>,
        default: &str,
    ) -> Result<SocketAddr, ConfigError> {
        let text = self.pick(name, file_value, default);
        text.parse::<SocketAddr>().map_err(|_| bad(name, &text, "must be HOST:PORT with an IP address"))
    }
}

impl Config {
    /// Loads the configuration. `file` (or `STABLEPAY_CONFIG`) names an optional TOML file;
    /// `env` reads a variable (the process environment in production, a map in tests).
    pub fn load(file: Option<&Path>, env: impl Fn(&str) -> Option<String>) -> Result<Self, ConfigError> {
        let file_path = file.map(|p| p.display().to_string()).or_else(|| env("STABLEPAY_CONFIG"));
        let file = match &file_path {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .map_err(|e| ConfigError::File { path: path.clone(), message: e.to_string() })?;
                toml::from_str::<FileConfig>(&text)
                    .map_err(|e| ConfigError::File { path: path.clone(), message: e.to_string() })?
            }
            None => FileConfig::default(),
        };
        let src = Source { env: &env, file };
        let s = server(&src)?;
        let chain = chain(&src)?;
        let mut webhooks = webhooks(&src)?;
        let (redis_url, redis_prefix) = redis(&src)?;
        let proxies_text = src.pick("STABLEPAY_TRUSTED_PROXIES", &src.file.trusted_proxies, "");
        let trusted_proxies = stablepay_http::client::TrustedProxies::parse(&proxies_text)
            .map_err(|m| bad("STABLEPAY_TRUSTED_PROXIES", &proxies_text, &m))?;
        webhooks.timeout =
            src.millis("STABLEPAY_WEBHOOK_TIMEOUT_MS", &src.file.webhook_timeout_ms, "10000", (100, 10_000))?;
        let email = email(&src)?;
        let sessions = sessions(&src)?;
        let signup_text = src.pick("STABLEPAY_SIGNUP", &src.file.signup, "invite");
        let signup = stablepay_domain::account::link::SignupMode::parse(&signup_text)
            .ok_or_else(|| bad("STABLEPAY_SIGNUP", &signup_text, "must be closed, invite or open"))?;
        let self_text = src.pick("STABLEPAY_SELF_ACTIVATION", &src.file.self_activation, "false");
        let self_activation = match self_text.as_str() {
            "true" | "1" => true,
            "false" | "0" => false,
            _ => return Err(bad("STABLEPAY_SELF_ACTIVATION", &self_text, "must be true or false")),
        };
        Ok(Self {
            database_url: s.database_url,
            bind: s.bind,
            public_base_url: s.public_base_url,
            public_base_url_explicit: s.public_base_url_explicit,
            explorer_url: s.explorer_url,
            db_pool_size: s.db_pool_size,
            db_timeout: s.db_timeout,
            http_workers: s.http_workers,
            worker_interval: s.worker_interval,
            shutdown_grace: s.shutdown_grace,
            metrics_bind: s.metrics_bind,
            body_timeout: s.body_timeout,
            max_connections: s.max_connections,
            body_memory_mib: s.body_memory_mib,
            idempotency_lease_seconds: s.idempotency_lease_seconds,
            webhooks,
            redis_url,
            redis_prefix,
            trusted_proxies,
            email,
            sessions,
            signup,
            self_activation,
            retention: retention(&src)?,
            relayer: relayer(&src, &chain)?,
            chain,
        })
    }
}

/// The relayer's key (it needs the chain's endpoints to send through) and limits.
fn relayer<E: Fn(&str) -> Option<String>>(
    src: &Source<'_, E>,
    chain: &ChainConfig,
) -> Result<RelayerConfig, ConfigError> {
    let f = &src.file;
    let text = src.pick("STABLEPAY_RELAYER_KEY", &f.relayer_key, "");
    let key = if text.is_empty() {
        None
    } else {
        stablepay_chain::RelayerKey::parse(&text).map_err(|m| bad("STABLEPAY_RELAYER_KEY", &text, &m))?;
        if chain.rpc_urls.is_empty() {
            return Err(bad("STABLEPAY_RELAYER_KEY", &text, "needs STABLEPAY_CHAIN_RPC_URLS to send through"));
        }
        Some(text)
    };
    let limit = src.number(
        "STABLEPAY_RELAYER_DAILY_GAS_LIMIT",
        &f.relayer_daily_gas_limit,
        "10000000",
        (100_000, 10_000_000_000),
    )?;
    Ok(RelayerConfig {
        key,
        daily_gas_limit: limit,
        max_fee_gwei: src.number("STABLEPAY_RELAYER_MAX_FEE_GWEI", &f.relayer_max_fee_gwei, "1000", (1, 1_000_000))?,
        bump_after: Duration::from_secs(src.number(
            "STABLEPAY_RELAYER_BUMP_SECONDS",
            &f.relayer_bump_seconds,
            "30",
            (1, 3_600),
        )?),
    })
}

/// How long the records that only explain the past are kept (0: forever).
fn retention<E: Fn(&str) -> Option<String>>(
    src: &Source<'_, E>,
) -> Result<stablepay_domain::retention::RetentionSettings, ConfigError> {
    use stablepay_domain::retention::model::MAX_RETENTION_DAYS;
    let (f, max) = (&src.file, u64::from(MAX_RETENTION_DAYS));
    let events = src.number("STABLEPAY_RETENTION_EVENTS_DAYS", &f.retention_events_days, "90", (0, max))?;
    let emails = src.number("STABLEPAY_RETENTION_EMAILS_DAYS", &f.retention_emails_days, "90", (0, max))?;
    // A file is never kept forever: at least a day.
    let files = src.number("STABLEPAY_RETENTION_EXPORT_FILES_DAYS", &f.retention_export_files_days, "7", (1, max))?;
    Ok(stablepay_domain::retention::RetentionSettings {
        events_days: u32::try_from(events).unwrap_or(MAX_RETENTION_DAYS),
        emails_days: u32::try_from(emails).unwrap_or(MAX_RETENTION_DAYS),
        export_files_days: u32::try_from(files).unwrap_or(MAX_RETENTION_DAYS),
    })
}

/// How long dashboard sessions last: idle minutes, and hours after the login.
fn sessions<E: Fn(&str) -> Option<String>>(
    src: &Source<'_, E>,
) -> Result<stablepay_domain::account::SessionSettings, ConfigError> {
    let f = &src.file;
    let idle = src.number("STABLEPAY_SESSION_IDLE_MINUTES", &f.session_idle_minutes, "720", (5, 10_080))?;
    let absolute = src.number("STABLEPAY_SESSION_ABSOLUTE_HOURS", &f.session_absolute_hours, "168", (1, 2160))?;
    Ok(stablepay_domain::account::SessionSettings {
        idle: chrono::Duration::minutes(i64::try_from(idle).unwrap_or(720)),
        absolute: chrono::Duration::hours(i64::try_from(absolute).unwrap_or(168)),
    })
}

/// The database, the HTTP server and the worker.
struct Server {
    database_url: String,
    bind: SocketAddr,
    public_base_url: String,
    public_base_url_explicit: bool,
    explorer_url: String,
    db_pool_size: usize,
    db_timeout: Duration,
    http_workers: usize,
    worker_interval: Duration,
    shutdown_grace: Duration,
    metrics_bind: Option<SocketAddr>,
    body_timeout: Duration,
    max_connections: usize,
    body_memory_mib: usize,
    idempotency_lease_seconds: i64,
}

/// Reads the settings of the database, the HTTP server and the worker.
fn server<E: Fn(&str) -> Option<String>>(src: &Source<'_, E>) -> Result<Server, ConfigError> {
    let f = &src.file;
    let database_url = src.pick("DATABASE_URL", &f.database_url, DEFAULT_DATABASE_URL);
    if !(database_url.starts_with("postgres://") || database_url.starts_with("postgresql://")) {
        return Err(bad("DATABASE_URL", &database_url, "must be a postgres:// URL"));
    }
    stablepay_postgres::check_url(&database_url).map_err(|e| bad("DATABASE_URL", &database_url, &e))?;
    let bind = src.address("STABLEPAY_BIND", &f.bind, "127.0.0.1:8080")?;
    let default_base = format!("http://{bind}");
    let public_base_url_explicit = (src.env)("STABLEPAY_PUBLIC_BASE_URL").is_some() || f.public_base_url.is_some();
    let base = src.pick("STABLEPAY_PUBLIC_BASE_URL", &f.public_base_url, &default_base);
    let parsed = HttpUrl::parse(&base).map_err(|e| bad("STABLEPAY_PUBLIC_BASE_URL", &base, &e.to_string()))?;
    let explorer = src.pick("STABLEPAY_EXPLORER_URL", &f.explorer_url, stablepay_domain::url::DEFAULT_EXPLORER);
    let explorer_url = HttpUrl::parse(&explorer)
        .map_err(|e| bad("STABLEPAY_EXPLORER_URL", &explorer, &e.to_string()))?
        .as_str()
        .trim_end_matches('/')
        .to_owned();
    let db_pool_size = src.size("STABLEPAY_DB_POOL_SIZE", &f.db_pool_size, "16", (1, 1000))?;
    let db_timeout = src.millis("STABLEPAY_DB_TIMEOUT_MS", &f.db_timeout_ms, "5000", (100, 600_000))?;
    let http_workers = src.size("STABLEPAY_HTTP_WORKERS", &f.http_workers, "2", (1, 256))?;
    let worker_interval = src.millis("STABLEPAY_WORKER_INTERVAL_MS", &f.worker_interval_ms, "1000", (10, 3_600_000))?;
    let metrics_text = src.pick("STABLEPAY_METRICS_BIND", &f.metrics_bind, "127.0.0.1:9464");
    let metrics_bind = match metrics_text.as_str() {
        "off" => None,
        text => Some(
            text.parse::<SocketAddr>()
                .map_err(|_| bad("STABLEPAY_METRICS_BIND", text, "must be HOST:PORT with an IP address, or off"))?,
        ),
    };
    let grace = src.number("STABLEPAY_SHUTDOWN_GRACE", &f.shutdown_grace, "10", (1, 600))?;
    Ok(Server {
        database_url,
        bind,
        public_base_url: parsed.as_str().trim_end_matches('/').to_owned(),
        public_base_url_explicit,
        explorer_url,
        db_pool_size,
        db_timeout,
        http_workers,
        worker_interval,
        shutdown_grace: Duration::from_secs(grace),
        metrics_bind,
        body_timeout: src.millis("STABLEPAY_BODY_TIMEOUT_MS", &f.body_timeout_ms, "10000", (100, 600_000))?,
        max_connections: src.size("STABLEPAY_MAX_CONNECTIONS", &f.max_connections, "1024", (1, 1_000_000))?,
        body_memory_mib: src.size("STABLEPAY_BODY_MEMORY_MIB", &f.body_memory_mib, "256", (1, 65_536))?,
        idempotency_lease_seconds: i64::try_from(src.number(
            "STABLEPAY_IDEMPOTENCY_LEASE_SECONDS",
            &f.idempotency_lease_seconds,
            "60",
            (5, 3600),
        )?)
        .unwrap_or(60),
    })
}

/// The chain endpoints, the chain and its tokens, and how it is followed.
fn chain<E: Fn(&str) -> Option<String>>(src: &Source<'_, E>) -> Result<ChainConfig, ConfigError> {
    let f = &src.file;
    let contract = |name: &'static str, file_value: &Option<String>, token: Token| {
        let text = src.pick(name, file_value, token.polygon_contract().as_str());
        WalletAddress::parse(&text).map_err(|e| bad(name, &text, &e.to_string()))
    };
    let urls_text = src.pick("STABLEPAY_CHAIN_RPC_URLS", &f.chain_rpc_urls, "");
    let rpc_urls: Vec<String> =
        urls_text.split(',').map(str::trim).filter(|u| !u.is_empty()).map(str::to_owned).collect();
    if let Some(bad_url) = rpc_urls.iter().find(|u| HttpUrl::parse(u).is_err()) {
        return Err(bad("STABLEPAY_CHAIN_RPC_URLS", bad_url, "must be comma-separated http(s) URLs"));
    }
    Ok(ChainConfig {
        rpc_urls,
        chain_id: src.number("STABLEPAY_CHAIN_ID", &f.chain_id, "137", (1, u64::from(u32::MAX)))?,
        confirmations: src.number("STABLEPAY_CHAIN_CONFIRMATIONS", &f.chain_confirmations, "128", (1, 10_000))?,
        usdc: contract("STABLEPAY_USDC_CONTRACT", &f.usdc_contract, Token::Usdc)?,
        usdt: contract("STABLEPAY_USDT_CONTRACT", &f.usdt_contract, Token::Usdt)?,
        poll: src.millis("STABLEPAY_CHAIN_POLL_MS", &f.chain_poll_ms, "500", (50, 600_000))?,
        not_found_after: Duration::from_secs(src.number(
            "STABLEPAY_CHAIN_NOT_FOUND_SECONDS",
            &f.chain_not_found_seconds,
            "600",
            (1, 86_400),
        )?),
        request_timeout: src.millis("STABLEPAY_CHAIN_TIMEOUT_MS", &f.chain_timeout_ms, "5000", (100, 120_000))?,
        chain_id_recheck: Duration::from_secs(src.number(
            "STABLEPAY_CHAIN_ID_RECHECK_SECONDS",
            &f.chain_id_recheck_seconds,
            "60",
            (1, 86_400),
        )?),
        clock_skew: Duration::from_secs(src.number(
            "STABLEPAY_CHAIN_CLOCK_SKEW_SECONDS",
            &f.chain_clock_skew_seconds,
            "30",
            (0, 3_600),
        )?),
        recheck_after: Duration::from_secs(src.number(
            "STABLEPAY_CHAIN_RECHECK_SECONDS",
            &f.chain_recheck_seconds,
            "120",
            (1, 86_400),
        )?),
    })
}

/// The key sealing signing secrets, the retry schedule and private destinations (the attempt's
/// time limit is read after the trusted proxies, in `load`).
fn webhooks<E: Fn(&str) -> Option<String>>(src: &Source<'_, E>) -> Result<WebhookConfig, ConfigError> {
    let f = &src.file;
    let key_text = src.pick("STABLEPAY_SECRET_KEY", &f.secret_key, "");
    let secret_key = if key_text.is_empty() {
        None
    } else {
        Some(stablepay_webhooks::AesSecretBox::parse_key(&key_text).map_err(|m| {
            bad("STABLEPAY_SECRET_KEY", &key_text, &format!("{m} (for example: openssl rand -base64 32)"))
        })?)
    };
    let schedule_text = src.pick("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", &f.webhook_retry_schedule, "1m,5m,30m,2h");
    let retry_schedule = schedule_text
        .split(',')
        .map(duration)
        .collect::<Option<Vec<_>>>()
        .filter(|list| !list.is_empty() && list.len() <= 20)
        .ok_or_else(|| {
            bad(
                "STABLEPAY_WEBHOOK_RETRY_SCHEDULE",
                &schedule_text,
                "must be 1 to 20 comma-separated durations such as 1m,5m,30m,2h (units ms, s, m, h, d; at most 7d each)",
            )
        })?;
    let private_text = src.pick("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", &f.webhook_allow_private, "false");
    let allow_private = match private_text.as_str() {
        "true" | "1" => true,
        "false" | "0" => false,
        _ => return Err(bad("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", &private_text, "must be true or false")),
    };
    Ok(WebhookConfig { secret_key, retry_schedule, allow_private, timeout: Duration::from_secs(10) })
}

/// Redis for shared rate-limit budgets, and the prefix of its keys.
fn redis<E: Fn(&str) -> Option<String>>(src: &Source<'_, E>) -> Result<(Option<String>, String), ConfigError> {
    let redis_text = src.pick("REDIS_URL", &src.file.redis_url, "");
    let redis_url = if redis_text.is_empty() {
        None
    } else {
        stablepay_ratelimit::RedisLimiter::new(&redis_text, "x").map_err(|m| bad("REDIS_URL", &redis_text, &m))?;
        Some(redis_text)
    };
    let redis_prefix = src.pick("STABLEPAY_REDIS_PREFIX", &src.file.redis_prefix, "stablepay");
    if redis_prefix.is_empty() || redis_prefix.len() > 100 || redis_prefix.contains(char::is_whitespace) {
        return Err(bad("STABLEPAY_REDIS_PREFIX", &redis_prefix, "must be 1-100 characters without spaces"));
    }
    Ok((redis_url, redis_prefix))
}

/// Where emails go, from whom, and an attempt's time limit (checked by building the mailer).
fn email<E: Fn(&str) -> Option<String>>(src: &Source<'_, E>) -> Result<EmailConfig, ConfigError> {
    let f = &src.file;
    let smtp_text = src.pick("STABLEPAY_SMTP_URL", &f.smtp_url, "");
    let from = src.pick("STABLEPAY_EMAIL_FROM", &f.email_from, "invoices@stablepay.localhost");
    let folder = src.pick("STABLEPAY_EMAIL_DIR", &f.email_dir, ".stablepay/outbox");
    let smtp_url = (!smtp_text.is_empty()).then_some(smtp_text);
    let timeout = src.millis("STABLEPAY_SMTP_TIMEOUT_MS", &f.smtp_timeout_ms, "10000", (100, 60_000))?;
    stablepay_email::LettreMailer::new(
        smtp_url.as_deref(),
        &from,
        std::path::PathBuf::from(&folder),
        (timeout, "localhost"),
    )
    .map_err(|m| {
        let (name, value): (&'static str, &str) = if m.starts_with("STABLEPAY_SMTP_URL") {
            ("STABLEPAY_SMTP_URL", smtp_url.as_deref().unwrap_or_default())
        } else {
            ("STABLEPAY_EMAIL_FROM", &from)
        };
        bad(name, value, &m)
    })?;
    Ok(EmailConfig { smtp_url, from, folder, timeout })
}

/// One setting the binary reads from the environment (or the same name, lower case, in the
/// TOML file, for those `Config::load` reads).
pub struct Variable {
    /// The environment variable.
    pub name: &'static str,
    /// Its default, as text ("" when it has none).
    pub default: &'static str,
    /// What may be printed or logged of its value.
    pub shown: Shown,
    /// A production deployment must set it (the built-in default only suits a laptop).
    pub production: bool,
    /// What it does.
    pub about: &'static str,
}

/// What of a setting's value may be printed or logged (by `stablepay config`, in start-up
/// errors, in logs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// All of it.
    Plain,
    /// Only whether it is set.
    Hidden,
    /// A URL, masked ([`masked`]).
    Url(Mask),
    /// Comma-separated URLs, each masked.
    Urls(Mask),
}

impl Variable {
    /// Whether the value holds, or may hold, a secret.
    pub fn secret(&self) -> bool {
        self.shown != Shown::Plain
    }
}

const fn var(name: &'static str, default: &'static str, about: &'static str) -> Variable {
    Variable { name, default, shown: Shown::Plain, production: false, about }
}

/// `value` of the setting `name` as it may be printed or logged.
pub fn printable(name: &str, value: &str) -> String {
    let shown = VARIABLES.iter().find(|v| v.name == name).map_or(Shown::Plain, |v| v.shown);
    match shown {
        Shown::Plain => value.to_owned(),
        Shown::Hidden => "(hidden)".to_owned(),
        Shown::Url(mask) => masked(value, mask),
        Shown::Urls(mask) => value.split(',').map(|u| masked(u.trim(), mask)).collect::<Vec<_>>().join(","),
    }
}

/// Every variable the binary knows; `stablepay config` checks an environment against it, and
/// a start with an unknown `STABLEPAY_*` variable warns about it (a typo silently ignored is a
/// setting silently lost).
pub const VARIABLES: &[Variable] = &[
    Variable {
        production: true,
        shown: Shown::Url(Mask::Credentials),
        ..var(
            "DATABASE_URL",
            DEFAULT_DATABASE_URL,
            "PostgreSQL URL (postgres://...; several hosts with target_session_attrs=read-write for failover)",
        )
    },
    Variable {
        production: true,
        ..var("STABLEPAY_BIND", "127.0.0.1:8080", "Address the HTTP API listens on (HOST:PORT; port 0 picks one)")
    },
    Variable {
        production: true,
        shown: Shown::Url(Mask::Credentials),
        ..var(
            "STABLEPAY_PUBLIC_BASE_URL",
            "http://<bind>",
            "Address customers reach (hosted pages, links in emails and answers)",
        )
    },
    Variable {
        shown: Shown::Hidden,
        production: true,
        ..var("STABLEPAY_SECRET_KEY", "", "32 bytes in base64 sealing webhook signing secrets (required for webhooks)")
    },
    var("STABLEPAY_CONFIG", "", "Optional TOML file with the same settings (environment variables win)"),
    var("STABLEPAY_DB_POOL_SIZE", "16", "Database connections per process (1-1000)"),
    var("STABLEPAY_DB_TIMEOUT_MS", "5000", "Wait for a database connection before 503 (100-600000)"),
    var("STABLEPAY_HTTP_WORKERS", "2", "HTTP worker threads (1-256)"),
    var("STABLEPAY_WORKER_INTERVAL_MS", "1000", "Background worker's tick (10-3600000)"),
    var(
        "STABLEPAY_METRICS_BIND",
        "127.0.0.1:9464",
        "Where GET /metrics (Prometheus text) is served, apart from the API; off turns it off",
    ),
    var("STABLEPAY_SHUTDOWN_GRACE", "10", "Seconds in-flight requests and the worker's batch get on SIGTERM (1-600)"),
    var("STABLEPAY_BODY_TIMEOUT_MS", "10000", "A request body must arrive within this (then 408)"),
    var("STABLEPAY_MAX_CONNECTIONS", "1024", "Client connections served at once"),
    var("STABLEPAY_BODY_MEMORY_MIB", "256", "Memory shared by request bodies being read"),
    var(
        "STABLEPAY_SIGNUP",
        "invite",
        "Who creates dashboard accounts: closed (the CLI only), invite (also invitations) or open (anyone, with a new merchant)",
    ),
    var(
        "STABLEPAY_SELF_ACTIVATION",
        "false",
        "An owner's live activation request activates at once (true), or waits for `stablepay merchant activate`",
    ),
    var(
        "STABLEPAY_RETENTION_EVENTS_DAYS",
        "90",
        "Days events are kept at least, with their webhook deliveries and attempts; they go a month at a time, about a month later at most (0-3660; 0 keeps them)",
    ),
    var(
        "STABLEPAY_RETENTION_EMAILS_DAYS",
        "90",
        "Days sent, failed or skipped emails of the outbox are kept (0-3660; 0 keeps them)",
    ),
    var(
        "STABLEPAY_RETENTION_EXPORT_FILES_DAYS",
        "7",
        "Days an export's file (a monthly statement's too) can be downloaded after it was written (1-3660)",
    ),
    var("STABLEPAY_SESSION_IDLE_MINUTES", "720", "A dashboard session unused this long ends (5-10080 minutes)"),
    var(
        "STABLEPAY_SESSION_ABSOLUTE_HOURS",
        "168",
        "A dashboard session ends this long after its login, however used (1-2160 hours)",
    ),
    var(
        "STABLEPAY_IDEMPOTENCY_LEASE_SECONDS",
        "60",
        "Seconds before a retry takes over the key of a request whose process died before its work committed (5-3600)",
    ),
    Variable {
        shown: Shown::Urls(Mask::PathAndQuery),
        ..var("STABLEPAY_CHAIN_RPC_URLS", "", "Polygon JSON-RPC endpoints, comma-separated, tried in order (live mode)")
    },
    var("STABLEPAY_CHAIN_ID", "137", "Chain the endpoints must serve"),
    var("STABLEPAY_CHAIN_CONFIRMATIONS", "128", "Depth counted as final when a node has no finalized tag"),
    var("STABLEPAY_USDC_CONTRACT", "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359", "USDC contract"),
    var("STABLEPAY_USDT_CONTRACT", "0xc2132D05D31c914a87C6611C10748AEb04B58e8F", "USDT contract"),
    var("STABLEPAY_CHAIN_POLL_MS", "500", "How often the chain follower polls"),
    var("STABLEPAY_CHAIN_TIMEOUT_MS", "5000", "Timeout of one JSON-RPC call"),
    var(
        "STABLEPAY_EXPLORER_URL",
        "https://polygonscan.com",
        "Block explorer the hosted pages link live transactions to",
    ),
    var("STABLEPAY_CHAIN_ID_RECHECK_SECONDS", "60", "How often each endpoint's chain id is checked again"),
    var("STABLEPAY_CHAIN_NOT_FOUND_SECONDS", "600", "How long a reported transaction may stay unknown before it fails"),
    var(
        "STABLEPAY_CHAIN_CLOCK_SKEW_SECONDS",
        "30",
        "How far a transfer may predate a checkout and still pay it on evidence the transfer carries",
    ),
    var(
        "STABLEPAY_CHAIN_RECHECK_SECONDS",
        "120",
        "How long after a range of final blocks was first read the follower reads it once more",
    ),
    Variable {
        shown: Shown::Hidden,
        ..var(
            "STABLEPAY_RELAYER_KEY",
            "",
            "Private key (hex) of the gasless relayer's account, holding only POL for gas: it submits customers' signed USDC authorizations (empty: no relaying)",
        )
    },
    var(
        "STABLEPAY_RELAYER_DAILY_GAS_LIMIT",
        "10000000",
        "Gas the relayer may spend per UTC day, reserved when a submission is accepted (100000-10000000000)",
    ),
    var(
        "STABLEPAY_RELAYER_MAX_FEE_GWEI",
        "1000",
        "Highest fee per gas the relayer offers, replacements included (1-1000000)",
    ),
    var(
        "STABLEPAY_RELAYER_BUMP_SECONDS",
        "30",
        "How long a relayer transaction waits unmined before it is replaced with higher fees (1-3600)",
    ),
    var("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1m,5m,30m,2h", "Waits between webhook attempts"),
    var("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "false", "Allow webhook endpoints on private addresses (development only)"),
    var("STABLEPAY_WEBHOOK_TIMEOUT_MS", "10000", "Timeout of one webhook attempt"),
    Variable {
        shown: Shown::Url(Mask::Credentials),
        ..var("REDIS_URL", "", "Redis for rate limits shared by replicas (empty: per process)")
    },
    var("STABLEPAY_REDIS_PREFIX", "stablepay", "Prefix of the Redis keys"),
    var("STABLEPAY_TRUSTED_PROXIES", "", "Proxies whose X-Forwarded-For is believed (IPs or CIDRs, comma-separated)"),
    Variable {
        shown: Shown::Url(Mask::Credentials),
        ..var("STABLEPAY_SMTP_URL", "", "smtp:// or smtps:// mail server (empty: emails written as files)")
    },
    var("STABLEPAY_EMAIL_FROM", "invoices@stablepay.localhost", "Sender address of invoice emails"),
    var("STABLEPAY_EMAIL_DIR", ".stablepay/outbox", "Where emails are written without SMTP"),
    var("STABLEPAY_SMTP_TIMEOUT_MS", "10000", "Time limit of one SMTP attempt (an email's lease follows from it)"),
    var("STABLEPAY_LOG_FORMAT", "text", "text or json (one object per line)"),
    var("RUST_LOG", "info", "Log filter"),
    Variable {
        shown: Shown::Hidden,
        ..var("STABLEPAY_CONTRACT_KEY", "", "Key for `stablepay contract-check` (instead of --key)")
    },
];

/// `STABLEPAY_*` variables of `names` the binary does not know.
pub fn unknown_variables<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    names
        .into_iter()
        .filter(|n| n.starts_with("STABLEPAY_") && !VARIABLES.iter().any(|v| v.name == *n))
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    /// Every variable `Config::load` reads is in the table, and the table names nothing it
    /// does not read (besides the few read elsewhere).
    #[test]
    fn the_table_is_what_load_reads() {
        let asked = std::cell::RefCell::new(std::collections::BTreeSet::new());
        Config::load(None, |k| {
            asked.borrow_mut().insert(k.to_owned());
            None
        })
        .unwrap();
        let asked = asked.into_inner();
        let table: std::collections::BTreeSet<String> = VARIABLES.iter().map(|v| v.name.to_owned()).collect();
        let elsewhere = ["STABLEPAY_LOG_FORMAT", "RUST_LOG", "STABLEPAY_CONTRACT_KEY"];
        for name in &asked {
            assert!(table.contains(name), "{name} is read but not in VARIABLES");
        }
        for name in &table {
            assert!(
                asked.contains(name) || elsewhere.contains(&name.as_str()),
                "{name} is in VARIABLES but never read"
            );
        }
        assert_eq!(unknown_variables(["STABLEPAY_BIND", "STABLEPAY_BINDD", "HOME"]), ["STABLEPAY_BINDD"]);
    }

    /// README's settings table has a row for every variable the binary knows.
    #[test]
    fn the_readme_documents_every_variable() {
        let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md")).unwrap();
        for v in VARIABLES {
            assert!(readme.contains(&format!("| `{}` |", v.name)), "README.md's settings table lacks {}", v.name);
        }
    }

    fn load(vars: &[(&str, &str)]) -> Result<Config, ConfigError> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        Config::load(None, |k| map.get(k).cloned())
    }

    #[test]
    fn relayer_settings() {
        let c = load(&[]).unwrap();
        assert!(c.relayer.key.is_none(), "off by default");
        assert_eq!((c.relayer.daily_gas_limit, c.relayer.max_fee_gwei), (10_000_000, 1000));
        assert_eq!(c.relayer.bump_after, Duration::from_secs(30));
        let key = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";
        let rpc = ("STABLEPAY_CHAIN_RPC_URLS", "http://127.0.0.1:8545");
        let c = load(&[
            ("STABLEPAY_RELAYER_KEY", key),
            rpc,
            ("STABLEPAY_RELAYER_DAILY_GAS_LIMIT", "500000"),
            ("STABLEPAY_RELAYER_MAX_FEE_GWEI", "200"),
            ("STABLEPAY_RELAYER_BUMP_SECONDS", "5"),
        ])
        .unwrap();
        assert_eq!(c.relayer.key.as_deref(), Some(key));
        assert_eq!((c.relayer.daily_gas_limit, c.relayer.max_fee_gwei), (500_000, 200));
        assert_eq!(c.relayer.bump_after, Duration::from_secs(5));
        assert!(!format!("{c:?}").contains("ac0974bec39a17e36ba4a6b4d238ff"), "the key is never printed");
        for (vars, name) in [
            (vec![("STABLEPAY_RELAYER_KEY", "0x1234"), rpc], "STABLEPAY_RELAYER_KEY"),
            (vec![("STABLEPAY_RELAYER_KEY", key)], "STABLEPAY_RELAYER_KEY"),
            (vec![("STABLEPAY_RELAYER_DAILY_GAS_LIMIT", "99999")], "STABLEPAY_RELAYER_DAILY_GAS_LIMIT"),
            (vec![("STABLEPAY_RELAYER_MAX_FEE_GWEI", "0")], "STABLEPAY_RELAYER_MAX_FEE_GWEI"),
            (vec![("STABLEPAY_RELAYER_BUMP_SECONDS", "3601")], "STABLEPAY_RELAYER_BUMP_SECONDS"),
        ] {
            let err = load(&vars).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
            assert!(!err.contains("ac0974bec39a17e36ba4a6b4d238ff"), "the key is never printed: {err}");
        }
    }

    #[test]
    fn webhook_settings() {
        let c = load(&[]).unwrap();
        assert!(c.webhooks.secret_key.is_none());
        assert!(!c.webhooks.allow_private);
        let mins = |m: u64| Duration::from_secs(m * 60);
        assert_eq!(c.webhooks.retry_schedule, vec![mins(1), mins(5), mins(30), mins(120)]);
        let key = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=";
        let c = load(&[
            ("STABLEPAY_SECRET_KEY", key),
            ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1s, 500ms,2s"),
            ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ])
        .unwrap();
        assert_eq!(c.webhooks.secret_key, Some([1u8; 32]));
        assert_eq!(
            c.webhooks.retry_schedule,
            vec![Duration::from_secs(1), Duration::from_millis(500), Duration::from_secs(2)]
        );
        assert!(c.webhooks.allow_private);
        assert!(!format!("{:?}", c.webhooks).contains("AQEB"), "the key is never printed");
        for (name, value) in [
            ("STABLEPAY_SECRET_KEY", "c2hvcnQ="),
            ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1m,,5m"),
            ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "0s"),
            ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "10y"),
            ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "yes"),
        ] {
            let err = load(&[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
            assert!(!err.contains("c2hvcnQ"), "the key is never printed: {err}");
        }
    }

    #[test]
    fn defaults() {
        let c = load(&[]).unwrap();
        assert_eq!(c.database_url, DEFAULT_DATABASE_URL);
        assert_eq!(c.bind.to_string(), "127.0.0.1:8080");
        assert_eq!(c.public_base_url, "http://127.0.0.1:8080");
        assert!(c.chain.rpc_urls.is_empty());
        assert_eq!(c.chain.chain_id, 137);
        assert_eq!(c.chain.usdc.as_str(), "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");
        assert_eq!(c.chain.usdt.as_str(), "0xc2132D05D31c914a87C6611C10748AEb04B58e8F");
        let c = load(&[("STABLEPAY_CHAIN_RPC_URLS", " http://a.example:8545 , https://b.example ")]).unwrap();
        assert_eq!(c.chain.rpc_urls, ["http://a.example:8545", "https://b.example"]);
    }

    #[test]
    fn retention_settings() {
        let r = load(&[]).unwrap().retention;
        assert_eq!((r.events_days, r.emails_days, r.export_files_days), (90, 90, 7));
        let r = load(&[("STABLEPAY_RETENTION_EXPORT_FILES_DAYS", "30"), ("STABLEPAY_RETENTION_EVENTS_DAYS", "0")])
            .unwrap()
            .retention;
        assert_eq!((r.events_days, r.export_files_days), (0, 30));
    }

    #[test]
    fn a_failover_url_with_several_hosts_is_accepted() {
        let url = "postgres://app@10.0.0.1:5432,10.0.0.2:5432/shop?target_session_attrs=read-write&sslmode=prefer";
        assert_eq!(load(&[("DATABASE_URL", url)]).unwrap().database_url, url);
    }

    #[test]
    fn bad_values_name_themselves() {
        for (name, value) in [
            ("STABLEPAY_BIND", "localhost"),
            ("DATABASE_URL", "mysql://x"),
            ("DATABASE_URL", "postgres://app@db/shop?target_session_attrs=primary-ish"),
            ("DATABASE_URL", "postgres://app@db1,db2/shop?sslmode=require"),
            ("STABLEPAY_PUBLIC_BASE_URL", "ftp://x"),
            ("STABLEPAY_DB_POOL_SIZE", "0"),
            ("STABLEPAY_HTTP_WORKERS", "many"),
            ("STABLEPAY_CHAIN_RPC_URLS", "http://ok.example,ftp://x"),
            ("STABLEPAY_USDC_CONTRACT", "0x12"),
            ("STABLEPAY_CHAIN_ID", "0"),
            ("STABLEPAY_RETENTION_EXPORT_FILES_DAYS", "0"),
            ("STABLEPAY_RETENTION_EXPORT_FILES_DAYS", "3661"),
            ("STABLEPAY_RETENTION_EVENTS_DAYS", "-1"),
        ] {
            let err = load(&[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
        }
    }

    /// Every setting that holds a URL: a refused value is echoed masked, and what `stablepay
    /// config` shows of an accepted one is masked too.
    #[test]
    fn credentials_in_url_settings_are_never_printed() {
        let url_settings: Vec<&Variable> =
            VARIABLES.iter().filter(|v| matches!(v.shown, Shown::Url(_) | Shown::Urls(_))).collect();
        let names: Vec<&str> = url_settings.iter().map(|v| v.name).collect();
        assert_eq!(
            names,
            [
                "DATABASE_URL",
                "STABLEPAY_PUBLIC_BASE_URL",
                "STABLEPAY_CHAIN_RPC_URLS",
                "REDIS_URL",
                "STABLEPAY_SMTP_URL"
            ]
        );
        // A value each setting refuses, with a credential in it.
        let refused = [
            ("DATABASE_URL", "mysql://app:hunter2@db/shop"),
            ("STABLEPAY_PUBLIC_BASE_URL", "https://app:hunter2@pay.example"),
            ("STABLEPAY_CHAIN_RPC_URLS", "https://rpc.example/v2/hunter2,ftp://rpc.example/hunter2"),
            ("REDIS_URL", "redis://:hunter2@cache:6379"),
            ("STABLEPAY_SMTP_URL", "smtpx://app:hunter2@mail.example"),
        ];
        for (name, value) in refused {
            let err = load(&[(name, value)]).unwrap_err().to_string();
            assert!(err.starts_with(name), "{err}");
            assert!(!err.contains("hunter2"), "{name} echoed a credential: {err}");
        }
        // What may be shown of accepted values.
        for (name, value, shown) in [
            ("DATABASE_URL", "postgres://app:hunter2@db:5432/shop", "postgres://***@db:5432/shop"),
            ("STABLEPAY_PUBLIC_BASE_URL", "https://pay.example", "https://pay.example"),
            (
                "STABLEPAY_CHAIN_RPC_URLS",
                "https://a.example/v2/hunter2, http://127.0.0.1:8545",
                "https://a.example/***,http://127.0.0.1:8545",
            ),
            ("REDIS_URL", "redis://cache:6379", "redis://cache:6379"),
            ("STABLEPAY_SMTP_URL", "smtps://app:hunter2@mail.example:465", "smtps://***@mail.example:465"),
            ("STABLEPAY_SECRET_KEY", "hunter2", "(hidden)"),
            ("STABLEPAY_RELAYER_KEY", "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80", "(hidden)"),
            ("STABLEPAY_BIND", "127.0.0.1:1", "127.0.0.1:1"),
        ] {
            assert_eq!(printable(name, value), shown, "{name}");
        }
    }

    #[test]
    fn file_then_env() {
        let dir = std::env::temp_dir().join(format!("stablepay-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("c.toml");
        std::fs::write(&path, "bind = \"127.0.0.1:9000\"\ndb_pool_size = \"4\"\n").unwrap();
        let c = Config::load(Some(&path), |k| (k == "STABLEPAY_DB_POOL_SIZE").then(|| "8".to_string())).unwrap();
        assert_eq!(c.bind.port(), 9000);
        assert_eq!(c.db_pool_size, 8);
        std::fs::write(&path, "nope = 1\n").unwrap();
        assert!(Config::load(Some(&path), |_| None).is_err());
    }
}
