//! Users, their memberships, their sessions and the rules of each: the email as an account
//! names it, the password policy, and when a session ends.

use chrono::{DateTime, Duration, Utc};

use crate::account::capability::Role;
use crate::error::Error;
use crate::ids::{MerchantId, SessionId, UserId};
use crate::invoice::validate::check_email;

/// The fewest characters a password may have (OWASP's authentication cheat sheet: 15 without
/// multi-factor authentication).
pub const MIN_PASSWORD_CHARS: usize = 15;
/// The most a password may have: long passphrases fit, and the hash's work stays bounded.
pub const MAX_PASSWORD_CHARS: usize = 128;
/// The longest name, in UTF-8 bytes.
pub const MAX_USER_NAME_BYTES: usize = 200;

/// A person who signs in.
#[derive(Clone, PartialEq, Eq)]
pub struct User {
    /// `usr_...`.
    pub id: UserId,
    /// The email, as [`normalize_email`] writes it: unique among users.
    pub email: String,
    /// The name shown to the other members.
    pub name: String,
    /// The password's Argon2id hash (a PHC string; never logged).
    pub password_hash: String,
    /// When the email was verified (the operator's users are verified at creation).
    pub email_verified_at: Option<DateTime<Utc>>,
    /// Since when two-factor login is on (none: off).
    pub two_factor_since: Option<DateTime<Utc>>,
    /// When the account was created.
    pub created_at: DateTime<Utc>,
}

impl std::fmt::Debug for User {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("User").field("id", &self.id).field("email", &self.email).finish_non_exhaustive()
    }
}

/// A user's role in one merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Membership {
    /// The user.
    pub user_id: UserId,
    /// The merchant.
    pub merchant_id: MerchantId,
    /// What the user may do there.
    pub role: Role,
    /// Whether the merchant requires two-factor login of its members (its setting, read with
    /// the membership).
    pub requires_two_factor: bool,
    /// Whether the member gets an email when a webhook endpoint's incident opens or resolves
    /// (their own setting; the endpoint's alert preferences say which of the two).
    pub webhook_alerts: bool,
    /// Since when.
    pub created_at: DateTime<Utc>,
}

impl Membership {
    /// A new membership of `user` in `merchant` as `role`, from `at`: the merchant's
    /// two-factor requirement is read with memberships, and webhook alert emails start off.
    pub fn new(user: &UserId, merchant: &MerchantId, role: Role, at: DateTime<Utc>) -> Self {
        Self {
            user_id: user.clone(),
            merchant_id: merchant.clone(),
            role,
            requires_two_factor: false,
            webhook_alerts: false,
            created_at: at,
        }
    }
}

/// A merchant's live settlement as its owner asked for it, before the operator (or, when
/// allowed, the owner) activates live mode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRequest {
    /// The settlement wallet.
    pub wallet: crate::merchant::model::WalletAddress,
    /// The token it settles in.
    pub token: crate::merchant::model::Token,
    /// When activation was asked for (none: only the wallet is set).
    pub requested_at: Option<DateTime<Utc>>,
}

/// How long sessions last.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionSettings {
    /// A session unused this long ends (12 hours by default).
    pub idle: Duration,
    /// A session ends this long after the login, however used (7 days by default).
    pub absolute: Duration,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self { idle: Duration::hours(12), absolute: Duration::days(7) }
    }
}

/// A signed-in session. Its token (the cookie's value) is never stored: only its SHA-256.
#[derive(Clone, PartialEq, Eq)]
pub struct Session {
    /// `ses_...`.
    pub id: SessionId,
    /// Whose.
    pub user_id: UserId,
    /// SHA-256 of the token.
    pub token_digest: [u8; 32],
    /// What a mutation made with the session must carry (header or form field).
    pub csrf_token: String,
    /// The login.
    pub created_at: DateTime<Utc>,
    /// The last request made with it.
    pub last_seen_at: DateTime<Utc>,
    /// When its holder last gave the password (and the code, with two-factor login): the
    /// login, or a re-authentication. What can take the account over needs it within
    /// [`REAUTHENTICATION_SECONDS`].
    pub reauthenticated_at: DateTime<Utc>,
}

/// How long a re-authentication lets a session take what can take an account over (enrol or
/// turn off two-factor login, change the password, create an API key, change the settlement
/// wallet): 5 minutes.
pub const REAUTHENTICATION_SECONDS: i64 = 300;

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("id", &self.id).field("user_id", &self.user_id).finish_non_exhaustive()
    }
}

impl Session {
    /// Whether its holder gave the password (and the code) within
    /// [`REAUTHENTICATION_SECONDS`] of `now`.
    pub fn recently_authenticated(&self, now: DateTime<Utc>) -> bool {
        now - self.reauthenticated_at < Duration::seconds(REAUTHENTICATION_SECONDS)
    }

    /// When it ends if unused from now on: idle after its last use, or its absolute end,
    /// whichever comes first.
    pub fn ends_at(&self, settings: &SessionSettings) -> DateTime<Utc> {
        (self.last_seen_at + settings.idle).min(self.created_at + settings.absolute)
    }

    /// Whether it still holds at `now`.
    pub fn is_active(&self, settings: &SessionSettings, now: DateTime<Utc>) -> bool {
        now < self.ends_at(settings)
    }
}

/// The email as accounts keep it: trimmed and lowercased, so one address is one account
/// however it is typed. Errors: `Validation` (`field`) for an implausible address.
pub fn normalize_email(field: &str, email: &str) -> Result<String, Error> {
    let email = email.trim().to_lowercase();
    check_email(field, &email)?;
    Ok(email)
}

/// The password policy (OWASP): [`MIN_PASSWORD_CHARS`] to [`MAX_PASSWORD_CHARS`] characters,
/// no composition rule, nothing trimmed. Errors: `Validation` (`password`).
pub fn check_password(password: &str) -> Result<(), Error> {
    let n = password.chars().count();
    if n < MIN_PASSWORD_CHARS {
        return Err(Error::validation("password", format!("must have at least {MIN_PASSWORD_CHARS} characters")));
    }
    if n > MAX_PASSWORD_CHARS {
        return Err(Error::validation("password", format!("must have at most {MAX_PASSWORD_CHARS} characters")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn a_session_ends_when_idle_or_at_its_absolute_end() {
        let settings = SessionSettings::default();
        let mut s = Session {
            id: SessionId::from_trusted("ses_1".into()),
            user_id: UserId::from_trusted("usr_1".into()),
            token_digest: [0; 32],
            csrf_token: "c".into(),
            created_at: at("2026-11-01T00:00:00Z"),
            last_seen_at: at("2026-11-01T00:00:00Z"),
            reauthenticated_at: at("2026-11-01T00:00:00Z"),
        };
        assert!(s.recently_authenticated(at("2026-11-01T00:04:59Z")));
        assert!(!s.recently_authenticated(at("2026-11-01T00:05:00Z")), "5 minutes after the login");
        assert_eq!(s.ends_at(&settings), at("2026-11-01T12:00:00Z"));
        assert!(s.is_active(&settings, at("2026-11-01T11:59:59Z")));
        assert!(!s.is_active(&settings, at("2026-11-01T12:00:00Z")));
        // Used every few hours, it still ends seven days after the login.
        s.last_seen_at = at("2026-11-07T20:00:00Z");
        assert_eq!(s.ends_at(&settings), at("2026-11-08T00:00:00Z"));
        assert!(!format!("{s:?}").contains("csrf"), "nothing secret in its debug form");
    }

    #[test]
    fn emails_and_passwords_follow_their_rules() {
        assert_eq!(normalize_email("email", "  Ada@Example.COM ").unwrap(), "ada@example.com");
        assert!(normalize_email("email", "ada").is_err());
        assert!(check_password("correct horse battery").is_ok());
        assert!(check_password(&"x".repeat(14)).is_err());
        assert!(check_password(&"é".repeat(15)).is_ok(), "characters, not bytes");
        assert!(check_password(&"x".repeat(129)).is_err());
    }
}
