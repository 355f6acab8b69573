//! A payment link, its configuration, and the state it shows (derived at a moment from its
//! lifecycle, its expiry and, for a single-use link, the invoice it is reserved for).

use chrono::{DateTime, Utc};

use crate::event::model::EventData;
use crate::ids::{CheckoutSessionId, InvoiceId, PaymentLinkId, PublicToken};
use crate::invoice::model::Metadata;
use crate::merchant::model::Token;
use crate::mode::Scope;
use crate::money::Amount;
use crate::payment_link::machine::LinkState;
use crate::url::HttpUrl;

/// The largest amount a customer may enter on any link (a link's own maximum is at most this).
pub const MAX_CUSTOMER_AMOUNT: &str = "1000000";
/// The longest title, in UTF-8 bytes.
pub const MAX_TITLE_BYTES: usize = 120;
/// The longest description, in UTF-8 bytes.
pub const MAX_DESCRIPTION_BYTES: usize = 1000;
/// The longest success message, in UTF-8 bytes.
pub const MAX_SUCCESS_MESSAGE_BYTES: usize = 500;
/// The longest reference prefix, in characters.
pub const MAX_REFERENCE_PREFIX_CHARS: usize = 50;
/// The longest text a merchant may search its links for, in UTF-8 bytes.
pub const MAX_SEARCH_TEXT_BYTES: usize = 200;
/// How long a link's checkout stays payable (a single-use link is reserved for that long).
pub const CHECKOUT_MINUTES: u32 = 30;

/// Whether a link asks for a fixed amount or the amount its customer enters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AmountType {
    /// One amount, set by the merchant.
    Fixed,
    /// The customer enters the amount, within the link's bounds.
    CustomerEntered,
}

impl AmountType {
    /// Both types.
    pub const ALL: [AmountType; 2] = [Self::Fixed, Self::CustomerEntered];

    /// The type as the API writes it: `fixed` or `customer_entered`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fixed => "fixed",
            Self::CustomerEntered => "customer_entered",
        }
    }

    /// Reads a type as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == value)
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
/// What a link asks customers to pay.
pub enum AmountRule {
    /// Always this amount.
    Fixed(Amount),
    /// What the customer enters, within bounds.
    CustomerEntered {
        /// The lowest amount accepted.
        minimum: Amount,
        /// The highest amount accepted (the service's limit applies as well).
        maximum: Option<Amount>,
    },
}

impl AmountRule {
    /// The rule's type.
    pub fn amount_type(&self) -> AmountType {
        match self {
            Self::Fixed(_) => AmountType::Fixed,
            Self::CustomerEntered { .. } => AmountType::CustomerEntered,
        }
    }

    /// The rule's type as the API writes it: `fixed` or `customer_entered`.
    pub fn type_str(&self) -> &'static str {
        self.amount_type().as_str()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
/// How often a link can be paid.
pub enum Usage {
    /// Once: the first submission reserves it, its paid invoice uses it.
    SingleUse,
    /// Any number of times (the default).
    Reusable,
}

impl Usage {
    /// Every usage.
    pub const ALL: [Self; 2] = [Self::SingleUse, Self::Reusable];

    /// The usage as the API writes it: `single_use` or `reusable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::SingleUse => "single_use",
            Self::Reusable => "reusable",
        }
    }

    /// Reads a usage as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|u| u.as_str() == value)
    }
}

/// Which customer fields the public page requires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Collect {
    /// The page asks for the customer's email.
    pub email: bool,
    /// The page asks for the customer's name.
    pub name: bool,
    /// The page asks for the customer's reference (submitted as `customerReference`).
    pub reference: bool,
}

/// What the merchant configures (all of it, on creation and on each PATCH).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkConfig {
    /// 1-120 UTF-8 bytes, shown on the page.
    pub title: String,
    /// Up to 1000 UTF-8 bytes, shown on the page.
    pub description: Option<String>,
    /// What the customer pays.
    pub amount: AmountRule,
    /// The token it settles in.
    pub currency: Token,
    /// Single-use or reusable.
    pub usage: Usage,
    /// Before it the link takes no submissions.
    pub active_at: Option<DateTime<Utc>>,
    /// When it expires.
    pub expires_at: Option<DateTime<Utc>>,
    /// Which customer fields are required.
    pub collect: Collect,
    /// Starts each invoice's external reference.
    pub reference_prefix: Option<String>,
    /// Where the checkout returns after payment.
    pub success_url: Option<HttpUrl>,
    /// Where it returns on cancel.
    pub cancel_url: Option<HttpUrl>,
    /// Shown after payment.
    pub success_message: Option<String>,
    /// The merchant's own; never shown publicly.
    pub metadata: Option<Metadata>,
}

/// The lifecycle the merchant sets: `active`, `paused` or `archived` (the other states are
/// derived, see [`PaymentLink::state_at`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lifecycle {
    /// Takes submissions.
    Active,
    /// Paused by the merchant.
    Paused,
    /// Archived by the merchant: final.
    Archived,
}

impl Lifecycle {
    /// Every lifecycle.
    pub const ALL: [Self; 3] = [Self::Active, Self::Paused, Self::Archived];

    /// The lifecycle as the API writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Paused => "paused",
            Self::Archived => "archived",
        }
    }

    /// Reads a lifecycle as the API writes it.
    pub fn parse(value: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|l| l.as_str() == value)
    }
}

/// The invoice a single-use link is reserved for, as it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reservation {
    /// The reserved invoice.
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
/// A payment link: a shareable page that creates an invoice and its checkout for each customer who
/// submits it.
pub struct PaymentLink {
    /// The link's id (`plink_...`).
    pub id: PaymentLinkId,
    /// The unguessable id of the public page and routes (separate from `id`).
    pub public_id: PublicToken,
    /// The merchant and mode.
    pub scope: Scope,
    /// Its configuration (replaced whole by an update).
    pub config: LinkConfig,
    /// The configuration's version: a PATCH must name it; the public page shows it and a
    /// submission must carry it (a stale one is CONFIG_CHANGED).
    pub version: i64,
    /// What the merchant set: active, paused or archived.
    pub lifecycle: Lifecycle,
    /// A single-use link's reservation.
    pub reservation: Option<Reservation>,
    /// `payment_link.expired` was emitted.
    pub expiry_announced: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When its configuration or lifecycle last changed.
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
    /// The invoice created.
    pub invoice_id: InvoiceId,
    /// Its checkout, where the customer pays.
    pub checkout_session_id: CheckoutSessionId,
    /// When that checkout expires.
    pub expires_at: DateTime<Utc>,
}

/// An invoice created through a link, for the merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkInvoice {
    /// The invoice.
    pub invoice_id: InvoiceId,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// The data of `payment_link.*` events: the link in `state`.
pub fn link_data(id: &PaymentLinkId, scope: &Scope, state: LinkState) -> EventData {
    EventData::map([
        ("object", EventData::string("payment_link")),
        ("id", EventData::string(id)),
        ("mode", EventData::string(scope.mode.as_str())),
        ("status", EventData::string(state.as_str())),
    ])
}
