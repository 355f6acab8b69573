//! The account use cases: `accounts` (the `Accounts` use cases' core: the operator's user
//! creation, sessions, logout, and `Current::require`, which every
//! dashboard action goes through), `links` (open sign-up, password reset, email verification,
//! invitations), `mail` (the outbox's attempts of account links' and notices' emails),
//! `sign_in` (the one
//! way to become signed in, login, password change, re-authentication and every secret check,
//! within the failure-only quotas), `two_factor` (enrolment, the second step of a
//! login, turning it off), `team` (members, roles, the two-factor requirement, the audit
//! log) and `settings` (the settlement wallet, live activation, notices and webhook alerts).

pub mod accounts;
pub mod links;
pub mod mail;
pub mod settings;
pub mod sign_in;
pub mod team;
pub mod two_factor;

pub use accounts::{AccountSettings, Accounts, Current, SignedIn, TOUCH_EVERY_SECONDS, check_name};
pub use sign_in::{Secrets, account_key};

#[cfg(test)]
mod tests;
