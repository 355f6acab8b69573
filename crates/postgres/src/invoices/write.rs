//! Writes: one [`InvoiceChange`] saved atomically, as its [`ChangeKind`] says.
//!
//! A creation that writes only the invoice and one session (a checkout) is one prepared
//! statement (`create_statement`), atomic on its own. Every other save is one transaction whose
//! writes (invoice, sessions, payments, events) are sent pipelined on its connection: one round
//! trip after the optional number allocation.

use diesel::result::QueryResult;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures_util::future::{BoxFuture, try_join_all};
use stablepay_domain::event::Event;
use stablepay_domain::invoice::aggregate::{ChangeKind, InvoiceAggregate, InvoiceChange};
use stablepay_domain::{Error, Scope};

use crate::error::TxError;
use crate::invoices::change_statements::{
    InsertEvent, InsertInvoice, NextNumber, UpdateInvoice, UpsertPayment, UpsertSession,
};
use crate::invoices::create_statement::InsertInvoiceWithSession;
use crate::invoices::rows::{InvoiceRow, PaymentRow, SessionRow};
use crate::rows::corrupt;

/// Saves `change`; answers the saved aggregate (numbered, with its new lock version).
pub(super) async fn save(conn: &mut AsyncPgConnection, mut change: InvoiceChange) -> Result<InvoiceAggregate, Error> {
    if one_statement(&change) {
        change.finalize(None);
        let agg = &change.aggregate;
        let invoice = InvoiceRow::from_domain(&agg.invoice, 0)?;
        let session =
            <[_]>::first(&agg.sessions).map(SessionRow::from_domain).transpose()?.ok_or_else(|| corrupt("session"))?;
        let number: String = InsertInvoiceWithSession { invoice: &invoice, session: &session }
            .get_result(conn)
            .await
            .map_err(|e| TxError::Db(e).into_domain())?;
        change.aggregate.invoice.number = Some(number);
        return Ok(change.aggregate);
    }
    conn.transaction::<_, TxError, _>(async |conn| write_all(conn, &mut change).await)
        .await
        .map_err(TxError::into_domain)?;
    Ok(change.aggregate)
}

/// The checkouts a saved `change` may have changed for their pages: the sessions it wrote and
/// those of the payments it wrote (none for a creation: nobody follows a new checkout yet).
pub(super) fn followed_changes(change: &InvoiceChange) -> Vec<String> {
    if change.kind == ChangeKind::Create {
        return Vec::new();
    }
    let agg = &change.aggregate;
    let of_payments =
        change.changed_payments.iter().filter_map(|id| agg.payment(id)).map(|p| p.checkout_session_id.as_str());
    let mut ids: Vec<String> =
        change.changed_sessions.iter().map(|id| id.as_str()).chain(of_payments).map(str::to_owned).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// A creation of a numbered invoice with its one checkout, nothing else (no events, no emails,
/// no idempotency key to mark): one statement numbers and writes it.
fn one_statement(change: &InvoiceChange) -> bool {
    change.kind == ChangeKind::Create
        && change.claim.is_none()
        && change.aggregate.sessions.len() == 1
        && change.changed_payments.is_empty()
        && change.events.is_empty()
        && change.assign_number.is_some()
        && change.emails.is_empty()
}

/// Allocates the scope's next invoice number (inside the caller's transaction).
async fn next_number(conn: &mut AsyncPgConnection, scope: &Scope) -> QueryResult<i64> {
    NextNumber { merchant_id: scope.merchant_id.as_str(), mode: scope.mode.as_str() }.get_result(conn).await
}

/// The rows one change writes.
struct Rows<'e> {
    invoice: InvoiceRow,
    sessions: Vec<SessionRow>,
    payments: Vec<PaymentRow>,
    events: Vec<crate::events::NewEventRow<'e>>,
}

impl<'e> Rows<'e> {
    fn of(change: &InvoiceChange, events: &'e [Event]) -> Result<Self, Error> {
        let agg = &change.aggregate;
        Ok(Self {
            invoice: InvoiceRow::from_domain(&agg.invoice, agg.payments.len())?,
            sessions: change
                .changed_sessions
                .iter()
                .filter_map(|id| agg.session(id))
                .map(SessionRow::from_domain)
                .collect::<Result<_, _>>()?,
            payments: change
                .changed_payments
                .iter()
                .filter_map(|id| agg.payment(id))
                .map(PaymentRow::from_domain)
                .collect::<Result<_, _>>()?,
            events: crate::events::rows(events),
        })
    }
}

/// Every write of a change, inside its transaction.
pub(crate) async fn write_all(conn: &mut AsyncPgConnection, change: &mut InvoiceChange) -> Result<(), TxError> {
    let scope = change.aggregate.invoice.scope.clone();
    let seq = match change.assign_number {
        None => None,
        Some(_) => Some(next_number(conn, &scope).await?),
    };
    let events = change.finalize(seq);
    let rows = Rows::of(change, &events).map_err(TxError::Domain)?;
    let counts = pipelined(conn, change.kind, &rows).await?;
    // (`<[_]>::first` because diesel's prelude also has a `first`.)
    if <[usize]>::first(&counts) == Some(&0) {
        // The invoice changed since it was loaded: nothing of this change stays.
        return Err(TxError::Domain(Error::InvoiceStateMismatch));
    }
    crate::emails::write_emails(conn, &change.emails).await?;
    if let Some(claim) = &change.claim {
        crate::idempotency::mark_committed(conn, claim, &change.committed()).await?;
    }
    Ok(())
}

/// Sends every write at once (pipelined on this connection); PostgreSQL runs them in order
/// inside the transaction. The first count is the invoice's.
async fn pipelined(conn: &mut AsyncPgConnection, kind: ChangeKind, rows: &Rows<'_>) -> QueryResult<Vec<usize>> {
    let c: &AsyncPgConnection = conn;
    let mut writes: Vec<BoxFuture<'_, QueryResult<usize>>> = Vec::new();
    let invoice = &rows.invoice;
    writes.push(match kind {
        ChangeKind::Create => InsertInvoice(invoice).execute(&mut &*c),
        // Scoped: the row's merchant and mode are the change's scope.
        ChangeKind::Update { expected_lock_version } => {
            UpdateInvoice { row: invoice, expected_lock_version }.execute(&mut &*c)
        }
    });
    for row in &rows.sessions {
        writes.push(UpsertSession(row).execute(&mut &*c));
    }
    for row in &rows.payments {
        writes.push(UpsertPayment(row).execute(&mut &*c));
    }
    for row in &rows.events {
        writes.push(InsertEvent(row).execute(&mut &*c));
    }
    try_join_all(writes).await
}
