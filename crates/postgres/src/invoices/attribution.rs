//! What attribution reads across merchants (the checkouts that may take a transfer, the reports
//! of a hash) and the wallets bound to checkouts.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Bytea, Nullable, Numeric, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use stablepay_domain::chain::{CandidateQuery, Candidates, OpenCheckout};
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId};
use stablepay_domain::invoice::checkout::{Binding, MAX_BINDINGS};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::wallet::{AuthorizationNonce, AuthorizationTerms, MAX_AUTHORIZATIONS};
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::money::Decimal6;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::codec::numeric;
use crate::error::db;
use crate::rows::{ScopedRow, corrupt};
use crate::schema::{checkout_authorizations, checkout_bindings, checkout_sessions, payments};

/// The checkouts a naming may name, of those that may take a transfer into a wallet at a block's
/// time: found by what names them (the amount asked, the invoice's remainder of a partly paid
/// one, a report, the sender's bindings), each through its own index, never by reading every
/// open checkout of the wallet; then held to the wallet, token, status and times. The statuses
/// are written out so the partial indexes apply (`pending`, `expired`, `cancelled`: a
/// completed checkout is paid).
const NAMED: &str = "\
WITH named AS ( \
  SELECT s.id FROM checkout_sessions s \
   WHERE s.settlement_wallet = $1 AND s.token_contract = $2 AND s.amount_due = $3 \
     AND s.mode = 'live' AND s.status IN ('pending', 'expired', 'cancelled') \
  UNION \
  SELECT s.id FROM invoices i JOIN checkout_sessions s ON s.invoice_id = i.id \
   WHERE i.mode = 'live' AND i.customer_amount_paid > 0 AND (i.total - i.customer_amount_paid) = $3 \
  UNION \
  SELECT s.id FROM checkout_sessions s WHERE s.id = ANY($4) \
  UNION \
  SELECT b.checkout_session_id FROM checkout_bindings b WHERE b.wallet = $5 \
  UNION \
  SELECT a.checkout_session_id FROM checkout_authorizations a WHERE a.nonce = $8 \
) \
SELECT s.merchant_id, s.mode, s.id, s.invoice_id, s.amount_due, s.amount_offset, s.created_at, \
       i.total, i.customer_amount_paid \
  FROM named n JOIN checkout_sessions s ON s.id = n.id JOIN invoices i ON i.id = s.invoice_id \
 WHERE s.settlement_wallet = $1 AND s.token_contract = $2 \
   AND s.mode = 'live' AND s.status IN ('pending', 'expired', 'cancelled') \
   AND s.expires_at > $6 AND s.created_at < $7";

/// Whether any checkout of a wallet and token was open at a block's time (created before its
/// next second, expiring after it).
const ANY_OPEN: &str = "\
SELECT EXISTS (SELECT 1 FROM checkout_sessions s \
  WHERE s.settlement_wallet = $1 AND s.token_contract = $2 \
    AND s.mode = 'live' AND s.status IN ('pending', 'expired', 'cancelled') \
    AND s.expires_at > $3 AND s.created_at < $4) AS open";

#[derive(QueryableByName)]
struct NamedRow {
    #[diesel(embed)]
    session: ScopedRow,
    #[diesel(sql_type = Text)]
    invoice_id: String,
    #[diesel(sql_type = Numeric)]
    amount_due: BigDecimal,
    #[diesel(sql_type = Numeric)]
    amount_offset: BigDecimal,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Numeric)]
    total: BigDecimal,
    #[diesel(sql_type = Numeric)]
    customer_amount_paid: BigDecimal,
}

#[derive(QueryableByName)]
struct AnyOpen {
    #[diesel(sql_type = diesel::sql_types::Bool)]
    open: bool,
}

/// The live checkouts that `asked` names, with their invoice's totals and their bindings; and
/// whether any checkout was open at its `at`.
pub(super) async fn open_checkouts(conn: &mut AsyncPgConnection, asked: &CandidateQuery) -> Result<Candidates, Error> {
    let CandidateQuery { wallet, token_contract, at, early, naming } = asked;
    let (at, early) = (*at, *early);
    let second = chrono::Duration::seconds(1);
    let reported: Vec<String> = naming.reported.iter().map(ToString::to_string).collect();
    let rows: Vec<NamedRow> = diesel::sql_query(NAMED)
        .bind::<Text, _>(wallet.as_str())
        .bind::<Text, _>(token_contract.as_str())
        .bind::<Numeric, _>(naming.amount.as_bigdecimal().clone())
        .bind::<Array<Text>, _>(reported)
        .bind::<Nullable<Text>, _>(naming.from.as_ref().map(|w| w.as_str().to_owned()))
        .bind::<Timestamptz, _>(at)
        .bind::<Timestamptz, _>(at + early + second)
        .bind::<Nullable<Bytea>, _>(naming.authorization.map(|n| n.0.to_vec()))
        .load(conn)
        .await
        .map_err(db)?;
    // A named checkout open at `at` answers it; only otherwise is the wallet's list asked.
    let any_open = rows.iter().any(|r| r.created_at < at + second)
        || diesel::sql_query(ANY_OPEN)
            .bind::<Text, _>(wallet.as_str())
            .bind::<Text, _>(token_contract.as_str())
            .bind::<Timestamptz, _>(at)
            .bind::<Timestamptz, _>(at + second)
            .get_result::<AnyOpen>(conn)
            .await
            .map_err(db)?
            .open;
    let ids: Vec<&str> = rows.iter().map(|r| r.session.id.as_str()).collect();
    let bound = bindings_of(conn, &ids).await?;
    let named = rows
        .into_iter()
        .map(|r| {
            let bindings =
                bound.iter().filter(|(session, _)| *session == r.session.id).map(|(_, b)| b.clone()).collect();
            Ok(OpenCheckout {
                scope: r.session.scope()?,
                session_id: CheckoutSessionId::from_trusted(r.session.id),
                invoice_id: InvoiceId::from_trusted(r.invoice_id),
                amount_due: numeric(r.amount_due)?,
                amount_offset: numeric(r.amount_offset)?,
                invoice_remaining: numeric(r.total)?.saturating_sub(&numeric(r.customer_amount_paid)?),
                created_at: r.created_at,
                bindings,
            })
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(Candidates { named, any_open })
}

/// The bindings of checkouts `ids` (each with its attempts' nonces), first bound first.
async fn bindings_of(conn: &mut AsyncPgConnection, ids: &[&str]) -> Result<Vec<(String, Binding)>, Error> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let bound: Vec<(String, String, DateTime<Utc>)> = checkout_bindings::table
        .filter(checkout_bindings::checkout_session_id.eq_any(ids))
        .order((checkout_bindings::bound_at.asc(), checkout_bindings::wallet.asc()))
        .select((checkout_bindings::checkout_session_id, checkout_bindings::wallet, checkout_bindings::bound_at))
        .load(conn)
        .await
        .map_err(db)?;
    let nonces: Vec<(String, String, Vec<u8>)> = checkout_authorizations::table
        .filter(checkout_authorizations::checkout_session_id.eq_any(ids))
        .order(checkout_authorizations::created_at.asc())
        .select((
            checkout_authorizations::checkout_session_id,
            checkout_authorizations::wallet,
            checkout_authorizations::nonce,
        ))
        .load(conn)
        .await
        .map_err(db)?;
    bound
        .into_iter()
        .map(|(session, wallet, bound_at)| {
            let nonces = nonces
                .iter()
                .filter(|(s, w, _)| *s == session && *w == wallet)
                .map(|(_, _, n)| {
                    n.clone()
                        .try_into()
                        .map(AuthorizationNonce)
                        .map_err(|_| crate::rows::corrupt("authorization nonce"))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            Ok((session, Binding { wallet: WalletAddress::from_trusted(wallet), bound_at, nonces }))
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

/// Binds `wallet` to checkout `id` of `scope` (once; at most [`MAX_BINDINGS`] per checkout),
/// and keeps the attempt's authorization `terms` (its nonce first) with the binding (at most
/// [`MAX_AUTHORIZATIONS`] per checkout); answers whether they were kept.
pub(super) async fn bind_wallet(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &CheckoutSessionId,
    (wallet, terms, at): (&WalletAddress, Option<AuthorizationTerms>, DateTime<Utc>),
) -> Result<bool, Error> {
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
    let Some(terms) = terms else { return Ok(false) };
    let most = i64::try_from(MAX_AUTHORIZATIONS).unwrap_or(i64::MAX);
    let kept = diesel::sql_query(
        "INSERT INTO checkout_authorizations \
         (nonce, checkout_session_id, wallet, created_at, token_contract, recipient, value_units, valid_after, valid_before) \
         SELECT $1, $2, $3, $4, $6, $7, $8::numeric, $9, $10 \
          WHERE EXISTS (SELECT 1 FROM checkout_bindings WHERE checkout_session_id = $2 AND wallet = $3) \
            AND (SELECT count(*) FROM checkout_authorizations WHERE checkout_session_id = $2) < $5 \
         ON CONFLICT DO NOTHING",
    )
    .bind::<Bytea, _>(terms.nonce.0.to_vec())
    .bind::<Text, _>(id.as_str())
    .bind::<Text, _>(wallet.as_str())
    .bind::<Timestamptz, _>(at)
    .bind::<diesel::sql_types::BigInt, _>(most)
    .bind::<Text, _>(terms.token_contract.as_str())
    .bind::<Text, _>(terms.to.as_str())
    .bind::<Text, _>(terms.value.to_units())
    .bind::<diesel::sql_types::BigInt, _>(terms.valid_after)
    .bind::<diesel::sql_types::BigInt, _>(terms.valid_before)
    .execute(conn)
    .await
    .map_err(db)?;
    Ok(kept == 1)
}

#[derive(QueryableByName)]
struct TermsRow {
    #[diesel(sql_type = Text)]
    wallet: String,
    #[diesel(sql_type = Nullable<Text>)]
    token_contract: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    recipient: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    value_units: Option<String>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    valid_after: Option<i64>,
    #[diesel(sql_type = Nullable<diesel::sql_types::BigInt>)]
    valid_before: Option<i64>,
}

/// The terms kept for `nonce` with an attempt of checkout `id` of `scope` (`None` for another
/// checkout's nonce, an unknown one, or one kept before its terms were).
pub(super) async fn authorization_terms(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &CheckoutSessionId,
    nonce: &AuthorizationNonce,
) -> Result<Option<AuthorizationTerms>, Error> {
    session_in_scope(conn, scope, id).await?;
    let rows: Vec<TermsRow> = diesel::sql_query(
        "SELECT wallet, token_contract, recipient, value_units::text AS value_units, valid_after, valid_before \
         FROM checkout_authorizations WHERE nonce = $1 AND checkout_session_id = $2",
    )
    .bind::<Bytea, _>(nonce.0.to_vec())
    .bind::<Text, _>(id.as_str())
    .load(conn)
    .await
    .map_err(db)?;
    let Some(row) = rows.into_iter().next() else { return Ok(None) };
    let (Some(token), Some(to), Some(units), Some(valid_after), Some(valid_before)) =
        (row.token_contract, row.recipient, row.value_units, row.valid_after, row.valid_before)
    else {
        return Ok(None);
    };
    let address = |text: &str| WalletAddress::parse(text).map_err(|_| corrupt("authorization wallet"));
    Ok(Some(AuthorizationTerms {
        token_contract: address(&token)?,
        from: address(&row.wallet)?,
        to: address(&to)?,
        value: Decimal6::from_units(&units).ok_or_else(|| corrupt("authorization value"))?,
        valid_after,
        valid_before,
        nonce: *nonce,
    }))
}

/// The wallets bound to checkout `id` of `scope`, first bound first.
pub(super) async fn bindings(
    conn: &mut AsyncPgConnection,
    scope: &Scope,
    id: &CheckoutSessionId,
) -> Result<Vec<Binding>, Error> {
    session_in_scope(conn, scope, id).await?;
    Ok(bindings_of(conn, &[id.as_str()]).await?.into_iter().map(|(_, b)| b).collect())
}
