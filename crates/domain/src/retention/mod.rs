//! Retention: how long the records that only explain the past are kept (events with their
//! webhook deliveries and attempts, finished emails of the outbox, idempotency keys), and the
//! worker's purge in bounded batches, and of whole months of events at once. Invoices, payments, checkout sessions, payment links,
//! exports' records and the audit log are never purged.

pub mod model;
pub mod service;

pub use model::{Months, Purged, RetentionSettings};
pub use service::Retention;
