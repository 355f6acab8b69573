// Benchmark statistics (rates, percentiles) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench [--seconds N] [--connections N] [--workers N] [--pool N]` (pool defaults
//! to the number of connections): load benchmark of the release binary
//! against a local PostgreSQL, next to PostgreSQL's own ceiling measured in the same run.
//!
//! 1. Builds `stablepay` in release mode, creates a fresh database, a merchant and a secret
//!    test key, and starts `stablepay serve`.
//! 2. Runs `xtask/bench/pgbench-ceiling/ceiling.sh` (PostgreSQL alone on one checkout
//!    creation's write set and one invoice read).
//! 3. Drives `POST /v1/checkout-sessions`, then `GET /v1/invoices/{id}` over the invoices it
//!    created, from N keep-alive connections (a small closed-loop load generator: each
//!    connection sends its next request when the previous answer arrived).
//! 4. Prints throughput, p50/p99 latency, errors, the server's peak memory, and the ratios to
//!    the ceiling, as the Markdown rows of docs/benchmarks.md.
//!
//! 5. Unless `--api-only`, then runs the webhook delivery and live verification benchmarks
//!    (`bench_webhooks.rs`, `bench_chain.rs`; alone: `cargo xtask bench webhooks|chain`).
//!    `cargo xtask bench pdf` measures invoice PDFs (`bench_pdf.rs`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::bench_replay as replay;
use crate::util;

struct Options {
    seconds: u64,
    connections: usize,
    workers: usize,
    pool: Option<usize>,
    /// Only the API phases (not the webhook and verification benchmarks after them).
    api_only: bool,
    /// Rounds of the built-in generator and wrk alternated per operation, after the phases.
    alternate: usize,
}

fn options(args: &[String]) -> Result<Options, String> {
    let mut o = Options { seconds: 15, connections: 32, workers: 2, pool: None, api_only: false, alternate: 0 };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--api-only" {
            o.api_only = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        match a.as_str() {
            "--seconds" => o.seconds = value.parse().map_err(|_| "--seconds takes a number")?,
            "--connections" => o.connections = value.parse().map_err(|_| "--connections takes a number")?,
            "--workers" => o.workers = value.parse().map_err(|_| "--workers takes a number")?,
            "--pool" => o.pool = Some(value.parse().map_err(|_| "--pool takes a number")?),
            "--alternate" => o.alternate = value.parse().map_err(|_| "--alternate takes a number")?,
            other => return Err(format!("unknown option {other}")),
        }
    }
    Ok(o)
}

/// Called with each successful answer's body.
pub(crate) type OnBody = Arc<dyn Fn(&[u8]) + Send + Sync>;
/// Builds request `i` of connection `c`.
pub(crate) type MakeRequest = Arc<dyn Fn(usize, usize) -> Vec<u8> + Send + Sync>;

/// One measured phase.
pub(crate) struct Phase {
    pub(crate) name: &'static str,
    pub(crate) requests: usize,
    pub(crate) errors: usize,
    pub(crate) elapsed: Duration,
    pub(crate) latencies_us: Vec<u64>,
}

impl Phase {
    pub(crate) fn rps(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn percentile(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies_us, p)
    }
}

/// The `p` percentile in milliseconds of sorted latencies in microseconds (0 when empty).
pub(crate) fn percentile_ms(sorted_us: &[u64], p: f64) -> f64 {
    if sorted_us.is_empty() {
        return 0.0;
    }
    let idx = ((sorted_us.len() as f64 - 1.0) * p).round() as usize;
    sorted_us[idx] as f64 / 1000.0
}

/// Sends one request on a keep-alive connection and reads the whole answer; returns the status
/// and body.
pub(crate) fn exchange(stream: &mut BufReader<TcpStream>, request: &[u8]) -> Result<(u16, Vec<u8>), String> {
    stream.get_mut().write_all(request).map_err(|e| e.to_string())?;
    let mut line = String::new();
    stream.read_line(&mut line).map_err(|e| e.to_string())?;
    let status: u16 = line.split_whitespace().nth(1).and_then(|s| s.parse().ok()).ok_or("bad status line")?;
    let mut length = 0usize;
    loop {
        line.clear();
        stream.read_line(&mut line).map_err(|e| e.to_string())?;
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().map_err(|_| "bad length")?;
        }
    }
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).map_err(|e| e.to_string())?;
    Ok((status, body))
}

pub(crate) fn connect(addr: &str) -> Result<BufReader<TcpStream>, String> {
    let s = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    s.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(BufReader::new(s))
}

/// Runs `make_request(connection, i)` from `connections` threads for `seconds`.
pub(crate) fn load(
    name: &'static str,
    addr: &str,
    connections: usize,
    seconds: u64,
    make_request: MakeRequest,
    expect: u16,
    on_body: OnBody,
) -> Result<Phase, String> {
    let errors = Arc::new(AtomicUsize::new(0));
    let all = Arc::new(Mutex::new(Vec::new()));
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let mut threads = Vec::new();
    for c in 0..connections {
        let addr = addr.to_owned();
        let errors = errors.clone();
        let all = all.clone();
        let make_request = make_request.clone();
        let on_body = on_body.clone();
        threads.push(std::thread::spawn(move || {
            let mut lat = Vec::with_capacity(100_000);
            let Ok(mut conn) = connect(&addr) else {
                errors.fetch_add(1, Ordering::Relaxed);
                return;
            };
            let mut i = 0;
            while Instant::now() < deadline {
                let req = make_request(c, i);
                let t = Instant::now();
                match exchange(&mut conn, &req) {
                    Ok((status, body)) if status == expect => {
                        lat.push(u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX));
                        on_body(&body);
                    }
                    Ok(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => {
                        errors.fetch_add(1, Ordering::Relaxed);
                        match connect(&addr) {
                            Ok(c) => conn = c,
                            Err(_) => break,
                        }
                    }
                }
                i += 1;
            }
            if let Ok(mut a) = all.lock() {
                a.extend(lat);
            }
        }));
    }
    for t in threads {
        let _ = t.join();
    }
    let elapsed = start.elapsed();
    let mut latencies_us = std::mem::take(&mut *all.lock().map_err(|_| "poisoned")?);
    latencies_us.sort_unstable();
    Ok(Phase { name, requests: latencies_us.len(), errors: errors.load(Ordering::Relaxed), elapsed, latencies_us })
}

/// The process's resident memory now and at its peak, in MiB.
pub(crate) fn peak_rss_mib(pid: u32) -> Option<(f64, f64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb = |key: &str| -> Option<f64> {
        status.lines().find(|l| l.starts_with(key))?.split_whitespace().nth(1)?.parse::<f64>().ok()
    };
    Some((kb("VmRSS:")? / 1024.0, kb("VmHWM:")? / 1024.0))
}

fn ceiling(port: u16, seconds: u64) -> Result<(f64, f64), String> {
    let script = util::root().join("xtask/bench/pgbench-ceiling/ceiling.sh");
    let out =
        util::output(Command::new("bash").arg(&script).args(["127.0.0.1", &port.to_string(), &seconds.to_string()]))?;
    let field = |k: &str| -> Option<f64> {
        out.split_whitespace().find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
    };
    Ok((field("write_tps").ok_or("no write_tps")?, field("read_tps_prepared").ok_or("no read_tps")?))
}

pub fn run(args: &[String]) -> Result<(), String> {
    match args.first().map(String::as_str) {
        Some("chain") => return crate::bench_chain::run(&args[1..]),
        Some("webhooks") => return crate::bench_webhooks::run(&args[1..]),
        Some("pdf") => return crate::bench_pdf::run(&args[1..]),
        Some("mixed") => return crate::bench_mixed::run(&args[1..]),
        _ => {}
    }
    let o = options(args)?;
    let binary = util::release_binary()?;
    eprintln!("starting a private PostgreSQL cluster with pg_stat_statements...");
    let pg = replay::PrivatePg::start()?;
    let db = "stablepay_bench";
    pg.query("postgres", &format!("CREATE DATABASE {db}"))?;
    let url = pg.url(db);
    util::run(Command::new(&binary).arg("migrate").env("DATABASE_URL", &url).env("RUST_LOG", "warn"))?;
    let result = (|| -> Result<(), String> {
        let (_, key) = util::merchant_and_key(&binary, &url, "test", "secret")?;
        let pool_size = o.pool.unwrap_or(o.connections);
        let pool = pool_size.to_string();
        let workers = o.workers.to_string();
        let (server, base) = util::serve(
            &binary,
            &url,
            &[
                ("STABLEPAY_DB_POOL_SIZE", pool.as_str()),
                ("STABLEPAY_HTTP_WORKERS", workers.as_str()),
                ("RUST_LOG", "warn"),
            ],
        )?;
        let pid = server.0.id();
        let addr = base.trim_start_matches("http://").to_owned();

        eprintln!("measuring PostgreSQL's ceiling ({}s per phase)...", o.seconds);
        let (write_ceiling, read_ceiling) = ceiling(pg.port, o.seconds)?;

        let create_body = br#"{"amount":"10.50","externalReference":"bench"}"#;
        let create_req = format!(
            "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            create_body.len()
        );
        let mut create_bytes = create_req.into_bytes();
        create_bytes.extend_from_slice(create_body);
        let invoice_ids = Arc::new(Mutex::new(Vec::<String>::new()));
        let ids_sink = invoice_ids.clone();
        let collect: OnBody = Arc::new(move |body: &[u8]| {
            let text = String::from_utf8_lossy(body);
            if let Some(id) = util::json_field(&text, "invoiceId")
                && let Ok(mut ids) = ids_sink.lock()
                && ids.len() < 100_000
            {
                ids.push(id);
            }
        });
        eprintln!("warming up...");
        let cb = create_bytes.clone();
        load("warm-up", &addr, o.connections, 3, Arc::new(move |_, _| cb.clone()), 201, collect.clone())?;
        eprintln!("capturing the statements of one creation and one read...");
        let one = |request: &[u8], expect: u16| -> Result<(), String> {
            let mut conn = connect(&addr)?;
            match exchange(&mut conn, request)? {
                (status, _) if status == expect => Ok(()),
                (status, body) => Err(format!("capture: {status} {}", String::from_utf8_lossy(&body))),
            }
        };
        // Two captures of the same request must show the same statements; the worker's own
        // polling can land inside a capture's window now and then, so a pair that differs is
        // taken again (a few times at most).
        let pair = |request: &[u8], expect: u16| -> Result<[Vec<replay::Statement>; 2], String> {
            let mut last = String::new();
            for _ in 0..5 {
                let first = replay::capture(&pg, db, &mut || one(request, expect))?;
                let second = replay::capture(&pg, db, &mut || one(request, expect))?;
                if replay::same_statements(&first, &second) {
                    return Ok([first, second]);
                }
                last = format!("{} and {} statements", first.len(), second.len());
            }
            Err(format!("two captures of one request never sent the same statements (last: {last})"))
        };
        let create_captures = pair(&create_bytes, 201)?;
        let read_id = invoice_ids.lock().map_err(|_| "poisoned")?.first().cloned().ok_or("no invoice to read")?;
        let read_one =
            format!("GET /v1/invoices/{read_id} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n");
        let read_captures = pair(read_one.as_bytes(), 200)?;
        let types = |sql: &str| replay::parameter_types(&pg, db, sql);
        let create_script = replay::script("creation", &create_captures[0], &create_captures[1], &types)?;
        let read_script = replay::script("read", &read_captures[0], &read_captures[1], &types)?;
        replay::reset_statements(&pg)?;
        eprintln!("POST /v1/checkout-sessions for {}s...", o.seconds);
        let cb = create_bytes.clone();
        let create = load(
            "POST /v1/checkout-sessions",
            &addr,
            o.connections,
            o.seconds,
            Arc::new(move |_, _| cb.clone()),
            201,
            collect,
        )?;

        let create_sent = replay::per_request(&replay::statements(&pg, db)?, &create_captures[0], create.requests);
        // Each phase again with wrk, an established generator, right after the built-in one
        // (the same database state, give or take its own rows): the two must agree
        // (docs/benchmarks.md).
        let has_wrk = which("wrk");
        let base = format!("http://{addr}");
        let w_create = if has_wrk {
            eprintln!("the same with wrk...");
            Some(wrk(&base, o.connections, o.seconds, &wrk_create_script(&key, create_body))?)
        } else {
            eprintln!("wrk is not installed (apt-get install wrk): only the built-in generator runs");
            None
        };
        replay::reset_statements(&pg)?;
        let ids: Arc<Vec<String>> = Arc::new(invoice_ids.lock().map_err(|_| "poisoned")?.clone());
        if ids.is_empty() {
            return Err("no invoices were created".into());
        }
        let key2 = key.clone();
        let addr2 = addr.clone();
        // wrk rotates over 5,000 of the invoices, spread over all of them like the built-in reads.
        let step = (ids.len() / 5000).max(1);
        let sample: Vec<String> = ids.iter().step_by(step).take(5000).cloned().collect();
        let make_get: MakeRequest = Arc::new(move |c, i| {
            let id = &ids[(c * 7919 + i * 104_729) % ids.len()];
            format!("GET /v1/invoices/{id} HTTP/1.1\r\nHost: {addr2}\r\nAuthorization: Bearer {key2}\r\n\r\n")
                .into_bytes()
        });
        eprintln!("GET /v1/invoices/{{id}} for {}s...", o.seconds);
        let read =
            load("GET /v1/invoices/{id}", &addr, o.connections, o.seconds, make_get.clone(), 200, Arc::new(|_| {}))?;
        let read_sent = replay::per_request(&replay::statements(&pg, db)?, &read_captures[0], read.requests);
        let w_read = if has_wrk {
            eprintln!("the same with wrk...");
            Some(wrk(&base, o.connections, o.seconds, &wrk_read_script(&key, &sample))?)
        } else {
            None
        };
        let wrk_rows = w_create.zip(w_read);
        // Machine noise between consecutive runs is larger than the generators' difference:
        // rounds of one and the other, alternated, compare their medians.
        let mut alternations = Vec::new();
        if o.alternate > 0 && has_wrk {
            eprintln!("alternating the two generators, {} rounds per operation...", o.alternate);
            let cb = create_bytes.clone();
            let make_create: MakeRequest = Arc::new(move |_, _| cb.clone());
            let rounds = [
                ("POST /v1/checkout-sessions", make_create, 201, wrk_create_script(&key, create_body)),
                ("GET /v1/invoices/{id}", make_get, 200, wrk_read_script(&key, &sample)),
            ];
            for (name, make, expect, script) in rounds {
                let (mut built_in, mut by_wrk) = (Vec::new(), Vec::new());
                for _ in 0..o.alternate {
                    built_in.push(
                        load(name, &addr, o.connections, o.seconds, make.clone(), expect, Arc::new(|_| {}))?.rps(),
                    );
                    by_wrk.push(wrk(&base, o.connections, o.seconds, &script)?.rps);
                }
                alternations.push((name, built_in, by_wrk));
            }
        }
        let (rss, hwm) = peak_rss_mib(pid).unwrap_or((0.0, 0.0));
        eprintln!("replaying the captured statements with pgbench ({}s per operation)...", o.seconds);
        let create_replay = replay::replay(&pg, db, &create_script, o.connections, o.seconds)?;
        let read_replay = replay::replay(&pg, db, &read_script, o.connections, o.seconds)?;
        drop(server);

        println!();
        println!(
            "connections: {}, seconds per phase: {}, server: {} HTTP workers, pool {}",
            o.connections, o.seconds, o.workers, pool_size
        );
        println!("PostgreSQL ceiling: write {write_ceiling:.0}/s, read {read_ceiling:.0}/s (ceiling.sh, 32 clients)");
        println!();
        println!("| operation | requests/s | p50 ms | p99 ms | errors | ceiling/s | ratio |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        for (phase, ceil) in [(&create, write_ceiling), (&read, read_ceiling)] {
            println!(
                "| {} | {:.0} | {:.2} | {:.2} | {} | {:.0} | {:.0} % |",
                phase.name,
                phase.rps(),
                phase.percentile(0.50),
                phase.percentile(0.99),
                phase.errors,
                ceil,
                100.0 * phase.rps() / ceil
            );
        }
        println!();
        println!(
            "Ceilings per operation: the API's own statements (captured from its session, checked with pg_stat_statements) replayed by pgbench, {} clients, prepared:",
            o.connections
        );
        println!();
        println!(
            "| operation | API requests/s | replay/s | replay latency ms | ratio | statements per request (pg_stat_statements) |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for (phase, r, sent) in [(&create, &create_replay, &create_sent), (&read, &read_replay, &read_sent)] {
            let statements = sent.iter().map(|(q, n)| format!("{n:.2} × `{q}`")).collect::<Vec<_>>().join("; ");
            println!(
                "| {} | {:.0} | {:.0} | {:.2} | {:.0} % | {} |",
                phase.name,
                phase.rps(),
                r.tps,
                r.latency_ms,
                100.0 * phase.rps() / r.tps,
                statements
            );
        }
        if let Some((wc, wr)) = wrk_rows {
            println!();
            println!("| generator | operation | requests/s | p50 ms | p99 ms | errors | vs built-in |");
            println!("| --- | --- | --- | --- | --- | --- | --- |");
            for (w, phase) in [(&wc, &create), (&wr, &read)] {
                println!(
                    "| wrk | {} | {:.0} | {:.2} | {:.2} | {} | {:+.1} % |",
                    phase.name,
                    w.rps,
                    w.p50_ms,
                    w.p99_ms,
                    w.errors,
                    100.0 * (w.rps - phase.rps()) / phase.rps()
                );
            }
        }
        if !alternations.is_empty() {
            println!();
            println!(
                "| operation | built-in, each round /s | wrk, each round /s | median built-in | median wrk | wrk vs built-in |"
            );
            println!("| --- | --- | --- | --- | --- | --- |");
            for (name, built_in, by_wrk) in &alternations {
                let list = |v: &[f64]| v.iter().map(|x| format!("{x:.0}")).collect::<Vec<_>>().join(", ");
                let (b, w) = (median(built_in), median(by_wrk));
                println!(
                    "| {name} | {} | {} | {b:.0} | {w:.0} | {:+.1} % |",
                    list(built_in),
                    list(by_wrk),
                    100.0 * (w - b) / b
                );
            }
        }
        println!();
        println!("server memory: RSS {rss:.1} MiB at the end, peak {hwm:.1} MiB");
        Ok(())
    })();
    drop(pg);
    result?;
    if !o.api_only {
        // The same run measures webhook delivery and live verification too (each prints its
        // own table; `cargo xtask bench webhooks|chain` runs one alone).
        println!();
        println!("## webhook delivery (cargo xtask bench webhooks)");
        crate::bench_webhooks::run(&[])?;
        println!();
        println!("## live verification (cargo xtask bench chain)");
        crate::bench_chain::run(&[])?;
    }
    Ok(())
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// What wrk measured.
struct WrkResult {
    rps: f64,
    p50_ms: f64,
    p99_ms: f64,
    errors: u64,
}

fn which(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

/// The same body as the built-in generator's creations.
fn wrk_create_script(key: &str, body: &[u8]) -> String {
    let body = String::from_utf8_lossy(body);
    format!(
        "wrk.method = \"POST\"\nwrk.path = \"/v1/checkout-sessions\"\nwrk.body = '{body}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = \"Bearer {key}\"\n"
    )
}

fn wrk_read_script(key: &str, ids: &[String]) -> String {
    let list = ids.iter().map(|id| format!("\"{id}\"")).collect::<Vec<_>>().join(",");
    format!(
        "local ids = {{{list}}}\nlocal i = 0\nwrk.headers[\"Authorization\"] = \"Bearer {key}\"\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", \"/v1/invoices/\" .. ids[(i % #ids) + 1])\nend\n"
    )
}

/// Runs wrk (2 threads, `connections` connections, `seconds`) with a Lua script; parses its
/// throughput, median and 99th percentile, and the non-2xx answers.
fn wrk(base: &str, connections: usize, seconds: u64, script: &str) -> Result<WrkResult, String> {
    let path = std::env::temp_dir().join(format!("stablepay-wrk-{}.lua", std::process::id()));
    std::fs::write(&path, script).map_err(|e| e.to_string())?;
    let out = util::output(
        Command::new("wrk")
            .args(["-t", "2", "-c", &connections.to_string(), "-d", &format!("{seconds}s"), "--latency", "-s"])
            .arg(&path)
            .arg(base),
    );
    let _ = std::fs::remove_file(&path);
    let out = out?;
    let ms = |text: &str| -> Option<f64> {
        let (number, unit) = text.split_at(text.find(|c: char| c.is_ascii_alphabetic())?);
        let n: f64 = number.parse().ok()?;
        Some(match unit {
            "us" => n / 1000.0,
            "ms" => n,
            "s" => n * 1000.0,
            _ => return None,
        })
    };
    let percentile = |p: &str| -> Option<f64> {
        out.lines().find_map(|l| {
            let mut parts = l.split_whitespace();
            (parts.next()? == p).then_some(())?;
            ms(parts.next()?)
        })
    };
    let rps = out
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:").and_then(|v| v.trim().parse::<f64>().ok()))
        .ok_or_else(|| format!("no Requests/sec in wrk's output:\n{out}"))?;
    let errors = out
        .lines()
        .find_map(|l| l.trim().strip_prefix("Non-2xx or 3xx responses:").and_then(|v| v.trim().parse::<u64>().ok()))
        .unwrap_or(0);
    Ok(WrkResult {
        rps,
        p50_ms: percentile("50%").ok_or("no 50% line")?,
        p99_ms: percentile("99%").ok_or("no 99% line")?,
        errors,
    })
}
