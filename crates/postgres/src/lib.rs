//! PostgreSQL adapter: implements the domain's store ports with diesel + diesel-async.
//!
//! Every query that reads or writes merchant data filters by the merchant and mode passed in,
//! so an id of another merchant is never visible. State changes and the events they emit are
//! written in one transaction (the outbox). This is the only crate that knows SQL.

mod api_keys;
mod change_statements;
mod clock;
mod codec;
mod create_statement;
mod emails;
mod error;
mod events;
mod follower;
mod idempotency;
mod invoices;
mod json_bytes;
mod keycache;
mod listen;
mod merchants;
mod migrate;
mod ops;
mod payment_links;
mod pool;
pub mod schema;
mod webhooks;

pub use webhooks::{CHANNEL as WEBHOOK_CHANNEL, listen_for_deliveries};

pub use clock::PgClock;
pub use keycache::{CachedKeyStore, KEY_CACHE_SECONDS, KEYS_CHANNEL, KeyCache, listen_for_key_changes};
pub use migrate::run_migrations;
pub use ops::{PoolUse, QueueStat};
pub use pool::{PgStore, PoolSettings};

#[async_trait::async_trait]
impl stablepay_domain::ports::Health for PgStore {
    async fn ready(&self) -> Result<(), stablepay_domain::Error> {
        self.ping().await
    }
}

/// A page of `rows` fetched with one extra to tell whether there is more.
pub(crate) fn page_of<R, T>(
    mut rows: Vec<R>,
    page: &stablepay_domain::page::PageRequest,
    convert: impl Fn(R) -> Result<T, stablepay_domain::Error>,
) -> Result<stablepay_domain::page::Page<T>, stablepay_domain::Error> {
    let limit = usize::try_from(page.limit).unwrap_or(100);
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    Ok(stablepay_domain::page::Page { items: rows.into_iter().map(convert).collect::<Result<_, _>>()?, has_more })
}

/// A row naming a record and its scope (the worker's claims across merchants).
#[derive(diesel::QueryableByName)]
pub(crate) struct ScopedRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub merchant_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub mode: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    pub id: String,
}

impl ScopedRow {
    pub(crate) fn scope(&self) -> Result<stablepay_domain::Scope, stablepay_domain::Error> {
        Ok(stablepay_domain::Scope::new(
            stablepay_domain::ids::MerchantId::from_trusted(self.merchant_id.clone()),
            crate::invoices::rows::mode(&self.mode)?,
        ))
    }
}
