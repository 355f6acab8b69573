// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench accounts [--tries N]`: whether a password-reset request tells by its time
//! whether the address has an account. N tries (50 by default) for addresses with an account and
//! N for addresses without one, alternating, each on a connection of its own against the
//! release binary (each from its own forwarded client address and to its own recipient, so the
//! request quotas never answer); prints both medians and their ratio (docs/benchmarks.md, aim:
//! within 20 %).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::util;

const PASSWORD: &str = "bench owner password, long enough";

pub fn run(args: &[String]) -> Result<(), String> {
    let [tries] = util::count_options(args, [("--tries", 50)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_accounts_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, tries.max(3));
    util::drop_database(&db);
    result
}

/// One reset request from client `n`: its time, and the status line.
fn reset(addr: &str, email: &str, n: u64) -> Result<(Duration, String), String> {
    let body = format!(r#"{{"email":"{email}"}}"#);
    let request = format!(
        "POST /v1/dashboard/password-resets HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nX-Forwarded-For: 10.{}.{}.{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        (n >> 16) & 0xff,
        (n >> 8) & 0xff,
        n & 0xff,
        body.len()
    );
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    let started = Instant::now();
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let took = started.elapsed();
    Ok((took, text.lines().next().unwrap_or("").to_owned()))
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn measure(binary: &std::path::Path, url: &str, tries: u64) -> Result<(), String> {
    let (merchant, _) = util::merchant_and_key(binary, url, "test", "secret")?;
    for i in 0..tries {
        util::create_user(binary, url, (&merchant, &format!("member{i}@bench.example"), "viewer"), PASSWORD)?;
    }
    let env = [("RUST_LOG", "warn"), ("STABLEPAY_HTTP_WORKERS", "2"), ("STABLEPAY_TRUSTED_PROXIES", "127.0.0.1")];
    let (_server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    // Warm up the pool and the code paths (not counted).
    for i in 0..5 {
        reset(&addr, &format!("warm{i}@bench.example"), 60_000 + i)?;
    }
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for i in 0..tries {
        for (list, email, n) in [
            (&mut known, format!("member{i}@bench.example"), 2 * i),
            (&mut unknown, format!("nobody{i}@bench.example"), 2 * i + 1),
        ] {
            let (took, status) = reset(&addr, &email, n)?;
            if !status.contains(" 202 ") {
                return Err(format!("{email}: {status}"));
            }
            list.push(took);
        }
    }
    let (k, u) = (median(known), median(unknown));
    let ratio = k.as_secs_f64() / u.as_secs_f64();
    println!("| password-reset request ({tries} tries each) | median |");
    println!("|---|---|");
    println!("| address with an account | {:.2} ms |", k.as_secs_f64() * 1000.0);
    println!("| address without one | {:.2} ms |", u.as_secs_f64() * 1000.0);
    println!("| ratio | {ratio:.2} |");
    Ok(())
}
