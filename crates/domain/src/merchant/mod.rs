//! Merchants: who sells, with the settlement wallet and token of each mode (`model`), the store
//! (`ports`), its logo (`logo`), and the operator's use cases (`service`: create, activate,
//! suspend, profile, logo, list).

pub mod logo;
pub mod model;
pub mod ports;
pub mod service;

pub use logo::{Logo, LogoImage};
pub use model::*;
