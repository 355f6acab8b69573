//! Retention's purges, each one bounded statement: events (with their webhook deliveries and
//! attempts, deleted in the same statement, so the foreign keys hold at its end), finished
//! emails, and idempotency keys past their window. Each takes the oldest first and at most its
//! batch, so it holds few row locks for little time and never blocks requests. And the months
//! of events (partitions of `events`, `webhook_deliveries` and `webhook_attempts`, by the
//! event's `stored_at`): made ahead, and dropped whole once past retention, by the SQL
//! functions of migration 000030.

use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Integer, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::Error;

use crate::error::db;

/// Events older than `$1` days in their scope's time (a test-mode event by its merchant's test
/// clock), none with a delivery still pending or being delivered: at most `$2`, oldest first,
/// found per merchant and mode on `events_scope_created`. The deliveries in flight are read on
/// their partial indexes, and the rows to delete are looked up by key (`= ANY` of the ids): no
/// join the planner could turn into a scan of the delivery tables.
const EVENTS: &str = "\
WITH doomed AS ( \
  SELECT old.id FROM merchants m \
  CROSS JOIN (VALUES ('test'), ('live')) AS md(mode) \
  LEFT JOIN test_clocks c ON c.merchant_id = m.id AND md.mode = 'test' \
  CROSS JOIN LATERAL ( \
    SELECT e.id, e.created_at FROM events e \
    WHERE e.merchant_id = m.id AND e.mode = md.mode \
      AND e.created_at < now() + make_interval(secs => COALESCE(c.offset_seconds, 0)::float8) - make_interval(days => $1) \
      AND e.id NOT IN (SELECT event_id FROM webhook_deliveries WHERE status = 'pending' \
                       UNION ALL SELECT event_id FROM webhook_deliveries WHERE status = 'delivering') \
    ORDER BY e.created_at LIMIT $2 \
  ) old \
  ORDER BY old.created_at LIMIT $2 \
), gone AS ( \
  SELECT d.id FROM webhook_deliveries d WHERE d.event_id = ANY (ARRAY(SELECT id FROM doomed)) \
), attempts AS ( \
  DELETE FROM webhook_attempts a WHERE a.delivery_id = ANY (ARRAY(SELECT id FROM gone)) \
), deliveries AS ( \
  DELETE FROM webhook_deliveries d WHERE d.id = ANY (ARRAY(SELECT id FROM gone)) \
) \
DELETE FROM events e WHERE e.id = ANY (ARRAY(SELECT id FROM doomed))";

/// Finished emails (sent, failed, skipped) created over `$1` days ago: at most `$2`, oldest
/// first. A scheduled reminder of an invoice still collectible stays: its row is what tells the
/// reminder pass that the slot was sent (without it the slot would be sent again).
const EMAILS: &str = "\
DELETE FROM emails WHERE id IN ( \
  SELECT em.id FROM emails em JOIN invoices i ON i.id = em.invoice_id \
  WHERE em.status <> 'queued' AND em.created_at < now() - make_interval(days => $1) \
    AND (em.slot NOT LIKE 'schedule:%' OR i.collection_state NOT IN ('draft', 'open', 'past_due', 'partially_paid')) \
  ORDER BY em.created_at LIMIT $2)";

/// Idempotency keys created before `$1`: at most `$2`, oldest first.
const KEYS: &str = "\
DELETE FROM idempotency_keys WHERE (merchant_id, mode, key_type, key) IN ( \
  SELECT merchant_id, mode, key_type, key FROM idempotency_keys WHERE created_at < $1 ORDER BY created_at LIMIT $2)";

/// The longest a month's drop waits for its tables' locks (detaching a partition locks its
/// table for an instant, and requests queue behind a waiting lock): a month not locked in this
/// time is tried again at the next pass.
const DROP_WAIT_MS: i32 = 100;

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = Integer)]
    n: i32,
}

/// Makes the current month and the `ahead` after it, each if missing; how many were made.
pub(crate) async fn prepare_months(conn: &mut AsyncPgConnection, ahead: u32) -> Result<u32, Error> {
    let made: Count = diesel::sql_query("SELECT stablepay_prepare_months($1) AS n")
        .bind::<Integer, _>(i32::try_from(ahead).unwrap_or(i32::MAX))
        .get_result(conn)
        .await
        .map_err(db)?;
    Ok(u32::try_from(made.n).unwrap_or(0))
}

/// Drops the months that ended over `days` days ago with no delivery in flight; how many.
pub(crate) async fn drop_months(conn: &mut AsyncPgConnection, days: u32) -> Result<u32, Error> {
    let dropped: Count = diesel::sql_query("SELECT stablepay_drop_months($1, $2) AS n")
        .bind::<Integer, _>(i32::try_from(days).unwrap_or(i32::MAX))
        .bind::<Integer, _>(DROP_WAIT_MS)
        .get_result(conn)
        .await
        .map_err(db)?;
    Ok(u32::try_from(dropped.n).unwrap_or(0))
}

/// Runs a purge of `sql` (`$1` the days, `$2` the batch); how many rows it removed.
async fn purge(conn: &mut AsyncPgConnection, sql: &str, older_than_days: u32, batch: u32) -> Result<u64, Error> {
    let n = diesel::sql_query(sql)
        .bind::<Integer, _>(i32::try_from(older_than_days).unwrap_or(i32::MAX))
        .bind::<BigInt, _>(i64::from(batch))
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(u64::try_from(n).unwrap_or(u64::MAX))
}

pub(crate) async fn events(conn: &mut AsyncPgConnection, older_than_days: u32, batch: u32) -> Result<u64, Error> {
    purge(conn, EVENTS, older_than_days, batch).await
}

pub(crate) async fn emails(conn: &mut AsyncPgConnection, older_than_days: u32, batch: u32) -> Result<u64, Error> {
    purge(conn, EMAILS, older_than_days, batch).await
}

pub(crate) async fn keys(conn: &mut AsyncPgConnection, before: DateTime<Utc>, batch: u32) -> Result<u64, Error> {
    let n = diesel::sql_query(KEYS)
        .bind::<Timestamptz, _>(before)
        .bind::<BigInt, _>(i64::from(batch))
        .execute(conn)
        .await
        .map_err(db)?;
    Ok(u64::try_from(n).unwrap_or(u64::MAX))
}
