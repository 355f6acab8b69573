//! Events: the spec's event types and the records of the outbox (`model`), their read side
//! (`ports`), and the merchant's reads of them (`service`).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
