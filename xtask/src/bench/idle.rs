// Benchmark statistics are floating point by nature; no money here.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

//! `cargo xtask bench idle [--seconds N]`: what the service spends doing nothing. The release
//! binary serves a database with one test-mode merchant and nothing to do; after a warm-up, the
//! CPU time of the process and of its PostgreSQL backends is read from `/proc` over N seconds
//! (300 by default) and given as a share of one core. Then the same with a live merchant on a
//! local chain (anvil from `tools/chain`) that mines a block every 2 seconds: the chain follower
//! reads each new block, so that cost is also given per block (docs/benchmarks.md, "Idle";
//! aim without a live merchant: under 1 % of one core).

use std::process::Command;
use std::time::{Duration, Instant};

use super::chain;
use crate::util;

/// How long the service runs before the measurement starts (its start-up work done).
const WARM_UP: Duration = Duration::from_secs(20);
/// A block every this long during the live phase (Polygon's pace).
const BLOCK_EVERY: Duration = Duration::from_secs(2);

pub fn run(args: &[String]) -> Result<(), String> {
    let [seconds] = util::count_options(args, [("--seconds", 300)])?;
    let window = Duration::from_secs(seconds.max(10));
    let binary = util::release_binary()?;
    println!(
        "| idle for {} s after a {} s warm-up | process | its PostgreSQL backends | together, of one core | per block |",
        window.as_secs(),
        WARM_UP.as_secs()
    );
    println!("|---|---|---|---|---|");
    let quiet = phase(&binary, window, false)?;
    quiet.print("one test-mode merchant, nothing to do");
    let live = phase(&binary, window, true)?;
    live.print("and a live merchant, a block every 2 s");
    Ok(())
}

/// CPU seconds spent over a window.
struct Spent {
    process: f64,
    backends: f64,
    window: Duration,
    blocks: u64,
}

impl Spent {
    fn print(&self, what: &str) {
        let share = (self.process + self.backends) / self.window.as_secs_f64() * 100.0;
        let per_block = if self.blocks == 0 {
            "-".to_owned()
        } else {
            format!("{:.1} ms", (self.process + self.backends) / self.blocks as f64 * 1000.0)
        };
        println!("| {what} | {:.2} s | {:.2} s | {share:.2} % | {per_block} |", self.process, self.backends);
    }
}

fn phase(binary: &std::path::Path, window: Duration, live: bool) -> Result<Spent, String> {
    let db = format!("stablepay_bench_idle_{}_{}", std::process::id(), u8::from(live));
    let url = util::migrated_database(binary, &db)?;
    let result = (|| -> Result<Spent, String> {
        util::merchant_and_key(binary, &url, "test", "secret")?;
        let mut env: Vec<(&str, String)> = vec![("RUST_LOG", "warn".into())];
        let mut chain_rpc = None;
        let _anvil = if live {
            let (guard, addr) = chain::start_anvil()?;
            let mut rpc = chain::Rpc(chain::Http::new(&addr)?);
            let (token, accounts) = chain::deploy_token(&mut rpc)?;
            chain::merchants(binary, &url, 1, &accounts[1])?;
            env.push(("STABLEPAY_CHAIN_RPC_URLS", format!("http://{addr}")));
            env.push(("STABLEPAY_USDC_CONTRACT", token));
            chain_rpc = Some(rpc);
            Some(guard)
        } else {
            None
        };
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let (server, _base) = util::serve(binary, &url, &env)?;
        let pid = server.0.id();
        let mine = |rpc: &mut Option<chain::Rpc>| rpc.as_mut().map_or(Ok(()), |r| r.call("evm_mine", "[]").map(|_| ()));
        pace(WARM_UP, &mut chain_rpc, &mine)?;
        let (p0, b0) = (cpu_of(pid)?, backends_cpu(&db)?);
        let blocks = pace(window, &mut chain_rpc, &mine)?;
        let (p1, b1) = (cpu_of(pid)?, backends_cpu(&db)?);
        let backends = b1.iter().map(|(pid, t)| t - b0.iter().find(|(p, _)| p == pid).map_or(0.0, |(_, t)| *t)).sum();
        Ok(Spent { process: p1 - p0, backends, window, blocks: if live { blocks } else { 0 } })
    })();
    util::drop_database(&db);
    result
}

/// Waits `span`, mining a block every [`BLOCK_EVERY`] on the live phase's chain; answers the
/// blocks mined.
fn pace(
    span: Duration,
    rpc: &mut Option<chain::Rpc>,
    mine: &dyn Fn(&mut Option<chain::Rpc>) -> Result<(), String>,
) -> Result<u64, String> {
    let end = Instant::now() + span;
    let mut blocks = 0;
    while Instant::now() < end {
        std::thread::sleep(BLOCK_EVERY.min(end.saturating_duration_since(Instant::now())));
        if rpc.is_some() {
            mine(rpc)?;
            blocks += 1;
        }
    }
    Ok(blocks)
}

/// Clock ticks per second of `/proc/*/stat` times.
fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|s| s.trim().parse::<f64>().ok())
        .unwrap_or(100.0)
}

/// The CPU seconds (user and system, all threads) process `pid` has used.
fn cpu_of(pid: u32) -> Result<f64, String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("process {pid}: {e}"))?;
    // The fields after the command's closing parenthesis: state is the 3rd field, utime the 14th.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).ok_or("unreadable stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok()).ok_or("unreadable stat");
    Ok((ticks(11)? + ticks(12)?) / ticks_per_second())
}

/// The CPU seconds each PostgreSQL backend connected to `db` has used, by pid.
fn backends_cpu(db: &str) -> Result<Vec<(u32, f64)>, String> {
    let out = Command::new("psql")
        .args([
            &util::database_url(),
            "-qAt",
            "-c",
            &format!("SELECT pid FROM pg_stat_activity WHERE datname = '{db}'"),
        ])
        .output()
        .map_err(|e| e.to_string())?;
    let pids =
        String::from_utf8_lossy(&out.stdout).lines().filter_map(|l| l.trim().parse::<u32>().ok()).collect::<Vec<_>>();
    Ok(pids.into_iter().filter_map(|pid| cpu_of(pid).ok().map(|t| (pid, t))).collect())
}
