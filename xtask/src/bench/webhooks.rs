// Benchmark statistics (rates, percentiles) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench webhooks [--seconds N] [--connections N] [--endpoints N]`: webhook
//! delivery of the release binary to a receiver on loopback, while the API takes payments.
//!
//! 1. Builds `stablepay` in release mode, creates a fresh database, a merchant with a secret
//!    test key, and starts `stablepay serve` (private destinations allowed, for loopback).
//! 2. Starts a receiver in this process (a thread per connection, answering 200 at once) and
//!    registers `--endpoints` endpoints on it, so each event is delivered that many times.
//! 3. For `--seconds`, `--connections` API clients each create a checkout and simulate its
//!    payment in a loop: every payment emits `invoice.paid`, fanned out to every endpoint.
//! 4. Waits for the deliveries to drain and prints: the API's payments per second during the
//!    run, deliveries per second, and the latency from the event's `createdAt` to the moment
//!    the receiver had the request (p50/p99/max).

use std::io::{BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::bench::client::{connect, exchange};
use crate::bench::receiver::read_request;
use crate::util;

struct Options {
    seconds: u64,
    connections: usize,
    endpoints: usize,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut o = Options { seconds: 15, connections: 16, endpoints: 4 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        let n: u64 = value.parse().map_err(|_| format!("{a} takes a number"))?;
        match a.as_str() {
            "--seconds" => o.seconds = n,
            "--connections" => o.connections = usize::try_from(n).unwrap_or(16),
            "--endpoints" => o.endpoints = usize::try_from(n).unwrap_or(4),
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

fn unix_ms_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
}

/// Unix milliseconds of an RFC 3339 UTC timestamp with milliseconds (`2026-11-23T14:12:58.219Z`).
fn parse_ms(text: &str) -> Option<i64> {
    let n = |a: usize, b: usize| text.get(a..b)?.parse::<i64>().ok();
    let (y, m, d, hh, mm, ss, ms) = (n(0, 4)?, n(5, 7)?, n(8, 10)?, n(11, 13)?, n(14, 16)?, n(17, 19)?, n(20, 23)?);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + hh) * 60 + mm) * 60_000 + ss * 1000 + ms)
}

/// What the receiver saw: when each request arrived, and its event's createdAt.
#[derive(Default)]
struct Seen {
    arrivals: Vec<(i64, i64)>,
}

fn serve_connection(stream: TcpStream, seen: Arc<Mutex<Seen>>) {
    let _ = stream.set_nodelay(true);
    let Ok(mut writer) = stream.try_clone() else { return };
    let mut reader = BufReader::new(stream);
    while let Some(body) = read_request(&mut reader) {
        let arrived = unix_ms_now();
        let text = String::from_utf8_lossy(&body);
        if let Some(created) = util::json_field(&text, "createdAt").and_then(|t| parse_ms(&t))
            && let Ok(mut s) = seen.lock()
        {
            s.arrivals.push((arrived, created));
        }
        if writer.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").is_err() {
            return;
        }
    }
}

fn percentile(sorted: &[i64], p: f64) -> i64 {
    if sorted.is_empty() {
        return 0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// A POST of `body` to `path` with the merchant's key.
fn post(
    conn: &mut BufReader<TcpStream>,
    addr: &str,
    key: &str,
    path: &str,
    body: &str,
) -> Result<(u16, Vec<u8>), String> {
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    exchange(conn, request.as_bytes())
}

/// A receiver on loopback, a thread per connection; answers its port.
fn start_receiver(seen: &Arc<Mutex<Seen>>) -> Result<u16, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    let seen = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve_connection(stream, seen));
        }
    });
    Ok(port)
}

/// What the API's clients did.
struct Paid {
    payments: usize,
    errors: usize,
    seconds: f64,
}

/// `connections` clients creating a checkout and paying it, in a loop, for `seconds`.
fn pay(o: &Options, addr: &str, key: &str) -> Paid {
    let payments = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let clients: Vec<_> = (0..o.connections)
        .map(|_| {
            let (payments, errors, stop) = (payments.clone(), errors.clone(), stop.clone());
            let (addr, key) = (addr.to_owned(), key.to_owned());
            std::thread::spawn(move || {
                let Ok(mut conn) = connect(&addr) else { return };
                while !stop.load(Ordering::Relaxed) {
                    let Ok((201, bytes)) =
                        post(&mut conn, &addr, &key, "/v1/checkout-sessions", r#"{"amount":"5.00"}"#)
                    else {
                        errors.fetch_add(1, Ordering::Relaxed);
                        continue;
                    };
                    let Some(cs) = util::json_field(&String::from_utf8_lossy(&bytes), "id") else { continue };
                    let path = format!("/v1/test-helpers/checkout-sessions/{cs}/payments");
                    let counter = if matches!(post(&mut conn, &addr, &key, &path, "{}"), Ok((201, _))) {
                        &payments
                    } else {
                        &errors
                    };
                    counter.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(o.seconds));
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        let _ = c.join();
    }
    Paid {
        payments: payments.load(Ordering::Relaxed),
        errors: errors.load(Ordering::Relaxed),
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// Waits (at most two minutes) until the receiver saw `expected` deliveries; answers what it saw.
fn drain(seen: &Mutex<Seen>, expected: usize) -> Result<Vec<(i64, i64)>, String> {
    let drain = Instant::now();
    loop {
        let got = seen.lock().map(|s| s.arrivals.len()).unwrap_or(0);
        if got >= expected || drain.elapsed() > Duration::from_secs(120) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    seen.lock().map(|s| s.arrivals.clone()).map_err(|_| "poisoned".into())
}

pub fn run(args: &[String]) -> Result<(), String> {
    let o = options(args)?;
    let binary = util::release_binary()?;
    let seen = Arc::new(Mutex::new(Seen::default()));
    let receiver_port = start_receiver(&seen)?;
    let db = format!("stablepay_bench_hooks_{}", std::process::id());
    let db_url = util::migrated_database(&binary, &db)?;
    let result = measure(&o, &binary, &db_url, receiver_port, &seen);
    util::drop_database(&db);
    result
}

fn measure(
    o: &Options,
    binary: &std::path::Path,
    db_url: &str,
    receiver_port: u16,
    seen: &Mutex<Seen>,
) -> Result<(), String> {
    let (_, key) = util::merchant_and_key(binary, db_url, "test", "secret")?;
    let env = [
        ("STABLEPAY_SECRET_KEY", "YmVuY2htYXJrIGtleSBvZiAzMiBieXRlcywgaG9va3M="),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("STABLEPAY_DB_POOL_SIZE", "32"),
    ];
    let (_server, base) = util::serve(binary, db_url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    let mut setup = connect(&addr)?;
    for i in 0..o.endpoints {
        let url = format!("http://127.0.0.1:{receiver_port}/hook/{i}");
        let (status, text) = post(&mut setup, &addr, &key, "/v1/webhook-endpoints", &format!(r#"{{"url":"{url}"}}"#))?;
        if status != 201 {
            return Err(format!("endpoint: {status} {}", String::from_utf8_lossy(&text)));
        }
    }
    eprintln!("{} clients paying checkouts for {}s, {} endpoints...", o.connections, o.seconds, o.endpoints);
    let paid = pay(o, &addr, &key);
    let expected = paid.payments * o.endpoints;
    eprintln!("{} payments; waiting for {expected} deliveries...", paid.payments);
    let arrivals = drain(seen, expected)?;
    print(o, &paid, expected, &arrivals);
    Ok(())
}

fn print(o: &Options, paid: &Paid, expected: usize, arrivals: &[(i64, i64)]) {
    let first = arrivals.iter().map(|a| a.0).min().unwrap_or(0);
    let last = arrivals.iter().map(|a| a.0).max().unwrap_or(0);
    let mut latency: Vec<i64> = arrivals.iter().map(|(at, created)| at - created).collect();
    latency.sort_unstable();
    let rate = arrivals.len() as f64 / ((last - first).max(1) as f64 / 1000.0);
    println!();
    println!(
        "{} API clients for {}s, {} endpoints on one loopback receiver, server pool 32",
        o.connections, o.seconds, o.endpoints
    );
    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!(
        "| API payments (checkout + simulated payment, each emitting invoice.paid) | {:.0}/s, {} errors |",
        paid.payments as f64 / paid.seconds,
        paid.errors
    );
    println!(
        "| deliveries (received of {expected} expected) | {} in {:.1} s: {rate:.0}/s |",
        arrivals.len(),
        (last - first) as f64 / 1000.0
    );
    println!(
        "| event createdAt -> receiver got it | p50 {} ms, p99 {} ms, max {} ms |",
        percentile(&latency, 0.50),
        percentile(&latency, 0.99),
        latency.last().copied().unwrap_or(0)
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_timestamps() {
        assert_eq!(parse_ms("1970-01-01T00:00:00.000Z"), Some(0));
        assert_eq!(parse_ms("2026-11-23T14:12:58.219Z"), Some(1_795_443_178_219));
        assert_eq!(parse_ms("2000-03-01T00:00:00.001Z"), Some(951_868_800_001));
    }
}
