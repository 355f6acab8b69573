//! The `Relayer` port on the live chain: the relayer's account (`STABLEPAY_RELAYER_KEY`),
//! reading what a submission needs (the authorization's state, the payer's balance, the exact
//! call simulated), fees, signing of `transferWithAuthorization` to the configured token
//! contract only, broadcasting and receipts, through the same endpoints (failover, chain id
//! checked) as verification.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, Bytes, U64, U256};
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use stablepay_domain::Error;
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::wallet::TokenDomain;
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::money::Decimal6;
use stablepay_domain::ports::Relayer;
use stablepay_domain::relay::model::{Fees, Preflight, RelayReceipt, RelayTransaction, SignedAuthorization};

use crate::rpc::{Endpoint, Endpoints, Fault, hash_text, parse_address, selector, u64_of};
use crate::transaction::{Eip1559, RelayerKey, authorization_digest, authorized_calldata, recover};

/// The relayer: its key and the endpoints it sends through, or nothing (no key set).
pub struct EvmRelayer {
    account: Option<(RelayerKey, Arc<Endpoints>)>,
    /// The one token contract it submits to (USDC).
    token: WalletAddress,
    chain_id: u64,
    /// The balance and fees last read, reused for [`REUSE`] (readiness, the metrics and every
    /// submission ask for them).
    balance_seen: Mutex<Option<(Instant, u128)>>,
    fees_seen: Mutex<Option<(Instant, Fees)>>,
}

/// How long a balance or fees read from the chain are reused.
const REUSE: Duration = Duration::from_secs(5);

/// `cell`'s value while it is fresh.
fn fresh<T: Copy>(cell: &Mutex<Option<(Instant, T)>>) -> Option<T> {
    cell.lock().ok().and_then(|c| *c).filter(|(at, _)| at.elapsed() < REUSE).map(|(_, v)| v)
}

fn keep<T>(cell: &Mutex<Option<(Instant, T)>>, value: T) {
    if let Ok(mut c) = cell.lock() {
        *c = Some((Instant::now(), value));
    }
}

/// An `eth_call` or `eth_estimateGas` request from the relayer.
#[derive(Serialize, Debug, Clone)]
struct FromCall {
    from: Address,
    to: Address,
    data: Bytes,
}

/// A read-only `eth_call`.
#[derive(Serialize, Debug, Clone)]
struct ReadCall {
    to: Address,
    data: Bytes,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Head {
    timestamp: U64,
    #[serde(default)]
    base_fee_per_gas: Option<U256>,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct MinedReceipt {
    block_number: Option<U64>,
    status: Option<U64>,
    gas_used: U64,
    #[serde(default)]
    effective_gas_price: Option<U256>,
}

fn u128_of(v: U256) -> u128 {
    u128::try_from(v).unwrap_or(u128::MAX)
}

fn time_of(head: &Head) -> Result<DateTime<Utc>, Error> {
    DateTime::<Utc>::from_timestamp(i64::try_from(u64_of(head.timestamp)).unwrap_or(i64::MAX), 0)
        .ok_or_else(|| Error::Internal("block timestamp".into()))
}

/// The calldata of a view function of two words (`authorizationState`) or one (`balanceOf`).
fn view(signature: &str, words: &[[u8; 32]]) -> Bytes {
    let mut data = selector(signature).to_vec();
    for w in words {
        data.extend_from_slice(w);
    }
    Bytes::from(data)
}

/// A node that answers this to a broadcast already has the transaction.
fn already_known(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("already known") || m.contains("known transaction") || m.contains("already imported")
}

impl EvmRelayer {
    /// A relayer with `key`, sending through `endpoints` (both needed: without them it is off),
    /// submitting to `token` on `chain_id`.
    pub(crate) fn new(
        key: Option<RelayerKey>,
        endpoints: Option<Arc<Endpoints>>,
        token: WalletAddress,
        chain_id: u64,
    ) -> Self {
        let account = match (key, endpoints) {
            (Some(k), Some(e)) => Some((k, e)),
            _ => None,
        };
        Self { account, token, chain_id, balance_seen: Mutex::new(None), fees_seen: Mutex::new(None) }
    }

    fn account(&self) -> Result<(&RelayerKey, &Endpoints), Error> {
        self.account
            .as_ref()
            .map(|(k, e)| (k, e.as_ref()))
            .ok_or_else(|| Error::ChainUnavailable("no relayer key or chain endpoint is configured".into()))
    }

    fn from(&self) -> Result<Address, Error> {
        parse_address(self.account()?.0.address())
    }

    /// `endpoint`'s newest block.
    async fn head(endpoints: &Endpoints, endpoint: &Endpoint) -> Result<Head, Fault> {
        let head: Option<Head> = endpoints.call(endpoint, "eth_getBlockByNumber", ("latest", false)).await?;
        head.ok_or_else(|| Fault::Transport("eth_getBlockByNumber latest: no block".into()))
    }

    /// A view call's answer, or the token's refusal.
    async fn read(
        endpoints: &Endpoints,
        endpoint: &Endpoint,
        to: Address,
        data: Bytes,
    ) -> Result<Result<Bytes, String>, Fault> {
        endpoints.ask(endpoint, "eth_call", (ReadCall { to, data }, "latest")).await
    }
}

#[async_trait]
impl Relayer for EvmRelayer {
    fn address(&self) -> Option<WalletAddress> {
        self.account.as_ref().map(|(k, _)| k.address().clone())
    }

    fn submits_to(&self, token_contract: &WalletAddress) -> bool {
        *token_contract == self.token
    }

    fn signer(&self, domain: &TokenDomain, authorization: &SignedAuthorization) -> Option<WalletAddress> {
        let digest = authorization_digest(domain, &authorization.terms).ok()?;
        recover(&digest, &authorization.signature)
    }

    async fn preflight(&self, authorization: &SignedAuthorization) -> Result<Preflight, Error> {
        let (_, endpoints) = self.account()?;
        let (from, token) = (self.from()?, parse_address(&authorization.terms.token_contract)?);
        let payer = parse_address(&authorization.terms.from)?;
        let state = view("authorizationState(address,bytes32)", &[payer.into_word().0, authorization.terms.nonce.0]);
        let balance = view("balanceOf(address)", &[payer.into_word().0]);
        let data = Bytes::from(authorized_calldata(authorization)?);
        let answer = endpoints
            .with_endpoint(|e| {
                let (state, balance, data) = (state.clone(), balance.clone(), data.clone());
                async move {
                    let head = Self::head(endpoints, e).await?;
                    let used = Self::read(endpoints, e, token, state).await?;
                    let held = Self::read(endpoints, e, token, balance).await?;
                    let call = FromCall { from, to: token, data };
                    let simulated: Result<Bytes, String> =
                        endpoints.ask(e, "eth_call", (call.clone(), "latest")).await?;
                    let gas = match simulated {
                        Ok(_) => endpoints.ask::<_, U64>(e, "eth_estimateGas", (call,)).await?.map(u64_of),
                        Err(reason) => Err(reason),
                    };
                    Ok((head, used, held, gas))
                }
            })
            .await?;
        let (head, used, held, call) = answer;
        let word = |r: Result<Bytes, String>, what: &str| {
            r.ok()
                .filter(|b| b.len() >= 32)
                .map(|b| U256::from_be_slice(&b[..32]))
                .ok_or_else(|| Error::AuthorizationRejected(format!("the token does not answer {what}")))
        };
        let used = !word(used, "authorizationState")?.is_zero();
        let held = word(held, "balanceOf")?;
        let payer_balance =
            Decimal6::from_units(&held.to_string()).ok_or_else(|| Error::Internal("token balance".into()))?;
        Ok(Preflight { chain_time: time_of(&head)?, used, payer_balance, call })
    }

    async fn authorization_used(&self, authorization: &SignedAuthorization) -> Result<(bool, DateTime<Utc>), Error> {
        let (_, endpoints) = self.account()?;
        let token = parse_address(&authorization.terms.token_contract)?;
        let payer = parse_address(&authorization.terms.from)?;
        let state = view("authorizationState(address,bytes32)", &[payer.into_word().0, authorization.terms.nonce.0]);
        let (head, used) = endpoints
            .with_endpoint(|e| {
                let state = state.clone();
                async move {
                    let head = Self::head(endpoints, e).await?;
                    let used = Self::read(endpoints, e, token, state).await?;
                    Ok((head, used))
                }
            })
            .await?;
        let used = used.ok().filter(|b| b.len() >= 32).is_some_and(|b| !U256::from_be_slice(&b[..32]).is_zero());
        Ok((used, time_of(&head)?))
    }

    async fn fees(&self) -> Result<Fees, Error> {
        if let Some(fees) = fresh(&self.fees_seen) {
            return Ok(fees);
        }
        let (_, endpoints) = self.account()?;
        let fees = endpoints
            .with_endpoint(|e| async move {
                let head = Self::head(endpoints, e).await?;
                let tip: Result<U256, String> = endpoints.ask(e, "eth_maxPriorityFeePerGas", ()).await?;
                // EIP-1559: twice the base fee (it rises at most an eighth per block) and the tip.
                if let (Some(base), Ok(tip)) = (head.base_fee_per_gas, tip) {
                    let tip = u128_of(tip);
                    let max_fee_per_gas = u128_of(base).saturating_mul(2).saturating_add(tip);
                    return Ok(Fees { max_fee_per_gas, max_priority_fee_per_gas: tip });
                }
                // A node without a tip suggestion (or before EIP-1559): its gas price for both.
                let price = u128_of(endpoints.call::<_, U256>(e, "eth_gasPrice", ()).await?);
                Ok(Fees { max_fee_per_gas: price, max_priority_fee_per_gas: price })
            })
            .await?;
        keep(&self.fees_seen, fees);
        Ok(fees)
    }

    fn sign(
        &self,
        authorization: &SignedAuthorization,
        (nonce, gas_limit): (u64, u64),
        fees: &Fees,
        at: DateTime<Utc>,
    ) -> Result<RelayTransaction, Error> {
        let (key, _) = self.account()?;
        // The one thing this key signs: a customer's own authorization to the configured token.
        if authorization.terms.token_contract != self.token {
            return Err(Error::Internal("the relayer submits to the configured USDC contract only".into()));
        }
        let tx = Eip1559 {
            chain_id: self.chain_id,
            nonce,
            fees: *fees,
            gas_limit,
            to: parse_address(&self.token)?,
            data: authorized_calldata(authorization)?,
        };
        let (raw, hash) = tx.sign(key.signing_key())?;
        Ok(RelayTransaction { hash: TxHash::from_trusted(hash_text(&hash)), raw, fees: *fees, signed_at: at })
    }

    async fn broadcast(&self, transaction: &RelayTransaction) -> Result<(), Error> {
        let (_, endpoints) = self.account()?;
        let raw = Bytes::from(transaction.raw.clone());
        let answer = endpoints
            .with_endpoint(|e| {
                let raw = raw.clone();
                async move { endpoints.ask::<_, B256>(e, "eth_sendRawTransaction", (raw,)).await }
            })
            .await?;
        match answer {
            Ok(_) => Ok(()),
            Err(message) if already_known(&message) => Ok(()),
            Err(message) => {
                tracing::warn!(tx = transaction.hash.as_str(), reason = %message, "the node refused a relayer transaction");
                Err(Error::AuthorizationRejected(message))
            }
        }
    }

    async fn receipt(&self, hash: &TxHash) -> Result<Option<RelayReceipt>, Error> {
        let (_, endpoints) = self.account()?;
        let h: B256 = hash.as_str().parse().map_err(|_| Error::Internal("transaction hash".into()))?;
        let receipt: Option<MinedReceipt> =
            endpoints.with_endpoint(|e| endpoints.call(e, "eth_getTransactionReceipt", (h,))).await?;
        let Some(r) = receipt else { return Ok(None) };
        let Some(block) = r.block_number else { return Ok(None) };
        let gas_used = u64_of(r.gas_used);
        let price = r.effective_gas_price.map_or(0, u128_of);
        Ok(Some(RelayReceipt {
            hash: hash.clone(),
            succeeded: r.status.is_some_and(|s| u64_of(s) == 1),
            block_number: u64_of(block),
            gas_used,
            fee_wei: price.saturating_mul(u128::from(gas_used)),
        }))
    }

    async fn mined_nonce(&self) -> Result<u64, Error> {
        let (_, endpoints) = self.account()?;
        let from = self.from()?;
        let n: U64 =
            endpoints.with_endpoint(|e| endpoints.call(e, "eth_getTransactionCount", (from, "latest"))).await?;
        Ok(u64_of(n))
    }

    async fn balance(&self) -> Result<u128, Error> {
        if let Some(wei) = fresh(&self.balance_seen) {
            return Ok(wei);
        }
        let (_, endpoints) = self.account()?;
        let from = self.from()?;
        let wei: U256 = endpoints.with_endpoint(|e| endpoints.call(e, "eth_getBalance", (from, "latest"))).await?;
        keep(&self.balance_seen, u128_of(wei));
        Ok(u128_of(wei))
    }
}
