//! Emailed account links: open sign-up (with its verification link), password reset, email
//! verification and invitations (their emails go through the one outbox: see
//! `account::service::mail`). Answers never say whether an email has an account.

use crate::account::audit::{Actor, AuditAction, AuditEntry};
use crate::account::capability::{Action, Role};
use crate::account::link::{AccountLink, Invitation, LinkEffect, LinkPurpose, SignupMode};
use crate::account::members::MembershipChange;
use crate::account::members::action_for;
use crate::account::model::{Membership, User, check_password, normalize_email};
use crate::account::service::accounts::{Accounts, Current, SignedIn, check_name};
use crate::account::service::sign_in::{Code, Secrets};
use crate::error::{Error, Resource};
use crate::ids::{AccountLinkId, EmailId, MerchantId, PublicToken, UserId};
use crate::merchant::service::{MerchantOptions, new_merchant};
use crate::mode::Mode;

/// What an open sign-up takes.
#[derive(Clone, Copy, Debug)]
pub struct Signup<'a> {
    /// The new user's email.
    pub email: &'a str,
    /// Their password.
    pub password: &'a str,
    /// Their name.
    pub name: &'a str,
    /// The new merchant's name.
    pub business_name: &'a str,
}

/// What accepting an invitation takes: a name and a password for a new account, or the
/// password of the existing account of the invited email.
#[derive(Clone, Copy, Debug)]
pub struct Acceptance<'a> {
    /// The token of the emailed link.
    pub token: &'a str,
    /// The new account's name (ignored for an existing account).
    pub name: Option<&'a str>,
    /// The new account's password, or the existing account's.
    pub password: &'a str,
    /// The existing account's code (or a recovery code) when it has two-factor login.
    pub otp: Option<&'a str>,
    /// The client's address (its quota of failed checks).
    pub client: Option<&'a str>,
}

impl Accounts<'_> {
    fn link(
        &self,
        purpose: LinkPurpose,
        email: &str,
        user: Option<&UserId>,
        invitation: Option<Invitation>,
    ) -> AccountLink {
        let ids = (AccountLinkId::generate(self.crypto), EmailId::generate(self.crypto));
        AccountLink::new(ids, (purpose, email), user.cloned(), invitation, self.clock.system_now())
    }

    /// Open sign-up (`STABLEPAY_SIGNUP=open`): a new merchant (test mode ready, live waiting
    /// for activation) whose owner is the new user, and a verification link emailed. For an
    /// email that has an account, nothing is created and that address is told so by email
    /// (with a reset link): the answer is the same either way, after a password hash's time.
    /// Errors: `FeatureUnavailable` unless sign-up is open; `Validation` (`email`, `password`,
    /// `name`, `business_name`).
    pub async fn signup(&self, s: Signup<'_>) -> Result<(), Error> {
        if self.settings.signup != SignupMode::Open {
            return Err(Error::FeatureUnavailable("open sign-up (this deployment signs up by invitation)"));
        }
        let email = normalize_email("email", s.email)?;
        check_password(s.password)?;
        let name = check_name("name", s.name)?;
        let now = self.clock.system_now();
        let merchant = new_merchant(self.crypto, now, s.business_name, None, MerchantOptions::default())
            .map_err(|e| if e.field() == Some("name") { e.renamed("business_name") } else { e })?;
        let password_hash = self.hasher.hash(s.password)?;
        if let Some(existing) = self.store.user_by_email(&email).await? {
            let link = self.link(LinkPurpose::SignupExisting, &email, Some(&existing.id), None);
            return self.store.insert_link(&link, &[]).await;
        }
        let user = User {
            id: UserId::generate(self.crypto),
            email,
            name,
            password_hash,
            email_verified_at: None,
            two_factor_since: None,
            created_at: now,
        };
        let membership = Membership::new(&user.id, &merchant.id, Role::Owner, now);
        let link = self.link(LinkPurpose::VerifyEmail, &user.email, Some(&user.id), None);
        match self.store.insert_signup(&merchant, &user, &membership, &link).await {
            // Created meanwhile by a concurrent sign-up: the same answer.
            Err(Error::Validation { field, .. }) if field == "email" => Ok(()),
            other => other,
        }
    }

    /// Emails a new verification link to the signed-in user (replacing earlier ones). Errors:
    /// `Validation` (`email`) when it is verified already.
    pub async fn resend_verification(&self, current: &Current) -> Result<(), Error> {
        if current.user.email_verified_at.is_some() {
            return Err(Error::validation("email", "this email is verified already"));
        }
        let link = self.link(LinkPurpose::VerifyEmail, &current.user.email, Some(&current.user.id), None);
        self.store.insert_link(&link, &[]).await
    }

    /// Emails a password reset link (1 hour) to `email` if it has an account. The request does
    /// the same work either way (the same statements, the same queued job: for an address
    /// without an account the job sends nothing), so neither its answer nor its time tells
    /// whether the account exists. Errors: `Validation` (`email`) for an implausible address.
    pub async fn request_password_reset(&self, email: &str) -> Result<(), Error> {
        let email = normalize_email("email", email)?;
        let user = self.store.user_by_email(&email).await?;
        let link = self.link(LinkPurpose::ResetPassword, &email, user.as_ref().map(|u| &u.id), None);
        self.store.insert_link(&link, &[]).await
    }

    /// The link behind an emailed token, usable now, of one of `purposes`. Errors:
    /// `AccountLinkUnusable`: unknown (or of another purpose), used or expired.
    async fn usable_link(&self, token: &str, purposes: &[LinkPurpose]) -> Result<AccountLink, Error> {
        let unknown = || Error::AccountLinkUnusable("unknown");
        let token = PublicToken::parse(token.trim()).ok_or_else(unknown)?;
        let digest = self.crypto.sha256(token.as_str().as_bytes());
        let link = self.store.link_by_digest(&digest).await?.filter(|l| purposes.contains(&l.purpose));
        let link = link.ok_or_else(unknown)?;
        link.check_usable(self.clock.system_now())?;
        Ok(link)
    }

    /// Marks `link` used with `effect`. Errors: `AccountLinkUnusable` when it was used
    /// meanwhile.
    async fn consume(&self, link: &AccountLink, effect: &LinkEffect, audit: &[AuditEntry]) -> Result<(), Error> {
        if !self.store.consume_link(&link.id, self.clock.system_now(), effect, audit).await? {
            return Err(Error::AccountLinkUnusable("used"));
        }
        Ok(())
    }

    /// Sets a new password with a reset link: the link is used up, the email counts as
    /// verified, and every session of the user ends. Errors: `Validation` (`token`,
    /// `password`).
    pub async fn reset_password(&self, token: &str, password: &str) -> Result<(), Error> {
        check_password(password)?;
        let link = self.usable_link(token, &[LinkPurpose::ResetPassword, LinkPurpose::SignupExisting]).await?;
        // A reset asked for an address without an account has no user (and was never sent).
        let user_id = link.user_id.clone().ok_or(Error::AccountLinkUnusable("unknown"))?;
        let user = self.store.user_by_id(&user_id).await?.ok_or(Error::NotFound(Resource::Member))?;
        let audit = self.audit_everywhere(&user, (AuditAction::PasswordChanged, "reset by email")).await?;
        let effect = LinkEffect::SetPassword { user: user_id, password_hash: self.hasher.hash(password)? };
        self.consume(&link, &effect, &audit).await
    }

    /// Verifies an email with its link. Errors: `AccountLinkUnusable`.
    pub async fn verify_email(&self, token: &str) -> Result<(), Error> {
        let link = self.usable_link(token, &[LinkPurpose::VerifyEmail]).await?;
        let user =
            link.user_id.clone().ok_or_else(|| Error::Internal("a verification link without its user".into()))?;
        self.consume(&link, &LinkEffect::VerifyEmail { user }, &[]).await
    }

    /// Invites `email` to `merchant` with `role` (7 days; a new invitation of the same email
    /// replaces the earlier). Errors: `FeatureUnavailable` when sign-up is closed; `NotFound`;
    /// `AuthForbidden` (inviting needs `manage_members`, an owner `manage_owners`);
    /// `Validation` (`email`, or `role` when the email is a member already).
    pub async fn invite(
        &self,
        current: &Current,
        merchant: &MerchantId,
        email: &str,
        role: Role,
    ) -> Result<AccountLink, Error> {
        if self.settings.signup == SignupMode::Closed {
            return Err(Error::FeatureUnavailable("invitations (sign-up is closed on this deployment)"));
        }
        current.require(merchant, Mode::Test, Action::ManageMembers)?;
        current.require(merchant, Mode::Test, action_for(Role::Viewer, MembershipChange::SetRole(role)))?;
        let email = normalize_email("email", email)?;
        let members = self.store.members(merchant).await?;
        if members.iter().any(|(_, u)| u.email == email) {
            return Err(Error::validation("email", "this person is a member already; change their role instead"));
        }
        let invitation = Invitation { merchant_id: merchant.clone(), role, invited_by: Some(current.user.id.clone()) };
        let link = self.link(LinkPurpose::Invitation, &email, None, Some(invitation));
        let detail = format!("invited as {}", role.as_str());
        let now = self.clock.system_now();
        let audit = AuditEntry::new(
            self.crypto,
            merchant,
            current.actor(),
            (AuditAction::MemberInvited, Some(&email), detail),
            now,
        );
        self.store.insert_link(&link, &[audit]).await?;
        Ok(link)
    }

    /// The operator's invitation (`stablepay user create --invite`): `email` is invited to
    /// `merchant` as `role`, and sets their password by following the emailed link. Errors:
    /// `Validation` (`email`); `NotFound(Merchant)`.
    pub async fn invite_by_operator(
        &self,
        merchant: &MerchantId,
        email: &str,
        role: Role,
    ) -> Result<AccountLink, Error> {
        let email = normalize_email("email", email)?;
        self.merchants.get_merchant(merchant).await?;
        let invitation = Invitation { merchant_id: merchant.clone(), role, invited_by: None };
        let link = self.link(LinkPurpose::Invitation, &email, None, Some(invitation));
        let detail = format!("invited as {} (operator)", role.as_str());
        let operator = Actor { id: None, email: None };
        let now = self.clock.system_now();
        let audit =
            AuditEntry::new(self.crypto, merchant, operator, (AuditAction::MemberInvited, Some(&email), detail), now);
        self.store.insert_link(&link, &[audit]).await?;
        Ok(link)
    }

    /// Accepts an invitation: a new account (named, with its password; the email counts as
    /// verified) or, for an email that has one, its password; then the membership, and a new
    /// session. An existing account gives what login demands (its password, its code with
    /// two-factor login, within the quotas). Errors: `AccountLinkUnusable`; `Validation`
    /// (`name`, `password`); `InvalidCredentials` (the existing account's password is wrong);
    /// `SecondFactor`; `RateLimited`.
    pub async fn accept_invitation(&self, a: Acceptance<'_>) -> Result<SignedIn, Error> {
        let link = self.usable_link(a.token, &[LinkPurpose::Invitation]).await?;
        let invitation =
            link.invitation.clone().ok_or_else(|| Error::Internal("an invitation without its offer".into()))?;
        let now = self.clock.system_now();
        let existing = match self.store.user_by_email(&link.email).await? {
            // An existing account gives everything login demands: its password, its code with
            // two-factor login, within the quotas.
            Some(user) => {
                let secrets = Secrets { password: a.password, otp: a.otp, client: a.client };
                Some(self.check_secrets((&user.email, Some(&user)), secrets, (Code::Required, false)).await?)
            }
            None => None,
        };
        let new_user = match &existing {
            Some(_) => None,
            None => {
                check_password(a.password)?;
                let name = check_name("name", a.name.unwrap_or(""))?;
                let hash = self.hasher.hash(a.password)?;
                let (id, email) = (UserId::generate(self.crypto), link.email.clone());
                let verified = Some(now);
                Some(User {
                    id,
                    email,
                    name,
                    password_hash: hash,
                    email_verified_at: verified,
                    two_factor_since: None,
                    created_at: now,
                })
            }
        };
        let Some(user) = existing.or_else(|| new_user.clone()) else {
            return Err(Error::Internal("no user for an accepted invitation".into()));
        };
        let membership = Membership::new(&user.id, &invitation.merchant_id, invitation.role, now);
        let actor = Actor { id: Some(&user.id), email: Some(&user.email) };
        let detail = format!("joined as {}", invitation.role.as_str());
        let audit = AuditEntry::new(
            self.crypto,
            &invitation.merchant_id,
            actor,
            (AuditAction::MemberJoined, Some(&user.email), detail),
            now,
        );
        self.consume(&link, &LinkEffect::Join { new_user, membership }, &[audit]).await?;
        self.open_session(user, &[]).await
    }

    /// The merchant's open invitations. Errors: `NotFound`; `AuthForbidden` (`manage_members`).
    pub async fn invitations(&self, current: &Current, merchant: &MerchantId) -> Result<Vec<AccountLink>, Error> {
        current.require(merchant, Mode::Test, Action::ManageMembers)?;
        self.store.invitations(merchant, self.clock.system_now()).await
    }

    /// Revokes an open invitation: its link stops working. Errors: `NotFound(Invitation)`;
    /// `AuthForbidden` (`manage_members`).
    pub async fn revoke_invitation(
        &self,
        current: &Current,
        merchant: &MerchantId,
        id: &AccountLinkId,
    ) -> Result<(), Error> {
        current.require(merchant, Mode::Test, Action::ManageMembers)?;
        let open = self.store.invitations(merchant, self.clock.system_now()).await?;
        let link = open.iter().find(|l| &l.id == id).ok_or(Error::NotFound(Resource::Invitation))?;
        let now = self.clock.system_now();
        let detail = "revoked".to_owned();
        let audit = AuditEntry::new(
            self.crypto,
            merchant,
            current.actor(),
            (AuditAction::InvitationRevoked, Some(&link.email), detail),
            now,
        );
        if !self.store.revoke_invitation(merchant, id, now, &[audit]).await? {
            return Err(Error::NotFound(Resource::Invitation));
        }
        Ok(())
    }
}
