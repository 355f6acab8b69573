//! Chain adapter of stablepay: what verification and detection ask of the chain. This is the
//! only crate that knows JSON-RPC.
//!
//! Live mode reads Polygon (or any EVM chain with the configured chain id) through its own RPC
//! endpoints with alloy's JSON-RPC client: receipts, blocks, the `finalized` block and
//! `Transfer` logs. Endpoints are tried in order; one that answers for another chain id is
//! never used. Test mode is simulated inside the crediting decision (the test helpers build the
//! transfer), so the test-mode chain knows no transfers.

mod relayer;
mod rpc;
mod transaction;

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
pub use relayer::EvmRelayer;
use rpc::Endpoints;
pub use rpc::RpcSettings;
use stablepay_domain::chain::{ChainHealth, Observation, TransferQuery, TransferScan};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::wallet::TokenDomain;
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::ports::Chain;
use stablepay_domain::{Error, Mode, Scope};
pub use transaction::RelayerKey;

/// The chain for both modes: test mode knows no transfers; live mode asks the configured
/// endpoints, or waits with a diagnostic when there are none.
pub struct ModalChain {
    live: Option<std::sync::Arc<Endpoints>>,
    health: Mutex<Option<(Instant, ChainHealth)>>,
    /// The token contracts' EIP-712 domains, as read (a contract's domain changes only with an
    /// upgrade: read again after [`DOMAIN_TTL`]).
    domains: Mutex<HashMap<WalletAddress, (Instant, Option<TokenDomain>)>>,
}

/// How long a token's EIP-712 domain is trusted once read.
const DOMAIN_TTL: Duration = Duration::from_secs(600);

/// How long readiness trusts what the adapter last learned of the chain.
const HEALTH_TTL: Duration = Duration::from_secs(10);
/// How long readiness waits for its own probe of the chain: a node that accepts connections
/// and never answers is reported unreachable at once instead of holding `/readyz` for the
/// RPC timeout.
const HEALTH_PROBE: Duration = Duration::from_secs(2);

impl ModalChain {
    /// Test mode only: live payments wait (no RPC endpoint configured).
    pub fn without_live() -> Self {
        Self { live: None, health: Mutex::new(None), domains: Mutex::new(HashMap::new()) }
    }

    /// Live verification through `settings.urls` (none: as [`ModalChain::without_live`]).
    pub fn new(settings: RpcSettings) -> Result<Self, Error> {
        let live = if settings.urls.is_empty() { None } else { Some(std::sync::Arc::new(Endpoints::new(settings)?)) };
        Ok(Self { live, health: Mutex::new(None), domains: Mutex::new(HashMap::new()) })
    }

    /// The relayer with `key` (none: off), submitting to `usdc` on `chain_id` through these
    /// endpoints (none configured: off).
    pub fn relayer(&self, key: Option<RelayerKey>, usdc: WalletAddress, chain_id: u64) -> EvmRelayer {
        EvmRelayer::new(key, self.live.clone(), usdc, chain_id)
    }

    /// Whether live verification has endpoints to ask.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }

    fn live(&self) -> Result<&Endpoints, Error> {
        self.live.as_deref().ok_or_else(|| {
            Error::ChainUnavailable("no chain RPC endpoint is configured (STABLEPAY_CHAIN_RPC_URLS)".into())
        })
    }

    /// Remembers what a call taught about the chain, for readiness.
    fn learn<T>(&self, result: &Result<T, Error>) {
        let health = match result {
            Ok(_) => ChainHealth::Ok,
            Err(Error::ChainUnavailable(reason)) if self.live.is_some() => ChainHealth::WrongChain(reason.clone()),
            Err(Error::ChainUnavailable(_)) => ChainHealth::Off,
            Err(e) => ChainHealth::Unreachable(e.to_string()),
        };
        self.remember(health);
    }

    fn remember(&self, health: ChainHealth) {
        if let Ok(mut h) = self.health.lock() {
            *h = Some((Instant::now(), health));
        }
    }
}

#[async_trait]
impl Chain for ModalChain {
    async fn observe(&self, scope: &Scope, tx: &TxHash) -> Result<Observation, Error> {
        match scope.mode {
            Mode::Test => Ok(Observation::NotFound),
            Mode::Live => {
                let result = match self.live() {
                    Ok(live) => live.observe(tx).await,
                    Err(e) => Err(e),
                };
                self.learn(&result);
                result
            }
        }
    }

    async fn health(&self) -> ChainHealth {
        if self.live.is_none() {
            return ChainHealth::Off;
        }
        let known = self.health.lock().ok().and_then(|h| h.clone());
        if let Some((at, health)) = known
            && at.elapsed() < HEALTH_TTL
        {
            return health;
        }
        match tokio::time::timeout(HEALTH_PROBE, self.final_head()).await {
            Ok(result) => self.learn(&result),
            Err(_) => self.remember(ChainHealth::Unreachable(format!(
                "the chain RPC endpoints did not answer within {} ms",
                HEALTH_PROBE.as_millis()
            ))),
        }
        self.health.lock().ok().and_then(|h| h.clone()).map_or(ChainHealth::Off, |(_, h)| h)
    }

    async fn final_head(&self) -> Result<u64, Error> {
        let result = match self.live() {
            Ok(live) => live.final_head().await,
            Err(e) => Err(e),
        };
        self.learn(&result);
        result
    }

    async fn block_time(&self, number: u64) -> Result<Option<chrono::DateTime<chrono::Utc>>, Error> {
        let result = match self.live() {
            Ok(live) => live.block_time_at(number).await,
            Err(e) => Err(e),
        };
        self.learn(&result);
        result
    }

    async fn head(&self) -> Result<(u64, chrono::DateTime<chrono::Utc>), Error> {
        let result = match self.live() {
            Ok(live) => live.head().await,
            Err(e) => Err(e),
        };
        self.learn(&result);
        result
    }

    async fn token_domain(&self, contract: &WalletAddress) -> Result<Option<TokenDomain>, Error> {
        let known = self.domains.lock().ok().and_then(|d| d.get(contract).cloned());
        if let Some((at, domain)) = known
            && at.elapsed() < DOMAIN_TTL
        {
            return Ok(domain);
        }
        let result = match self.live() {
            Ok(live) => live.token_domain(contract).await,
            Err(e) => Err(e),
        };
        self.learn(&result);
        if let (Ok(domain), Ok(mut d)) = (&result, self.domains.lock()) {
            d.insert(contract.clone(), (Instant::now(), domain.clone()));
        }
        result
    }

    async fn transfers(&self, asked: &TransferQuery) -> Result<TransferScan, Error> {
        let result = match self.live() {
            Ok(live) => live.transfers(asked).await,
            Err(e) => Err(e),
        };
        self.learn(&result);
        result
    }
}

#[cfg(test)]
mod tests {
    use stablepay_domain::ids::MerchantId;

    use super::*;

    #[tokio::test]
    async fn test_mode_knows_no_transfers_and_live_waits_without_an_endpoint() {
        let chain = ModalChain::without_live();
        let tx = TxHash::parse(&format!("0x{}", "1".repeat(64))).unwrap();
        let test = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Test);
        assert_eq!(chain.observe(&test, &tx).await.unwrap(), Observation::NotFound);
        let live = Scope::new(MerchantId::from_trusted("mer_a".into()), Mode::Live);
        assert!(matches!(chain.observe(&live, &tx).await, Err(Error::ChainUnavailable(_))));
        assert_eq!(chain.health().await, ChainHealth::Off);
    }
}
