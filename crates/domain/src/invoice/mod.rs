//! Invoices, their checkout sessions and payments: the invoice core.
//!
//! - Model: the invoice and its commercial fields (`model`), money math (`totals`), the
//!   `collectionState` machine (`collection`) and the lifecycle-status machine (`lifecycle`),
//!   the field rules (`validate`), checkout sessions (`checkout`), payments and their status
//!   machine (`payment`), event snapshots (`snapshot`), the aggregate and its atomic change
//!   (`aggregate`), the invoice as a document (`document`), the collections review's report
//!   (`report`), and what the use cases take (`input`).
//! - Ports: the invoice store and the document renderer (`ports`).
//! - Use cases: [`service::Invoices`] (create, edit, issue, collect, pay, credit, close, the
//!   time-based work and the reads), each a load, a pure decision and an atomic save; and
//!   what a member may do with one invoice ([`service::offers`]: their role and the invoice's
//!   state, one answer for a page's buttons and its forms).
//!
//! Inside the crate, modules import from these files directly; the re-exports below are the
//! public paths for adapters and admin tooling.

pub mod aggregate;
pub mod checkout;
pub mod collection;
pub mod document;
pub mod input;
pub mod lifecycle;
pub mod model;
pub mod payment;
pub mod ports;
pub mod public;
pub mod report;
pub mod service;
pub mod snapshot;
pub mod totals;
pub mod validate;
pub mod wallet;

pub use aggregate::{ChangeKind, Decision, InvoiceAggregate, InvoiceChange, InvoiceKey, PendingEvent, PublicRef};
pub use collection::{CollectionState, CollectionTrigger};
pub use lifecycle::{Coverage, LifecycleStatus, LifecycleTrigger};
pub use model::*;
pub use totals::{Discount, PricedLine, Totals, compute_totals};
