//! Notices: emails from the service to members about their merchant (the settlement wallet
//! changed, a webhook endpoint's incident opened or resolved). Each is written in the
//! transaction of what it tells, with its email in the one outbox.

use chrono::{DateTime, Utc};

use crate::email::model::OutboundEmail;
use crate::ids::{EmailId, MerchantId, NoticeId, WebhookIncidentId};
use crate::mode::Mode;

/// What a notice tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoticeKind {
    /// The settlement wallet changed (to every owner).
    WalletChanged,
    /// A webhook endpoint's incident opened (to the members who asked for webhook alerts).
    IncidentOpened,
    /// A webhook endpoint's incident was resolved (likewise).
    IncidentResolved,
}

impl NoticeKind {
    /// Every kind.
    pub const ALL: [Self; 3] = [Self::WalletChanged, Self::IncidentOpened, Self::IncidentResolved];

    /// The kind as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::WalletChanged => "wallet_changed",
            Self::IncidentOpened => "incident_opened",
            Self::IncidentResolved => "incident_resolved",
        }
    }

    /// Reads a kind as stored.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == value)
    }
}

/// One notice to one member.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// `ntc_...`.
    pub id: NoticeId,
    /// The merchant it is about.
    pub merchant_id: MerchantId,
    /// What it tells.
    pub kind: NoticeKind,
    /// The recipient.
    pub to: String,
    /// The subject line.
    pub subject: String,
    /// What happened, in words (no secret).
    pub intro: String,
    /// The button's words and where it leads.
    pub button: (String, String),
    /// Its email, as the outbox holds it.
    pub mail: OutboundEmail,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

impl Notice {
    /// A new notice, its email (`mail`) due at once.
    pub fn new(
        (id, mail): (NoticeId, EmailId),
        (merchant_id, kind): (&MerchantId, NoticeKind),
        to: &str,
        (subject, intro): (String, String),
        button: (String, String),
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            mail: OutboundEmail::notice(mail, &id, to, now),
            id,
            merchant_id: merchant_id.clone(),
            kind,
            to: to.to_owned(),
            subject,
            intro,
            button,
            created_at: now,
        }
    }
}

/// A webhook incident whose alert is due: it opened (or was resolved) and its endpoint asks
/// for that alert.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IncidentAlert {
    /// The incident.
    pub incident_id: WebhookIncidentId,
    /// Whose.
    pub merchant_id: MerchantId,
    /// In which mode.
    pub mode: Mode,
    /// The endpoint's URL.
    pub endpoint_url: String,
    /// `false`: it opened; `true`: it was resolved.
    pub resolved: bool,
    /// Failed attempts in the run.
    pub failed_attempts: u32,
    /// The members who asked for webhook alerts (their emails).
    pub recipients: Vec<String>,
}
