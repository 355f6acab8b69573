//! A real local EVM chain for the live-mode tests: anvil from the npm package
//! `@foundry-rs/anvil` (installed in `tools/chain` by `npm ci`; `cargo xtask ci` does it), the
//! 6-decimal test token of `tests/fixtures`, transfers from anvil's unlocked accounts, blocks
//! mined on demand (anvil answers `finalized` 64 blocks below the head), snapshots and reverts.

use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// Blocks between a block and the finalized one on anvil.
pub const FINALITY_DEPTH: u64 = 64;

/// The creation bytecode of the test token (`tests/fixtures/TestToken.sol`).
const TOKEN_BYTECODE: &str = include_str!("../fixtures/TestToken.bin");
/// The creation bytecode of the test USDC with EIP-3009 and EIP-5267 (`tests/fixtures/TestUsdc.sol`).
const USDC_BYTECODE: &str = include_str!("../fixtures/TestUsdc.bin");

fn anvil_binary() -> std::path::PathBuf {
    if let Ok(path) = std::env::var("STABLEPAY_ANVIL") {
        return path.into();
    }
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tools/chain/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
    assert!(
        path.exists(),
        "anvil is not installed at {}: run `npm ci` in tools/chain (cargo xtask ci does it)",
        path.display()
    );
    path
}

pub struct Anvil {
    pub url: String,
    pub port: u16,
    http: reqwest::Client,
    /// The development accounts' addresses and private keys, as anvil printed them.
    accounts: Vec<(String, String)>,
    /// The test chose the next block's time (`set_next_block_time`): the next transaction is
    /// mined then, not moved to the present.
    pinned: AtomicBool,
    /// Blocks are mined only when the test asks (`automine(false)`): a time set at sending
    /// would be stale by then, so none is.
    manual: AtomicBool,
    _child: Child,
}

/// A 32-byte ABI word of an address.
fn word_of_address(address: &str) -> String {
    format!("{:0>64}", address.trim_start_matches("0x").to_ascii_lowercase())
}

fn word_of_units(units: u128) -> String {
    format!("{units:064x}")
}

/// A 32-byte ABI word of a number of up to 256 bits, given in hexadecimal.
pub fn word_of_hex(hex: &str) -> String {
    format!("{hex:0>64}")
}

impl Anvil {
    pub async fn start(chain_id: u64) -> Self {
        let mut child = Command::new(anvil_binary())
            .args(["--port", "0", "--chain-id", &chain_id.to_string(), "--host", "127.0.0.1"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start anvil");
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let (mut addresses, mut keys) = (Vec::new(), Vec::new());
        let port = tokio::time::timeout(Duration::from_secs(30), async {
            while let Some(line) = lines.next_line().await.unwrap() {
                let line = line.trim();
                if let Some(address) = line.strip_prefix("Listening on ") {
                    return address.rsplit(':').next().unwrap().parse::<u16>().unwrap();
                }
                // "(3) 0x90F7... (10000.000000000000000000 ETH)" under the accounts, "(3) 0x7c85..."
                // under the private keys.
                if let Some((_, rest)) = line.split_once(") 0x") {
                    let hex = rest.split_whitespace().next().unwrap_or_default();
                    match hex.len() {
                        40 => addresses.push(format!("0x{hex}")),
                        64 => keys.push(format!("0x{hex}")),
                        _ => {}
                    }
                }
            }
            panic!("anvil exited before listening");
        })
        .await
        .expect("anvil did not start in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let http = crate::support::http_client();
        let accounts = addresses.into_iter().zip(keys).collect();
        Self {
            url: format!("http://127.0.0.1:{port}"),
            port,
            http,
            accounts,
            pinned: AtomicBool::new(false),
            manual: AtomicBool::new(false),
            _child: child,
        }
    }

    /// Development account `i`'s address.
    pub fn address(&self, i: usize) -> &str {
        &self.accounts[i].0
    }

    /// Development account `i`'s private key (hex).
    pub fn private_key(&self, i: usize) -> &str {
        &self.accounts[i].1
    }

    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer: Value = self.http.post(&self.url).json(&body).send().await.unwrap().json().await.unwrap();
        assert!(answer.get("error").is_none(), "{method}: {answer}");
        answer["result"].clone()
    }

    /// The error message of a call the node refuses (a revert's reason included).
    pub async fn rpc_error(&self, method: &str, params: Value) -> String {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let answer: Value = self.http.post(&self.url).json(&body).send().await.unwrap().json().await.unwrap();
        assert!(answer.get("error").is_some(), "{method} was not refused: {answer}");
        answer["error"].to_string()
    }

    /// anvil's unlocked development accounts.
    pub async fn accounts(&self) -> Vec<String> {
        let list = self.rpc("eth_accounts", json!([])).await;
        list.as_array().unwrap().iter().map(|a| a.as_str().unwrap().to_owned()).collect()
    }

    /// Sends a transaction from an unlocked account; answers its hash (anvil mines it at once,
    /// in a block no earlier than the present unless the test chose the block's time or mines
    /// by hand: a loaded machine's anvil may stamp a block with a time it took before the
    /// service created this moment's checkouts, while a real chain's block follows the
    /// transfers it holds). An explicit gas limit lets a reverting call be mined (with status 0)
    /// instead of refused.
    pub async fn send(&self, from: &str, to: Option<&str>, data: &str, gas: Option<u64>) -> String {
        if !self.pinned.swap(false, Ordering::SeqCst) && !self.manual.load(Ordering::SeqCst) {
            // Only a chain behind the present is moved; one ahead (blocks mined in a burst) keeps
            // anvil's own next time.
            let now = chrono::Utc::now().timestamp();
            if now > self.latest_block_time().await {
                self.rpc("evm_setNextBlockTimestamp", json!([now])).await;
            }
        }
        let mut tx = json!({ "from": from, "data": data });
        if let Some(to) = to {
            tx["to"] = json!(to);
        }
        if let Some(gas) = gas {
            tx["gas"] = json!(format!("0x{gas:x}"));
        }
        self.rpc("eth_sendTransaction", json!([tx])).await.as_str().unwrap().to_owned()
    }

    /// The receipt of a mined transaction (anvil may answer the hash a moment before the
    /// receipt is readable).
    pub async fn receipt(&self, tx: &str) -> Value {
        for _ in 0..100 {
            let receipt = self.rpc("eth_getTransactionReceipt", json!([tx])).await;
            if !receipt.is_null() {
                return receipt;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("no receipt for {tx}");
    }

    /// Deploys a new test token; answers its address.
    pub async fn deploy_token(&self, from: &str) -> String {
        let code = format!("0x{}", TOKEN_BYTECODE.trim());
        let tx = self.send(from, None, &code, Some(3_000_000)).await;
        self.receipt(&tx).await["contractAddress"].as_str().unwrap().to_owned()
    }

    /// Deploys a new test USDC (EIP-3009, EIP-5267); answers its address.
    pub async fn deploy_usdc(&self, from: &str) -> String {
        let code = format!("0x{}", USDC_BYTECODE.trim());
        let tx = self.send(from, None, &code, Some(5_000_000)).await;
        self.receipt(&tx).await["contractAddress"].as_str().unwrap().to_owned()
    }

    /// `signer`'s EIP-712 signature of `typed_data` (anvil signs for its unlocked accounts, as a
    /// browser wallet's `eth_signTypedData_v4` does): `0x` and 65 bytes (r, s, v).
    pub async fn sign_typed_data(&self, signer: &str, typed_data: &Value) -> String {
        self.rpc("eth_signTypedData_v4", json!([signer, typed_data])).await.as_str().unwrap().to_owned()
    }

    /// The calldata of `transferWithAuthorization` for an attempt's `authorization` (as the API
    /// answers it) signed with `signature`.
    pub fn authorized_call(authorization: &Value, signature: &str) -> String {
        let m = &authorization["typedData"]["message"];
        let sig = signature.trim_start_matches("0x");
        let (r, s, v) = (&sig[0..64], &sig[64..128], u8::from_str_radix(&sig[128..130], 16).unwrap());
        let v = if v < 27 { v + 27 } else { v };
        let dec = |text: &Value| format!("{:064x}", text.as_str().unwrap().parse::<u128>().unwrap());
        format!(
            "{}{}{}{}{}{}{}{}{}{}",
            authorization["call"]["selector"].as_str().unwrap(),
            word_of_address(m["from"].as_str().unwrap()),
            word_of_address(m["to"].as_str().unwrap()),
            dec(&m["value"]),
            dec(&m["validAfter"]),
            dec(&m["validBefore"]),
            m["nonce"].as_str().unwrap().trim_start_matches("0x"),
            word_of_units(u128::from(v)),
            r,
            s
        )
    }

    pub async fn mint(&self, token: &str, from: &str, to: &str, units: u128) -> String {
        self.mint_word(token, from, to, &word_of_units(units)).await
    }

    /// Mints an amount given as an ABI word (beyond what `u128` holds).
    pub async fn mint_word(&self, token: &str, from: &str, to: &str, units: &str) -> String {
        let data = format!("0x40c10f19{}{units}", word_of_address(to));
        self.send(from, Some(token), &data, None).await
    }

    /// A `transfer` of an amount given as an ABI word.
    pub async fn transfer_word(&self, token: &str, from: &str, to: &str, units: &str) -> String {
        let data = format!("0xa9059cbb{}{units}", word_of_address(to));
        self.send(from, Some(token), &data, None).await
    }

    /// An ERC-20 `transfer` of `units` (6-decimal units) from `from` to `to`.
    pub async fn transfer(&self, token: &str, from: &str, to: &str, units: u128) -> String {
        self.transfer_with_gas(token, from, to, units, None).await
    }

    pub async fn transfer_with_gas(&self, token: &str, from: &str, to: &str, units: u128, gas: Option<u64>) -> String {
        let data = format!("0xa9059cbb{}{}", word_of_address(to), word_of_units(units));
        self.send(from, Some(token), &data, gas).await
    }

    /// The 4-byte selector of a Solidity function signature (keccak-256, asked of the node).
    pub async fn selector(&self, signature: &str) -> String {
        let hex: String = signature.bytes().map(|b| format!("{b:02x}")).collect();
        let hash = self.rpc("web3_sha3", json!([format!("0x{hex}")])).await;
        hash.as_str().unwrap()[2..10].to_owned()
    }

    /// One transaction of `from` moving `units` to each recipient in turn (one `Transfer` log
    /// each, in this order), through the token's `transferMany`.
    pub async fn transfer_many(&self, token: &str, from: &str, to: &[(&str, u128)]) -> String {
        let n = u128::try_from(to.len()).unwrap();
        let mut data = format!("0x{}", self.selector("transferMany(address[],uint256[])").await);
        data.push_str(&word_of_units(64));
        data.push_str(&word_of_units(64 + 32 * (1 + n)));
        data.push_str(&word_of_units(n));
        for (address, _) in to {
            data.push_str(&word_of_address(address));
        }
        data.push_str(&word_of_units(n));
        for (_, units) in to {
            data.push_str(&word_of_units(*units));
        }
        self.send(from, Some(token), &data, Some(500_000)).await
    }

    /// `owner` lets `spender` move up to `units` of its tokens.
    pub async fn approve(&self, token: &str, owner: &str, spender: &str, units: u128) -> String {
        let data = format!("0x095ea7b3{}{}", word_of_address(spender), word_of_units(units));
        self.send(owner, Some(token), &data, None).await
    }

    /// `spender` moves `units` of `owner`'s tokens to `to` (a `transferFrom`).
    pub async fn transfer_from(&self, token: &str, spender: &str, owner: &str, to: &str, units: u128) -> String {
        let data = format!("0x23b872dd{}{}{}", word_of_address(owner), word_of_address(to), word_of_units(units));
        self.send(spender, Some(token), &data, None).await
    }

    /// Whether anvil mines each transaction at once (off: they wait in the pool).
    pub async fn automine(&self, on: bool) {
        self.rpc("evm_setAutomine", json!([on])).await;
        self.manual.store(!on, Ordering::SeqCst);
    }

    /// The signed bytes of a transaction the node knows (to send it again after a reorg).
    pub async fn raw_transaction(&self, tx: &str) -> String {
        self.rpc("eth_getRawTransactionByHash", json!([tx])).await.as_str().unwrap().to_owned()
    }

    pub async fn send_raw(&self, raw: &str) -> String {
        self.rpc("eth_sendRawTransaction", json!([raw])).await.as_str().unwrap().to_owned()
    }

    /// The time of the block a mined transaction is in (Unix seconds).
    pub async fn block_time_of(&self, tx: &str) -> i64 {
        let receipt = self.receipt(tx).await;
        let block = self.rpc("eth_getBlockByHash", json!([receipt["blockHash"], false])).await;
        i64::from_str_radix(block["timestamp"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// The time of the latest block (Unix seconds).
    pub async fn latest_block_time(&self) -> i64 {
        let block = self.rpc("eth_getBlockByNumber", json!(["latest", false])).await;
        i64::from_str_radix(block["timestamp"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
    }

    /// The next block is mined no earlier than the present: anvil may stamp a block with a time
    /// it took before the service created the checkouts of this moment (a loaded machine), while
    /// a real chain's block follows the transfers it holds.
    pub async fn next_block_not_before_now(&self) {
        let next = chrono::Utc::now().timestamp().max(self.latest_block_time().await + 1);
        self.set_next_block_time(next).await;
    }

    pub async fn mine(&self, blocks: u64) {
        // A chosen time goes to the first block mined here.
        self.pinned.store(false, Ordering::SeqCst);
        self.rpc("anvil_mine", json!([format!("0x{blocks:x}")])).await;
    }

    /// Mines enough blocks for everything mined so far to be final.
    pub async fn finalize(&self) {
        self.mine(FINALITY_DEPTH + 1).await;
    }

    pub async fn snapshot(&self) -> Value {
        self.rpc("evm_snapshot", json!([])).await
    }

    pub async fn revert(&self, snapshot: Value) {
        assert_eq!(self.rpc("evm_revert", json!([snapshot])).await, json!(true));
    }

    /// The timestamp of the next block.
    pub async fn set_next_block_time(&self, unix_seconds: i64) {
        self.rpc("evm_setNextBlockTimestamp", json!([unix_seconds])).await;
        self.pinned.store(true, Ordering::SeqCst);
    }
}
