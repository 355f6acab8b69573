//! Statement settings and monthly statements: a statement is inserted with its two exports in
//! one transaction, and marked mailed with its email in the outbox in another.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel::sql_types::Integer;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::email::model::OutboundEmail;
use stablepay_domain::export::{Export, ExportStatus};
use stablepay_domain::ids::{EmailId, ExportId, MerchantId, PublicToken, StatementId};
use stablepay_domain::statement::ports::{ExportingStatement, StatementStore};
use stablepay_domain::statement::{Statement, StatementMonth, StatementSetting, StatementStatus};
use stablepay_domain::{Error, Resource, Scope};

use crate::emails::write_emails;
use crate::error::{TxError, db};
use crate::exports::ExportRow;
use crate::pool::PgStore;
use crate::rows::{corrupt, mode};
use crate::schema::{exports as x, merchants, statement_settings as ss, statements as st};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = ss, check_for_backend(diesel::pg::Pg))]
struct SettingRow {
    merchant_id: String,
    mode: String,
    email: String,
    enabled_at: DateTime<Utc>,
}

impl SettingRow {
    fn into_domain(self) -> Result<StatementSetting, Error> {
        Ok(StatementSetting {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            email: self.email,
            enabled_at: self.enabled_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable, QueryableByName)]
#[diesel(table_name = st, check_for_backend(diesel::pg::Pg))]
struct StatementRow {
    id: String,
    merchant_id: String,
    mode: String,
    month: NaiveDate,
    email: String,
    token: String,
    invoices_export_id: String,
    payments_export_id: String,
    status: String,
    failure: Option<String>,
    email_id: Option<String>,
    created_at: DateTime<Utc>,
}

impl StatementRow {
    fn of(s: &Statement) -> Self {
        Self {
            id: s.id.to_string(),
            merchant_id: s.scope.merchant_id.to_string(),
            mode: s.scope.mode.as_str().into(),
            month: s.month.first_day(),
            email: s.email.clone(),
            token: s.token.as_str().to_owned(),
            invoices_export_id: s.invoices_export.to_string(),
            payments_export_id: s.payments_export.to_string(),
            status: s.status.as_str().into(),
            failure: s.failure.clone(),
            email_id: s.email_id.as_ref().map(ToString::to_string),
            created_at: s.created_at,
        }
    }

    fn into_domain(self) -> Result<Statement, Error> {
        Ok(Statement {
            id: StatementId::from_trusted(self.id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            month: StatementMonth::of_day(self.month),
            email: self.email,
            token: PublicToken::from_trusted(self.token),
            invoices_export: ExportId::from_trusted(self.invoices_export_id),
            payments_export: ExportId::from_trusted(self.payments_export_id),
            status: StatementStatus::parse(&self.status).ok_or_else(|| corrupt("statement status"))?,
            failure: self.failure,
            email_id: self.email_id.map(EmailId::from_trusted),
            created_at: self.created_at,
        })
    }
}

/// A statement whose files are being written, with the status of each.
#[derive(QueryableByName)]
struct ExportingRow {
    #[diesel(embed)]
    statement: StatementRow,
    #[diesel(sql_type = diesel::sql_types::Text)]
    invoices_status: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    payments_status: String,
}

const EXPORTING: &str = "SELECT s.*, i.status AS invoices_status, p.status AS payments_status FROM statements s \
    JOIN exports i ON i.id = s.invoices_export_id JOIN exports p ON p.id = s.payments_export_id \
    WHERE s.status = 'exporting' ORDER BY s.created_at LIMIT $1";

fn export_status(text: &str) -> Result<ExportStatus, Error> {
    ExportStatus::parse(text).ok_or_else(|| corrupt("export status"))
}

impl PgStore {
    /// The one statement `query` finds. Errors: `NotFound(Statement)`.
    async fn one_statement(&self, query: st::BoxedQuery<'_, diesel::pg::Pg>) -> Result<Statement, Error> {
        let row: Option<StatementRow> =
            query.select(StatementRow::as_select()).first(&mut *self.conn().await?).await.optional().map_err(db)?;
        row.ok_or(Error::NotFound(Resource::Statement))?.into_domain()
    }
}

#[async_trait]
impl StatementStore for PgStore {
    async fn set_statement_email(
        &self,
        scope: &Scope,
        email: Option<String>,
        now: DateTime<Utc>,
    ) -> Result<Option<StatementSetting>, Error> {
        let mut conn = self.conn().await?;
        let merchant = scope.merchant_id.as_str();
        let found: i64 =
            merchants::table.filter(merchants::id.eq(merchant)).count().get_result(&mut *conn).await.map_err(db)?;
        if found == 0 {
            return Err(Error::NotFound(Resource::Merchant));
        }
        let Some(email) = email else {
            diesel::delete(ss::table.filter(ss::merchant_id.eq(merchant)).filter(ss::mode.eq(scope.mode.as_str())))
                .execute(&mut *conn)
                .await
                .map_err(db)?;
            return Ok(None);
        };
        let row =
            SettingRow { merchant_id: merchant.to_owned(), mode: scope.mode.as_str().into(), email, enabled_at: now };
        let saved: SettingRow = diesel::insert_into(ss::table)
            .values(&row)
            .on_conflict((ss::merchant_id, ss::mode))
            .do_update()
            .set(ss::email.eq(diesel::upsert::excluded(ss::email)))
            .returning(SettingRow::as_returning())
            .get_result(&mut *conn)
            .await
            .map_err(db)?;
        saved.into_domain().map(Some)
    }

    async fn statement_settings(&self, only: Option<Scope>) -> Result<Vec<StatementSetting>, Error> {
        let mut query = ss::table.select(SettingRow::as_select()).order((ss::merchant_id, ss::mode)).into_boxed();
        if let Some(scope) = &only {
            query = query
                .filter(ss::merchant_id.eq(scope.merchant_id.to_string()))
                .filter(ss::mode.eq(scope.mode.as_str()));
        }
        let rows: Vec<SettingRow> = query.load(&mut *self.conn().await?).await.map_err(db)?;
        rows.into_iter().map(SettingRow::into_domain).collect()
    }

    async fn insert_statement(&self, statement: &Statement, exports: &[Export]) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let exists = st::table
            .filter(st::merchant_id.eq(statement.scope.merchant_id.as_str()))
            .filter(st::mode.eq(statement.scope.mode.as_str()))
            .filter(st::month.eq(statement.month.first_day()));
        let found: i64 = exists.count().get_result(&mut *conn).await.map_err(db)?;
        if found > 0 {
            return Ok(false);
        }
        let rows: Vec<ExportRow> = exports.iter().map(ExportRow::of).collect();
        let row = StatementRow::of(statement);
        let inserted = conn
            .transaction::<_, TxError, _>(async |conn| {
                diesel::insert_into(x::table).values(&rows).execute(conn).await?;
                Ok(diesel::insert_into(st::table).values(&row).execute(conn).await?)
            })
            .await;
        match inserted {
            Ok(_) => Ok(true),
            // Another worker issued the month's statement meanwhile: nothing of this one stays.
            Err(TxError::Db(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _,
            ))) => Ok(false),
            Err(e) => Err(e.into_domain()),
        }
    }

    async fn exporting_statements(&self, limit: u32) -> Result<Vec<ExportingStatement>, Error> {
        let rows: Vec<ExportingRow> = diesel::sql_query(EXPORTING)
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter()
            .map(|r| {
                Ok(ExportingStatement {
                    invoices: export_status(&r.invoices_status)?,
                    payments: export_status(&r.payments_status)?,
                    statement: r.statement.into_domain()?,
                })
            })
            .collect()
    }

    async fn statement_mailed(&self, statement: &Statement, email: &OutboundEmail) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let mailed = conn
            .transaction::<_, TxError, _>(async |conn| {
                let changed = diesel::update(
                    st::table.filter(st::id.eq(statement.id.as_str())).filter(st::status.eq("exporting")),
                )
                .set((st::status.eq(StatementStatus::Mailed.as_str()), st::email_id.eq(email.id.as_str())))
                .execute(conn)
                .await?;
                if changed == 0 {
                    return Ok(false);
                }
                write_emails(conn, std::slice::from_ref(email)).await?;
                Ok(true)
            })
            .await;
        mailed.map_err(TxError::into_domain)
    }

    async fn statement_failed(&self, statement: &Statement, message: &str) -> Result<(), Error> {
        diesel::update(st::table.filter(st::id.eq(statement.id.as_str())).filter(st::status.eq("exporting")))
            .set((st::status.eq(StatementStatus::Failed.as_str()), st::failure.eq(message)))
            .execute(&mut *self.conn().await?)
            .await
            .map(|_| ())
            .map_err(db)
    }

    async fn get_statement(&self, scope: &Scope, id: &StatementId) -> Result<Statement, Error> {
        let query = st::table
            .filter(st::id.eq(id.as_str()))
            .filter(st::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(st::mode.eq(scope.mode.as_str()))
            .into_boxed();
        self.one_statement(query).await
    }

    async fn statement_by_token(&self, token: &PublicToken) -> Result<Statement, Error> {
        self.one_statement(st::table.filter(st::token.eq(token.as_str())).into_boxed()).await
    }

    async fn list_statements(&self, scope: &Scope, limit: u32) -> Result<Vec<Statement>, Error> {
        let rows: Vec<StatementRow> = st::table
            .filter(st::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(st::mode.eq(scope.mode.as_str()))
            .order(st::month.desc())
            .limit(i64::from(limit))
            .select(StatementRow::as_select())
            .load(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        rows.into_iter().map(StatementRow::into_domain).collect()
    }
}
