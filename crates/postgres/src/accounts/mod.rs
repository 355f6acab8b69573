//! Users, memberships and sessions. A user and its first membership are one transaction; a
//! session is found by its token's digest, never by the token. Every change writes its audit
//! entries in its own transaction. Emailed links are in `links`, two-factor login in
//! `two_factor`, the team and the audit log in `team`.

mod links;
mod rows;
mod settings;
mod team;
mod two_factor;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::Error;
use stablepay_domain::account::link::{AccountLink, LinkEffect};
use stablepay_domain::account::members::MembershipChange;
use stablepay_domain::account::model::LiveRequest;
use stablepay_domain::account::notice::{IncidentAlert, Notice};
use stablepay_domain::account::ports::{AccountStore, TwoFactorOn, TwoFactorRecord};
use stablepay_domain::account::totp::SealedTotp;
use stablepay_domain::account::{AuditEntry, Membership, Session, User};
use stablepay_domain::ids::{AccountLinkId, AuditEntryId, MerchantId, NoticeId, SessionId, UserId};
use stablepay_domain::merchant::model::{Merchant, Token, WalletAddress};

use crate::error::{TxError, db};
use crate::merchants::insert_merchant_in;
use crate::pool::PgStore;
use crate::schema::{memberships as ms, merchants as mer, sessions as se, users as us};
use rows::{MembershipRow, SessionRow, UserRow, delete_sessions_in, user_insert_error, write_audit};

#[async_trait]
impl AccountStore for PgStore {
    async fn insert_user(&self, user: &User, membership: &Membership, audit: &[AuditEntry]) -> Result<(), Error> {
        let (u, m) = (UserRow::of(user), MembershipRow::of(membership));
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| {
            diesel::insert_into(us::table).values(&u).execute(conn).await?;
            diesel::insert_into(ms::table).values(&m).execute(conn).await?;
            write_audit(conn, audit).await?;
            Ok(())
        })
        .await
        .map_err(user_insert_error)
    }

    async fn insert_signup(
        &self,
        merchant: &Merchant,
        user: &User,
        membership: &Membership,
        link: &AccountLink,
    ) -> Result<(), Error> {
        let (u, m) = (UserRow::of(user), MembershipRow::of(membership));
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| {
            insert_merchant_in(conn, merchant).await?;
            diesel::insert_into(us::table).values(&u).execute(conn).await?;
            diesel::insert_into(ms::table).values(&m).execute(conn).await?;
            links::insert_in(conn, link).await?;
            Ok(())
        })
        .await
        .map_err(user_insert_error)
    }

    async fn user_by_email(&self, email: &str) -> Result<Option<User>, Error> {
        user_where(self, us::table.filter(us::email.eq(email)).into_boxed()).await
    }

    async fn user_by_id(&self, id: &UserId) -> Result<Option<User>, Error> {
        user_where(self, us::table.filter(us::id.eq(id.as_str())).into_boxed()).await
    }

    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, Error> {
        let rows: Vec<(MembershipRow, bool)> = ms::table
            .inner_join(mer::table)
            .filter(ms::user_id.eq(user.as_str()))
            .order((ms::created_at, ms::merchant_id))
            .select((MembershipRow::as_select(), mer::require_two_factor))
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(|(m, required)| m.into_domain(required)).collect()
    }

    async fn insert_session(&self, session: &Session, audit: &[AuditEntry]) -> Result<(), Error> {
        let row = SessionRow::of(session);
        let mut conn = self.conn().await?;
        conn.transaction::<_, DieselError, _>(async |conn| {
            diesel::insert_into(se::table).values(&row).execute(conn).await?;
            write_audit(conn, audit).await
        })
        .await
        .map_err(db)
    }

    async fn session_by_digest(&self, digest: &[u8; 32]) -> Result<Option<(Session, User)>, Error> {
        let row: Option<(SessionRow, UserRow)> = se::table
            .inner_join(us::table)
            .filter(se::token_digest.eq(digest.as_slice()))
            .select((SessionRow::as_select(), UserRow::as_select()))
            .first(&mut *self.conn().await?)
            .await
            .optional()
            .map_err(db)?;
        row.map(|(s, u)| Ok((s.into_domain()?, u.into_domain()))).transpose()
    }

    async fn touch_session(&self, id: &SessionId, at: DateTime<Utc>) -> Result<(), Error> {
        diesel::update(se::table.filter(se::id.eq(id.as_str())))
            .set(se::last_seen_at.eq(at))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn mark_reauthenticated(&self, id: &SessionId, at: DateTime<Utc>) -> Result<(), Error> {
        diesel::update(se::table.filter(se::id.eq(id.as_str())))
            .set(se::reauthenticated_at.eq(at))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn rotate_session(&self, id: &SessionId, digest: &[u8; 32], csrf_token: &str) -> Result<(), Error> {
        diesel::update(se::table.filter(se::id.eq(id.as_str())))
            .set((se::token_digest.eq(digest.as_slice()), se::csrf_token.eq(csrf_token)))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn delete_session(&self, id: &SessionId) -> Result<(), Error> {
        diesel::delete(se::table.filter(se::id.eq(id.as_str())))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn delete_user_sessions(
        &self,
        user: &UserId,
        keep: Option<SessionId>,
        audit: &[AuditEntry],
    ) -> Result<u64, Error> {
        let mut conn = self.conn().await?;
        let n = conn
            .transaction::<_, DieselError, _>(async |conn| {
                let n = delete_sessions_in(conn, user, keep.as_ref()).await?;
                write_audit(conn, audit).await?;
                Ok(n)
            })
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn set_password(
        &self,
        user: &UserId,
        password_hash: &str,
        keep: Option<SessionId>,
        audit: &[AuditEntry],
    ) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, DieselError, _>(async |conn| {
            diesel::update(us::table.find(user.as_str()))
                .set(us::password_hash.eq(password_hash))
                .execute(conn)
                .await?;
            delete_sessions_in(conn, user, keep.as_ref()).await?;
            write_audit(conn, audit).await
        })
        .await
        .map_err(db)
    }

    async fn insert_link(&self, link: &AccountLink, audit: &[AuditEntry]) -> Result<(), Error> {
        links::insert_link(self, link, audit).await
    }

    async fn link_by_digest(&self, digest: &[u8; 32]) -> Result<Option<AccountLink>, Error> {
        links::link(self, links::LinkKey::Digest(digest)).await
    }

    async fn link_by_id(&self, id: &AccountLinkId) -> Result<Option<AccountLink>, Error> {
        links::link(self, links::LinkKey::Id(id)).await
    }

    async fn set_link_token(&self, id: &AccountLinkId, digest: &[u8; 32]) -> Result<(), Error> {
        links::set_token(self, id, digest).await
    }

    async fn consume_link(
        &self,
        id: &AccountLinkId,
        at: DateTime<Utc>,
        effect: &LinkEffect,
        audit: &[AuditEntry],
    ) -> Result<bool, Error> {
        links::consume(self, (id, at), effect, audit).await
    }

    async fn invitations(&self, merchant: &MerchantId, now: DateTime<Utc>) -> Result<Vec<AccountLink>, Error> {
        links::invitations(self, merchant, now).await
    }

    async fn revoke_invitation(
        &self,
        merchant: &MerchantId,
        id: &AccountLinkId,
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<bool, Error> {
        links::revoke_invitation(self, (merchant, id), at, audit).await
    }

    async fn two_factor(&self, user: &UserId) -> Result<TwoFactorRecord, Error> {
        two_factor::record(self, user).await
    }

    async fn set_pending_two_factor(&self, user: &UserId, sealed: &SealedTotp) -> Result<(), Error> {
        two_factor::set_pending(self, user, sealed).await
    }

    async fn enable_two_factor(&self, user: &UserId, on: &TwoFactorOn, audit: &[AuditEntry]) -> Result<bool, Error> {
        two_factor::enable(self, user, on, audit).await
    }

    async fn disable_two_factor(&self, user: &UserId, audit: &[AuditEntry]) -> Result<(), Error> {
        two_factor::disable(self, user, audit).await
    }

    async fn use_totp_step(&self, user: &UserId, step: i64) -> Result<bool, Error> {
        two_factor::use_step(self, user, step).await
    }

    async fn use_recovery_code(
        &self,
        user: &UserId,
        digest: &[u8; 32],
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<bool, Error> {
        two_factor::use_recovery_code(self, user, digest, at, audit).await
    }

    async fn recovery_codes_left(&self, user: &UserId) -> Result<u32, Error> {
        two_factor::codes_left(self, user).await
    }

    async fn members(&self, merchant: &MerchantId) -> Result<Vec<(Membership, User)>, Error> {
        team::members(self, merchant).await
    }

    async fn change_membership(
        &self,
        merchant: &MerchantId,
        user: &UserId,
        change: MembershipChange,
        audit: &[AuditEntry],
    ) -> Result<Membership, Error> {
        team::change(self, (merchant, user), change, audit).await
    }

    async fn set_require_two_factor(&self, merchant: &MerchantId, on: bool, audit: &[AuditEntry]) -> Result<(), Error> {
        team::set_require_two_factor(self, merchant, on, audit).await
    }

    async fn set_unique_amounts(&self, merchant: &MerchantId, on: bool, audit: &[AuditEntry]) -> Result<bool, Error> {
        settings::set_unique_amounts(self, merchant, on, audit).await
    }

    async fn record_audit(&self, audit: &[AuditEntry]) -> Result<(), Error> {
        settings::record_audit(self, audit).await
    }

    async fn set_webhook_alerts(&self, merchant: &MerchantId, user: &UserId, on: bool) -> Result<(), Error> {
        settings::set_webhook_alerts(self, merchant, user, on).await
    }

    async fn live_request(&self, merchant: &MerchantId) -> Result<Option<LiveRequest>, Error> {
        settings::live_request(self, merchant).await
    }

    async fn set_settlement_wallet(
        &self,
        merchant: &MerchantId,
        wallet: &WalletAddress,
        token: Token,
        notices: &[Notice],
        audit: &[AuditEntry],
    ) -> Result<(), Error> {
        settings::set_settlement_wallet(self, merchant, (wallet, token), notices, audit).await
    }

    async fn request_activation(
        &self,
        merchant: &MerchantId,
        at: DateTime<Utc>,
        audit: &[AuditEntry],
    ) -> Result<(), Error> {
        settings::request_activation(self, merchant, at, audit).await
    }

    async fn activate_requested(
        &self,
        merchant: &MerchantId,
        at: DateTime<Utc>,
        unique_amounts: bool,
        audit: &[AuditEntry],
    ) -> Result<bool, Error> {
        settings::activate_requested(self, merchant, (at, unique_amounts), audit).await
    }

    async fn notice(&self, id: &NoticeId) -> Result<Option<Notice>, Error> {
        settings::notice(self, id).await
    }

    async fn pending_incident_alerts(&self, limit: u32) -> Result<Vec<IncidentAlert>, Error> {
        settings::pending_incident_alerts(self, limit).await
    }

    async fn record_incident_alert(&self, alert: &IncidentAlert, notices: &[Notice]) -> Result<(), Error> {
        settings::record_incident_alert(self, alert, notices).await
    }

    async fn audit_log(
        &self,
        merchant: &MerchantId,
        limit: u32,
        before: Option<AuditEntryId>,
    ) -> Result<Vec<AuditEntry>, Error> {
        team::audit_log(self, merchant, limit, before).await
    }
}

/// The user `query` finds, if any.
async fn user_where(store: &PgStore, query: us::BoxedQuery<'_, diesel::pg::Pg>) -> Result<Option<User>, Error> {
    let row: Option<UserRow> =
        query.select(UserRow::as_select()).first(&mut *store.conn().await?).await.optional().map_err(db)?;
    Ok(row.map(UserRow::into_domain))
}
