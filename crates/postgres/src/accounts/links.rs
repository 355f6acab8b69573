//! Emailed account links: each row is the link (its token's digest, expiry, use); its email is
//! a row of the one outbox (`emails.account_link_id`), written in the link's transaction.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use stablepay_domain::Error;
use stablepay_domain::account::link::{AccountLink, Invitation, LinkEffect, LinkPurpose};
use stablepay_domain::account::{AuditEntry, Role};
use stablepay_domain::email::model::EmailStatus;
use stablepay_domain::ids::{AccountLinkId, MerchantId, UserId};

use super::rows::{MembershipRow, UserRow, delete_sessions_in, user_insert_error, write_audit};
use crate::emails::{EmailRow, write_emails};
use crate::error::{TxError, db};
use crate::pool::PgStore;
use crate::rows::corrupt;
use crate::schema::{account_links as al, emails as em, memberships as ms, users as us};

/// Links with their emails (one each, written with it).
macro_rules! with_mail {
    () => {
        al::table.inner_join(em::table.on(em::account_link_id.eq(al::id.nullable())))
    };
}

#[derive(Queryable, QueryableByName, Selectable, Insertable)]
#[diesel(table_name = al, check_for_backend(diesel::pg::Pg))]
struct LinkRow {
    id: String,
    purpose: String,
    email: String,
    user_id: Option<String>,
    merchant_id: Option<String>,
    role: Option<String>,
    invited_by: Option<String>,
    token_digest: Option<Vec<u8>>,
    expires_at: DateTime<Utc>,
    used_at: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
}

impl LinkRow {
    fn of(l: &AccountLink) -> Self {
        let inv = l.invitation.as_ref();
        Self {
            id: l.id.to_string(),
            purpose: l.purpose.as_str().into(),
            email: l.email.clone(),
            user_id: l.user_id.as_ref().map(ToString::to_string),
            merchant_id: inv.map(|i| i.merchant_id.to_string()),
            role: inv.map(|i| i.role.as_str().to_owned()),
            invited_by: inv.and_then(|i| i.invited_by.as_ref()).map(ToString::to_string),
            token_digest: l.token_digest.map(|d| d.to_vec()),
            expires_at: l.expires_at,
            used_at: l.used_at,
            created_at: l.created_at,
        }
    }

    /// The link, with `mail` the outbox row of its email.
    fn into_domain(self, mail: EmailRow) -> Result<AccountLink, Error> {
        let invitation = match (self.merchant_id, self.role) {
            (Some(m), Some(r)) => Some(Invitation {
                merchant_id: MerchantId::from_trusted(m),
                role: Role::parse(&r).ok_or_else(|| corrupt("invitation role"))?,
                invited_by: self.invited_by.map(UserId::from_trusted),
            }),
            _ => None,
        };
        let token_digest =
            self.token_digest.map(<[u8; 32]>::try_from).transpose().map_err(|_| corrupt("link digest"))?;
        Ok(AccountLink {
            id: AccountLinkId::from_trusted(self.id),
            purpose: LinkPurpose::parse(&self.purpose).ok_or_else(|| corrupt("link purpose"))?,
            email: self.email,
            user_id: self.user_id.map(UserId::from_trusted),
            invitation,
            token_digest,
            expires_at: self.expires_at,
            used_at: self.used_at,
            created_at: self.created_at,
            mail: mail.into_domain()?,
        })
    }
}

/// Skips the emails of `links` that have not gone yet (their links were replaced or revoked),
/// inside the caller's transaction.
async fn skip_mails(conn: &mut AsyncPgConnection, links: &[String]) -> Result<(), DieselError> {
    if links.is_empty() {
        return Ok(());
    }
    diesel::update(
        em::table.filter(em::account_link_id.eq_any(links)).filter(em::status.eq(EmailStatus::Queued.as_str())),
    )
    .set((em::status.eq(EmailStatus::Skipped.as_str()), em::lease_until.eq(None::<DateTime<Utc>>)))
    .execute(conn)
    .await
    .map(|_| ())
}

/// The purposes a new link of `purpose` replaces (a reset replaces the sign-up notice's reset
/// link too, and the other way round).
fn replaced(purpose: LinkPurpose) -> Vec<&'static str> {
    if purpose.resets_password() {
        vec![LinkPurpose::ResetPassword.as_str(), LinkPurpose::SignupExisting.as_str()]
    } else {
        vec![purpose.as_str()]
    }
}

/// Inserts a link inside the caller's transaction, marking used the unused links it replaces
/// (and skipping their emails if they have not gone yet).
pub(super) async fn insert_in(conn: &mut AsyncPgConnection, link: &AccountLink) -> Result<(), DieselError> {
    let merchant = link.invitation.as_ref().map(|i| i.merchant_id.to_string());
    let replaced_links = diesel::update(
        al::table
            .filter(al::email.eq(&link.email))
            .filter(al::purpose.eq_any(replaced(link.purpose)))
            .filter(al::used_at.is_null())
            .filter(al::merchant_id.is_not_distinct_from(merchant)),
    )
    .set(al::used_at.eq(link.created_at))
    .returning(al::id)
    .get_results::<String>(conn)
    .await?;
    // Their emails, if they have not gone yet, no longer need to.
    skip_mails(conn, &replaced_links).await?;
    diesel::insert_into(al::table).values(&LinkRow::of(link)).execute(conn).await?;
    write_emails(conn, std::slice::from_ref(&link.mail)).await
}

pub(super) async fn insert_link(store: &PgStore, link: &AccountLink, audit: &[AuditEntry]) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        insert_in(conn, link).await?;
        write_audit(conn, audit).await
    })
    .await
    .map_err(db)
}

/// How one link is found: by the digest of its last emailed token, or by its id.
pub(super) enum LinkKey<'a> {
    /// The SHA-256 of the token a request presents.
    Digest(&'a [u8; 32]),
    /// Its id (the outbox's delivery of its email).
    Id(&'a AccountLinkId),
}

pub(super) async fn link(store: &PgStore, key: LinkKey<'_>) -> Result<Option<AccountLink>, Error> {
    let query = with_mail!().into_boxed();
    let query = match key {
        LinkKey::Digest(digest) => query.filter(al::token_digest.eq(digest.as_slice())),
        LinkKey::Id(id) => query.filter(al::id.eq(id.as_str())),
    };
    let row: Option<(LinkRow, EmailRow)> = query
        .select((LinkRow::as_select(), EmailRow::as_select()))
        .first(&mut *store.conn().await?)
        .await
        .optional()
        .map_err(db)?;
    row.map(|(l, m)| l.into_domain(m)).transpose()
}

pub(super) async fn set_token(store: &PgStore, id: &AccountLinkId, digest: &[u8; 32]) -> Result<(), Error> {
    diesel::update(al::table.find(id.as_str()))
        .set(al::token_digest.eq(digest.as_slice()))
        .execute(&mut *store.conn().await?)
        .await
        .map(|_| ())
        .map_err(db)
}

/// Applies a link's effect inside the caller's transaction.
async fn apply(conn: &mut AsyncPgConnection, effect: &LinkEffect, at: DateTime<Utc>) -> Result<(), DieselError> {
    match effect {
        LinkEffect::VerifyEmail { user } => {
            diesel::update(us::table.find(user.as_str()).filter(us::email_verified_at.is_null()))
                .set(us::email_verified_at.eq(at))
                .execute(conn)
                .await?;
        }
        LinkEffect::SetPassword { user, password_hash } => {
            diesel::update(us::table.find(user.as_str()))
                .set((
                    us::password_hash.eq(password_hash),
                    us::email_verified_at.eq(diesel::dsl::sql::<
                        diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
                    >("COALESCE(email_verified_at, now())")),
                ))
                .execute(conn)
                .await?;
            delete_sessions_in(conn, user, None).await?;
        }
        LinkEffect::Join { new_user, membership } => {
            if let Some(user) = new_user {
                diesel::insert_into(us::table).values(&UserRow::of(user)).execute(conn).await?;
            }
            diesel::insert_into(ms::table)
                .values(&MembershipRow::of(membership))
                .on_conflict((ms::user_id, ms::merchant_id))
                .do_update()
                .set(ms::role.eq(membership.role.as_str()))
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}

pub(super) async fn consume(
    store: &PgStore,
    (id, at): (&AccountLinkId, DateTime<Utc>),
    effect: &LinkEffect,
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, TxError, _>(async |conn| {
        let taken = diesel::update(al::table.find(id.as_str()).filter(al::used_at.is_null()))
            .set(al::used_at.eq(at))
            .execute(conn)
            .await?;
        if taken == 0 {
            return Ok(false);
        }
        apply(conn, effect, at).await?;
        write_audit(conn, audit).await?;
        Ok(true)
    })
    .await
    .map_err(user_insert_error)
}

pub(super) async fn invitations(
    store: &PgStore,
    merchant: &MerchantId,
    now: DateTime<Utc>,
) -> Result<Vec<AccountLink>, Error> {
    let rows: Vec<(LinkRow, EmailRow)> = with_mail!()
        .filter(al::merchant_id.eq(merchant.as_str()))
        .filter(al::purpose.eq(LinkPurpose::Invitation.as_str()))
        .filter(al::used_at.is_null())
        .filter(al::expires_at.gt(now))
        .order((al::created_at.desc(), al::id.desc()))
        .select((LinkRow::as_select(), EmailRow::as_select()))
        .load(&mut *store.conn().await?)
        .await
        .map_err(db)?;
    rows.into_iter().map(|(l, m)| l.into_domain(m)).collect()
}

pub(super) async fn revoke_invitation(
    store: &PgStore,
    (merchant, id): (&MerchantId, &AccountLinkId),
    at: DateTime<Utc>,
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        let n = diesel::update(
            al::table.find(id.as_str()).filter(al::merchant_id.eq(merchant.as_str())).filter(al::used_at.is_null()),
        )
        .set(al::used_at.eq(at))
        .execute(conn)
        .await?;
        if n == 0 {
            return Ok(false);
        }
        skip_mails(conn, &[id.to_string()]).await?;
        write_audit(conn, audit).await?;
        Ok(true)
    })
    .await
    .map_err(db)
}
