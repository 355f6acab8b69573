//! Invoices: the entity and its commercial fields (`model`), money math (`totals`), the
//! collectionState and lifecycle-status machines, the field rules (`validate`), event
//! snapshots, the aggregate and its atomic change (`aggregate`), the store port (`ports`), and
//! the invoice as a document with its renderer port (`document`).
//!
//! Inside the crate, modules import from these files directly; the re-exports below are the
//! public paths for adapters and admin tooling.

pub mod aggregate;
pub mod collection;
pub mod document;
pub mod lifecycle;
pub mod model;
pub mod ports;
pub mod snapshot;
pub mod totals;
pub mod validate;

pub use aggregate::{ChangeKind, Decision, InvoiceAggregate, InvoiceChange, InvoiceKey, PendingEvent, PublicRef};
pub use collection::{CollectionState, CollectionTrigger};
pub use lifecycle::{Coverage, LifecycleStatus, LifecycleTrigger};
pub use model::*;
pub use totals::{Discount, PricedLine, Totals, compute_totals};
