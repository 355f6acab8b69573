//! Pages of a scope's checkout sessions and payments for the dashboard, newest first: ordered
//! by (creation or detection time, id), the cursor being the last item's id in the same scope.

use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::invoice::checkout::{CheckoutSession, CheckoutStatus};
use stablepay_domain::invoice::payment::{Payment, PaymentStatus};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::{Error, Scope};

use super::rows::{PaymentRow, SessionRow};
use crate::error::db;
use crate::schema::{checkout_sessions, payments};

/// A page of the scope's checkout sessions, optionally in one status.
pub(super) async fn sessions(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    status: Option<CheckoutStatus>,
    page: &PageRequest,
) -> Result<Page<CheckoutSession>, Error> {
    use checkout_sessions::dsl as s;
    let mut query = s::checkout_sessions
        .filter(s::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(s::mode.eq(scope.mode.as_str()))
        .select(SessionRow::as_select())
        .order((s::created_at.desc(), s::id.desc()))
        .limit(i64::from(page.limit) + 1)
        .into_boxed();
    if let Some(status) = status {
        query = query.filter(s::status.eq(status.as_str()));
    }
    if let Some(cursor) = &page.starting_after {
        let at: chrono::DateTime<chrono::Utc> = s::checkout_sessions
            .filter(s::id.eq(cursor))
            .filter(s::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(s::mode.eq(scope.mode.as_str()))
            .select(s::created_at)
            .first(conn)
            .await
            .optional()
            .map_err(db)?
            .ok_or(Error::InvalidCursor)?;
        query = query.filter(s::created_at.lt(at).or(s::created_at.eq(at).and(s::id.lt(cursor.clone()))));
    }
    let rows: Vec<SessionRow> = query.load(conn).await.map_err(db)?;
    paged(rows, page, SessionRow::into_domain)
}

/// A page of the scope's payments, optionally in one status.
pub(super) async fn payments(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    status: Option<PaymentStatus>,
    page: &PageRequest,
) -> Result<Page<Payment>, Error> {
    use payments::dsl as p;
    let mut query = p::payments
        .filter(p::merchant_id.eq(scope.merchant_id.as_str()))
        .filter(p::mode.eq(scope.mode.as_str()))
        .select(PaymentRow::as_select())
        .order((p::detected_at.desc(), p::id.desc()))
        .limit(i64::from(page.limit) + 1)
        .into_boxed();
    if let Some(status) = status {
        query = query.filter(p::status.eq(status.as_str()));
    }
    if let Some(cursor) = &page.starting_after {
        let at: chrono::DateTime<chrono::Utc> = p::payments
            .filter(p::id.eq(cursor))
            .filter(p::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(p::mode.eq(scope.mode.as_str()))
            .select(p::detected_at)
            .first(conn)
            .await
            .optional()
            .map_err(db)?
            .ok_or(Error::InvalidCursor)?;
        query = query.filter(p::detected_at.lt(at).or(p::detected_at.eq(at).and(p::id.lt(cursor.clone()))));
    }
    let rows: Vec<PaymentRow> = query.load(conn).await.map_err(db)?;
    paged(rows, page, PaymentRow::into_domain)
}

/// The first `page.limit` rows as domain values, and whether more followed.
fn paged<R, T>(mut rows: Vec<R>, page: &PageRequest, convert: fn(R) -> Result<T, Error>) -> Result<Page<T>, Error> {
    let limit = usize::try_from(page.limit).unwrap_or(100);
    let has_more = rows.len() > limit;
    rows.truncate(limit);
    Ok(Page { items: rows.into_iter().map(convert).collect::<Result<_, _>>()?, has_more })
}
