//! Dashboard accounts: sign-up, emailed links, password, two-factor login, and a merchant's
//! team, invitations and audit log.

use serde::{Deserialize, Serialize};
use stablepay_domain::account::audit::AuditEntry;
use stablepay_domain::account::link::AccountLink;
use stablepay_domain::account::{Membership, User};
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{ListOut, envelope};

/// The body of `POST /v1/dashboard/signup`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SignupIn {
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// 15 to 128 characters.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// The person's name.
    #[schema(example = "Ada Lovelace")]
    pub name: String,
    /// The new merchant's name.
    #[schema(example = "Analytical Engines Ltd")]
    pub business_name: String,
}

/// An account email was asked for; the answer is the same whether or not the address has an
/// account.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EmailSentOut {
    /// `signup`, `password_reset` or `email_verification`.
    pub object: String,
    /// The address the email goes to (as normalized).
    pub email: String,
    /// What to do next.
    pub next: String,
}

/// The body of `POST /v1/dashboard/password-resets`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResetRequestIn {
    #[schema(example = "ada@example.com")]
    pub email: String,
}

/// The body of `POST /v1/dashboard/password-resets/confirm`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResetConfirmIn {
    /// The token of the emailed link (`?token=`).
    #[schema(example = "Jx2k8dQ0bW6cYfV3tN5sR1pL7hG9mA4eZ0uK2iO8qXw")]
    pub token: String,
    /// The new password: 15 to 128 characters.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
}

/// The body of `POST /v1/dashboard/email-verifications/confirm`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TokenIn {
    /// The token of the emailed link (`?token=`).
    #[schema(example = "Jx2k8dQ0bW6cYfV3tN5sR1pL7hG9mA4eZ0uK2iO8qXw")]
    pub token: String,
}

/// A link followed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkUsedOut {
    /// `password_reset` or `email_verification`.
    pub object: String,
    /// Always true.
    pub done: bool,
}

/// The body of `POST /v1/dashboard/invitations/accept`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AcceptIn {
    /// The token of the emailed link (`?token=`).
    #[schema(example = "Jx2k8dQ0bW6cYfV3tN5sR1pL7hG9mA4eZ0uK2iO8qXw")]
    pub token: String,
    /// A new account's name (ignored when the invited email has an account).
    #[serde(default)]
    #[schema(example = "Grace Hopper")]
    pub name: Option<String>,
    /// A new account's password (15 to 128 characters), or the existing account's password.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// When the invited email's account has two-factor login: the authenticator's code, or a
    /// recovery code (without it, INVALID_CREDENTIALS with `details.reason` `otp_required`).
    #[serde(default)]
    #[schema(example = "123456")]
    pub otp: Option<String>,
}

/// The body of `POST /v1/dashboard/password`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PasswordChangeIn {
    #[schema(example = "correct horse battery staple")]
    pub current_password: String,
    /// 15 to 128 characters.
    #[schema(example = "correct horse battery staple")]
    pub new_password: String,
    /// With two-factor login: a code, unless the session re-authenticated in the last 5
    /// minutes (without either, INVALID_CREDENTIALS with `details.reason` `otp_required`).
    #[serde(default)]
    #[schema(example = "123456")]
    pub otp: Option<String>,
}

/// The body of `POST /v1/dashboard/sessions/current/reauthentication`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReauthenticationIn {
    /// The account's password.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// With two-factor login: the authenticator's code, or a recovery code.
    #[serde(default)]
    #[schema(example = "123456")]
    pub otp: Option<String>,
}

/// Two-factor enrolment begun: what the authenticator app takes (shown once).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrolmentOut {
    /// Always `two_factor_enrolment`.
    pub object: String,
    /// The secret in base32, to type in.
    pub secret: String,
    /// The `otpauth://totp/...` URI the QR code carries.
    pub otpauth_uri: String,
    /// The QR code of `otpauthUri`, as an SVG document.
    pub qr_code_svg: String,
}

/// The body of `POST /v1/dashboard/two-factor/confirm`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OtpIn {
    /// A six-digit code of the authenticator app.
    #[schema(example = "123456")]
    pub otp: String,
}

/// Two-factor login turned on.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnrolledOut {
    /// Always `two_factor`.
    pub object: String,
    pub enabled: bool,
    /// Ten single-use codes, shown once: each replaces the authenticator for one login.
    pub recovery_codes: Vec<String>,
}

/// The body of `POST /v1/dashboard/two-factor/disable`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DisableIn {
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// A code of the authenticator app, or a recovery code.
    #[schema(example = "123456")]
    pub otp: String,
}

/// The two-factor state.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TwoFactorOut {
    /// Always `two_factor`.
    pub object: String,
    pub enabled: bool,
    /// Recovery codes not used yet.
    pub recovery_codes_left: u32,
}

/// A member of a merchant.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberOut {
    /// Always `member`.
    pub object: String,
    /// `usr_...`.
    pub user_id: String,
    pub email: String,
    pub name: String,
    /// `owner`, `admin`, `developer`, `support` or `viewer`.
    pub role: String,
    pub email_verified: bool,
    pub two_factor_enabled: bool,
    /// Since when they are a member.
    pub created_at: String,
}

impl MemberOut {
    pub fn of((m, u): &(Membership, User)) -> Self {
        Self {
            object: "member".into(),
            user_id: u.id.to_string(),
            email: u.email.clone(),
            name: u.name.clone(),
            role: m.role.as_str().into(),
            email_verified: u.email_verified_at.is_some(),
            two_factor_enabled: u.two_factor_since.is_some(),
            created_at: timestamp(m.created_at),
        }
    }
}

/// The merchant's members.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembersOut {
    pub items: Vec<MemberOut>,
}

/// The body of `PATCH /v1/dashboard/merchants/{merchantId}/members/{userId}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RoleIn {
    /// `owner`, `admin`, `developer`, `support` or `viewer`.
    #[schema(example = "developer")]
    pub role: String,
}

/// A membership changed.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipChangedOut {
    /// Always `membership`.
    pub object: String,
    pub user_id: String,
    pub merchant_id: String,
    /// The role now; null when the membership ended.
    pub role: Option<String>,
}

/// The body of `POST /v1/dashboard/merchants/{merchantId}/invitations`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct InvitationIn {
    #[schema(example = "grace@example.com")]
    pub email: String,
    /// `owner`, `admin`, `developer`, `support` or `viewer`.
    #[schema(example = "support")]
    pub role: String,
}

/// An open invitation (its link's token is only in the email).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationOut {
    /// Always `invitation`.
    pub object: String,
    /// `alk_...`.
    pub id: String,
    pub email: String,
    pub role: String,
    /// The member who invited; null for the operator.
    pub invited_by: Option<String>,
    /// `queued`, `sent` or `failed`: where its email stands.
    pub email_status: String,
    pub created_at: String,
    pub expires_at: String,
}

impl InvitationOut {
    pub fn of(l: &AccountLink) -> Self {
        let inv = l.invitation.as_ref();
        Self {
            object: "invitation".into(),
            id: l.id.to_string(),
            email: l.email.clone(),
            role: inv.map_or("viewer", |i| i.role.as_str()).into(),
            invited_by: inv.and_then(|i| i.invited_by.as_ref()).map(ToString::to_string),
            email_status: l.mail.status.as_str().into(),
            created_at: timestamp(l.created_at),
            expires_at: timestamp(l.expires_at),
        }
    }
}

/// The merchant's open invitations.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvitationsOut {
    pub items: Vec<InvitationOut>,
}

/// The body of `PUT /v1/dashboard/merchants/{merchantId}/security`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecurityIn {
    /// Whether every member must sign in with two-factor login.
    #[schema(example = false)]
    pub require_two_factor: bool,
}

/// The merchant's security settings.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SecurityOut {
    /// Always `security_settings`.
    pub object: String,
    pub merchant_id: String,
    pub require_two_factor: bool,
}

/// One entry of the audit log.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryOut {
    /// Always `audit_entry`.
    pub object: String,
    /// `aud_...`.
    pub id: String,
    /// `session.created`, `member.invited`, `member.role_changed`, ...
    pub action: String,
    /// Who did it (`usr_...`); null for the operator.
    pub actor_id: Option<String>,
    pub actor_email: Option<String>,
    /// Whom it was done to (an email), if anyone.
    pub target: Option<String>,
    /// What changed, in words.
    pub detail: String,
    pub created_at: String,
}

impl From<AuditEntry> for AuditEntryOut {
    fn from(e: AuditEntry) -> Self {
        Self {
            object: "audit_entry".into(),
            id: e.id.to_string(),
            action: e.action.as_str().into(),
            actor_id: e.actor.map(|a| a.to_string()),
            actor_email: e.actor_email,
            target: e.target,
            detail: e.detail,
            created_at: timestamp(e.at),
        }
    }
}

envelope!(/// An account email asked for.
    EmailSentEnvelope, EmailSentOut);
envelope!(/// A link followed.
    LinkUsedEnvelope, LinkUsedOut);
envelope!(/// Two-factor enrolment begun.
    EnrolmentEnvelope, EnrolmentOut);
envelope!(/// Two-factor login turned on.
    EnrolledEnvelope, EnrolledOut);
envelope!(/// The two-factor state.
    TwoFactorEnvelope, TwoFactorOut);
envelope!(/// The merchant's members.
    MembersEnvelope, MembersOut);
envelope!(/// A membership changed.
    MembershipChangedEnvelope, MembershipChangedOut);
envelope!(/// An invitation.
    InvitationEnvelope, InvitationOut);
envelope!(/// The merchant's open invitations.
    InvitationsEnvelope, InvitationsOut);
envelope!(/// The merchant's security settings.
    SecurityEnvelope, SecurityOut);
envelope!(/// A page of the audit log.
    AuditLogEnvelope, ListOut<AuditEntryOut>);

/// A settlement wallet and its token.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletOut {
    /// The EIP-55 address.
    pub wallet: String,
    /// `USDC` or `USDT`.
    pub token: String,
    /// When live mode was activated (`live`), or activation asked for (`requested`; null when
    /// only the wallet is chosen).
    pub at: Option<String>,
}

/// Where live mode stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettlementOut {
    /// Always `settlement`.
    pub object: String,
    pub merchant_id: String,
    /// The live settlement, once activated; null before.
    pub live: Option<WalletOut>,
    /// Before activation: the wallet chosen, and when activation was asked for.
    pub requested: Option<WalletOut>,
    /// Whether an owner's request activates at once on this deployment.
    pub self_activation: bool,
    /// Once activated: whether new live checkouts ask unique amounts (on since the first
    /// activation, unless an owner or admin turned it off); null before.
    pub unique_amounts: Option<bool>,
}

impl SettlementOut {
    pub fn of(
        merchant: &stablepay_domain::ids::MerchantId,
        s: &stablepay_domain::account::service::settings::LiveStatus,
    ) -> Self {
        Self {
            object: "settlement".into(),
            merchant_id: merchant.to_string(),
            live: s.live.as_ref().map(|l| WalletOut {
                wallet: l.wallet.to_string(),
                token: l.token.symbol().into(),
                at: Some(timestamp(l.activated_at)),
            }),
            requested: s.requested.as_ref().map(|r| WalletOut {
                wallet: r.wallet.to_string(),
                token: r.token.symbol().into(),
                at: r.requested_at.map(timestamp),
            }),
            self_activation: s.self_activation,
            unique_amounts: s.live.as_ref().map(|l| l.unique_amounts),
        }
    }
}

/// The body of `PUT /v1/dashboard/merchants/{merchantId}/settlement-wallet`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WalletIn {
    /// An EVM address (EIP-55 when mixed case) that can receive the token.
    #[schema(example = "0x52908400098527886E0F7030069857D2E4169EE7")]
    pub wallet: String,
    /// `USDC` or `USDT`.
    #[schema(example = "USDC")]
    pub token: String,
    /// The account's password, confirming the change.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// With two-factor login, also a code of the authenticator (or a recovery code).
    #[serde(default)]
    pub otp: Option<String>,
}

/// The body of `PUT /v1/dashboard/merchants/{merchantId}/unique-amounts`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UniqueAmountsIn {
    /// Whether each new live checkout asks a few base units more than it collects, so that
    /// every transfer sent without its hash is attributable by its amount alone.
    pub enabled: bool,
}

/// A merchant's unique-amount setting.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UniqueAmountsOut {
    /// Always `unique_amounts`.
    pub object: String,
    pub merchant_id: String,
    pub enabled: bool,
}

envelope!(/// A merchant's unique-amount setting.
    UniqueAmountsEnvelope, UniqueAmountsOut);

/// The body of `POST /v1/dashboard/merchants/{merchantId}/unattributed-transfers/{id}/attribute`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DashboardAttributeIn {
    /// The checkout the transfer pays (`cs_...`, of the merchant's live mode).
    #[schema(example = "cs_4kQ8nX2mB7vR9sT1wY3zA5")]
    pub checkout_session_id: String,
    /// Why (1-500 bytes); kept in the invoice's activity and the audit log with who decided.
    #[schema(example = "The customer sent order 1001's payment and wrote to support")]
    pub reason: String,
    /// The account's password, confirming the decision.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// With two-factor login, also a code of the authenticator (or a recovery code).
    #[serde(default)]
    pub otp: Option<String>,
}

/// The body of `PUT /v1/dashboard/merchants/{merchantId}/notifications`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NotificationsIn {
    /// Whether the signed-in member gets an email when a webhook endpoint's incident opens or
    /// is resolved (as the endpoint's alert preferences say).
    pub webhook_alerts: bool,
}

/// The signed-in member's notifications.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationsOut {
    /// Always `notifications`.
    pub object: String,
    pub merchant_id: String,
    pub webhook_alerts: bool,
}

envelope!(/// Where live mode stands.
    SettlementEnvelope, SettlementOut);
envelope!(/// The member's notifications.
    NotificationsEnvelope, NotificationsOut);
