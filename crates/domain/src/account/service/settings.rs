//! Self-service settings behind the capabilities: the settlement wallet (checked, confirmed
//! with the password and, with two-factor login, a code, and told to every owner), live activation (an owner's request
//! the operator approves, or at once where the operator allows it), each member's webhook
//! alerts; and the worker's incident alerts (notices queued, their emails in the one outbox).

use crate::account::audit::{AuditAction, AuditEntry};
use crate::account::capability::{Action, Role};
use crate::account::model::LiveRequest;
use crate::account::notice::{IncidentAlert, Notice, NoticeKind};
use crate::account::service::accounts::{Accounts, Current};
use crate::account::service::sign_in::{Code, Confirmation};
use crate::error::Error;
use crate::ids::{EmailId, MerchantId, NoticeId};
use crate::merchant::model::{LiveSettlement, MerchantStatus, Token, WalletAddress, check_settlement_wallet};
use crate::mode::Mode;

/// Where live mode stands for a merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveStatus {
    /// The live settlement, once activated.
    pub live: Option<LiveSettlement>,
    /// The wallet chosen before activation, and whether activation was asked for.
    pub requested: Option<LiveRequest>,
    /// Whether an owner's request activates at once.
    pub self_activation: bool,
}

impl Accounts<'_> {
    /// Where live mode stands. Errors: `NotFound`; `AuthForbidden` (`read`).
    pub async fn live_status(&self, current: &Current, merchant: &MerchantId) -> Result<LiveStatus, Error> {
        current.require(merchant, Mode::Test, Action::Read)?;
        let live = self.merchants.get_merchant(merchant).await?.live;
        let requested = self.store.live_request(merchant).await?;
        Ok(LiveStatus { live, requested, self_activation: self.settings.self_activation })
    }

    /// Sets the settlement wallet and token (the live settlement's when active, else the one
    /// activation will use), confirmed with the password (and a code with two-factor login);
    /// every owner is emailed. Errors: `AuthForbidden` (`change_settlement_wallet`, a verified
    /// email); `Validation` (`token`); `InvalidWalletAddress` or `UnsupportedDefaultWallet`
    /// (`wallet`); `InvalidCredentials`; `SecondFactor`.
    pub async fn set_settlement_wallet(
        &self,
        current: &mut Current,
        merchant: &MerchantId,
        (wallet, token): (&str, &str),
        confirmation: Confirmation<'_>,
    ) -> Result<(WalletAddress, Token), Error> {
        current.require(merchant, Mode::Live, Action::ChangeSettlementWallet)?;
        let token = Token::parse(token).ok_or_else(|| Error::validation("token", "must be USDC or USDT"))?;
        let wallet = check_settlement_wallet("wallet", wallet, self.chain)?;
        self.confirm(current, confirmation, Code::UnlessRecent).await?;
        let m = self.merchants.get_merchant(merchant).await?;
        let now = self.clock.system_now();
        let (name, by) = (crate::email::compose::one_line(&m.name), &current.user.email);
        let subject = format!("The settlement wallet of {name} changed");
        let intro = format!(
            "{by} set the settlement wallet of {name} to {wallet} ({}). Live payments now go there. If you did not expect this, sign in, set it back, and review who can act for {name}.",
            token.symbol()
        );
        let button = ("Open the settings".to_owned(), format!("{}/dashboard/settings", self.pages.base()));
        let notices: Vec<Notice> = self
            .store
            .members(merchant)
            .await?
            .iter()
            .filter(|(m, _)| m.role == Role::Owner)
            .map(|(_, u)| {
                let ids = (NoticeId::generate(self.crypto), EmailId::generate(self.crypto));
                let words = (subject.clone(), intro.clone());
                Notice::new(ids, (merchant, NoticeKind::WalletChanged), &u.email, words, button.clone(), now)
            })
            .collect();
        let detail = format!("{wallet} ({})", token.symbol());
        let entry =
            AuditEntry::new(self.crypto, merchant, current.actor(), (AuditAction::WalletChanged, None, detail), now);
        self.store.set_settlement_wallet(merchant, &wallet, token, &notices, &[entry]).await?;
        Ok((wallet, token))
    }

    /// Asks for live activation with the chosen wallet: activated at once where the operator
    /// allows self-activation, else recorded for the operator (`stablepay merchant activate`).
    /// Answers where live mode stands. Errors: `AuthForbidden` (`activate_live`, a verified
    /// email); `DefaultWalletRequired` before a wallet is set; `AccountSuspended`.
    pub async fn request_live_activation(&self, current: &Current, merchant: &MerchantId) -> Result<LiveStatus, Error> {
        current.require(merchant, Mode::Live, Action::ActivateLive)?;
        let m = self.merchants.get_merchant(merchant).await?;
        if m.status == MerchantStatus::Suspended {
            return Err(Error::AccountSuspended);
        }
        if m.live.is_none() {
            self.store.live_request(merchant).await?.ok_or(Error::DefaultWalletRequired)?;
            let now = self.clock.system_now();
            let action = if self.settings.self_activation {
                AuditAction::LiveActivated
            } else {
                AuditAction::ActivationRequested
            };
            let entry = AuditEntry::new(self.crypto, merchant, current.actor(), (action, None, String::new()), now);
            if self.settings.self_activation {
                let unique = crate::merchant::model::UNIQUE_AMOUNTS_WHEN_FIRST_ACTIVATED;
                if !self.store.activate_requested(merchant, now, unique, &[entry]).await? {
                    return Err(Error::DefaultWalletRequired);
                }
            } else {
                self.store.request_activation(merchant, now, &[entry]).await?;
            }
        }
        self.live_status(current, merchant).await
    }

    /// Turns unique amounts on or off for the merchant's new live checkouts (owners and admins;
    /// open checkouts keep what they ask). Answers the setting now. Errors: `AuthForbidden`
    /// (`manage_unique_amounts`, a verified email); `ActiveMerchantRequired` before live
    /// activation.
    pub async fn set_unique_amounts(&self, current: &Current, merchant: &MerchantId, on: bool) -> Result<bool, Error> {
        current.require(merchant, Mode::Live, Action::ManageUniqueAmounts)?;
        let detail = if on { "on" } else { "off" }.to_owned();
        let now = self.clock.system_now();
        let action = (AuditAction::UniqueAmountsChanged, None, detail);
        let entry = AuditEntry::new(self.crypto, merchant, current.actor(), action, now);
        if !self.store.set_unique_amounts(merchant, on, &[entry]).await? {
            return Err(Error::ActiveMerchantRequired);
        }
        Ok(on)
    }

    /// Allows a member to attribute a recorded transfer in `merchant`'s live mode: owners and
    /// admins, confirmed with the password (and a code with two-factor login), as any change of
    /// where money goes. Errors: `AuthForbidden` (`attribute_transfers`, a verified email);
    /// `InvalidCredentials`; `SecondFactor`.
    pub async fn confirm_attribution(
        &self,
        current: &mut Current,
        merchant: &MerchantId,
        confirmation: Confirmation<'_>,
    ) -> Result<(), Error> {
        current.require(merchant, Mode::Live, Action::AttributeTransfers)?;
        self.confirm(current, confirmation, Code::UnlessRecent).await
    }

    /// Writes to `merchant`'s audit log that the member attributed recorded transfer `what`
    /// (its id) to a checkout (`to`, and why).
    pub async fn audit_attribution(
        &self,
        current: &Current,
        merchant: &MerchantId,
        (what, to): (&str, &str),
    ) -> Result<(), Error> {
        let now = self.clock.system_now();
        let entry = AuditEntry::new(
            self.crypto,
            merchant,
            current.actor(),
            (AuditAction::TransferAttributed, Some(what), to.to_owned()),
            now,
        );
        self.store.record_audit(&[entry]).await
    }

    /// Turns the member's own webhook alert emails on or off. Errors: `NotFound`.
    pub async fn set_webhook_alerts(&self, current: &Current, merchant: &MerchantId, on: bool) -> Result<(), Error> {
        current.require(merchant, Mode::Test, Action::Read)?;
        self.store.set_webhook_alerts(merchant, &current.user.id, on).await
    }

    /// Queues the alerts of webhook incidents that opened or were resolved: one notice per
    /// member who asked for alerts, written with the mark that they were queued. Answers how
    /// many incidents' alerts were queued.
    pub async fn queue_incident_alerts(&self, limit: u32) -> Result<usize, Error> {
        let alerts = self.store.pending_incident_alerts(limit).await?;
        for alert in &alerts {
            let notices = self.incident_notices(alert).await?;
            self.store.record_incident_alert(alert, &notices).await?;
        }
        Ok(alerts.len())
    }

    async fn incident_notices(&self, a: &IncidentAlert) -> Result<Vec<Notice>, Error> {
        let name = crate::email::compose::one_line(&self.merchants.get_merchant(&a.merchant_id).await?.name);
        let (kind, subject, intro) = if a.resolved {
            let intro = format!(
                "Deliveries to {} ({} mode) succeed again: the incident is resolved. Deliveries that failed meanwhile can be replayed from the dashboard.",
                a.endpoint_url, a.mode
            );
            (NoticeKind::IncidentResolved, format!("Webhook deliveries of {name} recovered"), intro)
        } else {
            let intro = format!(
                "Deliveries to {} ({} mode) have failed {} times in a row. They are retried on their schedule; see the delivery log for the answers your endpoint gave.",
                a.endpoint_url, a.mode, a.failed_attempts
            );
            (NoticeKind::IncidentOpened, format!("Webhook deliveries of {name} are failing"), intro)
        };
        let button = ("Open the delivery log".to_owned(), format!("{}/dashboard/webhooks", self.pages.base()));
        let now = self.clock.system_now();
        Ok(a.recipients
            .iter()
            .map(|to| {
                let ids = (NoticeId::generate(self.crypto), EmailId::generate(self.crypto));
                Notice::new(ids, (&a.merchant_id, kind), to, (subject.clone(), intro.clone()), button.clone(), now)
            })
            .collect())
    }
}
