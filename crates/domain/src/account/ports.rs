//! What accounts need: a password hasher (Argon2id in the adapter) and the store of users,
//! memberships and sessions.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::account::model::{Membership, Session, User};
use crate::error::Error;
use crate::ids::{SessionId, UserId};

/// Hashes and checks passwords.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait PasswordHasher: Send + Sync {
    /// The password's hash as a PHC string (salted; the parameters inside it). Errors:
    /// `Internal`.
    fn hash(&self, password: &str) -> Result<String, Error>;
    /// Whether `password` matches `hash`. With `None` it spends the time of a real check and
    /// answers `false`: a login for an unknown email takes as long as a wrong password.
    // The lifetime is named for mockall's generated mock.
    #[allow(clippy::needless_lifetimes)]
    fn verify<'a>(&self, password: &str, hash: Option<&'a str>) -> bool;
}

/// Users, their memberships and their sessions. Users are not scoped by merchant: a user may
/// belong to several; a membership names its merchant.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Inserts a user with its first membership, in one transaction. Errors: `Validation`
    /// (`email`) when a user has that email; `NotFound(Merchant)` for an unknown merchant.
    async fn insert_user(&self, user: &User, membership: &Membership) -> Result<(), Error>;
    /// The user with this (normalized) email.
    async fn user_by_email(&self, email: &str) -> Result<Option<User>, Error>;
    /// The user's memberships, oldest first.
    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, Error>;
    /// Inserts a new session.
    async fn insert_session(&self, session: &Session) -> Result<(), Error>;
    /// The session whose token has this digest, with its user.
    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<(Session, User)>, Error>;
    /// Records a use of the session at `at`.
    async fn touch_session(&self, id: &SessionId, at: DateTime<Utc>) -> Result<(), Error>;
    /// Ends one session.
    async fn delete_session(&self, id: &SessionId) -> Result<(), Error>;
    /// Ends every session of the user; answers how many.
    async fn delete_user_sessions(&self, user: &UserId) -> Result<u64, Error>;
}
