//! Idempotency keys: one row per merchant, mode, key type and key, holding the request
//! fingerprint, the claim (its time), the marker its work wrote in its own transaction
//! (`committed`), and once answered the response to replay for 24 hours.

use async_trait::async_trait;
use chrono::{DateTime, Duration, SubsecRound, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::Error;
use stablepay_domain::idempotency::{
    Committed, IdempotencyBegin, IdempotencyClaim, IdempotencyNamespace, KeyedRequest,
};
use stablepay_domain::ports::IdempotencyStore;

use crate::error::TxError;
use crate::error::db;
use crate::pool::PgStore;
use crate::schema::idempotency_keys as k;

/// How long a key is remembered.
pub const WINDOW_HOURS: i64 = 24;

/// The key columns of a namespace.
fn columns(n: &IdempotencyNamespace) -> (&str, &str, &str) {
    (n.scope.merchant_id.as_str(), n.scope.mode.as_str(), n.requester.as_str())
}

/// Marks `claim` committed with `committed` (inside the caller's transaction): the work and
/// its marker commit together. Nothing is marked, and the transaction must roll back, when the
/// claim was taken over meanwhile.
pub(crate) async fn mark_committed(
    conn: &mut AsyncPgConnection,
    claim: &IdempotencyClaim,
    committed: &Committed,
) -> Result<(), TxError> {
    let (merchant, mode, key_type) = columns(&claim.namespace);
    let marked = diesel::update(
        k::table
            .find((merchant, mode, key_type, claim.key.as_str()))
            .filter(k::created_at.eq(claim.claimed_at))
            .filter(k::state.eq("in_progress")),
    )
    .set((k::state.eq("committed"), k::committed.eq(committed.to_text())))
    .execute(conn)
    .await?;
    if marked == 1 { Ok(()) } else { Err(TxError::Domain(Error::IdempotencyClaimLost)) }
}

/// A claim's time as stored (PostgreSQL keeps microseconds): the token that tells this claim
/// from a later takeover.
fn claim_time() -> DateTime<Utc> {
    Utc::now().trunc_subsecs(6)
}

/// The stored row of a key: fingerprint, state, response, claim time, committed work.
type KeyRow = (Vec<u8>, String, Option<i32>, Option<String>, DateTime<Utc>, Option<String>);

#[async_trait]
impl IdempotencyStore for PgStore {
    async fn begin(&self, request: &KeyedRequest, stale_after_seconds: i64) -> Result<IdempotencyBegin, Error> {
        let KeyedRequest { namespace, key, fingerprint } = request;
        let (key, fingerprint) = (key.as_str(), *fingerprint);
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(namespace);
        let claim = |claimed_at| IdempotencyClaim { namespace: namespace.clone(), key: key.to_owned(), claimed_at };
        for _ in 0..3 {
            let now = claim_time();
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
                return Ok(IdempotencyBegin::Started(claim(now)));
            }
            let row: Option<KeyRow> = k::table
                .find((merchant, mode, key_type, key))
                .select((k::fingerprint, k::state, k::response_status, k::response_body, k::created_at, k::committed))
                .first(&mut conn)
                .await
                .optional()
                .map_err(db)?;
            let Some((stored_fp, state, status, body, created_at, committed)) = row else {
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
            match state.as_str() {
                "completed" => {
                    let status = status
                        .and_then(|s| u16::try_from(s).ok())
                        .ok_or_else(|| Error::Internal("stored response lost".into()))?;
                    return Ok(IdempotencyBegin::Replay { status, body: body.unwrap_or_default() });
                }
                "committed" => {
                    return Ok(IdempotencyBegin::Committed(Committed::parse(&committed.unwrap_or_default())));
                }
                _ => {}
            }
            if created_at < now - Duration::seconds(stale_after_seconds) {
                // The earlier attempt died before its work committed: take the claim over.
                let taken = diesel::update(this_key.filter(k::state.eq("in_progress")))
                    .set(k::created_at.eq(now))
                    .execute(&mut conn)
                    .await
                    .map_err(db)?;
                if taken == 1 {
                    return Ok(IdempotencyBegin::Started(claim(now)));
                }
                continue;
            }
            return Ok(IdempotencyBegin::InProgress);
        }
        Ok(IdempotencyBegin::InProgress)
    }

    async fn complete(&self, claim: &IdempotencyClaim, status: u16, body: &str) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(&claim.namespace);
        diesel::update(
            k::table
                .find((merchant, mode, key_type, claim.key.as_str()))
                .filter(k::created_at.eq(claim.claimed_at))
                .filter(k::state.ne("completed")),
        )
        .set((k::state.eq("completed"), k::response_status.eq(i32::from(status)), k::response_body.eq(body)))
        .execute(&mut conn)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn complete_committed(&self, request: &KeyedRequest, status: u16, body: &str) -> Result<(), Error> {
        let (namespace, key) = (&request.namespace, request.key.as_str());
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(namespace);
        diesel::update(k::table.find((merchant, mode, key_type, key)).filter(k::state.eq("committed")))
            .set((k::state.eq("completed"), k::response_status.eq(i32::from(status)), k::response_body.eq(body)))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn abandon(&self, claim: &IdempotencyClaim) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let (merchant, mode, key_type) = columns(&claim.namespace);
        diesel::delete(
            k::table
                .find((merchant, mode, key_type, claim.key.as_str()))
                .filter(k::created_at.eq(claim.claimed_at))
                .filter(k::state.eq("in_progress")),
        )
        .execute(&mut conn)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn purge_expired(&self, limit: u32) -> Result<u64, Error> {
        crate::retention::keys(&mut *self.conn().await?, Utc::now() - Duration::hours(WINDOW_HOURS), limit).await
    }
}
