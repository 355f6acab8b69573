//! Self-service settings: the settlement wallet (the live settlement's once active, the
//! requested one before), activation requests, members' webhook alerts, notices (each written
//! with its email, a row of the one outbox) and the incidents whose alerts are due.

use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::Error as DieselError;
use diesel::sql_types::{Bool, Integer, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use stablepay_domain::account::AuditEntry;
use stablepay_domain::account::model::LiveRequest;
use stablepay_domain::account::notice::{IncidentAlert, Notice, NoticeKind};
use stablepay_domain::ids::{MerchantId, NoticeId, UserId, WebhookIncidentId};
use stablepay_domain::merchant::model::{Token, WalletAddress};
use stablepay_domain::{Error, Resource};

use super::rows::{audit_if_changed, write_audit};
use crate::emails::{EmailRow, write_emails};
use crate::error::db;
use crate::pool::PgStore;
use crate::rows::{ScopedRow, corrupt};
use crate::schema::{emails as em, memberships as ms, merchants as mer, notices as nt};

pub(super) async fn set_webhook_alerts(
    store: &PgStore,
    merchant: &MerchantId,
    user: &UserId,
    on: bool,
) -> Result<(), Error> {
    let n =
        diesel::update(ms::table.filter(ms::merchant_id.eq(merchant.as_str())).filter(ms::user_id.eq(user.as_str())))
            .set(ms::webhook_alerts.eq(on))
            .execute(&mut *store.conn().await?)
            .await
            .map_err(db)?;
    if n == 0 {
        return Err(Error::NotFound(Resource::Member));
    }
    Ok(())
}

/// The requested wallet, its token and when activation was asked for, as stored.
type RequestColumns = (Option<String>, Option<String>, Option<DateTime<Utc>>);

pub(super) async fn live_request(store: &PgStore, merchant: &MerchantId) -> Result<Option<LiveRequest>, Error> {
    let row: Option<RequestColumns> = mer::table
        .find(merchant.as_str())
        .select((mer::requested_wallet, mer::requested_token, mer::activation_requested_at))
        .first(&mut *store.conn().await?)
        .await
        .optional()
        .map_err(db)?;
    let Some((Some(wallet), Some(token), requested_at)) = row else { return Ok(None) };
    let token = Token::parse(&token).ok_or_else(|| corrupt("requested token"))?;
    Ok(Some(LiveRequest { wallet: WalletAddress::from_trusted(wallet), token, requested_at }))
}

/// Inserts notices with their emails inside the caller's transaction.
async fn insert_notices(conn: &mut AsyncPgConnection, notices: &[Notice]) -> Result<(), DieselError> {
    for n in notices {
        diesel::insert_into(nt::table)
            .values((
                nt::id.eq(n.id.as_str()),
                nt::merchant_id.eq(n.merchant_id.as_str()),
                nt::kind.eq(n.kind.as_str()),
                nt::recipient.eq(&n.to),
                nt::subject.eq(&n.subject),
                nt::intro.eq(&n.intro),
                nt::button_text.eq(&n.button.0),
                nt::button_url.eq(&n.button.1),
                nt::created_at.eq(n.created_at),
            ))
            .execute(conn)
            .await?;
    }
    let mails: Vec<_> = notices.iter().map(|n| n.mail.clone()).collect();
    write_emails(conn, &mails).await
}

pub(super) async fn set_settlement_wallet(
    store: &PgStore,
    merchant: &MerchantId,
    (wallet, token): (&WalletAddress, Token),
    notices: &[Notice],
    audit: &[AuditEntry],
) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        // Active: the live settlement changes (its activation time kept); else the request.
        diesel::sql_query(
            "UPDATE merchants SET \
             live_wallet = CASE WHEN live_activated_at IS NULL THEN live_wallet ELSE $2 END, \
             live_token = CASE WHEN live_activated_at IS NULL THEN live_token ELSE $3 END, \
             requested_wallet = CASE WHEN live_activated_at IS NULL THEN $2 ELSE requested_wallet END, \
             requested_token = CASE WHEN live_activated_at IS NULL THEN $3 ELSE requested_token END \
             WHERE id = $1",
        )
        .bind::<Text, _>(merchant.as_str())
        .bind::<Text, _>(wallet.as_str())
        .bind::<Text, _>(token.symbol())
        .execute(conn)
        .await?;
        insert_notices(conn, notices).await?;
        write_audit(conn, audit).await
    })
    .await
    .map_err(db)?;
    // Authenticated keys carry the merchant's live settlement: they are read again.
    crate::keycache::announce(store, &mut conn, merchant.as_str()).await
}

pub(super) async fn set_unique_amounts(
    store: &PgStore,
    merchant: &MerchantId,
    on: bool,
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let mut conn = store.conn().await?;
    let changed = conn
        .transaction::<_, DieselError, _>(async |conn| {
            let n = diesel::update(mer::table.find(merchant.as_str()).filter(mer::live_activated_at.is_not_null()))
                .set(mer::live_unique_amounts.eq(on))
                .execute(conn)
                .await?;
            audit_if_changed(conn, n, audit).await
        })
        .await
        .map_err(db)?;
    announced_if((store, &mut conn), merchant, changed).await
}

pub(super) async fn record_audit(store: &PgStore, audit: &[AuditEntry]) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    write_audit(&mut conn, audit).await.map_err(db)
}

pub(super) async fn request_activation(
    store: &PgStore,
    merchant: &MerchantId,
    at: DateTime<Utc>,
    audit: &[AuditEntry],
) -> Result<(), Error> {
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        diesel::update(mer::table.find(merchant.as_str()).filter(mer::requested_wallet.is_not_null()))
            .set(mer::activation_requested_at.eq(at))
            .execute(conn)
            .await?;
        write_audit(conn, audit).await
    })
    .await
    .map_err(db)
}

pub(super) async fn activate_requested(
    store: &PgStore,
    merchant: &MerchantId,
    (at, unique_amounts): (DateTime<Utc>, bool),
    audit: &[AuditEntry],
) -> Result<bool, Error> {
    let mut conn = store.conn().await?;
    let activated = conn
        .transaction::<_, DieselError, _>(async |conn| {
            let n = diesel::sql_query(
                "UPDATE merchants SET live_wallet = requested_wallet, live_token = requested_token, \
             live_activated_at = $2, live_unique_amounts = $3, requested_wallet = NULL, requested_token = NULL, \
             activation_requested_at = NULL \
             WHERE id = $1 AND requested_wallet IS NOT NULL AND live_activated_at IS NULL",
            )
            .bind::<Text, _>(merchant.as_str())
            .bind::<diesel::sql_types::Timestamptz, _>(at)
            .bind::<diesel::sql_types::Bool, _>(unique_amounts)
            .execute(conn)
            .await?;
            audit_if_changed(conn, n, audit).await
        })
        .await
        .map_err(db)?;
    announced_if((store, &mut conn), merchant, activated).await
}

/// Announces a change of `merchant`'s live settlement when there was one (`changed`):
/// authenticated keys carry it, and processes caching them read it again. Answers `changed`.
async fn announced_if(
    (store, conn): (&PgStore, &mut AsyncPgConnection),
    merchant: &MerchantId,
    changed: bool,
) -> Result<bool, Error> {
    if changed {
        crate::keycache::announce(store, conn, merchant.as_str()).await?;
    }
    Ok(changed)
}

#[derive(Queryable, Selectable)]
#[diesel(table_name = nt, check_for_backend(diesel::pg::Pg))]
struct NoticeRow {
    id: String,
    merchant_id: String,
    kind: String,
    recipient: String,
    subject: String,
    intro: String,
    button_text: String,
    button_url: String,
    created_at: DateTime<Utc>,
}

impl NoticeRow {
    /// The notice, with `mail` the outbox row of its email.
    fn into_domain(self, mail: EmailRow) -> Result<Notice, Error> {
        Ok(Notice {
            id: NoticeId::from_trusted(self.id),
            merchant_id: MerchantId::from_trusted(self.merchant_id),
            kind: NoticeKind::parse(&self.kind).ok_or_else(|| corrupt("notice kind"))?,
            to: self.recipient,
            subject: self.subject,
            intro: self.intro,
            button: (self.button_text, self.button_url),
            mail: mail.into_domain()?,
            created_at: self.created_at,
        })
    }
}

pub(super) async fn notice(store: &PgStore, id: &NoticeId) -> Result<Option<Notice>, Error> {
    let row: Option<(NoticeRow, EmailRow)> = nt::table
        .inner_join(em::table.on(em::notice_id.eq(nt::id.nullable())))
        .filter(nt::id.eq(id.as_str()))
        .select((NoticeRow::as_select(), EmailRow::as_select()))
        .first(&mut *store.conn().await?)
        .await
        .optional()
        .map_err(db)?;
    row.map(|(n, m)| n.into_domain(m)).transpose()
}

#[derive(QueryableByName)]
struct AlertRow {
    #[diesel(embed)]
    incident: ScopedRow,
    #[diesel(sql_type = Text)]
    url: String,
    #[diesel(sql_type = Bool)]
    resolved: bool,
    #[diesel(sql_type = Integer)]
    failed_attempts: i32,
    #[diesel(sql_type = diesel::sql_types::Array<Text>)]
    recipients: Vec<String>,
}

/// Incidents whose alert is due, oldest first: one row per alert (opened, then resolved), with
/// the members of the merchant who asked for webhook alerts. An alert the endpoint does not
/// want is marked done first.
const PENDING: &str = "WITH skipped AS (UPDATE webhook_incidents i SET \
        opened_alerted = opened_alerted OR NOT e.alert_on_incident_opened, \
        resolved_alerted = resolved_alerted OR (i.status = 'resolved' AND NOT e.alert_on_incident_resolved) \
        FROM webhook_endpoints e WHERE e.id = i.endpoint_id \
        AND ((NOT i.opened_alerted AND NOT e.alert_on_incident_opened) \
          OR (i.status = 'resolved' AND NOT i.resolved_alerted AND NOT e.alert_on_incident_resolved)) \
        RETURNING i.id) \
    SELECT i.id, i.merchant_id, i.mode, e.url, (i.opened_alerted OR NOT e.alert_on_incident_opened) AS resolved, \
        i.failed_attempts, \
        ARRAY(SELECT u.email FROM memberships m JOIN users u ON u.id = m.user_id \
              WHERE m.merchant_id = i.merchant_id AND m.webhook_alerts ORDER BY u.email) AS recipients \
    FROM webhook_incidents i JOIN webhook_endpoints e ON e.id = i.endpoint_id \
    WHERE i.id NOT IN (SELECT id FROM skipped) AND ((NOT i.opened_alerted AND e.alert_on_incident_opened) \
        OR (i.status = 'resolved' AND NOT i.resolved_alerted AND e.alert_on_incident_resolved)) \
    ORDER BY i.seq LIMIT $1";

pub(super) async fn pending_incident_alerts(store: &PgStore, limit: u32) -> Result<Vec<IncidentAlert>, Error> {
    let rows: Vec<AlertRow> = diesel::sql_query(PENDING)
        .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
        .load(&mut *store.conn().await?)
        .await
        .map_err(db)?;
    rows.into_iter()
        .map(|r| {
            Ok(IncidentAlert {
                mode: r.incident.scope()?.mode,
                incident_id: WebhookIncidentId::from_trusted(r.incident.id),
                merchant_id: MerchantId::from_trusted(r.incident.merchant_id),
                endpoint_url: r.url,
                resolved: r.resolved,
                failed_attempts: u32::try_from(r.failed_attempts).unwrap_or(0),
                recipients: r.recipients,
            })
        })
        .collect()
}

pub(super) async fn record_incident_alert(
    store: &PgStore,
    alert: &IncidentAlert,
    notices: &[Notice],
) -> Result<(), Error> {
    let column = if alert.resolved { "resolved_alerted" } else { "opened_alerted" };
    let sql = format!("UPDATE webhook_incidents SET {column} = true WHERE id = $1 AND NOT {column}");
    let mut conn = store.conn().await?;
    conn.transaction::<_, DieselError, _>(async |conn| {
        let n = diesel::sql_query(&sql).bind::<Text, _>(alert.incident_id.as_str()).execute(conn).await?;
        if n == 1 {
            insert_notices(conn, notices).await?;
        }
        Ok(())
    })
    .await
    .map_err(db)
}
