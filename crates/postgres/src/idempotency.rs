//! Idempotency keys: one row per merchant, mode, key type and key, holding the request
//! fingerprint and, once done, the response to replay for 24 hours.

use async_trait::async_trait;
use chrono::{DateTime, Duration, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use stablepay_domain::Error;
use stablepay_domain::idempotency::{IdempotencyBegin, IdempotencyNamespace};
use stablepay_domain::ports::IdempotencyStore;

use crate::error::db;
use crate::pool::PgStore;
use crate::schema::idempotency_keys as k;

/// How long a key is remembered.
pub const WINDOW_HOURS: i64 = 24;

/// The key columns of a namespace.
fn columns(n: &IdempotencyNamespace) -> (&str, &str, &str) {
    (n.scope.merchant_id.as_str(), n.scope.mode.as_str(), n.requester.as_str())
}

#[async_trait]
impl IdempotencyStore for PgStore {
    async fn begin(
        &self,
        namespace: &IdempotencyNamespace,
        key: &str,
        fingerprint: [u8; 32],
        stale_after_seconds: i64,
    ) -> Result<IdempotencyBegin, Error> {
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(namespace);
        for _ in 0..3 {
            let now = Utc::now();
            let inserted = diesel::insert_into(k::table)
                .values((
                    k::merchant_id.eq(merchant),
                    k::mode.eq(mode),
                    k::key_type.eq(key_type),
                    k::key.eq(key),
                    k::fingerprint.eq(fingerprint.as_slice()),
                    k::state.eq("in_progress"),
                    k::created_at.eq(now),
                ))
                .on_conflict_do_nothing()
                .execute(&mut conn)
                .await
                .map_err(db)?;
            if inserted == 1 {
                return Ok(IdempotencyBegin::Started);
            }
            let row: Option<(Vec<u8>, String, Option<i32>, Option<String>, DateTime<Utc>)> = k::table
                .find((merchant, mode, key_type, key))
                .select((k::fingerprint, k::state, k::response_status, k::response_body, k::created_at))
                .first(&mut conn)
                .await
                .optional()
                .map_err(db)?;
            let Some((stored_fp, state, status, body, created_at)) = row else {
                continue;
            };
            let this_key = k::table.find((merchant, mode, key_type, key)).filter(k::created_at.eq(created_at));
            if created_at < now - Duration::hours(WINDOW_HOURS) {
                // Outside the replay window: forget it and claim afresh.
                diesel::delete(this_key).execute(&mut conn).await.map_err(db)?;
                continue;
            }
            if stored_fp.as_slice() != fingerprint.as_slice() {
                return Ok(IdempotencyBegin::Conflict);
            }
            if state == "completed" {
                let status = status
                    .and_then(|s| u16::try_from(s).ok())
                    .ok_or_else(|| Error::Internal("stored response lost".into()))?;
                return Ok(IdempotencyBegin::Replay { status, body: body.unwrap_or_default() });
            }
            if created_at < now - Duration::seconds(stale_after_seconds) {
                // The earlier attempt died mid-flight: take the claim over.
                let taken = diesel::update(this_key).set(k::created_at.eq(now)).execute(&mut conn).await.map_err(db)?;
                if taken == 1 {
                    return Ok(IdempotencyBegin::Started);
                }
            }
            return Ok(IdempotencyBegin::InProgress);
        }
        Ok(IdempotencyBegin::InProgress)
    }

    async fn complete(
        &self,
        namespace: &IdempotencyNamespace,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(namespace);
        diesel::update(k::table.find((merchant, mode, key_type, key)))
            .set((k::state.eq("completed"), k::response_status.eq(i32::from(status)), k::response_body.eq(body)))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn abandon(&self, namespace: &IdempotencyNamespace, key: &str) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(namespace);
        diesel::delete(k::table.find((merchant, mode, key_type, key)).filter(k::state.eq("in_progress")))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn purge_expired(&self) -> Result<u64, Error> {
        let mut conn = self.conn().await?;
        let n = diesel::delete(k::table.filter(k::created_at.lt(Utc::now() - Duration::hours(WINDOW_HOURS))))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
