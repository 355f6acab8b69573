//! Emailed account links: email verification, password reset and invitations. Each link is a
//! single-use token that expires; only its SHA-256 is stored, and the token itself is made when
//! the email is sent (a retry makes a new one and the earlier stops working), so no copy of it
//! is ever at rest. Its email is a row of the one outbox, written with the link.

use chrono::{DateTime, Duration, Utc};

use crate::account::capability::Role;
use crate::email::model::OutboundEmail;
use crate::error::Error;
use crate::ids::{AccountLinkId, EmailId, MerchantId, UserId};

/// Who may create an account: an operator's setting (`STABLEPAY_SIGNUP`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SignupMode {
    /// Only the operator's CLI creates accounts; no sign-up, no invitation.
    Closed,
    /// The CLI and invitations create accounts (the default).
    #[default]
    Invite,
    /// Anyone may sign up with a new merchant of their own; invitations work too.
    Open,
}

impl SignupMode {
    /// The setting's values.
    pub const ALL: [Self; 3] = [Self::Closed, Self::Invite, Self::Open];

    /// The value as the setting writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::Invite => "invite",
            Self::Open => "open",
        }
    }

    /// Reads the setting.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == value)
    }
}

/// What a link does when followed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkPurpose {
    /// Verifies the user's email (24 hours).
    VerifyEmail,
    /// Sets a new password (1 hour).
    ResetPassword,
    /// A sign-up with an email that has an account: the email says so and carries a reset
    /// link (1 hour), so the answer to the sign-up tells nobody the account exists.
    SignupExisting,
    /// Joins a merchant with a role, creating the account if needed (7 days).
    Invitation,
}

impl LinkPurpose {
    /// Every purpose.
    pub const ALL: [Self; 4] = [Self::VerifyEmail, Self::ResetPassword, Self::SignupExisting, Self::Invitation];

    /// The purpose as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::VerifyEmail => "verify_email",
            Self::ResetPassword => "reset_password",
            Self::SignupExisting => "signup_existing",
            Self::Invitation => "invitation",
        }
    }

    /// Reads a purpose as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.as_str() == value)
    }

    /// How long a link of this purpose works after it is made.
    pub fn lifetime(self) -> Duration {
        match self {
            Self::VerifyEmail => Duration::hours(24),
            Self::ResetPassword | Self::SignupExisting => Duration::hours(1),
            Self::Invitation => Duration::days(7),
        }
    }

    /// The dashboard page the emailed link opens (under `/dashboard/`), with `?token=`.
    pub fn page(self) -> &'static str {
        match self {
            Self::VerifyEmail => "verify-email",
            Self::ResetPassword | Self::SignupExisting => "reset-password",
            Self::Invitation => "accept-invitation",
        }
    }

    /// How long it works, in words.
    pub fn lifetime_words(self) -> &'static str {
        match self {
            Self::VerifyEmail => "24 hours",
            Self::ResetPassword | Self::SignupExisting => "1 hour",
            Self::Invitation => "7 days",
        }
    }

    /// What its email says: the subject, why it came, and the button's words. `invitation`:
    /// the merchant's name, the role, and who invited (none: the operator).
    pub fn words(self, invitation: Option<(&str, &str, Option<&str>)>) -> (String, String, &'static str) {
        let one_line = crate::email::compose::one_line;
        match self {
            Self::VerifyEmail => (
                "Verify your email for stablepay".into(),
                "Confirm this address to finish setting up your account. Until then you can use test mode only.".into(),
                "Verify email",
            ),
            Self::ResetPassword => (
                "Reset your stablepay password".into(),
                "Someone asked to reset the password of the stablepay account of this address. A new password signs out every session.".into(),
                "Choose a new password",
            ),
            Self::SignupExisting => (
                "You already have a stablepay account".into(),
                "Someone tried to sign up with this address, which already has an account. Sign in as usual, or, if you forgot your password, choose a new one.".into(),
                "Choose a new password",
            ),
            Self::Invitation => {
                let (merchant, role, by) = invitation.unwrap_or(("a merchant", "member", None));
                let merchant = one_line(merchant);
                let by = by.map_or_else(String::new, |b| format!("{} invited you to ", one_line(b)));
                let intro = if by.is_empty() {
                    format!("You are invited to join {merchant} on stablepay as {role}.")
                } else {
                    format!("{by}join {merchant} on stablepay as {role}.")
                };
                (format!("Join {merchant} on stablepay"), intro, "Accept the invitation")
            }
        }
    }

    /// Whether following it sets a password.
    pub fn resets_password(self) -> bool {
        matches!(self, Self::ResetPassword | Self::SignupExisting)
    }
}

/// What an invitation offers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invitation {
    /// The merchant to join.
    pub merchant_id: MerchantId,
    /// With this role.
    pub role: Role,
    /// The member who invited (none: the operator's CLI).
    pub invited_by: Option<UserId>,
}

/// An emailed single-use link.
#[derive(Clone, PartialEq, Eq)]
pub struct AccountLink {
    /// `alk_...`.
    pub id: AccountLinkId,
    /// What it does.
    pub purpose: LinkPurpose,
    /// The recipient (normalized).
    pub email: String,
    /// The account it is about (none for an invitation: the account may not exist yet).
    pub user_id: Option<UserId>,
    /// What an invitation offers.
    pub invitation: Option<Invitation>,
    /// SHA-256 of the token last emailed (none before the first attempt).
    pub token_digest: Option<[u8; 32]>,
    /// When it stops working.
    pub expires_at: DateTime<Utc>,
    /// When it was followed, or replaced by a newer link of its kind, or revoked.
    pub used_at: Option<DateTime<Utc>>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
    /// Its email, as the outbox holds it.
    pub mail: OutboundEmail,
}

impl std::fmt::Debug for AccountLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AccountLink")
            .field("id", &self.id)
            .field("purpose", &self.purpose)
            .field("user_id", &self.user_id)
            .finish_non_exhaustive()
    }
}

impl AccountLink {
    /// A new link of `purpose` to `email`, its email (`mail`) due at once.
    pub fn new(
        (id, mail): (AccountLinkId, EmailId),
        (purpose, email): (LinkPurpose, &str),
        user_id: Option<UserId>,
        invitation: Option<Invitation>,
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            purpose,
            email: email.to_owned(),
            user_id,
            invitation,
            token_digest: None,
            expires_at: now + purpose.lifetime(),
            used_at: None,
            created_at: now,
            mail: OutboundEmail::account_link(mail, &id, email, now),
            id,
        }
    }

    /// Whether it may be followed at `now`. Errors: `AccountLinkUnusable` saying it was used
    /// (or replaced) or has expired.
    pub fn check_usable(&self, now: DateTime<Utc>) -> Result<(), Error> {
        if self.used_at.is_some() {
            return Err(Error::AccountLinkUnusable("used"));
        }
        if now >= self.expires_at {
            return Err(Error::AccountLinkUnusable("expired"));
        }
        Ok(())
    }
}

/// What following a link changes, in one transaction with marking it used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LinkEffect {
    /// The user's email is verified.
    VerifyEmail {
        /// Whose.
        user: UserId,
    },
    /// The user's password is replaced (their email is verified too: the link reached it), and
    /// every session of theirs ends.
    SetPassword {
        /// Whose.
        user: UserId,
        /// The new hash.
        password_hash: String,
    },
    /// A membership is added (to a new user, inserted first, or to an existing one).
    Join {
        /// A user to create (an invitation to someone without an account).
        new_user: Option<crate::account::model::User>,
        /// The membership.
        membership: crate::account::model::Membership,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(text).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn links_expire_by_purpose_and_are_single_use() {
        let now = at("2026-11-01T00:00:00Z");
        let id = (AccountLinkId::from_trusted("alk_1".into()), EmailId::from_trusted("eml_1".into()));
        let mut link = AccountLink::new(id, (LinkPurpose::ResetPassword, "a@example.com"), None, None, now);
        assert_eq!(link.expires_at, at("2026-11-01T01:00:00Z"));
        assert!(link.check_usable(at("2026-11-01T00:59:59Z")).is_ok());
        assert!(link.check_usable(at("2026-11-01T01:00:00Z")).is_err());
        link.used_at = Some(now);
        assert!(link.check_usable(now).is_err());
        assert_eq!(LinkPurpose::VerifyEmail.lifetime(), Duration::hours(24));
        assert_eq!(LinkPurpose::Invitation.lifetime(), Duration::days(7));
        for p in LinkPurpose::ALL {
            assert_eq!(LinkPurpose::parse(p.as_str()), Some(p));
        }
        for m in SignupMode::ALL {
            assert_eq!(SignupMode::parse(m.as_str()), Some(m));
        }
    }

    #[test]
    fn a_links_email_is_queued_with_it_in_the_outbox() {
        let now = at("2026-11-01T00:00:00Z");
        let id = (AccountLinkId::from_trusted("alk_1".into()), EmailId::from_trusted("eml_1".into()));
        let link = AccountLink::new(id, (LinkPurpose::VerifyEmail, "a@example.com"), None, None, now);
        let mail = &link.mail;
        assert_eq!(mail.about, crate::email::model::EmailAbout::AccountLink(link.id.clone()));
        assert_eq!(
            (mail.kind, mail.status),
            (crate::email::model::EmailKind::AccountLink, crate::email::model::EmailStatus::Queued)
        );
        assert_eq!((mail.to.as_str(), mail.slot.as_str(), mail.next_attempt_at), ("a@example.com", "link:alk_1", now));
        assert_eq!(mail.scope(), None);
    }
}
