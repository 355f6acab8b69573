//! Idempotency keys: what a key says about a request and whose key it is (`model`), and the
//! store of saved responses (`ports`).

pub mod model;
pub mod ports;

pub use model::*;
