//! A merchant's team: members, membership changes under the last-owner rule (checked with the
//! merchant's memberships locked, so two concurrent changes cannot both remove "another"
//! owner), the two-factor requirement, and the audit log.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::account::audit::AuditAction;
use stablepay_domain::account::members::MembershipChange;
use stablepay_domain::account::members::check_change;
use stablepay_domain::account::{AuditEntry, Membership, Role, User};
use stablepay_domain::ids::{AuditEntryId, MerchantId, UserId};
use stablepay_domain::{Error, Resource};

use super::rows::{MembershipRow, UserRow, write_audit};
use crate::error::{TxError, db};
use crate::pool::PgStore;
use crate::rows::corrupt;
use crate::schema::{audit_log as al, memberships as ms, merchants as mer, users as us};

pub(super) async fn members(store: &PgStore, merchant: &MerchantId) -> Result<Vec<(Membership, User)>, Error> {
    let rows: Vec<(MembershipRow, UserRow, bool)> = ms::table
        .inner_join(us::table)
        .inner_join(mer::table)
        .filter(ms::merchant_id.eq(merchant.as_str()))
        .order((ms::created_at, ms::user_id))
        .select((MembershipRow::as_select(), UserRow::as_select(), mer::require_two_factor))
        .load(&mut *store.conn().await?)
        .await
        .map_err(db)?;
    rows.into_iter().map(|(m, u, required)| Ok((m.into_domain(required)?, u.into_domain()))).collect()
}

pub(super) async fn change(
    store: &PgStore,
    (merchant, user): (&MerchantId, &UserId),
    change: MembershipChange,
    audit: &[AuditEntry],
) -> Result<Membership, Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, TxError, _>(async |conn| {
        // Every membership of the merchant locked: the owners counted stay counted.
        let all: Vec<MembershipRow> = ms::table
            .filter(ms::merchant_id.eq(merchant.as_str()))
            .select(MembershipRow::as_select())
            .for_update()
            .load(conn)
            .await?;
        let all =
            all.into_iter().map(|m| m.into_domain(false)).collect::<Result<Vec<_>, _>>().map_err(TxError::Domain)?;
        let owners = all.iter().filter(|m| m.role == Role::Owner).count();
        let mut target =
            all.into_iter().find(|m| &m.user_id == user).ok_or(TxError::Domain(Error::NotFound(Resource::Member)))?;
        check_change(target.role, owners, change).map_err(TxError::Domain)?;
        let row = ms::table.filter(ms::merchant_id.eq(merchant.as_str())).filter(ms::user_id.eq(user.as_str()));
        match change {
            MembershipChange::SetRole(role) => {
                diesel::update(row).set(ms::role.eq(role.as_str())).execute(conn).await?;
                target.role = role;
            }
            MembershipChange::Remove => {
                diesel::delete(row).execute(conn).await?;
            }
        }
        write_audit(conn, audit).await?;
        Ok(target)
    })
    .await
    .map_err(TxError::into_domain)
}

pub(super) async fn set_require_two_factor(
    store: &PgStore,
    merchant: &MerchantId,
    on: bool,
    audit: &[AuditEntry],
) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        diesel::update(mer::table.find(merchant.as_str())).set(mer::require_two_factor.eq(on)).execute(conn).await?;
        write_audit(conn, audit).await
    })
    .await
    .map_err(db)
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = al, check_for_backend(diesel::pg::Pg))]
struct AuditRow {
    id: String,
    merchant_id: String,
    actor_id: Option<String>,
    actor_email: Option<String>,
    action: String,
    target: Option<String>,
    detail: String,
    at: DateTime<Utc>,
}

impl AuditRow {
    fn into_domain(self) -> Result<AuditEntry, Error> {
        Ok(AuditEntry {
            id: AuditEntryId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            actor: self.actor_id.map(UserId::from_trusted),
            actor_email: self.actor_email,
            action: AuditAction::parse(&self.action).ok_or_else(|| corrupt("audit action"))?,
            target: self.target,
            detail: self.detail,
            at: self.at,
        })
    }
}

pub(super) async fn audit_log(
    store: &PgStore,
    merchant: &MerchantId,
    limit: u32,
    before: Option<AuditEntryId>,
) -> Result<Vec<AuditEntry>, Error> {
    let mut conn = store.conn().await?;
    let mut query = al::table.filter(al::merchant_id.eq(merchant.as_str())).into_boxed();
    if let Some(before) = before {
        let seq: Option<i64> = al::table
            .filter(al::merchant_id.eq(merchant.as_str()))
            .filter(al::id.eq(before.as_str()))
            .select(al::seq)
            .first(&mut *conn)
            .await
            .optional()
            .map_err(db)?;
        query = query.filter(al::seq.lt(seq.ok_or(Error::InvalidCursor)?));
    }
    let rows: Vec<AuditRow> = query
        .order(al::seq.desc())
        .limit(i64::from(limit))
        .select(AuditRow::as_select())
        .load(&mut *conn)
        .await
        .map_err(db)?;
    rows.into_iter().map(AuditRow::into_domain).collect()
}
