//! What the chain feature needs from adapters: the chain itself, and the follower's store.

use crate::chain::model::{
    ChainHealth, LogClaim, LoggedTransfer, Observation, TransferQuery, TransferScan, UnattributedStatus,
    UnattributedTransfer,
};
use crate::error::Error;
use crate::event::model::Event;
use crate::ids::{CheckoutSessionId, MerchantId, UnattributedTransferId};
use crate::invoice::payment::TxHash;
use crate::invoice::wallet::TokenDomain;
use crate::merchant::model::WalletAddress;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::schedule::model::Batch;
use async_trait::async_trait;
use chrono::{DateTime, Utc};

/// The chain, as verification and detection see it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Chain: Send + Sync {
    /// What the chain says of `tx` for `scope`'s mode. Errors: `Unavailable` when the chain
    /// cannot be asked now (the caller retries later); `ChainUnavailable` when the mode has no
    /// usable chain (no RPC configured, or the node is on another chain), with the reason.
    async fn observe(&self, scope: &Scope, tx: &TxHash) -> Result<Observation, Error>;
    /// Whether live verification can run (cheap: from what the adapter last learned, asking
    /// the node only when it knows nothing recent).
    async fn health(&self) -> ChainHealth;
    /// The EIP-712 domain token contract `contract` says it signs under (EIP-5267
    /// `eip712Domain()`, remembered once read), or `None` when it has none (it cannot take
    /// EIP-3009 authorizations the service knows how to ask for). Errors: `ChainUnavailable`.
    async fn token_domain(&self, contract: &WalletAddress) -> Result<Option<TokenDomain>, Error>;
    /// The newest final block of the live chain (the node's `finalized` block, or the head less
    /// the configured confirmations). Errors: as for `observe`.
    async fn final_head(&self) -> Result<u64, Error>;
    /// The time of block `number` of the live chain, `None` when the chain has no such block
    /// yet. Errors: as for `observe`.
    async fn block_time(&self, number: u64) -> Result<Option<DateTime<Utc>>, Error>;
    /// The newest block of the live chain (not necessarily final) and its time: how far the
    /// service's clock is from the chain's. Errors: as for `observe`.
    async fn head(&self) -> Result<(u64, DateTime<Utc>), Error>;
    /// The `Transfer` logs `asked` names, of the live chain, with the blocks whose answer could not be confirmed complete (an
    /// endpoint behind the range, or one answering nothing where the block's bloom says a
    /// watched transfer may be: the next endpoint is asked before a block is left uncertain).
    /// Errors: as for `observe`.
    async fn transfers(&self, asked: &TransferQuery) -> Result<TransferScan, Error>;
}

/// What following the chain for transfers needs from the store.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait FollowerStore: Send + Sync {
    /// The next block to scan on `chain_id`; `None` before the first scan.
    async fn scan_cursor(&self, chain_id: u64) -> Result<Option<u64>, Error>;
    /// Moves the cursor from `from` (`None`: not started) to `to`, ending any hold. Answers false
    /// when another worker moved it first (scanning is idempotent, so nothing is lost either
    /// way).
    async fn move_cursor(&self, chain_id: u64, from: Option<u64>, to: u64) -> Result<bool, Error>;
    /// Holds the cursor at `from` because its range could not be confirmed complete: answers
    /// since when it is held (`at` when the hold starts now), so the follower retries the range
    /// for a while and then moves on.
    async fn hold_cursor(&self, chain_id: u64, from: u64, at: DateTime<Utc>) -> Result<DateTime<Utc>, Error>;
    /// Queues blocks `from..=to` for their second reading at `due` (once per range).
    async fn queue_recheck(&self, chain_id: u64, from: u64, to: u64, due: DateTime<Utc>) -> Result<(), Error>;
    /// Claims a `batch` of the ranges due for their second reading at `now`.
    async fn claim_rechecks(&self, chain_id: u64, now: DateTime<Utc>, batch: Batch) -> Result<Vec<(u64, u64)>, Error>;
    /// Forgets a range read twice.
    async fn finish_recheck(&self, chain_id: u64, from: u64) -> Result<(), Error>;
    /// How many ranges wait for their second reading.
    async fn rechecks_pending(&self, chain_id: u64) -> Result<u64, Error>;
    /// Whether the follower (or a report, or a person) already did something with log `logged`:
    /// credited, kept while a claim is in flight, claimed by a payment, or recorded as
    /// unattributed. A log the second reading finds that none of these knows was missed.
    async fn log_seen(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<bool, Error>;
    /// Every wallet a live transfer may pay: the live settlement wallets of activated merchants,
    /// and the wallets of live checkouts still pending or expired less than a day ago (a
    /// merchant who changed wallets still has checkouts asking customers to pay the old one).
    async fn live_settlement_wallets(&self) -> Result<Vec<WalletAddress>, Error>;
    /// When the oldest live checkout still watched (pending, or expired less than a day ago)
    /// was created: where a follower without a cursor starts looking.
    async fn oldest_watched_checkout(&self) -> Result<Option<DateTime<Utc>>, Error>;
    /// The merchants whose live settlement wallet is `wallet`, or who have a live checkout
    /// paying into it.
    async fn merchants_with_wallet(&self, wallet: &WalletAddress) -> Result<Vec<MerchantId>, Error>;
    /// Where transfer log `logged` on `chain_id` stands: counted by a credited live payment,
    /// claimed by live payments in flight (reporting its hash to a checkout of the same wallet
    /// and token, for this log or for every log; with their checkouts), or free.
    async fn log_claim(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<LogClaim, Error>;
    /// Keeps a final transfer log whose claim is in flight, to be decided again on later
    /// passes (once; keeping it again changes nothing).
    async fn defer_transfer(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<(), Error>;
    /// Up to `limit` deferred transfer logs of `chain_id`, oldest first.
    async fn deferred_transfers(&self, chain_id: u64, limit: u32) -> Result<Vec<LoggedTransfer>, Error>;
    /// Forgets a deferred transfer log once it ended credited or recorded.
    async fn forget_deferred(&self, chain_id: u64, tx: &TxHash, log_index: u64) -> Result<(), Error>;
    /// Records an unattributed transfer with its event in one transaction, once per merchant,
    /// transaction and log: a record still open with another reason or other candidates (a
    /// report came since) takes the new ones, with the event; answers false when nothing was
    /// written (recorded before as it is, or credited since).
    async fn record_unattributed(&self, transfer: &UnattributedTransfer, event: &Event) -> Result<bool, Error>;
    /// `scope`'s unattributed transfers still open that name checkout `session` among their
    /// candidates, or whose transaction is `tx` (either, when given), newest first (at most 20).
    async fn unattributed_about(
        &self,
        scope: &Scope,
        session: Option<CheckoutSessionId>,
        tx: Option<TxHash>,
    ) -> Result<Vec<UnattributedTransfer>, Error>;
    /// `scope`'s unattributed transfer `id`. Errors: `NotFound(UnattributedTransfer)`.
    async fn get_unattributed(&self, scope: &Scope, id: &UnattributedTransferId)
    -> Result<UnattributedTransfer, Error>;
    /// Unattributed transfers of `scope` in `status` (any: `None`), newest first. Errors:
    /// `InvalidCursor`.
    async fn list_unattributed(
        &self,
        scope: &Scope,
        status: Option<UnattributedStatus>,
        page: &PageRequest,
    ) -> Result<Page<UnattributedTransfer>, Error>;
}
