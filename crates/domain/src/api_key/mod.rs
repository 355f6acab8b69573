//! API keys: the key format and what a key gives (`model`: the secret, its digest, the
//! [`Principal`]), the store (`ports`), and the use cases (`service`:
//! authentication of a presented key, and the operator's key administration), and the
//! permissions of restricted keys (`permission`).

pub mod model;
pub mod permission;
pub mod ports;
pub mod service;

pub use model::*;
pub use permission::{Access, Permissions, ResourceFamily};
