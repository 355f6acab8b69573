// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench exports [--invoices N] [--seconds S]`: an export of N invoices (1,000,000
//! by default) written by the release binary's worker while the API serves reads and creations
//! beside it. Seeds the invoices in SQL (copies of one made through the API), measures the API
//! alone for S seconds (10), then asks for the export and measures the API again while the
//! worker writes it; prints the export's rows per second, the server's memory before it and at
//! its peak, and the API's latencies without and with the export (docs/benchmarks.md).

use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bench::client::{MakeRequest, OnBody, Phase, connect, exchange, load, peak_rss_mib};
use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    let [invoices, seconds] = util::count_options(args, [("--invoices", 1_000_000), ("--seconds", 10)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_exports_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, invoices.max(1), seconds);
    util::drop_database(&db);
    result
}

/// One request over a fresh connection; its status and body.
fn once(addr: &str, request: &str) -> Result<(u16, String), String> {
    let (status, body) = exchange(&mut connect(addr)?, request.as_bytes())?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

fn post(addr: &str, key: &str, path: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn get(addr: &str, key: &str, path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n")
}

/// Reads and creations for `seconds`, two connections each, at once.
fn api_load(addr: &str, key: &str, invoice: &str, seconds: u64) -> Result<(Phase, Phase), String> {
    let none: OnBody = Arc::new(|_: &[u8]| {});
    let (a, k, id) = (addr.to_owned(), key.to_owned(), invoice.to_owned());
    let read: MakeRequest = Arc::new(move |_, _| get(&a, &k, &format!("/v1/invoices/{id}")).into_bytes());
    let (a, k) = (addr.to_owned(), key.to_owned());
    let create: MakeRequest =
        Arc::new(move |_, _| post(&a, &k, "/v1/checkout-sessions", r#"{"amount":"1.00"}"#).into_bytes());
    let (addr2, none2) = (addr.to_owned(), none.clone());
    let creations =
        std::thread::spawn(move || load("POST /v1/checkout-sessions", &addr2, 2, seconds, create, 201, none2));
    let reads = load("GET /v1/invoices/{id}", addr, 2, seconds, read, 200, none)?;
    let creations = creations.join().map_err(|_| "the creation load panicked")??;
    Ok((reads, creations))
}

fn measure(binary: &std::path::Path, url: &str, invoices: u64, seconds: u64) -> Result<(), String> {
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let env = [("RUST_LOG", "warn"), ("STABLEPAY_HTTP_WORKERS", "2"), ("STABLEPAY_WORKER_INTERVAL_MS", "200")];
    let (server, base) = util::serve(binary, url, &env)?;
    let pid = server.0.id();
    let addr = base.trim_start_matches("http://").to_owned();
    let draft = r#"{"lines":[{"description":"Beans, roasted","quantity":"3","unitAmount":"12.5"}],"customer":{"name":"Zoë Ångström","email":"zoe@example.com"},"metadata":{"order":"A-1"}}"#;
    let (status, body) = once(&addr, &post(&addr, &key, "/v1/invoices", draft))?;
    if status != 201 {
        return Err(format!("invoice creation answered {status}: {body}"));
    }
    let id = util::json_field(&body, "id").ok_or("no invoice id")?;
    let seeding = Instant::now();
    util::run(Command::new("psql").args([url, "-qAt", "-c"]).arg(format!(
        "INSERT INTO invoices SELECT r.* FROM invoices i, generate_series(1, {}) g, \
         LATERAL jsonb_populate_record(NULL::invoices, to_jsonb(i) || jsonb_build_object( \
           'id', 'inv_bench' || g, 'seq', nextval(pg_get_serial_sequence('invoices', 'seq')))) r \
         WHERE i.id = '{id}'; ANALYZE invoices",
        invoices - 1
    )))?;
    println!("seeded {invoices} invoices in {:.0} s", seeding.elapsed().as_secs_f64());

    let (reads_alone, creations_alone) = api_load(&addr, &key, &id, seconds)?;
    let rss_before = peak_rss_mib(pid).map_or(0.0, |(now, _)| now);
    // The seeded invoices were all created a moment ago: a day either side holds them.
    let (from, to) = (day("-1 day"), day("+1 day"));
    let export = format!(r#"{{"type":"invoices","from":"{from}","to":"{to}"}}"#);
    let started = Instant::now();
    let (status, body) = once(&addr, &post(&addr, &key, "/v1/exports", &export))?;
    if status != 202 {
        return Err(format!("export creation answered {status}: {body}"));
    }
    let export_id = util::json_field(&body, "id").ok_or("no export id")?;
    let (reads_beside, creations_beside) = api_load(&addr, &key, &id, seconds)?;
    let (rows, bytes) = loop {
        let (_, body) = once(&addr, &get(&addr, &key, &format!("/v1/exports/{export_id}")))?;
        match util::json_field(&body, "status").as_deref() {
            Some("ready") => break (number(&body, "rowCount"), number(&body, "byteSize")),
            Some("queued" | "running") => std::thread::sleep(Duration::from_millis(100)),
            other => return Err(format!("the export ended {other:?}: {body}")),
        }
        if started.elapsed() > Duration::from_secs(3600) {
            return Err("the export took over an hour".into());
        }
    };
    let took = started.elapsed().as_secs_f64();
    let peak = peak_rss_mib(pid).map_or(0.0, |(_, peak)| peak);
    drop(server);
    println!();
    println!("| measure | value |");
    println!("| --- | --- |");
    println!("| invoices exported | {rows} ({:.0} MiB of CSV) |", bytes as f64 / 1_048_576.0);
    println!("| export time (API loaded for the first {seconds} s) | {took:.1} s, {:.0} rows/s |", rows as f64 / took);
    println!("| server RSS before the export / peak | {rss_before:.0} MiB / {peak:.0} MiB |");
    println!();
    println!(
        "| API (2 + 2 connections) | alone: req/s, p50, p99 ms | beside the export: req/s, p50, p99 ms | errors |"
    );
    println!("| --- | --- | --- | --- |");
    for (alone, beside) in [(&reads_alone, &reads_beside), (&creations_alone, &creations_beside)] {
        println!(
            "| {} | {:.0}, {:.1}, {:.1} | {:.0}, {:.1}, {:.1} | {} |",
            alone.name,
            alone.rps(),
            alone.percentile(0.5),
            alone.percentile(0.99),
            beside.rps(),
            beside.percentile(0.5),
            beside.percentile(0.99),
            alone.errors + beside.errors
        );
    }
    Ok(())
}

/// An integer field of a one-line JSON object (0 when absent).
fn number(text: &str, field: &str) -> u64 {
    let key = format!("\"{field}\":");
    text.find(&key)
        .map(|at| &text[at + key.len()..])
        .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|digits| digits.parse().ok())
        .unwrap_or(0)
}

/// Now moved by `shift` (`+1 day`), RFC 3339 in UTC, from `date` (xtask has no date library).
fn day(shift: &str) -> String {
    let out = Command::new("date").args(["-u", "-d", shift, "+%Y-%m-%dT%H:%M:%SZ"]).output();
    out.ok().map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned()).unwrap_or_default()
}
