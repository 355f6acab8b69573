// Benchmark statistics (rates, percentiles) are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench [--seconds N] [--connections N] [--workers N] [--pool N]` (pool defaults
//! to the number of connections): load benchmark of the release binary against a private
//! PostgreSQL, next to PostgreSQL's own ceiling measured in the same run.
//!
//! 1. Starts a private PostgreSQL cluster with `pg_stat_statements`, creates a database, a
//!    merchant and a secret test key, and starts `stablepay serve`.
//! 2. Runs `xtask/bench/pgbench-ceiling/ceiling.sh` (PostgreSQL alone on one checkout
//!    creation's write set and one invoice read).
//! 3. Captures the statements of one creation and one read (`replay`), to replay them with
//!    pgbench as the ceiling of each operation.
//! 4. Drives `POST /v1/checkout-sessions`, then `GET /v1/invoices/{id}` over the invoices it
//!    created, with the built-in generator (`client`), then with wrk when installed (`wrk`).
//! 5. Prints throughput, p50/p99 latency, errors, the server's memory, and the ratios to the
//!    ceilings, as the Markdown rows of docs/benchmarks.md.

use std::process::Command;
use std::sync::{Arc, Mutex};

use crate::bench::client::{MakeRequest, OnBody, Phase, connect, exchange, load, peak_rss_mib};
use crate::bench::replay::{self, PrivatePg, Replay, Script, Statement};
use crate::bench::wrk::{WrkResult, which, wrk, wrk_create_script, wrk_read_script};
use crate::util;

/// The options of the API phases.
pub struct Options {
    seconds: u64,
    connections: usize,
    workers: usize,
    pool: Option<usize>,
    /// Only the API phases (not the webhook and verification benchmarks after them).
    pub api_only: bool,
    /// Rounds of the built-in generator and wrk alternated per operation, after the phases.
    alternate: usize,
}

/// Reads the options.
pub fn options(args: &[String]) -> Result<Options, String> {
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

fn ceiling(port: u16, seconds: u64) -> Result<(f64, f64), String> {
    let script = util::root().join("xtask/bench/pgbench-ceiling/ceiling.sh");
    let out =
        util::output(Command::new("bash").arg(&script).args(["127.0.0.1", &port.to_string(), &seconds.to_string()]))?;
    let field = |k: &str| -> Option<f64> {
        out.split_whitespace().find_map(|kv| kv.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
    };
    Ok((field("write_tps").ok_or("no write_tps")?, field("read_tps_prepared").ok_or("no read_tps")?))
}

const DB: &str = "stablepay_bench";
const CREATE_BODY: &[u8] = br#"{"amount":"10.50","externalReference":"bench"}"#;

/// The running server and what its requests look like.
struct Target<'a> {
    o: &'a Options,
    pg: &'a PrivatePg,
    addr: String,
    key: String,
    /// A whole creation request.
    create: Vec<u8>,
    /// The invoices created so far (the reads go over them).
    invoice_ids: Arc<Mutex<Vec<String>>>,
}

/// One operation measured three ways: the built-in generator, the replay of its statements,
/// and wrk.
struct Measured {
    phase: Phase,
    ceiling: f64,
    replay: Replay,
    sent: Vec<(String, f64)>,
    wrk: Option<WrkResult>,
}

/// An operation's rounds: the built-in generator's and wrk's throughput, alternated.
type Alternation = (&'static str, Vec<f64>, Vec<f64>);

/// Everything one run measured.
struct Report {
    pool_size: usize,
    ceilings: (f64, f64),
    create: Measured,
    read: Measured,
    alternations: Vec<Alternation>,
    memory: (f64, f64),
}

/// The API phases on a private PostgreSQL cluster.
pub fn run(o: &Options) -> Result<(), String> {
    let binary = util::release_binary()?;
    eprintln!("starting a private PostgreSQL cluster with pg_stat_statements...");
    let pg = PrivatePg::start()?;
    pg.query("postgres", &format!("CREATE DATABASE {DB}"))?;
    let url = pg.url(DB);
    util::run(Command::new(&binary).arg("migrate").env("DATABASE_URL", &url).env("RUST_LOG", "warn"))?;
    let report = measure(o, &pg, &binary, &url);
    drop(pg);
    print_report(o, &report?);
    Ok(())
}

fn measure(o: &Options, pg: &PrivatePg, binary: &std::path::Path, url: &str) -> Result<Report, String> {
    let (_, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    let pool_size = o.pool.unwrap_or(o.connections);
    let (pool, workers) = (pool_size.to_string(), o.workers.to_string());
    let env =
        [("STABLEPAY_DB_POOL_SIZE", pool.as_str()), ("STABLEPAY_HTTP_WORKERS", workers.as_str()), ("RUST_LOG", "warn")];
    let (server, base) = util::serve(binary, url, &env)?;
    let addr = base.trim_start_matches("http://").to_owned();
    let create = format!(
        "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        CREATE_BODY.len()
    );
    let mut create = create.into_bytes();
    create.extend_from_slice(CREATE_BODY);
    let t = Target { o, pg, addr, key, create, invoice_ids: Arc::new(Mutex::new(Vec::new())) };

    eprintln!("measuring PostgreSQL's ceiling ({}s per phase)...", o.seconds);
    let ceilings = ceiling(pg.port, o.seconds)?;
    eprintln!("warming up...");
    load("warm-up", &t.addr, o.connections, 3, t.make_create(), 201, t.collect_ids())?;
    eprintln!("capturing the statements of one creation and one read...");
    let create_captures = t.pair(&t.create, 201)?;
    let read_one = t.read_request(&t.first_invoice()?);
    let read_captures = t.pair(read_one.as_bytes(), 200)?;
    let (create, read) = t.phases(&create_captures, &read_captures, ceilings)?;
    let alternations = t.alternate()?;
    let memory = peak_rss_mib(server.0.id()).unwrap_or((0.0, 0.0));
    eprintln!("replaying the captured statements with pgbench ({}s per operation)...", o.seconds);
    let create = t.replayed(create, &create_captures)?;
    let read = t.replayed(read, &read_captures)?;
    drop(server);
    Ok(Report { pool_size, ceilings, create, read, alternations, memory })
}

impl Target<'_> {
    fn make_create(&self) -> MakeRequest {
        let request = self.create.clone();
        Arc::new(move |_, _| request.clone())
    }

    /// Keeps the id of each created invoice (up to 100,000).
    fn collect_ids(&self) -> OnBody {
        let sink = self.invoice_ids.clone();
        Arc::new(move |body: &[u8]| {
            let text = String::from_utf8_lossy(body);
            if let Some(id) = util::json_field(&text, "invoiceId")
                && let Ok(mut ids) = sink.lock()
                && ids.len() < 100_000
            {
                ids.push(id);
            }
        })
    }

    fn first_invoice(&self) -> Result<String, String> {
        self.invoice_ids.lock().map_err(|_| "poisoned")?.first().cloned().ok_or_else(|| "no invoice to read".into())
    }

    fn read_request(&self, id: &str) -> String {
        format!("GET /v1/invoices/{id} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\r\n", self.addr, self.key)
    }

    /// Two captures of the same request: they must show the same statements. The worker's own
    /// polling can land inside a capture's window now and then, so a pair that differs is taken
    /// again (a few times at most).
    fn pair(&self, request: &[u8], expect: u16) -> Result<[Vec<Statement>; 2], String> {
        let one = || -> Result<(), String> {
            let mut conn = connect(&self.addr)?;
            match exchange(&mut conn, request)? {
                (status, _) if status == expect => Ok(()),
                (status, body) => Err(format!("capture: {status} {}", String::from_utf8_lossy(&body))),
            }
        };
        let mut last = String::new();
        for _ in 0..5 {
            let first = replay::capture(self.pg, DB, &mut || one())?;
            let second = replay::capture(self.pg, DB, &mut || one())?;
            if replay::same_statements(&first, &second) {
                return Ok([first, second]);
            }
            last = format!("{} and {} statements", first.len(), second.len());
        }
        Err(format!("two captures of one request never sent the same statements (last: {last})"))
    }

    /// Reads spread over every created invoice, and a sample of 5,000 of them for wrk.
    fn reads(&self) -> Result<(MakeRequest, Vec<String>), String> {
        let ids: Arc<Vec<String>> = Arc::new(self.invoice_ids.lock().map_err(|_| "poisoned")?.clone());
        if ids.is_empty() {
            return Err("no invoices were created".into());
        }
        let step = (ids.len() / 5000).max(1);
        let sample: Vec<String> = ids.iter().step_by(step).take(5000).cloned().collect();
        let (addr, key) = (self.addr.clone(), self.key.clone());
        let make: MakeRequest = Arc::new(move |c, i| {
            let id = &ids[(c * 7919 + i * 104_729) % ids.len()];
            format!("GET /v1/invoices/{id} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\n\r\n")
                .into_bytes()
        });
        Ok((make, sample))
    }

    /// wrk's run of `script`, right after the built-in one, when wrk is installed.
    fn wrk(&self, script: &str) -> Result<Option<WrkResult>, String> {
        if !which("wrk") {
            eprintln!("wrk is not installed (apt-get install wrk): only the built-in generator runs");
            return Ok(None);
        }
        eprintln!("the same with wrk...");
        wrk(&format!("http://{}", self.addr), self.o.connections, self.o.seconds, script).map(Some)
    }

    /// Creations, then reads over the invoices created, each by the built-in generator (with
    /// the statements it sent, from pg_stat_statements) and then by wrk.
    fn phases(
        &self,
        create_captures: &[Vec<Statement>; 2],
        read_captures: &[Vec<Statement>; 2],
        (write_ceiling, read_ceiling): (f64, f64),
    ) -> Result<(Measured, Measured), String> {
        let (o, pg) = (self.o, self.pg);
        replay::reset_statements(pg)?;
        eprintln!("POST /v1/checkout-sessions for {}s...", o.seconds);
        let name = "POST /v1/checkout-sessions";
        let phase = load(name, &self.addr, o.connections, o.seconds, self.make_create(), 201, self.collect_ids())?;
        let sent = replay::per_request(&replay::statements(pg, DB)?, &create_captures[0], phase.requests);
        let wrk = self.wrk(&wrk_create_script(&self.key, CREATE_BODY))?;
        let empty = Replay { tps: 0.0, latency_ms: 0.0 };
        let create = Measured { phase, ceiling: write_ceiling, replay: empty.clone(), sent, wrk };
        replay::reset_statements(pg)?;
        let (make_get, sample) = self.reads()?;
        eprintln!("GET /v1/invoices/{{id}} for {}s...", o.seconds);
        let phase =
            load("GET /v1/invoices/{id}", &self.addr, o.connections, o.seconds, make_get, 200, Arc::new(|_| {}))?;
        let sent = replay::per_request(&replay::statements(pg, DB)?, &read_captures[0], phase.requests);
        let wrk = self.wrk(&wrk_read_script(&self.key, &sample))?;
        Ok((create, Measured { phase, ceiling: read_ceiling, replay: empty, sent, wrk }))
    }

    /// Machine noise between consecutive runs is larger than the generators' difference:
    /// rounds of one and the other, alternated, compare their medians.
    fn alternate(&self) -> Result<Vec<Alternation>, String> {
        let o = self.o;
        if o.alternate == 0 || !which("wrk") {
            return Ok(Vec::new());
        }
        eprintln!("alternating the two generators, {} rounds per operation...", o.alternate);
        let (make_get, sample) = self.reads()?;
        let rounds = [
            ("POST /v1/checkout-sessions", self.make_create(), 201, wrk_create_script(&self.key, CREATE_BODY)),
            ("GET /v1/invoices/{id}", make_get, 200, wrk_read_script(&self.key, &sample)),
        ];
        let base = format!("http://{}", self.addr);
        let mut out = Vec::new();
        for (name, make, expect, script) in rounds {
            let (mut built_in, mut by_wrk) = (Vec::new(), Vec::new());
            for _ in 0..o.alternate {
                built_in.push(
                    load(name, &self.addr, o.connections, o.seconds, make.clone(), expect, Arc::new(|_| {}))?.rps(),
                );
                by_wrk.push(wrk(&base, o.connections, o.seconds, &script)?.rps);
            }
            out.push((name, built_in, by_wrk));
        }
        Ok(out)
    }

    /// The operation's captured statements replayed by pgbench: its ceiling.
    fn replayed(&self, mut m: Measured, captures: &[Vec<Statement>; 2]) -> Result<Measured, String> {
        let types = |sql: &str| replay::parameter_types(self.pg, DB, sql);
        let label = if m.phase.name.starts_with("POST") { "creation" } else { "read" };
        let script: Script = replay::script(label, &captures[0], &captures[1], &types)?;
        m.replay = replay::replay(self.pg, DB, &script, self.o.connections, self.o.seconds)?;
        Ok(m)
    }
}

fn print_report(o: &Options, r: &Report) {
    let (write_ceiling, read_ceiling) = r.ceilings;
    println!();
    println!(
        "connections: {}, seconds per phase: {}, server: {} HTTP workers, pool {}",
        o.connections, o.seconds, o.workers, r.pool_size
    );
    println!("PostgreSQL ceiling: write {write_ceiling:.0}/s, read {read_ceiling:.0}/s (ceiling.sh, 32 clients)");
    println!();
    println!("| operation | requests/s | p50 ms | p99 ms | errors | ceiling/s | ratio |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for m in [&r.create, &r.read] {
        let p = &m.phase;
        println!(
            "| {} | {:.0} | {:.2} | {:.2} | {} | {:.0} | {:.0} % |",
            p.name,
            p.rps(),
            p.percentile(0.50),
            p.percentile(0.99),
            p.errors,
            m.ceiling,
            100.0 * p.rps() / m.ceiling
        );
    }
    print_replays(o, r);
    print_wrk(r);
    print_alternations(&r.alternations);
    println!();
    println!("server memory: RSS {:.1} MiB at the end, peak {:.1} MiB", r.memory.0, r.memory.1);
}

fn print_replays(o: &Options, r: &Report) {
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
    for m in [&r.create, &r.read] {
        let statements = m.sent.iter().map(|(q, n)| format!("{n:.2} × `{q}`")).collect::<Vec<_>>().join("; ");
        println!(
            "| {} | {:.0} | {:.0} | {:.2} | {:.0} % | {} |",
            m.phase.name,
            m.phase.rps(),
            m.replay.tps,
            m.replay.latency_ms,
            100.0 * m.phase.rps() / m.replay.tps,
            statements
        );
    }
}

fn print_wrk(r: &Report) {
    let (Some(_), Some(_)) = (&r.create.wrk, &r.read.wrk) else { return };
    println!();
    println!("| generator | operation | requests/s | p50 ms | p99 ms | errors | vs built-in |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    for m in [&r.create, &r.read] {
        let (Some(w), p) = (&m.wrk, &m.phase) else { continue };
        println!(
            "| wrk | {} | {:.0} | {:.2} | {:.2} | {} | {:+.1} % |",
            p.name,
            w.rps,
            w.p50_ms,
            w.p99_ms,
            w.errors,
            100.0 * (w.rps - p.rps()) / p.rps()
        );
    }
}

fn print_alternations(alternations: &[Alternation]) {
    if alternations.is_empty() {
        return;
    }
    println!();
    println!(
        "| operation | built-in, each round /s | wrk, each round /s | median built-in | median wrk | wrk vs built-in |"
    );
    println!("| --- | --- | --- | --- | --- | --- |");
    for (name, built_in, by_wrk) in alternations {
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

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}
