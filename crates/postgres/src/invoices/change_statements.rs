//! The statements a saved change sends, each with SQL that never varies and a static query id,
//! so every connection prepares each once and later saves only bind and execute (diesel does
//! not cache UPDATEs, upserts or inserts with nullable columns: each would be parsed again on
//! every save, a round trip of its own inside the transaction).

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment, QueryId};
use diesel::serialize::ToSql;
use diesel::sql_types::{Array, BigInt, HasSqlType, Int4, Int8, Jsonb, Nullable, Numeric, Text, Timestamptz};

use crate::events::NewEventRow;
use crate::invoices::rows::{InvoiceRow, PaymentRow, SessionRow};

/// Writes `col = $n, ...` (a SET list) or `$n, ...` (a VALUES list).
struct List<'p, 'b> {
    out: AstPass<'p, 'b, Pg>,
    first: bool,
}

impl<'p, 'b> List<'p, 'b> {
    fn new(out: AstPass<'p, 'b, Pg>) -> Self {
        Self { out, first: true }
    }

    fn item<ST, U>(&mut self, column: Option<&str>, value: &'b U) -> QueryResult<()>
    where
        Pg: HasSqlType<ST>,
        U: ToSql<ST, Pg> + ?Sized,
    {
        if !self.first {
            self.out.push_sql(", ");
        }
        self.first = false;
        if let Some(column) = column {
            self.out.push_sql(column);
            self.out.push_sql(" = ");
        }
        self.out.push_bind_param::<ST, U>(value)
    }

    /// A value of a VALUES list.
    fn v<ST, U>(&mut self, value: &'b U) -> QueryResult<()>
    where
        Pg: HasSqlType<ST>,
        U: ToSql<ST, Pg> + ?Sized,
    {
        self.item::<ST, U>(None, value)
    }

    /// `column = value` of a SET list.
    fn set<ST, U>(&mut self, column: &str, value: &'b U) -> QueryResult<()>
    where
        Pg: HasSqlType<ST>,
        U: ToSql<ST, Pg> + ?Sized,
    {
        self.item::<ST, U>(Some(column), value)
    }
}

macro_rules! static_statement {
    ($name:ident, $id:ident) => {
        /// The static identity of the statement's shape (its SQL never varies).
        pub(crate) struct $id;

        impl QueryId for $name<'_> {
            type QueryId = $id;
            const HAS_STATIC_QUERY_ID: bool = true;
        }
    };
}

/// Inserts a new invoice row.
pub(crate) struct InsertInvoice<'a>(pub &'a InvoiceRow);
static_statement!(InsertInvoice, InsertInvoiceId);

impl QueryFragment<Pg> for InsertInvoice<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let i = self.0;
        out.push_sql(
            "INSERT INTO invoices (id, merchant_id, mode, kind, number, number_prefix, public_token, \
             collection_state, status, version, currency, breakdown, total, customer_amount_paid, \
             merchant_amount_settled, fee_basis_points, settlement_wallet, due_at, past_due_at, close_reason, \
             payment_count, fields, refunds, activity, issued_at, paid_at, closed_at, created_at, updated_at, \
             lock_version) VALUES (",
        );
        let mut v = List::new(out.reborrow());
        v.v::<Text, _>(&i.id)?;
        v.v::<Text, _>(&i.merchant_id)?;
        v.v::<Text, _>(&i.mode)?;
        v.v::<Text, _>(&i.kind)?;
        v.v::<Nullable<Text>, _>(&i.number)?;
        v.v::<Text, _>(&i.number_prefix)?;
        v.v::<Nullable<Text>, _>(&i.public_token)?;
        v.v::<Text, _>(&i.collection_state)?;
        v.v::<Text, _>(&i.status)?;
        v.v::<Int8, _>(&i.version)?;
        v.v::<Text, _>(&i.currency)?;
        v.v::<Jsonb, _>(&i.breakdown)?;
        v.v::<Numeric, _>(&i.total)?;
        v.v::<Numeric, _>(&i.customer_amount_paid)?;
        v.v::<Numeric, _>(&i.merchant_amount_settled)?;
        v.v::<Int4, _>(&i.fee_basis_points)?;
        v.v::<Text, _>(&i.settlement_wallet)?;
        v.v::<Nullable<Timestamptz>, _>(&i.due_at)?;
        v.v::<Nullable<Timestamptz>, _>(&i.past_due_at)?;
        v.v::<Nullable<Text>, _>(&i.close_reason)?;
        v.v::<Int4, _>(&i.payment_count)?;
        v.v::<Jsonb, _>(&i.fields)?;
        v.v::<Jsonb, _>(&i.refunds)?;
        v.v::<Jsonb, _>(&i.activity)?;
        v.v::<Nullable<Timestamptz>, _>(&i.issued_at)?;
        v.v::<Nullable<Timestamptz>, _>(&i.paid_at)?;
        v.v::<Nullable<Timestamptz>, _>(&i.closed_at)?;
        v.v::<Timestamptz, _>(&i.created_at)?;
        v.v::<Timestamptz, _>(&i.updated_at)?;
        v.v::<Int8, _>(&i.lock_version)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Updates an invoice row if it still has the lock version its change was decided on (0 rows
/// otherwise), and ends its due-work lease.
pub(crate) struct UpdateInvoice<'a> {
    pub row: &'a InvoiceRow,
    pub expected_lock_version: i64,
}
static_statement!(UpdateInvoice, UpdateInvoiceId);

impl QueryFragment<Pg> for UpdateInvoice<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let i = self.row;
        out.push_sql("UPDATE invoices SET ");
        let mut s = List::new(out.reborrow());
        s.set::<Text, _>("kind", &i.kind)?;
        s.set::<Nullable<Text>, _>("number", &i.number)?;
        s.set::<Text, _>("number_prefix", &i.number_prefix)?;
        s.set::<Nullable<Text>, _>("public_token", &i.public_token)?;
        s.set::<Text, _>("collection_state", &i.collection_state)?;
        s.set::<Text, _>("status", &i.status)?;
        s.set::<Int8, _>("version", &i.version)?;
        s.set::<Text, _>("currency", &i.currency)?;
        s.set::<Jsonb, _>("breakdown", &i.breakdown)?;
        s.set::<Numeric, _>("total", &i.total)?;
        s.set::<Numeric, _>("customer_amount_paid", &i.customer_amount_paid)?;
        s.set::<Numeric, _>("merchant_amount_settled", &i.merchant_amount_settled)?;
        s.set::<Int4, _>("fee_basis_points", &i.fee_basis_points)?;
        s.set::<Text, _>("settlement_wallet", &i.settlement_wallet)?;
        s.set::<Nullable<Timestamptz>, _>("due_at", &i.due_at)?;
        s.set::<Nullable<Timestamptz>, _>("past_due_at", &i.past_due_at)?;
        s.set::<Nullable<Text>, _>("close_reason", &i.close_reason)?;
        s.set::<Int4, _>("payment_count", &i.payment_count)?;
        s.set::<Jsonb, _>("fields", &i.fields)?;
        s.set::<Jsonb, _>("refunds", &i.refunds)?;
        s.set::<Jsonb, _>("activity", &i.activity)?;
        s.set::<Nullable<Timestamptz>, _>("issued_at", &i.issued_at)?;
        s.set::<Nullable<Timestamptz>, _>("paid_at", &i.paid_at)?;
        s.set::<Nullable<Timestamptz>, _>("closed_at", &i.closed_at)?;
        s.set::<Timestamptz, _>("updated_at", &i.updated_at)?;
        s.set::<Int8, _>("lock_version", &i.lock_version)?;
        // The row is found by its primary key alone; the scope is checked on it with a test no
        // index can serve. With `merchant_id = $ AND mode = $`, a plan made while the table's
        // statistics were young (a new database, or a new merchant's first burst) scanned every
        // invoice of the merchant through a (merchant_id, mode, ...) index for each update:
        // 376 creditings/s for one merchant against 1,337/s once analyzed (docs/benchmarks.md).
        out.push_sql(", lease_until = NULL WHERE id = ");
        out.push_bind_param::<Text, _>(&i.id)?;
        out.push_sql(" AND lock_version = ");
        out.push_bind_param::<Int8, _>(&self.expected_lock_version)?;
        out.push_sql(" AND (merchant_id, mode) IS NOT DISTINCT FROM (");
        out.push_bind_param::<Text, _>(&i.merchant_id)?;
        out.push_sql(", ");
        out.push_bind_param::<Text, _>(&i.mode)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Inserts a checkout session, or updates what can change of it (status, completion).
pub(crate) struct UpsertSession<'a>(pub &'a SessionRow);
static_statement!(UpsertSession, UpsertSessionId);

impl QueryFragment<Pg> for UpsertSession<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let s = self.0;
        out.push_sql(
            "INSERT INTO checkout_sessions (id, invoice_id, merchant_id, mode, status, amount_due, currency, \
             settlement_wallet, external_reference, customer_email, success_url, cancel_url, expires_at, created_at, \
             completed_at, chain_id, token_contract, amount_offset) VALUES (",
        );
        let mut v = List::new(out.reborrow());
        v.v::<Text, _>(&s.id)?;
        v.v::<Text, _>(&s.invoice_id)?;
        v.v::<Text, _>(&s.merchant_id)?;
        v.v::<Text, _>(&s.mode)?;
        v.v::<Text, _>(&s.status)?;
        v.v::<Numeric, _>(&s.amount_due)?;
        v.v::<Text, _>(&s.currency)?;
        v.v::<Text, _>(&s.settlement_wallet)?;
        v.v::<Nullable<Text>, _>(&s.external_reference)?;
        v.v::<Nullable<Text>, _>(&s.customer_email)?;
        v.v::<Nullable<Text>, _>(&s.success_url)?;
        v.v::<Nullable<Text>, _>(&s.cancel_url)?;
        v.v::<Timestamptz, _>(&s.expires_at)?;
        v.v::<Timestamptz, _>(&s.created_at)?;
        v.v::<Nullable<Timestamptz>, _>(&s.completed_at)?;
        v.v::<Int8, _>(&s.chain_id)?;
        v.v::<Text, _>(&s.token_contract)?;
        v.v::<Numeric, _>(&s.amount_offset)?;
        out.push_sql(") ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, completed_at = EXCLUDED.completed_at");
        Ok(())
    }
}

/// Inserts a payment, or updates what verification can change of it (its identity, session
/// and hash never change).
pub(crate) struct UpsertPayment<'a>(pub &'a PaymentRow);
static_statement!(UpsertPayment, UpsertPaymentId);

impl QueryFragment<Pg> for UpsertPayment<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let p = self.0;
        out.push_sql(
            "INSERT INTO payments (id, invoice_id, checkout_session_id, merchant_id, mode, status, amount_expected, \
             amount_received, customer_amount_credited, merchant_amount_settled, transaction_hash, chain_id, \
             token_contract, settlement_wallet, payer_address, failure_reason, detected_at, confirmed_at, \
             block_number, block_hash, diagnostic, claimed_log, logs, missing_since, evidence, block_time) VALUES (",
        );
        let mut v = List::new(out.reborrow());
        v.v::<Text, _>(&p.id)?;
        v.v::<Text, _>(&p.invoice_id)?;
        v.v::<Text, _>(&p.checkout_session_id)?;
        v.v::<Text, _>(&p.merchant_id)?;
        v.v::<Text, _>(&p.mode)?;
        v.v::<Text, _>(&p.status)?;
        v.v::<Numeric, _>(&p.amount_expected)?;
        v.v::<Numeric, _>(&p.amount_received)?;
        v.v::<Numeric, _>(&p.customer_amount_credited)?;
        v.v::<Numeric, _>(&p.merchant_amount_settled)?;
        v.v::<Text, _>(&p.transaction_hash)?;
        v.v::<Int8, _>(&p.chain_id)?;
        v.v::<Text, _>(&p.token_contract)?;
        v.v::<Text, _>(&p.settlement_wallet)?;
        v.v::<Nullable<Text>, _>(&p.payer_address)?;
        v.v::<Nullable<Text>, _>(&p.failure_reason)?;
        v.v::<Timestamptz, _>(&p.detected_at)?;
        v.v::<Nullable<Timestamptz>, _>(&p.confirmed_at)?;
        v.v::<Nullable<Int8>, _>(&p.block_number)?;
        v.v::<Nullable<Text>, _>(&p.block_hash)?;
        v.v::<Nullable<Text>, _>(&p.diagnostic)?;
        v.v::<Nullable<Int8>, _>(&p.claimed_log)?;
        v.v::<Nullable<Array<Int8>>, _>(&p.logs)?;
        v.v::<Nullable<Timestamptz>, _>(&p.missing_since)?;
        v.v::<Nullable<Text>, _>(&p.evidence)?;
        v.v::<Nullable<Timestamptz>, _>(&p.block_time)?;
        out.push_sql(
            ") ON CONFLICT (id) DO UPDATE SET status = EXCLUDED.status, failure_reason = EXCLUDED.failure_reason, \
             evidence = EXCLUDED.evidence, block_time = EXCLUDED.block_time, \
             logs = EXCLUDED.logs, missing_since = EXCLUDED.missing_since, \
             amount_received = EXCLUDED.amount_received, customer_amount_credited = EXCLUDED.customer_amount_credited, \
             merchant_amount_settled = EXCLUDED.merchant_amount_settled, payer_address = EXCLUDED.payer_address, \
             block_number = EXCLUDED.block_number, block_hash = EXCLUDED.block_hash, \
             diagnostic = EXCLUDED.diagnostic, confirmed_at = EXCLUDED.confirmed_at",
        );
        Ok(())
    }
}

/// Inserts one event (the outbox row of a change).
pub(crate) struct InsertEvent<'a>(pub &'a NewEventRow<'a>);
static_statement!(InsertEvent, InsertEventId);

impl QueryFragment<Pg> for InsertEvent<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let e = self.0;
        out.push_sql("INSERT INTO events (id, merchant_id, mode, type, data, created_at) VALUES (");
        let mut v = List::new(out.reborrow());
        v.v::<Text, _>(e.id)?;
        v.v::<Text, _>(e.merchant_id)?;
        v.v::<Text, _>(e.mode)?;
        v.v::<Text, _>(e.event_type)?;
        v.v::<Jsonb, _>(&e.data)?;
        v.v::<Timestamptz, _>(&e.created_at)?;
        out.push_sql(")");
        Ok(())
    }
}

/// Takes the scope's next invoice number from its sequence (see [`push_next_seq`]).
pub(crate) struct NextNumber<'a> {
    pub merchant_id: &'a str,
    pub mode: &'a str,
}
static_statement!(NextNumber, NextNumberId);

impl Query for NextNumber<'_> {
    type SqlType = BigInt;
}

impl QueryFragment<Pg> for NextNumber<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        out.push_sql("SELECT ");
        push_next_seq(&mut out, self.merchant_id, self.mode)
    }
}

/// `nextval` of the scope's invoice number sequence, `invoice_numbers."<merchant>_<mode>"`,
/// created with the merchant. A sequence never waits for another transaction: numbers are
/// unique and increasing, with gaps only where a numbering transaction rolled back.
pub(crate) fn push_next_seq<'b>(out: &mut AstPass<'_, 'b, Pg>, merchant_id: &'b str, mode: &'b str) -> QueryResult<()> {
    out.push_sql("nextval(format('invoice_numbers.%I', ");
    out.push_bind_param::<Text, _>(merchant_id)?;
    out.push_sql(" || '_' || ");
    out.push_bind_param::<Text, _>(mode)?;
    out.push_sql(")::regclass)");
    Ok(())
}

/// The digits of `Invoice::format_number` in SQL, for the sequence value `n.seq`: zero-padded
/// to six, longer ones whole. A test keeps the two renderings equal.
pub(crate) const NUMBER_DIGITS_SQL: &str =
    "CASE WHEN n.seq < 1000000 THEN lpad(n.seq::text, 6, '0') ELSE n.seq::text END";
