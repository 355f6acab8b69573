//! Merchant accounts: the people of a shop who sign in (users), the merchants they belong to
//! with one role each (memberships), what each role may do (`capability`: one table for every
//! action), and their sessions (`model`); emailed single-use links for verification, reset and
//! invitations (`link`); two-factor codes and recovery codes (`totp`); the team's rules
//! (`members`: the last owner stays); the audit log (`audit`); the password hasher, the sealer
//! of two-factor secrets and the store of accounts (`ports`); the use cases (`service`).

pub mod audit;
pub mod capability;
pub mod link;
pub mod members;
pub mod model;
pub mod notice;
pub mod ports;
pub mod service;
pub mod totp;

pub use audit::{AuditAction, AuditEntry};
pub use capability::*;
pub use model::*;
