//! Exports: their rows, their files in chunks (`export_chunks`), and the records an export
//! reads, page by page in key order (invoices by insertion, payments by detection then id).

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::dsl::sql;
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::event::EventType;
use stablepay_domain::export::model::FinishedFile;
use stablepay_domain::export::ports::{ExportStore, RecordCursor, RecordPage, Records};
use stablepay_domain::export::schema::ExportRecord;
use stablepay_domain::export::{Export, ExportFilters, ExportListFilter, ExportSpec, ExportStatus, ExportType};
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::{ExportId, MerchantId, PaymentLinkId, ReconciliationRunId, WebhookEndpointId};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::model::InvoiceKind;
use stablepay_domain::invoice::payment::PaymentStatus;
use stablepay_domain::merchant::Token;
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::payment_link::model::{AmountType, Usage};
use stablepay_domain::reconciliation::RunOutcome;
use stablepay_domain::webhook::model::DeliveryStatus;
use stablepay_domain::{Error, Resource, Scope};

use crate::error::{TxError, db};
use crate::follower::UnattributedRow;
use crate::idempotency::mark_committed;
use crate::invoices::rows::{InvoiceRow, PaymentRow};
use crate::payment_links::{LinkRow, with_reservations};
use crate::pool::PgStore;
use crate::reconciliation_runs::ItemRow;
use crate::rows::{after_cursor, corrupt, mode, page_of};
use crate::schema::{
    export_chunks as c, exports as x, invoices, payment_link_invoices as pli, payment_links as pl, payments,
    reconciliation_items as ri, reconciliation_runs as rr, unattributed_transfers as ut, webhook_deliveries as wd,
};
use crate::webhooks::rows::DeliveryRow;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = x, check_for_backend(diesel::pg::Pg))]
pub(crate) struct ExportRow {
    id: String,
    merchant_id: String,
    mode: String,
    export_type: String,
    schema_name: String,
    range_from: DateTime<Utc>,
    range_to: DateTime<Utc>,
    filter_collection_state: Option<String>,
    filter_payment_link: Option<String>,
    filter_payment_status: Option<String>,
    filter_run: Option<String>,
    filter_outcome: Option<String>,
    status: String,
    row_count: Option<i64>,
    byte_size: Option<i64>,
    failure_message: Option<String>,
    created_at: DateTime<Utc>,
    ready_at: Option<DateTime<Utc>>,
    expires_at: Option<DateTime<Utc>>,
    filter_amount_type: Option<String>,
    filter_usage: Option<String>,
    filter_token: Option<String>,
    filter_endpoint: Option<String>,
    filter_event_type: Option<String>,
    filter_delivery_status: Option<String>,
}

fn count(v: Option<u64>) -> Option<i64> {
    v.map(|v| i64::try_from(v).unwrap_or(i64::MAX))
}

/// A stored filter read back with `parse`; a value it does not read is a corrupt row.
fn stored<T>(value: Option<String>, parse: fn(&str) -> Option<T>) -> Result<Option<T>, Error> {
    value.map(|v| parse(&v).ok_or_else(|| corrupt("export filter"))).transpose()
}

impl ExportRow {
    pub(crate) fn of(e: &Export) -> Self {
        let f = &e.spec.filters;
        Self {
            id: e.id.to_string(),
            merchant_id: e.scope.merchant_id.to_string(),
            mode: e.scope.mode.as_str().to_owned(),
            export_type: e.spec.export_type.as_str().to_owned(),
            schema_name: e.spec.schema.clone(),
            range_from: e.spec.from,
            range_to: e.spec.to,
            filter_collection_state: f.collection_state.map(|s| s.as_str().to_owned()),
            filter_payment_link: f.payment_link.as_ref().map(ToString::to_string),
            filter_payment_status: f.payment_status.map(|s| s.as_str().to_owned()),
            filter_run: f.run.as_ref().map(ToString::to_string),
            filter_outcome: f.outcome.map(|o| o.as_str().to_owned()),
            status: e.status.as_str().to_owned(),
            row_count: count(e.row_count),
            byte_size: count(e.byte_size),
            failure_message: e.failure_message.clone(),
            created_at: e.created_at,
            ready_at: e.ready_at,
            expires_at: e.expires_at,
            filter_amount_type: f.amount_type.map(|t| t.as_str().to_owned()),
            filter_usage: f.usage.map(|u| u.as_str().to_owned()),
            filter_token: f.token.map(|t| t.symbol().to_owned()),
            filter_endpoint: f.endpoint.as_ref().map(ToString::to_string),
            filter_event_type: f.event_type.map(|t| t.as_str().to_owned()),
            filter_delivery_status: f.delivery_status.map(|s| s.as_str().to_owned()),
        }
    }

    fn into_domain(self) -> Result<Export, Error> {
        let filters = ExportFilters {
            collection_state: stored(self.filter_collection_state, CollectionState::parse)?,
            payment_link: self.filter_payment_link.map(PaymentLinkId::from_trusted),
            payment_status: stored(self.filter_payment_status, PaymentStatus::parse)?,
            run: self.filter_run.map(ReconciliationRunId::from_trusted),
            outcome: stored(self.filter_outcome, RunOutcome::parse)?,
            amount_type: stored(self.filter_amount_type, AmountType::parse)?,
            usage: stored(self.filter_usage, Usage::parse)?,
            token: stored(self.filter_token, Token::parse)?,
            endpoint: self.filter_endpoint.map(WebhookEndpointId::from_trusted),
            event_type: stored(self.filter_event_type, EventType::parse)?,
            delivery_status: stored(self.filter_delivery_status, DeliveryStatus::parse)?,
        };
        let unsigned = |v: Option<i64>| v.map(|v| u64::try_from(v).map_err(|_| corrupt("count"))).transpose();
        Ok(Export {
            id: ExportId::from_trusted(self.id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            spec: ExportSpec {
                export_type: ExportType::parse(&self.export_type).ok_or_else(|| corrupt("export type"))?,
                schema: self.schema_name,
                from: self.range_from,
                to: self.range_to,
                filters,
            },
            status: ExportStatus::parse(&self.status).ok_or_else(|| corrupt("export status"))?,
            row_count: unsigned(self.row_count)?,
            byte_size: unsigned(self.byte_size)?,
            failure_message: self.failure_message,
            created_at: self.created_at,
            ready_at: self.ready_at,
            expires_at: self.expires_at,
        })
    }
}

/// Claims the oldest waiting export (queued, or running past its lease), and clears the chunks
/// a dead worker left.
const CLAIM: &str = "WITH next AS ( \
    SELECT id FROM exports WHERE status = 'queued' OR (status = 'running' AND lease_until < now()) \
    ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
    UPDATE exports e SET status = 'running', lease_until = now() + make_interval(secs => $1) \
    FROM next WHERE e.id = next.id RETURNING e.id";

/// Expires ready exports past `expires_at` on their scope's clock (the test clock's offset in
/// test mode), their chunks deleted with them.
const EXPIRE: &str = "WITH due AS ( \
    SELECT e.id FROM exports e JOIN scope_clocks t ON t.merchant_id = e.merchant_id AND t.mode = e.mode \
    WHERE e.status = 'ready' AND ($1::text IS NULL OR e.id = $1) \
      AND ($1::text IS NOT NULL OR e.expires_at <= t.now) \
    ORDER BY e.expires_at LIMIT $2 FOR UPDATE OF e SKIP LOCKED), \
    gone AS (DELETE FROM export_chunks WHERE export_id IN (SELECT id FROM due)) \
    UPDATE exports SET status = 'expired' WHERE id IN (SELECT id FROM due) RETURNING id";

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = Text)]
    id: String,
}

impl PgStore {
    async fn export_row(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        let mut conn = self.conn().await?;
        let row: Option<ExportRow> = x::table
            .find(id.as_str())
            .filter(x::merchant_id.eq(scope.merchant_id.as_str()))
            .select(ExportRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::Export))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.into_domain()
    }
}

impl PgStore {
    async fn expire(&self, only: Option<&ExportId>, limit: u32) -> Result<usize, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<IdRow> = diesel::sql_query(EXPIRE)
            .bind::<Nullable<Text>, _>(only.map(ExportId::as_str))
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .load(&mut conn)
            .await
            .map_err(db)?;
        Ok(rows.len())
    }
}

#[async_trait]
impl ExportStore for PgStore {
    async fn insert_export(&self, export: &Export, claim: Option<IdempotencyClaim>) -> Result<(), Error> {
        let row = ExportRow::of(export);
        let mut conn = self.conn().await?;
        let committed = Committed { export: Some(export.id.to_string()), ..Committed::default() };
        conn.transaction::<_, TxError, _>(async |conn| {
            diesel::insert_into(x::table).values(&row).execute(conn).await?;
            match &claim {
                Some(claim) => mark_committed(conn, claim, &committed).await,
                None => Ok(()),
            }
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn get_export(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        self.export_row(scope, id).await
    }

    async fn list_exports(
        &self,
        scope: &Scope,
        filter: &ExportListFilter,
        page: &PageRequest,
    ) -> Result<Page<Export>, Error> {
        let mut conn = self.conn().await?;
        let mut query = x::table
            .filter(x::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(x::mode.eq(scope.mode.as_str()))
            .select(ExportRow::as_select())
            .order(x::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(status) = filter.status {
            query = query.filter(x::status.eq(status.as_str()));
        }
        if let Some(t) = filter.export_type {
            query = query.filter(x::export_type.eq(t.as_str()));
        }
        after_cursor!(&mut conn, query, page, x::seq, |cursor| [
            x::id.eq(cursor),
            x::merchant_id.eq(scope.merchant_id.as_str()),
            x::mode.eq(scope.mode.as_str())
        ]);
        let rows: Vec<ExportRow> = query.load(&mut conn).await.map_err(db)?;
        page_of(rows, page, ExportRow::into_domain)
    }

    async fn cancel_export(&self, scope: &Scope, id: &ExportId) -> Result<Export, Error> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| {
            let n = diesel::update(
                x::table
                    .find(id.as_str())
                    .filter(x::merchant_id.eq(scope.merchant_id.as_str()))
                    .filter(x::mode.eq(scope.mode.as_str()))
                    .filter(x::status.eq_any(["queued", "running"])),
            )
            .set((x::status.eq("cancelled"), x::lease_until.eq(None::<DateTime<Utc>>)))
            .execute(conn)
            .await?;
            if n > 0 {
                diesel::delete(c::table.filter(c::export_id.eq(id.as_str()))).execute(conn).await?;
            }
            Ok(())
        })
        .await
        .map_err(TxError::into_domain)?;
        self.export_row(scope, id).await
    }

    async fn claim_export(&self, lease_seconds: u32) -> Result<Option<Export>, Error> {
        let mut conn = self.conn().await?;
        let claimed = conn
            .transaction::<_, TxError, _>(async |conn| {
                let rows: Vec<IdRow> = diesel::sql_query(CLAIM)
                    .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
                    .load(conn)
                    .await?;
                let Some(IdRow { id }) = rows.into_iter().next() else { return Ok(None) };
                diesel::delete(c::table.filter(c::export_id.eq(&id))).execute(conn).await?;
                let row: ExportRow = x::table.find(&id).select(ExportRow::as_select()).first(conn).await?;
                Ok(Some(row))
            })
            .await
            .map_err(TxError::into_domain)?;
        claimed.map(ExportRow::into_domain).transpose()
    }

    async fn append_chunk(&self, id: &ExportId, seq: u32, bytes: &[u8], lease_seconds: u32) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let seq = i32::try_from(seq).map_err(|_| Error::Internal("too many chunks".into()))?;
        conn.transaction::<_, TxError, _>(async |conn| {
            let leased: Vec<IdRow> = diesel::sql_query(
                "UPDATE exports SET lease_until = now() + make_interval(secs => $2) \
                 WHERE id = $1 AND status = 'running' RETURNING id",
            )
            .bind::<Text, _>(id.as_str())
            .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
            .load(conn)
            .await?;
            if leased.is_empty() {
                return Ok(false);
            }
            diesel::insert_into(c::table)
                .values((c::export_id.eq(id.as_str()), c::seq.eq(seq), c::bytes.eq(bytes)))
                .on_conflict((c::export_id, c::seq))
                .do_update()
                .set(c::bytes.eq(bytes))
                .execute(conn)
                .await?;
            Ok(true)
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn finish_export(&self, id: &ExportId, file: &FinishedFile) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let n = diesel::update(x::table.find(id.as_str()).filter(x::status.eq("running")))
            .set((
                x::status.eq("ready"),
                x::row_count.eq(count(Some(file.rows))),
                x::byte_size.eq(count(Some(file.bytes))),
                x::ready_at.eq(file.ready_at),
                x::expires_at.eq(file.expires_at),
                x::lease_until.eq(None::<DateTime<Utc>>),
            ))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(n > 0)
    }

    async fn fail_export(&self, id: &ExportId, message: &str) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| {
            diesel::update(x::table.find(id.as_str()).filter(x::status.eq("running")))
                .set((x::status.eq("failed"), x::failure_message.eq(message), x::lease_until.eq(None::<DateTime<Utc>>)))
                .execute(conn)
                .await?;
            diesel::delete(c::table.filter(c::export_id.eq(id.as_str()))).execute(conn).await?;
            Ok(())
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn read_chunk(&self, scope: &Scope, id: &ExportId, seq: u32) -> Result<Option<Vec<u8>>, Error> {
        let mut conn = self.conn().await?;
        let seq = i32::try_from(seq).map_err(|_| Error::Internal("chunk".into()))?;
        c::table
            .inner_join(x::table)
            .filter(c::export_id.eq(id.as_str()))
            .filter(c::seq.eq(seq))
            .filter(x::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(x::mode.eq(scope.mode.as_str()))
            .filter(x::status.eq("ready"))
            .select(c::bytes)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)
    }

    async fn expire_exports(&self, limit: u32) -> Result<usize, Error> {
        self.expire(None, limit).await
    }

    async fn expire_export(&self, scope: &Scope, id: &ExportId) -> Result<(), Error> {
        // Only an export of this scope.
        self.export_row(scope, id).await?;
        self.expire(Some(id), 1).await.map(|_| ())
    }

    async fn records(&self, scope: &Scope, spec: &ExportSpec, page: RecordPage) -> Result<Records, Error> {
        let (after, limit) = (page.after, i64::from(page.limit));
        match spec.export_type {
            ExportType::Invoices => self.invoice_records(invoice_query(scope, spec), (after, limit)).await,
            ExportType::InvoiceLines => {
                let itemized = invoice_query(scope, spec).filter(invoices::kind.eq(InvoiceKind::Itemized.as_str()));
                self.invoice_records(itemized, (after, limit)).await
            }
            ExportType::RefundReferences => self.invoice_records(refund_query(scope, spec), (after, limit)).await,
            ExportType::Payments => self.payment_records(scope, spec, (after, limit)).await,
            ExportType::UnattributedTransfers => self.unattributed_records(scope, spec, (after, limit)).await,
            ExportType::PaymentLinks => self.link_records(scope, spec, (after, limit)).await,
            ExportType::WebhookDeliveries => self.delivery_records(scope, spec, (after, limit)).await,
            ExportType::Reconciliation => self.run_item_records(scope, spec, (after, limit)).await,
        }
    }

    async fn count_records(&self, scope: &Scope, spec: &ExportSpec) -> Result<u64, Error> {
        let mut conn = self.conn().await?;
        let n: i64 = match spec.export_type {
            ExportType::Invoices => invoice_query(scope, spec).count().get_result(&mut conn).await.map_err(db)?,
            ExportType::InvoiceLines => invoice_query(scope, spec)
                .select(sql::<BigInt>("COALESCE(SUM(jsonb_array_length(fields->'lines')), 0)::bigint"))
                .get_result(&mut conn)
                .await
                .map_err(db)?,
            ExportType::RefundReferences => refund_query(scope, spec)
                .select(
                    sql::<BigInt>(REFUNDS_IN_RANGE)
                        .bind::<Timestamptz, _>(spec.from)
                        .sql(" AND (r->>'created_at')::timestamptz < ")
                        .bind::<Timestamptz, _>(spec.to)
                        .sql(")"),
                )
                .load::<i64>(&mut conn)
                .await
                .map_err(db)?
                .into_iter()
                .sum(),
            ExportType::Payments => payment_query(scope, spec).count().get_result(&mut conn).await.map_err(db)?,
            ExportType::UnattributedTransfers => {
                unattributed_query(scope, spec).count().get_result(&mut conn).await.map_err(db)?
            }
            ExportType::PaymentLinks => link_query(scope, spec).count().get_result(&mut conn).await.map_err(db)?,
            ExportType::WebhookDeliveries => {
                delivery_query(scope, spec).count().get_result(&mut conn).await.map_err(db)?
            }
            ExportType::Reconciliation => {
                drop(conn);
                let run = self.scoped_run(scope, spec).await?;
                let mut conn = self.conn().await?;
                run_item_query(&run, spec).count().get_result(&mut conn).await.map_err(db)?
            }
        };
        u64::try_from(n).map_err(|_| corrupt("count"))
    }
}

/// How many refunds of an invoice were recorded in the range (the rows it gives): the start of
/// the expression, its bounds bound after it.
const REFUNDS_IN_RANGE: &str = "(SELECT count(*) FROM jsonb_array_elements(refunds) r \
    WHERE (r->>'created_at')::timestamptz >= ";

/// Loads up to `limit` rows of the boxed `query` (as `(Row, seq)`) in the order of its
/// insertion-sequence column `seq`, after the cursor `after` (a sequence number).
macro_rules! page_by_seq {
    ($conn:expr, $query:expr, $seq:expr, $row:ty, ($after:expr, $limit:expr)) => {{
        let mut query = $query.order($seq.asc()).limit($limit);
        if let Some(after) = $after {
            query = query.filter($seq.gt(seq_cursor(&after)?));
        }
        let rows: Vec<($row, i64)> = query.select((<$row>::as_select(), $seq)).load($conn).await.map_err(db)?;
        rows
    }};
}

/// Where a page starts (the cursor of the previous one's last row) and how many rows it holds.
type Seek = (Option<RecordCursor>, i64);

impl PgStore {
    /// A page of invoices of `query` after the insertion sequence `after`.
    async fn invoice_records(
        &self,
        query: invoices::BoxedQuery<'_, Pg>,
        (after, limit): Seek,
    ) -> Result<Records, Error> {
        let mut conn = self.conn().await?;
        let rows = page_by_seq!(&mut conn, query, invoices::seq, InvoiceRow, (after, limit));
        seq_page(rows, |row| row.into_domain().map(|i| ExportRecord::Invoice(Box::new(i))))
    }

    async fn payment_records(&self, scope: &Scope, spec: &ExportSpec, (after, limit): Seek) -> Result<Records, Error> {
        let mut conn = self.conn().await?;
        let mut query =
            payment_query(scope, spec).order((payments::detected_at.asc(), payments::id.asc())).limit(limit);
        if let Some(after) = after {
            let (at, id) = after.split_once('|').ok_or_else(|| Error::Internal("export cursor".into()))?;
            let at = DateTime::parse_from_rfc3339(at).map_err(|_| Error::Internal("export cursor".into()))?;
            let at = at.with_timezone(&Utc);
            query = query.filter(
                payments::detected_at.gt(at).or(payments::detected_at.eq(at).and(payments::id.gt(id.to_owned()))),
            );
        }
        let rows: Vec<(PaymentRow, String)> =
            query.select((PaymentRow::as_select(), invoices::currency)).load(&mut conn).await.map_err(db)?;
        let last = rows
            .last()
            .map(|(p, _)| format!("{}|{}", p.detected_at.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true), p.id));
        let records = rows
            .into_iter()
            .map(|(row, currency)| {
                let token = Token::parse(&currency).ok_or_else(|| corrupt("currency"))?;
                row.into_domain().map(|p| ExportRecord::Payment(Box::new(p), token))
            })
            .collect::<Result<_, _>>()?;
        Ok((records, last))
    }

    async fn unattributed_records(
        &self,
        scope: &Scope,
        spec: &ExportSpec,
        (after, limit): Seek,
    ) -> Result<Records, Error> {
        let mut conn = self.conn().await?;
        let rows = page_by_seq!(&mut conn, unattributed_query(scope, spec), ut::seq, UnattributedRow, (after, limit));
        seq_page(rows, |row| row.into_domain().map(|u| ExportRecord::Unattributed(Box::new(u))))
    }

    async fn link_records(&self, scope: &Scope, spec: &ExportSpec, (after, limit): Seek) -> Result<Records, Error> {
        let mut conn = self.conn().await?;
        let rows = page_by_seq!(&mut conn, link_query(scope, spec), pl::seq, LinkRow, (after, limit));
        let last = rows.last().map(|(_, seq)| seq.to_string());
        let links = with_reservations(&mut conn, rows.into_iter().map(|(row, _)| row).collect()).await?;
        Ok((links.into_iter().map(|l| ExportRecord::PaymentLink(Box::new(l))).collect(), last))
    }

    async fn delivery_records(&self, scope: &Scope, spec: &ExportSpec, (after, limit): Seek) -> Result<Records, Error> {
        let mut conn = self.conn().await?;
        let rows = page_by_seq!(&mut conn, delivery_query(scope, spec), wd::seq, DeliveryRow, (after, limit));
        seq_page(rows, |row| row.into_domain(None).map(|d| ExportRecord::Delivery(Box::new(d))))
    }

    /// The run a reconciliation export names, when it is `scope`'s.
    async fn scoped_run(&self, scope: &Scope, spec: &ExportSpec) -> Result<String, Error> {
        let run = spec.filters.run.as_ref().ok_or(Error::NotFound(Resource::ReconciliationRun))?;
        let mut conn = self.conn().await?;
        let found: Option<String> = rr::table
            .find(run.as_str())
            .filter(rr::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(rr::mode.eq(scope.mode.as_str()))
            .select(rr::id)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        found.ok_or(Error::NotFound(Resource::ReconciliationRun))
    }

    async fn run_item_records(&self, scope: &Scope, spec: &ExportSpec, (after, limit): Seek) -> Result<Records, Error> {
        let run = self.scoped_run(scope, spec).await?;
        let mut conn = self.conn().await?;
        let mut query = run_item_query(&run, spec).order(ri::line.asc()).limit(limit);
        if let Some(after) = after {
            query = query.filter(ri::line.gt(seq_cursor(&after)?));
        }
        let rows: Vec<ItemRow> = query.select(ItemRow::as_select()).load(&mut conn).await.map_err(db)?;
        let last = rows.last().map(|r| r.line.to_string());
        let records = rows
            .into_iter()
            .map(|row| row.into_domain().map(|i| ExportRecord::RunItem(Box::new(i))))
            .collect::<Result<_, _>>()?;
        Ok((records, last))
    }
}

/// A page of `(row, seq)` as export records, with the cursor of its last row.
fn seq_page<R>(rows: Vec<(R, i64)>, record: impl Fn(R) -> Result<ExportRecord, Error>) -> Result<Records, Error> {
    let last = rows.last().map(|(_, seq)| seq.to_string());
    let records = rows.into_iter().map(|(row, _)| record(row)).collect::<Result<_, _>>()?;
    Ok((records, last))
}

fn seq_cursor(after: &str) -> Result<i64, Error> {
    after.parse().map_err(|_| Error::Internal("export cursor".into()))
}

/// The invoices of `scope` holding a refund recorded in `spec`'s range.
fn refund_query<'a>(scope: &'a Scope, spec: &'a ExportSpec) -> invoices::BoxedQuery<'a, diesel::pg::Pg> {
    invoices::table
        .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(invoices::mode.eq(scope.mode.as_str()))
        .filter(
            sql::<Bool>(
                "EXISTS (SELECT 1 FROM jsonb_array_elements(refunds) r \
                WHERE (r->>'created_at')::timestamptz >= ",
            )
            .bind::<Timestamptz, _>(spec.from)
            .sql(" AND (r->>'created_at')::timestamptz < ")
            .bind::<Timestamptz, _>(spec.to)
            .sql(")"),
        )
        .into_boxed()
}

/// The rows of `$source` (table module `$t`) in `scope` whose `$at` column is in `spec`'s
/// range, boxed for the filters to come.
macro_rules! in_range {
    ($source:expr, $t:ident, $at:ident, ($scope:expr, $spec:expr)) => {
        $source
            .filter($t::merchant_id.eq($scope.merchant_id.as_str()))
            .filter($t::mode.eq($scope.mode.as_str()))
            .filter($t::$at.ge($spec.from))
            .filter($t::$at.lt($spec.to))
            .into_boxed()
    };
}

/// Narrows the boxed `$query` to rows whose `$column` equals `$value`, when there is one.
macro_rules! equal_if {
    ($query:ident, $column:expr, $value:expr) => {
        if let Some(value) = $value {
            $query = $query.filter($column.eq(value));
        }
    };
}

/// The payment links of `scope` created in `spec`'s range, with its filters.
fn link_query<'a>(scope: &'a Scope, spec: &'a ExportSpec) -> pl::BoxedQuery<'a, diesel::pg::Pg> {
    let mut query = in_range!(pl::table, pl, created_at, (scope, spec));
    let f = &spec.filters;
    equal_if!(query, pl::amount_type, f.amount_type.map(|t| t.as_str()));
    equal_if!(query, pl::usage_type, f.usage.map(|u| u.as_str()));
    equal_if!(query, pl::currency, f.token.map(|t| t.symbol()));
    query
}

/// The webhook deliveries of `scope` created in `spec`'s range, with its filters.
fn delivery_query<'a>(scope: &'a Scope, spec: &'a ExportSpec) -> wd::BoxedQuery<'a, diesel::pg::Pg> {
    let mut query = in_range!(wd::table, wd, created_at, (scope, spec));
    let f = &spec.filters;
    equal_if!(query, wd::endpoint_id, f.endpoint.as_ref().map(|endpoint| endpoint.as_str()));
    equal_if!(query, wd::event_type, f.event_type.map(|t| t.as_str()));
    equal_if!(query, wd::status, f.delivery_status.map(|status| status.as_str()));
    query
}

/// The unattributed transfers of `scope` detected in `spec`'s range.
fn unattributed_query<'a>(scope: &'a Scope, spec: &'a ExportSpec) -> ut::BoxedQuery<'a, diesel::pg::Pg> {
    in_range!(ut::table, ut, detected_at, (scope, spec))
}

/// The items of run `run` whose block time is in `spec`'s range (and those without one: a
/// credited payment the chain did not show), with the outcome filter.
fn run_item_query<'a>(run: &'a str, spec: &'a ExportSpec) -> ri::BoxedQuery<'a, diesel::pg::Pg> {
    let mut query = ri::table
        .filter(ri::run_id.eq(run))
        .filter(ri::block_time.is_null().or(ri::block_time.ge(spec.from).and(ri::block_time.lt(spec.to))))
        .into_boxed();
    equal_if!(query, ri::outcome, spec.filters.outcome.map(|outcome| outcome.as_str()));
    query
}

/// The invoices `spec` covers in `scope`: created in its range, with its filters.
fn invoice_query<'a>(scope: &'a Scope, spec: &'a ExportSpec) -> invoices::BoxedQuery<'a, diesel::pg::Pg> {
    let mut query = in_range!(invoices::table, invoices, created_at, (scope, spec));
    equal_if!(query, invoices::collection_state, spec.filters.collection_state.map(|state| state.as_str()));
    if let Some(link) = &spec.filters.payment_link {
        query = query
            .filter(invoices::id.eq_any(pli::table.filter(pli::link_id.eq(link.as_str())).select(pli::invoice_id)));
    }
    query
}

type PaymentJoin = diesel::dsl::InnerJoin<payments::table, invoices::table>;

/// The payments `spec` covers in `scope`: detected in its range, with its filters.
fn payment_query<'a>(
    scope: &'a Scope,
    spec: &'a ExportSpec,
) -> diesel::dsl::IntoBoxed<'a, PaymentJoin, diesel::pg::Pg> {
    let mut query = in_range!(payments::table.inner_join(invoices::table), payments, detected_at, (scope, spec));
    equal_if!(query, payments::status, spec.filters.payment_status.map(|status| status.as_str()));
    query
}
