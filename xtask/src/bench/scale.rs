// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench scale [--invoices N] [--merchants M] [--events-per-invoice E] [--seconds S]`:
//! the API on a database holding years of data (docs/benchmarks.md, "Years of data").
//!
//! 1. On a fresh database, a new merchant's checkout creations, invoice reads and first pages
//!    of its invoice list, S seconds each (10) over 8 connections: the small-database figures.
//! 2. A template merchant gets N / M invoices through the API (checkouts, each paid in test
//!    mode: an invoice.paid event each), then its events are copied in SQL up to E per invoice
//!    (5); then M - 1 copies of that merchant are made in SQL (`tools/scale/clone.sql`), so the
//!    database holds N invoices (10,000,000) of M merchants (10,000) and N × E events; then
//!    `VACUUM ANALYZE`, as autovacuum would have done over the years, and a `CHECKPOINT`.
//! 3. The same phases for another new merchant, on the large database.
//!
//! Prints the phases side by side with the ratio of the p99s (aim: within 1.5×), how long the
//! data took to make, and the bytes on disk per invoice and per event (table, indexes and
//! TOAST, as `pg_total_relation_size` counts them, summed over a partitioned table's months).

use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::bench::client::{MakeRequest, OnBody, Phase, load, load_count};
use crate::util;

const CONNECTIONS: usize = 8;
/// Copies made per SQL call (one transaction each), so progress shows.
const CHUNK: u64 = 250;

pub fn run(args: &[String]) -> Result<(), String> {
    let [invoices, merchants, events, seconds] = util::count_options(
        args,
        [("--invoices", 10_000_000), ("--merchants", 10_000), ("--events-per-invoice", 5), ("--seconds", 10)],
    )?;
    if merchants < 2 || invoices < merchants || events < 1 {
        return Err(
            "--merchants must be at least 2, --invoices at least --merchants, --events-per-invoice at least 1".into()
        );
    }
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_scale_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, (invoices, merchants, events), seconds);
    util::drop_database(&db);
    result
}

fn measure(
    binary: &std::path::Path,
    url: &str,
    (invoices, merchants, events): (u64, u64, u64),
    seconds: u64,
) -> Result<(), String> {
    let env = [("RUST_LOG", "warn")];
    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    eprintln!("the phases on a fresh database...");
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let small = phases(&addr, &key, seconds)?;

    let per_merchant = invoices / merchants;
    eprintln!("a template merchant with {per_merchant} paid checkouts...");
    let (template, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let ids = create(&addr, &key, per_merchant as usize)?;
    pay(&addr, &key, &ids)?;
    drop(server);
    let made = Instant::now();
    let sql = |statement: &str| {
        let clone = util::root().join("tools/scale/clone.sql");
        util::run(
            Command::new("psql").args([url, "-qAt", "-v", "ON_ERROR_STOP=1", "-f"]).arg(&clone).args(["-c", statement]),
        )
    };
    let have: u64 = util::output(
        Command::new("psql")
            .args([url, "-qAt", "-c"])
            .arg(format!("SELECT count(*) FROM events WHERE merchant_id = '{template}'")),
    )?
    .trim()
    .parse()
    .map_err(|_| "no event count")?;
    let times = (per_merchant * events).saturating_sub(have) / have.max(1);
    if times > 0 {
        sql(&format!("SELECT pg_temp.multiply_events('{template}', {times})"))?;
    }
    let mut first = 1;
    while first < merchants {
        let copies = CHUNK.min(merchants - first);
        sql(&format!("SELECT pg_temp.clone_merchant('{template}', {first}, {copies})"))?;
        first += copies;
        eprintln!("  {first} of {merchants} merchants after {:.0} s", made.elapsed().as_secs_f64());
    }
    util::run(Command::new("psql").args([url, "-qAt", "-c", "VACUUM ANALYZE"]))?;
    // The bulk writes' dirty pages are flushed before measuring, not by a checkpoint during it.
    util::run(Command::new("psql").args([url, "-qAt", "-c", "CHECKPOINT"]))?;
    let making = made.elapsed().as_secs_f64();
    let sizes = sizes(url)?;

    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    eprintln!("the phases on the large database...");
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let large = phases(&addr, &key, seconds)?;
    drop(server);
    report(&small, &large, making, &sizes);
    Ok(())
}

fn post(addr: &str, key: &str, path: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn get(addr: &str, key: &str, path: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n").into_bytes()
}

/// An `on_body` that keeps the `invoiceId` (or `id`) of each answer.
fn collect(field: &'static str) -> (OnBody, Arc<Mutex<Vec<String>>>) {
    let ids = Arc::new(Mutex::new(Vec::new()));
    let sink = ids.clone();
    let on: OnBody = Arc::new(move |b: &[u8]| {
        if let Some(id) = util::json_field(&String::from_utf8_lossy(b), field)
            && let Ok(mut all) = sink.lock()
        {
            all.push(id);
        }
    });
    (on, ids)
}

fn taken(ids: &Arc<Mutex<Vec<String>>>) -> Result<Vec<String>, String> {
    Ok(std::mem::take(&mut *ids.lock().map_err(|_| "poisoned")?))
}

/// `count` checkouts of the template; answers their ids.
fn create(addr: &str, key: &str, count: usize) -> Result<Vec<String>, String> {
    let (a, k) = (addr.to_owned(), key.to_owned());
    let make: MakeRequest = Arc::new(move |_, _| {
        post(&a, &k, "/v1/checkout-sessions", r#"{"amount":"25.00","customerEmail":"ada@example.com"}"#)
    });
    let (on, ids) = collect("id");
    let phase = load_count("template checkouts", addr, CONNECTIONS, count, make, 201, on)?;
    if phase.errors > 0 {
        return Err(format!("{} template checkouts failed", phase.errors));
    }
    taken(&ids)
}

/// Pays each checkout in full (test mode).
fn pay(addr: &str, key: &str, ids: &[String]) -> Result<(), String> {
    let (a, k, ids) = (addr.to_owned(), key.to_owned(), Arc::new(ids.to_vec()));
    let n = ids.len();
    let make: MakeRequest =
        Arc::new(move |_, i| post(&a, &k, &format!("/v1/test-helpers/checkout-sessions/{}/payments", ids[i]), "{}"));
    let phase = load_count("template payments", addr, CONNECTIONS, n, make, 201, Arc::new(|_: &[u8]| {}))?;
    if phase.errors > 0 {
        return Err(format!("{} template payments failed", phase.errors));
    }
    Ok(())
}

/// Creations, reads of what was created, and first pages of the invoice list.
fn phases(addr: &str, key: &str, seconds: u64) -> Result<Vec<Phase>, String> {
    let (a, k) = (addr.to_owned(), key.to_owned());
    let make: MakeRequest = Arc::new(move |_, _| post(&a, &k, "/v1/checkout-sessions", r#"{"amount":"25.00"}"#));
    let (on, ids) = collect("invoiceId");
    let creations = load("POST /v1/checkout-sessions", addr, CONNECTIONS, seconds, make, 201, on)?;
    let ids = Arc::new(taken(&ids)?);
    if ids.is_empty() {
        return Err("no checkout was created".into());
    }
    let (a, k, list) = (addr.to_owned(), key.to_owned(), ids.clone());
    let make: MakeRequest =
        Arc::new(move |c, i| get(&a, &k, &format!("/v1/invoices/{}", list[(c * 7919 + i) % list.len()])));
    let reads = load("GET /v1/invoices/{id}", addr, CONNECTIONS, seconds, make, 200, Arc::new(|_: &[u8]| {}))?;
    let (a, k) = (addr.to_owned(), key.to_owned());
    let make: MakeRequest = Arc::new(move |_, _| get(&a, &k, "/v1/invoices?limit=20"));
    let lists = load("GET /v1/invoices?limit=20", addr, CONNECTIONS, seconds, make, 200, Arc::new(|_: &[u8]| {}))?;
    let phases = vec![creations, reads, lists];
    if let Some(p) = phases.iter().find(|p| p.errors > 0) {
        return Err(format!("{}: {} errors", p.name, p.errors));
    }
    Ok(phases)
}

/// Rows and bytes on disk (with indexes and TOAST) of the tables that grow with the years.
fn sizes(url: &str) -> Result<Vec<(String, u64, u64)>, String> {
    let mut out = Vec::new();
    for table in ["invoices", "checkout_sessions", "payments", "events", "webhook_deliveries", "emails"] {
        let line = util::output(
            Command::new("psql")
                .args([url, "-qAt", "-F", " ", "-c"])
                // A partitioned table (events, deliveries: one partition a month) is the sum of
                // its partitions.
                .arg(format!(
                    "SELECT count(*), COALESCE((SELECT sum(pg_total_relation_size(relid))::bigint \
                     FROM pg_partition_tree('{table}')), pg_total_relation_size('{table}')) FROM {table}"
                )),
        )?;
        let mut it = line.split_whitespace().map(str::parse::<u64>);
        match (it.next(), it.next()) {
            (Some(Ok(rows)), Some(Ok(bytes))) => out.push((table.to_owned(), rows, bytes)),
            _ => return Err(format!("{table}: unexpected size line {line:?}")),
        }
    }
    Ok(out)
}

fn report(small: &[Phase], large: &[Phase], making: f64, sizes: &[(String, u64, u64)]) {
    println!();
    println!("Data made in {making:.0} s (copies in SQL, then VACUUM ANALYZE).");
    println!();
    println!("| table | rows | bytes on disk | bytes per row |");
    println!("| --- | --- | --- | --- |");
    for (table, rows, bytes) in sizes.iter().filter(|(_, rows, _)| *rows > 0) {
        println!(
            "| {table} | {rows} | {:.2} GiB | {:.0} |",
            *bytes as f64 / 1_073_741_824.0,
            *bytes as f64 / (*rows).max(1) as f64
        );
    }
    println!();
    println!(
        "| phase ({CONNECTIONS} connections) | small: req/s | p50 ms | p99 ms | large: req/s | p50 ms | p99 ms | p99 large / small |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- |");
    for (s, l) in small.iter().zip(large) {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {:.0} | {:.1} | {:.1} | {:.2} |",
            s.name,
            s.rps(),
            s.percentile(0.5),
            s.percentile(0.99),
            l.rps(),
            l.percentile(0.5),
            l.percentile(0.99),
            l.percentile(0.99) / s.percentile(0.99).max(0.001)
        );
    }
}
