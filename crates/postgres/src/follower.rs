//! The chain follower's store: its scan cursor, the wallets and open checkouts it matches
//! transfers against, and the unattributed transfers it records (with their events).

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::chain::{
    LogClaim, LoggedTransfer, TokenTransfer, UnattributedReason, UnattributedStatus, UnattributedTransfer,
};
use stablepay_domain::event::Event;
use stablepay_domain::ids::{CheckoutSessionId, MerchantId, PaymentId, UnattributedTransferId};
use stablepay_domain::invoice::payment::{BlockRef, TxHash};
use stablepay_domain::invoice::wallet::AuthorizationNonce;
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::ports::FollowerStore;
use stablepay_domain::schedule::model::Batch;
use stablepay_domain::{Error, Mode, Resource, Scope};

use crate::codec::numeric;
use crate::error::db;
use crate::pool::PgStore;
use crate::rows::{after_cursor, corrupt, mode};
use crate::schema::{
    chain_cursors, chain_rechecks, checkout_sessions, credited_transfer_logs, deferred_transfers, merchants, payments,
    unattributed_transfers as u,
};

fn chain(id: u64) -> Result<i64, Error> {
    i64::try_from(id).map_err(|_| corrupt("chain id"))
}

fn block(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| corrupt("block number"))
}

fn log_index(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| corrupt("log index"))
}

const CREDITED: [&str; 3] = ["confirmed", "underpaid", "overpaid"];
const IN_FLIGHT: [&str; 2] = ["detected", "validating"];

/// How long after expiry a checkout's wallet is still watched (its customer's transfer may be
/// mined before the expiry and found later).
const WATCH_AFTER_EXPIRY_HOURS: i64 = 24;

/// Live checkouts whose wallet is watched: pending, or expired less than a day ago.
/// The record that log `index` of transaction `tx` on chain `id` was credited.
fn credited_log(id: i64, tx: &str, index: i64) -> credited_transfer_logs::BoxedQuery<'_, diesel::pg::Pg> {
    credited_transfer_logs::table
        .filter(credited_transfer_logs::chain_id.eq(id))
        .filter(credited_transfer_logs::transaction_hash.eq(tx))
        .filter(credited_transfer_logs::log_index.eq(index))
        .into_boxed()
}

/// The live payments of transaction `tx` on chain `id`.
fn live_payments_of(id: i64, tx: &str) -> payments::BoxedQuery<'_, diesel::pg::Pg> {
    payments::table
        .filter(payments::mode.eq(Mode::Live.as_str()))
        .filter(payments::chain_id.eq(id))
        .filter(payments::transaction_hash.eq(tx))
        .into_boxed()
}

fn watched_checkouts<'a>() -> checkout_sessions::BoxedQuery<'a, diesel::pg::Pg> {
    let since = Utc::now() - chrono::Duration::hours(WATCH_AFTER_EXPIRY_HOURS);
    checkout_sessions::table
        .filter(checkout_sessions::mode.eq(Mode::Live.as_str()))
        .filter(checkout_sessions::status.eq_any(["pending", "expired"]))
        .filter(checkout_sessions::expires_at.gt(since))
        .into_boxed()
}

#[derive(diesel::QueryableByName)]
struct RecheckRow {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    from_block: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    to_block: i64,
}

/// A deferred transfer log as stored.
#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = deferred_transfers, check_for_backend(diesel::pg::Pg))]
struct DeferredRow {
    chain_id: i64,
    transaction_hash: String,
    log_index: i64,
    block_number: i64,
    block_hash: String,
    block_time: DateTime<Utc>,
    token_contract: String,
    from_address: String,
    to_address: String,
    amount: BigDecimal,
    authorization_nonce: Option<Vec<u8>>,
}

impl DeferredRow {
    fn from_domain(chain_id: u64, l: &LoggedTransfer) -> Result<Self, Error> {
        Ok(Self {
            chain_id: chain(chain_id)?,
            transaction_hash: l.tx_hash.as_str().to_owned(),
            log_index: log_index(l.transfer.log_index)?,
            block_number: block(l.block.number)?,
            block_hash: l.block.hash.clone(),
            block_time: l.block_time,
            token_contract: l.transfer.token_contract.to_string(),
            from_address: l.transfer.from.to_string(),
            to_address: l.transfer.to.to_string(),
            amount: l.transfer.amount.as_bigdecimal().clone(),
            authorization_nonce: l.transfer.authorization.map(|n| n.0.to_vec()),
        })
    }

    fn into_domain(self) -> Result<LoggedTransfer, Error> {
        Ok(LoggedTransfer {
            tx_hash: TxHash::from_trusted(self.transaction_hash),
            block: BlockRef {
                number: u64::try_from(self.block_number).map_err(|_| corrupt("block number"))?,
                hash: self.block_hash,
            },
            block_time: self.block_time,
            transfer: TokenTransfer {
                log_index: u64::try_from(self.log_index).map_err(|_| corrupt("log index"))?,
                token_contract: WalletAddress::from_trusted(self.token_contract),
                from: WalletAddress::from_trusted(self.from_address),
                to: WalletAddress::from_trusted(self.to_address),
                amount: numeric(self.amount)?,
                authorization: match self.authorization_nonce {
                    Some(bytes) => {
                        Some(AuthorizationNonce(bytes.try_into().map_err(|_| corrupt("authorization nonce"))?))
                    }
                    None => None,
                },
            },
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = u, check_for_backend(diesel::pg::Pg))]
pub(crate) struct UnattributedRow {
    id: String,
    merchant_id: String,
    mode: String,
    chain_id: i64,
    transaction_hash: String,
    log_index: i64,
    block_number: i64,
    block_hash: String,
    currency: String,
    token_contract: String,
    from_address: String,
    to_address: String,
    amount: BigDecimal,
    reason: String,
    detected_at: DateTime<Utc>,
    block_time: Option<DateTime<Utc>>,
    candidates: Vec<String>,
    status: String,
    payment_id: Option<String>,
    attributed_at: Option<DateTime<Utc>>,
}

impl UnattributedRow {
    fn from_domain(t: &UnattributedTransfer) -> Result<Self, Error> {
        let l = &t.logged;
        Ok(Self {
            id: t.id.to_string(),
            merchant_id: t.scope.merchant_id.to_string(),
            mode: t.scope.mode.as_str().to_owned(),
            chain_id: chain(t.chain_id)?,
            transaction_hash: l.tx_hash.as_str().to_owned(),
            log_index: log_index(l.transfer.log_index)?,
            block_number: block(l.block.number)?,
            block_hash: l.block.hash.clone(),
            currency: t.token.symbol().to_owned(),
            token_contract: l.transfer.token_contract.to_string(),
            from_address: l.transfer.from.to_string(),
            to_address: l.transfer.to.to_string(),
            amount: l.transfer.amount.as_bigdecimal().clone(),
            reason: t.reason.as_str().to_owned(),
            detected_at: t.detected_at,
            block_time: Some(l.block_time),
            candidates: t.candidates.iter().map(ToString::to_string).collect(),
            status: t.status.as_str().to_owned(),
            payment_id: t.payment_id.as_ref().map(ToString::to_string),
            attributed_at: t.attributed_at,
        })
    }

    pub(crate) fn into_domain(self) -> Result<UnattributedTransfer, Error> {
        let address = |text: String| WalletAddress::from_trusted(text);
        Ok(UnattributedTransfer {
            id: UnattributedTransferId::from_trusted(self.id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            chain_id: u64::try_from(self.chain_id).map_err(|_| corrupt("chain id"))?,
            logged: LoggedTransfer {
                tx_hash: TxHash::from_trusted(self.transaction_hash),
                block: BlockRef {
                    number: u64::try_from(self.block_number).map_err(|_| corrupt("block number"))?,
                    hash: self.block_hash,
                },
                // Recorded before block times were: the time it was found.
                block_time: self.block_time.unwrap_or(self.detected_at),
                transfer: TokenTransfer {
                    log_index: u64::try_from(self.log_index).map_err(|_| corrupt("log index"))?,
                    token_contract: address(self.token_contract),
                    from: address(self.from_address),
                    to: address(self.to_address),
                    amount: numeric(self.amount)?,
                    authorization: None,
                },
            },
            token: Token::parse(&self.currency).ok_or_else(|| corrupt("currency"))?,
            reason: UnattributedReason::parse(&self.reason).ok_or_else(|| corrupt("reason"))?,
            candidates: self.candidates.into_iter().map(CheckoutSessionId::from_trusted).collect(),
            detected_at: self.detected_at,
            status: UnattributedStatus::parse(&self.status).ok_or_else(|| corrupt("unattributed status"))?,
            payment_id: self.payment_id.map(PaymentId::from_trusted),
            attributed_at: self.attributed_at,
        })
    }
}

#[async_trait]
impl FollowerStore for PgStore {
    async fn scan_cursor(&self, chain_id: u64) -> Result<Option<u64>, Error> {
        let mut conn = self.conn().await?;
        let next: Option<i64> = chain_cursors::table
            .find(chain(chain_id)?)
            .select(chain_cursors::next_block)
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        next.map(|n| u64::try_from(n).map_err(|_| corrupt("cursor"))).transpose()
    }

    async fn move_cursor(&self, chain_id: u64, from: Option<u64>, to: u64) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let (id, to) = (chain(chain_id)?, block(to)?);
        let moved = match from {
            None => diesel::insert_into(chain_cursors::table)
                .values((chain_cursors::chain_id.eq(id), chain_cursors::next_block.eq(to)))
                .on_conflict_do_nothing()
                .execute(&mut conn)
                .await
                .map_err(db)?,
            Some(from) => {
                diesel::update(chain_cursors::table.find(id).filter(chain_cursors::next_block.eq(block(from)?)))
                    .set((chain_cursors::next_block.eq(to), chain_cursors::held_since.eq(None::<DateTime<Utc>>)))
                    .execute(&mut conn)
                    .await
                    .map_err(db)?
            }
        };
        Ok(moved == 1)
    }

    async fn hold_cursor(&self, chain_id: u64, from: u64, at: DateTime<Utc>) -> Result<DateTime<Utc>, Error> {
        let mut conn = self.conn().await?;
        let held = chain_cursors::table.find(chain(chain_id)?).filter(chain_cursors::next_block.eq(block(from)?));
        let since: Option<Option<DateTime<Utc>>> = diesel::update(held)
            .set(
                chain_cursors::held_since.eq(diesel::dsl::sql::<
                    diesel::sql_types::Nullable<diesel::sql_types::Timestamptz>,
                >("coalesce(held_since, ")
                .bind::<diesel::sql_types::Timestamptz, _>(at)
                .sql(")")),
            )
            .returning(chain_cursors::held_since)
            .get_result(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        // Moved meanwhile by another worker: nothing is held.
        Ok(since.flatten().unwrap_or(at))
    }

    async fn queue_recheck(&self, chain_id: u64, from: u64, to: u64, due: DateTime<Utc>) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        diesel::insert_into(chain_rechecks::table)
            .values((
                chain_rechecks::chain_id.eq(chain(chain_id)?),
                chain_rechecks::from_block.eq(block(from)?),
                chain_rechecks::to_block.eq(block(to)?),
                chain_rechecks::due_at.eq(due),
            ))
            .on_conflict_do_nothing()
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn claim_rechecks(&self, chain_id: u64, now: DateTime<Utc>, batch: Batch) -> Result<Vec<(u64, u64)>, Error> {
        let Batch { limit, lease_seconds } = batch;
        let mut conn = self.conn().await?;
        let rows: Vec<RecheckRow> = diesel::sql_query(
            "UPDATE chain_rechecks SET lease_until = $2 + make_interval(secs => $4) \
             WHERE (chain_id, from_block) IN ( \
               SELECT chain_id, from_block FROM chain_rechecks \
               WHERE chain_id = $1 AND due_at <= $2 AND (lease_until IS NULL OR lease_until <= $2) \
               ORDER BY due_at LIMIT $3 FOR UPDATE SKIP LOCKED) \
             RETURNING from_block, to_block",
        )
        .bind::<diesel::sql_types::BigInt, _>(chain(chain_id)?)
        .bind::<diesel::sql_types::Timestamptz, _>(now)
        .bind::<diesel::sql_types::BigInt, _>(i64::from(limit))
        .bind::<diesel::sql_types::Double, _>(f64::from(lease_seconds))
        .load(&mut conn)
        .await
        .map_err(db)?;
        let mut ranges = rows
            .into_iter()
            .map(|r| {
                Ok((
                    u64::try_from(r.from_block).map_err(|_| corrupt("block"))?,
                    u64::try_from(r.to_block).map_err(|_| corrupt("block"))?,
                ))
            })
            .collect::<Result<Vec<_>, Error>>()?;
        ranges.sort_unstable();
        Ok(ranges)
    }

    async fn finish_recheck(&self, chain_id: u64, from: u64) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        diesel::delete(chain_rechecks::table.find((chain(chain_id)?, block(from)?)))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn rechecks_pending(&self, chain_id: u64) -> Result<u64, Error> {
        let mut conn = self.conn().await?;
        let n: i64 = chain_rechecks::table
            .filter(chain_rechecks::chain_id.eq(chain(chain_id)?))
            .count()
            .get_result(&mut conn)
            .await
            .map_err(db)?;
        Ok(u64::try_from(n).unwrap_or(0))
    }

    async fn log_seen(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let (id, tx, index) = (chain(chain_id)?, logged.tx_hash.as_str(), log_index(logged.transfer.log_index)?);
        let credited = credited_log(id, tx, index);
        let deferred = deferred_transfers::table
            .filter(deferred_transfers::chain_id.eq(id))
            .filter(deferred_transfers::transaction_hash.eq(tx))
            .filter(deferred_transfers::log_index.eq(index));
        let claimed = live_payments_of(id, tx).filter(payments::claimed_log.eq(index));
        let recorded =
            u::table.filter(u::chain_id.eq(id)).filter(u::transaction_hash.eq(tx)).filter(u::log_index.eq(index));
        let (a, b, c, d): (bool, bool, bool, bool) = diesel::select((
            diesel::dsl::exists(credited),
            diesel::dsl::exists(deferred),
            diesel::dsl::exists(claimed),
            diesel::dsl::exists(recorded),
        ))
        .get_result(&mut conn)
        .await
        .map_err(db)?;
        Ok(a || b || c || d)
    }

    async fn live_settlement_wallets(&self) -> Result<Vec<WalletAddress>, Error> {
        let mut conn = self.conn().await?;
        let mut wallets: Vec<String> = merchants::table
            .filter(merchants::live_wallet.is_not_null())
            .filter(merchants::status.eq("active"))
            .select(merchants::live_wallet.assume_not_null())
            .distinct()
            .load(&mut conn)
            .await
            .map_err(db)?;
        let of_checkouts: Vec<String> = watched_checkouts()
            .select(checkout_sessions::settlement_wallet)
            .distinct()
            .load(&mut conn)
            .await
            .map_err(db)?;
        wallets.extend(of_checkouts);
        wallets.sort();
        wallets.dedup();
        Ok(wallets.into_iter().map(WalletAddress::from_trusted).collect())
    }

    async fn oldest_watched_checkout(&self) -> Result<Option<DateTime<Utc>>, Error> {
        watched_checkouts()
            .select(diesel::dsl::min(checkout_sessions::created_at))
            .first(&mut *self.conn().await?)
            .await
            .map_err(db)
    }

    async fn merchants_with_wallet(&self, wallet: &WalletAddress) -> Result<Vec<MerchantId>, Error> {
        let mut conn = self.conn().await?;
        let mut ids: Vec<String> = merchants::table
            .filter(merchants::live_wallet.eq(wallet.as_str()))
            .select(merchants::id)
            .load(&mut conn)
            .await
            .map_err(db)?;
        let of_checkouts: Vec<String> = watched_checkouts()
            .filter(checkout_sessions::settlement_wallet.eq(wallet.as_str()))
            .select(checkout_sessions::merchant_id)
            .distinct()
            .load(&mut conn)
            .await
            .map_err(db)?;
        ids.extend(of_checkouts);
        ids.sort();
        ids.dedup();
        Ok(ids.into_iter().map(MerchantId::from_trusted).collect())
    }

    async fn log_claim(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<LogClaim, Error> {
        let mut conn = self.conn().await?;
        let (id, tx, index) = (chain(chain_id)?, logged.tx_hash.as_str(), log_index(logged.transfer.log_index)?);
        let credited = credited_log(id, tx, index);
        // Credited before logs were recorded: the whole transaction counts as credited.
        let credited_whole =
            live_payments_of(id, tx).filter(payments::status.eq_any(CREDITED)).filter(payments::logs.is_null());
        let (once, whole): (bool, bool) =
            diesel::select((diesel::dsl::exists(credited), diesel::dsl::exists(credited_whole)))
                .get_result(&mut conn)
                .await
                .map_err(db)?;
        if once || whole {
            return Ok(LogClaim::Credited);
        }
        let t = &logged.transfer;
        let in_flight = live_payments_of(id, tx)
            .filter(payments::status.eq_any(IN_FLIGHT))
            .filter(payments::settlement_wallet.eq(t.to.as_str()))
            .filter(payments::token_contract.eq(t.token_contract.as_str()))
            .filter(payments::claimed_log.is_null().or(payments::claimed_log.eq(index)));
        let flying: Vec<String> =
            in_flight.select(payments::checkout_session_id).distinct().load(&mut conn).await.map_err(db)?;
        Ok(if flying.is_empty() {
            LogClaim::Free
        } else {
            LogClaim::InFlight(flying.into_iter().map(CheckoutSessionId::from_trusted).collect())
        })
    }

    async fn defer_transfer(&self, chain_id: u64, logged: &LoggedTransfer) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        diesel::insert_into(deferred_transfers::table)
            .values(&DeferredRow::from_domain(chain_id, logged)?)
            .on_conflict_do_nothing()
            .execute(&mut conn)
            .await
            .map_err(db)?;
        Ok(())
    }

    async fn deferred_transfers(&self, chain_id: u64, limit: u32) -> Result<Vec<LoggedTransfer>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<DeferredRow> = deferred_transfers::table
            .filter(deferred_transfers::chain_id.eq(chain(chain_id)?))
            .order((deferred_transfers::deferred_at.asc(), deferred_transfers::block_number.asc()))
            .limit(i64::from(limit))
            .select(DeferredRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(DeferredRow::into_domain).collect()
    }

    async fn forget_deferred(&self, chain_id: u64, tx: &TxHash, index: u64) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let d = deferred_transfers::table
            .filter(deferred_transfers::chain_id.eq(chain(chain_id)?))
            .filter(deferred_transfers::transaction_hash.eq(tx.as_str()))
            .filter(deferred_transfers::log_index.eq(log_index(index)?));
        diesel::delete(d).execute(&mut conn).await.map_err(db)?;
        Ok(())
    }

    async fn record_unattributed(&self, transfer: &UnattributedTransfer, event: &Event) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let row = UnattributedRow::from_domain(transfer)?;
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let inserted = diesel::insert_into(u::table).values(&row).on_conflict_do_nothing().execute(conn).await?;
            let event = if inserted == 1 {
                event.clone()
            } else {
                // Recorded before: a record still open takes a new reason or new candidates (a
                // report came since), told again with the record's own id.
                let existing = u::table
                    .filter(u::merchant_id.eq(&row.merchant_id))
                    .filter(u::chain_id.eq(row.chain_id))
                    .filter(u::transaction_hash.eq(&row.transaction_hash))
                    .filter(u::log_index.eq(row.log_index))
                    .filter(u::status.eq(UnattributedStatus::Open.as_str()))
                    .filter(u::reason.ne(&row.reason).or(u::candidates.ne(&row.candidates)));
                let changed: Option<String> = diesel::update(existing)
                    .set((u::reason.eq(&row.reason), u::candidates.eq(&row.candidates)))
                    .returning(u::id)
                    .get_result(conn)
                    .await
                    .optional()?;
                let Some(id) = changed else { return Ok(false) };
                let updated = UnattributedTransfer { id: UnattributedTransferId::from_trusted(id), ..transfer.clone() };
                Event { data: updated.event_data(), ..event.clone() }
            };
            diesel::insert_into(crate::schema::events::table)
                .values(&crate::events::rows(std::slice::from_ref(&event)))
                .execute(conn)
                .await?;
            Ok(true)
        })
        .await
        .map_err(db)
    }

    async fn unattributed_about(
        &self,
        scope: &Scope,
        session: Option<CheckoutSessionId>,
        tx: Option<TxHash>,
    ) -> Result<Vec<UnattributedTransfer>, Error> {
        let mut conn = self.conn().await?;
        let mut query = u::table
            .filter(u::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(u::mode.eq(scope.mode.as_str()))
            .filter(u::status.eq(UnattributedStatus::Open.as_str()))
            .select(UnattributedRow::as_select())
            .order(u::seq.desc())
            .limit(20)
            .into_boxed();
        if let Some(session) = session {
            query = query.filter(u::candidates.contains(vec![session.to_string()]));
        }
        if let Some(tx) = tx {
            query = query.filter(u::transaction_hash.eq(tx.as_str().to_owned()));
        }
        let rows: Vec<UnattributedRow> = query.load(&mut conn).await.map_err(db)?;
        rows.into_iter().map(UnattributedRow::into_domain).collect()
    }

    async fn get_unattributed(
        &self,
        scope: &Scope,
        id: &UnattributedTransferId,
    ) -> Result<UnattributedTransfer, Error> {
        let mut conn = self.conn().await?;
        let row: Option<UnattributedRow> = u::table
            .filter(u::id.eq(id.as_str()))
            .filter(u::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(u::mode.eq(scope.mode.as_str()))
            .select(UnattributedRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        row.ok_or(Error::NotFound(Resource::UnattributedTransfer))?.into_domain()
    }

    async fn list_unattributed(
        &self,
        scope: &Scope,
        status: Option<UnattributedStatus>,
        page: &PageRequest,
    ) -> Result<Page<UnattributedTransfer>, Error> {
        let mut conn = self.conn().await?;
        let limit = usize::try_from(page.limit).unwrap_or(100);
        let mut query = u::table
            .filter(u::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(u::mode.eq(scope.mode.as_str()))
            .select(UnattributedRow::as_select())
            .order(u::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(status) = status {
            query = query.filter(u::status.eq(status.as_str()));
        }
        after_cursor!(&mut conn, query, page, u::seq, |cursor| [
            u::id.eq(cursor),
            u::merchant_id.eq(scope.merchant_id.as_str()),
            u::mode.eq(scope.mode.as_str())
        ]);
        let mut rows: Vec<UnattributedRow> = query.load(&mut conn).await.map_err(db)?;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let items = rows.into_iter().map(UnattributedRow::into_domain).collect::<Result<_, _>>()?;
        Ok(Page { items, has_more })
    }
}
