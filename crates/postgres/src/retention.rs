//! Retention. Events, with their webhook deliveries and attempts, are kept by month
//! (partitions of `events`, `webhook_deliveries` and `webhook_attempts`, by the event's
//! `stored_at`, made ahead and dropped whole once past retention, with the SQL functions of
//! migration 000030). The purges, each one bounded statement, remove the rest: test-mode
//! events aged by a test clock running ahead of their month (with their deliveries and
//! attempts, deleted in the same statement, so the foreign keys hold at its end), finished
//! emails, and idempotency keys past their window. Each takes the oldest first and at most its
//! batch, so it holds few row locks for little time and never blocks requests.

use chrono::{DateTime, Utc};
use diesel::OptionalExtension;
use diesel::sql_types::{BigInt, Bool, Integer, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::Error;

use crate::error::db;

/// Test-mode events of the merchants whose test clock runs ahead, older than `$1` days by that
/// clock, none with a delivery still pending or being delivered: at most `$2`, oldest first,
/// found per merchant on `events_scope_created`. (The others are old in real time, and go with
/// their month.) The deliveries in flight are read on their partial indexes, and the rows to
/// delete are looked up by key (`= ANY` of the ids): no join the planner could turn into a
/// scan of the delivery tables.
const EVENTS: &str = "\
WITH doomed AS ( \
  SELECT old.id FROM scope_clocks c \
  CROSS JOIN LATERAL ( \
    SELECT e.id, e.created_at FROM events e \
    WHERE e.merchant_id = c.merchant_id AND e.mode = 'test' \
      AND e.created_at < c.now - make_interval(days => $1) \
      AND e.id NOT IN (SELECT event_id FROM webhook_deliveries WHERE status = 'pending' \
                       UNION ALL SELECT event_id FROM webhook_deliveries WHERE status = 'delivering') \
    ORDER BY e.created_at LIMIT $2 \
  ) old \
  WHERE c.mode = 'test' AND c.ahead_seconds > 0 \
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

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = Integer)]
    n: i32,
}

#[derive(diesel::QueryableByName)]
struct Flag {
    #[diesel(sql_type = Bool)]
    b: bool,
}

#[derive(diesel::QueryableByName)]
struct Month {
    #[diesel(sql_type = Text)]
    suffix: String,
}

#[derive(diesel::QueryableByName)]
struct Detaching {
    #[diesel(sql_type = Bool)]
    pending: bool,
}

/// The advisory lock of the months' upkeep (the SQL functions take the same key): one process
/// at a time makes or drops months.
const MONTHS_LOCK: &str = "hashtext('stablepay_months')";

/// The three tables of a month, in the order they are detached and dropped (each references
/// the next).
const MONTH_TABLES: [&str; 3] = ["webhook_attempts", "webhook_deliveries", "events"];

/// Makes the current month and the `ahead` after it, each if missing; how many were made.
pub(crate) async fn prepare_months(conn: &mut AsyncPgConnection, ahead: u32) -> Result<u32, Error> {
    let made: Count = diesel::sql_query("SELECT stablepay_prepare_months($1) AS n")
        .bind::<Integer, _>(i32::try_from(ahead).unwrap_or(i32::MAX))
        .get_result(conn)
        .await
        .map_err(db)?;
    Ok(u32::try_from(made.n).unwrap_or(0))
}

/// Drops the months that ended over `days` days ago with no delivery in flight; how many. Each
/// of a month's partitions is detached with `DETACH PARTITION ... CONCURRENTLY`, which takes no
/// lock that requests wait for (it waits, instead, for the transactions that could still see
/// the month), then the detached tables are dropped. A drop cut off half-way is finished by
/// the next call (`FINALIZE` of a pending detach, then the drop). Another process busy with
/// the months: nothing done now.
pub(crate) async fn drop_months(conn: &mut AsyncPgConnection, days: u32) -> Result<u32, Error> {
    let locked: Flag = diesel::sql_query(format!("SELECT pg_try_advisory_lock({MONTHS_LOCK}) AS b"))
        .get_result(conn)
        .await
        .map_err(db)?;
    if !locked.b {
        return Ok(0);
    }
    let waits = diesel::sql_query(format!("SET lock_timeout = '{DETACH_WAIT_MS}ms'")).execute(conn).await;
    let dropped = match waits {
        Ok(_) => drop_months_locked(conn, days).await,
        Err(e) => Err(db(e)),
    };
    let reset = diesel::sql_query("RESET lock_timeout").execute(conn).await;
    let unlocked = diesel::sql_query(format!("SELECT pg_advisory_unlock({MONTHS_LOCK})")).execute(conn).await;
    let dropped = dropped?;
    reset.map_err(db)?;
    unlocked.map_err(db)?;
    Ok(dropped)
}

/// The longest one step of a month's drop waits: for the month's tables' locks, or for the
/// transactions that could still see the month (a long report, a `pg_dump`). Past it, the
/// month's drop goes on at a later pass (a detach left pending is finished then), so the
/// worker's pass is never held up for longer.
const DETACH_WAIT_MS: u32 = 1000;

/// Whether `e` is a wait cut off by `lock_timeout`.
fn lock_timed_out(e: &diesel::result::Error) -> bool {
    matches!(e, diesel::result::Error::DatabaseError(_, info) if info.message().contains("lock timeout"))
}

async fn drop_months_locked(conn: &mut AsyncPgConnection, days: u32) -> Result<u32, Error> {
    let months: Vec<Month> = diesel::sql_query("SELECT s AS suffix FROM stablepay_months_past($1) AS s")
        .bind::<Integer, _>(i32::try_from(days).unwrap_or(i32::MAX))
        .load(conn)
        .await
        .map_err(db)?;
    let mut dropped = 0;
    for month in months {
        // Named by the catalog (`y2026m01`), checked again before it is written into DDL.
        if !month.suffix.chars().all(|c| c.is_ascii_alphanumeric()) {
            return Err(Error::Internal(format!("unexpected month partition suffix {:?}", month.suffix)));
        }
        for table in MONTH_TABLES {
            let partition = format!("{table}_{}", month.suffix);
            let state: Option<Detaching> = diesel::sql_query(
                "SELECT i.inhdetachpending AS pending FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid \
                 WHERE c.relname = $1 AND c.relnamespace = 'public'::regnamespace",
            )
            .bind::<Text, _>(&partition)
            .get_result(conn)
            .await
            .optional()
            .map_err(db)?;
            let how = match state {
                Some(Detaching { pending: true }) => "FINALIZE",
                Some(Detaching { pending: false }) => "CONCURRENTLY",
                None => continue,
            };
            match diesel::sql_query(format!("ALTER TABLE {table} DETACH PARTITION {partition} {how}"))
                .execute(conn)
                .await
            {
                Ok(_) => {}
                Err(e) if lock_timed_out(&e) => {
                    tracing::info!(
                        partition,
                        "a month of events past retention is still in use; its drop goes on later"
                    );
                    return Ok(dropped);
                }
                Err(e) => return Err(db(e)),
            }
        }
        let gone: Flag = diesel::sql_query("SELECT stablepay_drop_detached_month($1) AS b")
            .bind::<Text, _>(&month.suffix)
            .get_result(conn)
            .await
            .map_err(db)?;
        dropped += u32::from(gone.b);
    }
    Ok(dropped)
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

#[cfg(test)]
mod tests {
    use stablepay_domain::invoice::collection::CollectionState;

    use super::*;
    use crate::rows::in_list;

    /// A scheduled reminder's row stays while its invoice may still be collected: a draft
    /// (it may be issued) or any state the domain calls collectible.
    #[test]
    fn reminder_rows_stay_while_the_domain_may_still_collect() {
        let mut kept = vec![CollectionState::Draft];
        kept.extend(CollectionState::COLLECTIBLE);
        let filter = format!("i.collection_state NOT IN ({})", in_list(&kept));
        assert!(EMAILS.contains(&filter), "{EMAILS}");
    }
}
