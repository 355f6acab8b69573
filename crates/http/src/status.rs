//! The background worker's state in this process: the worker reports each pass, and the
//! readiness and metrics endpoints show it, so a worker that fails or stops is never silent.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::timestamp::timestamp;

/// Counters and times of the worker's passes (all atomics: reported from the worker's task,
/// read by any HTTP worker).
#[derive(Debug)]
pub struct WorkerStatus {
    enabled: bool,
    /// Without a successful pass for this long, the worker counts as stalled.
    stall_after_seconds: i64,
    started_at: i64,
    last_success_at: AtomicI64,
    passes: AtomicU64,
    failed_passes: AtomicU64,
    consecutive_failures: AtomicU64,
    panics: AtomicU64,
    transitions: AtomicU64,
    items_failed: AtomicU64,
    last_items_failed: AtomicU64,
    follower: FollowerStatus,
}

/// The chain follower's passes (live mode): whether it keeps up with the final blocks.
#[derive(Debug, Default)]
struct FollowerStatus {
    /// Whether a pass ever ran (false: no live chain, or no pass yet).
    attempted: AtomicBool,
    last_success_at: AtomicI64,
    consecutive_failures: AtomicU64,
    /// Final blocks not scanned yet, as last known (-1: unknown).
    lag: AtomicI64,
    /// The last block scanned, as last known (-1: none yet).
    scanned_to: AtomicI64,
    /// Blocks of the last range read that no endpoint's answer settled for sure.
    uncertain_blocks: AtomicU64,
    /// Whether the cursor is held on such a range (read again next pass).
    held: AtomicBool,
    /// Ranges endpoints answered differently, since start.
    disagreements: AtomicU64,
    /// Logs the second reading found that the first had missed, since start.
    second_pass_found: AtomicU64,
    /// Ranges waiting for their second reading.
    rechecks_pending: AtomicU64,
    /// The service's clock less the chain head's block time, in seconds (`i64::MIN`: unknown).
    clock_skew: AtomicI64,
    /// When it was measured (Unix seconds, 0: never).
    clock_skew_at: AtomicI64,
}

/// How often the follower measures the service's clock against the chain's.
pub const CLOCK_SKEW_EVERY_SECONDS: i64 = 30;

/// What one follower pass learned besides how far it scanned.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct FollowFacts {
    /// Blocks of the range read whose answer could not be confirmed complete.
    pub uncertain_blocks: u64,
    /// The cursor was held on them.
    pub held: bool,
    /// Ranges endpoints answered differently in this pass.
    pub disagreements: u64,
    /// Logs the second reading found that the first had missed.
    pub second_pass_found: u64,
    /// Ranges waiting for their second reading.
    pub rechecks_pending: u64,
}

/// After this many failed passes in a row the follower counts as stalled.
pub const FOLLOWER_STALLED_AFTER_FAILURES: u64 = 5;

/// The chain follower's state as readiness shows it (readiness does not fail on it: the API and
/// reported payments go on; alert on `lagBlocks` or the `stablepay_chain_follow_lag_blocks`
/// metric).
#[derive(Serialize, ToSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FollowerSnapshot {
    /// `off` (this process follows no live chain, or has not yet), `ok`, `degraded` (its last
    /// pass failed) or `stalled` (five passes in a row failed: transfers nobody reported wait).
    pub state: String,
    /// Final blocks not scanned yet, when known.
    pub lag_blocks: Option<u64>,
    pub last_success_at: Option<String>,
    pub consecutive_failures: u64,
    /// Blocks of the last range read that no endpoint's answer settled for sure (an endpoint
    /// answered nothing where the block's bloom says a watched transfer may be): the cursor is
    /// held on them for a while, then the second reading and reconciliation runs read them again.
    pub uncertain_blocks: u64,
    /// Whether the cursor waits on such blocks now.
    pub held: bool,
    /// Ranges the endpoints answered differently, since the process started.
    pub disagreements: u64,
    /// Logs the second reading of a range found that the first reading had missed, since the
    /// process started (each credited or recorded then).
    pub second_pass_found: u64,
    /// Ranges of final blocks waiting for their second reading.
    pub rechecks_pending: u64,
    /// The service's clock less the time of the chain's newest block, in seconds, when measured
    /// (a few seconds when the clocks agree; compare with STABLEPAY_CHAIN_CLOCK_SKEW_SECONDS).
    pub clock_skew_seconds: Option<i64>,
}

/// The worker's state as readiness shows it.
#[derive(Serialize, ToSchema, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkerSnapshot {
    /// `ok`; `degraded` (the last pass failed, or in it some invoices' work failed and was
    /// backed off, or email attempts failed); `stalled` (no successful pass for longer than allowed: readiness fails); `off` (this
    /// process runs no worker).
    pub state: String,
    pub last_success_at: Option<String>,
    pub consecutive_failures: u64,
    /// Passes that panicked and were restarted.
    pub restarts: u64,
    /// Invoices whose due work failed (each backed off) and failed email attempts, since start.
    pub items_failed: u64,
    /// The chain follower (live mode), which finds transfers nobody reported.
    pub follower: FollowerSnapshot,
}

impl WorkerStatus {
    /// A worker that runs every `interval` when busy, and rests at most
    /// [`IDLE_REST_SECONDS`](stablepay_domain::schedule::IDLE_REST_SECONDS) when idle; it is
    /// stalled after ten intervals (at least a minute) plus that rest without a successful pass.
    pub fn running(interval: Duration, now: DateTime<Utc>) -> Self {
        let stall = i64::try_from(interval.as_secs().saturating_mul(10))
            .unwrap_or(i64::MAX)
            .max(60)
            .saturating_add(stablepay_domain::schedule::IDLE_REST_SECONDS);
        Self::new(true, stall, now)
    }

    /// This process runs no worker (an API-only replica).
    pub fn off(now: DateTime<Utc>) -> Self {
        Self::new(false, i64::MAX, now)
    }

    fn new(enabled: bool, stall_after_seconds: i64, now: DateTime<Utc>) -> Self {
        Self {
            enabled,
            stall_after_seconds,
            started_at: now.timestamp(),
            last_success_at: AtomicI64::new(0),
            passes: AtomicU64::new(0),
            failed_passes: AtomicU64::new(0),
            consecutive_failures: AtomicU64::new(0),
            panics: AtomicU64::new(0),
            transitions: AtomicU64::new(0),
            items_failed: AtomicU64::new(0),
            last_items_failed: AtomicU64::new(0),
            follower: FollowerStatus {
                lag: AtomicI64::new(-1),
                scanned_to: AtomicI64::new(-1),
                clock_skew: AtomicI64::new(i64::MIN),
                ..FollowerStatus::default()
            },
        }
    }

    /// A follower pass succeeded at `at`: blocks up to `scanned_to` are scanned, `lag` final
    /// blocks are left (when known). Answers the lag to show.
    pub fn followed(&self, at: DateTime<Utc>, scanned_to: Option<u64>, lag: Option<u64>) {
        let f = &self.follower;
        f.attempted.store(true, Ordering::Relaxed);
        f.consecutive_failures.store(0, Ordering::Relaxed);
        f.last_success_at.store(at.timestamp(), Ordering::Relaxed);
        if let Some(to) = scanned_to {
            f.scanned_to.store(i64::try_from(to).unwrap_or(i64::MAX), Ordering::Relaxed);
        }
        if let Some(lag) = lag {
            f.lag.store(i64::try_from(lag).unwrap_or(i64::MAX), Ordering::Relaxed);
        }
    }

    /// What a successful follower pass learned of the completeness of the chain's answers.
    pub fn follow_facts(&self, facts: FollowFacts) {
        let f = &self.follower;
        f.uncertain_blocks.store(facts.uncertain_blocks, Ordering::Relaxed);
        f.held.store(facts.held, Ordering::Relaxed);
        f.disagreements.fetch_add(facts.disagreements, Ordering::Relaxed);
        f.second_pass_found.fetch_add(facts.second_pass_found, Ordering::Relaxed);
        f.rechecks_pending.store(facts.rechecks_pending, Ordering::Relaxed);
    }

    /// The service's clock less the chain head's block time, as just measured at `at`.
    pub fn clock_skew(&self, at: DateTime<Utc>, seconds: i64) {
        self.follower.clock_skew.store(seconds, Ordering::Relaxed);
        self.follower.clock_skew_at.store(at.timestamp(), Ordering::Relaxed);
    }

    /// Whether the clocks are due to be compared again at `now`.
    pub fn clock_skew_due(&self, now: DateTime<Utc>) -> bool {
        now.timestamp() - self.follower.clock_skew_at.load(Ordering::Relaxed) >= CLOCK_SKEW_EVERY_SECONDS
    }

    /// A follower pass failed; `final_head` is the chain's newest final block, when it could be
    /// read. Answers the lag behind it (final blocks not scanned), when known.
    pub fn follow_failed(&self, final_head: Option<u64>) -> Option<u64> {
        let f = &self.follower;
        f.attempted.store(true, Ordering::Relaxed);
        f.consecutive_failures.fetch_add(1, Ordering::Relaxed);
        let scanned = u64::try_from(f.scanned_to.load(Ordering::Relaxed)).ok()?;
        let lag = final_head?.saturating_sub(scanned);
        f.lag.store(i64::try_from(lag).unwrap_or(i64::MAX), Ordering::Relaxed);
        Some(lag)
    }

    fn follower_snapshot(&self) -> FollowerSnapshot {
        let f = &self.follower;
        let failures = f.consecutive_failures.load(Ordering::Relaxed);
        let state = if !self.enabled || !f.attempted.load(Ordering::Relaxed) {
            "off"
        } else if failures >= FOLLOWER_STALLED_AFTER_FAILURES {
            "stalled"
        } else if failures > 0 {
            "degraded"
        } else {
            "ok"
        };
        let last = f.last_success_at.load(Ordering::Relaxed);
        let skew = f.clock_skew.load(Ordering::Relaxed);
        FollowerSnapshot {
            state: state.into(),
            lag_blocks: u64::try_from(f.lag.load(Ordering::Relaxed)).ok(),
            last_success_at: (last != 0).then(|| DateTime::from_timestamp(last, 0).map(timestamp)).flatten(),
            consecutive_failures: failures,
            uncertain_blocks: f.uncertain_blocks.load(Ordering::Relaxed),
            held: f.held.load(Ordering::Relaxed),
            disagreements: f.disagreements.load(Ordering::Relaxed),
            second_pass_found: f.second_pass_found.load(Ordering::Relaxed),
            rechecks_pending: f.rechecks_pending.load(Ordering::Relaxed),
            clock_skew_seconds: (skew != i64::MIN).then_some(skew),
        }
    }

    /// A pass ran: `transitions` invoices changed, `items_failed` were backed off.
    pub fn pass_succeeded(&self, at: DateTime<Utc>, transitions: usize, items_failed: usize) {
        let (transitions, items_failed) = (to_u64(transitions), to_u64(items_failed));
        self.passes.fetch_add(1, Ordering::Relaxed);
        self.transitions.fetch_add(transitions, Ordering::Relaxed);
        self.items_failed.fetch_add(items_failed, Ordering::Relaxed);
        self.last_items_failed.store(items_failed, Ordering::Relaxed);
        self.consecutive_failures.store(0, Ordering::Relaxed);
        self.last_success_at.store(at.timestamp(), Ordering::Relaxed);
    }

    /// A pass failed as a whole (the store was unreachable); answers the failures in a row.
    pub fn pass_failed(&self) -> u64 {
        self.passes.fetch_add(1, Ordering::Relaxed);
        self.failed_passes.fetch_add(1, Ordering::Relaxed);
        self.consecutive_failures.fetch_add(1, Ordering::Relaxed) + 1
    }

    /// A pass panicked; the worker restarts it. Answers the failures in a row.
    pub fn panicked(&self) -> u64 {
        self.panics.fetch_add(1, Ordering::Relaxed);
        self.pass_failed()
    }

    pub fn snapshot(&self, now: DateTime<Utc>) -> WorkerSnapshot {
        let last = self.last_success_at.load(Ordering::Relaxed);
        let consecutive_failures = self.consecutive_failures.load(Ordering::Relaxed);
        let since = now.timestamp() - if last == 0 { self.started_at } else { last };
        let state = if !self.enabled {
            "off"
        } else if since > self.stall_after_seconds {
            "stalled"
        } else if consecutive_failures > 0 || self.last_items_failed.load(Ordering::Relaxed) > 0 {
            "degraded"
        } else {
            "ok"
        };
        WorkerSnapshot {
            state: state.into(),
            last_success_at: (last != 0).then(|| DateTime::from_timestamp(last, 0).map(timestamp)).flatten(),
            consecutive_failures,
            restarts: self.panics.load(Ordering::Relaxed),
            items_failed: self.items_failed.load(Ordering::Relaxed),
            follower: self.follower_snapshot(),
        }
    }

    /// The Prometheus text exposition of the worker's counters.
    pub fn metrics(&self, now: DateTime<Utc>) -> String {
        let snapshot = self.snapshot(now);
        let up = u8::from(self.enabled && snapshot.state != "stalled");
        let f = &snapshot.follower;
        let lines: [(&str, &str, String); 12] = [
            ("stablepay_worker_up", "gauge", up.to_string()),
            ("stablepay_worker_passes_total", "counter", self.passes.load(Ordering::Relaxed).to_string()),
            ("stablepay_worker_failed_passes_total", "counter", self.failed_passes.load(Ordering::Relaxed).to_string()),
            ("stablepay_worker_restarts_total", "counter", snapshot.restarts.to_string()),
            ("stablepay_worker_transitions_total", "counter", self.transitions.load(Ordering::Relaxed).to_string()),
            ("stablepay_worker_items_failed_total", "counter", snapshot.items_failed.to_string()),
            (
                "stablepay_worker_last_success_timestamp_seconds",
                "gauge",
                self.last_success_at.load(Ordering::Relaxed).to_string(),
            ),
            ("stablepay_chain_follow_uncertain_blocks", "gauge", f.uncertain_blocks.to_string()),
            ("stablepay_chain_follow_disagreements_total", "counter", f.disagreements.to_string()),
            ("stablepay_chain_second_pass_found_total", "counter", f.second_pass_found.to_string()),
            ("stablepay_chain_rechecks_pending", "gauge", f.rechecks_pending.to_string()),
            (
                "stablepay_chain_clock_skew_seconds",
                "gauge",
                f.clock_skew_seconds.map_or("NaN".into(), |s| s.to_string()),
            ),
        ];
        let mut out = String::new();
        for (name, kind, value) in lines {
            out.push_str(&format!("# TYPE {name} {kind}\n{name} {value}\n"));
        }
        out
    }

    pub fn is_stalled(&self, now: DateTime<Utc>) -> bool {
        self.snapshot(now).state == "stalled"
    }
}

fn to_u64(n: usize) -> u64 {
    u64::try_from(n).unwrap_or(u64::MAX)
}

/// The worker as a merchant's readiness reports it: its passes, and the chain follower's lag.
pub fn worker_facts(snapshot: &WorkerSnapshot) -> stablepay_domain::diagnostics::WorkerFacts {
    use stablepay_domain::diagnostics::{ReadinessStatus, WorkerFacts};
    let (status, mut message) = match snapshot.state.as_str() {
        "ok" => (ReadinessStatus::Ok, "the background worker's passes succeed".to_owned()),
        "off" => (ReadinessStatus::Ok, "this process runs no worker (worker processes run elsewhere)".to_owned()),
        "stalled" => (ReadinessStatus::Error, "the background worker has not completed a pass for too long".to_owned()),
        other => (
            ReadinessStatus::Warning,
            format!("the background worker is {other}: some of its work failed and is retried"),
        ),
    };
    let follower = &snapshot.follower;
    let status = match follower.state.as_str() {
        "degraded" | "stalled" => {
            let lag = follower.lag_blocks.map_or_else(String::new, |l| format!(", {l} final blocks behind"));
            message.push_str(&format!("; the chain follower is {}{lag}", follower.state));
            status.max(if follower.state == "stalled" { ReadinessStatus::Error } else { ReadinessStatus::Warning })
        }
        _ => status,
    };
    WorkerFacts { status, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        let t0 = Utc::now();
        let s = WorkerStatus::running(Duration::from_secs(1), t0);
        assert_eq!(s.snapshot(t0).state, "ok");
        // An idle worker rests up to a minute between passes: a minute and a half is not stalled.
        assert_eq!(s.snapshot(t0 + chrono::Duration::seconds(90)).state, "ok");
        assert_eq!(s.snapshot(t0 + chrono::Duration::seconds(121)).state, "stalled", "never succeeded");
        s.pass_succeeded(t0, 3, 0);
        assert_eq!(s.snapshot(t0 + chrono::Duration::seconds(30)).state, "ok");
        assert_eq!(s.pass_failed(), 1);
        assert_eq!(s.snapshot(t0).state, "degraded");
        assert_eq!(s.panicked(), 2);
        s.pass_succeeded(t0, 0, 2);
        let snap = s.snapshot(t0);
        assert_eq!((snap.state.as_str(), snap.restarts, snap.items_failed), ("degraded", 1, 2));
        assert!(s.metrics(t0).contains("stablepay_worker_transitions_total 3\n"));
        assert_eq!(WorkerStatus::off(t0).snapshot(t0 + chrono::Duration::days(9)).state, "off");
    }

    #[test]
    fn follower_states_and_lag() {
        let t0 = Utc::now();
        let s = WorkerStatus::running(Duration::from_secs(1), t0);
        assert_eq!(s.snapshot(t0).follower.state, "off");
        assert_eq!(s.follow_failed(Some(10)), None, "nothing scanned yet: no lag known");
        s.followed(t0, Some(100), Some(0));
        assert_eq!((s.snapshot(t0).follower.state.as_str(), s.snapshot(t0).follower.lag_blocks), ("ok", Some(0)));
        assert_eq!(s.follow_failed(Some(107)), Some(7));
        assert_eq!(s.snapshot(t0).follower.state, "degraded");
        for _ in 1..FOLLOWER_STALLED_AFTER_FAILURES {
            s.follow_failed(None);
        }
        let f = s.snapshot(t0).follower;
        assert_eq!((f.state.as_str(), f.lag_blocks, f.consecutive_failures), ("stalled", Some(7), 5));
        s.followed(t0, Some(107), Some(0));
        assert_eq!(s.snapshot(t0).follower.state, "ok");
    }
}
