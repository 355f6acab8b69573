//! The relayer's store: submissions (`relayed_authorizations`, each with the terms its attempt
//! kept in `checkout_authorizations`), every version of their transactions
//! (`relayed_transactions`), and the relayer account (`relayer_accounts`): its next nonce, moved
//! only in the transaction that records the transaction signed with it, and the sender's
//! lease.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bool, Bytea, Integer, Nullable, Text, Timestamptz};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use stablepay_domain::ids::{CheckoutSessionId, RelayId};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::wallet::{AuthorizationNonce, AuthorizationTerms};
use stablepay_domain::merchant::WalletAddress;
use stablepay_domain::money::Decimal6;
use stablepay_domain::relay::model::{
    Fees, Inserted, Rebroadcast, Relay, RelayReceipt, RelayStatus, RelayTransaction, RelayUsage, Signature,
    SignedAuthorization,
};
use stablepay_domain::relay::ports::RelayStore;
use stablepay_domain::{Error, Resource, Scope};

use crate::error::{TxError, db};
use crate::pool::PgStore;
use crate::rows::{ScopedRow, corrupt};

/// A submission with its attempt's terms.
const SELECT: &str = "SELECT r.id, r.merchant_id, r.mode, r.checkout_session_id, r.nonce, r.relayer, r.signature, \
    r.status, r.gas_limit, r.tx_nonce, r.broadcast_at, r.mined_hash, r.mined_succeeded, r.mined_block, r.gas_used, \
    r.fee_wei::text AS fee_wei, r.detail, r.created_at, a.token_contract, a.wallet, a.recipient, \
    a.value_units::text AS value_units, a.valid_after, a.valid_before \
    FROM relayed_authorizations r JOIN checkout_authorizations a ON a.nonce = r.nonce";

/// The relayer's account, made on first use.
const ACCOUNT: &str = "INSERT INTO relayer_accounts (address) VALUES ($1) ON CONFLICT DO NOTHING";

/// What the relayer used and reserved since a day began: a mined transaction's gas, a
/// submission's gas limit while it may still send, nothing for one settled before it was sent.
const DAY_GAS: &str = "SELECT coalesce(sum(CASE WHEN mined_hash IS NOT NULL THEN gas_used \
    WHEN status = 'queued' OR tx_nonce IS NOT NULL THEN gas_limit ELSE 0 END), 0)::bigint AS n \
    FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2";

const USAGE: &str = "SELECT (SELECT coalesce(sum(CASE WHEN mined_hash IS NOT NULL THEN gas_used \
        WHEN status = 'queued' OR tx_nonce IS NOT NULL THEN gas_limit ELSE 0 END), 0)::bigint \
        FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2) AS gas, \
    (SELECT coalesce(sum(fee_wei), 0)::text FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2) AS spent, \
    (SELECT count(*) FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2 AND status = 'confirmed') AS confirmed, \
    (SELECT count(*) FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2 \
        AND status IN ('failed', 'expired')) AS failed, \
    (SELECT count(*) FROM relayed_authorizations WHERE relayer = $1 AND created_at >= $2 AND status = 'front_run') AS front_run, \
    (SELECT count(*) FROM relayed_authorizations WHERE relayer = $1 AND status = 'queued' AND tx_nonce IS NULL) \
    + (SELECT count(*) FROM relayed_authorizations WHERE relayer = $1 AND tx_nonce IS NOT NULL AND mined_hash IS NULL) \
    AS in_flight";

/// The lease is `holder`'s and runs.
const HOLDS: &str = "lease_holder = $2 AND leased_until > now()";

#[derive(QueryableByName)]
struct RelayRow {
    #[diesel(embed)]
    scoped: ScopedRow,
    #[diesel(sql_type = Text)]
    checkout_session_id: String,
    #[diesel(sql_type = Bytea)]
    nonce: Vec<u8>,
    #[diesel(sql_type = Text)]
    relayer: String,
    #[diesel(sql_type = Bytea)]
    signature: Vec<u8>,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = BigInt)]
    gas_limit: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    tx_nonce: Option<i64>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    broadcast_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Text>)]
    mined_hash: Option<String>,
    #[diesel(sql_type = Nullable<Bool>)]
    mined_succeeded: Option<bool>,
    #[diesel(sql_type = Nullable<BigInt>)]
    mined_block: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    gas_used: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    fee_wei: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    detail: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    created_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    token_contract: Option<String>,
    #[diesel(sql_type = Text)]
    wallet: String,
    #[diesel(sql_type = Nullable<Text>)]
    recipient: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    value_units: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    valid_after: Option<i64>,
    #[diesel(sql_type = Nullable<BigInt>)]
    valid_before: Option<i64>,
}

#[derive(QueryableByName)]
struct VersionRow {
    #[diesel(sql_type = Text)]
    relay_id: String,
    #[diesel(sql_type = Text)]
    tx_hash: String,
    #[diesel(sql_type = Bytea)]
    raw: Vec<u8>,
    #[diesel(sql_type = Text)]
    max_fee_per_gas: String,
    #[diesel(sql_type = Text)]
    max_priority_fee_per_gas: String,
    #[diesel(sql_type = Timestamptz)]
    signed_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct NextNonce {
    #[diesel(sql_type = BigInt)]
    next_nonce: i64,
}

#[derive(QueryableByName)]
struct UsageRow {
    #[diesel(sql_type = BigInt)]
    gas: i64,
    #[diesel(sql_type = Text)]
    spent: String,
    #[diesel(sql_type = BigInt)]
    confirmed: i64,
    #[diesel(sql_type = BigInt)]
    failed: i64,
    #[diesel(sql_type = BigInt)]
    front_run: i64,
    #[diesel(sql_type = BigInt)]
    in_flight: i64,
}

fn wallet(text: &str) -> Result<WalletAddress, Error> {
    WalletAddress::parse(text).map_err(|_| corrupt("relay wallet"))
}

fn unsigned(n: i64) -> Result<u64, Error> {
    u64::try_from(n).map_err(|_| corrupt("relay counter"))
}

fn signed(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

fn wei(text: &str) -> Result<u128, Error> {
    text.parse().map_err(|_| corrupt("relay wei"))
}

fn tx_hash(text: &str) -> Result<TxHash, Error> {
    TxHash::parse(text).ok_or_else(|| corrupt("relay transaction hash"))
}

impl RelayRow {
    fn terms(&self) -> Result<AuthorizationTerms, Error> {
        let missing = || corrupt("relay terms");
        let nonce: [u8; 32] = self.nonce.as_slice().try_into().map_err(|_| corrupt("relay nonce"))?;
        Ok(AuthorizationTerms {
            token_contract: wallet(self.token_contract.as_deref().ok_or_else(missing)?)?,
            from: wallet(&self.wallet)?,
            to: wallet(self.recipient.as_deref().ok_or_else(missing)?)?,
            value: Decimal6::from_units(self.value_units.as_deref().ok_or_else(missing)?).ok_or_else(missing)?,
            valid_after: self.valid_after.ok_or_else(missing)?,
            valid_before: self.valid_before.ok_or_else(missing)?,
            nonce: AuthorizationNonce(nonce),
        })
    }

    fn receipt(&self) -> Result<Option<RelayReceipt>, Error> {
        let Some(hash) = &self.mined_hash else { return Ok(None) };
        Ok(Some(RelayReceipt {
            hash: tx_hash(hash)?,
            succeeded: self.mined_succeeded.unwrap_or(false),
            block_number: unsigned(self.mined_block.unwrap_or(0))?,
            gas_used: unsigned(self.gas_used.unwrap_or(0))?,
            fee_wei: wei(self.fee_wei.as_deref().unwrap_or("0"))?,
        }))
    }

    fn into_domain(self, versions: Vec<RelayTransaction>) -> Result<Relay, Error> {
        Ok(Relay {
            id: RelayId::from_trusted(self.scoped.id.clone()),
            scope: self.scoped.scope()?,
            session_id: CheckoutSessionId::from_trusted(self.checkout_session_id.clone()),
            authorization: SignedAuthorization {
                terms: self.terms()?,
                signature: Signature::from_bytes(&self.signature).ok_or_else(|| corrupt("relay signature"))?,
            },
            relayer: wallet(&self.relayer)?,
            status: RelayStatus::parse(&self.status).ok_or_else(|| corrupt("relay status"))?,
            gas_limit: unsigned(self.gas_limit)?,
            tx_nonce: self.tx_nonce.map(unsigned).transpose()?,
            transactions: versions,
            broadcast_at: self.broadcast_at,
            receipt: self.receipt()?,
            detail: self.detail.clone(),
            created_at: self.created_at,
        })
    }
}

impl VersionRow {
    fn into_domain(self) -> Result<RelayTransaction, Error> {
        Ok(RelayTransaction {
            hash: tx_hash(&self.tx_hash)?,
            raw: self.raw,
            fees: Fees {
                max_fee_per_gas: wei(&self.max_fee_per_gas)?,
                max_priority_fee_per_gas: wei(&self.max_priority_fee_per_gas)?,
            },
            signed_at: self.signed_at,
        })
    }
}

/// The submissions `rows` with their versions (one query for all of them).
async fn with_versions(conn: &mut AsyncPgConnection, rows: Vec<RelayRow>) -> Result<Vec<Relay>, Error> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<String> = rows.iter().map(|r| r.scoped.id.clone()).collect();
    let versions: Vec<VersionRow> = diesel::sql_query(
        "SELECT relay_id, tx_hash, raw, max_fee_per_gas::text AS max_fee_per_gas, \
         max_priority_fee_per_gas::text AS max_priority_fee_per_gas, signed_at \
         FROM relayed_transactions WHERE relay_id = ANY($1) ORDER BY signed_at, tx_hash",
    )
    .bind::<Array<Text>, _>(&ids)
    .load(conn)
    .await
    .map_err(db)?;
    let mut by_relay: std::collections::HashMap<String, Vec<RelayTransaction>> = std::collections::HashMap::new();
    for v in versions {
        by_relay.entry(v.relay_id.clone()).or_default().push(v.into_domain()?);
    }
    rows.into_iter()
        .map(|r| {
            let versions = by_relay.remove(&r.scoped.id).unwrap_or_default();
            r.into_domain(versions)
        })
        .collect()
}

async fn one(conn: &mut AsyncPgConnection, rows: Vec<RelayRow>) -> Result<Option<Relay>, Error> {
    Ok(with_versions(conn, rows).await?.into_iter().next())
}

async fn insert_version(conn: &mut AsyncPgConnection, id: &RelayId, t: &RelayTransaction) -> Result<(), TxError> {
    diesel::sql_query(
        "INSERT INTO relayed_transactions (tx_hash, relay_id, raw, max_fee_per_gas, max_priority_fee_per_gas, signed_at) \
         VALUES ($1, $2, $3, $4::numeric, $5::numeric, $6)",
    )
    .bind::<Text, _>(t.hash.as_str())
    .bind::<Text, _>(id.as_str())
    .bind::<Bytea, _>(&t.raw)
    .bind::<Text, _>(t.fees.max_fee_per_gas.to_string())
    .bind::<Text, _>(t.fees.max_priority_fee_per_gas.to_string())
    .bind::<Timestamptz, _>(t.signed_at)
    .execute(conn)
    .await?;
    Ok(())
}

/// Inserts `relay` under the account's lock when the day's budget holds it.
async fn insert_within_budget(
    conn: &mut AsyncPgConnection,
    relay: &Relay,
    (day, limit): (DateTime<Utc>, u64),
) -> Result<bool, TxError> {
    let relayer = relay.relayer.as_str();
    diesel::sql_query(ACCOUNT).bind::<Text, _>(relayer).execute(conn).await?;
    diesel::sql_query("SELECT 1 AS n FROM relayer_accounts WHERE address = $1 FOR UPDATE")
        .bind::<Text, _>(relayer)
        .execute(conn)
        .await?;
    let spent: Count =
        diesel::sql_query(DAY_GAS).bind::<Text, _>(relayer).bind::<Timestamptz, _>(day).get_result(conn).await?;
    if unsigned(spent.n).map_err(TxError::Domain)?.saturating_add(relay.gas_limit) > limit {
        return Ok(false);
    }
    diesel::sql_query(
        "INSERT INTO relayed_authorizations (id, merchant_id, mode, checkout_session_id, nonce, relayer, signature, \
         status, gas_limit, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'queued', $8, $9, $9)",
    )
    .bind::<Text, _>(relay.id.as_str())
    .bind::<Text, _>(relay.scope.merchant_id.as_str())
    .bind::<Text, _>(relay.scope.mode.as_str())
    .bind::<Text, _>(relay.session_id.as_str())
    .bind::<Bytea, _>(relay.authorization.terms.nonce.0.to_vec())
    .bind::<Text, _>(relayer)
    .bind::<Bytea, _>(relay.authorization.signature.bytes().to_vec())
    .bind::<BigInt, _>(signed(relay.gas_limit))
    .bind::<Timestamptz, _>(relay.created_at)
    .execute(conn)
    .await?;
    Ok(true)
}

impl PgStore {
    async fn relay_by_nonce(&self, nonce: &AuthorizationNonce) -> Result<Option<Relay>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<RelayRow> = diesel::sql_query(format!("{SELECT} WHERE r.nonce = $1"))
            .bind::<Bytea, _>(nonce.0.to_vec())
            .load(&mut *conn)
            .await
            .map_err(db)?;
        one(&mut conn, rows).await
    }

    async fn relays_where(&self, filter: &str, relayer: &WalletAddress, limit: u32) -> Result<Vec<Relay>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<RelayRow> = diesel::sql_query(format!("{SELECT} WHERE r.relayer = $1 AND {filter} LIMIT $2"))
            .bind::<Text, _>(relayer.as_str())
            .bind::<Integer, _>(i32::try_from(limit).unwrap_or(i32::MAX))
            .load(&mut *conn)
            .await
            .map_err(db)?;
        with_versions(&mut conn, rows).await
    }
}

#[async_trait]
impl RelayStore for PgStore {
    async fn insert_relay(&self, relay: &Relay, budget: (DateTime<Utc>, u64)) -> Result<Inserted, Error> {
        if let Some(existing) = self.relay_by_nonce(&relay.authorization.terms.nonce).await? {
            return Ok(Inserted::Existing(Box::new(existing)));
        }
        let mut conn = self.conn().await?;
        let inserted =
            conn.transaction::<_, TxError, _>(async |conn| insert_within_budget(conn, relay, budget).await).await;
        drop(conn);
        match inserted {
            Ok(true) => Ok(Inserted::New),
            Ok(false) => Ok(Inserted::OverBudget),
            // The same attempt submitted at the same moment: the first one stands.
            Err(TxError::Db(diesel::result::Error::DatabaseError(
                diesel::result::DatabaseErrorKind::UniqueViolation,
                _,
            ))) => match self.relay_by_nonce(&relay.authorization.terms.nonce).await? {
                Some(existing) => Ok(Inserted::Existing(Box::new(existing))),
                None => Err(Error::Internal("a submission collided with one that is gone".into())),
            },
            Err(e) => Err(e.into_domain()),
        }
    }

    async fn relay_for_nonce(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        nonce: &AuthorizationNonce,
    ) -> Result<Option<Relay>, Error> {
        Ok(self.relay_by_nonce(nonce).await?.filter(|r| r.scope == *scope && r.session_id == *session_id))
    }

    async fn relay_in_flight(&self, scope: &Scope, session_id: &CheckoutSessionId) -> Result<Option<Relay>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<RelayRow> = diesel::sql_query(format!(
            "{SELECT} WHERE r.checkout_session_id = $1 AND r.merchant_id = $2 AND r.mode = $3 \
             AND r.status IN ('queued', 'sent') ORDER BY r.created_at LIMIT 1"
        ))
        .bind::<Text, _>(session_id.as_str())
        .bind::<Text, _>(scope.merchant_id.as_str())
        .bind::<Text, _>(scope.mode.as_str())
        .load(&mut *conn)
        .await
        .map_err(db)?;
        one(&mut conn, rows).await
    }

    async fn get_relay(&self, scope: &Scope, session_id: &CheckoutSessionId, id: &RelayId) -> Result<Relay, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<RelayRow> = diesel::sql_query(format!("{SELECT} WHERE r.id = $1"))
            .bind::<Text, _>(id.as_str())
            .load(&mut *conn)
            .await
            .map_err(db)?;
        one(&mut conn, rows)
            .await?
            .filter(|r| r.scope == *scope && r.session_id == *session_id)
            .ok_or(Error::NotFound(Resource::RelayedAuthorization))
    }

    async fn take_lease(
        &self,
        relayer: &WalletAddress,
        holder: &str,
        lease_seconds: u32,
    ) -> Result<Option<u64>, Error> {
        let mut conn = self.conn().await?;
        diesel::sql_query(ACCOUNT).bind::<Text, _>(relayer.as_str()).execute(&mut *conn).await.map_err(db)?;
        let taken: Option<NextNonce> = diesel::sql_query(
            "UPDATE relayer_accounts SET lease_holder = $2, leased_until = now() + make_interval(secs => $3) \
             WHERE address = $1 AND (lease_holder IS NULL OR lease_holder = $2 OR leased_until <= now()) \
             RETURNING next_nonce",
        )
        .bind::<Text, _>(relayer.as_str())
        .bind::<Text, _>(holder)
        .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
        .get_result(&mut *conn)
        .await
        .map(Some)
        .or_else(|e| if e == diesel::result::Error::NotFound { Ok(None) } else { Err(db(e)) })?;
        taken.map(|t| unsigned(t.next_nonce)).transpose()
    }

    async fn has_work(&self, relayer: &WalletAddress) -> Result<bool, Error> {
        let found: Count = diesel::sql_query(
            "SELECT (EXISTS (SELECT 1 FROM relayed_authorizations WHERE relayer = $1 AND status = 'queued' \
                AND tx_nonce IS NULL) \
             OR EXISTS (SELECT 1 FROM relayed_authorizations WHERE relayer = $1 AND tx_nonce IS NOT NULL \
                AND mined_hash IS NULL))::int::int8 AS n",
        )
        .bind::<Text, _>(relayer.as_str())
        .get_result(&mut *self.conn().await?)
        .await
        .map_err(db)?;
        Ok(found.n > 0)
    }

    async fn in_flight(&self, relayer: &WalletAddress, limit: u32) -> Result<Vec<Relay>, Error> {
        self.relays_where("r.tx_nonce IS NOT NULL AND r.mined_hash IS NULL ORDER BY r.tx_nonce", relayer, limit).await
    }

    async fn queued(&self, relayer: &WalletAddress, limit: u32) -> Result<Vec<Relay>, Error> {
        self.relays_where("r.status = 'queued' AND r.tx_nonce IS NULL ORDER BY r.created_at, r.id", relayer, limit)
            .await
    }

    async fn record_first(
        &self,
        id: &RelayId,
        holder: &str,
        (expected, nonce): (u64, u64),
        transaction: &RelayTransaction,
    ) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let recorded = conn
            .transaction::<_, TxError, _>(async |conn| {
                let moved = diesel::sql_query(format!(
                    "UPDATE relayer_accounts SET next_nonce = $3 + 1 \
                     WHERE address = (SELECT relayer FROM relayed_authorizations WHERE id = $1) \
                       AND {HOLDS} AND next_nonce = $4 AND $3 >= $4"
                ))
                .bind::<Text, _>(id.as_str())
                .bind::<Text, _>(holder)
                .bind::<BigInt, _>(signed(nonce))
                .bind::<BigInt, _>(signed(expected))
                .execute(conn)
                .await?;
                if moved == 0 {
                    return Err(TxError::Domain(Error::InvoiceStateMismatch));
                }
                let sent = diesel::sql_query(
                    "UPDATE relayed_authorizations SET status = 'sent', tx_nonce = $2, broadcast_at = $3, updated_at = $3 \
                     WHERE id = $1 AND status = 'queued' AND tx_nonce IS NULL",
                )
                .bind::<Text, _>(id.as_str())
                .bind::<BigInt, _>(signed(nonce))
                .bind::<Timestamptz, _>(transaction.signed_at)
                .execute(conn)
                .await?;
                if sent == 0 {
                    return Err(TxError::Domain(Error::InvoiceStateMismatch));
                }
                insert_version(conn, id, transaction).await?;
                Ok(())
            })
            .await;
        match recorded {
            Ok(()) => Ok(true),
            Err(TxError::Domain(Error::InvoiceStateMismatch)) => Ok(false),
            Err(e) => Err(e.into_domain()),
        }
    }

    async fn record_broadcast(&self, id: &RelayId, holder: &str, again: &Rebroadcast) -> Result<bool, Error> {
        let Rebroadcast { at, replacement } = again;
        let mut conn = self.conn().await?;
        let recorded = conn
            .transaction::<_, TxError, _>(async |conn| {
                let touched = diesel::sql_query(format!(
                    "UPDATE relayed_authorizations SET broadcast_at = $3, updated_at = $3 \
                     WHERE id = $1 AND mined_hash IS NULL AND tx_nonce IS NOT NULL \
                       AND relayer = (SELECT address FROM relayer_accounts WHERE address = relayer AND {HOLDS})"
                ))
                .bind::<Text, _>(id.as_str())
                .bind::<Text, _>(holder)
                .bind::<Timestamptz, _>(*at)
                .execute(conn)
                .await?;
                if touched == 0 {
                    return Ok(false);
                }
                if let Some(t) = replacement {
                    insert_version(conn, id, t).await?;
                }
                Ok(true)
            })
            .await;
        recorded.map_err(TxError::into_domain)
    }

    async fn record_outcome(&self, relay: &Relay, holder: &str) -> Result<bool, Error> {
        let r = relay.receipt.as_ref();
        let saved = diesel::sql_query(format!(
            "UPDATE relayed_authorizations SET status = $3, detail = $4, tx_nonce = $5, mined_hash = $6, \
             mined_succeeded = $7, mined_block = $8, gas_used = $9, fee_wei = $10::numeric, updated_at = now() \
             WHERE id = $1 AND relayer = (SELECT address FROM relayer_accounts WHERE address = relayer AND {HOLDS})"
        ))
        .bind::<Text, _>(relay.id.as_str())
        .bind::<Text, _>(holder)
        .bind::<Text, _>(relay.status.as_str())
        .bind::<Nullable<Text>, _>(relay.detail.as_deref())
        .bind::<Nullable<BigInt>, _>(relay.tx_nonce.map(signed))
        .bind::<Nullable<Text>, _>(r.map(|r| r.hash.as_str().to_owned()))
        .bind::<Nullable<Bool>, _>(r.map(|r| r.succeeded))
        .bind::<Nullable<BigInt>, _>(r.map(|r| signed(r.block_number)))
        .bind::<Nullable<BigInt>, _>(r.map(|r| signed(r.gas_used)))
        .bind::<Nullable<Text>, _>(r.map(|r| r.fee_wei.to_string()))
        .execute(&mut *self.conn().await?)
        .await
        .map_err(db)?;
        Ok(saved == 1)
    }

    async fn usage(&self, relayer: &WalletAddress, since: DateTime<Utc>) -> Result<RelayUsage, Error> {
        let row: UsageRow = diesel::sql_query(USAGE)
            .bind::<Text, _>(relayer.as_str())
            .bind::<Timestamptz, _>(since)
            .get_result(&mut *self.conn().await?)
            .await
            .map_err(db)?;
        Ok(RelayUsage {
            gas: unsigned(row.gas)?,
            spent_wei: wei(&row.spent)?,
            confirmed: unsigned(row.confirmed)?,
            failed: unsigned(row.failed)?,
            front_run: unsigned(row.front_run)?,
            in_flight: unsigned(row.in_flight)?,
        })
    }
}
