//! The dashboard's JSON routes (their own tag, outside the merchant API's key authentication):
//! `sessions` (log in, read the session, log out), `account` (sign-up, emailed links,
//! password), `two_factor`, `team` (a merchant's members, invitations, security and audit
//! log) and `settings` (the settlement wallet, live activation, the member's notifications); `answer` holds what they answer when a session starts or renews its token.

pub mod account;
pub mod answer;
pub mod sessions;
pub mod settings;
pub mod team;
pub mod two_factor;
