// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench checkout-pages [--pages N] [--samples S]`: N checkout pages (10,000) open
//! at once on the release binary (opened at 500 a second), first following their checkout by the push channel
//! (`GET /checkout/{id}/events`, one connection each), then by the polling the page falls back
//! to (`GET /v1/public/checkout-sessions/{id}` every 3 s, each page from an address of its own
//! through a trusted proxy, as the rate limits count them). For each: the server's memory per
//! open page, its CPU while the pages only wait, and for S checkouts (200) paid one after the
//! other, the time from the payment's answer (the crediting committed) to the page knowing.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bench::client::{
    MakeRequest, OnBody, connect, cpu_seconds, exchange, load_count, peak_rss_mib, percentile_ms,
};
use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    let [pages, samples] = util::count_options(args, [("--pages", 10_000), ("--samples", 200)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_pages_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, pages as usize, samples as usize);
    util::drop_database(&db);
    result
}

/// When each followed page learned that its checkout was paid, by page number.
type Seen = Arc<Mutex<HashMap<usize, Instant>>>;

/// One mode's figures.
struct Figures {
    mode: &'static str,
    rss_per_page_kib: f64,
    idle_cpu: f64,
    latencies_us: Vec<u64>,
    missed: usize,
}

fn measure(binary: &std::path::Path, url: &str, pages: usize, samples: usize) -> Result<(), String> {
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let cap = (pages + 2000).to_string();
    let env =
        [("RUST_LOG", "warn"), ("STABLEPAY_TRUSTED_PROXIES", "127.0.0.1"), ("STABLEPAY_MAX_CONNECTIONS", cap.as_str())];
    // A server of its own for each way of following: the pages of one never weigh on the other.
    let mut figures = Vec::new();
    for mode in [Mode::Push, Mode::Poll] {
        let (server, base) = util::serve(binary, url, &env)?;
        let addr = base.trim_start_matches("http://").to_owned();
        let ids = checkouts(&addr, &key, pages)?;
        let mut open = Open { addr: &addr, key: &key, pid: server.0.id(), threads: Vec::with_capacity(pages) };
        figures.push(follow(&mut open, &ids, samples, mode)?);
        // The server's end closes every page's connection; their threads end with it.
        drop(server);
        for t in open.threads {
            let _ = t.join();
        }
    }
    println!();
    println!(
        "| {pages} open checkout pages | server memory per page | server CPU while they wait | crediting -> page knows p50 / p99 / max | missed |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for f in figures {
        let max = f.latencies_us.last().copied().unwrap_or(0) as f64 / 1000.0;
        println!(
            "| {} | {:.1} KiB | {:.2} cores | {:.0} / {:.0} / {:.0} ms | {} of {samples} |",
            f.mode,
            f.rss_per_page_kib,
            f.idle_cpu,
            percentile_ms(&f.latencies_us, 0.5),
            percentile_ms(&f.latencies_us, 0.99),
            max,
            f.missed
        );
    }
    Ok(())
}

/// `n` test checkouts of 5.00; their ids.
fn checkouts(addr: &str, key: &str, n: usize) -> Result<Vec<String>, String> {
    let ids = Arc::new(Mutex::new(Vec::with_capacity(n)));
    let (a, k, kept) = (addr.to_owned(), key.to_owned(), ids.clone());
    let make: MakeRequest = Arc::new(move |_, _| {
        let body = r#"{"amount":"5.00"}"#;
        format!(
            "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {a}\r\nAuthorization: Bearer {k}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    });
    let keep: OnBody = Arc::new(move |b| {
        if let (Some(id), Ok(mut ids)) = (util::json_field(&String::from_utf8_lossy(b), "id"), kept.lock()) {
            ids.push(id);
        }
    });
    load_count("create the checkouts", addr, 8, n, make, 201, keep)?;
    let ids = std::mem::take(&mut *ids.lock().map_err(|_| "poisoned")?);
    if ids.len() != n {
        return Err(format!("{} of {n} checkouts created", ids.len()));
    }
    Ok(ids)
}

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Push,
    Poll,
}

/// The server under test and the page threads opened on it.
struct Open<'a> {
    addr: &'a str,
    key: &'a str,
    pid: u32,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// Opens a page per checkout in `ids`, measures, and pays `samples` of them.
fn follow(open: &mut Open<'_>, ids: &[String], samples: usize, mode: Mode) -> Result<Figures, String> {
    let (addr, key, pid) = (open.addr, open.key, open.pid);
    let rss_before = peak_rss_mib(pid).map_or(0.0, |(now, _)| now);
    let opened = Arc::new(AtomicUsize::new(0));
    let seen: Seen = Arc::default();
    for (i, id) in ids.iter().enumerate() {
        let (addr, id, opened, seen) = (addr.to_owned(), id.clone(), opened.clone(), seen.clone());
        let page = move || match mode {
            Mode::Push => push_page(&addr, &id, i, (&opened, &seen)),
            Mode::Poll => poll_page(&addr, &id, i, (&opened, &seen)),
        };
        let spawned = std::thread::Builder::new().stack_size(128 * 1024).spawn(page);
        open.threads.push(spawned.map_err(|e| e.to_string())?);
        // Pages open at 500 a second (customers arriving), not in one instant.
        std::thread::sleep(Duration::from_millis(2));
    }
    let start = Instant::now();
    while opened.load(Ordering::Relaxed) < ids.len() {
        if start.elapsed() > Duration::from_secs(180) {
            return Err(format!("{} of {} pages opened", opened.load(Ordering::Relaxed), ids.len()));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // Every page open (and, polling, through a full round): memory, then CPU while they wait.
    std::thread::sleep(Duration::from_secs(4));
    let rss = peak_rss_mib(pid).map_or(0.0, |(now, _)| now);
    let cpu_start = cpu_seconds(pid).unwrap_or(0.0);
    std::thread::sleep(Duration::from_secs(10));
    let idle_cpu = (cpu_seconds(pid).unwrap_or(0.0) - cpu_start) / 10.0;
    let paid = pay_samples(addr, key, ids, samples)?;
    std::thread::sleep(Duration::from_secs(5));
    let seen = seen.lock().map_err(|_| "poisoned")?.clone();
    let mut latencies_us: Vec<u64> = paid
        .iter()
        .filter_map(|(i, answered)| seen.get(i).map(|t| t.saturating_duration_since(*answered).as_micros() as u64))
        .collect();
    latencies_us.sort_unstable();
    Ok(Figures {
        mode: if mode == Mode::Push { "pushed (Server-Sent Events)" } else { "polled every 3 s" },
        rss_per_page_kib: (rss - rss_before) * 1024.0 / ids.len() as f64,
        idle_cpu,
        missed: paid.len() - latencies_us.len(),
        latencies_us,
    })
}

/// Pays `samples` checkouts spread over `ids`, one after the other (20 ms apart); returns each
/// one's page number and when its payment was answered.
fn pay_samples(addr: &str, key: &str, ids: &[String], samples: usize) -> Result<Vec<(usize, Instant)>, String> {
    let mut conn = connect(addr)?;
    let step = (ids.len() / samples.max(1)).max(1);
    let mut paid = Vec::new();
    for i in (0..ids.len()).step_by(step).take(samples) {
        let request = format!(
            "POST /v1/test-helpers/checkout-sessions/{}/payments HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}",
            ids[i]
        );
        let (status, body) = exchange(&mut conn, request.as_bytes())?;
        if status != 201 {
            return Err(format!("payment answered {status}: {}", String::from_utf8_lossy(&body)));
        }
        paid.push((i, Instant::now()));
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(paid)
}

/// A page that follows its checkout's stream until it says paid (or the stream is shut). A
/// stream that could not be opened (the listen backlog overflowed in the burst of connections)
/// is tried again after a second, as a browser's EventSource does.
fn push_page(addr: &str, id: &str, i: usize, (opened, seen): (&AtomicUsize, &Seen)) {
    for _ in 0..10 {
        if follow_stream(addr, id, i, (opened, seen)) {
            return;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// One stream; false when it failed before its first event.
fn follow_stream(addr: &str, id: &str, i: usize, (opened, seen): (&AtomicUsize, &Seen)) -> bool {
    let Ok(mut stream) = TcpStream::connect(addr) else { return false };
    if write!(stream, "GET /checkout/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
        return false;
    }
    // A connection lost in the burst's backlog answers nothing: give up on it after 10 s.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut first = true;
    for line in BufReader::new(&stream).lines() {
        let Ok(line) = line else { break };
        let Some(data) = line.strip_prefix("data: ") else { continue };
        if first {
            first = false;
            let _ = stream.set_read_timeout(None);
            opened.fetch_add(1, Ordering::Relaxed);
        } else if data.contains("\"paid\"") {
            if let Ok(mut s) = seen.lock() {
                s.insert(i, Instant::now());
            }
            break;
        }
    }
    !first
}

/// A page that polls its checkout every 3 s (its first poll at a random point of the first
/// 3 s, as pages opened at different moments would) until it says paid.
fn poll_page(addr: &str, id: &str, i: usize, (opened, seen): (&AtomicUsize, &Seen)) {
    let offset = Duration::from_millis(((i * 7919) % 3000) as u64);
    std::thread::sleep(offset);
    let mut conn = None;
    for _ in 0..10 {
        match connect(addr) {
            Ok(c) => {
                conn = Some(c);
                break;
            }
            Err(_) => std::thread::sleep(Duration::from_secs(1)),
        }
    }
    let Some(mut conn) = conn else { return };
    let request = format!(
        "GET /v1/public/checkout-sessions/{id} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: 10.{}.{}.{}\r\n\r\n",
        i >> 16,
        (i >> 8) & 255,
        i & 255
    );
    let mut first = true;
    loop {
        let Ok((200, body)) = exchange(&mut conn, request.as_bytes()) else { return };
        if first {
            first = false;
            opened.fetch_add(1, Ordering::Relaxed);
        }
        if String::from_utf8_lossy(&body).contains("\"phase\":\"paid\"") {
            if let Ok(mut s) = seen.lock() {
                s.insert(i, Instant::now());
            }
            return;
        }
        std::thread::sleep(Duration::from_secs(3));
    }
}
