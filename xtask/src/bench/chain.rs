// Benchmark statistics (rates, percentiles) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench chain [--payments N] [--samples N] [--merchants N]`: live verification of the release
//! binary against a real local chain (anvil from `tools/chain`, chain id 137, the test token of
//! `crates/app/tests/fixtures`), with the service's default chain settings (a 500 ms poll).
//!
//! 1. Throughput: N live checkouts (shared out among the merchants, each with its own
//!    wallet), N transfers paying them (all in one block), every
//!    hash reported through `POST /v1/public/checkout-sessions/{id}/payments`; once all are
//!    `validating`, the blocks are made final at once (65 blocks mined) and the time until the
//!    last payment is credited gives the verifications per second.
//! 2. Latency, one payment at a time, S samples each: (a) the hash reported, (b) the transfer
//!    only (found by following the chain). The clock starts when the transfer's block is final
//!    (the mining call returned) and stops at the `invoice.paid` event's `created_at`.
//!
//! Prints the Markdown rows of docs/benchmarks.md.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bench::client::{connect, exchange};
use crate::util;

/// Blocks that make everything mined so far final on anvil (`finalized` is 64 below the head).
const FINALIZE: &str = "0x41";
/// The customer's token balance (6-decimal units).
const MINTED: u128 = 1_000_000_000_000_000;

struct Options {
    payments: usize,
    samples: usize,
    merchants: usize,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut o = Options { payments: 2000, samples: 50, merchants: 1 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--payments" => o.payments = value.parse().map_err(|_| "--payments takes a number")?,
            "--samples" => o.samples = value.parse().map_err(|_| "--samples takes a number")?,
            "--merchants" => o.merchants = value.parse().map_err(|_| "--merchants takes a number")?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// A keep-alive HTTP/1.1 connection sending JSON.
pub(super) struct Http {
    conn: BufReader<TcpStream>,
    addr: String,
}

impl Http {
    pub(super) fn new(addr: &str) -> Result<Self, String> {
        Ok(Self { conn: connect(addr)?, addr: addr.to_owned() })
    }

    fn post(&mut self, path: &str, auth: Option<&str>, body: &str) -> Result<(u16, String), String> {
        let auth = auth.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            self.addr,
            body.len()
        );
        // A connection idle past the server's keep-alive is closed: connect again once.
        let (status, body) = match exchange(&mut self.conn, request.as_bytes()) {
            Ok(answer) => answer,
            Err(_) => {
                self.conn = connect(&self.addr)?;
                exchange(&mut self.conn, request.as_bytes())?
            }
        };
        Ok((status, String::from_utf8_lossy(&body).into_owned()))
    }
}

/// JSON-RPC to anvil.
pub(super) struct Rpc(pub(super) Http);

impl Rpc {
    pub(super) fn call(&mut self, method: &str, params: &str) -> Result<String, String> {
        let body = format!(r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{params}}}"#);
        let (status, answer) = self.0.post("/", None, &body)?;
        if status != 200 || answer.contains(r#""error""#) {
            return Err(format!("{method}: {status} {answer}"));
        }
        Ok(answer)
    }

    /// A call answering a string.
    fn text(&mut self, method: &str, params: &str) -> Result<String, String> {
        let answer = self.call(method, params)?;
        util::json_field(&answer, "result").ok_or_else(|| format!("{method}: {answer}"))
    }

    fn send(&mut self, from: &str, to: Option<&str>, data: &str) -> Result<String, String> {
        let to = to.map(|t| format!(r#","to":"{t}""#)).unwrap_or_default();
        self.text("eth_sendTransaction", &format!(r#"[{{"from":"{from}"{to},"data":"{data}","gas":"0x2dc6c0"}}]"#))
    }

    /// The receipt of a mined transaction (waiting briefly for it to be readable).
    fn receipt(&mut self, tx: &str) -> Result<String, String> {
        for _ in 0..100 {
            let answer = self.call("eth_getTransactionReceipt", &format!(r#"["{tx}"]"#))?;
            if !answer.contains(r#""result":null"#) {
                return Ok(answer);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("no receipt for {tx}"))
    }

    fn transfer(&mut self, token: &str, from: &str, to: &str, units: u128) -> Result<String, String> {
        self.send(from, Some(token), &format!("0xa9059cbb{}{units:064x}", word(to)))
    }

    /// Mines the blocks that make everything so far final; answers when that was.
    fn finalize(&mut self) -> Result<f64, String> {
        self.call("anvil_mine", &format!(r#"["{FINALIZE}"]"#))?;
        Ok(unix_now())
    }
}

fn word(address: &str) -> String {
    format!("{:0>64}", address.trim_start_matches("0x").to_ascii_lowercase())
}

fn unix_now() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64()).unwrap_or_default()
}

pub(super) fn start_anvil() -> Result<(util::Guard, String), String> {
    util::chain_tools()?;
    let mut child = Command::new(util::anvil())
        // A block gas limit that holds every transfer of the throughput phase in one block.
        .args(["--port", "0", "--chain-id", "137", "--host", "127.0.0.1", "--gas-limit", "10000000000"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("start anvil: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let guard = util::Guard(child);
    let mut lines = BufReader::new(stdout).lines();
    let addr = loop {
        let line = lines.next().ok_or("anvil exited")?.map_err(|e| e.to_string())?;
        if let Some(addr) = line.trim().strip_prefix("Listening on ") {
            break addr.to_owned();
        }
    };
    // anvil logs every transaction: keep reading so it never blocks on a full pipe.
    std::thread::spawn(move || for _ in lines {});
    Ok((guard, addr))
}

fn psql(db_url: &str, sql: &str) -> Result<String, String> {
    util::output(Command::new("psql").args([db_url, "-qAt", "-c", sql])).map(|s| s.trim().to_owned())
}

/// Waits (at most `limit`) until `sql` answers `want`.
fn wait_for(db_url: &str, sql: &str, want: &str, limit: Duration) -> Result<(), String> {
    let start = Instant::now();
    loop {
        let got = psql(db_url, sql)?;
        if got == want {
            return Ok(());
        }
        if start.elapsed() > limit {
            return Err(format!("{sql} answered {got}, not {want}, after {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Everything a run needs: the chain, the service, the accounts.
struct World {
    rpc: Rpc,
    api: Http,
    db_url: String,
    /// Each merchant's live secret key and settlement wallet.
    merchants: Vec<(String, String)>,
    token: String,
    customer: String,
}

impl World {
    /// Creates a live checkout of `amount` for merchant `m`; answers (checkout id, invoice id,
    /// the units it asks: its amount with the unique-amount offset merchants have by default).
    fn checkout(&mut self, m: usize, amount: &str) -> Result<(String, String, u128), String> {
        let body = format!(r#"{{"amount":"{amount}"}}"#);
        let key = self.merchants[m].0.clone();
        let (status, answer) = self.api.post("/v1/checkout-sessions", Some(&key), &body)?;
        if status != 201 {
            return Err(format!("checkout: {status} {answer}"));
        }
        let id = util::json_field(&answer, "id").ok_or("no checkout id")?;
        let due = util::json_field(&answer, "amountDue").ok_or("no amount due")?;
        let units = due.replace('.', "").parse::<u128>().map_err(|e| format!("{due}: {e}"))?;
        Ok((id, util::json_field(&answer, "invoiceId").ok_or("no invoice id")?, units))
    }

    /// The customer pays `units` to merchant `m`'s wallet.
    fn pay(&mut self, m: usize, units: u128) -> Result<String, String> {
        let (token, customer, wallet) = (self.token.clone(), self.customer.clone(), self.merchants[m].1.clone());
        self.rpc.transfer(&token, &customer, &wallet, units)
    }

    fn report(&mut self, checkout: &str, tx: &str) -> Result<(), String> {
        let path = format!("/v1/public/checkout-sessions/{checkout}/payments");
        let (status, answer) = self.api.post(&path, None, &format!(r#"{{"transactionHash":"{tx}"}}"#))?;
        if status == 202 { Ok(()) } else { Err(format!("report: {status} {answer}")) }
    }

    /// Seconds from `final_at` to the `invoice.paid` event of `invoice`.
    fn paid_after(&self, invoice: &str, final_at: f64) -> Result<f64, String> {
        let sql = format!("SELECT count(*) FROM events WHERE type = 'invoice.paid' AND data->>'id' = '{invoice}'");
        wait_for(&self.db_url, &sql, "1", Duration::from_secs(60))?;
        let at = psql(
            &self.db_url,
            &format!(
                "SELECT extract(epoch FROM created_at) FROM events WHERE type = 'invoice.paid' AND data->>'id' = '{invoice}'"
            ),
        )?;
        Ok(at.parse::<f64>().map_err(|e| format!("{at}: {e}"))? - final_at)
    }
}

/// The token contract on anvil, minted to the customer; answers (token, deployer, accounts).
pub(super) fn deploy_token(rpc: &mut Rpc) -> Result<(String, Vec<String>), String> {
    let accounts = rpc.call("eth_accounts", "[]")?;
    let accounts: Vec<String> =
        accounts.split('"').filter(|s| s.starts_with("0x") && s.len() == 42).map(str::to_owned).collect();
    let (deployer, customer) = (accounts[0].clone(), accounts[2].clone());
    let bytecode = std::fs::read_to_string(util::root().join("crates/app/tests/fixtures/TestToken.bin"))
        .map_err(|e| e.to_string())?;
    let deployed = rpc.send(&deployer, None, &format!("0x{}", bytecode.trim()))?;
    let token = util::json_field(&rpc.receipt(&deployed)?, "contractAddress").ok_or("no token address")?;
    rpc.send(&deployer, Some(&token), &format!("0x40c10f19{}{MINTED:064x}", word(&customer)))?;
    Ok((token, accounts))
}

/// `count` merchants activated for live mode, each with a secret live key: (key, wallet).
pub(super) fn merchants(
    binary: &std::path::Path,
    db_url: &str,
    count: usize,
    first_wallet: &str,
) -> Result<Vec<(String, String)>, String> {
    let cli = |args: &[&str]| util::output(Command::new(binary).args(args).env("DATABASE_URL", db_url));
    let mut merchants = Vec::with_capacity(count);
    for m in 0..count.max(1) {
        // The first merchant is paid into one of anvil's accounts, the others into addresses of
        // their own (any address can receive tokens).
        let wallet = if m == 0 { first_wallet.to_owned() } else { format!("0x{:040x}", 0xbe7c_0000 + m) };
        let merchant = util::json_field(&cli(&["merchant", "create", "--name", "Bench shop", "--json"])?, "id")
            .ok_or("no merchant id")?;
        cli(&["merchant", "activate", &merchant, "--settlement-wallet", &wallet, "--token", "USDC", "--json"])?;
        let key = cli(&["key", "create", "--merchant", &merchant, "--mode", "live", "--type", "secret", "--json"])?;
        merchants.push((util::json_field(&key, "key").ok_or("no key")?, wallet));
    }
    Ok(merchants)
}

pub fn run(args: &[String]) -> Result<(), String> {
    let o = options(args)?;
    let binary = util::release_binary()?;
    let (_anvil, anvil_addr) = start_anvil()?;
    let mut rpc = Rpc(Http::new(&anvil_addr)?);
    let (token, accounts) = deploy_token(&mut rpc)?;
    let db = format!("stablepay_bench_chain_{}", std::process::id());
    let db_url = util::migrated_database(&binary, &db)?;
    let result = (|| -> Result<(), String> {
        let merchants = merchants(&binary, &db_url, o.merchants, &accounts[1])?;
        let rpc_url = format!("http://{anvil_addr}");
        let env = [("STABLEPAY_CHAIN_RPC_URLS", rpc_url.as_str()), ("STABLEPAY_USDC_CONTRACT", token.as_str())];
        let (_server, base) = util::serve(&binary, &db_url, &env)?;
        let api = Http::new(base.trim_start_matches("http://"))?;
        let customer = accounts[2].clone();
        let mut w = World { rpc, api, db_url: db_url.clone(), merchants, token, customer };
        let throughput = w.throughput(o.payments)?;
        let latencies = w.latencies(o.samples)?;
        let unattributed = psql(&db_url, "SELECT count(*) FROM unattributed_transfers")?;
        print(o.payments, w.merchants.len(), &throughput, latencies, &unattributed);
        Ok(())
    })();
    util::drop_database(&db);
    result
}

/// The throughput step: transfers sent, and how long crediting took after finality.
struct Throughput {
    send_secs: f64,
    batch_secs: f64,
}

impl World {
    /// `n` validating payments (checkouts of every merchant, transfers in one block, hashes
    /// reported) made final at once: how long until all are credited.
    fn throughput(&mut self, n: usize) -> Result<Throughput, String> {
        let merchant_count = self.merchants.len();
        eprintln!("throughput: {n} checkouts, transfers and reports...");
        let mut pending = Vec::with_capacity(n);
        for i in 0..n {
            // Distinct amounts: each transfer matches exactly one checkout.
            let units = 1_000_000 + u128::try_from(i).unwrap_or(0) + 1;
            let m = i % merchant_count;
            let (checkout, _, due) = self.checkout(m, &format!("1.{:06}", units - 1_000_000))?;
            pending.push((checkout, m, due));
        }
        // All transfers in one block, so none is final before the others.
        self.rpc.call("evm_setAutomine", "[false]")?;
        let sent = Instant::now();
        let mut hashes = Vec::with_capacity(n);
        for (_, m, units) in &pending {
            hashes.push(self.pay(*m, *units)?);
        }
        self.rpc.call("evm_mine", "[]")?;
        let send_secs = sent.elapsed().as_secs_f64();
        self.rpc.call("evm_setAutomine", "[true]")?;
        for ((checkout, _, _), tx) in pending.iter().zip(&hashes) {
            self.report(checkout, tx)?;
        }
        let db_url = self.db_url.clone();
        let validating = "SELECT count(*) FROM payments WHERE status = 'validating'";
        wait_for(&db_url, validating, &n.to_string(), Duration::from_secs(300))?;
        let final_at = self.rpc.finalize()?;
        let confirmed = "SELECT count(*) FROM payments WHERE status = 'confirmed'";
        wait_for(&db_url, confirmed, &n.to_string(), Duration::from_secs(600))?;
        let last = psql(&db_url, "SELECT extract(epoch FROM max(confirmed_at)) FROM payments")?;
        let batch_secs = last.parse::<f64>().map_err(|e| format!("{last}: {e}"))? - final_at;
        let batch_paid = psql(&db_url, "SELECT count(*) FROM events WHERE type = 'invoice.paid'")?;
        if batch_paid != n.to_string() {
            return Err(format!("{batch_paid} invoice.paid events for {n} payments"));
        }
        Ok(Throughput { send_secs, batch_secs })
    }

    /// One payment at a time, `samples` with the hash reported and as many found by following
    /// the chain: seconds from finality to `invoice.paid`, (reported, followed).
    fn latencies(&mut self, samples: usize) -> Result<(Vec<f64>, Vec<f64>), String> {
        let (mut reported, mut followed) = (Vec::with_capacity(samples), Vec::with_capacity(samples));
        eprintln!("latency: {samples} samples with the hash reported, {samples} without...");
        for (k, by_report) in (0..samples).map(|k| (k, true)).chain((0..samples).map(|k| (k, false))) {
            let units = 5_000_000 + u128::try_from(k).unwrap_or(0) + if by_report { 1 } else { 500_000 };
            let (checkout, invoice, due) = self.checkout(0, &format!("5.{:06}", units - 5_000_000))?;
            let tx = self.pay(0, due)?;
            if by_report {
                self.report(&checkout, &tx)?;
                let sql =
                    format!("SELECT count(*) FROM payments WHERE transaction_hash = '{tx}' AND status = 'validating'");
                wait_for(&self.db_url, &sql, "1", Duration::from_secs(60))?;
            }
            let final_at = self.rpc.finalize()?;
            let seconds = self.paid_after(&invoice, final_at)?;
            if by_report { reported.push(seconds) } else { followed.push(seconds) }
        }
        Ok((reported, followed))
    }
}

fn print(n: usize, merchant_count: usize, t: &Throughput, latencies: (Vec<f64>, Vec<f64>), unattributed: &str) {
    let (mut reported, mut followed) = latencies;
    println!();
    println!(
        "anvil (chain 137), default chain settings (poll 500 ms), {n} transfers sent in {:.1} s; \
unattributed transfers: {unattributed}",
        t.send_secs
    );
    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| verification throughput ({n} validating payments of {merchant_count} merchant(s) made final at once) | {:.0} payments/s (all credited {:.2} s after finality) |",
        n as f64 / t.batch_secs,
        t.batch_secs
    );
    for (name, list) in [("hash reported", &mut reported), ("found by following the chain", &mut followed)] {
        list.sort_by(f64::total_cmp);
        println!(
            "| finality -> invoice.paid, {name} ({} samples) | p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms |",
            list.len(),
            1000.0 * percentile(list, 0.50),
            1000.0 * percentile(list, 0.99),
            1000.0 * list.last().copied().unwrap_or_default()
        );
    }
}
