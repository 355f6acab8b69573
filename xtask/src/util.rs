//! Small process helpers.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

pub fn step(name: &str, f: impl FnOnce() -> Result<(), String>) -> Result<(), String> {
    eprintln!("==> {name}");
    let start = Instant::now();
    let r = f();
    eprintln!("<== {name}: {} in {:.1}s", if r.is_ok() { "ok" } else { "FAILED" }, start.elapsed().as_secs_f64());
    r
}

pub fn run(cmd: &mut Command) -> Result<(), String> {
    let status = cmd.status().map_err(|e| format!("{cmd:?}: {e}"))?;
    if status.success() { Ok(()) } else { Err(format!("{cmd:?} exited with {status}")) }
}

pub fn output(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{cmd:?} failed: {}", String::from_utf8_lossy(&out.stderr)));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

pub fn cargo(args: &[&str]) -> Result<(), String> {
    run(Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())).args(args).current_dir(root()))
}

pub fn database_url() -> String {
    std::env::var("DATABASE_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/postgres".into())
}

/// `database_url()` with another database name.
pub fn database_url_for(name: &str) -> String {
    let base = database_url();
    match base.rfind('/') {
        Some(cut) => format!("{}/{}", &base[..cut], name),
        None => base,
    }
}

pub fn psql(sql: &str) -> Result<(), String> {
    run(Command::new("psql").args([&database_url(), "-qAt", "-c", sql]))
}

/// Pulls a string field out of a one-line JSON object without a JSON dependency.
/// Reads `--name value` options whose values are counts: each of `options` (its name and its
/// default) is set from `args`. Errors: an unknown option, a missing or non-numeric value.
pub fn count_options<const N: usize>(args: &[String], mut options: [(&str, u64); N]) -> Result<[u64; N], String> {
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"))?;
        let slot = options.iter_mut().find(|(name, _)| name == a).ok_or_else(|| format!("unknown option {a}"))?;
        slot.1 = value.parse().map_err(|_| format!("{a} takes a number"))?;
    }
    Ok(options.map(|(_, v)| v))
}

pub fn json_field(text: &str, field: &str) -> Option<String> {
    let key = format!("\"{field}\":\"");
    let start = text.find(&key)? + key.len();
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_owned())
}

/// A running child process that is killed when dropped.
pub struct Guard(pub std::process::Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `stablepay serve` on a random port against `db_url`; returns the guard and base URL.
pub fn serve(binary: &std::path::Path, db_url: &str, extra_env: &[(&str, &str)]) -> Result<(Guard, String), String> {
    use std::io::{BufRead, BufReader};
    let mut cmd = Command::new(binary);
    cmd.arg("serve")
        .env("DATABASE_URL", db_url)
        .env("STABLEPAY_BIND", "127.0.0.1:0")
        .env("STABLEPAY_METRICS_BIND", "127.0.0.1:0")
        .env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()))
        .stdout(std::process::Stdio::piped());
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().map_err(|e| format!("spawn stablepay: {e}"))?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let guard = Guard(child);
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).map_err(|e| e.to_string())?;
    let base =
        line.trim().strip_prefix("stablepay listening on ").ok_or_else(|| format!("unexpected: {line:?}"))?.to_owned();
    Ok((guard, base))
}

/// Creates a merchant and a secret test key through the CLI; returns (merchant id, key).
pub fn merchant_and_key(
    binary: &std::path::Path,
    db_url: &str,
    mode: &str,
    kind: &str,
) -> Result<(String, String), String> {
    let m = output(
        Command::new(binary).args(["merchant", "create", "--name", "Bench shop", "--json"]).env("DATABASE_URL", db_url),
    )?;
    let id = json_field(&m, "id").ok_or("no merchant id")?;
    let k = output(
        Command::new(binary)
            .args(["key", "create", "--merchant", &id, "--mode", mode, "--type", kind, "--json"])
            .env("DATABASE_URL", db_url),
    )?;
    Ok((id, json_field(&k, "key").ok_or("no key")?))
}

/// The anvil binary of `tools/chain` (`@foundry-rs/anvil-linux-amd64` from npm).
pub fn anvil() -> PathBuf {
    root().join("tools/chain/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil")
}

/// Installs `tools/chain` (the anvil binary the live-mode tests and the chain benchmark run,
/// from npm) unless it is there already.
pub fn chain_tools() -> Result<(), String> {
    if anvil().exists() {
        return Ok(());
    }
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(root().join("tools/chain")))
}

/// Installs `tools/browser` (playwright-core and axe-core, from its lock file) unless it is there.
pub fn browser_tools() -> Result<(), String> {
    let dir = root().join("tools/browser");
    if dir.join("node_modules/playwright-core/package.json").exists() && dir.join("node_modules/axe-core").exists() {
        return Ok(());
    }
    run(Command::new("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(dir))
}

/// The pinned `standardwebhooks` the webhook tests verify real deliveries with.
const STANDARDWEBHOOKS: &str = "1.1.0";
/// The pinned `aiosmtpd` the email tests receive real messages with.
const AIOSMTPD: &str = "1.4.6";

/// Installs `target/py-venv` with `standardwebhooks` (pinned) unless it is there already.
pub fn python_tools() -> Result<(), String> {
    let venv = root().join("target/py-venv");
    let marker = venv.join(format!(".standardwebhooks-{STANDARDWEBHOOKS}-aiosmtpd-{AIOSMTPD}"));
    if marker.exists() {
        return Ok(());
    }
    run(Command::new("python3").args(["-m", "venv"]).arg(&venv))?;
    run(Command::new(venv.join("bin/pip")).args([
        "install",
        "--quiet",
        &format!("standardwebhooks=={STANDARDWEBHOOKS}"),
        &format!("aiosmtpd=={AIOSMTPD}"),
    ]))?;
    std::fs::write(&marker, STANDARDWEBHOOKS).map_err(|e| e.to_string())
}

/// The `stablepay` binary cargo built in `profile` (`debug`, `release`), in CARGO_TARGET_DIR
/// when set, else the workspace's target/.
pub fn built_binary(profile: &str) -> std::path::PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| root().join("target"), std::path::PathBuf::from);
    target.join(profile).join("stablepay")
}

/// The release binary the benchmarks run: `STABLEPAY_BENCH_BINARY` (another build, to compare
/// two builds back to back), or this tree's release build.
pub fn release_binary() -> Result<std::path::PathBuf, String> {
    match std::env::var_os("STABLEPAY_BENCH_BINARY") {
        Some(path) => Ok(std::path::PathBuf::from(path)),
        None => {
            cargo(&["build", "--release", "--quiet", "-p", "stablepay"])?;
            Ok(built_binary("release"))
        }
    }
}

/// A fresh database `name`, migrated by `binary`; answers its URL (the database is dropped
/// again when the migration fails).
pub fn migrated_database(binary: &std::path::Path, name: &str) -> Result<String, String> {
    psql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))?;
    psql(&format!("CREATE DATABASE {name}"))?;
    let url = database_url_for(name);
    let migrated = run(Command::new(binary).arg("migrate").env("DATABASE_URL", &url).env("RUST_LOG", "warn"));
    if let Err(e) = migrated {
        drop_database(name);
        return Err(e);
    }
    Ok(url)
}

/// Drops database `name` (best effort).
pub fn drop_database(name: &str) {
    let _ = psql(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"));
}

/// `stablepay user create` of `email` as `role` of `merchant`, its password on standard input.
pub fn create_user(
    binary: &std::path::Path,
    url: &str,
    (merchant, email, role): (&str, &str, &str),
    password: &str,
) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(binary)
        .args(["user", "create", "--email", email, "--merchant", merchant, "--role", role, "--json"])
        .env("DATABASE_URL", url)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    child.stdin.take().ok_or("no stdin")?.write_all(format!("{password}\n").as_bytes()).map_err(|e| e.to_string())?;
    if !child.wait().map_err(|e| e.to_string())?.success() {
        return Err(format!("user create {email} failed"));
    }
    Ok(())
}
