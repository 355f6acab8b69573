//! Events: the spec's event types and the records of the outbox (`model`), their read side
//! (`ports`), and the merchant's queries over them (`service`).

pub mod model;
pub mod ports;

pub use model::*;
