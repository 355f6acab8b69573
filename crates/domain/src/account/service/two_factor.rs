//! Two-factor login: enrol (a secret shown once as a QR code, confirmed by a code, with ten
//! recovery codes shown once and stored hashed), the second step of a login, and turning it off
//! with the password and a code.

use crate::account::audit::AuditAction;
use crate::account::model::User;
use crate::account::ports::TwoFactorOn;
use crate::account::service::accounts::{Accounts, Current};
use crate::account::service::sign_in::Code;
use crate::account::service::sign_in::Confirmation;
use crate::account::totp::{
    RECOVERY_CODES, TotpSecret, matching_step, normalize_recovery_code, recovery_code, step_of,
};
use crate::error::Error;
use crate::ids::PublicToken;

/// The issuer an authenticator app shows next to the account.
pub const ISSUER: &str = "stablepay";

/// A secret being enrolled, for the authenticator app (shown once).
#[derive(Debug)]
pub struct Enrolment {
    /// The secret in base32, to type in.
    pub secret: String,
    /// The `otpauth://` URI, for the QR code.
    pub uri: String,
}

/// Two-factor login turned on: the recovery codes (shown once) and the session's new token.
#[derive(Debug)]
pub struct Enrolled {
    /// Ten single-use codes that replace the authenticator once each.
    pub recovery_codes: Vec<String>,
    /// The session's new token (a privilege change renews it).
    pub token: PublicToken,
}

impl Accounts<'_> {
    /// Starts (or restarts) enrolment: a new secret, stored sealed until a code confirms it.
    /// Errors: `Validation` (`otp`) when two-factor login is on already;
    /// `ReauthenticationRequired` unless the session gave the password in the last 5 minutes;
    /// `FeatureUnavailable` without the operator's secret key.
    pub async fn start_two_factor(&self, current: &Current) -> Result<Enrolment, Error> {
        if current.user.two_factor_since.is_some() {
            return Err(Error::validation("otp", "two-factor login is on already; turn it off to enrol again"));
        }
        self.require_recent(current)?;
        let secret = TotpSecret::generate(self.crypto);
        self.store.set_pending_two_factor(&current.user.id, &self.sealer.seal_totp(&secret)?).await?;
        Ok(Enrolment { secret: secret.base32(), uri: secret.otpauth_uri(ISSUER, &current.user.email) })
    }

    /// Confirms enrolment with a code of the new secret: two-factor login is on, ten recovery
    /// codes are made, and the session gets a new token. Errors: `ReauthenticationRequired`;
    /// `Validation` (`otp`) when no enrolment was started or the code is wrong.
    pub async fn confirm_two_factor(&self, current: &mut Current, otp: &str) -> Result<Enrolled, Error> {
        self.require_recent(current)?;
        let record = self.store.two_factor(&current.user.id).await?;
        let pending = record.pending.ok_or_else(|| Error::validation("otp", "start the enrolment first"))?;
        let secret = self.sealer.open_totp(&pending)?;
        let now = self.clock.system_now();
        let step = matching_step(self.crypto, &secret, otp, now, None)
            .ok_or_else(|| Error::validation("otp", "the code does not match; check the device's time"))?;
        let codes: Vec<String> = (0..RECOVERY_CODES).map(|_| recovery_code(self.crypto)).collect();
        let digests: Vec<[u8; 32]> =
            codes.iter().map(|c| self.crypto.sha256(normalize_recovery_code(c).as_bytes())).collect();
        let audit = self.audit_everywhere(&current.user, (AuditAction::TwoFactorEnabled, "turned on")).await?;
        let on = TwoFactorOn { step, at: now, recovery_digests: digests };
        if !self.store.enable_two_factor(&current.user.id, &on, &audit).await? {
            return Err(Error::validation("otp", "start the enrolment first"));
        }
        current.user.two_factor_since = Some(now);
        let token = self.rotate(current).await?;
        Ok(Enrolled { recovery_codes: codes, token })
    }

    /// Turns two-factor login off, with the password and a code (or a recovery code), checked
    /// within the account's quota. Errors: `InvalidCredentials` (wrong password);
    /// `SecondFactor`; `RateLimited`; `Validation` (`otp`) when it is off.
    pub async fn disable_two_factor(&self, current: &mut Current, password: &str, otp: &str) -> Result<(), Error> {
        if current.user.two_factor_since.is_none() {
            return Err(Error::validation("otp", "two-factor login is off"));
        }
        let confirmation = Confirmation { password, otp: Some(otp) };
        self.confirm(current, confirmation, Code::Required).await?;
        let audit = self.audit_everywhere(&current.user, (AuditAction::TwoFactorDisabled, "turned off")).await?;
        self.store.disable_two_factor(&current.user.id, &audit).await?;
        current.user.two_factor_since = None;
        Ok(())
    }

    /// How many recovery codes the user has left.
    pub async fn recovery_codes_left(&self, user: &User) -> Result<u32, Error> {
        self.store.recovery_codes_left(&user.id).await
    }

    /// Checks a login's second factor: a code of the authenticator not used before, or an
    /// unused recovery code (then used up, with an audit entry in each of the user's merchants).
    /// Errors: `SecondFactor { missing: false }`.
    pub(super) async fn check_second_factor(&self, user: &User, otp: &str) -> Result<(), Error> {
        let wrong = Error::SecondFactor { missing: false };
        let recovery = normalize_recovery_code(otp);
        if recovery.len() == 16 {
            let digest = self.crypto.sha256(recovery.as_bytes());
            let left = self.store.recovery_codes_left(&user.id).await?.saturating_sub(1);
            let detail = format!("{left} recovery codes left");
            let audit = self.audit_everywhere(user, (AuditAction::RecoveryCodeUsed, &detail)).await?;
            let now = self.clock.system_now();
            return match self.store.use_recovery_code(&user.id, &digest, now, &audit).await? {
                true => Ok(()),
                false => Err(wrong),
            };
        }
        let record = self.store.two_factor(&user.id).await?;
        let sealed = record.secret.ok_or_else(|| Error::Internal("two-factor login on without a secret".into()))?;
        let secret = self.sealer.open_totp(&sealed)?;
        let now = self.clock.system_now();
        let step = matching_step(self.crypto, &secret, otp, now, record.last_step).ok_or(wrong.clone())?;
        // The step is taken atomically: two logins racing with one code get one session.
        if !self.store.use_totp_step(&user.id, step).await? || step > step_of(now) + 1 {
            return Err(wrong);
        }
        Ok(())
    }
}
