// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench flash-sale [--customers N] [--connections C] [--seconds S]`: one merchant's
//! flash sale on the release binary (docs/benchmarks.md).
//!
//! 1. Numbered creations of that one merchant: `POST /v1/checkout-sessions` with an
//!    Idempotency-Key (the transactional path: claim, invoice, checkout, number and the key's
//!    mark in one transaction) from 16 connections for S seconds (10).
//! 2. The sale: N customers (2,000) submit one reusable payment link at once, each from an
//!    address of its own (`X-Forwarded-For` through a trusted proxy, as behind the deployment's
//!    proxy), from C connections (64): every submission must get its checkout.
//! 3. Every checkout is paid (the test-mode payment runs the same verification and crediting as
//!    live mode) from 16 connections: creditings per second.
//!
//! Then the database is asked: one checkout per submission, each paid once, and the merchant's
//! invoice numbers without a gap.

use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::bench::client::{MakeRequest, OnBody, Phase, connect, cpu_seconds, exchange, load, load_count};
use crate::util;

pub fn run(args: &[String]) -> Result<(), String> {
    let [customers, connections, seconds] =
        util::count_options(args, [("--customers", 2000), ("--connections", 64), ("--seconds", 10)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_flash_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, usize::try_from(customers).unwrap_or(2000), (connections, seconds));
    util::drop_database(&db);
    result
}

fn post(addr: &str, path: &str, headers: &str, body: &str) -> Vec<u8> {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn sql(url: &str, query: &str) -> Result<String, String> {
    Ok(util::output(Command::new("psql").args([url, "-qAt", "-c", query]))?.trim().to_owned())
}

fn measure(
    binary: &std::path::Path,
    url: &str,
    customers: usize,
    (connections, seconds): (u64, u64),
) -> Result<(), String> {
    let (merchant, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let env = [("RUST_LOG", "warn"), ("STABLEPAY_TRUSTED_PROXIES", "127.0.0.1")];
    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    let auth = format!("Authorization: Bearer {key}\r\n");
    let link = r#"{"title":"Flash sale","amountType":"fixed","amount":"25"}"#;
    let (status, answer) = exchange(&mut connect(&addr)?, &post(&addr, "/v1/payment-links", &auth, link))?;
    let answer = String::from_utf8_lossy(&answer).into_owned();
    if status != 201 {
        return Err(format!("link creation answered {status}: {answer}"));
    }
    let link_id = util::json_field(&answer, "id").ok_or("no link id")?;
    let public_id = util::json_field(&answer, "publicId").ok_or("no publicId")?;

    let (a, h) = (addr.clone(), auth.clone());
    let create: MakeRequest = Arc::new(move |c, i| {
        post(&a, "/v1/checkout-sessions", &format!("{h}Idempotency-Key: create-{c}-{i}\r\n"), r#"{"amount":"2.00"}"#)
    });
    let noop: OnBody = Arc::new(|_| {});
    let pid = server.0.id();
    let mut server_cpu = Vec::new();
    let created = timed(pid, &mut server_cpu, || {
        load("POST /v1/checkout-sessions, keyed (numbered creations)", &addr, 16, seconds, create, 201, noop.clone())
    })?;

    let sessions = Arc::new(Mutex::new(Vec::with_capacity(customers)));
    let (a, kept) = (addr.clone(), sessions.clone());
    let submit: MakeRequest = Arc::new(move |_, i| {
        let client =
            format!("X-Forwarded-For: 10.{}.{}.{}\r\nIdempotency-Key: sale-{i}\r\n", i >> 16, (i >> 8) & 255, i & 255);
        post(&a, &format!("/v1/public/payment-links/{public_id}/checkout"), &client, r#"{"version":1}"#)
    });
    let keep: OnBody = Arc::new(move |body| {
        if let Some(id) = util::json_field(&String::from_utf8_lossy(body), "checkoutSessionId")
            && let Ok(mut s) = kept.lock()
        {
            s.push(id);
        }
    });
    let sale = timed(pid, &mut server_cpu, || {
        load_count(
            "POST /v1/public/payment-links/{publicId}/checkout",
            &addr,
            connections as usize,
            customers,
            submit,
            201,
            keep,
        )
    })?;

    let ids: Arc<Vec<String>> = Arc::new(std::mem::take(&mut *sessions.lock().map_err(|_| "poisoned")?));
    let (a, h, list) = (addr.clone(), auth.clone(), ids.clone());
    let pay: MakeRequest = Arc::new(move |_, i| {
        let id = list.get(i).map_or("missing", String::as_str);
        post(&a, &format!("/v1/test-helpers/checkout-sessions/{id}/payments"), &h, "{}")
    });
    let paid = timed(pid, &mut server_cpu, || {
        load_count(
            "POST /v1/test-helpers/checkout-sessions/{id}/payments (creditings)",
            &addr,
            16,
            ids.len(),
            pay,
            201,
            noop,
        )
    })?;
    drop(server);

    report(&[&created, &sale, &paid], &server_cpu, (customers, connections));
    check(url, (&merchant, &link_id), customers, &ids)
}

fn report(phases: &[&Phase], server_cpu: &[f64], (customers, connections): (usize, u64)) {
    println!();
    println!(
        "| phase (one merchant; the sale: {customers} customers over {connections} connections) | requests | req/s | p50 ms | p99 ms | errors | server CPU ms per request |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for (p, cpu) in phases.iter().zip(server_cpu) {
        println!(
            "| {} | {} | {:.0} | {:.1} | {:.1} | {} | {:.2} |",
            p.name,
            p.requests,
            p.rps(),
            p.percentile(0.5),
            p.percentile(0.99),
            p.errors,
            cpu * 1000.0 / p.requests.max(1) as f64
        );
    }
}

/// Runs `phase`, noting the server process's CPU seconds it took (the rest of the machine's two
/// cores go to PostgreSQL and the load generator).
fn timed(pid: u32, cpu: &mut Vec<f64>, phase: impl FnOnce() -> Result<Phase, String>) -> Result<Phase, String> {
    let before = cpu_seconds(pid).unwrap_or(0.0);
    let result = phase();
    cpu.push(cpu_seconds(pid).unwrap_or(0.0) - before);
    result
}

/// One checkout per submission, each paid once, the numbers without a gap.
fn check(url: &str, (merchant, link): (&str, &str), customers: usize, ids: &[String]) -> Result<(), String> {
    let distinct: std::collections::BTreeSet<&String> = ids.iter().collect();
    let checkouts = sql(url, &format!("SELECT count(*) FROM payment_link_invoices WHERE link_id = '{link}'"))?;
    let paid = sql(
        url,
        &format!(
            "SELECT count(DISTINCT i.id) || ' ' || count(p.id) FROM payment_link_invoices l \
             JOIN invoices i ON i.id = l.invoice_id JOIN payments p ON p.invoice_id = i.id \
             WHERE l.link_id = '{link}' AND i.status = 'paid'"
        ),
    )?;
    let numbers = sql(
        url,
        &format!(
            "SELECT count(*) || ' ' || min(n) || ' ' || max(n) FROM (SELECT substring(number from '[0-9]+$')::bigint n \
             FROM invoices WHERE merchant_id = '{merchant}' AND mode = 'test' AND number IS NOT NULL) x"
        ),
    )?;
    println!();
    println!(
        "submissions answered with a checkout: {} ({} distinct); checkouts of the link: {checkouts}",
        ids.len(),
        distinct.len()
    );
    println!("invoices of the link paid, and their payments: {paid}");
    println!("the merchant's invoice numbers (count, first, last): {numbers}");
    let n: Vec<u64> = numbers.split(' ').filter_map(|x| x.parse().ok()).collect();
    let expected = format!("{customers} {customers}");
    if ids.len() != customers || distinct.len() != customers || checkouts != customers.to_string() {
        return Err("a submission did not get exactly one checkout".into());
    }
    if paid != expected {
        return Err(format!("not every checkout was credited exactly once: {paid}"));
    }
    match n.as_slice() {
        [count, 1, last] if count == last => Ok(()),
        _ => Err(format!("the invoice numbers have a gap: {numbers}")),
    }
}
