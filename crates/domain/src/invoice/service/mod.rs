//! The invoice use cases: checkout sessions, invoices and payments.
//!
//! Every mutation follows one pattern: load the invoice aggregate, decide with a pure function
//! (`decide`, `credit`, `due`) what to save and what to answer, and save it all in one
//! transaction guarded by the aggregate's lock version. When another writer got there first
//! the store answers `InvoiceStateMismatch` and the use case reloads and decides again (a few
//! times), so concurrent requests, payments and workers never lose an update or emit an event
//! twice.

mod checks;
pub(crate) mod credit;
pub(crate) mod decide;
pub(crate) mod due;
mod invoices;
pub mod offers;
mod public;
mod queries;
mod report;

pub use checks::{Checked, DueCheck, check_backoff};
pub use credit::Settled;
pub use invoices::{DueFailure, DueReport, Invoices, decide_checkout};
pub use public::PublicViews;
pub use report::Collections;
