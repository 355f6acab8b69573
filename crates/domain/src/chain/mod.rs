//! The chain: what a transaction and a transfer look like as the chain reports them (`model`),
//! the rules every transfer goes through (`verify`: verification against a checkout;
//! `evidence`: which checkout a transfer into a shared wallet pays, by the evidence naming it),
//! the chain and the follower's store (`ports`), and the follower (`service`: scans final
//! blocks for transfers into settlement wallets and credits, holds or records each).

pub mod evidence;
pub mod model;
pub mod ports;
pub mod service;
pub mod verify;

pub use model::*;
