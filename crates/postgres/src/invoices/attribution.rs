//! What attribution reads across merchants (the checkouts that may take a transfer, the reports
//! of a hash) and the wallets bound to checkouts.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::chain::OpenCheckout;
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, MerchantId};
use stablepay_domain::invoice::checkout::{Binding, MAX_BINDINGS};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::codec::numeric;
use crate::error::db;
use crate::rows::mode;
use crate::schema::{checkout_bindings, checkout_sessions, invoices, payments};

/// The statuses of a checkout that may still take a transfer mined while it was open (a
/// completed one is paid).
const TAKING: [&str; 3] = ["pending", "expired", "cancelled"];

/// The live checkouts that may take a transfer into `wallet` of `token_contract` mined at
/// `at`: created at or before `at + early` (to the second), expiring after `at`, with their
/// invoice's totals and their bindings.
pub(super) async fn open_checkouts(
    conn: &mut AsyncPgConnection,
    wallet: &WalletAddress,
    token_contract: &WalletAddress,
    (at, early): (DateTime<Utc>, chrono::Duration),
) -> Result<Vec<OpenCheckout>, Error> {
    type Row = (String, String, String, String, BigDecimal, BigDecimal, DateTime<Utc>, BigDecimal, BigDecimal);
    let rows: Vec<Row> = checkout_sessions::table
        .inner_join(invoices::table.on(invoices::id.eq(checkout_sessions::invoice_id)))
        .filter(checkout_sessions::mode.eq(Mode::Live.as_str()))
        .filter(checkout_sessions::status.eq_any(TAKING))
        .filter(checkout_sessions::settlement_wallet.eq(wallet.as_str()))
        .filter(checkout_sessions::token_contract.eq(token_contract.as_str()))
        .filter(checkout_sessions::expires_at.gt(at))
        .filter(checkout_sessions::created_at.lt(at + early + chrono::Duration::seconds(1)))
        .select((
            checkout_sessions::merchant_id,
            checkout_sessions::mode,
            checkout_sessions::id,
            checkout_sessions::invoice_id,
            checkout_sessions::amount_due,
            checkout_sessions::amount_offset,
            checkout_sessions::created_at,
            invoices::total,
            invoices::customer_amount_paid,
        ))
        .load(conn)
        .await
        .map_err(db)?;
    let ids: Vec<&str> = rows.iter().map(|r| r.2.as_str()).collect();
    let bound: Vec<(String, String, DateTime<Utc>)> = if ids.is_empty() {
        Vec::new()
    } else {
        checkout_bindings::table
            .filter(checkout_bindings::checkout_session_id.eq_any(&ids))
            .select((checkout_bindings::checkout_session_id, checkout_bindings::wallet, checkout_bindings::bound_at))
            .load(conn)
            .await
            .map_err(db)?
    };
    rows.into_iter()
        .map(|(merchant, m, id, invoice, amount_due, offset, created_at, total, paid)| {
            let bindings = bound
                .iter()
                .filter(|(session, _, _)| *session == id)
                .map(|(_, wallet, at)| Binding { wallet: WalletAddress::from_trusted(wallet.clone()), bound_at: *at })
                .collect();
            Ok(OpenCheckout {
                scope: Scope::new(MerchantId::from_trusted(merchant), mode(&m)?),
                session_id: CheckoutSessionId::from_trusted(id),
                invoice_id: InvoiceId::from_trusted(invoice),
                amount_due: numeric(amount_due)?,
                amount_offset: numeric(offset)?,
                invoice_remaining: numeric(total)?.saturating_sub(&numeric(paid)?),
                created_at,
                bindings,
            })
        })
        .collect()
}

/// The live checkouts paying `wallet` in `token_contract` that `tx` was reported for.
pub(super) async fn reported_checkouts(
    conn: &mut AsyncPgConnection,
    tx: &TxHash,
    wallet: &WalletAddress,
    token_contract: &WalletAddress,
) -> Result<Vec<CheckoutSessionId>, Error> {
    let ids: Vec<String> = payments::table
        .filter(payments::transaction_hash.eq(tx.as_str()))
        .filter(payments::mode.eq(Mode::Live.as_str()))
        .filter(payments::claimed_log.is_null())
        .filter(payments::settlement_wallet.eq(wallet.as_str()))
        .filter(payments::token_contract.eq(token_contract.as_str()))
        .select(payments::checkout_session_id)
        .distinct()
        .load(conn)
        .await
        .map_err(db)?;
    Ok(ids.into_iter().map(CheckoutSessionId::from_trusted).collect())
}

/// Whether checkout `id` is `scope`'s.
async fn session_in_scope(conn: &mut AsyncPgConnection, scope: &Scope, id: &CheckoutSessionId) -> Result<(), Error> {
    let found: Option<(String, String)> = checkout_sessions::table
        .find(id.as_str())
        .select((checkout_sessions::merchant_id, checkout_sessions::mode))
        .first(conn)
        .await
        .optional()
        .map_err(db)?;
    match found {
        Some((m, md)) if m == scope.merchant_id.as_str() && md == scope.mode.as_str() => Ok(()),
        Some((m, _)) if m == scope.merchant_id.as_str() => Err(Error::ModeMismatch),
        _ => Err(Error::NotFound(Resource::CheckoutSession)),
    }
}

/// Binds `wallet` to checkout `id` of `scope` (once; at most [`MAX_BINDINGS`] per checkout).
pub(super) async fn bind_wallet(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &CheckoutSessionId,
    (wallet, at): (&WalletAddress, DateTime<Utc>),
) -> Result<(), Error> {
    session_in_scope(conn, scope, id).await?;
    let limit = i64::try_from(MAX_BINDINGS).unwrap_or(i64::MAX);
    diesel::sql_query(
        "INSERT INTO checkout_bindings (checkout_session_id, wallet, bound_at) \
         SELECT $1, $2, $3 WHERE (SELECT count(*) FROM checkout_bindings WHERE checkout_session_id = $1) < $4 \
         ON CONFLICT DO NOTHING",
    )
    .bind::<diesel::sql_types::Text, _>(id.as_str())
    .bind::<diesel::sql_types::Text, _>(wallet.as_str())
    .bind::<diesel::sql_types::Timestamptz, _>(at)
    .bind::<diesel::sql_types::BigInt, _>(limit)
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(())
}

/// The wallets bound to checkout `id` of `scope`, first bound first.
pub(super) async fn bindings(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &CheckoutSessionId,
) -> Result<Vec<Binding>, Error> {
    session_in_scope(conn, scope, id).await?;
    let rows: Vec<(String, DateTime<Utc>)> = checkout_bindings::table
        .filter(checkout_bindings::checkout_session_id.eq(id.as_str()))
        .order((checkout_bindings::bound_at.asc(), checkout_bindings::wallet.asc()))
        .select((checkout_bindings::wallet, checkout_bindings::bound_at))
        .load(conn)
        .await
        .map_err(db)?;
    Ok(rows
        .into_iter()
        .map(|(wallet, bound_at)| Binding { wallet: WalletAddress::from_trusted(wallet), bound_at })
        .collect())
}
