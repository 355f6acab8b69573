//! The pure domain of stablepay: money, ids, entities, state machines, events, the port traits
//! that adapters implement, and the use cases that orchestrate them.
//!
//! This crate does no I/O and depends on no I/O crate; its entities carry no serde or diesel
//! derives. Adapters own their wire and row types and convert at their edge.

// Values and models first, then ports, then use cases; imports run in that direction only
// (tests/layering.rs).
pub mod api_key;
pub mod authentication;
pub mod billing;
pub mod chain;
pub mod checkout;
pub mod clock;
pub mod crypto;
pub mod email;
pub mod error;
pub mod event;
pub mod ids;
pub mod invoice;
pub mod merchant;
pub mod mode;
pub mod money;
pub mod operator;
pub mod page;
pub mod payment;
pub mod payment_link;
pub mod ports;
pub mod ratelimit;
pub mod url;
pub mod webhook;

#[cfg(any(test, feature = "mocks"))]
pub mod testing;

pub use error::{Error, Limit, Resource};
pub use mode::{Mode, Scope};
pub use money::Amount;
