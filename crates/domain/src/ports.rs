//! Ports: the traits adapters implement. Each method's doc states its error contract.
//!
//! Every store method that touches merchant data takes the [`Scope`] (merchant and mode) or
//! the merchant id it acts for; adapters must filter by it, so an id of another merchant is
//! `Error::NotFound` and an id of the same merchant in the other mode is `Error::ModeMismatch`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::api_key::{ApiKey, KeyLookup};
use crate::billing::{InvoiceAggregate, InvoiceChange, InvoiceKey, PublicRef};
use crate::error::Error;
use crate::event::{Event, EventType};
use crate::ids::{ApiKeyId, EventId, MerchantId, PaymentId};
use crate::invoice::CollectionState;
use crate::merchant::{LiveSettlement, Merchant, MerchantStatus};
use crate::mode::Scope;
use crate::payment::{Payment, TxHash};

/// Randomness and digests.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Crypto: Send + Sync {
    /// Fills `buf` from a cryptographically secure source.
    fn fill_random(&self, buf: &mut [u8]);
    /// SHA-256 of `data`.
    fn sha256(&self, data: &[u8]) -> [u8; 32];
}

/// The time. It can differ per merchant and mode: test mode has a clock the merchant can move
/// forward (test helpers); live mode always reads the real time.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Clock: Send + Sync {
    /// The current time for `scope`. Errors: `Unavailable` when the offset cannot be read.
    async fn now(&self, scope: &Scope) -> Result<DateTime<Utc>, Error>;
    /// The real time, for things that belong to no merchant.
    fn system_now(&self) -> DateTime<Utc>;
}

/// Merchant accounts (operator level).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait MerchantStore: Send + Sync {
    /// Inserts a new merchant. Errors: `Unavailable`, `Internal`.
    async fn insert_merchant(&self, merchant: &Merchant) -> Result<(), Error>;
    /// Errors: `NotFound(Merchant)` when it does not exist.
    async fn get_merchant(&self, id: &MerchantId) -> Result<Merchant, Error>;
    /// Sets the live settlement. Errors: `NotFound(Merchant)`.
    async fn set_live_settlement(&self, id: &MerchantId, live: &LiveSettlement) -> Result<(), Error>;
    /// Errors: `NotFound(Merchant)`.
    async fn set_status(&self, id: &MerchantId, status: MerchantStatus) -> Result<(), Error>;
}

/// API key records.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// Inserts a key record for `key.merchant_id`. Errors: `NotFound(Merchant)`.
    async fn insert_key(&self, key: &ApiKey) -> Result<(), Error>;
    /// The key with this digest and its merchant's status, if any.
    async fn find_key_by_digest(&self, digest: [u8; 32]) -> Result<Option<KeyLookup>, Error>;
    /// Marks the key revoked at `at` (idempotent). Errors: `NotFound(ApiKey)`.
    async fn revoke_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error>;
}

/// Readiness of the service's dependencies.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Health: Send + Sync {
    /// `Ok` when the store answers. Errors: `Unavailable`.
    async fn ready(&self) -> Result<(), Error>;
}

/// A page request of a cursor-paginated list (newest first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PageRequest {
    /// 1-100.
    pub limit: u32,
    /// The id of the last item of the previous page.
    pub starting_after: Option<String>,
}

/// One page of a list; `has_more` tells whether items follow the last one.
#[derive(Clone, Debug, PartialEq)]
pub struct Page<T> {
    pub items: Vec<T>,
    pub has_more: bool,
}

/// The outbox, read side.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Events of `scope`, newest first. Errors: `Validation { field: "startingAfter" }` when the
    /// cursor is not an event of this scope.
    async fn list_events(
        &self,
        scope: &Scope,
        event_type: Option<EventType>,
        page: &PageRequest,
    ) -> Result<Page<Event>, Error>;
    /// Errors: `NotFound(Event)`; `ModeMismatch` for an event of the other mode.
    async fn get_event(&self, scope: &Scope, id: &EventId) -> Result<Event, Error>;
}

/// Invoices with their checkout sessions and payments (one aggregate, saved atomically with
/// its events).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait InvoiceStore: Send + Sync {
    /// Errors: `NotFound(Invoice)` (or `NotFound(CheckoutSession)` for a session key) when no
    /// such record exists for the merchant; `ModeMismatch` when it exists in the other mode.
    async fn load_invoice(&self, scope: &Scope, key: &InvoiceKey) -> Result<InvoiceAggregate, Error>;
    /// The one read without a scope: the hosted pages find an invoice by its unguessable
    /// session id or public token. Errors: `NotFound(CheckoutSession)` / `NotFound(Invoice)`.
    async fn load_public(&self, reference: &PublicRef) -> Result<InvoiceAggregate, Error>;
    /// Invoices of `scope`, newest first. Errors: `Validation { field: "startingAfter" }`.
    async fn list_invoices(
        &self,
        scope: &Scope,
        state: Option<CollectionState>,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error>;
    /// Writes the change in one transaction: the invoice (inserted, or updated only if its
    /// stored lock version is `expected_lock_version`), the changed sessions and payments, the
    /// next invoice number when asked, and the events. Returns the saved aggregate.
    /// Errors: `InvoiceStateMismatch` when the invoice changed meanwhile or a transaction
    /// hash was taken concurrently (the caller reloads and retries).
    async fn save_invoice(&self, change: InvoiceChange) -> Result<InvoiceAggregate, Error>;
    /// The payment (of any merchant) that already used this transaction hash, if any.
    async fn payment_using_tx(&self, chain_id: u64, tx: &TxHash) -> Result<Option<PaymentId>, Error>;
    /// Errors: `NotFound(Payment)`, `ModeMismatch`.
    async fn get_payment(&self, scope: &Scope, id: &PaymentId) -> Result<Payment, Error>;
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
    ) -> Result<Vec<(Scope, crate::ids::InvoiceId)>, Error>;
    /// Moves the merchant's test clock forward; returns the new offset in seconds.
    async fn advance_test_clock(&self, merchant: &MerchantId, seconds: i64) -> Result<i64, Error>;
}

/// What an idempotency key says about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// First use (or the earlier attempt was abandoned): execute the request.
    Started,
    /// Same key, same request, completed: answer with the stored response.
    Replay { status: u16, body: String },
    /// Same key, same request, still executing elsewhere: retry later.
    InProgress,
    /// Same key, different request.
    Conflict,
}

/// Saved responses of idempotent requests, per merchant and mode. The response is stored as
/// opaque status and body; only the HTTP adapter interprets them.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` for a request with `fingerprint`. Keys older than 24 hours are forgotten;
    /// an in-progress claim older than `stale_after_seconds` is taken over.
    async fn begin(
        &self,
        scope: &Scope,
        key: &str,
        fingerprint: [u8; 32],
        stale_after_seconds: i64,
    ) -> Result<IdempotencyBegin, Error>;
    /// Stores the response for replay.
    async fn complete(&self, scope: &Scope, key: &str, status: u16, body: &str) -> Result<(), Error>;
    /// Forgets the claim (the request failed in a way a retry may fix).
    async fn abandon(&self, scope: &Scope, key: &str) -> Result<(), Error>;
    /// Deletes keys older than 24 hours; returns how many.
    async fn purge_expired(&self) -> Result<u64, Error>;
}
