//! The account use cases' core: the operator's user creation, the session behind a cookie
//! (ended when idle or past its absolute end), logout, logout everywhere, and what a member may
//! do in a merchant (`Current::require`). Login and password change are in `sign_in`, with
//! every secret check.

use chrono::Duration;

use crate::account::audit::{Actor, AuditAction, AuditEntry};
use crate::account::capability::{Action, Role, require};
use crate::account::link::SignupMode;
use crate::account::model::{
    MAX_USER_NAME_BYTES, Membership, Session, SessionSettings, User, check_password, normalize_email,
};
use crate::account::ports::{AccountStore, PasswordHasher, TotpSealer};
use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::{Error, Resource};
use crate::ids::{MerchantId, PublicToken, SessionId, UserId};
use crate::merchant::model::{ChainSettings, Merchant};
use crate::merchant::ports::MerchantStore;
use crate::mode::Mode;
use crate::url::PublicPages;

/// A session's last use is written at most this often (a request within it reads only).
pub const TOUCH_EVERY_SECONDS: i64 = 60;

/// The account use cases.
pub struct Accounts<'a> {
    /// Users, memberships, sessions, links, two-factor state and the audit log.
    pub store: &'a dyn AccountStore,
    /// Merchants (a membership's must exist).
    pub merchants: &'a dyn MerchantStore,
    /// Password hashes.
    pub hasher: &'a dyn PasswordHasher,
    /// Two-factor secrets at rest.
    pub sealer: &'a dyn TotpSealer,
    /// Ids and tokens.
    pub crypto: &'a dyn Crypto,
    /// The real time (sessions do not follow a test clock).
    pub clock: &'a dyn Clock,
    /// The failure-only quotas of secret checks.
    pub limiter: &'a dyn crate::ratelimit::ports::RateLimiter,
    /// Where the emailed links point.
    pub pages: &'a PublicPages,
    /// The chain's token contracts (a settlement wallet may not be one).
    pub chain: &'a ChainSettings,
    /// How long sessions last, and who may create an account.
    pub settings: AccountSettings,
}

/// The operator's account settings.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountSettings {
    /// How long sessions last.
    pub sessions: SessionSettings,
    /// Who may create an account (`STABLEPAY_SIGNUP`).
    pub signup: SignupMode,
    /// Whether an owner's live activation request activates at once
    /// (`STABLEPAY_SELF_ACTIVATION`), or waits for the operator.
    pub self_activation: bool,
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
#[derive(Clone, Debug)]
pub struct Current {
    /// The session.
    pub session: Session,
    /// Its user.
    pub user: User,
    /// The user's memberships.
    pub memberships: Vec<Membership>,
}

impl Current {
    /// The user's membership of `merchant`. Errors: `NotFound(Merchant)` when they have none
    /// (another merchant's id is unknown to them).
    pub fn membership(&self, merchant: &MerchantId) -> Result<&Membership, Error> {
        self.memberships.iter().find(|m| &m.merchant_id == merchant).ok_or(Error::NotFound(Resource::Merchant))
    }

    /// The merchants that require two-factor login while the user has none: every action
    /// there waits for the enrolment.
    pub fn two_factor_required_by(&self) -> Vec<&MerchantId> {
        if self.user.two_factor_since.is_some() {
            return Vec::new();
        }
        self.memberships.iter().filter(|m| m.requires_two_factor).map(|m| &m.merchant_id).collect()
    }

    /// What the user may do in `merchant` and `mode`: a member, enrolled in two-factor login
    /// when the merchant requires it, with a verified email for live mode, and a role allowed
    /// `action`. Errors: `NotFound(Merchant)`; `AuthForbidden` saying which rule refused.
    pub fn require(&self, merchant: &MerchantId, mode: Mode, action: Action) -> Result<&Membership, Error> {
        let membership = self.membership(merchant)?;
        if membership.requires_two_factor && self.user.two_factor_since.is_none() {
            return Err(Error::AuthForbidden("this merchant requires two-factor login: enrol it first".into()));
        }
        if mode == Mode::Live && self.user.email_verified_at.is_none() {
            return Err(Error::AuthForbidden("verify your email to use live mode".into()));
        }
        require(membership.role, action, mode)?;
        Ok(membership)
    }

    /// The user as an audit entry names them.
    pub fn actor(&self) -> Actor<'_> {
        Actor { id: Some(&self.user.id), email: Some(&self.user.email) }
    }
}

/// What a member may do in one merchant, in each mode: the domain's one answer a dashboard
/// page reads to offer only what [`Current::require`] would let through (the role's
/// capabilities, the merchant's two-factor rule, a verified email for live mode). Pages look
/// actions up here; posts are decided by the use cases, by the same rule.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Allowed {
    /// Bit `i`: `Action::ALL[i]` is allowed in test mode.
    test: u32,
    /// Likewise in live mode.
    live: u32,
}

impl Allowed {
    /// What `current` may do in `merchant` (nothing when they are not a member).
    pub fn of(current: &Current, merchant: &MerchantId) -> Self {
        let bits = |mode: Mode| {
            Action::ALL
                .iter()
                .enumerate()
                .filter(|(_, a)| current.require(merchant, mode, **a).is_ok())
                .fold(0u32, |bits, (i, _)| bits | (1u32 << i))
        };
        Self { test: bits(Mode::Test), live: bits(Mode::Live) }
    }

    /// Whether `action` is allowed in `mode`.
    pub fn allows(self, mode: Mode, action: Action) -> bool {
        let bits = if mode == Mode::Live { self.live } else { self.test };
        Action::ALL.iter().position(|a| *a == action).is_some_and(|i| bits & (1u32 << i) != 0)
    }
}

/// A name as accounts keep it: trimmed, 1 to 200 bytes on one line. Errors: `Validation`
/// (`field`).
pub fn check_name(field: &str, name: &str) -> Result<String, Error> {
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_USER_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(Error::validation(field, format!("must be 1 to {MAX_USER_NAME_BYTES} bytes on one line")));
    }
    crate::text::check_bidi(field, name)?;
    Ok(name.to_owned())
}

impl Accounts<'_> {
    /// One audit entry for each merchant the user belongs to.
    pub(super) async fn audit_everywhere(
        &self,
        user: &User,
        (action, detail): (AuditAction, &str),
    ) -> Result<Vec<AuditEntry>, Error> {
        let now = self.clock.system_now();
        let actor = Actor { id: Some(&user.id), email: Some(&user.email) };
        Ok(self
            .store
            .memberships(&user.id)
            .await?
            .iter()
            .map(|m| AuditEntry::new(self.crypto, &m.merchant_id, actor, (action, None, detail.to_owned()), now))
            .collect())
    }

    /// The merchant `current` acts for in `mode`, allowed `action` there ([`Current::require`]):
    /// what a dashboard page needs to run the merchant's use cases. Errors: `NotFound(Merchant)`
    /// (not a member); `AuthForbidden`.
    pub async fn merchant_for(
        &self,
        current: &Current,
        merchant: &MerchantId,
        (mode, action): (Mode, Action),
    ) -> Result<Merchant, Error> {
        current.require(merchant, mode, action)?;
        self.merchants.get_merchant(merchant).await
    }

    /// The merchant of a dashboard page (as [`Accounts::merchant_for`]) and what the member may
    /// do there, in each mode: what the page offers. Errors: as [`Accounts::merchant_for`].
    pub async fn place_for(
        &self,
        current: &Current,
        merchant: &MerchantId,
        needs: (Mode, Action),
    ) -> Result<(Merchant, Allowed), Error> {
        let loaded = self.merchant_for(current, merchant, needs).await?;
        Ok((loaded, Allowed::of(current, merchant)))
    }

    /// The operator's `stablepay user create`: a user (email verified) who is `role` of
    /// `merchant`. Errors: `Validation` (`email`, `name`, `password`); `NotFound(Merchant)`.
    pub async fn create_user(
        &self,
        (email, name, password): (&str, &str, &str),
        merchant: &MerchantId,
        role: Role,
    ) -> Result<User, Error> {
        let email = normalize_email("email", email)?;
        let name = check_name("name", name)?;
        check_password(password)?;
        self.merchants.get_merchant(merchant).await?;
        let now = self.clock.system_now();
        let user = User {
            id: UserId::generate(self.crypto),
            email,
            name,
            password_hash: self.hasher.hash(password)?,
            email_verified_at: Some(now),
            two_factor_since: None,
            created_at: now,
        };
        let membership = Membership::new(&user.id, merchant, role, now);
        let detail = format!("joined as {} (operator)", role.as_str());
        let actor = Actor { id: None, email: None };
        let audit =
            AuditEntry::new(self.crypto, merchant, actor, (AuditAction::MemberJoined, Some(&user.email), detail), now);
        self.store.insert_user(&user, &membership, &[audit]).await?;
        Ok(user)
    }

    /// A new session of `user` at the real time, and its token.
    pub(super) fn new_session(&self, user: &UserId) -> (Session, PublicToken) {
        let now = self.clock.system_now();
        let token = PublicToken::generate(self.crypto);
        let session = Session {
            id: SessionId::generate(self.crypto),
            user_id: user.clone(),
            token_digest: self.crypto.sha256(token.as_str().as_bytes()),
            csrf_token: PublicToken::generate(self.crypto).as_str().to_owned(),
            created_at: now,
            last_seen_at: now,
            reauthenticated_at: now,
        };
        (session, token)
    }

    /// Gives the session a new token and CSRF token (after a privilege change: no fixation);
    /// answers the new token.
    pub async fn rotate(&self, current: &mut Current) -> Result<PublicToken, Error> {
        let token = PublicToken::generate(self.crypto);
        let digest = self.crypto.sha256(token.as_str().as_bytes());
        let csrf = PublicToken::generate(self.crypto).as_str().to_owned();
        self.store.rotate_session(&current.session.id, &digest, &csrf).await?;
        current.session.token_digest = digest;
        current.session.csrf_token = csrf;
        Ok(token)
    }

    /// The session behind a cookie's `token`, with its user and memberships; its use is
    /// recorded. Errors: `AuthRequired` for no such session, or one that ended (then deleted).
    pub async fn current(&self, token: &str) -> Result<Current, Error> {
        let token = PublicToken::parse(token).ok_or(Error::AuthRequired)?;
        let digest = self.crypto.sha256(token.as_str().as_bytes());
        let (mut session, user) = self.store.session_by_digest(&digest).await?.ok_or(Error::AuthRequired)?;
        let now = self.clock.system_now();
        if !session.is_active(&self.settings.sessions, now) {
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
    pub async fn logout_everywhere(&self, user: &User) -> Result<u64, Error> {
        let audit = self.audit_everywhere(user, (AuditAction::LoggedOutEverywhere, "every session ended")).await?;
        self.store.delete_user_sessions(&user.id, None, &audit).await
    }
}
