//! Rate limits (the spec's "Limits" table): the policies and the GCRA rule every limiter follows
//! (`model`), the port that keeps the budgets (`ports`), and the check of one request
//! (`service`).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
