//! The rest of an idle worker loop.

use chrono::{DateTime, Duration, Utc};

/// The kinds of work the worker's loops do, each with a next due time of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WorkKind {
    /// The due pass: checkout and invoice expiry, past due, payment link expiry, and the
    /// outbox's emails (invoice emails, account links, notices) and their retries.
    Due,
    /// Exports waiting to be written (or left by a worker that stopped), and ready files
    /// reaching their expiry.
    Exports,
    /// Reconciliation runs waiting (or left by a worker that stopped).
    ReconciliationRuns,
    /// Webhook deliveries waiting for an attempt or a retry (or left by a worker that stopped).
    WebhookDeliveries,
}

/// The longest an idle loop rests. Work with no due time of its own (reminder slots, monthly
/// statements, the months of events, retention, the daily reconciliation runs, incident alerts
/// when a notification was lost) is looked at at least this often; a lost notification delays
/// new work at most this long.
pub const IDLE_REST_SECONDS: i64 = 60;

/// How long an idle loop rests when work is due but was not taken: held by another worker's
/// lease, a failure's backoff or a payment still being verified, all of which end without a
/// notification.
pub const HELD_REST_SECONDS: i64 = 15;

/// How long a loop whose last pass found nothing to do rests, at `now`: until `next`, the
/// earliest time its kind of work comes due (none known: the longest rest), never less than
/// `interval` (the loop's pace when busy) and never more than [`IDLE_REST_SECONDS`];
/// [`HELD_REST_SECONDS`] when `next` has come and the pass still found nothing (the work is
/// held).
pub fn rest(now: DateTime<Utc>, next: Option<DateTime<Utc>>, interval: Duration) -> Duration {
    let longest = Duration::seconds(IDLE_REST_SECONDS);
    let wait = match next {
        None => longest,
        Some(at) if at <= now => Duration::seconds(HELD_REST_SECONDS),
        Some(at) => at - now,
    };
    wait.clamp(interval.min(longest), longest)
}

/// One claim of due work: how many items it takes at the most, and how long it holds them
/// (other workers skip them meanwhile; a worker that dies leaves them to the next after that).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Batch {
    /// How many items at the most.
    pub limit: u32,
    /// How long each is held, in seconds.
    pub lease_seconds: u32,
}

/// A retry schedule: the first wait after one failure, doubled per failure in a row up to
/// `max_doublings` times, never longer than `longest`. The store is handed the schedule's
/// numbers where SQL pushes a lease (the due work), so the two cannot differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    /// The wait after the first failure, in seconds.
    pub first_seconds: u32,
    /// The longest wait, in seconds.
    pub longest_seconds: u32,
    /// How many times the wait doubles at most.
    pub max_doublings: u32,
}

impl Backoff {
    /// The wait after `failures` failures in a row (none or one: the first wait).
    pub fn delay(self, failures: u32) -> Duration {
        let doublings = failures.saturating_sub(1).min(self.max_doublings).min(31);
        let seconds = u64::from(self.first_seconds).saturating_mul(1u64 << doublings);
        Duration::seconds(i64::try_from(seconds.min(u64::from(self.longest_seconds))).unwrap_or(i64::MAX))
    }
}

/// The outbox's schedule for an email whose attempt failed: 30 seconds doubled per attempt,
/// at most an hour.
pub const EMAIL_BACKOFF: Backoff = Backoff { first_seconds: 30, longest_seconds: 3600, max_doublings: 20 };

/// The schedule of an invoice whose due work failed (for operators, who see the failures in a
/// row): 30 seconds doubled per failure, at most an hour; a failure more than
/// [`DUE_FAILURES_FORGOTTEN_SECONDS`] after the previous one starts the count again.
pub const DUE_WORK_BACKOFF: Backoff = Backoff { first_seconds: 30, longest_seconds: 3600, max_doublings: 7 };

/// After this long without a failure, an invoice's due work counts its failures from one again.
pub const DUE_FAILURES_FORGOTTEN_SECONDS: u32 = 2 * 3600;

/// How work that failed again and again is backed off: by `backoff` for its failures in a row,
/// counted from one again after `forgotten_after_seconds` without a failure.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DueSchedule {
    /// The wait for a number of failures in a row.
    pub backoff: Backoff,
    /// How long without a failure makes the next one the first again.
    pub forgotten_after_seconds: u32,
}

/// The due work's schedule: [`DUE_WORK_BACKOFF`], forgotten after
/// [`DUE_FAILURES_FORGOTTEN_SECONDS`].
pub const DUE_WORK_SCHEDULE: DueSchedule =
    DueSchedule { backoff: DUE_WORK_BACKOFF, forgotten_after_seconds: DUE_FAILURES_FORGOTTEN_SECONDS };

/// How long a payment whose verification the chain's endpoints did not answer waits for the
/// next check.
pub const CHAIN_SILENT_RETRY_SECONDS: u32 = 5;

/// How long a payment waits for the next check when the chain cannot be asked (no endpoint
/// serving the configured chain) or the check failed inside the service.
pub const CHECK_FAILED_RETRY_SECONDS: u32 = 30;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_backoff_doubles_per_failure_up_to_its_bounds() {
        let b = Backoff { first_seconds: 30, longest_seconds: 3600, max_doublings: 7 };
        let waits: Vec<i64> = (0..10).map(|n| b.delay(n).num_seconds()).collect();
        assert_eq!(waits, [30, 30, 60, 120, 240, 480, 960, 1920, 3600, 3600]);
        let few = Backoff { first_seconds: 10, longest_seconds: 1_000_000, max_doublings: 2 };
        assert_eq!(few.delay(9).num_seconds(), 40, "at most two doublings");
        assert_eq!(EMAIL_BACKOFF.delay(u32::MAX).num_seconds(), 3600);
    }

    fn at(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + seconds, 0).unwrap()
    }

    #[test]
    fn an_idle_loop_rests_until_its_next_due_time_within_its_bounds() {
        let second = Duration::seconds(1);
        let now = at(0);
        // Nothing known: the longest rest.
        assert_eq!(rest(now, None, second), Duration::seconds(IDLE_REST_SECONDS));
        // Due in 7 s: 7 s; in an hour: the longest rest; in 10 ms: the loop's interval.
        assert_eq!(rest(now, Some(at(7)), second), Duration::seconds(7));
        assert_eq!(rest(now, Some(at(3600)), second), Duration::seconds(IDLE_REST_SECONDS));
        assert_eq!(rest(now, Some(now + Duration::milliseconds(10)), second), second);
        // Due already, yet the pass found nothing: held.
        assert_eq!(rest(now, Some(at(-5)), second), Duration::seconds(HELD_REST_SECONDS));
        assert_eq!(rest(now, Some(now), second), Duration::seconds(HELD_REST_SECONDS));
        // An interval longer than the longest rest is kept to it.
        assert_eq!(rest(now, Some(at(7)), Duration::seconds(600)), Duration::seconds(IDLE_REST_SECONDS));
    }
}
