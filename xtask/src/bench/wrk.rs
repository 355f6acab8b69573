// wrk's figures are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! wrk, an established load generator, run beside the built-in one to cross-check it.

use std::process::Command;

use crate::util;

/// What wrk measured.
pub struct WrkResult {
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
}

pub fn which(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

/// The same body as the built-in generator's creations.
pub fn wrk_create_script(key: &str, body: &[u8]) -> String {
    let body = String::from_utf8_lossy(body);
    format!(
        "wrk.method = \"POST\"\nwrk.path = \"/v1/checkout-sessions\"\nwrk.body = '{body}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Authorization\"] = \"Bearer {key}\"\n"
    )
}

pub fn wrk_read_script(key: &str, ids: &[String]) -> String {
    let list = ids.iter().map(|id| format!("\"{id}\"")).collect::<Vec<_>>().join(",");
    format!(
        "local ids = {{{list}}}\nlocal i = 0\nwrk.headers[\"Authorization\"] = \"Bearer {key}\"\nrequest = function()\n  i = i + 1\n  return wrk.format(\"GET\", \"/v1/invoices/\" .. ids[(i % #ids) + 1])\nend\n"
    )
}

/// Runs wrk (2 threads, `connections` connections, `seconds`) with a Lua script; parses its
/// throughput, median and 99th percentile, and the non-2xx answers.
pub fn wrk(base: &str, connections: usize, seconds: u64, script: &str) -> Result<WrkResult, String> {
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
