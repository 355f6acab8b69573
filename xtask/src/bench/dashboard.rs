// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench dashboard [--invoices N] [--seconds S]`: the dashboard's invoice list of a
//! merchant with N invoices (100,000 by default), rendered by the release binary for a signed-in
//! owner: the first page, and a page deep in the list by its cursor, each for S seconds (10) over
//! two connections; prints requests per second and p50/p99 (docs/benchmarks.md, aim: p99 under
//! 50 ms on the 2-core machine).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use crate::bench::client::{MakeRequest, OnBody, Phase, load};
use crate::util;

const PASSWORD: &str = "bench owner password, long enough";

pub fn run(args: &[String]) -> Result<(), String> {
    let [invoices, seconds] = util::count_options(args, [("--invoices", 100_000), ("--seconds", 10)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_dashboard_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, invoices.max(2), seconds);
    util::drop_database(&db);
    result
}

/// One request on a connection of its own, closed after the answer: the status line and head,
/// and the body.
fn raw(addr: &str, request: &str) -> Result<(String, String), String> {
    let mut stream = TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?;
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    Ok((head.to_owned(), body.to_owned()))
}

fn owner(binary: &std::path::Path, url: &str, merchant: &str) -> Result<(), String> {
    util::create_user(binary, url, (merchant, "owner@bench.example", "owner"), PASSWORD)
}

/// The session cookie of the owner's login.
fn login(addr: &str) -> Result<String, String> {
    let body = format!(r#"{{"email":"owner@bench.example","password":"{PASSWORD}"}}"#);
    let request = format!(
        "POST /v1/dashboard/sessions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (head, answer) = raw(addr, &request)?;
    head.lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("set-cookie:").then(|| l[11..].trim().to_owned()))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .ok_or_else(|| format!("no session cookie: {head}\n{answer}"))
}

fn measure(binary: &std::path::Path, url: &str, invoices: u64, seconds: u64) -> Result<(), String> {
    let (merchant, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    owner(binary, url, &merchant)?;
    let env = [("RUST_LOG", "warn"), ("STABLEPAY_HTTP_WORKERS", "2")];
    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    let draft = r#"{"lines":[{"description":"Beans, roasted","quantity":"3","unitAmount":"12.5"}],"customer":{"name":"Zoë Ångström","email":"zoe@example.com"}}"#;
    let create = format!(
        "POST /v1/invoices HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{draft}",
        draft.len()
    );
    let (head, body) = raw(&addr, &create)?;
    if !head.starts_with("HTTP/1.1 201") {
        return Err(format!("invoice creation answered {head}: {body}"));
    }
    let id = util::json_field(&body, "id").ok_or("no invoice id")?;
    let seeding = Instant::now();
    util::run(Command::new("psql").args([url, "-qAt", "-c"]).arg(format!(
        "INSERT INTO invoices SELECT r.* FROM invoices i, generate_series(1, {}) g, \
         LATERAL jsonb_populate_record(NULL::invoices, to_jsonb(i) || jsonb_build_object( \
           'id', 'inv_bench' || g, \
           'seq', nextval(pg_get_serial_sequence('invoices', 'seq')))) r \
         WHERE i.id = '{id}'; ANALYZE invoices",
        invoices - 1
    )))?;
    println!("seeded {invoices} invoices in {:.0} s", seeding.elapsed().as_secs_f64());
    let cookie = login(&addr)?;
    let deep = format!("inv_bench{}", invoices / 2);
    let mut phases: Vec<Phase> = Vec::new();
    for (name, query) in [
        ("GET /dashboard/invoices (first page)", String::new()),
        ("GET /dashboard/invoices?after=… (page in the middle)", format!("&after={deep}")),
    ] {
        let (a, c) = (addr.clone(), cookie.clone());
        let path = format!("/dashboard/invoices?merchant={merchant}&mode=test{query}");
        let make: MakeRequest =
            Arc::new(move |_, _| format!("GET {path} HTTP/1.1\r\nHost: {a}\r\nCookie: {c}\r\n\r\n").into_bytes());
        let (seen, wrong) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let (s, w) = (seen.clone(), wrong.clone());
        // Each page must list invoices (25 of them, the customer's email on each row).
        let check: OnBody = Arc::new(move |b: &[u8]| {
            s.fetch_add(1, Ordering::Relaxed);
            if b.windows(15).filter(|x| *x == b"zoe@example.com").count() != 25 {
                w.fetch_add(1, Ordering::Relaxed);
            }
        });
        phases.push(load(name, &addr, 2, seconds, make, 200, check)?);
        if wrong.load(Ordering::Relaxed) > 0 || seen.load(Ordering::Relaxed) == 0 {
            return Err(format!(
                "{name}: {} of {} pages did not list 25 invoices",
                wrong.load(Ordering::Relaxed),
                seen.load(Ordering::Relaxed)
            ));
        }
    }
    drop(server);
    println!();
    println!("| page ({invoices} invoices, 2 connections, {seconds} s) | req/s | p50 ms | p99 ms | errors |");
    println!("| --- | --- | --- | --- | --- |");
    for p in &phases {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {} |",
            p.name,
            p.rps(),
            p.percentile(0.5),
            p.percentile(0.99),
            p.errors
        );
    }
    Ok(())
}
