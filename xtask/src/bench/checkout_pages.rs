// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench checkout-pages [--pages N] [--samples S]`: N checkout pages (10,000) open
//! at once on the release binary, first following their checkout by the push channel
//! (`GET /checkout/{id}/events`, one connection each), then by the polling the page falls back
//! to (`GET /v1/public/checkout-sessions/{id}` every 3 s, each page from an address of its own
//! through a trusted proxy, as the rate limits count them). For each: the server's memory per
//! open page, its CPU while the pages only wait, and for S checkouts (200) paid one after the
//! other, the time from the payment's answer (the crediting committed) to the page knowing.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
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
    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    let ids = checkouts(&addr, &key, pages * 2)?;
    let (push_ids, poll_ids) = ids.split_at(pages);
    let pid = server.0.id();
    let push = follow(&addr, &key, pid, push_ids, samples, Mode::Push)?;
    let poll = follow(&addr, &key, pid, poll_ids, samples, Mode::Poll)?;
    drop(server);
    println!();
    println!(
        "| {pages} open checkout pages | server memory per page | server CPU while they wait | crediting -> page knows p50 / p99 / max | missed |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for f in [push, poll] {
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

/// Opens a page per checkout in `ids`, measures, pays `samples` of them, and closes them.
fn follow(addr: &str, key: &str, pid: u32, ids: &[String], samples: usize, mode: Mode) -> Result<Figures, String> {
    let rss_before = peak_rss_mib(pid).map_or(0.0, |(now, _)| now);
    let opened = Arc::new(AtomicUsize::new(0));
    let seen: Seen = Arc::default();
    let streams = Arc::new(Mutex::new(Vec::with_capacity(ids.len())));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut threads = Vec::with_capacity(ids.len());
    for (i, id) in ids.iter().enumerate() {
        let (addr, id, opened, seen, streams, stop) =
            (addr.to_owned(), id.clone(), opened.clone(), seen.clone(), streams.clone(), stop.clone());
        let page = move || match mode {
            Mode::Push => push_page(&addr, &id, i, (&opened, &seen, &streams)),
            Mode::Poll => poll_page(&addr, &id, i, (&opened, &seen, &stop)),
        };
        let spawned = std::thread::Builder::new().stack_size(128 * 1024).spawn(page);
        threads.push(spawned.map_err(|e| e.to_string())?);
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
    stop.store(true, Ordering::Relaxed);
    for s in streams.lock().map_err(|_| "poisoned")?.iter() {
        let _ = s.shutdown(Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
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

/// A page that follows its checkout's stream until it says paid (or the stream is shut).
fn push_page(addr: &str, id: &str, i: usize, (opened, seen, streams): (&AtomicUsize, &Seen, &Mutex<Vec<TcpStream>>)) {
    let Ok(mut stream) = TcpStream::connect(addr) else { return };
    if let (Ok(clone), Ok(mut all)) = (stream.try_clone(), streams.lock()) {
        all.push(clone);
    }
    if write!(stream, "GET /checkout/{id}/events HTTP/1.1\r\nHost: {addr}\r\n\r\n").is_err() {
        return;
    }
    let mut first = true;
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { return };
        let Some(data) = line.strip_prefix("data: ") else { continue };
        if first {
            first = false;
            opened.fetch_add(1, Ordering::Relaxed);
        } else if data.contains("\"paid\"") {
            if let Ok(mut s) = seen.lock() {
                s.insert(i, Instant::now());
            }
            return;
        }
    }
}

/// A page that polls its checkout every 3 s (its first poll at a random point of the first
/// 3 s, as pages opened at different moments would) until it says paid.
fn poll_page(
    addr: &str,
    id: &str,
    i: usize,
    (opened, seen, stop): (&AtomicUsize, &Seen, &std::sync::atomic::AtomicBool),
) {
    let offset = Duration::from_millis(((i * 7919) % 3000) as u64);
    std::thread::sleep(offset);
    let Ok(mut conn) = connect(addr) else { return };
    let request = format!(
        "GET /v1/public/checkout-sessions/{id} HTTP/1.1\r\nHost: {addr}\r\nX-Forwarded-For: 10.{}.{}.{}\r\n\r\n",
        i >> 16,
        (i >> 8) & 255,
        i & 255
    );
    let mut first = true;
    while !stop.load(Ordering::Relaxed) {
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
