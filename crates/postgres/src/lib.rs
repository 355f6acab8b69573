//! PostgreSQL adapter: implements the domain's store ports with diesel + diesel-async.
//!
//! Every query that reads or writes merchant data filters by the merchant and mode passed in,
//! so an id of another merchant is never visible. State changes and the events they emit are
//! written in one transaction (the outbox). This is the only crate that knows SQL.

mod accounts;
mod api_keys;
mod clock;
mod codec;
mod connect;
mod emails;
mod error;
mod events;
mod exports;
mod fixed;
mod follower;
mod idempotency;
mod invoices;
mod json_bytes;
mod keycache;
mod listen;
mod merchants;
mod migrate;
mod payment_links;
mod pool;
mod reconciliation;
mod reconciliation_runs;
mod relays;
mod retention;
mod rows;
mod schedule;
pub mod schema;
mod signal_queue;
mod signals;
mod statements;
mod stats;
mod telemetry;
mod webhooks;

pub use webhooks::{CHANNEL as WEBHOOK_CHANNEL, listen_for_deliveries};

pub use clock::PgClock;
pub use connect::check_url;
pub use keycache::{CachedKeyStore, KEY_CACHE_SECONDS, KEYS_CHANNEL, KeyCache, listen_for_key_changes};
pub use migrate::run_migrations;
pub use pool::{PgStore, PoolSettings};
pub use schedule::{WORK_CHANNEL, WorkWakes, listen_for_work};
pub use signals::{CheckoutSignalHub, listen_for_checkouts, send_checkout_signals};
pub use stats::{PoolUse, QueueStat};
