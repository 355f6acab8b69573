//! Operational figures for the metrics endpoint: the pool's use and the due-work queues.

use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Double, Text};
use diesel_async::RunQueryDsl;
use stablepay_domain::Error;

use crate::error::db;
use crate::pool::PgStore;

/// One queue of due work: how many items are due now, and how long the oldest has waited
/// (seconds past its due time; 0 when the queue is empty).
#[derive(Debug, Clone, PartialEq, QueryableByName)]
pub struct QueueStat {
    /// `expiry` (pending checkouts past expiry), `verification` (live payments being
    /// verified), `deliveries` (webhook deliveries due), `emails` (emails due).
    #[diesel(sql_type = Text)]
    pub queue: String,
    /// Items due now.
    #[diesel(sql_type = BigInt)]
    pub depth: i64,
    /// Seconds the oldest due item has waited.
    #[diesel(sql_type = Double)]
    pub oldest_age_seconds: f64,
}

/// One query, four queues. Test-mode checkouts are judged by the real clock here (a merchant's
/// test clock can only make more of them due, and the test helpers run those at once).
const QUEUES: &str = r#"
SELECT 'expiry' AS queue, count(*) AS depth,
       coalesce(extract(epoch FROM now() - min(expires_at)), 0)::float8 AS oldest_age_seconds
  FROM checkout_sessions WHERE status = 'pending' AND expires_at <= now()
UNION ALL
SELECT 'verification', count(*), coalesce(extract(epoch FROM now() - min(detected_at)), 0)::float8
  FROM payments WHERE mode = 'live' AND status IN ('detected', 'validating')
UNION ALL
SELECT 'deliveries', count(*), coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0)::float8
  FROM webhook_deliveries WHERE status IN ('pending', 'retry_scheduled') AND next_attempt_at <= now()
UNION ALL
SELECT 'emails', count(*), coalesce(extract(epoch FROM now() - min(next_attempt_at)), 0)::float8
  FROM emails WHERE status = 'queued' AND next_attempt_at <= now()
"#;

/// The pool's state: connections open, idle, and the most it opens.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolUse {
    /// Connections open now.
    pub open: usize,
    /// Of those, idle.
    pub idle: usize,
    /// The pool's limit.
    pub max: usize,
    /// Requests waiting for a connection.
    pub waiting: usize,
}

impl PgStore {
    /// The pool's use now.
    pub fn pool_use(&self) -> PoolUse {
        let s = self.pool.status();
        PoolUse { open: s.size, idle: s.available, max: s.max_size, waiting: s.waiting }
    }

    /// The due-work queues now (one query).
    pub async fn queue_stats(&self) -> Result<Vec<QueueStat>, Error> {
        let mut conn = self.conn().await?;
        diesel::sql_query(QUEUES).load(&mut conn).await.map_err(db)
    }
}
