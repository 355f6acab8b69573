//! Dashboard sessions: what a login takes, and the session as the dashboard reads it.

use serde::{Deserialize, Serialize};
use stablepay_domain::account::service::Current;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::envelope;

/// The body of `POST /v1/dashboard/sessions`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SessionIn {
    /// The account's email (any case).
    #[schema(example = "ada@example.com")]
    pub email: String,
    /// Its password.
    #[schema(example = "correct horse battery staple")]
    pub password: String,
    /// With two-factor login: the authenticator's six-digit code, or a recovery code.
    #[serde(default)]
    #[schema(example = "123456")]
    pub otp: Option<String>,
}

/// The signed-in user.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionUserOut {
    /// `usr_...`.
    pub id: String,
    pub email: String,
    pub name: String,
    /// Whether the email was verified (until then, test mode only).
    pub email_verified: bool,
    /// Whether two-factor login is on.
    pub two_factor_enabled: bool,
}

/// A merchant the user belongs to, with the user's role there.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MembershipOut {
    /// `mer_...`.
    pub merchant_id: String,
    /// `owner`, `admin`, `developer`, `support` or `viewer`.
    pub role: String,
    /// Whether the merchant requires two-factor login of its members (a member without it can
    /// do nothing there but enrol).
    pub requires_two_factor: bool,
}

/// A dashboard session (the cookie `stablepay_session` carries its token; the token is never
/// in a body).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionOut {
    /// Always `dashboard_session`.
    #[schema(example = "dashboard_session")]
    pub object: String,
    /// `ses_...`.
    pub id: String,
    pub user: SessionUserOut,
    pub memberships: Vec<MembershipOut>,
    /// What every mutation made with this session sends as `X-CSRF-Token`.
    pub csrf_token: String,
    pub created_at: String,
    /// When the session ends if it is not used again (idle, or its absolute end).
    pub expires_at: String,
    /// When its holder last gave the password (and the code, with two-factor login): the login
    /// or a re-authentication. Enrolling two-factor login and the changes that take a password
    /// need it within the last 5 minutes (else AUTH_FORBIDDEN, `details.reason`
    /// `reauthentication_required`).
    pub reauthenticated_at: String,
}

impl SessionOut {
    /// The session of `current`, ending at `expires_at`.
    pub fn of(current: &Current, expires_at: chrono::DateTime<chrono::Utc>) -> Self {
        let u = &current.user;
        Self {
            object: "dashboard_session".into(),
            id: current.session.id.to_string(),
            user: SessionUserOut {
                id: u.id.to_string(),
                email: u.email.clone(),
                name: u.name.clone(),
                email_verified: u.email_verified_at.is_some(),
                two_factor_enabled: u.two_factor_since.is_some(),
            },
            memberships: current
                .memberships
                .iter()
                .map(|m| MembershipOut {
                    merchant_id: m.merchant_id.to_string(),
                    role: m.role.as_str().into(),
                    requires_two_factor: m.requires_two_factor,
                })
                .collect(),
            csrf_token: current.session.csrf_token.clone(),
            created_at: timestamp(current.session.created_at),
            expires_at: timestamp(expires_at),
            reauthenticated_at: timestamp(current.session.reauthenticated_at),
        }
    }
}

/// Sessions ended by a logout.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SessionsEndedOut {
    /// Always `sessions_ended`.
    #[schema(example = "sessions_ended")]
    pub object: String,
    /// How many sessions ended.
    pub ended: u64,
}

envelope!(/// A dashboard session.
    SessionEnvelope, SessionOut);
envelope!(/// Sessions ended.
    SessionsEndedEnvelope, SessionsEndedOut);
