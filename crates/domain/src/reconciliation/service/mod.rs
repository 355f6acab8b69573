//! The reconciliation use cases: a period's figures from the books (`summary`), and runs that
//! read the live chain again and match it with the books (`runs`).

pub mod runs;
pub mod summary;

pub use runs::{ReconciliationRuns, RunStep};
pub use summary::Reconciliations;
