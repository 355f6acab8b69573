//! Two-factor state: the sealed secrets on the user's row, the last accepted step (taken with
//! a conditional update, so a code is accepted once), and recovery codes as digests.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::Error;
use stablepay_domain::account::AuditEntry;
use stablepay_domain::account::ports::{TwoFactorOn, TwoFactorRecord};
use stablepay_domain::account::totp::SealedTotp;
use stablepay_domain::ids::UserId;

use super::rows::{audit_if_changed, write_audit};
use crate::error::db;
use crate::pool::PgStore;
use crate::schema::{recovery_codes as rc, users as us};

/// A user's sealed secret, pending secret and last step, as stored.
type TwoFactorColumns = (Option<Vec<u8>>, Option<Vec<u8>>, Option<i64>);

pub(super) async fn record(store: &PgStore, user: &UserId) -> Result<TwoFactorRecord, Error> {
    let row: Option<TwoFactorColumns> = us::table
        .find(user.as_str())
        .select((us::totp_secret, us::totp_pending, us::totp_last_step))
        .first(&mut *store.conn().await?)
        .await
        .optional()
        .map_err(db)?;
    let (secret, pending, last_step) = row.unwrap_or_default();
    Ok(TwoFactorRecord { secret: secret.map(SealedTotp), pending: pending.map(SealedTotp), last_step })
}

pub(super) async fn set_pending(store: &PgStore, user: &UserId, sealed: &SealedTotp) -> Result<(), Error> {
    diesel::update(us::table.find(user.as_str()))
        .set(us::totp_pending.eq(&sealed.0))
        .execute(&mut *store.conn().await?)
        .await
        .map(|_| ())
        .map_err(db)
}

pub(super) async fn enable(
    store: &PgStore,
    user: &UserId,
    on: &TwoFactorOn,
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let TwoFactorOn { step, at, recovery_digests: digests } = on;
    let (step, at) = (*step, *at);
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        let n = diesel::update(us::table.find(user.as_str()).filter(us::totp_pending.is_not_null()))
            .set((
                us::totp_secret.eq(us::totp_pending),
                us::totp_pending.eq(None::<Vec<u8>>),
                us::totp_last_step.eq(step),
                us::two_factor_since.eq(at),
            ))
            .execute(conn)
            .await?;
        if n == 0 {
            return Ok(false);
        }
        diesel::delete(rc::table.filter(rc::user_id.eq(user.as_str()))).execute(conn).await?;
        let rows: Vec<_> = digests.iter().map(|d| (rc::user_id.eq(user.as_str()), rc::digest.eq(d.to_vec()))).collect();
        diesel::insert_into(rc::table).values(&rows).execute(conn).await?;
        write_audit(conn, audit).await?;
        Ok(true)
    })
    .await
    .map_err(db)
}

pub(super) async fn disable(store: &PgStore, user: &UserId, audit: &[AuditEntry]) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        diesel::update(us::table.find(user.as_str()))
            .set((
                us::totp_secret.eq(None::<Vec<u8>>),
                us::totp_pending.eq(None::<Vec<u8>>),
                us::two_factor_since.eq(None::<DateTime<Utc>>),
            ))
            .execute(conn)
            .await?;
        diesel::delete(rc::table.filter(rc::user_id.eq(user.as_str()))).execute(conn).await?;
        write_audit(conn, audit).await
    })
    .await
    .map_err(db)
}

pub(super) async fn use_step(store: &PgStore, user: &UserId, step: i64) -> Result<bool, Error> {
    let n = diesel::update(
        us::table
            .find(user.as_str())
            .filter(us::totp_secret.is_not_null())
            .filter(us::totp_last_step.is_null().or(us::totp_last_step.lt(step))),
    )
    .set(us::totp_last_step.eq(step))
    .execute(&mut *store.conn().await?)
    .await
    .map_err(db)?;
    Ok(n == 1)
}

pub(super) async fn use_recovery_code(
    store: &PgStore,
    user: &UserId,
    digest: &[u8; 32],
    at: DateTime<Utc>,
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        let n = diesel::update(
            rc::table
                .filter(rc::user_id.eq(user.as_str()))
                .filter(rc::digest.eq(digest.as_slice()))
                .filter(rc::used_at.is_null()),
        )
        .set(rc::used_at.eq(at))
        .execute(conn)
        .await?;
        audit_if_changed(conn, n, audit).await
    })
    .await
    .map_err(db)
}

pub(super) async fn codes_left(store: &PgStore, user: &UserId) -> Result<u32, Error> {
    let n: i64 = rc::table
        .filter(rc::user_id.eq(user.as_str()))
        .filter(rc::used_at.is_null())
        .count()
        .get_result(&mut *store.conn().await?)
        .await
        .map_err(db)?;
    Ok(u32::try_from(n).unwrap_or(0))
}
