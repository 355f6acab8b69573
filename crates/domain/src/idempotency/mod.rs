//! Idempotency keys: what a key is, what it says about a request and whose key it is
//! (`model`), the store of claims and saved answers (`ports`), and the claim, record and
//! release of a request's key (`service`).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
