//! A merchant's audit log: who changed the team, its security, or signed in, and when. Each
//! entry is written in the transaction of the change it records.

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::ids::{AuditEntryId, MerchantId, UserId};

/// The most entries one page of the audit log holds.
pub const MAX_AUDIT_PAGE: u32 = 100;

/// What an audit entry records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AuditAction {
    /// A member signed in.
    LoggedIn,
    /// A member ended every session of theirs.
    LoggedOutEverywhere,
    /// A member's password was changed or reset (their other sessions ended).
    PasswordChanged,
    /// A member turned two-factor login on.
    TwoFactorEnabled,
    /// A member turned two-factor login off.
    TwoFactorDisabled,
    /// A member signed in with a recovery code.
    RecoveryCodeUsed,
    /// Someone was invited.
    MemberInvited,
    /// An invitation was revoked.
    InvitationRevoked,
    /// Someone joined (an invitation accepted, or the operator's CLI).
    MemberJoined,
    /// A member's role changed.
    RoleChanged,
    /// A member was removed (or left).
    MemberRemoved,
    /// The merchant's two-factor requirement changed.
    SecurityChanged,
    /// The settlement wallet changed.
    WalletChanged,
    /// An owner asked for live activation.
    ActivationRequested,
    /// Live mode was activated (by an owner, where self-activation is allowed).
    LiveActivated,
    /// Unique amounts were turned on or off.
    UniqueAmountsChanged,
    /// A member attributed a recorded transfer to a checkout.
    TransferAttributed,
}

impl AuditAction {
    /// Every action.
    pub const ALL: [Self; 17] = [
        Self::LoggedIn,
        Self::LoggedOutEverywhere,
        Self::PasswordChanged,
        Self::TwoFactorEnabled,
        Self::TwoFactorDisabled,
        Self::RecoveryCodeUsed,
        Self::MemberInvited,
        Self::InvitationRevoked,
        Self::MemberJoined,
        Self::RoleChanged,
        Self::MemberRemoved,
        Self::SecurityChanged,
        Self::WalletChanged,
        Self::ActivationRequested,
        Self::LiveActivated,
        Self::UniqueAmountsChanged,
        Self::TransferAttributed,
    ];

    /// The action as stored and shown (`member.invited`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::LoggedIn => "session.created",
            Self::LoggedOutEverywhere => "sessions.ended",
            Self::PasswordChanged => "password.changed",
            Self::TwoFactorEnabled => "two_factor.enabled",
            Self::TwoFactorDisabled => "two_factor.disabled",
            Self::RecoveryCodeUsed => "two_factor.recovery_code_used",
            Self::MemberInvited => "member.invited",
            Self::InvitationRevoked => "invitation.revoked",
            Self::MemberJoined => "member.joined",
            Self::RoleChanged => "member.role_changed",
            Self::MemberRemoved => "member.removed",
            Self::SecurityChanged => "security.changed",
            Self::WalletChanged => "settlement_wallet.changed",
            Self::ActivationRequested => "live_activation.requested",
            Self::LiveActivated => "live_activation.completed",
            Self::UniqueAmountsChanged => "unique_amounts.changed",
            Self::TransferAttributed => "transfer.attributed",
        }
    }

    /// Reads an action as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.as_str() == value)
    }
}

/// One entry of a merchant's audit log.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuditEntry {
    /// `aud_...`.
    pub id: AuditEntryId,
    /// Whose log.
    pub merchant_id: MerchantId,
    /// Who did it (none: the operator's CLI, or an invitation's new member before they existed).
    pub actor: Option<UserId>,
    /// The actor's email when it was written (a removed user stays readable).
    pub actor_email: Option<String>,
    /// What was done.
    pub action: AuditAction,
    /// Whom or what it was done to (a user's email, an invitation's email), if anyone.
    pub target: Option<String>,
    /// What changed, in words (a role, a setting); never a secret.
    pub detail: String,
    /// When.
    pub at: DateTime<Utc>,
}

/// Who did something, as an audit entry names them.
#[derive(Clone, Copy, Debug)]
pub struct Actor<'a> {
    /// The user (none: the operator).
    pub id: Option<&'a UserId>,
    /// Their email.
    pub email: Option<&'a str>,
}

impl AuditEntry {
    /// A new entry in `merchant`'s log.
    pub fn new(
        crypto: &dyn Crypto,
        merchant: &MerchantId,
        actor: Actor<'_>,
        (action, target, detail): (AuditAction, Option<&str>, String),
        at: DateTime<Utc>,
    ) -> Self {
        Self {
            id: AuditEntryId::generate(crypto),
            merchant_id: merchant.clone(),
            actor: actor.id.cloned(),
            actor_email: actor.email.map(str::to_owned),
            action,
            target: target.map(str::to_owned),
            detail,
            at,
        }
    }
}
