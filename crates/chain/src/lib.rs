//! Chain adapter of stablepay: what verification asks of the chain.
//!
//! Test mode is simulated: the test helpers build the simulated transfer and credit it in the
//! same decision (the domain's `Billing::pay_test`), so the test-mode chain itself knows no
//! transfers and answers `NotFound` for any hash submitted otherwise. Live mode on Polygon
//! (JSON-RPC with alloy) arrives with its own issue; until then live verification answers
//! `FeatureUnavailable`. This is the only crate that will know JSON-RPC.

use async_trait::async_trait;
use stablepay_domain::chain::{Chain, Observation};
use stablepay_domain::payment::TxHash;
use stablepay_domain::{Error, Mode, Scope};

/// The chain for both modes: simulated in test mode; live mode is not wired yet.
#[derive(Default)]
pub struct ModalChain;

#[async_trait]
impl Chain for ModalChain {
    async fn observe(&self, scope: &Scope, _tx: &TxHash) -> Result<Observation, Error> {
        match scope.mode {
            Mode::Test => Ok(Observation::NotFound),
            Mode::Live => Err(Error::FeatureUnavailable("live-mode onchain verification")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use stablepay_domain::ids::MerchantId;

    #[tokio::test]
    async fn test_mode_knows_no_transfers_and_live_is_not_wired() {
        let chain = ModalChain;
        let tx = TxHash::parse(&format!("0x{}", "1".repeat(64))).unwrap();
        let test = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Test);
        assert_eq!(chain.observe(&test, &tx).await.unwrap(), Observation::NotFound);
        let live = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Live);
        assert!(matches!(chain.observe(&live, &tx).await, Err(Error::FeatureUnavailable(_))));
    }
}
