//! One prepared statement that numbers and inserts a new invoice and its first checkout
//! session: a data-modifying CTE, atomic as a single statement, so creating a checkout needs no
//! `BEGIN` and `COMMIT` round trips. The number comes from the scope's sequence in the same
//! statement, and the statement answers it. It has a static query id, so it is prepared once per
//! connection.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment, QueryId};
use diesel::sql_types::{Int4, Int8, Jsonb, Nullable, Numeric, Text, Timestamptz};

use crate::invoices::rows::{InvoiceRow, SessionRow};
use crate::json_bytes::JsonBytes;

pub(crate) struct InsertInvoiceWithSession<'a> {
    pub invoice: &'a InvoiceRow,
    pub session: &'a SessionRow,
}

/// The static identity of the statement's shape (its SQL never varies).
pub(crate) struct InsertInvoiceWithSessionId;

impl diesel::query_builder::Query for InsertInvoiceWithSession<'_> {
    /// The invoice number given.
    type SqlType = Text;
}

impl QueryId for InsertInvoiceWithSession<'_> {
    type QueryId = InsertInvoiceWithSessionId;
    const HAS_STATIC_QUERY_ID: bool = true;
}

/// Pushes binds separated by commas.
struct Binds<'p, 'b> {
    out: AstPass<'p, 'b, Pg>,
    first: bool,
}

impl<'p, 'b> Binds<'p, 'b> {
    fn sep(&mut self) {
        if !self.first {
            self.out.push_sql(", ");
        }
        self.first = false;
    }
    fn text(&mut self, v: &'b String) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Text, _>(v)
    }
    fn opt_text(&mut self, v: &'b Option<String>) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Nullable<Text>, _>(v)
    }
    fn i64(&mut self, v: &'b i64) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Int8, _>(v)
    }
    fn i32(&mut self, v: &'b i32) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Int4, _>(v)
    }
    fn num(&mut self, v: &'b BigDecimal) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Numeric, _>(v)
    }
    fn json(&mut self, v: &'b JsonBytes) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Jsonb, _>(v)
    }
    fn at(&mut self, v: &'b DateTime<Utc>) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Timestamptz, _>(v)
    }
    fn opt_at(&mut self, v: &'b Option<DateTime<Utc>>) -> QueryResult<()> {
        self.sep();
        self.out.push_bind_param::<Nullable<Timestamptz>, _>(v)
    }
    fn raw(&mut self, sql: &str) {
        self.sep();
        self.out.push_sql(sql);
    }
}

impl QueryFragment<Pg> for InsertInvoiceWithSession<'_> {
    fn walk_ast<'b>(&'b self, mut out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let i = self.invoice;
        let s = self.session;
        out.push_sql(
            "WITH inv AS (INSERT INTO invoices (id, merchant_id, mode, kind, number, number_prefix, public_token, \
             collection_state, status, version, currency, breakdown, total, customer_amount_paid, \
             merchant_amount_settled, fee_basis_points, settlement_wallet, due_at, past_due_at, close_reason, \
             payment_count, fields, refunds, activity, issued_at, paid_at, closed_at, created_at, updated_at, \
             lock_version) SELECT ",
        );
        let mut b = Binds { out: out.reborrow(), first: true };
        b.text(&i.id)?;
        b.text(&i.merchant_id)?;
        b.text(&i.mode)?;
        b.text(&i.kind)?;
        b.text(&i.number_prefix)?;
        b.out.push_sql(" || '-' || ");
        b.out.push_sql(crate::invoices::change_statements::NUMBER_DIGITS_SQL);
        b.text(&i.number_prefix)?;
        b.opt_text(&i.public_token)?;
        b.text(&i.collection_state)?;
        b.text(&i.status)?;
        b.i64(&i.version)?;
        b.text(&i.currency)?;
        b.json(&i.breakdown)?;
        b.num(&i.total)?;
        b.num(&i.customer_amount_paid)?;
        b.num(&i.merchant_amount_settled)?;
        b.i32(&i.fee_basis_points)?;
        b.text(&i.settlement_wallet)?;
        b.opt_at(&i.due_at)?;
        b.opt_at(&i.past_due_at)?;
        b.opt_text(&i.close_reason)?;
        b.i32(&i.payment_count)?;
        b.json(&i.fields)?;
        b.json(&i.refunds)?;
        b.json(&i.activity)?;
        b.opt_at(&i.issued_at)?;
        b.opt_at(&i.paid_at)?;
        b.opt_at(&i.closed_at)?;
        b.at(&i.created_at)?;
        b.at(&i.updated_at)?;
        b.i64(&i.lock_version)?;
        out.push_sql(" FROM (SELECT ");
        crate::invoices::change_statements::push_next_seq(&mut out, &i.merchant_id, &i.mode)?;
        out.push_sql(
            " AS seq) n RETURNING id, number) INSERT INTO checkout_sessions (id, invoice_id, merchant_id, mode, status, amount_due, \
             currency, settlement_wallet, external_reference, customer_email, success_url, cancel_url, expires_at, \
             created_at, completed_at, chain_id, token_contract, amount_offset) SELECT ",
        );
        let mut b = Binds { out: out.reborrow(), first: true };
        b.text(&s.id)?;
        b.raw("inv.id");
        b.text(&s.merchant_id)?;
        b.text(&s.mode)?;
        b.text(&s.status)?;
        b.num(&s.amount_due)?;
        b.text(&s.currency)?;
        b.text(&s.settlement_wallet)?;
        b.opt_text(&s.external_reference)?;
        b.opt_text(&s.customer_email)?;
        b.opt_text(&s.success_url)?;
        b.opt_text(&s.cancel_url)?;
        b.at(&s.expires_at)?;
        b.at(&s.created_at)?;
        b.opt_at(&s.completed_at)?;
        b.i64(&s.chain_id)?;
        b.text(&s.token_contract)?;
        b.num(&s.amount_offset)?;
        out.push_sql(" FROM inv RETURNING (SELECT number FROM inv)");
        Ok(())
    }
}
