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

#[cfg(test)]
mod tests {
    use super::*;

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
