//! What accounts need: a password hasher (Argon2id in the adapter) and the store of users,
//! memberships, sessions, emailed links, two-factor secrets and the audit log.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::account::audit::AuditEntry;
use crate::account::link::{AccountLink, LinkEffect};
use crate::account::members::MembershipChange;
use crate::account::model::{LiveRequest, Membership, Session, User};
use crate::account::notice::{IncidentAlert, Notice};
use crate::account::totp::{SealedTotp, TotpSecret};
use crate::error::Error;
use crate::ids::{AccountLinkId, AuditEntryId, MerchantId, SessionId, UserId};
use crate::merchant::model::{Merchant, Token, WalletAddress};

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

/// Keeps two-factor secrets sealed at rest (the server computes codes from them, so they are
/// encrypted, not hashed; the operator's `STABLEPAY_SECRET_KEY`).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait TotpSealer: Send + Sync {
    /// Errors: `FeatureUnavailable` when no key is configured.
    fn seal_totp(&self, secret: &TotpSecret) -> Result<SealedTotp, Error>;
    /// Errors: `FeatureUnavailable` when no key is configured; `Internal` when it does not
    /// open with the key.
    fn open_totp(&self, sealed: &SealedTotp) -> Result<TotpSecret, Error>;
}

/// A user's two-factor state as stored (the secrets sealed).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TwoFactorRecord {
    /// The secret in use (two-factor login is on).
    pub secret: Option<SealedTotp>,
    /// A secret being enrolled (shown, not yet confirmed by a code).
    pub pending: Option<SealedTotp>,
    /// The step of the last code accepted (no code is accepted twice).
    pub last_step: Option<i64>,
}

/// What turning two-factor login on stores besides the pending secret: the step of the code
/// that confirmed it (the last code used), when, and the recovery codes' digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwoFactorOn {
    /// The confirming code's step.
    pub step: i64,
    /// When it was turned on.
    pub at: DateTime<Utc>,
    /// The recovery codes' digests (replacing any earlier ones).
    pub recovery_digests: Vec<[u8; 32]>,
}

/// Users, their memberships and their sessions. Users are not scoped by merchant: a user may
/// belong to several; a membership names its merchant, and every merchant-side read and change
/// names it too. Every change takes the audit entries that record it, written in its
/// transaction.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait AccountStore: Send + Sync {
    /// Inserts a user with its first membership, in one transaction. Errors: `Validation`
    /// (`email`) when a user has that email; `NotFound(Merchant)` for an unknown merchant.
    async fn insert_user(&self, user: &User, membership: &Membership, audit: &[AuditEntry]) -> Result<(), Error>;
    /// Inserts a merchant, its first owner and the owner's verification link, in one
    /// transaction (an open sign-up). Errors: `Validation` (`email`) when a user has that email.
    async fn insert_signup(
        &self,
        merchant: &Merchant,
        user: &User,
        membership: &Membership,
        link: &AccountLink,
    ) -> Result<(), Error>;
    /// The user with this (normalized) email.
    async fn user_by_email(&self, email: &str) -> Result<Option<User>, Error>;
    /// The user with this id.
    async fn user_by_id(&self, id: &UserId) -> Result<Option<User>, Error>;
    /// The user's memberships, oldest first.
    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, Error>;
    /// Inserts a new session.
    async fn insert_session(&self, session: &Session, audit: &[AuditEntry]) -> Result<(), Error>;
    /// The session whose token has this digest, with its user.
    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<(Session, User)>, Error>;
    /// Records a use of the session at `at`.
    async fn touch_session(&self, id: &SessionId, at: DateTime<Utc>) -> Result<(), Error>;
    /// Records that the session's holder gave the password (and the code) at `at`.
    async fn mark_reauthenticated(&self, id: &SessionId, at: DateTime<Utc>) -> Result<(), Error>;
    /// Gives the session a new token and CSRF token (after a privilege change).
    async fn rotate_session(&self, id: &SessionId, digest: &[u8; 32], csrf_token: &str) -> Result<(), Error>;
    /// Ends one session.
    async fn delete_session(&self, id: &SessionId) -> Result<(), Error>;
    /// Ends every session of the user but `keep`; answers how many.
    async fn delete_user_sessions(
        &self,
        user: &UserId,
        keep: Option<SessionId>,
        audit: &[AuditEntry],
    ) -> Result<u64, Error>;
    /// Replaces the user's password hash and ends every session of theirs but `keep`.
    async fn set_password(
        &self,
        user: &UserId,
        password_hash: &str,
        keep: Option<SessionId>,
        audit: &[AuditEntry],
    ) -> Result<(), Error>;

    /// Inserts a link with its email (`link.mail`, into the outbox), marking used the unused
    /// links it replaces: those of the same purposes, email and (for an invitation) merchant;
    /// their emails that have not gone are skipped.
    async fn insert_link(&self, link: &AccountLink, audit: &[AuditEntry]) -> Result<(), Error>;
    /// The link whose last emailed token has this digest.
    async fn link_by_digest(&self, digest: &[u8; 32]) -> Result<Option<AccountLink>, Error>;
    /// The link with this id (the outbox's delivery of its email reads it).
    async fn link_by_id(&self, id: &AccountLinkId) -> Result<Option<AccountLink>, Error>;
    /// Records the digest of the token about to be emailed (before the email is sent, so a
    /// sent token always works).
    async fn set_link_token(&self, id: &AccountLinkId, digest: &[u8; 32]) -> Result<(), Error>;
    /// Marks the link used at `at` and applies `effect`, in one transaction; `false` (and
    /// nothing changed) when it was used meanwhile. Errors: `Validation` (`email`) when the
    /// effect creates a user whose email exists.
    async fn consume_link(
        &self,
        id: &AccountLinkId,
        at: DateTime<Utc>,
        effect: &LinkEffect,
        audit: &[AuditEntry],
    ) -> Result<bool, Error>;
    /// The merchant's invitations that are neither used nor expired at `now`, newest first.
    async fn invitations(&self, merchant: &MerchantId, now: DateTime<Utc>) -> Result<Vec<AccountLink>, Error>;
    /// Revokes one of the merchant's unused invitations; `false` when there is none.
    async fn revoke_invitation(
        &self,
        merchant: &MerchantId,
        id: &AccountLinkId,
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<bool, Error>;

    /// The user's two-factor state.
    async fn two_factor(&self, user: &UserId) -> Result<TwoFactorRecord, Error>;
    /// Stores a secret being enrolled (replacing an earlier one not confirmed).
    async fn set_pending_two_factor(&self, user: &UserId, sealed: &SealedTotp) -> Result<(), Error>;
    /// Turns two-factor login on with the pending secret, as `on` says; `false` when nothing
    /// is pending.
    async fn enable_two_factor(&self, user: &UserId, on: &TwoFactorOn, audit: &[AuditEntry]) -> Result<bool, Error>;
    /// Turns two-factor login off: the secrets and recovery codes are deleted.
    async fn disable_two_factor(&self, user: &UserId, audit: &[AuditEntry]) -> Result<(), Error>;
    /// Records `step` as the last code used, if it is after the last one; `false` otherwise
    /// (the code was used already).
    async fn use_totp_step(&self, user: &UserId, step: i64) -> Result<bool, Error>;
    /// Marks the user's unused recovery code with this digest used; `false` when there is none.
    async fn use_recovery_code(
        &self,
        user: &UserId,
        digest: &[u8; 32],
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<bool, Error>;
    /// How many unused recovery codes the user has.
    async fn recovery_codes_left(&self, user: &UserId) -> Result<u32, Error>;

    /// The merchant's members with their users, oldest first.
    async fn members(&self, merchant: &MerchantId) -> Result<Vec<(Membership, User)>, Error>;
    /// Changes one membership under the last-owner rule, checked with the merchant's
    /// memberships locked (see `account::members::check_change`). Errors: `NotFound(Member)`;
    /// `AuthForbidden` from the rule.
    async fn change_membership(
        &self,
        merchant: &MerchantId,
        user: &UserId,
        change: MembershipChange,
        audit: &[AuditEntry],
    ) -> Result<Membership, Error>;
    /// Sets whether the merchant requires two-factor login of its members.
    async fn set_require_two_factor(&self, merchant: &MerchantId, on: bool, audit: &[AuditEntry]) -> Result<(), Error>;
    /// Sets whether the member gets webhook alert emails. Errors: `NotFound(Member)`.
    async fn set_webhook_alerts(&self, merchant: &MerchantId, user: &UserId, on: bool) -> Result<(), Error>;

    /// The settlement wallet an owner chose for live mode before activation, and whether
    /// activation was asked for.
    async fn live_request(&self, merchant: &MerchantId) -> Result<Option<LiveRequest>, Error>;
    /// Sets the settlement wallet: the live settlement's when the merchant is active (its
    /// activation time and unique-amount setting kept), else the one live activation will use;
    /// with the notices to its owners.
    async fn set_settlement_wallet(
        &self,
        merchant: &MerchantId,
        wallet: &WalletAddress,
        token: Token,
        notices: &[Notice],
        audit: &[AuditEntry],
    ) -> Result<(), Error>;
    /// Records that activation was asked for at `at`.
    async fn request_activation(
        &self,
        merchant: &MerchantId,
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<(), Error>;
    /// Activates live mode with the requested wallet at `at` (self-activation), with unique
    /// amounts on or off as `unique_amounts` says; `false` when no wallet was chosen.
    async fn activate_requested(
        &self,
        merchant: &MerchantId,
        at: DateTime<Utc>,
        unique_amounts: bool,
        audit: &[AuditEntry],
    ) -> Result<bool, Error>;

    /// Turns unique amounts on or off for the live checkouts `merchant` creates from now on, with
    /// `audit` in the same transaction; `false` (nothing written) when it is not activated for
    /// live mode.
    async fn set_unique_amounts(&self, merchant: &MerchantId, on: bool, audit: &[AuditEntry]) -> Result<bool, Error>;
    /// Writes entries to their merchants' audit logs (what was done elsewhere, such as a
    /// transfer attributed, recorded with its author).
    async fn record_audit(&self, audit: &[AuditEntry]) -> Result<(), Error>;

    /// The notice with this id (the outbox's delivery of its email reads it).
    async fn notice(&self, id: &crate::ids::NoticeId) -> Result<Option<Notice>, Error>;
    /// Up to `limit` webhook incidents whose alert is due: opened (or resolved) with the
    /// endpoint asking for that alert, not yet queued; with the members who asked for alerts.
    /// An incident whose endpoint does not ask is marked done without notices.
    async fn pending_incident_alerts(&self, limit: u32) -> Result<Vec<IncidentAlert>, Error>;
    /// Marks the alert queued with its notices, in one transaction (once: a second call for the
    /// same alert writes nothing).
    async fn record_incident_alert(&self, alert: &IncidentAlert, notices: &[Notice]) -> Result<(), Error>;

    /// Up to `limit` entries of the merchant's audit log, newest first, after `before`.
    async fn audit_log(
        &self,
        merchant: &MerchantId,
        limit: u32,
        before: Option<AuditEntryId>,
    ) -> Result<Vec<AuditEntry>, Error>;
}
