//! The account use cases: the operator's user creation, login (the same answer, in about the
//! same time, for an unknown email and a wrong password), the session behind a cookie (ended
//! when idle or past its absolute end), logout, and logout everywhere.

use chrono::Duration;

use crate::account::capability::Role;
use crate::account::model::{
    MAX_USER_NAME_BYTES, Membership, Session, SessionSettings, User, check_password, normalize_email,
};
use crate::account::ports::{AccountStore, PasswordHasher};
use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{MerchantId, PublicToken, SessionId, UserId};
use crate::merchant::ports::MerchantStore;

/// A session's last use is written at most this often (a request within it reads only).
pub const TOUCH_EVERY_SECONDS: i64 = 60;

/// The account use cases.
pub struct Accounts<'a> {
    /// Users, memberships and sessions.
    pub store: &'a dyn AccountStore,
    /// Merchants (a membership's must exist).
    pub merchants: &'a dyn MerchantStore,
    /// Password hashes.
    pub hasher: &'a dyn PasswordHasher,
    /// Ids and tokens.
    pub crypto: &'a dyn Crypto,
    /// The real time (sessions do not follow a test clock).
    pub clock: &'a dyn Clock,
    /// How long sessions last.
    pub settings: SessionSettings,
}

/// A new session and the token its cookie carries (shown once, never stored).
#[derive(Debug)]
pub struct SignedIn {
    /// The session, its user and the user's memberships.
    pub current: Current,
    /// The cookie's value.
    pub token: PublicToken,
}

/// A request's session, as its cookie names it.
#[derive(Debug)]
pub struct Current {
    /// The session.
    pub session: Session,
    /// Its user.
    pub user: User,
    /// The user's memberships.
    pub memberships: Vec<Membership>,
}

impl Accounts<'_> {
    /// The operator's `stablepay user create`: a user (email verified) who is `role` of
    /// `merchant`. Errors: `Validation` (`email`, `name`, `password`); `NotFound(Merchant)`.
    pub async fn create_user(
        &self,
        (email, name, password): (&str, &str, &str),
        merchant: &MerchantId,
        role: Role,
    ) -> Result<User, Error> {
        let email = normalize_email("email", email)?;
        let name = name.trim();
        if name.is_empty() || name.len() > MAX_USER_NAME_BYTES || name.chars().any(char::is_control) {
            return Err(Error::validation("name", format!("must be 1 to {MAX_USER_NAME_BYTES} bytes on one line")));
        }
        check_password(password)?;
        self.merchants.get_merchant(merchant).await?;
        let now = self.clock.system_now();
        let user = User {
            id: UserId::generate(self.crypto),
            email,
            name: name.to_owned(),
            password_hash: self.hasher.hash(password)?,
            email_verified_at: Some(now),
            created_at: now,
        };
        let membership = Membership { user_id: user.id.clone(), merchant_id: merchant.clone(), role, created_at: now };
        self.store.insert_user(&user, &membership).await?;
        Ok(user)
    }

    /// A new session for the account of `email` and `password`. Errors: `InvalidCredentials`,
    /// the same for an unknown email (after a password check's time) and a wrong password.
    pub async fn login(&self, email: &str, password: &str) -> Result<SignedIn, Error> {
        let user = match normalize_email("email", email) {
            Ok(email) => self.store.user_by_email(&email).await?,
            Err(_) => None,
        };
        // One password check either way: an unknown email takes as long as a wrong password.
        let matches = self.hasher.verify(password, user.as_ref().map(|u| u.password_hash.as_str()));
        let Some(user) = user.filter(|_| matches) else {
            return Err(Error::InvalidCredentials);
        };
        let now = self.clock.system_now();
        let token = PublicToken::generate(self.crypto);
        let session = Session {
            id: SessionId::generate(self.crypto),
            user_id: user.id.clone(),
            token_digest: self.crypto.sha256(token.as_str().as_bytes()),
            csrf_token: PublicToken::generate(self.crypto).as_str().to_owned(),
            created_at: now,
            last_seen_at: now,
        };
        self.store.insert_session(&session).await?;
        let memberships = self.store.memberships(&user.id).await?;
        Ok(SignedIn { current: Current { session, user, memberships }, token })
    }

    /// The session behind a cookie's `token`, with its user and memberships; its use is
    /// recorded. Errors: `AuthRequired` for no such session, or one that ended (then deleted).
    pub async fn current(&self, token: &str) -> Result<Current, Error> {
        let token = PublicToken::parse(token).ok_or(Error::AuthRequired)?;
        let digest = self.crypto.sha256(token.as_str().as_bytes());
        let (mut session, user) = self.store.session_by_digest(&digest).await?.ok_or(Error::AuthRequired)?;
        let now = self.clock.system_now();
        if !session.is_active(&self.settings, now) {
            self.store.delete_session(&session.id).await?;
            return Err(Error::AuthRequired);
        }
        if now - session.last_seen_at >= Duration::seconds(TOUCH_EVERY_SECONDS) {
            self.store.touch_session(&session.id, now).await?;
            session.last_seen_at = now;
        }
        let memberships = self.store.memberships(&user.id).await?;
        Ok(Current { session, user, memberships })
    }

    /// Ends one session (logout).
    pub async fn logout(&self, session: &Session) -> Result<(), Error> {
        self.store.delete_session(&session.id).await
    }

    /// Ends every session of the user (logout everywhere); answers how many.
    pub async fn logout_everywhere(&self, user: &UserId) -> Result<u64, Error> {
        self.store.delete_user_sessions(user).await
    }
}

#[cfg(test)]
mod tests;
