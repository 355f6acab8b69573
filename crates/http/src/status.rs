//! The background worker's state in this process: the worker reports each pass, and the
//! readiness and metrics endpoints show it, so a worker that fails or stops is never silent.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};

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
}

/// The worker's state as readiness and metrics show it.
#[derive(Debug, PartialEq)]
pub struct WorkerSnapshot {
    /// `ok`; `degraded` (the last pass failed, or some invoices' work failed and was backed
    /// off); `stalled` (no successful pass for longer than allowed: readiness fails); `off` (this
    /// process runs no worker).
    pub state: String,
    pub last_success_at: Option<String>,
    pub consecutive_failures: u64,
    /// Passes that panicked and were restarted.
    pub restarts: u64,
    /// Invoices whose due work failed (each backed off), since start.
    pub items_failed: u64,
}

impl WorkerStatus {
    /// A worker that runs every `interval`; it is stalled after ten intervals (at least a
    /// minute) without a successful pass.
    pub fn running(interval: Duration, now: DateTime<Utc>) -> Self {
        let stall = i64::try_from(interval.as_secs().saturating_mul(10)).unwrap_or(i64::MAX).max(60);
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
        }
    }

    /// The Prometheus text exposition of the worker's counters.
    pub fn metrics(&self, now: DateTime<Utc>) -> String {
        let snapshot = self.snapshot(now);
        let up = u8::from(self.enabled && snapshot.state != "stalled");
        let lines: [(&str, &str, String); 7] = [
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn states() {
        let t0 = Utc::now();
        let s = WorkerStatus::running(Duration::from_secs(1), t0);
        assert_eq!(s.snapshot(t0).state, "ok");
        assert_eq!(s.snapshot(t0 + chrono::Duration::seconds(61)).state, "stalled", "never succeeded");
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
}
