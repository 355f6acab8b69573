//! The one email outbox: rows written with invoice changes (`write_emails`, inside the change's
//! transaction), with a statement's mailing, with an account link or with a notice; the
//! worker's one claim (with a lease) over all of them, and the reads of the email use cases.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Integer, Text};
use diesel::upsert::excluded;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::email::model::{EmailAbout, EmailCounts, EmailKind, EmailStatus, OutboundEmail};
use stablepay_domain::email::ports::EmailStore;
use stablepay_domain::ids::{AccountLinkId, EmailId, InvoiceId, MerchantId, NoticeId, StatementId};
use stablepay_domain::{Error, Scope};

use crate::error::db;
use crate::pool::PgStore;
use crate::rows::{corrupt, mode};
use crate::schema::emails as e;

#[derive(Queryable, Selectable, Insertable, QueryableByName)]
#[diesel(table_name = e, check_for_backend(diesel::pg::Pg))]
pub(crate) struct EmailRow {
    id: String,
    merchant_id: Option<String>,
    mode: Option<String>,
    invoice_id: Option<String>,
    kind: String,
    slot: String,
    recipient: String,
    status: String,
    attempts: i32,
    last_error: Option<String>,
    next_attempt_at: DateTime<Utc>,
    lease_until: Option<DateTime<Utc>>,
    created_at: DateTime<Utc>,
    sent_at: Option<DateTime<Utc>>,
    statement_id: Option<String>,
    account_link_id: Option<String>,
    notice_id: Option<String>,
}

impl EmailRow {
    fn from_domain(m: &OutboundEmail) -> Self {
        let about = |want: fn(&EmailAbout) -> Option<String>| want(&m.about);
        Self {
            id: m.id.to_string(),
            merchant_id: m.scope().map(|s| s.merchant_id.to_string()),
            mode: m.scope().map(|s| s.mode.as_str().to_owned()),
            invoice_id: m.invoice_id().map(ToString::to_string),
            kind: m.kind.as_str().into(),
            slot: m.slot.clone(),
            recipient: m.to.clone(),
            status: m.status.as_str().into(),
            attempts: i32::try_from(m.attempts).unwrap_or(i32::MAX),
            last_error: m.last_error.clone(),
            next_attempt_at: m.next_attempt_at,
            lease_until: None,
            created_at: m.created_at,
            sent_at: m.sent_at,
            statement_id: about(|a| if let EmailAbout::Statement(_, id) = a { Some(id.to_string()) } else { None }),
            account_link_id: about(|a| if let EmailAbout::AccountLink(id) = a { Some(id.to_string()) } else { None }),
            notice_id: about(|a| if let EmailAbout::Notice(id) = a { Some(id.to_string()) } else { None }),
        }
    }

    pub(crate) fn into_domain(self) -> Result<OutboundEmail, Error> {
        let scope = match (self.merchant_id, self.mode.as_deref()) {
            (Some(m), Some(md)) => Some(Scope::new(MerchantId::from_trusted(m), mode(md)?)),
            (None, None) => None,
            _ => return Err(corrupt("email scope")),
        };
        let about = match (scope, self.invoice_id, self.statement_id, self.account_link_id, self.notice_id) {
            (Some(s), Some(invoice), None, None, None) => EmailAbout::Invoice(s, InvoiceId::from_trusted(invoice)),
            (Some(s), None, Some(statement), None, None) => {
                EmailAbout::Statement(s, StatementId::from_trusted(statement))
            }
            (None, None, None, Some(link), None) => EmailAbout::AccountLink(AccountLinkId::from_trusted(link)),
            (None, None, None, None, Some(notice)) => EmailAbout::Notice(NoticeId::from_trusted(notice)),
            _ => return Err(corrupt("email subject")),
        };
        Ok(OutboundEmail {
            id: EmailId::from_trusted(self.id),
            about,
            kind: EmailKind::parse(&self.kind).ok_or_else(|| corrupt("email kind"))?,
            slot: self.slot,
            to: self.recipient,
            status: EmailStatus::parse(&self.status).ok_or_else(|| corrupt("email status"))?,
            attempts: u32::try_from(self.attempts).map_err(|_| corrupt("email attempts"))?,
            last_error: self.last_error,
            next_attempt_at: self.next_attempt_at,
            created_at: self.created_at,
            sent_at: self.sent_at,
        })
    }
}

/// Inserts new emails and writes attempted ones (releasing their lease), inside the caller's
/// transaction: an invoice's with its change, an account link's or a notice's with it. A second
/// email for one scheduled slot (or one link, or one notice) violates the unique slot.
pub(crate) async fn write_emails(conn: &mut AsyncPgConnection, emails: &[OutboundEmail]) -> QueryResult<()> {
    if emails.is_empty() {
        return Ok(());
    }
    let rows: Vec<EmailRow> = emails.iter().map(EmailRow::from_domain).collect();
    diesel::insert_into(e::table)
        .values(&rows)
        .on_conflict(e::id)
        .do_update()
        .set((
            e::status.eq(excluded(e::status)),
            e::attempts.eq(excluded(e::attempts)),
            e::last_error.eq(excluded(e::last_error)),
            e::next_attempt_at.eq(excluded(e::next_attempt_at)),
            e::lease_until.eq(None::<DateTime<Utc>>),
            e::sent_at.eq(excluded(e::sent_at)),
        ))
        .execute(conn)
        .await
        .map(|_| ())
}

/// Queued emails whose attempt is due (a first attempt at once, a retry at its time), not
/// leased by another worker; leased here for `$2` seconds.
const CLAIM: &str = "UPDATE emails SET lease_until = now() + make_interval(secs => $2) \
    WHERE id IN (SELECT id FROM emails WHERE status = 'queued' \
        AND (attempts = 0 OR next_attempt_at <= now()) AND (lease_until IS NULL OR lease_until < now()) \
        ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED) \
    RETURNING *";

/// Collectible invoices with an enabled reminder schedule, due within 31 days of their scope's
/// time (a test-mode merchant's clock may be ahead), after id `$1` in id order: a page of the
/// walk over `invoices_reminders` (every scope) or `invoices_reminders_scope` (one scope). The
/// clock's offset is read per row by its key, so the walk keeps the index's order.
macro_rules! candidates {
    ($scope:literal) => {
        concat!(
            "SELECT i.merchant_id, i.mode, i.id FROM invoices i \
    WHERE i.collection_state IN ('open', 'past_due', 'partially_paid') AND i.due_at IS NOT NULL \
    AND (i.fields -> 'reminder_schedule' ->> 'enabled') = 'true' AND i.id > $1 ",
            $scope,
            " AND i.due_at BETWEEN (SELECT c.now FROM scope_clocks c \
        WHERE c.merchant_id = i.merchant_id AND c.mode = i.mode) - interval '31 days' \
        AND (SELECT c.now FROM scope_clocks c WHERE c.merchant_id = i.merchant_id AND c.mode = i.mode) + interval '31 days' \
    ORDER BY i.id LIMIT $2"
        )
    };
}
const CANDIDATES: &str = candidates!("");
const CANDIDATES_SCOPED: &str = candidates!("AND i.merchant_id = $3 AND i.mode = $4");

#[async_trait]
impl EmailStore for PgStore {
    async fn email_counts(&self, scope: &Scope, failed_since: DateTime<Utc>) -> Result<EmailCounts, Error> {
        #[derive(QueryableByName)]
        struct Counts {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            queued: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            retrying: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            failed: i64,
        }
        let mut conn = self.conn().await?;
        let counts: Counts = diesel::sql_query(
            "SELECT count(*) FILTER (WHERE status = 'queued') AS queued, \
             count(*) FILTER (WHERE status = 'queued' AND attempts > 0) AS retrying, \
             count(*) FILTER (WHERE status = 'failed' AND created_at >= $3) AS failed \
             FROM emails WHERE merchant_id = $1 AND mode = $2",
        )
        .bind::<Text, _>(scope.merchant_id.as_str())
        .bind::<Text, _>(scope.mode.as_str())
        .bind::<diesel::sql_types::Timestamptz, _>(failed_since)
        .get_result(&mut conn)
        .await
        .map_err(db)?;
        let n = |v: i64| u64::try_from(v).map_err(|_| corrupt("count"));
        Ok(EmailCounts { queued: n(counts.queued)?, retrying: n(counts.retrying)?, failed_recently: n(counts.failed)? })
    }

    async fn list_emails(&self, scope: &Scope, invoice: &InvoiceId) -> Result<Vec<OutboundEmail>, Error> {
        let rows: Vec<EmailRow> = e::table
            .filter(e::invoice_id.eq(invoice.as_str()))
            .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(e::mode.eq(scope.mode.as_str()))
            .order((e::created_at.asc(), e::id.asc()))
            .select(EmailRow::as_select())
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(EmailRow::into_domain).collect()
    }

    async fn last_email(
        &self,
        scope: &Scope,
        invoice: &InvoiceId,
        kind: EmailKind,
    ) -> Result<Option<OutboundEmail>, Error> {
        let row: Option<EmailRow> = e::table
            .filter(e::invoice_id.eq(invoice.as_str()))
            .filter(e::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(e::mode.eq(scope.mode.as_str()))
            .filter(e::kind.eq(kind.as_str()))
            .order(e::created_at.desc())
            .select(EmailRow::as_select())
            .first(&mut *self.conn().await?)
            .await
            .optional()
            .map_err(db)?;
        row.map(EmailRow::into_domain).transpose()
    }

    async fn claim_emails(&self, limit: u32, lease_seconds: u32) -> Result<Vec<OutboundEmail>, Error> {
        let rows: Vec<EmailRow> = diesel::sql_query(CLAIM)
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .bind::<Integer, _>(i32::try_from(lease_seconds).unwrap_or(i32::MAX))
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(EmailRow::into_domain).collect()
    }

    async fn record_email(&self, email: &OutboundEmail) -> Result<(), Error> {
        write_emails(&mut *self.conn().await?, std::slice::from_ref(email)).await.map_err(db)
    }

    async fn reminder_candidates(
        &self,
        only: Option<Scope>,
        after: Option<InvoiceId>,
        limit: u32,
    ) -> Result<Vec<(Scope, InvoiceId)>, Error> {
        let after = after.map_or_else(String::new, |id| id.as_str().to_owned());
        let limit = i32::try_from(limit).unwrap_or(i32::MAX);
        let mut conn = self.conn().await?;
        let rows: Vec<crate::rows::ScopedRow> = match &only {
            Some(s) => {
                diesel::sql_query(CANDIDATES_SCOPED)
                    .bind::<Text, _>(after)
                    .bind::<Integer, _>(limit)
                    .bind::<Text, _>(s.merchant_id.as_str())
                    .bind::<Text, _>(s.mode.as_str())
                    .load(&mut conn)
                    .await
            }
            None => {
                diesel::sql_query(CANDIDATES).bind::<Text, _>(after).bind::<Integer, _>(limit).load(&mut conn).await
            }
        }
        .map_err(db)?;
        rows.into_iter()
            .map(|r| {
                Ok((Scope::new(MerchantId::from_trusted(r.merchant_id), mode(&r.mode)?), InvoiceId::from_trusted(r.id)))
            })
            .collect()
    }

    async fn purge_emails(&self, days: u32, limit: u32) -> Result<u64, Error> {
        crate::retention::emails(&mut *self.conn().await?, days, limit).await
    }
}

#[cfg(test)]
mod tests {
    use stablepay_domain::invoice::collection::CollectionState;

    use super::*;
    use crate::rows::in_list;

    /// The reminder walk reads the invoices the domain calls collectible, no other.
    #[test]
    fn reminder_candidates_are_the_domains_collectible_invoices() {
        let filter = format!("i.collection_state IN ({})", in_list(&CollectionState::COLLECTIBLE));
        for sql in [CANDIDATES, CANDIDATES_SCOPED] {
            assert!(sql.contains(&filter), "{sql}");
        }
    }
}
