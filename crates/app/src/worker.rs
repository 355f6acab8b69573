//! The worker runtime: runs the time-based jobs on a schedule until told to stop.
//!
//! Every job claims its rows with `FOR UPDATE SKIP LOCKED` and is idempotent, so any number of
//! workers (in `serve` processes or `worker` processes) can run at once. The loop is supervised:
//! a pass that fails or panics is logged, counted in the worker's status (readiness and
//! metrics show it), and the loop goes on after a backoff. It never ends but on `stop`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use futures_util::FutureExt;
use stablepay_domain::schedule::{IDLE_REST_SECONDS, WorkKind};
use stablepay_http::status::WorkerStatus;
use stablepay_postgres::WorkWakes;
use tokio::sync::watch;

use crate::wiring::Adapters;

/// The longest wait after failed passes.
const MAX_BACKOFF: Duration = Duration::from_secs(30);

pub async fn run(
    adapters: Adapters,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
    status: Arc<WorkerStatus>,
    wakes: WorkWakes,
) {
    tracing::info!(interval_ms = interval.as_millis(), "worker started");
    loop {
        let pass = AssertUnwindSafe(crate::jobs::run_due(&adapters, &stop)).catch_unwind().await;
        let mut busy = false;
        let failures_in_a_row = match pass {
            Ok(Ok(pass)) => {
                busy = pass.busy;
                let report = pass.due;
                status.pass_succeeded(chrono::Utc::now(), report.changed, report.failed.len() + pass.emails_failed);
                if report.changed > 0 {
                    tracing::info!(transitions = report.changed, "worker ran due transitions");
                }
                0
            }
            Ok(Err(e)) => {
                let n = status.pass_failed();
                tracing::warn!(error = %e, failures_in_a_row = n, "worker pass failed; retrying after a backoff");
                n
            }
            Err(_) => {
                let n = status.panicked();
                tracing::error!(failures_in_a_row = n, "worker pass panicked; restarting it after a backoff");
                n
            }
        };
        if *stop.borrow() {
            break;
        }
        let wait = if failures_in_a_row > 0 || busy {
            backoff(interval, failures_in_a_row)
        } else {
            idle_rest(&adapters, wakes.listening(), WorkKind::Due, interval).await
        };
        tokio::select! {
            _ = tokio::time::sleep(wait) => {}
            _ = wakes.due.notified() => {}
            _ = stop.changed() => break,
        }
    }
    tracing::info!("worker stopped");
}

/// How long a loop of `kind` whose pass found nothing to do rests: until its next due time
/// (the domain's schedule) while new work is announced (`listening`); its busy pace, `interval`,
/// while the notification connection is down (new work would go unannounced).
pub(crate) async fn idle_rest(adapters: &Adapters, listening: bool, kind: WorkKind, interval: Duration) -> Duration {
    if !listening {
        return interval;
    }
    let busy = chrono::Duration::from_std(interval).unwrap_or(chrono::Duration::seconds(1));
    adapters.use_cases().schedule().rest(kind, busy).await.to_std().unwrap_or(interval)
}

/// The chain loop: verifies payments in flight and follows transfers every `poll`, supervised
/// like the due-work loop (a pass that fails or panics is logged and the loop goes on).
pub async fn run_chain(
    adapters: Adapters,
    poll: Duration,
    mut stop: watch::Receiver<bool>,
    status: Arc<WorkerStatus>,
    wakes: WorkWakes,
) {
    tracing::info!(poll_ms = poll.as_millis(), live = adapters.chain.is_live(), "chain worker started");
    let mut failures_in_a_row: u64 = 0;
    loop {
        let pass = AssertUnwindSafe(crate::jobs::chain_pass(&adapters, poll, &status)).catch_unwind().await;
        let mut more = false;
        failures_in_a_row = match pass {
            Ok(Ok(report)) => {
                if report.settled + report.detected + report.unattributed > 0 {
                    tracing::info!(?report, "chain pass");
                }
                more = report.more;
                0
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "chain pass failed; retrying after a backoff");
                failures_in_a_row + 1
            }
            Err(_) => {
                let n = status.panicked();
                tracing::error!(failures_in_a_row = n, "chain pass panicked; restarting it after a backoff");
                failures_in_a_row + 1
            }
        };
        // A full batch goes on at once (a backlog drains at full speed); otherwise wait. With no
        // chain endpoint there is nothing to follow: the loop rests until a live payment is
        // reported (its verification answers that the chain is not configured).
        let pause = if more {
            Duration::ZERO
        } else if failures_in_a_row == 0 && !adapters.chain.is_live() && wakes.listening() {
            Duration::from_secs(IDLE_REST_SECONDS.unsigned_abs())
        } else {
            backoff(poll, failures_in_a_row)
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = wakes.chain.notified(), if !adapters.chain.is_live() => {}
            _ = stop.changed() => break,
        }
    }
    tracing::info!("chain worker stopped");
}

/// The export loop: writes waiting exports' files one at a time (a long export never holds up
/// the due work) and deletes expired files; when idle it rests until the next export is due
/// or one is queued; supervised like the other loops. A graceful stop ends it between two exports or two chunks' pages; an export cut
/// off is taken up again by a worker after its lease.
pub async fn run_exports(adapters: Adapters, interval: Duration, stop: watch::Receiver<bool>, wakes: WorkWakes) {
    use stablepay_domain::export::service::ExportRun;
    let idle = Idle { adapters: adapters.clone(), kind: WorkKind::Exports, wakes };
    supervised("export", interval, stop, Some(idle), move |stop| {
        let adapters = adapters.clone();
        async move {
            let expired = adapters.use_cases().exports().expire_due(100).await?;
            if expired > 0 {
                tracing::info!(expired, "export files expired and deleted");
            }
            let run = adapters.use_cases().exports().run_one(&WorkerPace { stop }).await?;
            match &run {
                ExportRun::Idle => {}
                ExportRun::Ready(id) => tracing::info!(export = %id, "export ready"),
                ExportRun::Cancelled(id) => tracing::info!(export = %id, "export cancelled while it was written"),
                ExportRun::Failed(id) => tracing::warn!(export = %id, "export failed"),
                ExportRun::Interrupted(id) => tracing::info!(export = %id, "export left to another worker"),
            }
            Ok(matches!(run, ExportRun::Ready(_) | ExportRun::Cancelled(_) | ExportRun::Failed(_)))
        }
    })
    .await;
}

/// How long the export worker rests after each page, as a share of the page's own time: the
/// file is written at about three quarters of the speed it could, and the API keeps the rest of
/// the machine (docs/benchmarks.md, "Exports": 0.5 and 0.3 measured, 0.3 meets every aim).
const EXPORT_REST_RATIO: f64 = 0.3;

/// The export worker's pace: a rest after each page in proportion to its time, cut short (and
/// the export left to its lease) when the worker is told to stop.
struct WorkerPace {
    stop: watch::Receiver<bool>,
}

#[async_trait::async_trait]
impl stablepay_domain::export::ports::ExportPace for WorkerPace {
    async fn next_page(&self, busy: Duration) -> bool {
        let mut stop = self.stop.clone();
        if *stop.borrow() {
            return false;
        }
        let rest = busy.mul_f64(EXPORT_REST_RATIO);
        if !rest.is_zero() {
            tokio::select! {
                _ = tokio::time::sleep(rest) => {}
                _ = stop.changed() => {}
            }
        }
        !*stop.borrow()
    }
}

/// How often a worker looks whether the day's reconciliation runs are queued.
const DAILY_RUNS_CHECK_SECONDS: i64 = 10;

/// The reconciliation loop: runs waiting reconciliation runs one at a time (each reads the
/// live chain for its period); when idle it rests until a run is due or queued (at most a
/// minute: the daily runs are queued by that look); supervised like the other loops. A
/// run cut off (a stop, a chain outage) is taken up again after its lease.
pub async fn run_reconciliations(
    adapters: Adapters,
    interval: Duration,
    stop: watch::Receiver<bool>,
    wakes: WorkWakes,
) {
    use stablepay_domain::reconciliation::service::runs::RunStep;
    let idle = Idle { adapters: adapters.clone(), kind: WorkKind::ReconciliationRuns, wakes };
    // When this process last looked whether yesterday's daily runs are queued (Unix seconds).
    let daily_checked = std::sync::Arc::new(std::sync::atomic::AtomicI64::new(0));
    supervised("reconciliation", interval, stop, Some(idle), move |stop| {
        let (adapters, daily_checked) = (adapters.clone(), daily_checked.clone());
        async move {
            let stopping = || *stop.borrow();
            let use_cases = adapters.use_cases();
            // A run of yesterday for every live merchant, once a day, whichever worker is first
            // (looked at every DAILY_RUNS_CHECK_SECONDS).
            let now = use_cases.clock().system_now();
            let last = daily_checked.load(std::sync::atomic::Ordering::Relaxed);
            if now.timestamp() - last >= DAILY_RUNS_CHECK_SECONDS {
                daily_checked.store(now.timestamp(), std::sync::atomic::Ordering::Relaxed);
                let queued = use_cases.reconciliation_runs().queue_daily(now).await?;
                if queued > 0 {
                    tracing::info!(runs = queued, "daily reconciliation runs queued");
                }
            }
            let follower = use_cases.follower();
            let follower = adapters.chain.is_live().then_some(&follower);
            let step = use_cases.reconciliation_runs().run_one(&stopping, follower).await?;
            match &step {
                RunStep::Idle => {}
                RunStep::Completed(id) => tracing::info!(run = %id, "reconciliation run completed"),
                RunStep::Failed(id) => tracing::warn!(run = %id, "reconciliation run failed"),
                RunStep::Interrupted(id) => tracing::info!(run = %id, "reconciliation run left to another worker"),
            }
            Ok(matches!(step, RunStep::Completed(_) | RunStep::Failed(_)))
        }
    })
    .await;
}

/// The relayer's loop (only with `STABLEPAY_RELAYER_KEY`): one pass of the sender every `poll`
/// (at once again while queued submissions wait), supervised like the other loops. Every worker
/// of every replica runs it; the sender's lease lets one of them send at a time, and another
/// takes over within the lease (30 s) when that one stops.
pub async fn run_relay(adapters: Adapters, poll: Duration, stop: watch::Receiver<bool>) {
    if !adapters.use_cases().relays().offered() {
        return;
    }
    let holder = sender_id(&adapters);
    supervised("relayer", poll, stop, None, move |_| {
        let (adapters, holder) = (adapters.clone(), holder.clone());
        async move {
            let pass = adapters.use_cases().relays().send_pass(&holder).await?;
            for status in &pass.settled {
                metrics::counter!("stablepay_relayer_outcomes_total", "outcome" => status.as_str()).increment(1);
            }
            metrics::counter!("stablepay_relayer_transactions_sent_total").increment(pass.sent);
            metrics::counter!("stablepay_relayer_replacements_total").increment(pass.bumped);
            metrics::counter!("stablepay_relayer_broadcast_failures_total").increment(pass.broadcast_failures);
            if pass.sent + pass.bumped > 0 || !pass.settled.is_empty() || pass.broadcast_failures > 0 {
                tracing::info!(
                    sent = pass.sent,
                    replaced = pass.bumped,
                    settled = ?pass.settled,
                    broadcast_failures = pass.broadcast_failures,
                    reports_failed = pass.reports_failed,
                    "relayer pass"
                );
            }
            Ok(pass.more)
        }
    })
    .await;
}

/// This process's name as the relayer's sender: unique among replicas (host, process, and
/// random bytes for a process id reused by a restarted container).
fn sender_id(adapters: &Adapters) -> String {
    use stablepay_domain::ports::Crypto;
    let mut random = [0u8; 6];
    adapters.crypto.fill_random(&mut random);
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "host".into());
    let tag: String = random.iter().map(|b| format!("{b:02x}")).collect();
    format!("{host}/{}/{tag}", std::process::id())
}

/// How a supervised loop rests when idle: until its kind's next due time, or its notification.
struct Idle {
    adapters: Adapters,
    kind: WorkKind,
    wakes: WorkWakes,
}

/// A supervised loop of `pass`es: a pass answers whether more work is waiting (the next pass
/// starts at once) or not (the next waits `interval`, or with `idle` until its next due time or
/// its notification); one that fails or panics is logged and retried after a backoff; the loop
/// ends on `stop` (each pass gets its receiver to stop between two steps).
async fn supervised<F, Fut>(
    name: &'static str,
    interval: Duration,
    mut stop: watch::Receiver<bool>,
    idle: Option<Idle>,
    mut pass: F,
) where
    F: FnMut(watch::Receiver<bool>) -> Fut,
    Fut: std::future::Future<Output = Result<bool, stablepay_domain::Error>>,
{
    tracing::info!(loop_name = name, "worker loop started");
    let mut failures_in_a_row: u64 = 0;
    loop {
        let outcome = AssertUnwindSafe(pass(stop.clone())).catch_unwind().await;
        let mut more = false;
        failures_in_a_row = match outcome {
            Ok(Ok(m)) => {
                more = m;
                0
            }
            Ok(Err(e)) => {
                tracing::warn!(loop_name = name, error = %e, "pass failed; its work is taken up again after its lease");
                failures_in_a_row + 1
            }
            Err(_) => {
                tracing::error!(loop_name = name, "pass panicked; restarting it after a backoff");
                failures_in_a_row + 1
            }
        };
        if *stop.borrow() {
            break;
        }
        let pause = match &idle {
            _ if more => Duration::ZERO,
            Some(i) if failures_in_a_row == 0 => idle_rest(&i.adapters, i.wakes.listening(), i.kind, interval).await,
            _ => backoff(interval, failures_in_a_row),
        };
        let woken = async {
            match idle.as_ref().and_then(|i| i.wakes.of(i.kind)) {
                Some(wake) => wake.notified().await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            _ = tokio::time::sleep(pause) => {}
            _ = woken => {}
            _ = stop.changed() => break,
        }
    }
    tracing::info!(loop_name = name, "worker loop stopped");
}

/// The interval, doubled per failure in a row, at most [`MAX_BACKOFF`] (never below the
/// interval).
fn backoff(interval: Duration, failures_in_a_row: u64) -> Duration {
    let doubled = interval.saturating_mul(1u32 << failures_in_a_row.min(16));
    doubled.min(MAX_BACKOFF.max(interval))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_cap() {
        let s = Duration::from_secs(1);
        assert_eq!(backoff(s, 0), s);
        assert_eq!(backoff(s, 1), Duration::from_secs(2));
        assert_eq!(backoff(s, 4), Duration::from_secs(16));
        assert_eq!(backoff(s, 9), MAX_BACKOFF);
        assert_eq!(backoff(Duration::from_secs(60), 3), Duration::from_secs(60));
    }
}
