//! JSON-RPC to the live chain's endpoints (alloy's client over reqwest with rustls on ring):
//! failover in order, a timeout per request, and the chain id checked before an endpoint is
//! trusted.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, Bloom, BloomInput, Bytes, U64, U256};
use alloy_rpc_client::RpcClient;
use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use stablepay_domain::Error;
use stablepay_domain::chain::{
    LoggedTransfer, Observation, ObservedTransaction, ScanPass, TokenTransfer, TransferQuery, TransferScan,
};
use stablepay_domain::invoice::payment::{BlockRef, TxHash};
use stablepay_domain::invoice::wallet::{AuthorizationNonce, TokenDomain};
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::money::Decimal6;
use stablepay_domain::url::{Mask, masked};

/// keccak256("Transfer(address,address,uint256)"): the topic of ERC-20 transfer logs.
const TRANSFER_TOPIC: B256 =
    alloy_primitives::b256!("ddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef");

/// keccak256("AuthorizationUsed(address,bytes32)"): the topic of EIP-3009's log beside the
/// `Transfer` an authorization made.
const AUTHORIZATION_USED_TOPIC: B256 =
    alloy_primitives::b256!("98de503528ee59b575ef0c0a2576a82497bfc029a5685b209e9ec333479b10a5");

/// The selector of EIP-5267 `eip712Domain()`.
const EIP712_DOMAIN_SELECTOR: [u8; 4] = [0x84, 0xb0, 0x19, 0x6e];

/// Wallets per `eth_getLogs` request (nodes limit the size of a topic filter).
const WALLETS_PER_QUERY: usize = 100;

/// What the operator configured.
#[derive(Clone, Debug)]
pub struct RpcSettings {
    /// Endpoints, tried in order.
    pub urls: Vec<String>,
    pub chain_id: u64,
    /// How deep a block must be to count as final where the node has no `finalized` tag.
    pub confirmations: u64,
    /// The longest wait for one answer.
    pub request_timeout: Duration,
    /// How often an endpoint's chain id is asked again: an endpoint repointed to another chain
    /// is noticed within this time (and one repointed back is used again).
    pub chain_id_recheck: Duration,
}

/// The chain id of an endpoint not checked yet.
const UNCHECKED: u64 = u64::MAX;

pub(crate) struct Endpoint {
    /// The URL as it may be logged or shown: providers put their API key in the path or query,
    /// so only the scheme and host are kept ([`masked`]).
    shown: String,
    /// The URL as the client prints it in its errors (normalised), and as configured: both
    /// are replaced by `shown` in any error text.
    spellings: [String; 2],
    client: RpcClient,
    /// The chain id it answered ([`UNCHECKED`] before it was asked).
    chain: AtomicU64,
    /// When it was asked last.
    checked_at: Mutex<Option<Instant>>,
}

impl Endpoint {
    /// An error's text with the endpoint's URL masked wherever the client wrote it.
    fn without_url(&self, e: &impl std::fmt::Display) -> String {
        let mut text = e.to_string();
        for spelling in &self.spellings {
            text = text.replace(spelling.as_str(), &self.shown);
        }
        text
    }
}

pub(crate) struct Endpoints {
    list: Vec<Endpoint>,
    settings: RpcSettings,
    /// Blocks by hash: what a hash names never changes, so the many payments of one block
    /// fetch it once (bounded: emptied when full).
    blocks: Mutex<HashMap<B256, Block>>,
    /// The newest final block and when it was asked, reused for [`FINAL_BLOCK_REUSE`].
    final_block: Mutex<Option<(Instant, u64)>>,
}

/// Blocks kept by hash.
const BLOCKS_KEPT: usize = 1024;
/// How long an answer for the final block is reused: verifications running together ask once.
const FINAL_BLOCK_REUSE: Duration = Duration::from_millis(100);

/// A failure of one endpoint: the next is tried, unless the answer is the chain's own.
pub(crate) enum Fault {
    /// Timeout, connection, HTTP or JSON-RPC error: this endpoint, now.
    Transport(String),
    /// The endpoint is on another chain.
    WrongChain(u64),
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Receipt {
    block_number: Option<U64>,
    block_hash: Option<B256>,
    from: Address,
    status: Option<U64>,
    logs: Vec<Log>,
}

/// An `eth_call`'s transaction.
#[derive(Serialize, Debug, Clone)]
struct CallRequest {
    to: Address,
    data: Bytes,
}

#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase")]
struct Log {
    address: Address,
    topics: Vec<B256>,
    data: Bytes,
    block_number: Option<U64>,
    block_hash: Option<B256>,
    transaction_hash: Option<B256>,
    log_index: Option<U64>,
    #[serde(default)]
    removed: bool,
}

#[derive(Deserialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
struct Block {
    number: U64,
    hash: B256,
    timestamp: U64,
    /// The bloom of the block's logs: a log of an address and topics is in the block only where
    /// the bloom holds each of them (false positives happen, false negatives never).
    #[serde(default)]
    logs_bloom: Option<Bloom>,
}

/// Blocks whose headers are read at once to check an answer's completeness.
const HEADERS_AT_ONCE: usize = 16;

/// The logs one `eth_getLogs` filter asks for, read from as many endpoints as it takes.
struct Reading {
    /// Every log any endpoint returned, once.
    logs: Vec<Log>,
    /// Blocks no answer covered for sure.
    uncertain: Vec<u64>,
    /// Answers that differed from the ones before them.
    disagreements: u64,
}

fn log_key(l: &Log) -> (Option<B256>, Option<U64>) {
    (l.transaction_hash, l.log_index)
}

/// Whether a block with `bloom` may hold a `Transfer` log of one of `filter`'s tokens to one of
/// its recipients (a block without a bloom may hold anything).
fn may_hold(bloom: Option<&Bloom>, filter: &LogFilter) -> bool {
    let Some(bloom) = bloom else { return true };
    let has = |bytes: &[u8]| bloom.contains_input(BloomInput::Raw(bytes));
    filter.address.iter().any(|a| has(a.as_slice()))
        && has(filter.topics.0.as_slice())
        && filter.topics.2.iter().any(|w| has(w.as_slice()))
}

#[derive(Serialize, Debug, Clone)]
#[serde(rename_all = "camelCase")]
struct LogFilter {
    from_block: U64,
    to_block: U64,
    address: Vec<Address>,
    topics: (B256, Option<B256>, Vec<B256>),
}

pub(crate) fn address(a: &Address) -> Result<WalletAddress, Error> {
    WalletAddress::parse(&format!("{a:#x}")).map_err(|e| Error::Internal(format!("chain address: {e}")))
}

pub(crate) fn parse_address(w: &WalletAddress) -> Result<Address, Error> {
    w.as_str().parse().map_err(|_| Error::Internal(format!("not an address: {w}")))
}

pub(crate) fn hash_text(h: &B256) -> String {
    format!("{h:#x}")
}

pub(crate) fn u64_of(v: U64) -> u64 {
    v.to::<u64>()
}

/// A block's time.
fn block_time(block: &Block) -> Result<DateTime<Utc>, Error> {
    DateTime::<Utc>::from_timestamp(i64::try_from(u64_of(block.timestamp)).unwrap_or(i64::MAX), 0)
        .ok_or_else(|| Error::Internal("block timestamp".into()))
}

/// The nonces of the EIP-3009 authorizations among a transaction's `logs` (in their order), by
/// the log index of the `Transfer` each made: an `AuthorizationUsed` log counts only paired with
/// the `Transfer` log that immediately precedes it, of the same token contract and from the
/// authorizer (a batch puts many pairs in one transaction; a lone or misplaced one names
/// nothing).
fn authorizations(logs: &[Log]) -> HashMap<u64, AuthorizationNonce> {
    let mut found = HashMap::new();
    for pair in logs.windows(2) {
        let [transfer, used] = pair else { continue };
        let ([t_topic, t_from, _], [u_topic, u_authorizer, u_nonce]) =
            (transfer.topics.as_slice(), used.topics.as_slice())
        else {
            continue;
        };
        let adjacent = match (transfer.log_index, used.log_index) {
            (Some(t), Some(u)) => u64_of(u) == u64_of(t) + 1,
            _ => true,
        };
        if *t_topic == TRANSFER_TOPIC
            && *u_topic == AUTHORIZATION_USED_TOPIC
            && transfer.address == used.address
            && t_from == u_authorizer
            && adjacent
            && !transfer.removed
            && !used.removed
        {
            found.insert(transfer.log_index.map_or(0, u64_of), AuthorizationNonce(u_nonce.0));
        }
    }
    found
}

/// The token transfers of a transaction's `logs`, each with the authorization that made it.
fn transfers_of(logs: &[Log]) -> Result<Vec<TokenTransfer>, Error> {
    let paired = authorizations(logs);
    let mut out = Vec::new();
    for log in logs.iter().filter(|l| !l.removed) {
        if let Some(mut t) = transfer_of(log)? {
            t.authorization = paired.get(&t.log_index).copied();
            out.push(t);
        }
    }
    Ok(out)
}

/// Reads an ABI-encoded `eip712Domain()` answer (EIP-5267): the domain when it uses exactly a
/// name, a version, a chain id and a verifying contract (fields `0x0f`, no salt, no
/// extensions), which is what EIP-3009 tokens sign under; `None` for anything else.
fn token_domain_of(data: &[u8]) -> Option<TokenDomain> {
    let word = |i: usize| data.get(i * 32..i * 32 + 32);
    let number = |w: &[u8]| -> Option<usize> {
        let value = U256::from_be_slice(w);
        usize::try_from(value).ok()
    };
    let text = |offset: usize| -> Option<String> {
        let len = number(data.get(offset..offset + 32)?)?;
        String::from_utf8(data.get(offset + 32..offset + 32 + len)?.to_vec()).ok()
    };
    let fields = *word(0)?.first()?;
    if fields != 0x0f {
        return None;
    }
    let name = text(number(word(1)?)?)?;
    let version = text(number(word(2)?)?)?;
    let chain_id = u64::try_from(U256::from_be_slice(word(3)?)).ok()?;
    let contract = Address::from_word(B256::from_slice(word(4)?));
    let at = number(word(6)?)?;
    let extensions = number(data.get(at..at + 32)?)?;
    if extensions != 0 {
        return None;
    }
    Some(TokenDomain { name, version, chain_id, verifying_contract: address(&contract).ok()? })
}

/// The 4-byte selector of a function `signature`.
pub(crate) fn selector(signature: &str) -> [u8; 4] {
    let hash = alloy_primitives::keccak256(signature.as_bytes());
    [hash[0], hash[1], hash[2], hash[3]]
}

/// An ABI-encoded `string` return value.
fn abi_string(data: &[u8]) -> Option<String> {
    let offset = usize::try_from(U256::from_be_slice(data.get(..32)?)).ok()?;
    let len = usize::try_from(U256::from_be_slice(data.get(offset..offset + 32)?)).ok()?;
    String::from_utf8(data.get(offset + 32..offset + 32 + len)?.to_vec()).ok()
}

/// The EIP-712 separator of a domain of `name`, `version`, `chain_id` and `contract`.
pub(crate) fn domain_separator(name: &str, version: &str, chain_id: u64, contract: &Address) -> B256 {
    let typehash = alloy_primitives::keccak256(
        "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)".as_bytes(),
    );
    let mut encoded = Vec::with_capacity(5 * 32);
    encoded.extend_from_slice(typehash.as_slice());
    encoded.extend_from_slice(alloy_primitives::keccak256(name.as_bytes()).as_slice());
    encoded.extend_from_slice(alloy_primitives::keccak256(version.as_bytes()).as_slice());
    encoded.extend_from_slice(&U256::from(chain_id).to_be_bytes::<32>());
    encoded.extend_from_slice(contract.into_word().as_slice());
    alloy_primitives::keccak256(&encoded)
}

/// The ERC-20 transfer a log records, if it is one.
fn transfer_of(log: &Log) -> Result<Option<TokenTransfer>, Error> {
    let [topic, from, to] = log.topics.as_slice() else { return Ok(None) };
    if *topic != TRANSFER_TOPIC || log.data.len() != 32 {
        return Ok(None);
    }
    let value = U256::from_be_slice(&log.data);
    let amount = Decimal6::from_units(&value.to_string()).ok_or_else(|| Error::Internal("transfer value".into()))?;
    Ok(Some(TokenTransfer {
        log_index: log.log_index.map_or(0, u64_of),
        token_contract: address(&log.address)?,
        from: address(&Address::from_word(*from))?,
        to: address(&Address::from_word(*to))?,
        amount,
        authorization: None,
    }))
}

impl Endpoints {
    pub(crate) fn new(settings: RpcSettings) -> Result<Self, Error> {
        // TLS for https endpoints: rustls on ring. Installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .timeout(settings.request_timeout)
            .connect_timeout(settings.request_timeout)
            .build()
            .map_err(|e| Error::ChainUnavailable(format!("HTTP client: {e}")))?;
        let list = settings
            .urls
            .iter()
            .map(|url| {
                let shown = masked(url, Mask::PathAndQuery);
                let parsed: reqwest::Url =
                    url.parse().map_err(|_| Error::ChainUnavailable(format!("not a URL: {shown}")))?;
                Ok(Endpoint {
                    shown,
                    spellings: [parsed.to_string(), url.clone()],
                    client: RpcClient::new_http_with_client(http.clone(), parsed),
                    chain: AtomicU64::new(UNCHECKED),
                    checked_at: Mutex::new(None),
                })
            })
            .collect::<Result<_, Error>>()?;
        Ok(Self { list, settings, blocks: Mutex::new(HashMap::new()), final_block: Mutex::new(None) })
    }

    pub(crate) async fn call<P, R>(&self, endpoint: &Endpoint, method: &'static str, params: P) -> Result<R, Fault>
    where
        P: Serialize + Clone + Send + Sync + Unpin + std::fmt::Debug + 'static,
        R: DeserializeOwned + std::fmt::Debug + Send + Sync + Unpin + 'static,
    {
        let call = endpoint.client.request::<P, R>(method, params);
        match tokio::time::timeout(self.settings.request_timeout, call).await {
            Ok(Ok(answer)) => Ok(answer),
            Ok(Err(e)) => {
                Err(Fault::Transport(format!("{method} at {}: {}", endpoint.shown, endpoint.without_url(&e))))
            }
            Err(_) => Err(Fault::Transport(format!("{method} at {}: no answer in time", endpoint.shown))),
        }
    }

    /// `endpoint`'s answer to `method`, or the node's refusal (a JSON-RPC error: a revert, a
    /// transaction it will not take) as its message: the chain's answer, not the endpoint's
    /// failure, so the next endpoint is not asked.
    pub(crate) async fn ask<P, R>(
        &self,
        endpoint: &Endpoint,
        method: &'static str,
        params: P,
    ) -> Result<Result<R, String>, Fault>
    where
        P: Serialize + Clone + Send + Sync + Unpin + std::fmt::Debug + 'static,
        R: DeserializeOwned + std::fmt::Debug + Send + Sync + Unpin + 'static,
    {
        let call = endpoint.client.request::<P, R>(method, params);
        match tokio::time::timeout(self.settings.request_timeout, call).await {
            Ok(Ok(answer)) => Ok(Ok(answer)),
            Ok(Err(e)) => match e.as_error_resp() {
                Some(refusal) => Ok(Err(refusal.message.to_string())),
                None => Err(Fault::Transport(format!("{method} at {}: {}", endpoint.shown, endpoint.without_url(&e)))),
            },
            Err(_) => Err(Fault::Transport(format!("{method} at {}: no answer in time", endpoint.shown))),
        }
    }

    /// Checks that `endpoint` serves the configured chain: asked once, then again every
    /// `chain_id_recheck` (an endpoint may be repointed to another chain behind its URL).
    async fn check_chain(&self, endpoint: &Endpoint) -> Result<(), Fault> {
        let mut id = endpoint.chain.load(Ordering::Relaxed);
        let due = endpoint
            .checked_at
            .lock()
            .map(|at| at.is_none_or(|at| at.elapsed() >= self.settings.chain_id_recheck))
            .unwrap_or(true);
        if id == UNCHECKED || due {
            let asked = u64_of(self.call::<_, U64>(endpoint, "eth_chainId", ()).await?);
            if let Ok(mut at) = endpoint.checked_at.lock() {
                *at = Some(Instant::now());
            }
            let before = endpoint.chain.swap(asked, Ordering::Relaxed);
            let expected = self.settings.chain_id;
            if asked != expected && before != asked {
                tracing::error!(url = %endpoint.shown, node_chain_id = asked, expected, "chain RPC endpoint is on another chain; it is not used");
            } else if asked == expected && before != UNCHECKED && before != expected {
                tracing::warn!(url = %endpoint.shown, "chain RPC endpoint serves the configured chain again; it is used");
            }
            id = asked;
        }
        if id == self.settings.chain_id { Ok(()) } else { Err(Fault::WrongChain(id)) }
    }

    /// Runs `job` on the first endpoint that serves the right chain and answers.
    pub(crate) async fn with_endpoint<'a, T, F, Fut>(&'a self, job: F) -> Result<T, Error>
    where
        F: Fn(&'a Endpoint) -> Fut,
        Fut: Future<Output = Result<T, Fault>>,
    {
        let mut faults = Vec::new();
        let mut wrong = Vec::new();
        for endpoint in &self.list {
            let outcome = match self.check_chain(endpoint).await {
                Ok(()) => job(endpoint).await,
                Err(f) => Err(f),
            };
            match outcome {
                Ok(answer) => return Ok(answer),
                Err(Fault::WrongChain(id)) => wrong.push(id),
                Err(Fault::Transport(text)) => {
                    tracing::warn!(error = %text, "chain RPC failed; trying the next endpoint");
                    faults.push(text);
                }
            }
        }
        if wrong.len() == self.list.len() {
            return Err(Error::ChainUnavailable(format!(
                "the chain RPC endpoints serve chain {wrong:?}, not chain {} (STABLEPAY_CHAIN_ID)",
                self.settings.chain_id
            )));
        }
        tracing::warn!(faults = ?faults, "no chain RPC endpoint answered");
        Err(Error::Unavailable)
    }

    /// The newest final block: the node's `finalized` block, or the head less the configured
    /// confirmations where the node has no such tag.
    async fn final_block(&self, endpoint: &Endpoint) -> Result<u64, Fault> {
        if let Ok(cached) = self.final_block.lock()
            && let Some((at, number)) = *cached
            && at.elapsed() < FINAL_BLOCK_REUSE
        {
            return Ok(number);
        }
        let asked = Instant::now();
        let number = self.ask_final_block(endpoint).await?;
        if let Ok(mut cached) = self.final_block.lock() {
            // Never move back to an older answer of a slower request.
            match *cached {
                Some((at, known)) if at > asked && known >= number => {}
                _ => *cached = Some((asked, number)),
            }
        }
        Ok(number)
    }

    async fn ask_final_block(&self, endpoint: &Endpoint) -> Result<u64, Fault> {
        let finalized: Result<Option<Block>, Fault> =
            self.call(endpoint, "eth_getBlockByNumber", ("finalized", false)).await;
        if let Ok(Some(block)) = finalized {
            return Ok(u64_of(block.number));
        }
        let head: U64 = self.call(endpoint, "eth_blockNumber", ()).await?;
        Ok(u64_of(head).saturating_sub(self.settings.confirmations))
    }

    /// The block named `hash`, if the node knows it (from the cache when it was seen before).
    async fn block(&self, endpoint: &Endpoint, hash: B256) -> Result<Option<Block>, Fault> {
        if let Some(block) = self.blocks.lock().ok().and_then(|b| b.get(&hash).cloned()) {
            return Ok(Some(block));
        }
        let block: Option<Block> = self.call(endpoint, "eth_getBlockByHash", (hash, false)).await?;
        if let (Some(found), Ok(mut blocks)) = (&block, self.blocks.lock()) {
            if blocks.len() >= BLOCKS_KEPT {
                blocks.clear();
            }
            blocks.insert(hash, found.clone());
        }
        Ok(block)
    }

    pub(crate) async fn final_head(&self) -> Result<u64, Error> {
        self.with_endpoint(|e| self.final_block(e)).await
    }

    pub(crate) async fn observe(&self, tx: &TxHash) -> Result<Observation, Error> {
        let hash: B256 = tx.as_str().parse().map_err(|_| Error::Internal("transaction hash".into()))?;
        self.with_endpoint(|e| async move {
            // The final block is asked first: a receipt read afterwards in a block at or below
            // it is in a final block (finality only moves forward). Asked the other way round,
            // the receipt's block could be reorganised away in between.
            let final_block = self.final_block(e).await?;
            let receipt: Option<Receipt> = self.call(e, "eth_getTransactionReceipt", (hash,)).await?;
            let Some(receipt) = receipt else { return Ok(None) };
            let (Some(number), Some(block_hash)) = (receipt.block_number, receipt.block_hash) else { return Ok(None) };
            // Unknown to the node (reorganised away since the receipt was read): not found now.
            let Some(block) = self.block(e, block_hash).await? else { return Ok(None) };
            Ok(Some((receipt, u64_of(number), block, final_block)))
        })
        .await?
        .map_or(Ok(Observation::NotFound), |(receipt, number, block, final_block)| {
            let transfers = transfers_of(&receipt.logs)?;
            let block_time = block_time(&block)?;
            Ok(Observation::Included(ObservedTransaction {
                tx_hash: tx.clone(),
                chain_id: self.settings.chain_id,
                succeeded: receipt.status.is_some_and(|s| u64_of(s) == 1),
                block: BlockRef { number, hash: hash_text(&block.hash) },
                block_time,
                sender: Some(address(&receipt.from)?),
                transfers,
                finalized: number <= final_block,
            }))
        })
    }

    pub(crate) async fn block_time_at(&self, number: u64) -> Result<Option<DateTime<Utc>>, Error> {
        let block: Option<Block> =
            self.with_endpoint(|e| self.call(e, "eth_getBlockByNumber", (U64::from(number), false))).await?;
        block.as_ref().map(block_time).transpose()
    }

    /// The newest block and its time.
    pub(crate) async fn head(&self) -> Result<(u64, DateTime<Utc>), Error> {
        let block: Option<Block> =
            self.with_endpoint(|e| self.call(e, "eth_getBlockByNumber", ("latest", false))).await?;
        let block = block.ok_or(Error::Unavailable)?;
        Ok((u64_of(block.number), block_time(&block)?))
    }

    pub(crate) async fn transfers(&self, asked: &TransferQuery) -> Result<TransferScan, Error> {
        let TransferQuery { blocks: (from, to), tokens, wallets, pass } = asked;
        let (from, to, pass) = (*from, *to, *pass);
        let tokens = tokens.iter().map(parse_address).collect::<Result<Vec<_>, _>>()?;
        let mut scan = TransferScan::default();
        for chunk in wallets.chunks(WALLETS_PER_QUERY) {
            let recipients = chunk.iter().map(|w| parse_address(w).map(|a| a.into_word())).collect::<Result<_, _>>()?;
            let filter = LogFilter {
                from_block: U64::from(from),
                to_block: U64::from(to),
                address: tokens.clone(),
                topics: (TRANSFER_TOPIC, None, recipients),
            };
            let reading = self.read_logs(&filter, (from, to), pass).await?;
            scan.uncertain.extend(reading.uncertain);
            scan.disagreements += reading.disagreements;
            for log in reading.logs.iter().filter(|l| !l.removed) {
                let (Some(transfer), Some(tx), Some(number), Some(hash), Some(_)) =
                    (transfer_of(log)?, log.transaction_hash, log.block_number, log.block_hash, log.log_index)
                else {
                    continue;
                };
                // The block's time decides which checkouts the transfer could pay. A block the
                // node no longer knows was reorganised away: its logs are not final after all.
                let Some(block) = self.with_endpoint(|e| self.block(e, hash)).await? else {
                    return Err(Error::Unavailable);
                };
                scan.logs.push(LoggedTransfer {
                    tx_hash: TxHash::from_trusted(hash_text(&tx)),
                    block: BlockRef { number: u64_of(number), hash: hash_text(&hash) },
                    block_time: block_time(&block)?,
                    transfer,
                });
            }
        }
        scan.logs.sort_by_key(|l| (l.block.number, l.transfer.log_index));
        scan.logs.dedup_by(|a, b| a.tx_hash == b.tx_hash && a.transfer.log_index == b.transfer.log_index);
        self.pair_authorizations(&mut scan.logs).await?;
        scan.uncertain.sort_unstable();
        scan.uncertain.dedup();
        Ok(scan)
    }

    /// Sets on each scanned transfer the authorization that made it: its transaction's receipt
    /// holds the `AuthorizationUsed` log beside it (a log filter by recipient cannot ask for
    /// it). Errors: `Unavailable` when a receipt of a final block cannot be read now (the pass
    /// is retried, never decided without it).
    async fn pair_authorizations(&self, logs: &mut [LoggedTransfer]) -> Result<(), Error> {
        let mut seen: HashMap<String, HashMap<u64, AuthorizationNonce>> = HashMap::new();
        for logged in logs.iter_mut() {
            let tx = logged.tx_hash.as_str().to_owned();
            if !seen.contains_key(&tx) {
                let hash: B256 = tx.parse().map_err(|_| Error::Internal("transaction hash".into()))?;
                let receipt: Option<Receipt> =
                    self.with_endpoint(|e| self.call(e, "eth_getTransactionReceipt", (hash,))).await?;
                let receipt = receipt.ok_or(Error::Unavailable)?;
                seen.insert(tx.clone(), authorizations(&receipt.logs));
            }
            logged.transfer.authorization = seen.get(&tx).and_then(|m| m.get(&logged.transfer.log_index)).copied();
        }
        Ok(())
    }

    /// `endpoint`'s answer to an `eth_call` of `data` on `to` at the latest block; `None` when
    /// the call reverts (the contract has no such function).
    async fn read_contract(&self, endpoint: &Endpoint, to: Address, data: &[u8]) -> Result<Option<Bytes>, Fault> {
        let call = CallRequest { to, data: Bytes::from(data.to_vec()) };
        let request = endpoint.client.request::<_, Bytes>("eth_call", (call, "latest"));
        match tokio::time::timeout(self.settings.request_timeout, request).await {
            Ok(Ok(answer)) if answer.is_empty() => Ok(None),
            Ok(Ok(answer)) => Ok(Some(answer)),
            Ok(Err(e)) if e.as_error_resp().is_some() => Ok(None),
            Ok(Err(e)) => {
                Err(Fault::Transport(format!("eth_call at {}: {}", endpoint.shown, endpoint.without_url(&e))))
            }
            Err(_) => Err(Fault::Transport(format!("eth_call at {}: no answer in time", endpoint.shown))),
        }
    }

    /// The EIP-712 domain token `contract` says it signs under: its EIP-5267 `eip712Domain()`
    /// where it has one; else its `name()` and `version()` when its `DOMAIN_SEPARATOR()` is the
    /// separator of exactly those, this chain and this contract (what EIP-3009 tokens that
    /// predate EIP-5267 expose). `None` when neither says a domain: never assumed.
    pub(crate) async fn token_domain(&self, contract: &WalletAddress) -> Result<Option<TokenDomain>, Error> {
        let to = parse_address(contract)?;
        let chain_id = self.settings.chain_id;
        self.with_endpoint(|e| async move {
            if let Some(data) = self.read_contract(e, to, &EIP712_DOMAIN_SELECTOR).await? {
                return Ok(token_domain_of(&data));
            }
            let (Some(name), Some(version), Some(separator)) = (
                self.read_contract(e, to, &selector("name()")).await?,
                self.read_contract(e, to, &selector("version()")).await?,
                self.read_contract(e, to, &selector("DOMAIN_SEPARATOR()")).await?,
            ) else {
                return Ok(None);
            };
            let (Some(name), Some(version)) = (abi_string(&name), abi_string(&version)) else { return Ok(None) };
            if separator.as_ref() != domain_separator(&name, &version, chain_id, &to).as_slice() {
                return Ok(None);
            }
            Ok(address(&to).ok().map(|verifying_contract| TokenDomain { name, version, chain_id, verifying_contract }))
        })
        .await
    }

    /// The logs `filter` asks for in blocks `from..=to`, from the first endpoint that serves
    /// the chain, is not behind the range and answers; while some block's bloom says it may
    /// hold a watched transfer and no answer so far returned one there, the next endpoint is
    /// asked too (a second pass starts with the second endpoint). What no endpoint settles is
    /// left uncertain.
    async fn read_logs(&self, filter: &LogFilter, (from, to): (u64, u64), pass: ScanPass) -> Result<Reading, Error> {
        let first = if pass == ScanPass::Second && self.list.len() > 1 { 1 } else { 0 };
        let order = self.list.iter().cycle().skip(first).take(self.list.len());
        let mut reading = Reading { logs: Vec::new(), uncertain: (from..=to).collect(), disagreements: 0 };
        let (mut answered, mut faults, mut wrong) = (false, Vec::new(), 0usize);
        for endpoint in order {
            let answer = match self.check_chain(endpoint).await {
                Ok(()) => self.logs_of(endpoint, filter, to).await,
                Err(f) => Err(f),
            };
            let logs = match answer {
                Ok(logs) => logs,
                Err(Fault::WrongChain(_)) => {
                    wrong += 1;
                    continue;
                }
                Err(Fault::Transport(text)) => {
                    tracing::warn!(error = %text, "reading transfer logs failed; trying the next endpoint");
                    faults.push(text);
                    continue;
                }
            };
            if merge(&mut reading, logs) && answered {
                reading.disagreements += 1;
                tracing::warn!(url = %endpoint.shown, from, to, "chain RPC endpoints disagree on the transfer logs of a range");
            }
            answered = true;
            let covered: std::collections::BTreeSet<u64> =
                reading.logs.iter().filter_map(|l| l.block_number.map(u64_of)).collect();
            let open: Vec<u64> = reading.uncertain.iter().copied().filter(|n| !covered.contains(n)).collect();
            reading.uncertain = match self.maybe_holding(endpoint, &open, filter).await {
                Ok(maybe) => maybe,
                Err(_) => open,
            };
            if reading.uncertain.is_empty() {
                break;
            }
        }
        if !answered {
            if wrong == self.list.len() {
                return Err(Error::ChainUnavailable(format!(
                    "the chain RPC endpoints do not serve chain {} (STABLEPAY_CHAIN_ID)",
                    self.settings.chain_id
                )));
            }
            tracing::warn!(faults = ?faults, "no chain RPC endpoint answered for transfer logs");
            return Err(Error::Unavailable);
        }
        if !reading.uncertain.is_empty() {
            tracing::warn!(from, to, blocks = ?reading.uncertain, "transfer logs of some blocks could not be confirmed complete");
        }
        Ok(reading)
    }

    /// `endpoint`'s answer to `filter`, unless its head is behind `to` (it would answer nothing
    /// for the blocks it does not have yet).
    async fn logs_of(&self, endpoint: &Endpoint, filter: &LogFilter, to: u64) -> Result<Vec<Log>, Fault> {
        let head: U64 = self.call(endpoint, "eth_blockNumber", ()).await?;
        if u64_of(head) < to {
            return Err(Fault::Transport(format!(
                "eth_getLogs at {}: its head {} is behind block {to}",
                endpoint.shown,
                u64_of(head)
            )));
        }
        let logs: Vec<Log> = self.call(endpoint, "eth_getLogs", (filter.clone(),)).await?;
        Ok(logs.into_iter().filter(|l| !l.removed).collect())
    }

    /// Of `blocks`, those whose header (as `endpoint` has it) says a watched transfer may be in
    /// them; a block the endpoint does not have counts as one that may.
    async fn maybe_holding(&self, endpoint: &Endpoint, blocks: &[u64], filter: &LogFilter) -> Result<Vec<u64>, Fault> {
        let mut maybe = Vec::new();
        for group in blocks.chunks(HEADERS_AT_ONCE) {
            let headers = futures_util::future::join_all(
                group
                    .iter()
                    .map(|n| self.call::<_, Option<Block>>(endpoint, "eth_getBlockByNumber", (U64::from(*n), false))),
            )
            .await;
            for (n, header) in group.iter().zip(headers) {
                if header?.is_none_or(|b| may_hold(b.logs_bloom.as_ref(), filter)) {
                    maybe.push(*n);
                }
            }
        }
        Ok(maybe)
    }
}

/// Adds `logs` to what `reading` has; answers whether they differ from what it had (some log
/// new, or some log missing).
fn merge(reading: &mut Reading, logs: Vec<Log>) -> bool {
    let had: std::collections::BTreeSet<_> = reading.logs.iter().map(log_key).collect();
    let now: std::collections::BTreeSet<_> = logs.iter().map(log_key).collect();
    let differ = had != now;
    reading.logs.extend(logs.into_iter().filter(|l| !had.contains(&log_key(l))));
    differ
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider's key in an endpoint's path or query never reaches an error text (they are
    /// logged, and shown in readiness).
    #[tokio::test]
    async fn errors_never_show_the_key_in_an_endpoint_url() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let settings = |urls: Vec<String>| RpcSettings {
            urls,
            chain_id: 137,
            confirmations: 1,
            request_timeout: Duration::from_millis(500),
            chain_id_recheck: Duration::from_secs(60),
        };
        let urls =
            vec![format!("http://127.0.0.1:{port}/v2/hunter2"), format!("http://127.0.0.1:{port}?apikey=hunter2")];
        let endpoints = Endpoints::new(settings(urls)).unwrap();
        for endpoint in &endpoints.list {
            let Err(Fault::Transport(text)) = endpoints.call::<_, U64>(endpoint, "eth_chainId", ()).await else {
                panic!("a closed port answered")
            };
            assert!(text.contains(&format!("http://127.0.0.1:{port}/***")), "{text}");
            assert!(!text.contains("hunter2"), "{text}");
        }
        let Err(Error::ChainUnavailable(text)) = Endpoints::new(settings(vec!["no url/hunter2".into()])) else {
            panic!("accepted")
        };
        assert!(!text.contains("hunter2"), "{text}");
    }

    #[test]
    fn the_transfer_topic_is_the_erc20_event_signature() {
        assert_eq!(TRANSFER_TOPIC, alloy_primitives::keccak256("Transfer(address,address,uint256)"));
    }

    #[test]
    fn a_transfer_log_becomes_a_token_transfer() {
        let token: Address = "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359".parse().unwrap();
        let from: Address = "0x1111111111111111111111111111111111111111".parse().unwrap();
        let to: Address = "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed".parse().unwrap();
        let log = Log {
            address: token,
            topics: vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            data: Bytes::from(U256::from(2_500_001u64).to_be_bytes::<32>().to_vec()),
            block_number: None,
            block_hash: None,
            transaction_hash: None,
            log_index: None,
            removed: false,
        };
        let t = transfer_of(&log).unwrap().unwrap();
        assert_eq!(t.amount.to_string(), "2.500001");
        assert_eq!(t.to.as_str(), "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
        assert_eq!(t.token_contract.as_str(), "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");
        // Not a transfer: another event, or an ERC-721 transfer (value in a topic).
        let other = Log { topics: vec![B256::ZERO, from.into_word(), to.into_word()], ..log };
        assert!(transfer_of(&other).unwrap().is_none());
    }

    #[test]
    fn an_authorization_names_only_the_transfer_just_before_it() {
        let token: Address = "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359".parse().unwrap();
        let other_token: Address = "0xc2132d05d31c914a87c6611c10748aeb04b58e8f".parse().unwrap();
        let (payer, batcher, to): (Address, Address, Address) = (
            "0x1111111111111111111111111111111111111111".parse().unwrap(),
            "0x2222222222222222222222222222222222222222".parse().unwrap(),
            "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed".parse().unwrap(),
        );
        let transfer = |index: u64, contract: Address, from: Address| Log {
            address: contract,
            topics: vec![TRANSFER_TOPIC, from.into_word(), to.into_word()],
            data: Bytes::from(U256::from(1_000_000u64).to_be_bytes::<32>().to_vec()),
            block_number: None,
            block_hash: None,
            transaction_hash: None,
            log_index: Some(U64::from(index)),
            removed: false,
        };
        let used = |index: u64, contract: Address, authorizer: Address, nonce: u8| Log {
            address: contract,
            topics: vec![AUTHORIZATION_USED_TOPIC, authorizer.into_word(), B256::repeat_byte(nonce)],
            data: Bytes::new(),
            block_number: None,
            block_hash: None,
            transaction_hash: None,
            log_index: Some(U64::from(index)),
            removed: false,
        };
        let logs = vec![
            // A batch: two pairs, then a plain transfer.
            transfer(0, token, payer),
            used(1, token, payer, 0xa1),
            transfer(2, token, batcher),
            used(3, token, batcher, 0xb2),
            transfer(4, token, payer),
            // An authorization of another contract, or by someone else than the sender: nothing.
            transfer(5, token, payer),
            used(6, other_token, payer, 0xc3),
            transfer(7, token, payer),
            used(8, token, batcher, 0xd4),
            // Not adjacent (a log in between): nothing.
            transfer(9, token, payer),
            used(11, token, payer, 0xe5),
        ];
        let got = transfers_of(&logs).unwrap();
        let nonces: Vec<(u64, Option<u8>)> =
            got.iter().map(|t| (t.log_index, t.authorization.map(|n| n.0[0]))).collect();
        assert_eq!(nonces, vec![(0, Some(0xa1)), (2, Some(0xb2)), (4, None), (5, None), (7, None), (9, None)]);
    }

    #[test]
    fn the_tokens_domain_is_read_as_it_says_it() {
        let contract: Address = "0x3c499c542cef5e3811e1192ce70d8cc03d5c3359".parse().unwrap();
        let word = |v: U256| v.to_be_bytes::<32>().to_vec();
        let string = |text: &str| {
            let mut out = word(U256::from(text.len()));
            let mut padded = text.as_bytes().to_vec();
            padded.resize(text.len().div_ceil(32) * 32, 0);
            out.extend(padded);
            out
        };
        let encode = |fields: u8, extensions: usize| {
            let mut head = Vec::new();
            let mut first = vec![fields];
            first.resize(32, 0);
            head.extend(first);
            let (name, version) = (string("USD Coin"), string("2"));
            let tail_start = 7 * 32;
            head.extend(word(U256::from(tail_start)));
            head.extend(word(U256::from(tail_start + name.len())));
            head.extend(word(U256::from(137u64)));
            head.extend(contract.into_word().to_vec());
            head.extend(vec![0u8; 32]);
            head.extend(word(U256::from(tail_start + name.len() + version.len())));
            head.extend(name);
            head.extend(version);
            head.extend(word(U256::from(extensions)));
            head.extend(vec![0u8; 32 * extensions]);
            head
        };
        let d = token_domain_of(&encode(0x0f, 0)).unwrap();
        assert_eq!((d.name.as_str(), d.version.as_str(), d.chain_id), ("USD Coin", "2", 137));
        assert_eq!(d.verifying_contract.as_str(), "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");
        assert_eq!(token_domain_of(&encode(0x1f, 0)), None, "a salt is a domain the service does not sign for");
        assert_eq!(token_domain_of(&encode(0x0f, 1)), None, "extensions");
        assert_eq!(token_domain_of(&[0u8; 12]), None);
        // The separator of the domain matches what Solidity computes for the same values.
        assert_eq!(
            selector(
                "transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)"
            ),
            [0xe3, 0xee, 0x16, 0x0e]
        );
        assert_eq!(selector("eip712Domain()"), EIP712_DOMAIN_SELECTOR);
        assert_eq!(AUTHORIZATION_USED_TOPIC, alloy_primitives::keccak256("AuthorizationUsed(address,bytes32)"));
    }
}
