//! Users, memberships and sessions. A user and its first membership are one transaction; a
//! session is found by its token's digest, never by the token.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError};
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::account::ports::AccountStore;
use stablepay_domain::account::{Membership, Role, Session, User};
use stablepay_domain::ids::{MerchantId, SessionId, UserId};
use stablepay_domain::{Error, Resource};

use crate::error::{TxError, db};
use crate::pool::PgStore;
use crate::rows::corrupt;
use crate::schema::{memberships as ms, sessions as se, users as us};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = us, check_for_backend(diesel::pg::Pg))]
struct UserRow {
    id: String,
    email: String,
    name: String,
    password_hash: String,
    email_verified_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl UserRow {
    fn of(u: &User) -> Self {
        Self {
            id: u.id.to_string(),
            email: u.email.clone(),
            name: u.name.clone(),
            password_hash: u.password_hash.clone(),
            email_verified_at: u.email_verified_at,
            created_at: u.created_at,
        }
    }

    fn into_domain(self) -> User {
        User {
            id: UserId::from_trusted(self.id),
            email: self.email,
            name: self.name,
            password_hash: self.password_hash,
            email_verified_at: self.email_verified_at,
            created_at: self.created_at,
        }
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = ms, check_for_backend(diesel::pg::Pg))]
struct MembershipRow {
    user_id: String,
    merchant_id: String,
    role: String,
    created_at: DateTime<Utc>,
}

impl MembershipRow {
    fn into_domain(self) -> Result<Membership, Error> {
        Ok(Membership {
            user_id: UserId::from_trusted(self.user_id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            role: Role::parse(&self.role).ok_or_else(|| corrupt("role"))?,
            created_at: self.created_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = se, check_for_backend(diesel::pg::Pg))]
struct SessionRow {
    id: String,
    user_id: String,
    token_digest: Vec<u8>,
    csrf_token: String,
    created_at: DateTime<Utc>,
    last_seen_at: DateTime<Utc>,
}

impl SessionRow {
    fn of(s: &Session) -> Self {
        Self {
            id: s.id.to_string(),
            user_id: s.user_id.to_string(),
            token_digest: s.token_digest.to_vec(),
            csrf_token: s.csrf_token.clone(),
            created_at: s.created_at,
            last_seen_at: s.last_seen_at,
        }
    }

    fn into_domain(self) -> Result<Session, Error> {
        Ok(Session {
            id: SessionId::from_trusted(self.id),
            user_id: UserId::from_trusted(self.user_id),
            token_digest: self.token_digest.try_into().map_err(|_| corrupt("session digest"))?,
            csrf_token: self.csrf_token,
            created_at: self.created_at,
            last_seen_at: self.last_seen_at,
        })
    }
}

#[async_trait]
impl AccountStore for PgStore {
    async fn insert_user(&self, user: &User, membership: &Membership) -> Result<(), Error> {
        let (u, m) = (
            UserRow::of(user),
            MembershipRow {
                user_id: membership.user_id.to_string(),
                merchant_id: membership.merchant_id.to_string(),
                role: membership.role.as_str().into(),
                created_at: membership.created_at,
            },
        );
        let mut conn = self.conn().await?;
        let done = conn
            .transaction::<_, TxError, _>(async |conn| {
                diesel::insert_into(us::table).values(&u).execute(conn).await?;
                diesel::insert_into(ms::table).values(&m).execute(conn).await?;
                Ok(())
            })
            .await;
        match done {
            Err(TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _))) => {
                Err(Error::validation("email", "a user with this email exists"))
            }
            Err(TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::ForeignKeyViolation, _))) => {
                Err(Error::NotFound(Resource::Merchant))
            }
            other => other.map_err(TxError::into_domain),
        }
    }

    async fn user_by_email(&self, email: &str) -> Result<Option<User>, Error> {
        let row: Option<UserRow> = us::table
            .filter(us::email.eq(email))
            .select(UserRow::as_select())
            .first(&mut *self.conn().await?)
            .await
            .optional()
            .map_err(db)?;
        Ok(row.map(UserRow::into_domain))
    }

    async fn memberships(&self, user: &UserId) -> Result<Vec<Membership>, Error> {
        let rows: Vec<MembershipRow> = ms::table
            .filter(ms::user_id.eq(user.as_str()))
            .order((ms::created_at, ms::merchant_id))
            .select(MembershipRow::as_select())
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(MembershipRow::into_domain).collect()
    }

    async fn insert_session(&self, session: &Session) -> Result<(), Error> {
        diesel::insert_into(se::table)
            .values(&SessionRow::of(session))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
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

    async fn delete_session(&self, id: &SessionId) -> Result<(), Error> {
        diesel::delete(se::table.filter(se::id.eq(id.as_str())))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn delete_user_sessions(&self, user: &UserId) -> Result<u64, Error> {
        let n = diesel::delete(se::table.filter(se::user_id.eq(user.as_str())))
            .execute(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }
}
