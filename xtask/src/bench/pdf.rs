// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench pdf [--seconds N]`: invoice PDFs from the release binary. Creates one
//! issued itemized invoice (five lines, discount, a tax, a customer, accents and CJK text),
//! then downloads its PDF from one connection (time per PDF) and from eight at once, and prints
//! the rows of docs/benchmarks.md with the binary's size and what the PDF renderer adds to it
//! (the embedded fonts, and the renderer's code as `nm` sizes its symbols).

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::bench::client::{MakeRequest, OnBody, Phase, connect, exchange, load};
use crate::util;

/// The invoice the benchmark renders: five lines, a discount, a tax, a customer, accents and
/// CJK text.
const INVOICE: &str = r#"{"lines":[
    {"description":"Consulting — crème brûlée recipes","quantity":"2","unitAmount":"50"},
    {"description":"東京 office visit","quantity":"1.5","unitAmount":"20.25"},
    {"description":"Espresso machine service","quantity":"1","unitAmount":"35.5"},
    {"description":"Beans, 12 kg","quantity":"12","unitAmount":"18.4"},
    {"description":"Delivery","quantity":"1","unitAmount":"9"}],
    "customer":{"name":"Zoë Ångström","company":"Analytical Engines Ltd","email":"zoe@example.com","billingAddress":"12 St James's Square\nLondon"},
    "discount":{"type":"percentage","percentage":"10"},
    "taxes":[{"label":"VAT","amount":"40","jurisdiction":"UK","registrationReference":"GB123456789"}],
    "paymentTerms":"Net 30","memo":"Thank you.","footer":"Café Lumière SARL","issue":true}"#;

/// The crates of the renderer's code, by the symbols `nm` names.
const RENDERER_CRATES: [&str; 8] =
    ["krilla", "skrifa", "read_fonts", "rustybuzz", "subsetter", "pdf_writer", "stablepay_pdf", "ttf_parser"];

pub fn run(args: &[String]) -> Result<(), String> {
    let [seconds] = util::count_options(args, [("--seconds", 10)])?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_bench_pdf_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let result = measure(&binary, &url, seconds);
    util::drop_database(&db);
    let (one, eight, size) = result?;
    print(&binary, &one, &eight, size)
}

/// The PDF's time from one connection and from eight, and its size.
fn measure(binary: &std::path::Path, url: &str, seconds: u64) -> Result<(Phase, Phase, usize), String> {
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let (server, base) = util::serve(binary, url, &[("RUST_LOG", "warn"), ("STABLEPAY_HTTP_WORKERS", "2")])?;
    let addr = base.trim_start_matches("http://").to_owned();
    let body = INVOICE.replace('\n', "");
    let request = format!(
        "POST /v1/invoices HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = exchange(&mut connect(&addr)?, request.as_bytes())?;
    if status != 201 {
        return Err(format!("invoice creation answered {status}: {}", String::from_utf8_lossy(&answer)));
    }
    let id = util::json_field(&String::from_utf8_lossy(&answer), "id").ok_or("no invoice id")?;
    let target = addr.clone();
    let get: MakeRequest = Arc::new(move |_, _| {
        format!("GET /v1/invoices/{id}/pdf HTTP/1.1\r\nHost: {target}\r\nAuthorization: Bearer {key}\r\n\r\n")
            .into_bytes()
    });
    let size = Arc::new(AtomicUsize::new(0));
    let sink = size.clone();
    let on_body: OnBody = Arc::new(move |b: &[u8]| sink.store(b.len(), Ordering::Relaxed));
    load("warm-up", &addr, 2, 2, get.clone(), 200, on_body.clone())?;
    let one = load("GET /v1/invoices/{id}/pdf, 1 connection", &addr, 1, seconds, get.clone(), 200, on_body.clone())?;
    let eight = load("GET /v1/invoices/{id}/pdf, 8 connections", &addr, 8, seconds, get, 200, on_body)?;
    drop(server);
    Ok((one, eight, size.load(Ordering::Relaxed)))
}

/// The rows of docs/benchmarks.md, with the binary's size and what the renderer adds to it.
fn print(binary: &std::path::Path, one: &Phase, eight: &Phase, size: usize) -> Result<(), String> {
    let binary_mib = std::fs::metadata(binary).map_err(|e| e.to_string())?.len() as f64 / 1_048_576.0;
    let fonts: u64 = ["DejaVuSans.ttf", "DejaVuSans-Bold.ttf", "DroidSansFallbackFull.ttf"]
        .iter()
        .filter_map(|f| std::fs::metadata(util::root().join("crates/pdf/fonts").join(f)).ok())
        .map(|m| m.len())
        .sum();
    let nm = util::output(Command::new("nm").args(["--size-sort", "--print-size", "-C"]).arg(binary))?;
    let code: u64 = nm
        .lines()
        .filter(|l| RENDERER_CRATES.iter().any(|k| l.contains(k)))
        .filter_map(|l| u64::from_str_radix(l.split_whitespace().nth(1)?, 16).ok())
        .sum();
    println!();
    println!("PDF size: {size} bytes");
    println!("| operation | PDFs/s | p50 ms | p99 ms | errors |");
    println!("| --- | --- | --- | --- | --- |");
    for p in [one, eight] {
        println!(
            "| {} | {:.0} | {:.1} | {:.1} | {} |",
            p.name,
            p.rps(),
            p.percentile(0.5),
            p.percentile(0.99),
            p.errors
        );
    }
    println!();
    println!(
        "binary: {binary_mib:.1} MiB; the renderer adds its fonts, {:.1} MiB, and its code, about {:.1} MiB (nm symbol sizes of krilla, skrifa, read-fonts, rustybuzz, subsetter, pdf-writer, stablepay_pdf)",
        fonts as f64 / 1_048_576.0,
        code as f64 / 1_048_576.0
    );
    Ok(())
}
