//! Reconciliation: what a merchant's books say about a period, per token (`model`: invoiced,
//! collected, overpaid, refunded, outstanding, overdue, unattributed; and the discrepancies),
//! what it reads from the store (`ports`), and the use cases (`service`); and runs that read
//! the chain again and match every transfer with the books (`run`, `service::runs`).

pub mod model;
pub mod ports;
pub mod run;
pub mod service;

pub use model::*;
pub use run::*;
