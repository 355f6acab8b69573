//! When the worker's loops have work next (the domain's `DueTimes` port), and the notification
//! of new work that wakes them (`NOTIFY stablepay_work`, sent by the triggers of the migration
//! `work_notifications`).
//!
//! Each time is the earliest of a few index look-ups (one row each: `ORDER BY ... LIMIT 1` on
//! the partial index the loop's claim reads); a test-mode merchant whose clock runs ahead adds
//! its own look-ups, its times brought back to real time by its offset (`scope_clocks`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::sql_types::{Nullable, Timestamptz};
use diesel_async::RunQueryDsl;
use stablepay_domain::Error;
use stablepay_domain::schedule::{DueTimes, WorkKind};
use tokio::sync::Notify;

use crate::error::db;
use crate::pool::PgStore;

/// The channel of new work.
pub const WORK_CHANNEL: &str = "stablepay_work";

/// A test scope's earliest time of `$table` rows matching `$filter`, ordered by `$column`, in
/// real time, for every test clock that runs ahead.
macro_rules! ahead {
    ($table:literal, $column:literal, $filter:literal) => {
        concat!(
            "SELECT (SELECT r.",
            $column,
            " FROM ",
            $table,
            " r WHERE r.merchant_id = c.merchant_id AND r.mode = 'test' AND ",
            $filter,
            " ORDER BY r.",
            $column,
            " LIMIT 1) - make_interval(secs => c.ahead_seconds) \
             FROM scope_clocks c WHERE c.mode = 'test' AND c.ahead_seconds > 0"
        )
    };
}

/// The due pass: pending checkouts expiring, invoices coming due, links expiring (each by its
/// scope's clock), and the emails of the one outbox waiting for an attempt.
const DUE: &str = concat!(
    "SELECT min(t) AS next FROM ( \
    (SELECT expires_at AS t FROM checkout_sessions WHERE status = 'pending' ORDER BY expires_at LIMIT 1) \
    UNION ALL ",
    ahead!("checkout_sessions", "expires_at", "r.status = 'pending'"),
    " UNION ALL (SELECT due_at FROM invoices WHERE past_due_at IS NULL AND due_at IS NOT NULL \
        AND collection_state IN ('open', 'partially_paid') ORDER BY due_at LIMIT 1) \
    UNION ALL ",
    ahead!(
        "invoices",
        "due_at",
        "r.past_due_at IS NULL AND r.due_at IS NOT NULL AND r.collection_state IN ('open', 'partially_paid')"
    ),
    " UNION ALL (SELECT expires_at FROM payment_links WHERE NOT expiry_announced AND expires_at IS NOT NULL \
        AND lifecycle <> 'archived' ORDER BY expires_at LIMIT 1) \
    UNION ALL ",
    ahead!(
        "payment_links",
        "expires_at",
        "NOT r.expiry_announced AND r.expires_at IS NOT NULL AND r.lifecycle <> 'archived'"
    ),
    " UNION ALL (SELECT next_attempt_at FROM emails WHERE status = 'queued' ORDER BY next_attempt_at LIMIT 1) \
    ) due"
);

/// Exports: one waiting is due now, one being written when its lease ends, a ready file at its
/// expiry by its scope's clock.
const EXPORTS: &str = concat!(
    "SELECT min(t) AS next FROM ( \
    SELECT min(CASE WHEN status = 'queued' THEN now() ELSE lease_until END) AS t FROM exports \
        WHERE status IN ('queued', 'running') \
    UNION ALL (SELECT expires_at FROM exports WHERE status = 'ready' ORDER BY expires_at LIMIT 1) \
    UNION ALL ",
    ahead!("exports", "expires_at", "r.status = 'ready'"),
    ") due"
);

/// Reconciliation runs: one waiting is due now, one running when its lease ends.
const RUNS: &str = "SELECT min(CASE WHEN status = 'queued' THEN now() ELSE lease_until END) AS next \
    FROM reconciliation_runs WHERE status IN ('queued', 'running')";

/// Webhook deliveries: the next attempt or retry, or a lease's end.
const DELIVERIES: &str = "SELECT min(t) AS next FROM ( \
    (SELECT next_attempt_at AS t FROM webhook_deliveries WHERE status IN ('pending', 'retry_scheduled') \
        ORDER BY next_attempt_at LIMIT 1) \
    UNION ALL (SELECT lease_until FROM webhook_deliveries WHERE status = 'delivering' ORDER BY lease_until LIMIT 1) \
    ) due";

#[derive(diesel::QueryableByName)]
struct Next {
    #[diesel(sql_type = Nullable<Timestamptz>)]
    next: Option<DateTime<Utc>>,
}

#[async_trait]
impl DueTimes for PgStore {
    async fn next_due(&self, kind: WorkKind) -> Result<Option<DateTime<Utc>>, Error> {
        let sql = match kind {
            WorkKind::Due => DUE,
            WorkKind::Exports => EXPORTS,
            WorkKind::ReconciliationRuns => RUNS,
            WorkKind::WebhookDeliveries => DELIVERIES,
        };
        let row: Next = diesel::sql_query(sql).get_result(&mut *self.conn().await?).await.map_err(db)?;
        Ok(row.next)
    }

    async fn announce(&self) -> Result<(), Error> {
        diesel::sql_query("SELECT pg_notify($1, 'due')")
            .bind::<diesel::sql_types::Text, _>(WORK_CHANNEL)
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }
}

/// What wakes the worker's loops: one notifier per loop, and whether the `LISTEN` connection
/// is up (while it is down, new work announces nothing: the loops keep their busy pace).
#[derive(Clone, Default)]
pub struct WorkWakes {
    /// The due pass.
    pub due: Arc<Notify>,
    /// The export loop.
    pub exports: Arc<Notify>,
    /// The reconciliation loop.
    pub runs: Arc<Notify>,
    /// The chain loop (a live payment reported).
    pub chain: Arc<Notify>,
    listening: Arc<AtomicBool>,
}

impl WorkWakes {
    /// Whether a notification of new work would arrive now.
    pub fn listening(&self) -> bool {
        AtomicBool::load(&self.listening, Ordering::Relaxed)
    }

    /// The notifier of the loop doing work of `kind` (`None` for webhook deliveries: their loop
    /// listens on its own channel, `stablepay_webhooks`).
    pub fn of(&self, kind: WorkKind) -> Option<&Notify> {
        match kind {
            WorkKind::Due => Some(&self.due),
            WorkKind::Exports => Some(&self.exports),
            WorkKind::ReconciliationRuns => Some(&self.runs),
            WorkKind::WebhookDeliveries => None,
        }
    }

    fn wake_all(&self) {
        for n in [&self.due, &self.exports, &self.runs, &self.chain] {
            n.notify_one();
        }
    }
}

/// Listens for new work while `wakes` is held elsewhere, waking every loop on each notification
/// (and once when listening starts, for what was announced while it was down).
pub fn listen_for_work(database_url: String, wakes: WorkWakes) -> tokio::task::JoinHandle<()> {
    struct Work(WorkWakes);
    impl crate::listen::Listener for Work {
        fn wanted(&self) -> bool {
            Arc::strong_count(&self.0.due) > 1
        }
        fn listening(&self) {
            self.0.listening.store(true, Ordering::Relaxed);
            self.0.wake_all();
        }
        fn notified(&self, _: &str) {
            self.0.wake_all();
        }
        fn lost(&self) {
            self.0.listening.store(false, Ordering::Relaxed);
        }
    }
    let channel = crate::listen::Channel { name: WORK_CHANNEL, what: "work notification", meanwhile: "polling" };
    crate::listen::listen(database_url, channel, Work(wakes))
}
