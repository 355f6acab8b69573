//! Reconciliation's reads: a period's figures per token, and its discrepancies, each one
//! statement over the scope's rows. Which collection states are collectible and which payment
//! statuses are credited is the domain's rule, passed in as lists.

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Integer, Nullable, Numeric, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use stablepay_domain::chain::verify::max_transfer_amount;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::payment::PaymentStatus;
use stablepay_domain::merchant::Token;
use stablepay_domain::money::Decimal6;
use stablepay_domain::reconciliation::ports::ReconciliationStore;
use stablepay_domain::reconciliation::{Discrepancy, DiscrepancyKind, DiscrepancyQuery, TokenSummary};
use stablepay_domain::{Error, Scope};

use crate::error::db;
use crate::pool::PgStore;
use crate::rows::corrupt;

/// Per token: invoices issued in the period, credited payments confirmed in it, the excess of
/// its overpaid payments, refunds recorded in it, what collectible invoices issued before its end
/// still ask (and what of that is overdue then), and unattributed transfers detected in it and
/// still open (within the range of what can be credited, `$7`; beyond it counted apart).
const SUMMARY: &str = "\
WITH inv AS ( \
  SELECT currency, \
    count(*) FILTER (WHERE issued_at >= $3 AND issued_at < $4) AS issued, \
    coalesce(sum(total) FILTER (WHERE issued_at >= $3 AND issued_at < $4), 0) AS invoiced, \
    coalesce(sum(greatest(total - customer_amount_paid, 0)) FILTER (WHERE collection_state = ANY($5) AND issued_at < $4), 0) AS outstanding, \
    coalesce(sum(greatest(total - customer_amount_paid, 0)) FILTER (WHERE collection_state = ANY($5) AND issued_at < $4 AND due_at < $4), 0) AS overdue, \
    count(*) FILTER (WHERE collection_state = ANY($5) AND issued_at < $4 AND due_at < $4) AS overdue_count \
  FROM invoices WHERE merchant_id = $1 AND mode = $2 GROUP BY currency), \
pay AS ( \
  SELECT i.currency, count(*) AS credited, coalesce(sum(p.customer_amount_credited), 0) AS collected, \
    coalesce(sum(greatest(p.amount_received - p.amount_expected, 0)) FILTER (WHERE p.status = 'overpaid'), 0) AS excess \
  FROM payments p JOIN invoices i ON i.id = p.invoice_id \
  WHERE p.merchant_id = $1 AND p.mode = $2 AND p.status = ANY($6) AND p.confirmed_at >= $3 AND p.confirmed_at < $4 \
  GROUP BY i.currency), \
ref AS ( \
  SELECT i.currency, count(*) AS refunds, coalesce(sum((r->>'amount')::numeric), 0) AS refunded \
  FROM invoices i, jsonb_array_elements(i.refunds) r \
  WHERE i.merchant_id = $1 AND i.mode = $2 AND (r->>'created_at')::timestamptz >= $3 AND (r->>'created_at')::timestamptz < $4 \
  GROUP BY i.currency), \
una AS ( \
  SELECT currency, count(*) FILTER (WHERE amount <= $7) AS unattributed, \
    coalesce(sum(amount) FILTER (WHERE amount <= $7), 0) AS unattributed_total, \
    count(*) FILTER (WHERE amount > $7) AS out_of_range \
  FROM unattributed_transfers WHERE merchant_id = $1 AND mode = $2 AND detected_at >= $3 AND detected_at < $4 \
    AND status = 'open' \
  GROUP BY currency), \
tokens AS (SELECT currency FROM inv UNION SELECT currency FROM pay UNION SELECT currency FROM ref UNION SELECT currency FROM una) \
SELECT t.currency, \
  coalesce(inv.issued, 0) AS issued, coalesce(inv.invoiced, 0) AS invoiced, \
  coalesce(pay.credited, 0) AS credited, coalesce(pay.collected, 0) AS collected, coalesce(pay.excess, 0) AS excess, \
  coalesce(ref.refunds, 0) AS refunds, coalesce(ref.refunded, 0) AS refunded, \
  coalesce(inv.outstanding, 0) AS outstanding, coalesce(inv.overdue, 0) AS overdue, coalesce(inv.overdue_count, 0) AS overdue_count, \
  coalesce(una.unattributed, 0) AS unattributed, coalesce(una.unattributed_total, 0) AS unattributed_total, \
  coalesce(una.out_of_range, 0) AS out_of_range \
FROM tokens t LEFT JOIN inv USING (currency) LEFT JOIN pay USING (currency) LEFT JOIN ref USING (currency) LEFT JOIN una USING (currency)";

/// The period's discrepancies, oldest first.
const DISCREPANCIES: &str = "\
SELECT * FROM ( \
  SELECT 'unattributed_transfer' AS kind, u.id, NULL::text AS invoice_id, u.currency, u.amount, u.detected_at AS at, \
    'a transfer of ' || u.amount || ' from ' || u.from_address || ' in transaction ' || u.transaction_hash || ' (' || u.reason || ')' AS detail \
  FROM unattributed_transfers u WHERE u.merchant_id = $1 AND u.mode = $2 AND u.detected_at >= $3 AND u.detected_at < $4 \
    AND u.status = 'open' \
  UNION ALL \
  SELECT CASE p.status WHEN 'overpaid' THEN 'overpaid_payment' ELSE 'underpaid_payment' END, p.id, p.invoice_id, i.currency, \
    abs(p.amount_received - p.amount_expected), p.confirmed_at, \
    'received ' || p.amount_received || ' where ' || p.amount_expected || ' was due' \
  FROM payments p JOIN invoices i ON i.id = p.invoice_id \
  WHERE p.merchant_id = $1 AND p.mode = $2 AND p.status IN ('overpaid', 'underpaid') AND p.confirmed_at >= $3 AND p.confirmed_at < $4 \
  UNION ALL \
  SELECT 'unverified_payment', p.id, p.invoice_id, i.currency, p.amount_expected, p.detected_at, \
    'still ' || p.status || ' since ' || to_char(p.detected_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') || coalesce(': ' || p.diagnostic, '') \
  FROM payments p JOIN invoices i ON i.id = p.invoice_id \
  WHERE p.merchant_id = $1 AND p.mode = $2 AND p.status = ANY($6) AND p.detected_at >= $3 AND p.detected_at < $4 AND p.detected_at < $5 \
) d ORDER BY at, id LIMIT $7";

#[derive(QueryableByName)]
struct SummaryRow {
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = BigInt)]
    issued: i64,
    #[diesel(sql_type = Numeric)]
    invoiced: BigDecimal,
    #[diesel(sql_type = BigInt)]
    credited: i64,
    #[diesel(sql_type = Numeric)]
    collected: BigDecimal,
    #[diesel(sql_type = Numeric)]
    excess: BigDecimal,
    #[diesel(sql_type = BigInt)]
    refunds: i64,
    #[diesel(sql_type = Numeric)]
    refunded: BigDecimal,
    #[diesel(sql_type = Numeric)]
    outstanding: BigDecimal,
    #[diesel(sql_type = Numeric)]
    overdue: BigDecimal,
    #[diesel(sql_type = BigInt)]
    overdue_count: i64,
    #[diesel(sql_type = BigInt)]
    unattributed: i64,
    #[diesel(sql_type = Numeric)]
    unattributed_total: BigDecimal,
    #[diesel(sql_type = BigInt)]
    out_of_range: i64,
}

#[derive(QueryableByName)]
struct DiscrepancyRow {
    #[diesel(sql_type = Text)]
    kind: String,
    #[diesel(sql_type = Text)]
    id: String,
    #[diesel(sql_type = Nullable<Text>)]
    invoice_id: Option<String>,
    #[diesel(sql_type = Text)]
    currency: String,
    #[diesel(sql_type = Numeric)]
    amount: BigDecimal,
    #[diesel(sql_type = Timestamptz)]
    at: DateTime<Utc>,
    #[diesel(sql_type = Text)]
    detail: String,
}

fn amount(v: BigDecimal) -> Result<Decimal6, Error> {
    Decimal6::from_exact(v).ok_or_else(|| corrupt("sum"))
}

fn count(v: i64) -> Result<u64, Error> {
    u64::try_from(v).map_err(|_| corrupt("count"))
}

fn token(text: &str) -> Result<Token, Error> {
    Token::parse(text).ok_or_else(|| corrupt("currency"))
}

impl SummaryRow {
    fn into_domain(self) -> Result<TokenSummary, Error> {
        Ok(TokenSummary {
            token: token(&self.currency)?,
            invoices_issued: count(self.issued)?,
            invoiced_total: amount(self.invoiced)?,
            payments_credited: count(self.credited)?,
            collected: amount(self.collected)?,
            overpaid_excess: amount(self.excess)?,
            refunds_count: count(self.refunds)?,
            refunds_referenced: amount(self.refunded)?,
            outstanding: amount(self.outstanding)?,
            overdue: amount(self.overdue)?,
            overdue_count: count(self.overdue_count)?,
            unattributed_count: count(self.unattributed)?,
            unattributed_total: amount(self.unattributed_total)?,
            unattributed_out_of_range: count(self.out_of_range)?,
        })
    }
}

impl DiscrepancyRow {
    fn into_domain(self) -> Result<Discrepancy, Error> {
        let kind = match self.kind.as_str() {
            "unattributed_transfer" => DiscrepancyKind::UnattributedTransfer,
            "overpaid_payment" => DiscrepancyKind::OverpaidPayment,
            "underpaid_payment" => DiscrepancyKind::UnderpaidPayment,
            "unverified_payment" => DiscrepancyKind::UnverifiedPayment,
            _ => return Err(corrupt("discrepancy kind")),
        };
        Ok(Discrepancy {
            kind,
            id: self.id,
            invoice_id: self.invoice_id,
            token: token(&self.currency)?,
            amount: amount(self.amount)?,
            at: self.at,
            detail: self.detail,
        })
    }
}

fn names<T: Copy>(all: &[T], keep: impl Fn(T) -> bool, name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().copied().filter(|v| keep(*v)).map(name).collect()
}

#[async_trait]
impl ReconciliationStore for PgStore {
    async fn token_summaries(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<TokenSummary>, Error> {
        let mut conn = self.conn().await?;
        let collectible = names(&CollectionState::ALL, CollectionState::is_collectible, CollectionState::as_str);
        let credited = names(&PaymentStatus::ALL, PaymentStatus::is_credited, PaymentStatus::as_str);
        let rows: Vec<SummaryRow> = diesel::sql_query(SUMMARY)
            .bind::<Text, _>(scope.merchant_id.as_str())
            .bind::<Text, _>(scope.mode.as_str())
            .bind::<Timestamptz, _>(from)
            .bind::<Timestamptz, _>(to)
            .bind::<Array<Text>, _>(collectible)
            .bind::<Array<Text>, _>(credited)
            .bind::<Numeric, _>(max_transfer_amount().as_bigdecimal().clone())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(SummaryRow::into_domain).collect()
    }

    async fn discrepancies(&self, scope: &Scope, asked: &DiscrepancyQuery) -> Result<Vec<Discrepancy>, Error> {
        let DiscrepancyQuery { from, to, unverified_before, limit } = *asked;
        let mut conn = self.conn().await?;
        let unverified = names(&PaymentStatus::ALL, |s| !s.is_terminal(), PaymentStatus::as_str);
        let rows: Vec<DiscrepancyRow> = diesel::sql_query(DISCREPANCIES)
            .bind::<Text, _>(scope.merchant_id.as_str())
            .bind::<Text, _>(scope.mode.as_str())
            .bind::<Timestamptz, _>(from)
            .bind::<Timestamptz, _>(to)
            .bind::<Timestamptz, _>(unverified_before)
            .bind::<Array<Text>, _>(unverified)
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(DiscrepancyRow::into_domain).collect()
    }
}
