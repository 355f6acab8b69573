//! Merchants: who sells, with the settlement wallet and token of each mode (`model`), the store
//! (`ports`), and the operator's use cases (`service`: create, activate, suspend, list).

pub mod model;
pub mod ports;
pub mod service;

pub use model::*;
