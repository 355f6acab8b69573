//! What the relayer needs from adapters: the relayer account on the chain, and the store of
//! submissions with the account's nonce.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::ids::{CheckoutSessionId, RelayId};
use crate::invoice::payment::TxHash;
use crate::invoice::wallet::{AuthorizationNonce, TokenDomain};
use crate::merchant::model::WalletAddress;
use crate::mode::Scope;
use crate::relay::model::{
    Fees, Inserted, Preflight, Rebroadcast, Relay, RelayReceipt, RelayTransaction, RelayUsage, SignedAuthorization,
};

/// The relayer's account on the live chain. It signs one kind of transaction only: the
/// submission of a customer's signed authorization (`transferWithAuthorization`) to the
/// configured token contract, with no value; nothing else can be asked of it.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait Relayer: Send + Sync {
    /// The relayer's address; `None` when the operator set no relayer key (nothing is relayed).
    fn address(&self) -> Option<WalletAddress>;
    /// Whether `authorization` is for the token contract the relayer submits to.
    fn submits_to(&self, token_contract: &WalletAddress) -> bool;
    /// The address whose key signed `authorization`'s EIP-712 message under `domain`; `None`
    /// when the signature recovers to no key.
    fn signer(&self, domain: &TokenDomain, authorization: &SignedAuthorization) -> Option<WalletAddress>;
    /// What the chain says now of `authorization`: the newest block's time, whether its nonce is
    /// used, the payer's token balance, and the exact call simulated from the relayer. Errors:
    /// `Unavailable` (no endpoint answered), `ChainUnavailable`.
    async fn preflight(&self, authorization: &SignedAuthorization) -> Result<Preflight, Error>;
    /// `authorizationState(from, nonce)` on the newest block, and that block's time. Errors: as
    /// for `preflight`.
    async fn authorization_used(&self, authorization: &SignedAuthorization) -> Result<(bool, DateTime<Utc>), Error>;
    /// The fees to offer now (the base fee doubled and the node's tip; an answer a few seconds
    /// old may be reused). Errors: as for `preflight`.
    async fn fees(&self) -> Result<Fees, Error>;
    /// Signs the submission of `authorization` with the relayer's nonce and the gas limit
    /// (`nonce_and_gas_limit`) and `fees`, at `at`. Errors: `Internal` (no key, or an authorization for another token).
    fn sign(
        &self,
        authorization: &SignedAuthorization,
        nonce_and_gas_limit: (u64, u64),
        fees: &Fees,
        at: DateTime<Utc>,
    ) -> Result<RelayTransaction, Error>;
    /// Broadcasts `transaction` (a node that knows it already counts as sent). Errors:
    /// `Unavailable` (no endpoint answered); `AuthorizationRejected` with the node's reason
    /// when the nodes refuse it (underpriced, the relayer's balance, a nonce used).
    async fn broadcast(&self, transaction: &RelayTransaction) -> Result<(), Error>;
    /// The receipt of `hash`, once mined. Errors: as for `preflight`.
    async fn receipt(&self, hash: &TxHash) -> Result<Option<RelayReceipt>, Error>;
    /// How many of the relayer's transactions are mined: the nonce its next one takes on the
    /// chain. Errors: as for `preflight`.
    async fn mined_nonce(&self) -> Result<u64, Error>;
    /// The relayer's POL balance in wei (an answer a few seconds old may be reused). Errors: as
    /// for `preflight`.
    async fn balance(&self) -> Result<u128, Error>;
}

/// Submissions to the relayer, and the relayer account's nonce and sender lease.
///
/// The public look-ups are scoped by the checkout's merchant and mode; the sender's reads and
/// writes are by relayer account, across merchants (the deliberate exception, as for the
/// follower's).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait RelayStore: Send + Sync {
    /// Records `relay` (new, queued) unless its authorization's nonce was submitted before
    /// (answers that submission), or unless what the relayer used and reserved since `budget`'s
    /// day began with `relay`'s gas limit would exceed its limit (answers `OverBudget`, recording nothing); the
    /// budget is checked and the submission recorded under the relayer account's lock, so
    /// concurrent submissions never overspend it.
    async fn insert_relay(&self, relay: &Relay, budget: (DateTime<Utc>, u64)) -> Result<Inserted, Error>;
    /// The submission of `nonce` for checkout `session_id` of `scope`, if any.
    async fn relay_for_nonce(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        nonce: &AuthorizationNonce,
    ) -> Result<Option<Relay>, Error>;
    /// A submission of checkout `session_id` of `scope` that may still pay it (queued, or sent
    /// and not yet settled), if any.
    async fn relay_in_flight(&self, scope: &Scope, session_id: &CheckoutSessionId) -> Result<Option<Relay>, Error>;
    /// Submission `id` of checkout `session_id` of `scope`. Errors:
    /// `NotFound(RelayedAuthorization)`.
    async fn get_relay(&self, scope: &Scope, session_id: &CheckoutSessionId, id: &RelayId) -> Result<Relay, Error>;
    /// Takes (or renews) the sender's lease of `relayer` for `holder`, for `lease_seconds` by the
    /// store's clock, answering the account's next nonce as the store knows it; `None` while
    /// another holder's lease runs.
    async fn take_lease(&self, relayer: &WalletAddress, holder: &str, lease_seconds: u32)
    -> Result<Option<u64>, Error>;
    /// Whether `relayer` has anything to send or follow (a queued submission, or a transaction
    /// that may still be mined): an idle sender asks nothing more.
    async fn has_work(&self, relayer: &WalletAddress) -> Result<bool, Error>;
    /// Up to `limit` submissions of `relayer` with a transaction that may still be mined, by
    /// nonce.
    async fn in_flight(&self, relayer: &WalletAddress, limit: u32) -> Result<Vec<Relay>, Error>;
    /// Up to `limit` queued submissions of `relayer`, oldest first.
    async fn queued(&self, relayer: &WalletAddress, limit: u32) -> Result<Vec<Relay>, Error>;
    /// Records the first transaction of queued submission `id`, signed with `nonce`, and moves
    /// the account's next nonce from `expected` to `nonce + 1` (`expected_and_nonce`), in one transaction, only while
    /// `holder` holds the lease and the next nonce is still `expected`; answers whether it did
    /// (nothing is written otherwise, and the transaction must not be broadcast).
    async fn record_first(
        &self,
        id: &RelayId,
        holder: &str,
        expected_and_nonce: (u64, u64),
        transaction: &RelayTransaction,
    ) -> Result<bool, Error>;
    /// Records that submission `id` was broadcast `again` (with its replacement, when there is
    /// one); only while `holder` holds the lease.
    async fn record_broadcast(&self, id: &RelayId, holder: &str, again: &Rebroadcast) -> Result<bool, Error>;
    /// Saves what became of submission `relay.id` (its status, detail, receipt, and its nonce,
    /// cleared when it goes back to the queue); only while `holder` holds the lease.
    async fn record_outcome(&self, relay: &Relay, holder: &str) -> Result<bool, Error>;
    /// What `relayer` used, reserved and settled since `since`.
    async fn usage(&self, relayer: &WalletAddress, since: DateTime<Utc>) -> Result<RelayUsage, Error>;
}
