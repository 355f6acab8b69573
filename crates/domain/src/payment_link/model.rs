//! A payment link, its configuration, and the state it shows (derived at a moment from its
//! lifecycle, its expiry and, for a single-use link, the invoice it is reserved for).

use chrono::{DateTime, Utc};

use crate::ids::{CheckoutSessionId, InvoiceId, PaymentLinkId, PublicToken};
use crate::invoice::model::Metadata;
use crate::merchant::Token;
use crate::mode::Scope;
use crate::money::Amount;
use crate::payment_link::machine::LinkState;
use crate::url::HttpUrl;

/// The largest amount a customer may enter on any link (a link's own maximum is at most this).
pub const MAX_CUSTOMER_AMOUNT: &str = "1000000";
pub const MAX_TITLE_BYTES: usize = 120;
pub const MAX_DESCRIPTION_BYTES: usize = 1000;
pub const MAX_SUCCESS_MESSAGE_BYTES: usize = 500;
pub const MAX_REFERENCE_PREFIX_CHARS: usize = 50;
/// How long a link's checkout stays payable (a single-use link is reserved for that long).
pub const CHECKOUT_MINUTES: u32 = 30;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AmountRule {
    Fixed(Amount),
    CustomerEntered { minimum: Amount, maximum: Option<Amount> },
}

impl AmountRule {
    /// The names of the amount types (`type_str`).
    pub const TYPES: [&'static str; 2] = ["fixed", "customer_entered"];

    pub fn type_str(&self) -> &'static str {
        match self {
            Self::Fixed(_) => "fixed",
            Self::CustomerEntered { .. } => "customer_entered",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Usage {
    SingleUse,
    Reusable,
}

impl Usage {
    pub const ALL: [Self; 2] = [Self::SingleUse, Self::Reusable];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::SingleUse => "single_use",
            Self::Reusable => "reusable",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.as_str() == value)
    }
}

/// Which customer fields the public page requires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collect {
    pub email: bool,
    pub name: bool,
    pub reference: bool,
}

/// What the merchant configures (all of it, on creation and on each PATCH).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    pub title: String,
    pub description: Option<String>,
    pub amount: AmountRule,
    pub currency: Token,
    pub usage: Usage,
    pub active_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub collect: Collect,
    pub reference_prefix: Option<String>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
    pub success_message: Option<String>,
    /// The merchant's own; never shown publicly.
    pub metadata: Option<Metadata>,
}

/// The lifecycle the merchant sets: `active`, `paused` or `archived` (the other states are
/// derived, see [`PaymentLink::state_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    Active,
    Paused,
    Archived,
}

impl Lifecycle {
    pub const ALL: [Self; 3] = [Self::Active, Self::Paused, Self::Archived];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Archived => "archived",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == value)
    }
}

/// The invoice a single-use link is reserved for, as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub invoice_id: InvoiceId,
    /// The invoice is paid in full: the link is used.
    pub paid: bool,
    /// Some payment was credited (the invoice keeps the link even if its checkout expires).
    pub any_payment: bool,
    /// The latest expiry among the invoice's pending checkouts.
    pub open_until: Option<DateTime<Utc>>,
}

impl Reservation {
    /// Whether the reservation still holds at `now`: paid, partly paid, or a checkout is
    /// still payable. A checkout that expired unpaid releases it.
    pub fn holds(&self, now: DateTime<Utc>) -> bool {
        self.paid || self.any_payment || self.open_until.is_some_and(|until| until > now)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PaymentLink {
    pub id: PaymentLinkId,
    /// The unguessable id of the public page and routes (separate from `id`).
    pub public_id: PublicToken,
    pub scope: Scope,
    pub config: LinkConfig,
    /// The configuration's version: a PATCH must name it; the public page shows it and a
    /// submission must carry it (a stale one is CONFIG_CHANGED).
    pub version: i64,
    pub lifecycle: Lifecycle,
    /// A single-use link's reservation.
    pub reservation: Option<Reservation>,
    /// `payment_link.expired` was emitted.
    pub expiry_announced: bool,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// Bumped by every write.
    pub lock_version: i64,
}

impl PaymentLink {
    /// The state it shows at `now`: archived, completed (a used single-use link), expired,
    /// paused or active.
    pub fn state_at(&self, now: DateTime<Utc>) -> LinkState {
        if self.lifecycle == Lifecycle::Archived {
            return LinkState::Archived;
        }
        if self.config.usage == Usage::SingleUse && self.reservation.as_ref().is_some_and(|r| r.paid) {
            return LinkState::Completed;
        }
        if self.expiry_announced || self.config.expires_at.is_some_and(|e| e <= now) {
            return LinkState::Expired;
        }
        match self.lifecycle {
            Lifecycle::Paused => LinkState::Paused,
            _ => LinkState::Active,
        }
    }

    /// A single-use link held by a checkout or a payment at `now`.
    pub fn reserved_at(&self, now: DateTime<Utc>) -> bool {
        self.config.usage == Usage::SingleUse && self.reservation.as_ref().is_some_and(|r| r.holds(now))
    }
}

/// What a public submission created.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkCheckout {
    pub invoice_id: InvoiceId,
    pub checkout_session_id: CheckoutSessionId,
    pub expires_at: DateTime<Utc>,
}

/// An invoice created through a link, for the merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInvoice {
    pub invoice_id: InvoiceId,
    pub created_at: DateTime<Utc>,
}
