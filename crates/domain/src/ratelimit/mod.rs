//! Rate limits (the spec's "Limits" table): the policies and the GCRA rule every limiter follows
//! (`model`), and the port that keeps the budgets (`ports`).

pub mod model;
pub mod ports;

pub use model::*;
