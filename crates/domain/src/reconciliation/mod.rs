//! Reconciliation: what a merchant's books say about a period, per token (`model`: invoiced,
//! collected, overpaid, refunded, outstanding, overdue, unattributed; and the discrepancies),
//! what it reads from the store (`ports`), and the use case (`service`).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
