//! Readiness: whether this deployment can serve.

use crate::chain::model::ChainHealth;
use crate::chain::ports::Chain;
use crate::error::Error;
use crate::health::ports::Health;

/// The readiness check over the store and the chain.
pub struct Readiness<'a> {
    /// The store.
    pub store: &'a dyn Health,
    /// The chain (live verification).
    pub chain: &'a dyn Chain,
}

impl Readiness<'_> {
    /// Whether live verification can run, once the store answered. Errors: `Unavailable` when
    /// the store does not answer.
    pub async fn check(&self) -> Result<ChainHealth, Error> {
        self.store.ready().await?;
        Ok(self.chain.health().await)
    }
}
