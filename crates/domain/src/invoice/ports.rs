//! The invoice store port: invoices with their checkout sessions and payments, saved as one
//! aggregate together with the events the change emits.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::chain::model::{CandidateQuery, Candidates};
use crate::error::Error;
use crate::ids::{CheckoutSessionId, InvoiceId, MerchantId, PaymentId};
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceChange, InvoiceKey, PublicRef};
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::collection::CollectionState;
use crate::invoice::document::InvoiceDocument;
use crate::invoice::model::InvoiceSearch;
use crate::invoice::payment::{Payment, PaymentStatus, TxHash};
use crate::invoice::wallet::{AuthorizationNonce, AuthorizationTerms};
use crate::merchant::model::WalletAddress;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::schedule::model::DueSchedule;

/// Invoices with their checkout sessions and payments (one aggregate, saved atomically with
/// its events). Every method but [`InvoiceStore::load_public`] and
/// [`InvoiceStore::claim_due`] is scoped: an id of another merchant is `NotFound`, one of the
/// same merchant's other mode `ModeMismatch`.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait InvoiceStore: Send + Sync {
    /// Errors: `NotFound(Invoice)` (or `NotFound(CheckoutSession)` for a session key) when no
    /// such record exists for the merchant; `ModeMismatch` when it exists in the other mode.
    async fn load_invoice(&self, scope: &Scope, key: &InvoiceKey) -> Result<InvoiceAggregate, Error>;
    /// The invoices of `scope` with these ids, in the order given, in one read where the
    /// adapter can (a page of a link's invoices). An id that is not an invoice of the scope is
    /// left out.
    async fn load_invoices(&self, scope: &Scope, ids: &[InvoiceId]) -> Result<Vec<InvoiceAggregate>, Error>;
    /// The one read without a scope: the hosted pages find an invoice by its unguessable
    /// session id or public token. Errors: `NotFound(CheckoutSession)` / `NotFound(Invoice)`.
    async fn load_public(&self, reference: &PublicRef) -> Result<InvoiceAggregate, Error>;
    /// Invoices of `scope`, newest first. Errors: `InvalidCursor` when `starting_after` is not
    /// an invoice of this scope.
    async fn list_invoices(
        &self,
        scope: &Scope,
        state: Option<CollectionState>,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error>;
    /// Invoices of `scope` narrowed by `search`, newest first. Errors: `InvalidCursor` as
    /// [`InvoiceStore::list_invoices`].
    async fn search_invoices(
        &self,
        scope: &Scope,
        search: &InvoiceSearch,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error>;
    /// Checkout sessions of `scope`, newest first, optionally in one status. Errors:
    /// `InvalidCursor` when `starting_after` is not a session of this scope.
    async fn list_sessions(
        &self,
        scope: &Scope,
        status: Option<CheckoutStatus>,
        page: &PageRequest,
    ) -> Result<Page<CheckoutSession>, Error>;
    /// Payments of `scope`, the most recently detected first, optionally in one status.
    /// Errors: `InvalidCursor` when `starting_after` is not a payment of this scope.
    async fn list_payments(
        &self,
        scope: &Scope,
        status: Option<PaymentStatus>,
        page: &PageRequest,
    ) -> Result<Page<Payment>, Error>;
    /// Writes the change in one transaction, as its [`ChangeKind`](crate::invoice::aggregate::ChangeKind)
    /// says: the invoice (inserted, or updated only if its stored lock version is the expected
    /// one), the changed sessions and payments, the next invoice number when asked, and the
    /// events. Returns the saved aggregate (with its number and new lock version).
    /// Errors: `InvoiceStateMismatch` when the invoice changed meanwhile (the caller reloads
    /// and decides again); `DuplicateTransaction` when a payment the change credits uses a
    /// transaction hash that another credited payment already used (nothing is written).
    async fn save_invoice(&self, change: InvoiceChange) -> Result<InvoiceAggregate, Error>;
    /// The live checkouts, of every merchant, that `asked` names: created at or before its `at`
    /// plus `early` (to the second), expiring after `at`, pending, expired or cancelled (a closed
    /// invoice's checkout takes the late payment it reports; not completed ones), and asking
    /// the amount now (its own, or its invoice's remainder), bound to the sender's wallet, or
    /// reported; each with its invoice's remainder and the wallets bound to it. Also whether any
    /// checkout of the wallet and token was open at `at` (created at or before it). One of the
    /// reads across merchants besides [`InvoiceStore::load_public`]: attribution compares a
    /// transfer with every checkout asking for it.
    async fn open_checkouts(&self, asked: &CandidateQuery) -> Result<Candidates, Error>;
    /// The live checkouts, of every merchant, that transaction `tx` was reported for (a payment
    /// claiming the whole transaction, whatever its status) and that pay `wallet` in
    /// `token_contract`: the reports attribution weighs. Across merchants like
    /// [`InvoiceStore::open_checkouts`].
    async fn reported_checkouts(
        &self,
        tx: &TxHash,
        wallet: &WalletAddress,
        token_contract: &WalletAddress,
    ) -> Result<Vec<CheckoutSessionId>, Error>;
    /// Binds `wallet` to checkout `session_id` of `scope` at `at` (a wallet payment attempt),
    /// keeping every wallet bound before; binding one again changes nothing, and a checkout
    /// holding [`MAX_BINDINGS`](crate::invoice::checkout::MAX_BINDINGS) keeps no more. The
    /// attempt's authorization `terms` (its nonce first) are kept with the binding (unless the
    /// checkout holds [`MAX_AUTHORIZATIONS`](crate::invoice::wallet::MAX_AUTHORIZATIONS)
    /// already, or the binding could not be kept); answers whether they were. Errors:
    /// `NotFound(CheckoutSession)`.
    async fn bind_wallet(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        wallet: &WalletAddress,
        terms: Option<AuthorizationTerms>,
        at: DateTime<Utc>,
    ) -> Result<bool, Error>;
    /// The authorization terms kept for `nonce` with a wallet payment attempt of checkout
    /// `session_id` of `scope`; `None` when no attempt of that checkout has that nonce (or it
    /// was kept before its terms were). Errors: `NotFound(CheckoutSession)`.
    async fn authorization_terms(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        nonce: &AuthorizationNonce,
    ) -> Result<Option<AuthorizationTerms>, Error>;
    /// The wallets bound to checkout `session_id` of `scope`, first bound first. Errors:
    /// `NotFound(CheckoutSession)`.
    async fn bindings(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
    ) -> Result<Vec<crate::invoice::checkout::Binding>, Error>;
    /// Errors: `NotFound(Payment)`, `ModeMismatch`.
    async fn get_payment(&self, scope: &Scope, id: &PaymentId) -> Result<Payment, Error>;
    /// The payments of `scope` naming transaction `tx` (any status), oldest first.
    async fn payments_of_transaction(&self, scope: &Scope, tx: &TxHash) -> Result<Vec<Payment>, Error>;
    /// Claims up to `limit` invoices with due time-based work (pending checkouts past expiry,
    /// collectible invoices past their due date), each for `lease_seconds`, skipping rows
    /// other workers hold. `only` restricts the claim to one scope and then ignores leases (the
    /// caller wants every due transition of that scope done before it answers). Each scope's
    /// own clock decides what is due.
    async fn claim_due(
        &self,
        only: Option<Scope>,
        limit: u32,
        lease_seconds: u32,
    ) -> Result<Vec<(Scope, InvoiceId)>, Error>;
    /// Gives back the leases of claimed invoices whose due work was not done (a worker that
    /// stops mid-batch), so another worker takes them at once instead of after the lease.
    async fn release_due(&self, items: &[(Scope, InvoiceId)]) -> Result<(), Error>;
    /// Backs off an invoice whose due work failed with `error` (for operators): its lease is
    /// pushed by the wait of `schedule`'s backoff for its failures in a row, counted from one
    /// again after `schedule`'s `forgotten_after_seconds` without a failure. Answers the failures in a row. Errors:
    /// `NotFound(Invoice)`.
    async fn defer_due(&self, scope: &Scope, id: &InvoiceId, error: &str, schedule: DueSchedule) -> Result<u32, Error>;
    /// Claims up to `limit` live payments still being verified whose next check is due, each
    /// for `lease_ms` milliseconds (other workers skip them meanwhile; a check that changes
    /// nothing leaves the payment to be looked at again after that): every `detected` one, and
    /// the `validating` ones whose block is at or below `final_block` (a validating payment in a
    /// newer block cannot be credited yet; without a known final block none is claimed).
    async fn claim_payments(
        &self,
        limit: u32,
        lease_ms: u32,
        final_block: Option<u64>,
    ) -> Result<Vec<(Scope, PaymentId, TxHash)>, Error>;
    /// Records why a payment's verification waits (`diagnostic`) and checks it again after
    /// `seconds`. Errors: `NotFound(Payment)`.
    async fn defer_payment(&self, scope: &Scope, id: &PaymentId, seconds: u32, diagnostic: &str) -> Result<(), Error>;
    /// Moves the merchant's test clock forward by `seconds`; returns the new total offset in
    /// seconds. Errors: `NotFound(Merchant)`; `Validation { field: "seconds" }` when the total
    /// would exceed [`MAX_TEST_CLOCK_OFFSET_SECONDS`](crate::clock::MAX_TEST_CLOCK_OFFSET_SECONDS).
    async fn advance_test_clock(&self, merchant: &MerchantId, seconds: i64) -> Result<i64, Error>;
    /// Sets the merchant's test clock back to the real time (offset 0). Errors:
    /// `NotFound(Merchant)`.
    async fn reset_test_clock(&self, merchant: &MerchantId) -> Result<(), Error>;
}

/// What a checkout's subscription saw while it waited ([`CheckoutSubscription::next`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckoutSignal {
    /// The checkout may have changed (a payment of it was written, or its status changed)
    /// since the subscription last looked: read it again.
    Changed,
    /// Nothing was signalled within the wait.
    Quiet,
    /// Signals are not being received (their source is reconnecting): the caller reads the
    /// checkout again as a poll would, after a pause the subscription already took.
    Unavailable,
}

/// Signals, from any process of the deployment, that a checkout may have changed: what lets a
/// hosted page push a payment to its customer instead of polling for it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait CheckoutSignals: Send + Sync {
    /// Follows checkout `id`: every signal from this call on reaches the subscription, so a
    /// caller that subscribes, then reads the checkout, misses nothing in between.
    fn subscribe(&self, id: &CheckoutSessionId) -> Box<dyn CheckoutSubscription>;
}

/// One follower of one checkout ([`CheckoutSignals::subscribe`]); dropping it stops following.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait CheckoutSubscription: Send {
    /// Waits for a signal since the previous call (or the subscription), at most `limit`.
    async fn next(&mut self, limit: std::time::Duration) -> CheckoutSignal;
}

/// Renders invoice documents. Rendering is CPU work: callers run it off the async workers.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait InvoiceRenderer: Send + Sync {
    /// The PDF bytes. Errors: `InvoicePdfUnavailable` (a draft, or what cannot be rendered).
    fn render_pdf(&self, document: &InvoiceDocument) -> Result<Vec<u8>, Error>;
}
