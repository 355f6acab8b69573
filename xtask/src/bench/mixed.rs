// Benchmark statistics (rates, percentiles) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench mixed [--seconds N]`: everything at once, three times.
//!
//! Each run starts a fresh `stablepay serve` (API and worker in one process, pool 32) on a
//! fresh database with two webhook endpoints on a receiver in this process, and drives for
//! `--seconds` at the same time: 8 clients creating checkouts, 8 clients reading invoices, and
//! 4 clients paying checkouts (creation, then the test helper's payment: each emits
//! `invoice.paid`, delivered to both endpoints by the worker). It prints, per operation,
//! throughput and p50/p99, the deliveries received, and the server's CPU (user + system, in
//! cores) and memory over the run.
//!
//! The three runs differ only in what is outside the service:
//! - `normal`: the receiver answers 200 at once; no chain configured;
//! - `slow receiver`: every webhook request hangs until the service's attempt times out (10 s);
//! - `stalled chain`: the chain RPC URL is a node that accepts connections and never answers
//!   (every call of the worker's chain follower waits for its 5 s timeout).
//!
//! The API's p99 in the last two is the figure the slow-receiver and stalled-chain fault asks
//! for: the worker's waits must not reach requests.

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bench::client::{connect, cpu_seconds, exchange, peak_rss_mib, percentile_ms};
use crate::bench::receiver::read_request;
use crate::util;

#[derive(Clone, Copy, PartialEq)]
enum Outside {
    Normal,
    SlowReceiver,
    StalledChain,
}

impl Outside {
    fn name(self) -> &'static str {
        match self {
            Self::Normal => "normal",
            Self::SlowReceiver => "slow receiver",
            Self::StalledChain => "stalled chain",
        }
    }
}

/// A webhook receiver on loopback: answers at once, or holds every request for a minute.
fn receiver(hang: bool, received: Arc<AtomicUsize>) -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let received = received.clone();
            std::thread::spawn(move || serve(stream, hang, &received));
        }
    });
    Ok(port)
}

fn serve(stream: TcpStream, hang: bool, received: &AtomicUsize) {
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    while read_request(&mut reader).is_some() {
        if hang {
            std::thread::sleep(Duration::from_secs(60));
            return;
        }
        received.fetch_add(1, Ordering::Relaxed);
        if writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

/// A chain node that accepts connections and never answers.
fn stalled_node() -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    Ok(port)
}

/// Latencies (µs) and errors of one kind of client.
#[derive(Default)]
struct Tally {
    latencies_us: Vec<u64>,
    errors: usize,
}

impl Tally {
    fn percentile(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies_us, p)
    }
}

struct Outcome {
    outside: Outside,
    seconds: f64,
    create: Tally,
    read: Tally,
    pay: Tally,
    delivered: usize,
    cpu_cores: f64,
    rss: (f64, f64),
}

fn request(method: &str, path: &str, addr: &str, key: &str, body: Option<&str>) -> Vec<u8> {
    match body {
        Some(b) => format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{b}",
            b.len()
        ),
        None => format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n"),
    }
    .into_bytes()
}

/// One client's request of `kind` (0: create a checkout, 1: read an invoice, 2: create a
/// checkout and pay it); whether it succeeded.
fn step(kind: usize, conn: &mut BufReader<TcpStream>, addr: &str, key: &str, read_id: &str) -> bool {
    match kind {
        0 => {
            let create = request("POST", "/v1/checkout-sessions", addr, key, Some(r#"{"amount":"10.50"}"#));
            matches!(exchange(conn, &create), Ok((201, _)))
        }
        1 => {
            matches!(exchange(conn, &request("GET", &format!("/v1/invoices/{read_id}"), addr, key, None)), Ok((200, _)))
        }
        _ => {
            let create = request("POST", "/v1/checkout-sessions", addr, key, Some(r#"{"amount":"5.00"}"#));
            let Ok((201, body)) = exchange(conn, &create) else { return false };
            let Some(cs) = util::json_field(&String::from_utf8_lossy(&body), "id") else { return false };
            let path = format!("/v1/test-helpers/checkout-sessions/{cs}/payments");
            matches!(exchange(conn, &request("POST", &path, addr, key, Some("{}"))), Ok((201, _)))
        }
    }
}

/// The server under load.
struct Target {
    addr: String,
    key: String,
    /// Invoices for the readers.
    ids: Arc<Vec<String>>,
}

/// Two endpoints on the receiver, and 200 invoices for the readers.
fn set_up(addr: &str, key: &str, receiver_port: u16) -> Result<Vec<String>, String> {
    let mut setup = connect(addr)?;
    for i in 0..2 {
        let body = format!(r#"{{"url":"http://127.0.0.1:{receiver_port}/hook/{i}"}}"#);
        let (status, text) = exchange(&mut setup, &request("POST", "/v1/webhook-endpoints", addr, key, Some(&body)))?;
        if status != 201 {
            return Err(format!("endpoint: {status} {}", String::from_utf8_lossy(&text)));
        }
    }
    let mut ids = Vec::new();
    for _ in 0..200 {
        let create = request("POST", "/v1/checkout-sessions", addr, key, Some(r#"{"amount":"3.00"}"#));
        let (status, text) = exchange(&mut setup, &create)?;
        match (status, util::json_field(&String::from_utf8_lossy(&text), "invoiceId")) {
            (201, Some(id)) => ids.push(id),
            _ => return Err(format!("seeding invoices: {status}")),
        }
    }
    Ok(ids)
}

/// 8 creating, 8 reading and 4 paying clients for `seconds`: their tallies, by kind.
fn drive(t: &Target, seconds: u64) -> Result<[Tally; 3], String> {
    let stop = Arc::new(AtomicBool::new(false));
    let tallies: Arc<Mutex<[Tally; 3]>> = Arc::new(Mutex::new(Default::default()));
    let mut threads = Vec::new();
    for (kind, clients) in [(0usize, 8usize), (1, 8), (2, 4)] {
        for c in 0..clients {
            let (stop, tallies, ids) = (stop.clone(), tallies.clone(), t.ids.clone());
            let (addr, key) = (t.addr.clone(), t.key.clone());
            threads.push(std::thread::spawn(move || {
                let mut mine = Tally::default();
                let Ok(mut conn) = connect(&addr) else { return };
                let mut i = 0usize;
                while !stop.load(Ordering::Relaxed) {
                    i += 1;
                    let started = Instant::now();
                    if step(kind, &mut conn, &addr, &key, &ids[(c * 7919 + i * 104_729) % ids.len()]) {
                        mine.latencies_us.push(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
                    } else {
                        mine.errors += 1;
                        if let Ok(c) = connect(&addr) {
                            conn = c;
                        }
                    }
                }
                if let Ok(mut all) = tallies.lock() {
                    all[kind].latencies_us.extend(mine.latencies_us);
                    all[kind].errors += mine.errors;
                }
            }));
        }
    }
    std::thread::sleep(Duration::from_secs(seconds));
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    let mut tallies = std::mem::take(&mut *tallies.lock().map_err(|_| "poisoned")?);
    for t in &mut tallies {
        t.latencies_us.sort_unstable();
    }
    Ok(tallies)
}

fn one_run(binary: &std::path::Path, outside: Outside, seconds: u64) -> Result<Outcome, String> {
    let received = Arc::new(AtomicUsize::new(0));
    let receiver_port = receiver(outside == Outside::SlowReceiver, received.clone())?;
    let db = format!("stablepay_bench_mixed_{}", std::process::id());
    let db_url = util::migrated_database(binary, &db)?;
    let result = (|| -> Result<Outcome, String> {
        let (_, key) = util::merchant_and_key(binary, &db_url, "test", "secret")?;
        let chain_url = match outside {
            Outside::StalledChain => format!("http://127.0.0.1:{}", stalled_node()?),
            _ => String::new(),
        };
        let env = [
            ("STABLEPAY_SECRET_KEY", "YmVuY2htYXJrIGtleSBvZiAzMiBieXRlcywgaG9va3M="),
            ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true"),
            ("STABLEPAY_DB_POOL_SIZE", "32"),
            ("STABLEPAY_WORKER_INTERVAL_MS", "200"),
            ("STABLEPAY_CHAIN_RPC_URLS", chain_url.as_str()),
            ("RUST_LOG", "error"),
        ];
        let (server, base) = util::serve(binary, &db_url, &env)?;
        let pid = server.0.id();
        let addr = base.trim_start_matches("http://").to_owned();
        let ids = Arc::new(set_up(&addr, &key, receiver_port)?);
        let cpu_before = cpu_seconds(pid).unwrap_or(0.0);
        let started = Instant::now();
        let [create, read, pay] = drive(&Target { addr, key, ids }, seconds)?;
        let elapsed = started.elapsed().as_secs_f64();
        let cpu = cpu_seconds(pid).unwrap_or(0.0) - cpu_before;
        let rss = peak_rss_mib(pid).unwrap_or((0.0, 0.0));
        let delivered = received.load(Ordering::Relaxed);
        drop(server);
        Ok(Outcome { outside, seconds: elapsed, create, read, pay, delivered, cpu_cores: cpu / elapsed, rss })
    })();
    util::drop_database(&db);
    result
}

pub fn run(args: &[String]) -> Result<(), String> {
    let seconds = match args {
        [] => 15,
        [flag, n] if flag == "--seconds" => n.parse().map_err(|_| "--seconds takes a number")?,
        _ => return Err("usage: cargo xtask bench mixed [--seconds N]".into()),
    };
    let binary = util::release_binary()?;
    let mut outcomes = Vec::new();
    for outside in [Outside::Normal, Outside::SlowReceiver, Outside::StalledChain] {
        eprintln!("mixed load, {} ({seconds}s)...", outside.name());
        outcomes.push(one_run(&binary, outside, seconds)?);
    }
    println!();
    println!(
        "Mixed load: 8 clients creating checkouts, 8 reading invoices, 4 paying (each payment's invoice.paid to 2 endpoints), {seconds}s per run, one process (API and worker, pool 32):"
    );
    println!();
    println!(
        "| outside | creations/s | create p50 / p99 ms | reads/s | read p50 / p99 ms | payments/s | pay p50 / p99 ms | errors | deliveries received | server CPU (cores) | RSS / peak MiB |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    for o in &outcomes {
        let rate = |t: &Tally| t.latencies_us.len() as f64 / o.seconds;
        println!(
            "| {} | {:.0} | {:.1} / {:.1} | {:.0} | {:.1} / {:.1} | {:.0} | {:.1} / {:.1} | {} | {} | {:.2} | {:.0} / {:.0} |",
            o.outside.name(),
            rate(&o.create),
            o.create.percentile(0.5),
            o.create.percentile(0.99),
            rate(&o.read),
            o.read.percentile(0.5),
            o.read.percentile(0.99),
            rate(&o.pay),
            o.pay.percentile(0.5),
            o.pay.percentile(0.99),
            o.create.errors + o.read.errors + o.pay.errors,
            o.delivered,
            o.cpu_cores,
            o.rss.0,
            o.rss.1
        );
    }
    Ok(())
}
