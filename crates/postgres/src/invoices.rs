//! Invoice aggregates: invoices, checkout sessions and payments, saved atomically with their
//! events and (when issuing) the next invoice number.

use std::collections::HashMap;

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::result::{DatabaseErrorKind, Error as DieselError, QueryResult};
use diesel::sql_types::{BigInt, Integer, Nullable, Text};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, try_join_all};
use stablepay_domain::billing::{InvoiceAggregate, InvoiceChange, InvoiceKey, PublicRef};
use stablepay_domain::checkout::{CheckoutSession, CheckoutStatus};
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, MerchantId, PaymentId, PublicToken};
use stablepay_domain::invoice::{CollectionState, Invoice, InvoiceKind, LifecycleStatus};
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::payment::{Payment, PaymentStatus, TxHash};
use stablepay_domain::ports::{InvoiceStore, Page, PageRequest};
use stablepay_domain::url::HttpUrl;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::PgStore;
use crate::codec::{self, numeric};
use crate::error::db;
use crate::json_bytes::JsonBytes;
use crate::schema::{checkout_sessions, events, invoice_counters, invoices, payments, test_clocks};

fn corrupt(what: &str) -> Error {
    Error::Internal(format!("stored record is corrupt: {what}"))
}

fn mode(text: &str) -> Result<Mode, Error> {
    Mode::parse(text).ok_or_else(|| corrupt("mode"))
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = invoices, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub(crate) struct InvoiceRow {
    pub(crate) id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) number: Option<String>,
    pub(crate) number_prefix: String,
    pub(crate) public_token: Option<String>,
    pub(crate) collection_state: String,
    pub(crate) status: String,
    pub(crate) version: i64,
    pub(crate) currency: String,
    pub(crate) breakdown: JsonBytes,
    pub(crate) total: BigDecimal,
    pub(crate) customer_amount_paid: BigDecimal,
    pub(crate) merchant_amount_settled: BigDecimal,
    pub(crate) fee_basis_points: i32,
    pub(crate) settlement_wallet: String,
    pub(crate) due_at: Option<DateTime<Utc>>,
    pub(crate) past_due_at: Option<DateTime<Utc>>,
    pub(crate) close_reason: Option<String>,
    pub(crate) payment_count: i32,
    pub(crate) fields: JsonBytes,
    pub(crate) refunds: JsonBytes,
    pub(crate) activity: JsonBytes,
    pub(crate) issued_at: Option<DateTime<Utc>>,
    pub(crate) paid_at: Option<DateTime<Utc>>,
    pub(crate) closed_at: Option<DateTime<Utc>>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) lock_version: i64,
}

impl InvoiceRow {
    fn from_domain(i: &Invoice, payment_count: usize) -> Result<Self, Error> {
        Ok(Self {
            id: i.id.to_string(),
            merchant_id: i.scope.merchant_id.to_string(),
            mode: i.scope.mode.as_str().to_owned(),
            kind: i.kind.as_str().to_owned(),
            number: i.number.clone(),
            number_prefix: i.number_prefix.clone(),
            public_token: i.public_token.as_ref().map(|t| t.as_str().to_owned()),
            collection_state: i.collection_state.as_str().to_owned(),
            status: i.status.as_str().to_owned(),
            version: i.version,
            currency: i.fields.currency.symbol().to_owned(),
            breakdown: codec::encode_breakdown(&i.totals)?,
            total: i.totals.total.as_bigdecimal().clone(),
            customer_amount_paid: i.customer_amount_paid.as_bigdecimal().clone(),
            merchant_amount_settled: i.merchant_amount_settled.as_bigdecimal().clone(),
            fee_basis_points: i32::try_from(i.fee_basis_points).map_err(|_| corrupt("fee"))?,
            settlement_wallet: i.settlement_wallet.to_string(),
            due_at: i.fields.due_at,
            past_due_at: i.past_due_at,
            close_reason: i.close_reason.clone(),
            payment_count: i32::try_from(payment_count).map_err(|_| corrupt("payment count"))?,
            fields: codec::encode_fields(&i.fields)?,
            refunds: codec::encode_refunds(&i.refunds)?,
            activity: codec::encode_activity(&i.activity)?,
            issued_at: i.issued_at,
            paid_at: i.paid_at,
            closed_at: i.closed_at,
            created_at: i.created_at,
            updated_at: i.updated_at,
            lock_version: i.lock_version,
        })
    }

    fn into_domain(self) -> Result<Invoice, Error> {
        Ok(Invoice {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            kind: InvoiceKind::parse(&self.kind).ok_or_else(|| corrupt("kind"))?,
            collection_state: CollectionState::parse(&self.collection_state).ok_or_else(|| corrupt("state"))?,
            status: LifecycleStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            totals: codec::decode_breakdown(&self.breakdown, numeric(self.total)?)?,
            customer_amount_paid: numeric(self.customer_amount_paid)?,
            merchant_amount_settled: numeric(self.merchant_amount_settled)?,
            fee_basis_points: u32::try_from(self.fee_basis_points).map_err(|_| corrupt("fee"))?,
            fields: codec::decode_fields(&self.fields)?,
            refunds: codec::decode_refunds(&self.refunds)?,
            activity: codec::decode_activity(&self.activity)?,
            id: InvoiceId::from_trusted(self.id),
            number: self.number,
            number_prefix: self.number_prefix,
            public_token: self.public_token.map(PublicToken::from_trusted),
            version: self.version,
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            close_reason: self.close_reason,
            issued_at: self.issued_at,
            paid_at: self.paid_at,
            closed_at: self.closed_at,
            past_due_at: self.past_due_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            lock_version: self.lock_version,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = checkout_sessions, check_for_backend(diesel::pg::Pg))]
pub(crate) struct SessionRow {
    pub(crate) id: String,
    pub(crate) invoice_id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) status: String,
    pub(crate) amount_due: BigDecimal,
    pub(crate) currency: String,
    pub(crate) settlement_wallet: String,
    pub(crate) external_reference: Option<String>,
    pub(crate) customer_email: Option<String>,
    pub(crate) success_url: Option<String>,
    pub(crate) cancel_url: Option<String>,
    pub(crate) expires_at: DateTime<Utc>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
}

impl SessionRow {
    fn from_domain(s: &CheckoutSession) -> Self {
        Self {
            id: s.id.to_string(),
            invoice_id: s.invoice_id.to_string(),
            merchant_id: s.scope.merchant_id.to_string(),
            mode: s.scope.mode.as_str().to_owned(),
            status: s.status.as_str().to_owned(),
            amount_due: s.amount_due.as_bigdecimal().clone(),
            currency: s.currency.symbol().to_owned(),
            settlement_wallet: s.settlement_wallet.to_string(),
            external_reference: s.external_reference.clone(),
            customer_email: s.customer_email.clone(),
            success_url: s.success_url.as_ref().map(|u| u.as_str().to_owned()),
            cancel_url: s.cancel_url.as_ref().map(|u| u.as_str().to_owned()),
            expires_at: s.expires_at,
            created_at: s.created_at,
            completed_at: s.completed_at,
        }
    }

    fn into_domain(self) -> Result<CheckoutSession, Error> {
        let url = |u: Option<String>| u.map(|u| HttpUrl::parse(&u).map_err(|_| corrupt("url"))).transpose();
        Ok(CheckoutSession {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            status: CheckoutStatus::parse(&self.status).ok_or_else(|| corrupt("session status"))?,
            amount_due: numeric(self.amount_due)?,
            currency: Token::parse(&self.currency).ok_or_else(|| corrupt("currency"))?,
            success_url: url(self.success_url)?,
            cancel_url: url(self.cancel_url)?,
            id: CheckoutSessionId::from_trusted(self.id),
            invoice_id: InvoiceId::from_trusted(self.invoice_id),
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            external_reference: self.external_reference,
            customer_email: self.customer_email,
            expires_at: self.expires_at,
            created_at: self.created_at,
            completed_at: self.completed_at,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payments, check_for_backend(diesel::pg::Pg))]
struct PaymentRow {
    id: String,
    invoice_id: String,
    checkout_session_id: String,
    merchant_id: String,
    mode: String,
    status: String,
    amount_expected: BigDecimal,
    amount_received: BigDecimal,
    customer_amount_credited: BigDecimal,
    merchant_amount_settled: BigDecimal,
    transaction_hash: String,
    chain_id: i64,
    token_contract: String,
    settlement_wallet: String,
    payer_address: Option<String>,
    failure_reason: Option<String>,
    detected_at: DateTime<Utc>,
    confirmed_at: Option<DateTime<Utc>>,
}

impl PaymentRow {
    fn from_domain(p: &Payment) -> Result<Self, Error> {
        Ok(Self {
            id: p.id.to_string(),
            invoice_id: p.invoice_id.to_string(),
            checkout_session_id: p.checkout_session_id.to_string(),
            merchant_id: p.scope.merchant_id.to_string(),
            mode: p.scope.mode.as_str().to_owned(),
            status: p.status.as_str().to_owned(),
            amount_expected: p.amount_expected.as_bigdecimal().clone(),
            amount_received: p.amount_received.as_bigdecimal().clone(),
            customer_amount_credited: p.customer_amount_credited.as_bigdecimal().clone(),
            merchant_amount_settled: p.merchant_amount_settled.as_bigdecimal().clone(),
            transaction_hash: p.transaction_hash.as_str().to_owned(),
            chain_id: i64::try_from(p.chain_id).map_err(|_| corrupt("chain id"))?,
            token_contract: p.token_contract.to_string(),
            settlement_wallet: p.settlement_wallet.to_string(),
            payer_address: p.payer_address.clone(),
            failure_reason: p.failure_reason.clone(),
            detected_at: p.detected_at,
            confirmed_at: p.confirmed_at,
        })
    }

    fn into_domain(self) -> Result<Payment, Error> {
        Ok(Payment {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            status: PaymentStatus::parse(&self.status).ok_or_else(|| corrupt("payment status"))?,
            amount_expected: numeric(self.amount_expected)?,
            amount_received: numeric(self.amount_received)?,
            customer_amount_credited: numeric(self.customer_amount_credited)?,
            merchant_amount_settled: numeric(self.merchant_amount_settled)?,
            chain_id: u64::try_from(self.chain_id).map_err(|_| corrupt("chain id"))?,
            id: PaymentId::from_trusted(self.id),
            invoice_id: InvoiceId::from_trusted(self.invoice_id),
            checkout_session_id: CheckoutSessionId::from_trusted(self.checkout_session_id),
            transaction_hash: TxHash::from_trusted(self.transaction_hash),
            token_contract: WalletAddress::from_trusted(self.token_contract),
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            payer_address: self.payer_address,
            failure_reason: self.failure_reason,
            detected_at: self.detected_at,
            confirmed_at: self.confirmed_at,
        })
    }
}

/// Failure inside a transaction: a database error, or a domain outcome that rolls it back.
enum TxError {
    Db(DieselError),
    Domain(Error),
}

impl From<DieselError> for TxError {
    fn from(e: DieselError) -> Self {
        TxError::Db(e)
    }
}

impl TxError {
    fn into_domain(self) -> Error {
        match self {
            TxError::Domain(e) => e,
            // A transaction hash taken by a concurrent payment, or an invoice number raced:
            // the caller reloads and decides again.
            TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::UniqueViolation, _)) => {
                Error::InvoiceStateMismatch
            }
            TxError::Db(DieselError::DatabaseError(DatabaseErrorKind::SerializationFailure, _)) => {
                Error::InvoiceStateMismatch
            }
            TxError::Db(e) => db(e),
        }
    }
}

/// Loads sessions and payments of several invoices.
async fn children(
    conn: &mut AsyncPgConnection,
    ids: &[String],
    with_payments: &[String],
) -> Result<(HashMap<String, Vec<CheckoutSession>>, HashMap<String, Vec<Payment>>), Error> {
    let sessions: Vec<SessionRow> = checkout_sessions::table
        .filter(checkout_sessions::invoice_id.eq_any(ids))
        .select(SessionRow::as_select())
        .order((checkout_sessions::created_at.asc(), checkout_sessions::id.asc()))
        .load(conn)
        .await
        .map_err(db)?;
    let pays: Vec<PaymentRow> = if with_payments.is_empty() {
        Vec::new()
    } else {
        payments::table
            .filter(payments::invoice_id.eq_any(with_payments))
            .select(PaymentRow::as_select())
            .order((payments::detected_at.asc(), payments::id.asc()))
            .load(conn)
            .await
            .map_err(db)?
    };
    let mut s_map: HashMap<String, Vec<CheckoutSession>> = HashMap::new();
    for row in sessions {
        s_map.entry(row.invoice_id.clone()).or_default().push(row.into_domain()?);
    }
    let mut p_map: HashMap<String, Vec<Payment>> = HashMap::new();
    for row in pays {
        p_map.entry(row.invoice_id.clone()).or_default().push(row.into_domain()?);
    }
    Ok((s_map, p_map))
}

async fn assemble(conn: &mut AsyncPgConnection, rows: Vec<InvoiceRow>) -> Result<Vec<InvoiceAggregate>, Error> {
    let ids: Vec<String> = rows.iter().map(|r| r.id.clone()).collect();
    let with_payments: Vec<String> = rows.iter().filter(|r| r.payment_count > 0).map(|r| r.id.clone()).collect();
    let (mut sessions, mut pays) = children(conn, &ids, &with_payments).await?;
    rows.into_iter()
        .map(|row| {
            let id = row.id.clone();
            Ok(InvoiceAggregate {
                invoice: row.into_domain()?,
                sessions: sessions.remove(&id).unwrap_or_default(),
                payments: pays.remove(&id).unwrap_or_default(),
            })
        })
        .collect()
}

/// A found row of this merchant, or NOT_FOUND; MODE_MISMATCH when it is of the other mode.
fn in_scope(row: Option<InvoiceRow>, scope: &Scope, not_found: Resource) -> Result<InvoiceRow, Error> {
    let row = row.ok_or(Error::NotFound(not_found))?;
    if row.mode != scope.mode.as_str() {
        return Err(Error::ModeMismatch);
    }
    Ok(row)
}

/// The invoice with this issued number in this merchant and mode.
async fn find_by_number(conn: &mut AsyncPgConnection, scope: &Scope, number: &str) -> Result<InvoiceRow, Error> {
    let row = invoices::table
        .filter(invoices::number.eq(number))
        .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(invoices::mode.eq(scope.mode.as_str()))
        .select(InvoiceRow::as_select())
        .first(conn)
        .await
        .optional()
        .map_err(db)?;
    in_scope(row, scope, Resource::Invoice)
}

/// The invoice of a checkout session of this merchant.
async fn find_by_session(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    session: &CheckoutSessionId,
) -> Result<InvoiceRow, Error> {
    let invoice_id: Option<String> = checkout_sessions::table
        .filter(checkout_sessions::id.eq(session.as_str()))
        .filter(checkout_sessions::merchant_id.eq(scope.merchant_id.as_str()))
        .select(checkout_sessions::invoice_id)
        .first(conn)
        .await
        .optional()
        .map_err(db)?;
    let row = match invoice_id {
        None => None,
        Some(id) => {
            invoices::table.find(id).select(InvoiceRow::as_select()).first(conn).await.optional().map_err(db)?
        }
    };
    in_scope(row, scope, Resource::CheckoutSession)
}

#[derive(QueryableByName)]
struct DueRow {
    #[diesel(sql_type = Text)]
    merchant_id: String,
    #[diesel(sql_type = Text)]
    mode: String,
    #[diesel(sql_type = Text)]
    id: String,
}

/// Claims invoices with due work. Each scope's clock (real time plus the test offset in test
/// mode) decides what is due; claimed rows get a lease so other workers skip them.
const CLAIM_DUE: &str = r#"
WITH horizon AS (
    SELECT now() + make_interval(secs => COALESCE(max(offset_seconds), 0)) AS latest FROM test_clocks
), candidates AS (
    SELECT s.invoice_id AS id FROM checkout_sessions s, horizon
    WHERE s.status = 'pending' AND s.expires_at <= horizon.latest
    UNION
    SELECT i.id FROM invoices i, horizon
    WHERE i.past_due_at IS NULL AND i.due_at IS NOT NULL
      AND i.collection_state IN ('open', 'partially_paid') AND i.due_at <= horizon.latest
), due AS (
    SELECT i.id FROM invoices i
    JOIN candidates c ON c.id = i.id
    JOIN test_clocks t ON t.merchant_id = i.merchant_id
    -- A scoped run (the test clock helper) ignores leases so it answers only after every due
    -- transition of its scope ran; processing is idempotent and optimistically locked.
    WHERE (i.lease_until IS NULL OR i.lease_until < now() OR $1::text IS NOT NULL)
      AND ($1::text IS NULL OR (i.merchant_id = $1 AND i.mode = $2))
      AND (
        EXISTS (
          SELECT 1 FROM checkout_sessions s
          WHERE s.invoice_id = i.id AND s.status = 'pending'
            AND s.expires_at <= now() + CASE WHEN i.mode = 'test'
                THEN make_interval(secs => t.offset_seconds) ELSE interval '0' END)
        OR (i.past_due_at IS NULL AND i.due_at IS NOT NULL
            AND i.collection_state IN ('open', 'partially_paid')
            AND i.due_at <= now() + CASE WHEN i.mode = 'test'
                THEN make_interval(secs => t.offset_seconds) ELSE interval '0' END)
      )
    ORDER BY i.id
    LIMIT $3
    FOR UPDATE OF i SKIP LOCKED
)
UPDATE invoices SET lease_until = now() + make_interval(secs => $4)
FROM due WHERE invoices.id = due.id
RETURNING invoices.merchant_id, invoices.mode, invoices.id
"#;

/// One invoice by id, with its sessions in the same query (a left join) and its payments only
/// when it has any: one round trip for the common read.
async fn load_by_id(conn: &mut AsyncPgConnection, scope: &Scope, id: &InvoiceId) -> Result<InvoiceAggregate, Error> {
    let rows: Vec<(InvoiceRow, Option<SessionRow>)> = invoices::table
        .left_join(checkout_sessions::table.on(checkout_sessions::invoice_id.eq(invoices::id)))
        .filter(invoices::id.eq(id.as_str()))
        .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
        .select((InvoiceRow::as_select(), Option::<SessionRow>::as_select()))
        .order((checkout_sessions::created_at.asc(), checkout_sessions::id.asc()))
        .load(conn)
        .await
        .map_err(db)?;
    let mut sessions = Vec::with_capacity(rows.len());
    let mut invoice = None;
    for (row, session) in rows {
        if let Some(s) = session {
            sessions.push(s.into_domain()?);
        }
        if invoice.is_none() {
            invoice = Some(row);
        }
    }
    let row = in_scope(invoice, scope, Resource::Invoice)?;
    let payments = if row.payment_count == 0 {
        Vec::new()
    } else {
        let pays: Vec<PaymentRow> = payments::table
            .filter(payments::invoice_id.eq(&row.id))
            .select(PaymentRow::as_select())
            .order((payments::detected_at.asc(), payments::id.asc()))
            .load(conn)
            .await
            .map_err(db)?;
        pays.into_iter().map(PaymentRow::into_domain).collect::<Result<_, _>>()?
    };
    Ok(InvoiceAggregate { invoice: row.into_domain()?, sessions, payments })
}

#[async_trait]
impl InvoiceStore for PgStore {
    async fn load_invoice(&self, scope: &Scope, key: &InvoiceKey) -> Result<InvoiceAggregate, Error> {
        let mut conn = self.conn().await?;
        let row = match key {
            InvoiceKey::Id(id) => return load_by_id(&mut conn, scope, id).await,
            InvoiceKey::Number(number) => find_by_number(&mut conn, scope, number).await?,
            InvoiceKey::Session(session) => find_by_session(&mut conn, scope, session).await?,
        };
        let mut list = assemble(&mut conn, vec![row]).await?;
        list.pop().ok_or_else(|| Error::Internal("invoice vanished".into()))
    }

    async fn load_public(&self, reference: &PublicRef) -> Result<InvoiceAggregate, Error> {
        let mut conn = self.conn().await?;
        let row: Option<InvoiceRow> = match reference {
            PublicRef::Session(id) => {
                let invoice_id: Option<String> = checkout_sessions::table
                    .find(id.as_str())
                    .select(checkout_sessions::invoice_id)
                    .first(&mut conn)
                    .await
                    .optional()
                    .map_err(db)?;
                match invoice_id {
                    None => return Err(Error::NotFound(Resource::CheckoutSession)),
                    Some(id) => invoices::table
                        .find(id)
                        .select(InvoiceRow::as_select())
                        .first(&mut conn)
                        .await
                        .optional()
                        .map_err(db)?,
                }
            }
            PublicRef::Token(token) => invoices::table
                .filter(invoices::public_token.eq(token.as_str()))
                .select(InvoiceRow::as_select())
                .first(&mut conn)
                .await
                .optional()
                .map_err(db)?,
        };
        let row = row.ok_or(Error::NotFound(Resource::Invoice))?;
        let mut list = assemble(&mut conn, vec![row]).await?;
        list.pop().ok_or_else(|| Error::Internal("invoice vanished".into()))
    }

    async fn list_invoices(
        &self,
        scope: &Scope,
        state: Option<CollectionState>,
        page: &PageRequest,
    ) -> Result<Page<InvoiceAggregate>, Error> {
        let mut conn = self.conn().await?;
        let limit = usize::try_from(page.limit).unwrap_or(100);
        let mut query = invoices::table
            .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(invoices::mode.eq(scope.mode.as_str()))
            .select(InvoiceRow::as_select())
            .order(invoices::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(state) = state {
            query = query.filter(invoices::collection_state.eq(state.as_str()));
        }
        if let Some(cursor) = &page.starting_after {
            let seq: Option<i64> = invoices::table
                .filter(invoices::id.eq(cursor))
                .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
                .filter(invoices::mode.eq(scope.mode.as_str()))
                .select(invoices::seq)
                .first(&mut conn)
                .await
                .optional()
                .map_err(db)?;
            let seq = seq.ok_or_else(|| Error::validation("startingAfter", "not an invoice of this list"))?;
            query = query.filter(invoices::seq.lt(seq));
        }
        let mut rows: Vec<InvoiceRow> = query.load(&mut conn).await.map_err(db)?;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        Ok(Page { items: assemble(&mut conn, rows).await?, has_more })
    }

    async fn save_invoice(&self, mut change: InvoiceChange) -> Result<InvoiceAggregate, Error> {
        let mut conn = self.conn().await?;
        let plain_creation = change.expected_lock_version.is_none()
            && change.assign_number.is_none()
            && change.changed_payments.is_empty()
            && change.events.is_empty()
            && change.changed_sessions.len() == 1
            && change.aggregate.sessions.len() == 1;
        if plain_creation {
            // A new invoice and its checkout, nothing else: one atomic statement.
            let _ = change.finalize(None);
            let agg = &mut change.aggregate;
            agg.invoice.lock_version = 1;
            let invoice = InvoiceRow::from_domain(&agg.invoice, 0)?;
            let session = <[CheckoutSession]>::first(&agg.sessions)
                .map(SessionRow::from_domain)
                .ok_or_else(|| corrupt("session"))?;
            crate::create_statement::InsertInvoiceWithSession { invoice: &invoice, session: &session }
                .execute(&mut conn)
                .await
                .map_err(|e| TxError::Db(e).into_domain())?;
            return Ok(change.aggregate);
        }
        let scope = change.aggregate.invoice.scope.clone();
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                let seq = match &change.assign_number {
                    None => None,
                    Some(_) => Some(
                        diesel::insert_into(invoice_counters::table)
                            .values((
                                invoice_counters::merchant_id.eq(scope.merchant_id.as_str()),
                                invoice_counters::mode.eq(scope.mode.as_str()),
                                invoice_counters::last_seq.eq(1i64),
                            ))
                            .on_conflict((invoice_counters::merchant_id, invoice_counters::mode))
                            .do_update()
                            .set(invoice_counters::last_seq.eq(invoice_counters::last_seq + 1))
                            .returning(invoice_counters::last_seq)
                            .get_result::<i64>(conn)
                            .await?,
                    ),
                };
                let events = change.finalize(seq);
                let agg = &mut change.aggregate;
                agg.invoice.lock_version = change.expected_lock_version.map_or(1, |v| v + 1);
                let invoice_row = InvoiceRow::from_domain(&agg.invoice, agg.payments.len()).map_err(TxError::Domain)?;
                let session_rows: Vec<SessionRow> = change
                    .changed_sessions
                    .iter()
                    .filter_map(|id| agg.sessions.iter().find(|s| &s.id == id))
                    .map(SessionRow::from_domain)
                    .collect();
                let payment_rows: Vec<PaymentRow> = change
                    .changed_payments
                    .iter()
                    .filter_map(|id| agg.payments.iter().find(|p| &p.id == id))
                    .map(PaymentRow::from_domain)
                    .collect::<Result<_, _>>()
                    .map_err(TxError::Domain)?;
                let event_rows = crate::events::rows(&events);
                // Every write of the change is sent at once (pipelined on this connection) and
                // PostgreSQL runs them in order inside the transaction: one round trip.
                let mut c: &AsyncPgConnection = conn;
                let mut writes: Vec<BoxFuture<'_, QueryResult<usize>>> = Vec::new();
                match change.expected_lock_version {
                    None => writes.push(diesel::insert_into(invoices::table).values(&invoice_row).execute(&mut c)),
                    Some(expected) => writes.push(
                        diesel::update(
                            invoices::table
                                .filter(invoices::id.eq(agg.invoice.id.as_str()))
                                .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
                                .filter(invoices::mode.eq(scope.mode.as_str()))
                                .filter(invoices::lock_version.eq(expected)),
                        )
                        .set((&invoice_row, invoices::lease_until.eq(None::<DateTime<Utc>>)))
                        .execute(&mut c),
                    ),
                }
                for row in &session_rows {
                    writes.push(
                        diesel::insert_into(checkout_sessions::table)
                            .values(row)
                            .on_conflict(checkout_sessions::id)
                            .do_update()
                            .set((
                                checkout_sessions::status.eq(&row.status),
                                checkout_sessions::completed_at.eq(row.completed_at),
                            ))
                            .execute(&mut c),
                    );
                }
                for row in &payment_rows {
                    writes.push(
                        diesel::insert_into(payments::table)
                            .values(row)
                            .on_conflict(payments::id)
                            .do_update()
                            .set((payments::status.eq(&row.status), payments::failure_reason.eq(&row.failure_reason)))
                            .execute(&mut c),
                    );
                }
                if !event_rows.is_empty() {
                    writes.push(diesel::insert_into(events::table).values(&event_rows).execute(&mut c));
                }
                let counts = try_join_all(writes).await?;
                if <[usize]>::first(&counts) == Some(&0) {
                    // The invoice changed since it was loaded: nothing of this change stays.
                    return Err(TxError::Domain(Error::InvoiceStateMismatch));
                }
                Ok(())
            })
            .await;
        result.map_err(TxError::into_domain)?;
        Ok(change.aggregate)
    }

    async fn payment_using_tx(&self, chain_id: u64, tx: &TxHash) -> Result<Option<PaymentId>, Error> {
        let mut conn = self.conn().await?;
        let chain = i64::try_from(chain_id).map_err(|_| corrupt("chain id"))?;
        let id: Option<String> = payments::table
            .filter(payments::chain_id.eq(chain))
            .filter(payments::transaction_hash.eq(tx.as_str()))
            .filter(payments::status.ne("duplicate"))
            .select(payments::id)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        Ok(id.map(PaymentId::from_trusted))
    }

    async fn get_payment(&self, scope: &Scope, id: &PaymentId) -> Result<Payment, Error> {
        let mut conn = self.conn().await?;
        let row: Option<PaymentRow> = payments::table
            .filter(payments::id.eq(id.as_str()))
            .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
            .select(PaymentRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        let row = row.ok_or(Error::NotFound(Resource::Payment))?;
        if row.mode != scope.mode.as_str() {
            return Err(Error::ModeMismatch);
        }
        row.into_domain()
    }

    async fn claim_due(
        &self,
        only: Option<Scope>,
        limit: u32,
        lease_seconds: u32,
    ) -> Result<Vec<(Scope, InvoiceId)>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<DueRow> = diesel::sql_query(CLAIM_DUE)
            .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.merchant_id.to_string()))
            .bind::<Nullable<Text>, _>(only.as_ref().map(|s| s.mode.as_str().to_owned()))
            .bind::<BigInt, _>(i64::from(limit))
            .bind::<Integer, _>(i32::try_from(lease_seconds).unwrap_or(30))
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter()
            .map(|r| {
                Ok((Scope::new(MerchantId::from_trusted(r.merchant_id), mode(&r.mode)?), InvoiceId::from_trusted(r.id)))
            })
            .collect()
    }

    async fn advance_test_clock(&self, merchant: &MerchantId, seconds: i64) -> Result<i64, Error> {
        let mut conn = self.conn().await?;
        let offset: Option<i64> = diesel::update(test_clocks::table.find(merchant.as_str()))
            .set(test_clocks::offset_seconds.eq(test_clocks::offset_seconds + seconds))
            .returning(test_clocks::offset_seconds)
            .get_result(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        offset.ok_or(Error::NotFound(Resource::Merchant))
    }
}
