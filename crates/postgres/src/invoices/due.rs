//! Time-based work: claiming invoices with due transitions (with a lease, skipping rows other
//! workers hold) and moving a merchant's test clock.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::clock::MAX_TEST_CLOCK_OFFSET_SECONDS;
use stablepay_domain::ids::{InvoiceId, MerchantId, PaymentId};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::schedule::model::DueSchedule;
use stablepay_domain::{Error, Resource, Scope};

use crate::error::db;
use crate::rows::ScopedRow;
use crate::schema::{merchants, payments, test_clocks};

/// Claims invoices with due work. Each row is judged by its own scope's clock: real time in
/// live mode, real time plus the merchant's offset in test mode. Anything due in real time is
/// found by range scans of the partial indexes; only merchants whose test clock runs ahead
/// (offset > 0) add their own test rows (per-merchant indexes), so one merchant's clock never
/// widens the search for the others (a lateral join, kept from being flattened by `OFFSET 0`:
/// one index range per such merchant, never a join over every merchant's test rows). The
/// payments being verified are read on their own partial index (`payments_verifying`).
/// Claimed rows get a lease so other workers skip them; a scoped run (`$1`, the test clock
/// helper) ignores leases so it answers only after every due transition of its scope ran
/// (processing is idempotent and optimistically locked): it waits
/// for a row another transaction holds instead of skipping it, or a worker's claim of the same
/// row at that moment would leave the helper answering before the row's transition was done.
macro_rules! claim_due {
    ($lock:literal) => {
        concat!(
            r#"
WITH ahead AS (
    SELECT merchant_id, now AS horizon FROM scope_clocks
    WHERE mode = 'test' AND ahead_seconds > 0 AND ($1::text IS NULL OR merchant_id = $1)
), candidates AS (
    SELECT s.invoice_id AS id FROM checkout_sessions s
    WHERE s.status = 'pending' AND s.expires_at <= now()
      -- A checkout with a payment still being verified expires once it is settled.
      AND s.id NOT IN (SELECT p.checkout_session_id FROM payments p WHERE p.status IN ('detected', 'validating'))
    UNION
    SELECT s.invoice_id FROM ahead a CROSS JOIN LATERAL (
        SELECT s.invoice_id FROM checkout_sessions s
        WHERE s.merchant_id = a.merchant_id AND s.mode = 'test' AND s.status = 'pending' AND s.expires_at <= a.horizon
        OFFSET 0
    ) s
    UNION
    SELECT i.id FROM invoices i
    WHERE i.past_due_at IS NULL AND i.due_at IS NOT NULL
      AND i.collection_state IN ('open', 'partially_paid') AND i.due_at <= now()
    UNION
    SELECT i.id FROM ahead a CROSS JOIN LATERAL (
        SELECT i.id FROM invoices i
        WHERE i.merchant_id = a.merchant_id AND i.mode = 'test' AND i.past_due_at IS NULL AND i.due_at IS NOT NULL
          AND i.collection_state IN ('open', 'partially_paid') AND i.due_at <= a.horizon
        OFFSET 0
    ) i
), due AS (
    SELECT i.id FROM invoices i
    JOIN candidates c ON c.id = i.id
    WHERE (i.lease_until IS NULL OR i.lease_until < now() OR $1::text IS NOT NULL)
      AND ($1::text IS NULL OR (i.merchant_id = $1 AND i.mode = $2))
    ORDER BY i.id
    LIMIT $3
    "#,
            $lock,
            r#"
)
UPDATE invoices SET lease_until = now() + make_interval(secs => $4)
FROM due WHERE invoices.id = due.id
RETURNING invoices.merchant_id, invoices.mode, invoices.id
"#
        )
    };
}

/// Every scope: rows other workers hold are skipped.
const CLAIM_DUE: &str = claim_due!("FOR UPDATE OF i SKIP LOCKED");
/// One scope (the test clock helper): rows another transaction holds are waited for.
const CLAIM_DUE_SCOPED: &str = claim_due!("FOR UPDATE OF i");

/// Claims up to `limit` invoices with due work for `lease_seconds` (see the port's contract).
pub(super) async fn claim(
    conn: &mut AsyncPgConnection,
    only: Option<Scope>,
    limit: u32,
    lease_seconds: u32,
) -> Result<Vec<(Scope, InvoiceId)>, Error> {
    let statement = if only.is_some() { CLAIM_DUE_SCOPED } else { CLAIM_DUE };
    let rows: Vec<ScopedRow> = diesel::sql_query(statement)
        .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.merchant_id.to_string()))
        .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.mode.as_str().to_owned()))
        .bind::<BigInt, _>(i64::from(limit))
        .bind::<Integer, _>(i32::try_from(lease_seconds).unwrap_or(30))
        .load(conn)
        .await
        .map_err(db)?;
    rows.into_iter().map(|r| Ok((r.scope()?, InvoiceId::from_trusted(r.id)))).collect()
}

/// Records a failure of an invoice's due work and pushes its lease by the domain's backoff
/// (`$5` seconds doubled per failure in a row, at most `$7` doublings and `$6` seconds). A
/// failure more than `$8` seconds after the previous one starts the count again. Answers how
/// many times in a row it failed.
const DEFER_DUE: &str = r#"
WITH failed AS (
    INSERT INTO invoice_due_failures AS f (invoice_id, failures, last_failed_at, last_error)
    SELECT id, 1, now(), $4 FROM invoices WHERE id = $1 AND merchant_id = $2 AND mode = $3
    ON CONFLICT (invoice_id) DO UPDATE SET
        failures = CASE WHEN f.last_failed_at < now() - make_interval(secs => $8) THEN 1 ELSE f.failures + 1 END,
        last_failed_at = now(),
        last_error = EXCLUDED.last_error
    RETURNING f.invoice_id, f.failures
)
UPDATE invoices SET lease_until = now() + make_interval(secs => least($6::float8, $5 * power(2, least(failed.failures - 1, $7))))
FROM failed WHERE invoices.id = failed.invoice_id
RETURNING failed.failures
"#;

#[derive(QueryableByName)]
struct Failures {
    #[diesel(sql_type = Integer)]
    failures: i32,
}

pub(super) async fn defer(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &InvoiceId,
    error: &str,
    DueSchedule { backoff, forgotten_after_seconds }: DueSchedule,
) -> Result<u32, Error> {
    let int = |n: u32| i32::try_from(n).unwrap_or(i32::MAX);
    let row: Option<Failures> = diesel::sql_query(DEFER_DUE)
        .bind::<Text, _>(id.as_str())
        .bind::<Text, _>(scope.merchant_id.as_str())
        .bind::<Text, _>(scope.mode.as_str())
        .bind::<Text, _>(error)
        .bind::<Integer, _>(int(backoff.first_seconds))
        .bind::<Integer, _>(int(backoff.longest_seconds))
        .bind::<Integer, _>(int(backoff.max_doublings))
        .bind::<Integer, _>(int(forgotten_after_seconds))
        .get_result(conn)
        .await
        .optional()
        .map_err(db)?;
    let row = row.ok_or(Error::NotFound(Resource::Invoice))?;
    Ok(u32::try_from(row.failures).unwrap_or(0))
}

/// Moves the merchant's test clock forward by `seconds`, never past the cap.
pub(super) async fn advance_test_clock(
    (store, conn): (&crate::pool::PgStore, &mut AsyncPgConnection),
    merchant: &MerchantId,
    seconds: i64,
) -> Result<i64, Error> {
    let offset: Option<i64> = diesel::update(
        test_clocks::table
            .find(merchant.as_str())
            .filter(test_clocks::offset_seconds.le(MAX_TEST_CLOCK_OFFSET_SECONDS.saturating_sub(seconds))),
    )
    .set(test_clocks::offset_seconds.eq(test_clocks::offset_seconds + seconds))
    .returning(test_clocks::offset_seconds)
    .get_result(conn)
    .await
    .optional()
    .map_err(db)?;
    if let Some(offset) = offset {
        // The offset is read with the key: cached lookups of this merchant are stale now.
        crate::keycache::announce(store, conn, merchant.as_str()).await?;
        return Ok(offset);
    }
    let exists: bool = diesel::select(diesel::dsl::exists(merchants::table.find(merchant.as_str())))
        .get_result(conn)
        .await
        .map_err(db)?;
    if !exists {
        return Err(Error::NotFound(Resource::Merchant));
    }
    Err(Error::validation(
        "seconds",
        format!("the test clock may run at most {MAX_TEST_CLOCK_OFFSET_SECONDS} seconds (100 years) ahead in total"),
    ))
}

/// Gives back claimed leases (each scoped by its merchant and mode).
pub(super) async fn release(conn: &mut AsyncPgConnection, items: &[(Scope, InvoiceId)]) -> Result<(), Error> {
    use crate::schema::invoices;
    for (scope, id) in items {
        diesel::update(
            invoices::table
                .find(id.as_str())
                .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
                .filter(invoices::mode.eq(scope.mode.as_str())),
        )
        .set(invoices::lease_until.eq(None::<chrono::DateTime<chrono::Utc>>))
        .execute(conn)
        .await
        .map_err(db)?;
    }
    Ok(())
}

/// Sets the merchant's test clock back to the real time.
pub(super) async fn reset_test_clock(
    (store, conn): (&crate::pool::PgStore, &mut AsyncPgConnection),
    merchant: &MerchantId,
) -> Result<(), Error> {
    let n = diesel::update(test_clocks::table.find(merchant.as_str()))
        .set(test_clocks::offset_seconds.eq(0i64))
        .execute(conn)
        .await
        .map_err(db)?;
    if n == 0 {
        return Err(Error::NotFound(Resource::Merchant));
    }
    crate::keycache::announce(store, conn, merchant.as_str()).await
}

/// Claims live payments in verification whose next check is due: their next check moves
/// `lease_ms` milliseconds ahead, so other workers skip them meanwhile and a payment whose check
/// changed nothing is looked at again after that.
const CLAIM_PAYMENTS: &str = r#"
WITH due AS (
    SELECT id FROM payments
    WHERE status IN ('detected', 'validating') AND mode = 'live'
      AND (next_check_at IS NULL OR next_check_at <= now())
      AND (status = 'detected' OR block_number <= $3)
    ORDER BY next_check_at NULLS FIRST
    LIMIT $1
    FOR UPDATE SKIP LOCKED
)
UPDATE payments SET next_check_at = now() + make_interval(secs => $2 / 1000.0)
FROM due WHERE payments.id = due.id
RETURNING payments.merchant_id, payments.mode, payments.id, payments.transaction_hash
"#;

#[derive(QueryableByName)]
struct ClaimedPayment {
    #[diesel(embed)]
    payment: ScopedRow,
    #[diesel(sql_type = Text)]
    transaction_hash: String,
}

pub(super) async fn claim_payments(
    conn: &mut AsyncPgConnection,
    limit: u32,
    lease_ms: u32,
    final_block: Option<u64>,
) -> Result<Vec<(Scope, PaymentId, TxHash)>, Error> {
    // Without a known final block, `block_number <= NULL` claims no validating payment.
    let final_block = final_block.map(|b| i64::try_from(b).unwrap_or(i64::MAX));
    let rows: Vec<ClaimedPayment> = diesel::sql_query(CLAIM_PAYMENTS)
        .bind::<BigInt, _>(i64::from(limit))
        .bind::<Integer, _>(i32::try_from(lease_ms).unwrap_or(i32::MAX))
        .bind::<Nullable<BigInt>, _>(final_block)
        .load(conn)
        .await
        .map_err(db)?;
    rows.into_iter()
        .map(|r| {
            let scope = r.payment.scope()?;
            Ok((scope, PaymentId::from_trusted(r.payment.id), TxHash::from_trusted(r.transaction_hash)))
        })
        .collect()
}

pub(super) async fn defer_payment(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &PaymentId,
    seconds: u32,
    diagnostic: &str,
) -> Result<(), Error> {
    let deferred = diesel::update(
        payments::table
            .filter(payments::id.eq(id.as_str()))
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(payments::mode.eq(scope.mode.as_str())),
    )
    .set((
        payments::diagnostic.eq(diagnostic),
        // `seconds` is an integer: formatting it into the statement is safe.
        payments::next_check_at.eq(diesel::dsl::sql::<Nullable<diesel::sql_types::Timestamptz>>(&format!(
            "now() + interval '{seconds} seconds'"
        ))),
    ))
    .execute(conn)
    .await
    .map_err(db)?;
    if deferred == 0 {
        return Err(Error::NotFound(Resource::Payment));
    }
    Ok(())
}
