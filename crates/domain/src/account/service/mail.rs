//! The outbox's attempts of the account emails: an account link's (a new token each attempt,
//! its digest stored before the email goes, so a sent link always works and a retry's link
//! replaces the earlier) and a notice's. The one delivery loop (`Emails::deliver_due`) claims
//! them with every other email and records them by the one retry policy
//! (`OutboundEmail::attempt_failed`).

use crate::account::link::{AccountLink, LinkPurpose};
use crate::email::compose::{Notice as NoticeWords, compose_notice};
use crate::email::model::{EmailMessage, EmailStatus, OutboundEmail};
use crate::email::service::Emails;
use crate::error::Error;
use crate::ids::{AccountLinkId, NoticeId, PublicToken};

impl Emails<'_> {
    /// One attempt of an account link's email. A link used, replaced, revoked or expired
    /// before its email went, and a reset asked for an address without an account, are
    /// skipped: nothing is sent.
    pub(crate) async fn deliver_link(
        &self,
        mut email: OutboundEmail,
        id: &AccountLinkId,
    ) -> Result<EmailStatus, Error> {
        let now = self.clock.system_now();
        let nobody = |l: &AccountLink| l.purpose == LinkPurpose::ResetPassword && l.user_id.is_none();
        let link = self.accounts.link_by_id(id).await?;
        let Some(link) = link.filter(|l| l.check_usable(now).is_ok() && !nobody(l)) else {
            email.skipped();
            self.store.record_email(&email).await?;
            return Ok(email.status);
        };
        let token = PublicToken::generate(self.crypto);
        self.accounts.set_link_token(&link.id, &self.crypto.sha256(token.as_str().as_bytes())).await?;
        let message = self.link_message(&link, &email, &token).await?;
        self.attempt(email, &message).await
    }

    /// One attempt of a notice's email.
    pub(crate) async fn deliver_notice(&self, mut email: OutboundEmail, id: &NoticeId) -> Result<EmailStatus, Error> {
        let Some(n) = self.accounts.notice(id).await? else {
            email.skipped();
            self.store.record_email(&email).await?;
            return Ok(email.status);
        };
        let note = "You get this email as a member of this merchant on stablepay.";
        let words = NoticeWords { subject: &n.subject, intro: &n.intro, button: &n.button.0, url: &n.button.1, note };
        let message = compose_notice(&words).from_service(&email);
        self.attempt(email, &message).await
    }

    /// Sends `message` and records `email` as the attempt left it (by the real clock: account
    /// emails follow no test clock).
    async fn attempt(&self, mut email: OutboundEmail, message: &EmailMessage) -> Result<EmailStatus, Error> {
        let sent = self.mailer.send(message).await;
        let now = self.clock.system_now();
        match sent {
            Ok(()) => email.sent(now),
            Err(e) => email.attempt_failed(&e.message, e.permanent, now),
        }
        self.store.record_email(&email).await?;
        Ok(email.status)
    }

    /// The email of `link` carrying `token`.
    async fn link_message(
        &self,
        link: &AccountLink,
        email: &OutboundEmail,
        token: &PublicToken,
    ) -> Result<EmailMessage, Error> {
        let url = self.pages.account_link(link.purpose.page(), token);
        let (merchant, inviter) = match &link.invitation {
            Some(i) => {
                let merchant = self.merchants.get_merchant(&i.merchant_id).await?.name;
                let inviter = match &i.invited_by {
                    Some(by) => self.accounts.user_by_id(by).await?.map(|u| u.name),
                    None => None,
                };
                (Some((merchant, i.role)), inviter)
            }
            None => (None, None),
        };
        let offer = merchant.as_ref().map(|(m, r)| (m.as_str(), r.as_str(), inviter.as_deref()));
        let (subject, intro, button) = link.purpose.words(offer);
        let note = format!(
            "The link works once, for {}. If you did not expect this email, ignore it: nothing changes.",
            link.purpose.lifetime_words()
        );
        let words = NoticeWords { subject: &subject, intro: &intro, button, url: &url, note: &note };
        Ok(compose_notice(&words).from_service(email))
    }
}
