//! Reads: an invoice aggregate by id, number, session or public reference, and pages of them.
//! Every scoped read filters by merchant; a row of the other mode is MODE_MISMATCH.

use std::collections::HashMap;

use diesel::pg::Pg;
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, PaymentId};
use stablepay_domain::invoice::aggregate::{InvoiceAggregate, PublicRef};
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::model::InvoiceSearch;
use stablepay_domain::invoice::payment::Payment;
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::{Error, Resource, Scope};

use crate::error::db;
use crate::invoices::rows::{InvoiceRow, PaymentRow, SessionRow};
use crate::rows::after_cursor;
use crate::schema::{checkout_sessions, invoices, payments};

/// Loads sessions and payments of several invoices.
pub(super) async fn children(
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

pub(super) async fn assemble(
    conn: &mut AsyncPgConnection,
    rows: Vec<InvoiceRow>,
) -> Result<Vec<InvoiceAggregate>, Error> {
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
pub(super) async fn find_by_number(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    number: &str,
) -> Result<InvoiceRow, Error> {
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
pub(super) async fn find_by_session(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    session: &CheckoutSessionId,
) -> Result<InvoiceRow, Error> {
    // By the primary key alone, the merchant checked on the row: a filter on `merchant_id` lets
    // a plan made on young statistics scan the merchant's sessions instead (see UpdateInvoice).
    let found: Option<(String, String)> = checkout_sessions::table
        .find(session.as_str())
        .select((checkout_sessions::invoice_id, checkout_sessions::merchant_id))
        .first(conn)
        .await
        .optional()
        .map_err(db)?;
    let invoice_id = found.filter(|(_, merchant)| merchant == scope.merchant_id.as_str()).map(|(id, _)| id);
    let row = match invoice_id {
        None => None,
        Some(id) => {
            invoices::table.find(id).select(InvoiceRow::as_select()).first(conn).await.optional().map_err(db)?
        }
    };
    in_scope(row, scope, Resource::CheckoutSession)
}

crate::fixed::fixed_statement!(
    /// One invoice by id and merchant, with its sessions (a left join), oldest first.
    InvoiceById { id, merchant },
    (diesel::dsl::AsSelect<InvoiceRow, Pg>, diesel::dsl::AsSelect<Option<SessionRow>, Pg>),
    invoices::table
        .left_join(checkout_sessions::table.on(checkout_sessions::invoice_id.eq(invoices::id)))
        .filter(invoices::id.eq(""))
        .filter(invoices::merchant_id.eq(""))
        .select((InvoiceRow::as_select(), Option::<SessionRow>::as_select()))
        .order((checkout_sessions::created_at.asc(), checkout_sessions::id.asc()))
);

crate::fixed::fixed_statement!(
    /// The payments of one invoice, first detected first.
    PaymentsOf { invoice },
    diesel::dsl::AsSelect<PaymentRow, Pg>,
    payments::table
        .filter(payments::invoice_id.eq(""))
        .select(PaymentRow::as_select())
        .order((payments::detected_at.asc(), payments::id.asc()))
);

/// One invoice by id, with its sessions in the same query (a left join) and its payments only
/// when it has any: one round trip for the common read, of statements whose text is built once
/// (`crate::fixed`).
pub(super) async fn load_by_id(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &InvoiceId,
) -> Result<InvoiceAggregate, Error> {
    let read = InvoiceById { id: id.as_str(), merchant: scope.merchant_id.as_str() };
    let rows: Vec<(InvoiceRow, Option<SessionRow>)> = read.load(conn).await.map_err(db)?;
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
        let pays: Vec<PaymentRow> = PaymentsOf { invoice: &row.id }.load(conn).await.map_err(db)?;
        pays.into_iter().map(PaymentRow::into_domain).collect::<Result<_, _>>()?
    };
    Ok(InvoiceAggregate { invoice: row.into_domain()?, sessions, payments })
}

/// The aggregate an unguessable public reference names (no scope: hosted pages).
pub(super) async fn load_public(
    conn: &mut AsyncPgConnection,
    reference: &PublicRef,
) -> Result<InvoiceAggregate, Error> {
    let row: Option<InvoiceRow> = match reference {
        PublicRef::Session(id) => {
            let invoice_id: Option<String> = checkout_sessions::table
                .find(id.as_str())
                .select(checkout_sessions::invoice_id)
                .first(conn)
                .await
                .optional()
                .map_err(db)?;
            let Some(invoice_id) = invoice_id else { return Err(Error::NotFound(Resource::CheckoutSession)) };
            invoices::table.find(invoice_id).select(InvoiceRow::as_select()).first(conn).await.optional().map_err(db)?
        }
        PublicRef::Token(token) => invoices::table
            .filter(invoices::public_token.eq(token.as_str()))
            .select(InvoiceRow::as_select())
            .first(conn)
            .await
            .optional()
            .map_err(db)?,
    };
    let row = row.ok_or(Error::NotFound(Resource::Invoice))?;
    one(conn, row).await
}

/// The aggregate of one invoice row.
pub(super) async fn one(conn: &mut AsyncPgConnection, row: InvoiceRow) -> Result<InvoiceAggregate, Error> {
    assemble(conn, vec![row]).await?.pop().ok_or_else(|| Error::Internal("invoice vanished".into()))
}

/// A page of the scope's invoices, newest first (by insertion sequence).
pub(super) async fn list(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    state: Option<CollectionState>,
    page: &PageRequest,
) -> Result<Page<InvoiceAggregate>, Error> {
    search(conn, scope, &InvoiceSearch { state, ..InvoiceSearch::default() }, page).await
}

/// A page of the scope's invoices narrowed by `s`, newest first (by insertion sequence): the
/// text matches part of the number, or of the customer's email or name, case ignored.
pub(super) async fn search(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    s: &InvoiceSearch,
    page: &PageRequest,
) -> Result<Page<InvoiceAggregate>, Error> {
    use diesel::dsl::sql;
    use diesel::sql_types::{Bool, Text};
    let limit = usize::try_from(page.limit).unwrap_or(100);
    let mut query = invoices::table
        .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(invoices::mode.eq(scope.mode.as_str()))
        .select(InvoiceRow::as_select())
        .order(invoices::seq.desc())
        .limit(i64::from(page.limit) + 1)
        .into_boxed();
    if let Some(state) = s.state {
        query = query.filter(invoices::collection_state.eq(state.as_str()));
    }
    if let Some(status) = s.status {
        query = query.filter(invoices::status.eq(status.as_str()));
    }
    if let Some(from) = s.created_from {
        query = query.filter(invoices::created_at.ge(from));
    }
    if let Some(before) = s.created_before {
        query = query.filter(invoices::created_at.lt(before));
    }
    if let Some(text) = &s.text {
        // A LIKE pattern of the text itself: its wildcards and escapes are literal.
        let pattern = format!("%{}%", text.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"));
        query = query.filter(
            sql::<Bool>("(number ILIKE ")
                .bind::<Text, _>(pattern.clone())
                .sql(" OR fields->'customer'->>'email' ILIKE ")
                .bind::<Text, _>(pattern.clone())
                .sql(" OR fields->'customer'->>'name' ILIKE ")
                .bind::<Text, _>(pattern)
                .sql(")"),
        );
    }
    after_cursor!(conn, query, page, invoices::seq, |cursor| [
        invoices::id.eq(cursor),
        invoices::merchant_id.eq(scope.merchant_id.as_str()),
        invoices::mode.eq(scope.mode.as_str())
    ]);
    let mut rows: Vec<InvoiceRow> = query.load(conn).await.map_err(db)?;
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    Ok(Page { items: assemble(conn, rows).await?, has_more })
}

/// The invoices of `scope` with these ids, in the order given (others left out).
pub(super) async fn by_ids(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    ids: &[InvoiceId],
) -> Result<Vec<InvoiceAggregate>, Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let wanted: Vec<&str> = ids.iter().map(InvoiceId::as_str).collect();
    let rows: Vec<InvoiceRow> = invoices::table
        .filter(invoices::id.eq_any(&wanted))
        .filter(invoices::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(invoices::mode.eq(scope.mode.as_str()))
        .select(InvoiceRow::as_select())
        .load(conn)
        .await
        .map_err(db)?;
    let mut found = assemble(conn, rows).await?;
    let position = |a: &InvoiceAggregate| wanted.iter().position(|w| *w == a.invoice.id.as_str());
    found.sort_by_key(position);
    Ok(found)
}

/// The invoice of a payment of this merchant.
pub(super) async fn find_by_payment(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    payment: &PaymentId,
) -> Result<InvoiceRow, Error> {
    let invoice_id: Option<String> = payments::table
        .filter(payments::id.eq(payment.as_str()))
        .filter(payments::merchant_id.eq(scope.merchant_id.as_str()))
        .select(payments::invoice_id)
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
    in_scope(row, scope, Resource::Payment)
}
