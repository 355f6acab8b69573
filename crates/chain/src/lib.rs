//! Chain adapter of stablepay: what verification asks of the chain.
//!
//! Test mode uses [`SimulatedChain`]: transfers that the test helpers submit become observable
//! to the same verification code that live mode runs. Live mode on Polygon (JSON-RPC with
//! alloy) arrives with its own issue; until then live verification answers
//! `FeatureUnavailable`. This is the only crate that will know JSON-RPC.

use std::collections::HashMap;
use std::sync::Mutex;

use async_trait::async_trait;
use stablepay_domain::chain::{Chain, Observation, ObservedTransfer};
use stablepay_domain::ids::MerchantId;
use stablepay_domain::payment::TxHash;
use stablepay_domain::{Error, Mode, Scope};

/// Simulated transfers, per merchant, held until verification observes them. A simulated
/// transfer is submitted and verified within one request, so process memory suffices even
/// with several replicas.
#[derive(Default)]
pub struct SimulatedChain {
    pending: Mutex<HashMap<(MerchantId, TxHash), ObservedTransfer>>,
}

impl SimulatedChain {
    pub fn new() -> Self {
        Self::default()
    }
}

/// The chain for both modes: simulated in test mode; live mode is not wired yet.
#[derive(Default)]
pub struct ModalChain {
    pub simulated: SimulatedChain,
}

#[async_trait]
impl Chain for ModalChain {
    async fn observe(&self, scope: &Scope, tx: &TxHash) -> Result<Observation, Error> {
        match scope.mode {
            Mode::Test => {
                let mut pending =
                    self.simulated.pending.lock().map_err(|_| Error::Internal("simulated chain poisoned".into()))?;
                Ok(pending
                    .remove(&(scope.merchant_id.clone(), tx.clone()))
                    .map_or(Observation::NotFound, Observation::Found))
            }
            Mode::Live => Err(Error::FeatureUnavailable("live-mode onchain verification")),
        }
    }

    async fn simulate(&self, scope: &Scope, transfer: ObservedTransfer) -> Result<(), Error> {
        if scope.mode != Mode::Test {
            return Err(Error::FeatureUnavailable("simulated transfers outside test mode"));
        }
        let mut pending =
            self.simulated.pending.lock().map_err(|_| Error::Internal("simulated chain poisoned".into()))?;
        pending.insert((scope.merchant_id.clone(), transfer.tx_hash.clone()), transfer);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablepay_domain::merchant::Token;
    use stablepay_domain::money::Decimal6;

    #[tokio::test]
    async fn simulated_transfers_are_observed_once_and_per_merchant() {
        let chain = ModalChain::default();
        let scope = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Test);
        let other = Scope::new(MerchantId::from_trusted("mer_b".into()), Mode::Test);
        let tx = TxHash::parse(&format!("0x{}", "1".repeat(64))).unwrap();
        let t = ObservedTransfer {
            tx_hash: tx.clone(),
            chain_id: 137,
            token_contract: Token::Usdc.polygon_contract(),
            recipient: Token::Usdc.polygon_contract(),
            sender: None,
            amount: Decimal6::parse("1").unwrap(),
            succeeded: true,
            block_time: chrono::Utc::now(),
        };
        chain.simulate(&scope, t.clone()).await.unwrap();
        assert_eq!(chain.observe(&other, &tx).await.unwrap(), Observation::NotFound);
        assert_eq!(chain.observe(&scope, &tx).await.unwrap(), Observation::Found(t.clone()));
        assert_eq!(chain.observe(&scope, &tx).await.unwrap(), Observation::NotFound);
        let live = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Live);
        assert!(chain.simulate(&live, t).await.is_err());
        assert!(chain.observe(&live, &tx).await.is_err());
    }
}
