//! `cargo xtask instructions [--update] [--requests N]`: the request path's cost in instructions,
//! counted by callgrind (deterministic for a binary, its inputs and the toolchain; not a timing),
//! for four requests: a read of an invoice, a keyed checkout creation, the public checkout page
//! and the dashboard's invoice list page. The release binary serves one HTTP worker under
//! `valgrind --tool=callgrind`; each request is sent a few times first (statements prepared,
//! caches warm), then callgrind's counters are zeroed, the request is sent N times over one
//! keep-alive connection, and the counters dumped: instructions per request = the dump / N.
//!
//! `cargo xtask ci` runs it and fails when a request costs more than 5 % over its baseline in
//! `xtask/bench/callgrind/baseline.txt`; `--update` writes the baseline (a commit of its own that
//! says why: a change that costs more on purpose, or a new toolchain in `rust-toolchain.toml`).

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::bench::client::exchange;
use crate::util;

/// How much more than its baseline a request may cost before CI fails.
const TOLERANCE_PERCENT: u64 = 5;

const PASSWORD: &str = "instruction guard owner password";

/// Requests counted per kind (after the warm-up).
const DEFAULT_REQUESTS: u64 = 200;

/// Requests sent before the counters are zeroed.
const WARM_UP: u64 = 20;

fn baseline_file() -> PathBuf {
    util::root().join("xtask/bench/callgrind/baseline.txt")
}

/// One kind of request counted.
struct Kind {
    name: &'static str,
    /// What the baseline file and the report call it.
    about: &'static str,
    /// Request `i`.
    request: Box<dyn Fn(u64) -> String>,
    /// The status every answer must have.
    status: u16,
}

pub fn run(args: &[String]) -> Result<(), String> {
    let update = args.iter().any(|a| a == "--update");
    let rest: Vec<String> = args.iter().filter(|a| *a != "--update").cloned().collect();
    let [requests] = util::count_options(&rest, [("--requests", DEFAULT_REQUESTS)])?;
    if !update {
        same_toolchain()?;
    }
    valgrind()?;
    let binary = util::release_binary()?;
    let db = format!("stablepay_instructions_{}", std::process::id());
    let url = util::migrated_database(&binary, &db)?;
    let counted = count(&binary, &url, requests.max(1));
    util::drop_database(&db);
    let counted = counted?;
    if update {
        return write_baseline(&counted);
    }
    compare(&counted, &read_baseline()?)
}

/// Installs valgrind from Debian when it is missing (CI machines start without it).
fn valgrind() -> Result<(), String> {
    if Command::new("valgrind").arg("--version").output().is_ok_and(|o| o.status.success()) {
        return Ok(());
    }
    println!("valgrind is missing; installing it from Debian");
    util::run(Command::new("apt-get").args(["update", "-qq"]))?;
    util::run(
        Command::new("apt-get").args(["install", "-y", "-qq", "valgrind"]).env("DEBIAN_FRONTEND", "noninteractive"),
    )
}

/// A free port on the loopback.
fn free_port() -> Result<u16, String> {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    listener.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

/// One request on a connection of its own: the status and the body.
fn once(addr: &str, request: &str) -> Result<(u16, String), String> {
    let mut stream = BufReader::new(TcpStream::connect(addr).map_err(|e| format!("{addr}: {e}"))?);
    let (status, body) = exchange(&mut stream, request.as_bytes())?;
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The owner's session cookie (its `Set-Cookie`, read from a raw answer).
fn login(addr: &str) -> Result<String, String> {
    use std::io::Read;
    let body = format!(r#"{{"email":"owner@instructions.example","password":"{PASSWORD}"}}"#);
    let request = format!(
        "POST /v1/dashboard/sessions HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut stream = TcpStream::connect(addr).map_err(|e| e.to_string())?;
    stream.write_all(request.as_bytes()).map_err(|e| e.to_string())?;
    let mut text = String::new();
    stream.read_to_string(&mut text).map_err(|e| e.to_string())?;
    text.lines()
        .find_map(|l| l.to_ascii_lowercase().starts_with("set-cookie:").then(|| l[11..].trim().to_owned()))
        .and_then(|c| c.split(';').next().map(str::to_owned))
        .ok_or_else(|| format!("no session cookie: {text}"))
}

/// The server under callgrind, killed when dropped.
struct Server {
    guard: util::Guard,
    addr: String,
    out: PathBuf,
}

impl Server {
    fn start(binary: &Path, url: &str) -> Result<Self, String> {
        let port = free_port()?;
        let dir = util::root().join("target/callgrind");
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let out = dir.join("requests.out");
        for entry in std::fs::read_dir(&dir).map_err(|e| e.to_string())?.flatten() {
            if entry.file_name().to_string_lossy().starts_with("requests.out") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
        let child = Command::new("valgrind")
            .arg("--tool=callgrind")
            .arg(format!("--callgrind-out-file={}", out.display()))
            .arg(binary)
            .args(["serve", "--no-worker", "--no-migrate"])
            .env("DATABASE_URL", url)
            .env("STABLEPAY_BIND", format!("127.0.0.1:{port}"))
            .env("STABLEPAY_METRICS_BIND", "off")
            .env("STABLEPAY_HTTP_WORKERS", "1")
            .env("STABLEPAY_DB_POOL_SIZE", "2")
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .map_err(|e| format!("valgrind: {e}"))?;
        let server = Self { guard: util::Guard(child), addr: format!("127.0.0.1:{port}"), out };
        let started = Instant::now();
        while once(&server.addr, &get(&server.addr, "/healthz", "")).map(|r| r.0) != Ok(200) {
            if started.elapsed() > Duration::from_secs(120) {
                return Err("the server did not answer /healthz under callgrind within 120 s".into());
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        Ok(server)
    }

    fn control(&self, args: &[&str]) -> Result<(), String> {
        let pid = self.guard.0.id().to_string();
        util::output(Command::new("callgrind_control").args(args).arg(&pid)).map(|_| ())
    }

    /// The instructions counted since the last zeroing, dumped now as dump `n`.
    fn dump(&self, n: usize) -> Result<u64, String> {
        self.control(&["--dump"])?;
        let file = PathBuf::from(format!("{}.{n}", self.out.display()));
        let started = Instant::now();
        loop {
            if let Ok(text) = std::fs::read_to_string(&file)
                && let Some(total) =
                    text.lines().find_map(|l| l.strip_prefix("totals: ").or(l.strip_prefix("summary: ")))
            {
                return total.split_whitespace().next().and_then(|t| t.parse().ok()).ok_or("bad totals".into());
            }
            if started.elapsed() > Duration::from_secs(30) {
                return Err(format!("callgrind wrote no dump {}", file.display()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

fn get(addr: &str, path: &str, headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}\r\n")
}

/// The four kinds of request, on the data `prepare` made.
fn kinds(addr: &str, key: &str, (merchant, invoice, checkout): (&str, &str, &str), cookie: &str) -> Vec<Kind> {
    let auth = format!("Authorization: Bearer {key}\r\n");
    let (a, a2, a3, a4) = (addr.to_owned(), addr.to_owned(), addr.to_owned(), addr.to_owned());
    let (read_path, page_path) = (format!("/v1/invoices/{invoice}"), format!("/checkout/{checkout}"));
    let list_path = format!("/dashboard/invoices?merchant={merchant}&mode=test");
    let (read_auth, create_auth, cookie) = (auth.clone(), auth, format!("Cookie: {cookie}\r\n"));
    vec![
        Kind {
            name: "read_invoice",
            about: "GET /v1/invoices/{id} (secret key)",
            request: Box::new(move |_| get(&a, &read_path, &read_auth)),
            status: 200,
        },
        Kind {
            name: "create_checkout",
            about: "POST /v1/checkout-sessions with an Idempotency-Key (secret key)",
            request: Box::new(move |i| {
                let body = format!(r#"{{"amount":"10.50","externalReference":"order-{i}"}}"#);
                format!(
                    "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {a2}\r\n{create_auth}Idempotency-Key: guard-{i}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
            }),
            status: 201,
        },
        Kind {
            name: "checkout_page",
            about: "GET /checkout/{id} (the hosted checkout page)",
            request: Box::new(move |_| get(&a3, &page_path, "")),
            status: 200,
        },
        Kind {
            name: "dashboard_invoices",
            about: "GET /dashboard/invoices (the invoice list page, signed in)",
            request: Box::new(move |_| get(&a4, &list_path, &cookie)),
            status: 200,
        },
    ]
}

/// A merchant with a secret test key, an owner who signs in, one checkout with its invoice;
/// answers (merchant, key, invoice, checkout).
fn prepare(binary: &Path, url: &str, addr: &str) -> Result<(String, String, String, String), String> {
    let (merchant, key) = util::merchant_and_key(binary, url, "test", "secret")?;
    util::create_user(binary, url, (&merchant, "owner@instructions.example", "owner"), PASSWORD)?;
    let body = r#"{"amount":"25.50","externalReference":"guard"}"#;
    let request = format!(
        "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = once(addr, &request)?;
    if status != 201 {
        return Err(format!("checkout creation answered {status}: {answer}"));
    }
    let checkout = util::json_field(&answer, "id").ok_or("no checkout id")?;
    let invoice = util::json_field(&answer, "invoiceId").ok_or("no invoice id")?;
    Ok((merchant, key, invoice, checkout))
}

/// Counts each kind's instructions per request.
fn count(binary: &Path, url: &str, requests: u64) -> Result<Vec<(&'static str, &'static str, u64)>, String> {
    let server = Server::start(binary, url)?;
    let (merchant, key, invoice, checkout) = prepare(binary, url, &server.addr)?;
    let cookie = login(&server.addr)?;
    let mut counted = Vec::new();
    for (n, kind) in kinds(&server.addr, &key, (&merchant, &invoice, &checkout), &cookie).into_iter().enumerate() {
        let mut stream = BufReader::new(TcpStream::connect(&server.addr).map_err(|e| e.to_string())?);
        stream.get_ref().set_nodelay(true).map_err(|e| e.to_string())?;
        let mut send = |i: u64| -> Result<(), String> {
            let (status, body) = exchange(&mut stream, (kind.request)(i).as_bytes())?;
            if status != kind.status {
                return Err(format!("{}: answered {status}: {}", kind.name, String::from_utf8_lossy(&body)));
            }
            Ok(())
        };
        for i in 0..WARM_UP {
            send(i)?;
        }
        server.control(&["--zero"])?;
        for i in WARM_UP..WARM_UP + requests {
            send(i)?;
        }
        let total = server.dump(n + 1)?;
        counted.push((kind.name, kind.about, total / requests));
        println!("{}: {} instructions per request ({})", kind.name, total / requests, kind.about);
    }
    drop(server);
    Ok(counted)
}

/// The baseline's counts hold for the compiler that made them: another one (a toolchain not
/// pinned, or a new pin) is told to count a new baseline, not compared.
fn same_toolchain() -> Result<(), String> {
    let text = std::fs::read_to_string(baseline_file()).map_err(|e| format!("{}: {e}", baseline_file().display()))?;
    let Some(recorded) = text.lines().find_map(|l| l.strip_prefix("# toolchain: ")) else {
        return Err(format!("{} names no toolchain", baseline_file().display()));
    };
    let now = util::output(Command::new("rustc").arg("--version"))?;
    if now.trim() == recorded.trim() {
        return Ok(());
    }
    Err(format!(
        "the baseline was counted with {}, this build uses {}: count a new baseline with it \
         (`cargo xtask instructions --update`) in a commit of its own that says why",
        recorded.trim(),
        now.trim()
    ))
}

fn read_baseline() -> Result<Vec<(String, u64)>, String> {
    let text = std::fs::read_to_string(baseline_file()).map_err(|e| {
        format!("{}: {e} (make it with `cargo xtask instructions --update`)", baseline_file().display())
    })?;
    Ok(text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some((words.next()?.to_owned(), words.next()?.parse().ok()?))
        })
        .collect())
}

fn write_baseline(counted: &[(&str, &str, u64)]) -> Result<(), String> {
    let toolchain = util::output(Command::new("rustc").arg("--version"))?;
    let mut text = String::from(
        "# Instructions per request of the release binary under callgrind (`cargo xtask instructions`):\n\
         # `cargo xtask ci` fails when one grows more than 5 % over its line here. Change this file in\n\
         # a commit of its own that says why (a new toolchain included).\n",
    );
    text.push_str(&format!("# toolchain: {}\n", toolchain.trim()));
    for (name, about, n) in counted {
        text.push_str(&format!("{name} {n} {about}\n"));
    }
    std::fs::write(baseline_file(), text).map_err(|e| e.to_string())?;
    println!("wrote {}", baseline_file().display());
    Ok(())
}

/// Fails when a request costs more than the tolerance over its baseline (or has none).
fn compare(counted: &[(&str, &str, u64)], baseline: &[(String, u64)]) -> Result<(), String> {
    let mut over = Vec::new();
    println!("\n| request | baseline | now | change |\n| --- | --- | --- | --- |");
    for (name, about, now) in counted {
        let Some((_, base)) = baseline.iter().find(|(n, _)| n == name) else {
            over.push(format!("{name}: no baseline"));
            continue;
        };
        let change = i128::from(*now) - i128::from(*base);
        let permille = change * 1000 / i128::from((*base).max(1));
        let sign = if permille < 0 { "-" } else { "+" };
        println!("| {about} | {base} | {now} | {sign}{}.{}% |", permille.abs() / 10, permille.abs() % 10);
        if u128::from(*now) * 100 > u128::from(*base) * u128::from(100 + TOLERANCE_PERCENT) {
            over.push(format!("{name}: {now} instructions per request, more than {TOLERANCE_PERCENT} % over {base}"));
        }
    }
    if over.is_empty() {
        return Ok(());
    }
    Err(format!(
        "the request path grew: {}. Make it cheaper, or, if the cost is wanted, update the baseline \
         (`cargo xtask instructions --update`) in a commit of its own that says why",
        over.join("; ")
    ))
}
