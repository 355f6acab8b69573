//! Ports: every trait an adapter implements, in one place for adapters and admin tooling.
//! Each method's doc states its error contract.
//!
//! The small stores are defined here. The ports that belong to one area are defined there and
//! re-exported: [`Crypto`] (`crypto`), [`Clock`] (`clock`), [`Chain`] (`chain`) and
//! [`InvoiceStore`] (`invoice::ports`). Inside the crate, modules import a port from where it
//! is defined, never through this file, so imports run one way (see `tests/layering.rs`).
//!
//! Every store method that touches merchant data takes the [`Scope`] (merchant and mode) or
//! the merchant id it acts for; adapters must filter by it, so an id of another merchant is
//! `Error::NotFound` and an id of the same merchant in the other mode is `Error::ModeMismatch`.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

pub use crate::chain::Chain;
pub use crate::clock::Clock;
pub use crate::crypto::Crypto;
pub use crate::invoice::ports::InvoiceStore;
pub use crate::page::{Page, PageRequest};

#[cfg(any(test, feature = "mocks"))]
pub use crate::{chain::MockChain, clock::MockClock, crypto::MockCrypto, invoice::ports::MockInvoiceStore};

use crate::api_key::{ApiKey, KeyLookup, KeyType};
use crate::chain::{OpenCheckout, UnattributedTransfer};
use crate::error::Error;
use crate::event::{Event, EventType};
use crate::ids::{ApiKeyId, EventId, MerchantId};
use crate::merchant::WalletAddress;
use crate::merchant::{LiveSettlement, Merchant, MerchantStatus};
use crate::mode::Scope;
use crate::payment::TxHash;

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
    /// Every merchant, oldest first (an operator's list).
    async fn list_merchants(&self) -> Result<Vec<Merchant>, Error>;
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
    /// Records that the key was used at `at` (unless a later use is already recorded).
    async fn record_key_use(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error>;
    /// The merchant's keys, oldest first.
    async fn list_keys(&self, merchant_id: &MerchantId) -> Result<Vec<ApiKey>, Error>;
}

/// Readiness of the service's dependencies.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Health: Send + Sync {
    /// `Ok` when the store answers. Errors: `Unavailable`.
    async fn ready(&self) -> Result<(), Error>;
}

/// The outbox, read side.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait EventStore: Send + Sync {
    /// Events of `scope`, newest first. Errors: `InvalidCursor` when `starting_after` is not
    /// an event of this scope.
    async fn list_events(
        &self,
        scope: &Scope,
        event_type: Option<EventType>,
        page: &PageRequest,
    ) -> Result<Page<Event>, Error>;
    /// Errors: `NotFound(Event)`; `ModeMismatch` for an event of the other mode.
    async fn get_event(&self, scope: &Scope, id: &EventId) -> Result<Event, Error>;
}

/// What following the chain for transfers needs from the store.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait WatchStore: Send + Sync {
    /// The next block to scan on `chain_id`; `None` before the first scan.
    async fn scan_cursor(&self, chain_id: u64) -> Result<Option<u64>, Error>;
    /// Moves the cursor from `from` (`None`: not started) to `to`. Answers false when another
    /// worker moved it first (scanning is idempotent, so nothing is lost either way).
    async fn move_cursor(&self, chain_id: u64, from: Option<u64>, to: u64) -> Result<bool, Error>;
    /// The live settlement wallets of activated merchants.
    async fn watched_wallets(&self) -> Result<Vec<WalletAddress>, Error>;
    /// The merchants whose live settlement wallet is `wallet`.
    async fn merchants_with_wallet(&self, wallet: &WalletAddress) -> Result<Vec<MerchantId>, Error>;
    /// Live checkouts paying into `wallet` with `token_contract` that are pending and not
    /// expired at `at`, of every merchant.
    async fn open_checkouts(
        &self,
        wallet: &WalletAddress,
        token_contract: &WalletAddress,
        at: DateTime<Utc>,
    ) -> Result<Vec<OpenCheckout>, Error>;
    /// Whether a live payment on `chain_id` already uses `tx` (it is being, or was, verified).
    async fn live_payment_exists(&self, chain_id: u64, tx: &TxHash) -> Result<bool, Error>;
    /// Records an unattributed transfer with its event in one transaction, once per merchant,
    /// transaction and log; answers false when it was recorded before.
    async fn record_unattributed(&self, transfer: &UnattributedTransfer, event: &Event) -> Result<bool, Error>;
    /// Unattributed transfers of `scope`, newest first. Errors: `InvalidCursor`.
    async fn list_unattributed(&self, scope: &Scope, page: &PageRequest) -> Result<Page<UnattributedTransfer>, Error>;
}

/// What an idempotency key says about a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdempotencyBegin {
    /// First use (or the earlier attempt was abandoned): execute the request.
    Started,
    /// Same key, same request, completed: answer with the stored response.
    Replay {
        /// The stored answer's HTTP status.
        status: u16,
        /// The stored answer's body, byte for byte.
        body: String,
    },
    /// Same key, same request, still executing elsewhere: retry later.
    InProgress,
    /// Same key, different request.
    Conflict,
}

/// Whose idempotency key it is: keys are separate per merchant, mode and requester, so a
/// publishable key (public, in browsers) can never claim or read a secret-key request's answer,
/// nor a customer on a public page a merchant's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdempotencyNamespace {
    /// The merchant and mode.
    pub scope: Scope,
    /// Who sent the request.
    pub requester: Requester,
}

/// Who sent an idempotent request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Requester {
    /// A merchant's API key of this type.
    Key(KeyType),
    /// A customer on a public route (no key); their keys are also separate per public
    /// resource (the caller puts the resource into the key).
    Public,
}

impl Requester {
    /// The requester as stored: the key type (`secret`, `publishable`) or `public`.
    pub fn as_str(self) -> &'static str {
        match self {
            Requester::Key(t) => t.as_str(),
            Requester::Public => "public",
        }
    }
}

/// Saved responses of idempotent requests, per namespace. The response is stored as opaque
/// status and body; only the HTTP adapter interprets them.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait IdempotencyStore: Send + Sync {
    /// Claims `key` for a request with `fingerprint`. Keys older than 24 hours are forgotten;
    /// an in-progress claim older than `stale_after_seconds` is taken over.
    async fn begin(
        &self,
        namespace: &IdempotencyNamespace,
        key: &str,
        fingerprint: [u8; 32],
        stale_after_seconds: i64,
    ) -> Result<IdempotencyBegin, Error>;
    /// Stores the response for replay.
    async fn complete(&self, namespace: &IdempotencyNamespace, key: &str, status: u16, body: &str)
    -> Result<(), Error>;
    /// Forgets the claim (the request failed in a way a retry may fix).
    async fn abandon(&self, namespace: &IdempotencyNamespace, key: &str) -> Result<(), Error>;
    /// Deletes keys older than 24 hours; returns how many.
    async fn purge_expired(&self) -> Result<u64, Error>;
}
