//! Merchant accounts: the people of a shop who sign in (users), the merchants they belong to
//! with one role each (memberships), what each role may do (`capability`: one table for every
//! action), and their sessions (`model`); the password hasher and the store of accounts
//! (`ports`); the use cases (`service`: the operator's user creation, login without account
//! enumeration, sessions with idle and absolute expiry, logout).

pub mod capability;
pub mod model;
pub mod ports;
pub mod service;

pub use capability::*;
pub use model::*;
