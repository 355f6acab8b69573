//! The rows of users, memberships and sessions, and what every account change shares inside
//! its transaction: the audit entries it writes, the sessions it ends, and the answer to a
//! user insert's failure.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::account::{AuditEntry, Membership, Role, Session, User};
use stablepay_domain::ids::{MerchantId, SessionId, UserId};
use stablepay_domain::{Error, Resource};

use crate::error::TxError;
use crate::rows::corrupt;
use crate::schema::{memberships as ms, sessions as se, users as us};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = us, check_for_backend(diesel::pg::Pg))]
pub(crate) struct UserRow {
    id: String,
    email: String,
    name: String,
    password_hash: String,
    email_verified_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    two_factor_since: Option<DateTime<Utc>>,
}

impl UserRow {
    pub(crate) fn of(u: &User) -> Self {
        Self {
            id: u.id.to_string(),
            email: u.email.clone(),
            name: u.name.clone(),
            password_hash: u.password_hash.clone(),
            email_verified_at: u.email_verified_at,
            created_at: u.created_at,
            two_factor_since: u.two_factor_since,
        }
    }

    pub(crate) fn into_domain(self) -> User {
        User {
            id: UserId::from_trusted(self.id),
            email: self.email,
            name: self.name,
            password_hash: self.password_hash,
            email_verified_at: self.email_verified_at,
            two_factor_since: self.two_factor_since,
            created_at: self.created_at,
        }
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = ms, check_for_backend(diesel::pg::Pg))]
pub(crate) struct MembershipRow {
    user_id: String,
    merchant_id: String,
    role: String,
    created_at: DateTime<Utc>,
    webhook_alerts: bool,
}

impl MembershipRow {
    pub(crate) fn of(m: &Membership) -> Self {
        Self {
            user_id: m.user_id.to_string(),
            merchant_id: m.merchant_id.to_string(),
            role: m.role.as_str().into(),
            created_at: m.created_at,
            webhook_alerts: m.webhook_alerts,
        }
    }

    /// The membership, with its merchant's two-factor requirement.
    pub(crate) fn into_domain(self, requires_two_factor: bool) -> Result<Membership, Error> {
        Ok(Membership {
            user_id: UserId::from_trusted(self.user_id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            role: Role::parse(&self.role).ok_or_else(|| corrupt("role"))?,
            requires_two_factor,
            webhook_alerts: self.webhook_alerts,
            created_at: self.created_at,
        })
    }
}

/// Writes audit entries inside the caller's transaction.
pub(crate) async fn write_audit(conn: &mut AsyncPgConnection, entries: &[AuditEntry]) -> Result<(), DieselError> {
    use crate::schema::audit_log as al;
    for e in entries {
        diesel::insert_into(al::table)
            .values((
                al::id.eq(e.id.as_str()),
                al::merchant_id.eq(e.merchant_id.as_str()),
                al::actor_id.eq(e.actor.as_ref().map(|a| a.as_str())),
                al::actor_email.eq(e.actor_email.as_deref()),
                al::action.eq(e.action.as_str()),
                al::target.eq(e.target.as_deref()),
                al::detail.eq(&e.detail),
                al::at.eq(e.at),
            ))
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Writes `audit` when the statement before it changed rows (`changed` of them), inside the
/// caller's transaction; whether it did.
pub(crate) async fn audit_if_changed(
    conn: &mut AsyncPgConnection,
    changed: usize,
    audit: &[AuditEntry],
) -> Result<bool, DieselError> {
    if changed == 0 {
        return Ok(false);
    }
    write_audit(conn, audit).await?;
    Ok(true)
}

/// Maps a user insert's failures: an existing email, an unknown merchant.
pub(crate) fn user_insert_error(e: TxError) -> Error {
    match e {
        TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
            Error::validation("email", "a user with this email exists")
        }
        TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _)) => {
            Error::NotFound(Resource::Merchant)
        }
        other => other.into_domain(),
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = se, check_for_backend(diesel::pg::Pg))]
pub(crate) struct SessionRow {
    id: String,
    user_id: String,
    token_digest: Vec<u8>,
    csrf_token: String,
    created_at: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
    reauthenticated_at: DateTime<Utc>,
}

impl SessionRow {
    pub(crate) fn of(s: &Session) -> Self {
        Self {
            id: s.id.to_string(),
            user_id: s.user_id.to_string(),
            token_digest: s.token_digest.to_vec(),
            csrf_token: s.csrf_token.clone(),
            created_at: s.created_at,
            last_seen_at: s.last_seen_at,
            reauthenticated_at: s.reauthenticated_at,
        }
    }

    pub(crate) fn into_domain(self) -> Result<Session, Error> {
        Ok(Session {
            id: SessionId::from_trusted(self.id),
            user_id: UserId::from_trusted(self.user_id),
            token_digest: self.token_digest.try_into().map_err(|_| corrupt("session digest"))?,
            csrf_token: self.csrf_token,
            created_at: self.created_at,
            last_seen_at: self.last_seen_at,
            reauthenticated_at: self.reauthenticated_at,
        })
    }
}

/// Deletes the user's sessions but `keep`, inside the caller's transaction.
pub(crate) async fn delete_sessions_in(
    conn: &mut AsyncPgConnection,
    user: &UserId,
    keep: Option<&SessionId>,
) -> Result<usize, DieselError> {
    let keep = keep.map_or("", |k| k.as_str());
    diesel::delete(se::table.filter(se::user_id.eq(user.as_str())).filter(se::id.ne(keep))).execute(conn).await
}
