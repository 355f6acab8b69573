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
mod error;
mod events;
mod idempotency;
mod invoices;
mod json_bytes;
mod merchants;
mod migrate;
mod pool;
pub mod schema;
mod watch;
mod webhooks;

pub use webhooks::{CHANNEL as WEBHOOK_CHANNEL, listen_for_deliveries};

pub use clock::PgClock;
pub use migrate::run_migrations;
pub use pool::{PgStore, PoolSettings};

#[async_trait::async_trait]
impl stablepay_domain::ports::Health for PgStore {
    async fn ready(&self) -> Result<(), stablepay_domain::Error> {
        self.ping().await
    }
}
