//! Reconciliation runs: their rows, their items (`reconciliation_items`, written with the run's
//! completion in one transaction), and what a run reads from the books: the payments credited
//! in a range of blocks, and what is known of the transfer logs none of them is credited with.

use std::collections::HashMap;

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::chain::verify::max_transfer_amount;
use stablepay_domain::idempotency::{Committed, IdempotencyClaim};
use stablepay_domain::ids::{InvoiceId, MerchantId, PaymentId, ReconciliationRunId, UnattributedTransferId};
use stablepay_domain::invoice::payment::{Payment, TxHash};
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::reconciliation::ports::ReconciliationRunStore;
use stablepay_domain::reconciliation::{
    FinishedRun, ItemFilter, LogKey, LogOwner, ReconciliationRun, RunCoverage, RunItem, RunOutcome, RunStatus,
    RunTotals,
};
use stablepay_domain::{Error, Resource, Scope};

use crate::codec::numeric;
use crate::error::{TxError, db};
use crate::idempotency::mark_committed;
use crate::invoices::rows::PaymentRow;
use crate::pool::PgStore;
use crate::rows::{after_cursor, corrupt, mode, page_of};
use crate::schema::{
    credited_transfer_logs as ctl, payments, reconciliation_items as ri, reconciliation_runs as rr,
    unattributed_transfers as ut,
};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = rr, check_for_backend(diesel::pg::Pg))]
struct RunRow {
    id: String,
    merchant_id: String,
    mode: String,
    range_from: DateTime<Utc>,
    range_to: DateTime<Utc>,
    status: String,
    from_block: Option<i64>,
    to_block: Option<i64>,
    final_block: Option<i64>,
    complete: bool,
    wallets: Vec<String>,
    credited_elsewhere: i64,
    failure_message: Option<String>,
    created_at: DateTime<Utc>,
    completed_at: Option<DateTime<Utc>>,
}

fn signed(v: u64, what: &str) -> Result<i64, Error> {
    i64::try_from(v).map_err(|_| corrupt(what))
}

fn unsigned(v: i64, what: &str) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| corrupt(what))
}

fn block(v: Option<i64>) -> Result<Option<u64>, Error> {
    v.map(|v| unsigned(v, "block")).transpose()
}

impl RunRow {
    fn of(r: &ReconciliationRun) -> Result<Self, Error> {
        let c = &r.coverage;
        let opt = |v: Option<u64>| v.map(|v| signed(v, "block")).transpose();
        Ok(Self {
            id: r.id.to_string(),
            merchant_id: r.scope.merchant_id.to_string(),
            mode: r.scope.mode.as_str().to_owned(),
            range_from: r.from,
            range_to: r.to,
            status: r.status.as_str().to_owned(),
            from_block: opt(c.from_block)?,
            to_block: opt(c.to_block)?,
            final_block: opt(c.final_block)?,
            complete: c.complete,
            wallets: c.wallets.iter().map(ToString::to_string).collect(),
            credited_elsewhere: signed(c.credited_elsewhere, "count")?,
            failure_message: r.failure_message.clone(),
            created_at: r.created_at,
            completed_at: r.completed_at,
        })
    }

    fn into_domain(self, totals: Vec<RunTotals>) -> Result<ReconciliationRun, Error> {
        Ok(ReconciliationRun {
            id: ReconciliationRunId::from_trusted(self.id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            from: self.range_from,
            to: self.range_to,
            status: RunStatus::parse(&self.status).ok_or_else(|| corrupt("run status"))?,
            coverage: RunCoverage {
                from_block: block(self.from_block)?,
                to_block: block(self.to_block)?,
                final_block: block(self.final_block)?,
                complete: self.complete,
                wallets: self.wallets.into_iter().map(WalletAddress::from_trusted).collect(),
                credited_elsewhere: unsigned(self.credited_elsewhere, "count")?,
            },
            totals,
            failure_message: self.failure_message,
            created_at: self.created_at,
            completed_at: self.completed_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = ri, check_for_backend(diesel::pg::Pg))]
pub(crate) struct ItemRow {
    run_id: String,
    pub(crate) line: i64,
    outcome: String,
    currency: String,
    transaction_hash: String,
    log_index: Option<i64>,
    block_number: Option<i64>,
    block_time: Option<DateTime<Utc>>,
    from_address: Option<String>,
    to_address: String,
    amount_onchain: Option<BigDecimal>,
    amount_credited: Option<BigDecimal>,
    payment_id: Option<String>,
    invoice_id: Option<String>,
    unattributed_transfer_id: Option<String>,
    detail: String,
}

impl ItemRow {
    fn of(run: &ReconciliationRunId, i: &RunItem) -> Result<Self, Error> {
        let opt = |v: Option<u64>, what| v.map(|v| signed(v, what)).transpose();
        Ok(Self {
            run_id: run.to_string(),
            line: signed(i.line, "line")?,
            outcome: i.outcome.as_str().to_owned(),
            currency: i.token.symbol().to_owned(),
            transaction_hash: i.transaction_hash.as_str().to_owned(),
            log_index: opt(i.log_index, "log index")?,
            block_number: opt(i.block_number, "block")?,
            block_time: i.block_time,
            from_address: i.from_address.as_ref().map(ToString::to_string),
            to_address: i.to_address.to_string(),
            amount_onchain: i.amount_onchain.as_ref().map(|a| a.as_bigdecimal().clone()),
            amount_credited: i.amount_credited.as_ref().map(|a| a.as_bigdecimal().clone()),
            payment_id: i.payment_id.as_ref().map(ToString::to_string),
            invoice_id: i.invoice_id.as_ref().map(ToString::to_string),
            unattributed_transfer_id: i.unattributed_transfer_id.as_ref().map(ToString::to_string),
            detail: i.detail.clone(),
        })
    }

    pub(crate) fn into_domain(self) -> Result<RunItem, Error> {
        let amount = |v: Option<BigDecimal>| v.map(numeric).transpose();
        Ok(RunItem {
            line: unsigned(self.line, "line")?,
            outcome: RunOutcome::parse(&self.outcome).ok_or_else(|| corrupt("outcome"))?,
            token: Token::parse(&self.currency).ok_or_else(|| corrupt("currency"))?,
            transaction_hash: TxHash::from_trusted(self.transaction_hash),
            log_index: block(self.log_index)?,
            block_number: block(self.block_number)?,
            block_time: self.block_time,
            from_address: self.from_address.map(WalletAddress::from_trusted),
            to_address: WalletAddress::from_trusted(self.to_address),
            amount_onchain: amount(self.amount_onchain)?,
            amount_credited: amount(self.amount_credited)?,
            payment_id: self.payment_id.map(PaymentId::from_trusted),
            invoice_id: self.invoice_id.map(InvoiceId::from_trusted),
            unattributed_transfer_id: self.unattributed_transfer_id.map(UnattributedTransferId::from_trusted),
            detail: self.detail,
        })
    }
}

/// Claims the oldest waiting run (queued, or running past its lease).
const CLAIM: &str = "WITH next AS ( \
    SELECT id FROM reconciliation_runs WHERE status = 'queued' OR (status = 'running' AND lease_until < now()) \
    ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED) \
    UPDATE reconciliation_runs r SET status = 'running', lease_until = now() + make_interval(secs => $1) \
    FROM next WHERE r.id = next.id RETURNING r.id";

#[derive(QueryableByName)]
struct IdRow {
    #[diesel(sql_type = Text)]
    id: String,
}

/// A run, a currency, an outcome: its count and the sums of its amounts.
#[derive(diesel::QueryableByName)]
struct TotalsRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    run_id: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    currency: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    outcome: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Numeric>)]
    onchain: Option<BigDecimal>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Numeric>)]
    credited: Option<BigDecimal>,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    beyond: i64,
}

const CREDITED: [&str; 3] = ["confirmed", "underpaid", "overpaid"];

impl PgStore {
    /// Per token, the counts and sums of the items of `runs`; an amount beyond what a
    /// stablecoin holds is counted apart, never summed.
    async fn totals_of(&self, runs: &[String]) -> Result<HashMap<String, Vec<RunTotals>>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<TotalsRow> = diesel::sql_query(
            "SELECT run_id, currency, outcome, count(*) AS n, \
               sum(amount_onchain) FILTER (WHERE amount_onchain <= $2) AS onchain, \
               sum(amount_credited) AS credited, \
               count(*) FILTER (WHERE amount_onchain > $2) AS beyond \
             FROM reconciliation_items WHERE run_id = ANY($1) GROUP BY run_id, currency, outcome",
        )
        .bind::<diesel::sql_types::Array<diesel::sql_types::Text>, _>(runs)
        .bind::<diesel::sql_types::Numeric, _>(max_transfer_amount().as_bigdecimal().clone())
        .load(&mut conn)
        .await
        .map_err(db)?;
        let mut out: HashMap<String, Vec<RunTotals>> = HashMap::new();
        for row in rows {
            let token = Token::parse(&row.currency).ok_or_else(|| corrupt("currency"))?;
            let totals = out.entry(row.run_id).or_insert_with(|| RunTotals::of(&[]));
            let Some(t) = totals.iter_mut().find(|t| t.token == token) else { continue };
            let n = unsigned(row.n, "count")?;
            match RunOutcome::parse(&row.outcome).ok_or_else(|| corrupt("outcome"))? {
                RunOutcome::Matched => t.matched = n,
                RunOutcome::OnchainNotCredited => t.onchain_not_credited = n,
                RunOutcome::CreditedNotOnchain => t.credited_not_onchain = n,
            }
            t.out_of_range += unsigned(row.beyond, "count")?;
            if let Some(v) = row.onchain {
                t.onchain_total = t.onchain_total.add(&numeric(v)?);
            }
            if let Some(v) = row.credited {
                t.credited_total = t.credited_total.add(&numeric(v)?);
            }
        }
        Ok(out)
    }

    async fn runs_with_totals(&self, rows: Vec<RunRow>) -> Result<Vec<ReconciliationRun>, Error> {
        let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
        let mut totals = self.totals_of(&ids).await?;
        rows.into_iter()
            .map(|r| {
                let t = totals.remove(&r.id).unwrap_or_else(|| RunTotals::of(&[]));
                r.into_domain(t)
            })
            .collect()
    }

    async fn run_row(&self, scope: &Scope, id: &ReconciliationRunId) -> Result<RunRow, Error> {
        let mut conn = self.conn().await?;
        let row: Option<RunRow> = rr::table
            .find(id.as_str())
            .filter(rr::merchant_id.eq(scope.merchant_id.as_str()))
            .select(RunRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::ReconciliationRun))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        Ok(row)
    }

    /// Logs of `logs` credited to payments of another scope.
    async fn credited_elsewhere(
        &self,
        scope: &Scope,
        chain_id: i64,
        hashes: &[String],
    ) -> Result<Vec<(String, i64, String, String)>, Error> {
        let mut conn = self.conn().await?;
        ctl::table
            .inner_join(payments::table.on(payments::id.eq(ctl::payment_id)))
            .filter(ctl::chain_id.eq(chain_id))
            .filter(ctl::transaction_hash.eq_any(hashes))
            .filter(payments::merchant_id.ne(scope.merchant_id.as_str()).or(payments::mode.ne(scope.mode.as_str())))
            .select((ctl::transaction_hash, ctl::log_index, payments::merchant_id, payments::mode))
            .load(&mut conn)
            .await
            .map_err(db)
    }
}

#[async_trait]
impl ReconciliationRunStore for PgStore {
    async fn insert_run(&self, run: &ReconciliationRun, claim: Option<IdempotencyClaim>) -> Result<(), Error> {
        let row = RunRow::of(run)?;
        let mut conn = self.conn().await?;
        let committed = Committed { reconciliation_run: Some(run.id.to_string()), ..Committed::default() };
        conn.transaction::<_, TxError, _>(async |conn| {
            diesel::insert_into(rr::table).values(&row).execute(conn).await?;
            match &claim {
                Some(claim) => mark_committed(conn, claim, &committed).await,
                None => Ok(()),
            }
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn insert_daily_runs(&self, runs: &[ReconciliationRun]) -> Result<usize, Error> {
        let rows = runs.iter().map(RunRow::of).collect::<Result<Vec<_>, _>>()?;
        let mut conn = self.conn().await?;
        let mut inserted = 0;
        for row in &rows {
            // One statement per run: the partial unique index of daily runs keeps the first.
            inserted += diesel::sql_query(
                "INSERT INTO reconciliation_runs (id, merchant_id, mode, range_from, range_to, status, created_at, daily) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, true) \
                 ON CONFLICT (merchant_id, mode, range_from) WHERE daily DO NOTHING",
            )
            .bind::<diesel::sql_types::Text, _>(&row.id)
            .bind::<diesel::sql_types::Text, _>(&row.merchant_id)
            .bind::<diesel::sql_types::Text, _>(&row.mode)
            .bind::<diesel::sql_types::Timestamptz, _>(row.range_from)
            .bind::<diesel::sql_types::Timestamptz, _>(row.range_to)
            .bind::<diesel::sql_types::Text, _>(&row.status)
            .bind::<diesel::sql_types::Timestamptz, _>(row.created_at)
            .execute(&mut conn)
            .await
            .map_err(db)?;
        }
        Ok(inserted)
    }

    async fn daily_runs_queued(&self, from: DateTime<Utc>) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let queued = rr::table.filter(rr::daily.eq(true)).filter(rr::range_from.eq(from));
        diesel::select(diesel::dsl::exists(queued)).get_result(&mut conn).await.map_err(db)
    }

    async fn get_run(&self, scope: &Scope, id: &ReconciliationRunId) -> Result<ReconciliationRun, Error> {
        let row = self.run_row(scope, id).await?;
        self.runs_with_totals(vec![row]).await?.pop().ok_or_else(|| Error::Internal("run".into()))
    }

    async fn list_runs(
        &self,
        scope: &Scope,
        status: Option<RunStatus>,
        page: &PageRequest,
    ) -> Result<Page<ReconciliationRun>, Error> {
        let mut conn = self.conn().await?;
        let mut query = rr::table
            .filter(rr::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(rr::mode.eq(scope.mode.as_str()))
            .select(RunRow::as_select())
            .order(rr::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(status) = status {
            query = query.filter(rr::status.eq(status.as_str()));
        }
        after_cursor!(&mut conn, query, page, rr::seq, |cursor| [
            rr::id.eq(cursor),
            rr::merchant_id.eq(scope.merchant_id.as_str()),
            rr::mode.eq(scope.mode.as_str())
        ]);
        let rows: Vec<RunRow> = query.load(&mut conn).await.map_err(db)?;
        let page = page_of(rows, page, Ok)?;
        Ok(Page { items: self.runs_with_totals(page.items).await?, has_more: page.has_more })
    }

    async fn run_items(&self, scope: &Scope, items: &ItemFilter, page: &PageRequest) -> Result<Page<RunItem>, Error> {
        let (id, outcome) = (&items.run, items.outcome);
        self.run_row(scope, id).await?;
        let mut conn = self.conn().await?;
        let mut query = ri::table
            .filter(ri::run_id.eq(id.as_str()))
            .select(ItemRow::as_select())
            .order(ri::line.asc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(outcome) = outcome {
            query = query.filter(ri::outcome.eq(outcome.as_str()));
        }
        if let Some(cursor) = &page.starting_after {
            let line: i64 = cursor.parse().map_err(|_| Error::InvalidCursor)?;
            query = query.filter(ri::line.gt(line));
        }
        let rows: Vec<ItemRow> = query.load(&mut conn).await.map_err(db)?;
        page_of(rows, page, ItemRow::into_domain)
    }

    async fn claim_run(&self, lease_seconds: u32) -> Result<Option<ReconciliationRun>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<IdRow> = diesel::sql_query(CLAIM)
            .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
            .load(&mut conn)
            .await
            .map_err(db)?;
        let Some(IdRow { id }) = rows.into_iter().next() else { return Ok(None) };
        let row: RunRow = rr::table.find(&id).select(RunRow::as_select()).first(&mut conn).await.map_err(db)?;
        row.into_domain(Vec::new()).map(Some)
    }

    async fn extend_run(&self, id: &ReconciliationRunId, lease_seconds: u32) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let n = diesel::sql_query(
            "UPDATE reconciliation_runs SET lease_until = now() + make_interval(secs => $2) \
             WHERE id = $1 AND status = 'running'",
        )
        .bind::<Text, _>(id.as_str())
        .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
        .execute(&mut conn)
        .await
        .map_err(db)?;
        Ok(n > 0)
    }

    async fn finish_run(&self, id: &ReconciliationRunId, found: &FinishedRun) -> Result<bool, Error> {
        let FinishedRun { coverage, items, completed_at } = found;
        let rows = items.iter().map(|i| ItemRow::of(id, i)).collect::<Result<Vec<_>, _>>()?;
        let opt = |v: Option<u64>| v.map(|v| signed(v, "block")).transpose();
        let (from_block, to_block, final_block) =
            (opt(coverage.from_block)?, opt(coverage.to_block)?, opt(coverage.final_block)?);
        let wallets: Vec<String> = coverage.wallets.iter().map(ToString::to_string).collect();
        let elsewhere = signed(coverage.credited_elsewhere, "count")?;
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| {
            let n = diesel::update(rr::table.find(id.as_str()).filter(rr::status.eq("running")))
                .set((
                    rr::status.eq("completed"),
                    rr::from_block.eq(from_block),
                    rr::to_block.eq(to_block),
                    rr::final_block.eq(final_block),
                    rr::complete.eq(coverage.complete),
                    rr::wallets.eq(&wallets),
                    rr::credited_elsewhere.eq(elsewhere),
                    rr::completed_at.eq(Some(*completed_at)),
                    rr::lease_until.eq(None::<DateTime<Utc>>),
                ))
                .execute(conn)
                .await?;
            if n == 0 {
                return Ok(false);
            }
            diesel::delete(ri::table.filter(ri::run_id.eq(id.as_str()))).execute(conn).await?;
            // PostgreSQL takes at most 65,535 parameters in one statement: 16 per item.
            for chunk in rows.chunks(2000) {
                diesel::insert_into(ri::table).values(chunk).execute(conn).await?;
            }
            Ok(true)
        })
        .await
        .map_err(TxError::into_domain)
    }

    async fn fail_run(&self, id: &ReconciliationRunId, message: &str, failed_at: DateTime<Utc>) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        diesel::update(rr::table.find(id.as_str()).filter(rr::status.eq("running")))
            .set((
                rr::status.eq("failed"),
                rr::failure_message.eq(message),
                rr::completed_at.eq(Some(failed_at)),
                rr::lease_until.eq(None::<DateTime<Utc>>),
            ))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn credited_payments(&self, scope: &Scope, chain_id: u64, blocks: (u64, u64)) -> Result<Vec<Payment>, Error> {
        let (from_block, to_block) = blocks;
        let mut conn = self.conn().await?;
        let rows: Vec<PaymentRow> = payments::table
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(payments::mode.eq(scope.mode.as_str()))
            .filter(payments::status.eq_any(CREDITED))
            .filter(payments::chain_id.eq(signed(chain_id, "chain id")?))
            .filter(payments::block_number.between(signed(from_block, "block")?, signed(to_block, "block")?))
            .order((payments::block_number.asc(), payments::id.asc()))
            .select(PaymentRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(PaymentRow::into_domain).collect()
    }

    async fn log_owners(
        &self,
        scope: &Scope,
        chain_id: u64,
        logs: &[LogKey],
    ) -> Result<HashMap<LogKey, LogOwner>, Error> {
        let chain = signed(chain_id, "chain id")?;
        let mut hashes: Vec<String> = logs.iter().map(|(tx, _)| tx.as_str().to_owned()).collect();
        hashes.sort();
        hashes.dedup();
        let mut out = HashMap::new();
        let wanted = |tx: &str, index: i64| {
            let index = u64::try_from(index).ok()?;
            logs.iter().find(|(t, i)| t.as_str() == tx && *i == index).cloned()
        };
        // Weakest first: each later answer replaces an earlier one.
        let mut conn = self.conn().await?;
        let named: Vec<PaymentRow> = payments::table
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(payments::mode.eq(scope.mode.as_str()))
            .filter(payments::chain_id.eq(chain))
            .filter(payments::transaction_hash.eq_any(&hashes))
            .order(payments::detected_at.asc())
            .select(PaymentRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        for row in named {
            let p = row.into_domain()?;
            for key in logs.iter().filter(|(tx, i)| *tx == p.transaction_hash && p.claimed_log.is_none_or(|c| c == *i))
            {
                out.insert(key.clone(), uncredited(&p));
            }
        }
        let unattributed: Vec<(String, String, i64)> = ut::table
            .filter(ut::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(ut::mode.eq(scope.mode.as_str()))
            .filter(ut::chain_id.eq(chain))
            .filter(ut::transaction_hash.eq_any(&hashes))
            .select((ut::id, ut::transaction_hash, ut::log_index))
            .load(&mut conn)
            .await
            .map_err(db)?;
        drop(conn);
        for (id, tx, index) in unattributed {
            if let Some(key) = wanted(&tx, index) {
                out.insert(key, LogOwner::Unattributed(UnattributedTransferId::from_trusted(id)));
            }
        }
        for (tx, index, _, _) in self.credited_elsewhere(scope, chain, &hashes).await? {
            if let Some(key) = wanted(&tx, index) {
                out.insert(key, LogOwner::Elsewhere);
            }
        }
        Ok(out)
    }
}

fn uncredited(p: &Payment) -> LogOwner {
    LogOwner::Uncredited {
        payment_id: p.id.clone(),
        invoice_id: p.invoice_id.clone(),
        status: p.status,
        failure_reason: p.failure_reason,
    }
}

#[cfg(test)]
mod tests {
    use stablepay_domain::invoice::payment::PaymentStatus;

    use super::*;

    #[test]
    fn credited_statuses_are_the_domains() {
        for s in PaymentStatus::ALL {
            assert_eq!(CREDITED.contains(&s.as_str()), s.is_credited(), "{s:?}");
        }
    }
}
