//! The chain follower's store: its scan cursor, the wallets and open checkouts it matches
//! transfers against, and the unattributed transfers it records (with their events).

use async_trait::async_trait;
use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::chain::{LoggedTransfer, OpenCheckout, TokenTransfer, UnattributedReason, UnattributedTransfer};
use stablepay_domain::event::Event;
use stablepay_domain::ids::{CheckoutSessionId, MerchantId, UnattributedTransferId};
use stablepay_domain::invoice::payment::{BlockRef, TxHash};
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::page::{Page, PageRequest};
use stablepay_domain::ports::FollowerStore;
use stablepay_domain::{Error, Mode, Scope};

use crate::codec::numeric;
use crate::error::db;
use crate::pool::PgStore;
use crate::rows::{corrupt, mode};
use crate::schema::{chain_cursors, checkout_sessions, merchants, payments, unattributed_transfers as u};

fn chain(id: u64) -> Result<i64, Error> {
    i64::try_from(id).map_err(|_| corrupt("chain id"))
}

fn block(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| corrupt("block number"))
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = u, check_for_backend(diesel::pg::Pg))]
struct UnattributedRow {
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
            log_index: i64::try_from(l.log_index).map_err(|_| corrupt("log index"))?,
            block_number: block(l.block.number)?,
            block_hash: l.block.hash.clone(),
            currency: t.token.symbol().to_owned(),
            token_contract: l.transfer.token_contract.to_string(),
            from_address: l.transfer.from.to_string(),
            to_address: l.transfer.to.to_string(),
            amount: l.transfer.amount.as_bigdecimal().clone(),
            reason: t.reason.as_str().to_owned(),
            detected_at: t.detected_at,
        })
    }

    fn into_domain(self) -> Result<UnattributedTransfer, Error> {
        let address = |text: String| WalletAddress::from_trusted(text);
        Ok(UnattributedTransfer {
            id: UnattributedTransferId::from_trusted(self.id),
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            chain_id: u64::try_from(self.chain_id).map_err(|_| corrupt("chain id"))?,
            logged: LoggedTransfer {
                tx_hash: TxHash::from_trusted(self.transaction_hash),
                log_index: u64::try_from(self.log_index).map_err(|_| corrupt("log index"))?,
                block: BlockRef {
                    number: u64::try_from(self.block_number).map_err(|_| corrupt("block number"))?,
                    hash: self.block_hash,
                },
                transfer: TokenTransfer {
                    token_contract: address(self.token_contract),
                    from: address(self.from_address),
                    to: address(self.to_address),
                    amount: numeric(self.amount)?,
                },
            },
            token: Token::parse(&self.currency).ok_or_else(|| corrupt("currency"))?,
            reason: UnattributedReason::parse(&self.reason).ok_or_else(|| corrupt("reason"))?,
            detected_at: self.detected_at,
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
                    .set(chain_cursors::next_block.eq(to))
                    .execute(&mut conn)
                    .await
                    .map_err(db)?
            }
        };
        Ok(moved == 1)
    }

    async fn live_settlement_wallets(&self) -> Result<Vec<WalletAddress>, Error> {
        let mut conn = self.conn().await?;
        let wallets: Vec<Option<String>> = merchants::table
            .filter(merchants::live_wallet.is_not_null())
            .filter(merchants::status.eq("active"))
            .select(merchants::live_wallet)
            .distinct()
            .load(&mut conn)
            .await
            .map_err(db)?;
        Ok(wallets.into_iter().flatten().map(WalletAddress::from_trusted).collect())
    }

    async fn merchants_with_wallet(&self, wallet: &WalletAddress) -> Result<Vec<MerchantId>, Error> {
        let mut conn = self.conn().await?;
        let ids: Vec<String> = merchants::table
            .filter(merchants::live_wallet.eq(wallet.as_str()))
            .select(merchants::id)
            .load(&mut conn)
            .await
            .map_err(db)?;
        Ok(ids.into_iter().map(MerchantId::from_trusted).collect())
    }

    async fn open_checkouts(
        &self,
        wallet: &WalletAddress,
        token_contract: &WalletAddress,
        at: DateTime<Utc>,
    ) -> Result<Vec<OpenCheckout>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<(String, String, String, BigDecimal)> = checkout_sessions::table
            .filter(checkout_sessions::mode.eq(Mode::Live.as_str()))
            .filter(checkout_sessions::status.eq("pending"))
            .filter(checkout_sessions::settlement_wallet.eq(wallet.as_str()))
            .filter(checkout_sessions::token_contract.eq(token_contract.as_str()))
            .filter(checkout_sessions::expires_at.gt(at))
            .select((
                checkout_sessions::merchant_id,
                checkout_sessions::mode,
                checkout_sessions::id,
                checkout_sessions::amount_due,
            ))
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter()
            .map(|(merchant, m, id, amount)| {
                Ok(OpenCheckout {
                    scope: Scope::new(MerchantId::from_trusted(merchant), mode(&m)?),
                    session_id: CheckoutSessionId::from_trusted(id),
                    amount_due: numeric(amount)?,
                })
            })
            .collect()
    }

    async fn live_payment_exists(&self, chain_id: u64, tx: &TxHash) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let query = payments::table
            .filter(payments::mode.eq(Mode::Live.as_str()))
            .filter(payments::chain_id.eq(chain(chain_id)?))
            .filter(payments::transaction_hash.eq(tx.as_str()));
        diesel::select(diesel::dsl::exists(query)).get_result(&mut conn).await.map_err(db)
    }

    async fn record_unattributed(&self, transfer: &UnattributedTransfer, event: &Event) -> Result<bool, Error> {
        let mut conn = self.conn().await?;
        let row = UnattributedRow::from_domain(transfer)?;
        let events = std::slice::from_ref(event);
        conn.transaction::<_, diesel::result::Error, _>(async |conn| {
            let inserted = diesel::insert_into(u::table).values(&row).on_conflict_do_nothing().execute(conn).await?;
            if inserted == 1 {
                diesel::insert_into(crate::schema::events::table)
                    .values(&crate::events::rows(events))
                    .execute(conn)
                    .await?;
            }
            Ok(inserted == 1)
        })
        .await
        .map_err(db)
    }

    async fn list_unattributed(&self, scope: &Scope, page: &PageRequest) -> Result<Page<UnattributedTransfer>, Error> {
        let mut conn = self.conn().await?;
        let limit = usize::try_from(page.limit).unwrap_or(100);
        let mut query = u::table
            .filter(u::merchant_id.eq(scope.merchant_id.as_str()))
            .filter(u::mode.eq(scope.mode.as_str()))
            .select(UnattributedRow::as_select())
            .order(u::seq.desc())
            .limit(i64::from(page.limit) + 1)
            .into_boxed();
        if let Some(cursor) = &page.starting_after {
            let seq: Option<i64> = u::table
                .filter(u::id.eq(cursor))
                .filter(u::merchant_id.eq(scope.merchant_id.as_str()))
                .filter(u::mode.eq(scope.mode.as_str()))
                .select(u::seq)
                .first(&mut conn)
                .await
                .optional()
                .map_err(db)?;
            query = query.filter(u::seq.lt(seq.ok_or(Error::InvalidCursor)?));
        }
        let mut rows: Vec<UnattributedRow> = query.load(&mut conn).await.map_err(db)?;
        let has_more = rows.len() > limit;
        rows.truncate(limit);
        let items = rows.into_iter().map(UnattributedRow::into_domain).collect::<Result<_, _>>()?;
        Ok(Page { items, has_more })
    }
}
