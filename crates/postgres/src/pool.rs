//! The connection pool.

use std::time::Duration;

use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod};
use futures_util::FutureExt;
use stablepay_domain::Error;

/// Pool sizing and timeouts.
#[derive(Clone, Debug)]
pub struct PoolSettings {
    pub max_size: usize,
    /// How long a request waits for a connection (or for one to be created) before the store
    /// answers `Unavailable`.
    pub timeout: Duration,
}

impl Default for PoolSettings {
    fn default() -> Self {
        Self { max_size: 16, timeout: Duration::from_secs(5) }
    }
}

/// The store: a pool of connections. Cheap to clone.
#[derive(Clone)]
pub struct PgStore {
    pub(crate) pool: Pool<AsyncPgConnection>,
    /// Where the checkouts a saved change touched are queued for their pages (in every process
    /// that serves or works, set by `CheckoutSignalHub::attach`; not in one-off commands).
    pub(crate) signals: Option<crate::signal_queue::SignalQueue>,
    /// This process's cache of authenticated keys (in every process that serves requests,
    /// set by `PgStore::with_key_cache`): what a change announces to every process is dropped
    /// from it at once, so the request after a change made here never reads the cached lookup
    /// from before it.
    pub(crate) key_cache: Option<std::sync::Arc<dyn ForgetKeys>>,
}

/// What drops a merchant's cached key lookups in this process.
pub(crate) trait ForgetKeys: Send + Sync {
    /// Drops every cached lookup of `merchant`.
    fn forget(&self, merchant: &str);
}

impl PgStore {
    /// Builds the pool. Connections are made lazily, so this succeeds while the database is
    /// down; each call then answers `Unavailable` until it is back.
    pub fn connect(database_url: &str, settings: &PoolSettings) -> Result<Self, Error> {
        let mut config = ManagerConfig::default();
        // Verify only that the connection is not broken; a lost server shows up on the next
        // query as Unavailable and the connection is dropped.
        config.recycling_method = RecyclingMethod::Fast;
        let timeout = settings.timeout;
        config.custom_setup = Box::new(move |url| crate::connect::establish(url.to_owned(), timeout).boxed());
        let manager = AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(database_url, config);
        let pool = Pool::builder(manager)
            .max_size(settings.max_size)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(settings.timeout))
            .create_timeout(Some(settings.timeout))
            .recycle_timeout(Some(settings.timeout))
            .build()
            .map_err(|e| Error::Internal(e.to_string()))?;
        Ok(Self { pool, signals: None, key_cache: None })
    }

    pub(crate) async fn conn(&self) -> Result<Object<AsyncPgConnection>, Error> {
        self.pool.get().await.map_err(crate::error::pool)
    }

    /// Whether the database answers and holds every migration this binary knows (readiness).
    /// Errors: `Unavailable`; `SchemaBehind` with the versions missing (an empty database
    /// lacks them all).
    pub async fn ping(&self) -> Result<(), Error> {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Version {
            #[diesel(sql_type = diesel::sql_types::Text)]
            version: String,
        }
        let mut conn = self.conn().await?;
        let recorded = "SELECT version FROM __diesel_schema_migrations             WHERE to_regclass('__diesel_schema_migrations') IS NOT NULL";
        let applied: Vec<String> = match diesel::sql_query(recorded).load::<Version>(&mut conn).await {
            Ok(rows) => rows.into_iter().map(|r| r.version).collect(),
            Err(e) if crate::error::is_schema_missing(&e) => Vec::new(),
            Err(e) => return Err(crate::error::db(e)),
        };
        let pending = crate::migrate::pending(&applied);
        if pending.is_empty() {
            return Ok(());
        }
        Err(Error::SchemaBehind { pending: pending.iter().map(|v| (*v).to_owned()).collect() })
    }
}

#[async_trait::async_trait]
impl stablepay_domain::ports::Health for PgStore {
    async fn ready(&self) -> Result<(), stablepay_domain::Error> {
        self.ping().await
    }
}
