//! The one way to become signed in, and every secret check.
//!
//! A password, a code of the authenticator and a recovery code are checked only here
//! (`Accounts::check_secrets`), within the failure-only quotas: each check reserves a slot
//! of its account (5 per 15 minutes, whatever session or address asks) and, for a check
//! without a session, of its client address (20 per 15 minutes); only a failed check keeps
//! them, and the next one past either answers `RateLimited`, the right secret included. A
//! session is made only by `Accounts::open_session` after such a check (login, an invitation
//! accepted by an existing account) or for an account created by the request itself (an
//! invitation accepted with a new password). What can take an account over needs the secrets
//! given within 5 minutes ([`Accounts::require_recent`], or a confirmation sent with the
//! change).

use crate::account::audit::AuditAction;
use crate::account::audit::AuditEntry;
use crate::account::model::{User, check_password, normalize_email};
use crate::account::service::accounts::{Accounts, Current, SignedIn};
use crate::error::{Error, Throttle};
use crate::ids::PublicToken;
use crate::ratelimit::model::{DASHBOARD_LOGIN, DASHBOARD_LOGIN_ACCOUNT, Policy};
use crate::ratelimit::service::RateLimits;

/// How a change is confirmed: the password, and with two-factor login also a code (unless the
/// session gave one in the last 5 minutes, for the changes that allow it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Confirmation<'a> {
    /// The account's password.
    pub password: &'a str,
    /// A code of the authenticator (or a recovery code), required with two-factor login.
    pub otp: Option<&'a str>,
}

/// The secrets a check is given, and where from.
#[derive(Clone, Copy, Debug, Default)]
pub struct Secrets<'a> {
    /// The password.
    pub password: &'a str,
    /// A code of the authenticator or a recovery code.
    pub otp: Option<&'a str>,
    /// The client's address, for a check made without a session (login, an invitation);
    /// `None` behind a session (the account's quota alone counts).
    pub client: Option<&'a str>,
}

/// Whether a check needs the code of an account with two-factor login.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Code {
    /// Always (login, turning two-factor login off).
    Required,
    /// Unless the session gave it within the last 5 minutes and none is sent.
    UnlessRecent,
}

/// The key of an account's quota: its email as accounts keep it (an implausible one, trimmed
/// and lower-cased: it has its quota like any other, so nothing tells it apart).
pub fn account_key(email: &str) -> String {
    normalize_email("email", email).unwrap_or_else(|_| email.trim().to_lowercase())
}

impl Accounts<'_> {
    fn limits(&self) -> RateLimits<'_> {
        RateLimits { limiter: self.limiter }
    }

    /// Reserves one attempt of `who` in `policy`. Errors: `RateLimited`. A limiter that cannot
    /// answer lets the attempt through (its adapter falls back to this process's budgets).
    async fn reserve(&self, policy: &Policy, who: &str) -> Result<(), Error> {
        match self.limits().check(policy, who, &["login"]).await {
            Some(verdict) if !verdict.allowed => Err(Error::RateLimited(Throttle {
                policy: policy.name,
                quota: policy.quota,
                window_seconds: policy.window_seconds,
                reset_seconds: verdict.reset_seconds,
                retry_after_seconds: verdict.retry_after_seconds.max(1),
            })),
            _ => Ok(()),
        }
    }

    /// Checks the password of `user` (of `account`, the key its quota has; `None`: no such
    /// account, checked for the same time) and, with two-factor login, its code, within the
    /// failure-only quotas. Answers the user. Errors: `RateLimited`; `InvalidCredentials`
    /// (the same for no account and a wrong password); `SecondFactor` (missing or wrong code).
    pub(super) async fn check_secrets(
        &self,
        (account, user): (&str, Option<&User>),
        s: Secrets<'_>,
        code: (Code, bool),
    ) -> Result<User, Error> {
        let by_account = (&DASHBOARD_LOGIN_ACCOUNT, account);
        self.reserve(by_account.0, by_account.1).await?;
        let by_client = s.client.map(|c| (&DASHBOARD_LOGIN, c));
        if let Some((policy, who)) = by_client
            && let Err(refused) = self.reserve(policy, who).await
        {
            self.limits().refund(by_account.0, by_account.1, &["login"]).await;
            return Err(refused);
        }
        let outcome = self.verify_secrets(user, s, code).await;
        // A failure-only quota: a wrong password or a wrong code keeps its slots; a right
        // password without its code (the first step of a two-factor login) does not.
        if !matches!(outcome, Err(Error::InvalidCredentials | Error::SecondFactor { missing: false })) {
            for (policy, who) in std::iter::once(by_account).chain(by_client) {
                self.limits().refund(policy, who, &["login"]).await;
            }
        }
        outcome
    }

    /// The password check (one hash either way) and the code's; `code.1` is whether the
    /// session authenticated recently.
    async fn verify_secrets(&self, user: Option<&User>, s: Secrets<'_>, code: (Code, bool)) -> Result<User, Error> {
        let matches = self.hasher.verify(s.password, user.map(|u| u.password_hash.as_str()));
        let Some(user) = user.filter(|_| matches) else {
            return Err(Error::InvalidCredentials);
        };
        if user.two_factor_since.is_some() {
            let otp = s.otp.filter(|o| !o.trim().is_empty());
            match (otp, code) {
                (Some(otp), _) => self.check_second_factor(user, otp).await?,
                (None, (Code::UnlessRecent, true)) => {}
                (None, _) => return Err(Error::SecondFactor { missing: true }),
            }
        }
        Ok(user.clone())
    }

    /// A new session for `user`, who just gave every secret login demands, with `audit`.
    pub(super) async fn open_session(&self, user: User, audit: &[AuditEntry]) -> Result<SignedIn, Error> {
        let (session, token) = self.new_session(&user.id);
        self.store.insert_session(&session, audit).await?;
        let memberships = self.store.memberships(&user.id).await?;
        Ok(SignedIn { current: Current { session, user, memberships }, token })
    }

    /// Re-authentication: the signed-in user gives the password and, with two-factor login, a
    /// code; for the next 5 minutes the session may make the changes that can take the account
    /// over. Errors: `RateLimited`; `InvalidCredentials`; `SecondFactor`.
    pub async fn reauthenticate(&self, current: &mut Current, password: &str, otp: Option<&str>) -> Result<(), Error> {
        let secrets = Secrets { password, otp, client: None };
        self.check_secrets((&current.user.email, Some(&current.user)), secrets, (Code::Required, false)).await?;
        self.mark_recent(current).await
    }

    /// A change's confirmation sent with it (the password, and the code unless the session
    /// gave it in the last 5 minutes): checked within the account's quota, and the session
    /// counts as re-authenticated. Errors: `RateLimited`; `InvalidCredentials`; `SecondFactor`.
    pub(super) async fn confirm(&self, current: &mut Current, c: Confirmation<'_>, code: Code) -> Result<(), Error> {
        let recent = current.session.recently_authenticated(self.clock.system_now());
        let secrets = Secrets { password: c.password, otp: c.otp, client: None };
        self.check_secrets((&current.user.email, Some(&current.user)), secrets, (code, recent)).await?;
        self.mark_recent(current).await
    }

    async fn mark_recent(&self, current: &mut Current) -> Result<(), Error> {
        let now = self.clock.system_now();
        self.store.mark_reauthenticated(&current.session.id, now).await?;
        current.session.reauthenticated_at = now;
        Ok(())
    }

    /// What can take the account over needs the secrets given within the last 5 minutes.
    /// Errors: `ReauthenticationRequired`.
    pub fn require_recent(&self, current: &Current) -> Result<(), Error> {
        if current.session.recently_authenticated(self.clock.system_now()) {
            Ok(())
        } else {
            Err(Error::ReauthenticationRequired)
        }
    }

    /// A new session for the account of `email`, given its password and, when the account has
    /// two-factor login, `otp` (a code of the authenticator or a recovery code), within the
    /// failure-only quotas of the account and of `secrets.client`. Errors: `RateLimited`;
    /// `InvalidCredentials`, the same for an unknown email (after a password check's time) and
    /// a wrong password; `SecondFactor` when the password matched but `otp` is missing or wrong.
    pub async fn login(&self, email: &str, secrets: Secrets<'_>) -> Result<SignedIn, Error> {
        let user = match normalize_email("email", email) {
            Ok(email) => self.store.user_by_email(&email).await?,
            Err(_) => None,
        };
        let key = account_key(email);
        let user = self.check_secrets((&key, user.as_ref()), secrets, (Code::Required, false)).await?;
        let audit = self.audit_everywhere(&user, (AuditAction::LoggedIn, "signed in")).await?;
        self.open_session(user, &audit).await
    }

    /// Changes the signed-in user's password, confirmed with the current one (and, with
    /// two-factor login, a code unless the session gave one in the last 5 minutes); every other
    /// session of theirs ends and this one gets a new token (answered). Errors: `Validation`
    /// (`new_password`); `InvalidCredentials` (`current_password` wrong); `SecondFactor`;
    /// `RateLimited`.
    pub async fn change_password(
        &self,
        current: &mut Current,
        confirmation: Confirmation<'_>,
        new_password: &str,
    ) -> Result<PublicToken, Error> {
        check_password(new_password).map_err(|e| e.renamed("new_password"))?;
        self.confirm(current, confirmation, Code::UnlessRecent).await?;
        let hash = self.hasher.hash(new_password)?;
        let audit = self.audit_everywhere(&current.user, (AuditAction::PasswordChanged, "changed")).await?;
        self.store.set_password(&current.user.id, &hash, Some(current.session.id.clone()), &audit).await?;
        current.user.password_hash = hash;
        self.rotate(current).await
    }
}
