//! What the payment-link use cases need from the store.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::event::model::Event;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::{PaymentLinkId, PublicToken};
use crate::invoice::aggregate::InvoiceChange;
use crate::merchant::model::Token;
use crate::mode::Scope;
use crate::money::Amount;
use crate::page::{Page, PageRequest};
use crate::payment_link::machine::LinkState;
use crate::payment_link::model::{AmountType, LinkInvoice, PaymentLink, Usage};

/// Which links a list shows (every filter optional, all must hold).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkFilter {
    /// Only links in this state.
    pub state: Option<LinkState>,
    /// Only fixed or only customer-entered links.
    pub amount_type: Option<AmountType>,
    /// A fixed amount equal to this.
    pub amount: Option<Amount>,
    /// Only single-use or only reusable links.
    pub usage: Option<Usage>,
    /// Only links settling in this token.
    pub currency: Option<Token>,
    /// Words found in the title or description (case-insensitive).
    pub text: Option<String>,
    /// Only links created at or after this time.
    pub created_after: Option<DateTime<Utc>>,
    /// Only links created before this time.
    pub created_before: Option<DateTime<Utc>>,
}

/// A page of a merchant's links: those `filter` keeps, its state filter judged at `now` (the
/// scope's time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkQuery {
    /// Which links.
    pub filter: LinkFilter,
    /// Which page.
    pub page: PageRequest,
    /// The time a link's state is judged at.
    pub now: DateTime<Utc>,
}

#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
/// Payment links, scoped by merchant and mode like every store; a link's public id is the one
/// unscoped key (the public page).
pub trait PaymentLinkStore: Send + Sync {
    /// Inserts a new link (and marks `claim` committed in the same transaction). Errors:
    /// `Internal` when the id is already used; `IdempotencyClaimLost`.
    async fn insert_link(&self, link: &PaymentLink, claim: Option<IdempotencyClaim>) -> Result<(), Error>;
    /// With its reservation as it stands. Errors: `NotFound(PaymentLink)` for an unknown or
    /// foreign id; `ModeMismatch` for one of the other mode.
    async fn get_link(&self, scope: &Scope, id: &PaymentLinkId) -> Result<PaymentLink, Error>;
    /// The link behind a public page (the public id is the capability). Errors:
    /// `NotFound(PaymentLink)`.
    async fn get_public_link(&self, public_id: &PublicToken) -> Result<PaymentLink, Error>;
    /// The links of `scope` `asked` names, newest first.
    /// Errors: `InvalidCursor`.
    async fn list_links(&self, scope: &Scope, asked: &LinkQuery) -> Result<Page<PaymentLink>, Error>;
    /// Writes `link` if its stored lock version is `expected_lock_version` (and marks `claim`
    /// committed in the same transaction); answers whether it did. Errors:
    /// `IdempotencyClaimLost`.
    async fn update_link(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        claim: Option<IdempotencyClaim>,
    ) -> Result<bool, Error>;
    /// A public submission: the new invoice and its checkout (`change`), recorded as created
    /// through the link, and, for a single-use link, the link reserved for it, all in one
    /// transaction (with `change.claim` marked committed), only if the link is still at
    /// `expected_lock_version`. Answers whether it was written.
    async fn save_link_checkout(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        change: InvoiceChange,
    ) -> Result<bool, Error>;
    /// Invoices created through the link, newest first. Errors: `InvalidCursor`.
    async fn list_link_invoices(
        &self,
        scope: &Scope,
        id: &PaymentLinkId,
        page: &PageRequest,
    ) -> Result<Page<LinkInvoice>, Error>;
    /// Links (across merchants, or of `only`) whose expiry passed unannounced, at most `limit`
    /// (for the worker: it announces each).
    async fn expired_unannounced(&self, only: Option<Scope>, limit: u32) -> Result<Vec<(Scope, PaymentLinkId)>, Error>;
    /// Marks `link` as announced with its `payment_link.expired` event, in one transaction, if
    /// it is still at `expected_lock_version`.
    async fn announce_expiry(
        &self,
        link: &PaymentLink,
        expected_lock_version: i64,
        event: &Event,
    ) -> Result<bool, Error>;
}
