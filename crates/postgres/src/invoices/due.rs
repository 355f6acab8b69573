//! Time-based work: claiming invoices with due transitions (with a lease, skipping rows other
//! workers hold) and moving a merchant's test clock.

use diesel::prelude::*;
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::clock::MAX_TEST_CLOCK_OFFSET_SECONDS;
use stablepay_domain::ids::{InvoiceId, MerchantId};
use stablepay_domain::{Error, Resource, Scope};

use crate::error::db;
use crate::invoices::rows::mode;
use crate::schema::{merchants, test_clocks};

#[derive(QueryableByName)]
struct DueRow {
    #[diesel(sql_type = Text)]
    merchant_id: String,
    #[diesel(sql_type = Text)]
    mode: String,
    #[diesel(sql_type = Text)]
    id: String,
}

/// Claims invoices with due work. Each scope's clock (real time plus the test offset in test
/// mode) decides what is due; claimed rows get a lease so other workers skip them.
const CLAIM_DUE: &str = r#"
WITH horizon AS (
    SELECT now() + make_interval(secs => COALESCE(max(offset_seconds), 0)) AS latest FROM test_clocks
), candidates AS (
    SELECT s.invoice_id AS id FROM checkout_sessions s, horizon
    WHERE s.status = 'pending' AND s.expires_at <= horizon.latest
    UNION
    SELECT i.id FROM invoices i, horizon
    WHERE i.past_due_at IS NULL AND i.due_at IS NOT NULL
      AND i.collection_state IN ('open', 'partially_paid') AND i.due_at <= horizon.latest
), due AS (
    SELECT i.id FROM invoices i
    JOIN candidates c ON c.id = i.id
    JOIN test_clocks t ON t.merchant_id = i.merchant_id
    -- A scoped run (the test clock helper) ignores leases so it answers only after every due
    -- transition of its scope ran; processing is idempotent and optimistically locked.
    WHERE (i.lease_until IS NULL OR i.lease_until < now() OR $1::text IS NOT NULL)
      AND ($1::text IS NULL OR (i.merchant_id = $1 AND i.mode = $2))
      AND (
        EXISTS (
          SELECT 1 FROM checkout_sessions s
          WHERE s.invoice_id = i.id AND s.status = 'pending'
            AND s.expires_at <= now() + CASE WHEN i.mode = 'test'
                THEN make_interval(secs => t.offset_seconds) ELSE interval '0' END)
        OR (i.past_due_at IS NULL AND i.due_at IS NOT NULL
            AND i.collection_state IN ('open', 'partially_paid')
            AND i.due_at <= now() + CASE WHEN i.mode = 'test'
                THEN make_interval(secs => t.offset_seconds) ELSE interval '0' END)
      )
    ORDER BY i.id
    LIMIT $3
    FOR UPDATE OF i SKIP LOCKED
)
UPDATE invoices SET lease_until = now() + make_interval(secs => $4)
FROM due WHERE invoices.id = due.id
RETURNING invoices.merchant_id, invoices.mode, invoices.id
"#;

/// Claims up to `limit` invoices with due work for `lease_seconds` (see the port's contract).
pub(super) async fn claim(
    conn: &mut AsyncPgConnection,
    only: Option<Scope>,
    limit: u32,
    lease_seconds: u32,
) -> Result<Vec<(Scope, InvoiceId)>, Error> {
    let rows: Vec<DueRow> = diesel::sql_query(CLAIM_DUE)
        .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.merchant_id.to_string()))
        .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.mode.as_str().to_owned()))
        .bind::<BigInt, _>(i64::from(limit))
        .bind::<Integer, _>(i32::try_from(lease_seconds).unwrap_or(30))
        .load(conn)
        .await
        .map_err(db)?;
    rows.into_iter()
        .map(|r| {
            Ok((Scope::new(MerchantId::from_trusted(r.merchant_id), mode(&r.mode)?), InvoiceId::from_trusted(r.id)))
        })
        .collect()
}

/// Moves the merchant's test clock forward by `seconds`, never past the cap.
pub(super) async fn advance_test_clock(
    conn: &mut AsyncPgConnection,
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
