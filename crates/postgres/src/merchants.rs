//! Merchant rows.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::{AsyncConnection, RunQueryDsl};
use stablepay_domain::ids::MerchantId;
use stablepay_domain::merchant::{
    LiveSettlement, Logo, LogoImage, Merchant, MerchantProfile, MerchantStatus, Token, WalletAddress,
};
use stablepay_domain::ports::MerchantStore;
use stablepay_domain::{Error, Resource};

use crate::error::db;
use crate::pool::PgStore;
use crate::schema::{merchant_logos, merchants, test_clocks};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = merchants, check_for_backend(diesel::pg::Pg))]
pub(crate) struct MerchantRow {
    pub id: String,
    pub name: String,
    pub website_origin: Option<String>,
    pub status: String,
    pub live_wallet: Option<String>,
    pub live_token: Option<String>,
    pub live_activated_at: Option<DateTime<Utc>>,
    pub fee_basis_points: i32,
    pub invoice_prefix: String,
    pub created_at: DateTime<Utc>,
    pub live_unique_amounts: bool,
    pub legal_name: Option<String>,
    pub postal_address: Option<String>,
    pub tax_id: Option<String>,
    pub support_email: Option<String>,
    pub reply_to: Option<String>,
    pub logo_digest: Option<String>,
    pub logo_width: Option<i32>,
    pub logo_height: Option<i32>,
}

impl From<&Merchant> for MerchantRow {
    fn from(m: &Merchant) -> Self {
        Self {
            id: m.id.to_string(),
            name: m.name.clone(),
            website_origin: m.website_origin.clone(),
            status: m.status.as_str().to_owned(),
            live_wallet: m.live.as_ref().map(|l| l.wallet.to_string()),
            live_token: m.live.as_ref().map(|l| l.token.symbol().to_owned()),
            live_activated_at: m.live.as_ref().map(|l| l.activated_at),
            fee_basis_points: i32::try_from(m.fee_basis_points).unwrap_or(i32::MAX),
            invoice_prefix: m.invoice_prefix.clone(),
            created_at: m.created_at,
            live_unique_amounts: m.live.as_ref().is_some_and(|l| l.unique_amounts),
            legal_name: m.profile.legal_name.clone(),
            postal_address: m.profile.postal_address.clone(),
            tax_id: m.profile.tax_id.clone(),
            support_email: m.profile.support_email.clone(),
            reply_to: m.profile.reply_to.clone(),
            logo_digest: m.logo.as_ref().map(|l| l.digest.clone()),
            logo_width: m.logo.as_ref().map(|l| i32::try_from(l.width).unwrap_or(i32::MAX)),
            logo_height: m.logo.as_ref().map(|l| i32::try_from(l.height).unwrap_or(i32::MAX)),
        }
    }
}

impl TryFrom<MerchantRow> for Merchant {
    type Error = Error;

    fn try_from(row: MerchantRow) -> Result<Self, Error> {
        let corrupt = |what: &str| Error::Internal(format!("merchant {}: bad {what}", row.id));
        let live = match (&row.live_wallet, &row.live_token, row.live_activated_at) {
            (Some(wallet), Some(token), Some(at)) => Some(LiveSettlement {
                wallet: WalletAddress::from_trusted(wallet.clone()),
                token: Token::parse(token).ok_or_else(|| corrupt("live_token"))?,
                activated_at: at,
                unique_amounts: row.live_unique_amounts,
            }),
            _ => None,
        };
        let logo = match (row.logo_digest, row.logo_width, row.logo_height) {
            (Some(digest), Some(w), Some(h)) => Some(Logo {
                digest,
                width: u32::try_from(w).map_err(|_| corrupt("logo_width"))?,
                height: u32::try_from(h).map_err(|_| corrupt("logo_height"))?,
            }),
            _ => None,
        };
        Ok(Merchant {
            logo,
            status: MerchantStatus::parse(&row.status).ok_or_else(|| corrupt("status"))?,
            fee_basis_points: u32::try_from(row.fee_basis_points).map_err(|_| corrupt("fee"))?,
            id: MerchantId::from_trusted(row.id),
            name: row.name,
            website_origin: row.website_origin,
            live,
            invoice_prefix: row.invoice_prefix,
            created_at: row.created_at,
            profile: MerchantProfile {
                legal_name: row.legal_name,
                postal_address: row.postal_address,
                tax_id: row.tax_id,
                support_email: row.support_email,
                reply_to: row.reply_to,
            },
        })
    }
}

/// Inserts a merchant with its test clock and its invoice number sequences, inside the
/// caller's transaction.
pub(crate) async fn insert_merchant_in(
    conn: &mut diesel_async::AsyncPgConnection,
    merchant: &Merchant,
) -> Result<(), diesel::result::Error> {
    let row = MerchantRow::from(merchant);
    diesel::insert_into(merchants::table).values(&row).execute(conn).await?;
    diesel::insert_into(test_clocks::table)
        .values((test_clocks::merchant_id.eq(&row.id), test_clocks::offset_seconds.eq(0i64)))
        .execute(conn)
        .await?;
    // Its invoice number sequences, one per mode.
    diesel::sql_query("SELECT invoice_numbers.create_sequences($1)")
        .bind::<diesel::sql_types::Text, _>(&row.id)
        .execute(conn)
        .await?;
    Ok(())
}

#[async_trait]
impl MerchantStore for PgStore {
    async fn insert_merchant(&self, merchant: &Merchant) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        conn.transaction(async |conn| insert_merchant_in(conn, merchant).await).await.map_err(db)
    }

    async fn get_merchant(&self, id: &MerchantId) -> Result<Merchant, Error> {
        let mut conn = self.conn().await?;
        let row: Option<MerchantRow> = merchants::table
            .find(id.as_str())
            .select(MerchantRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        row.ok_or(Error::NotFound(Resource::Merchant))?.try_into()
    }

    async fn set_live_settlement(&self, id: &MerchantId, live: &LiveSettlement) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let n = diesel::update(merchants::table.find(id.as_str()))
            .set((
                merchants::live_wallet.eq(live.wallet.as_str()),
                merchants::live_token.eq(live.token.symbol()),
                merchants::live_activated_at.eq(live.activated_at),
                merchants::live_unique_amounts.eq(live.unique_amounts),
                // An owner's pending request is settled by the activation.
                merchants::requested_wallet.eq(None::<String>),
                merchants::requested_token.eq(None::<String>),
                merchants::activation_requested_at.eq(None::<chrono::DateTime<chrono::Utc>>),
            ))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        announce_found(self, &mut conn, n, id).await
    }

    async fn set_profile(&self, id: &MerchantId, profile: &MerchantProfile) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let n = diesel::update(merchants::table.find(id.as_str()))
            .set((
                merchants::legal_name.eq(&profile.legal_name),
                merchants::postal_address.eq(&profile.postal_address),
                merchants::tax_id.eq(&profile.tax_id),
                merchants::support_email.eq(&profile.support_email),
                merchants::reply_to.eq(&profile.reply_to),
            ))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        announce_found(self, &mut conn, n, id).await
    }

    async fn set_logo(&self, id: &MerchantId, logo: Option<LogoImage>) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let found = conn
            .transaction(async |conn| {
                let old: Option<Option<String>> = merchants::table
                    .find(id.as_str())
                    .select(merchants::logo_digest)
                    .for_update()
                    .first(conn)
                    .await
                    .optional()?;
                let Some(old) = old else { return Ok(false) };
                if let Some(image) = &logo {
                    diesel::insert_into(merchant_logos::table)
                        .values((merchant_logos::digest.eq(&image.logo.digest), merchant_logos::png.eq(&image.png)))
                        .on_conflict_do_nothing()
                        .execute(conn)
                        .await?;
                }
                let side = |v: u32| i32::try_from(v).unwrap_or(i32::MAX);
                diesel::update(merchants::table.find(id.as_str()))
                    .set((
                        merchants::logo_digest.eq(logo.as_ref().map(|i| &i.logo.digest)),
                        merchants::logo_width.eq(logo.as_ref().map(|i| side(i.logo.width))),
                        merchants::logo_height.eq(logo.as_ref().map(|i| side(i.logo.height))),
                    ))
                    .execute(conn)
                    .await?;
                // The image the merchant used before goes when no merchant uses it any more.
                if let Some(old) = old.filter(|o| logo.as_ref().is_none_or(|i| &i.logo.digest != o)) {
                    let users: i64 =
                        merchants::table.filter(merchants::logo_digest.eq(&old)).count().get_result(conn).await?;
                    if users == 0 {
                        diesel::delete(merchant_logos::table.find(&old)).execute(conn).await?;
                    }
                }
                Ok::<_, diesel::result::Error>(true)
            })
            .await
            .map_err(db)?;
        announce_found(self, &mut conn, usize::from(found), id).await
    }

    async fn logo_png(&self, digest: &str) -> Result<Option<Vec<u8>>, Error> {
        let mut conn = self.conn().await?;
        merchant_logos::table.find(digest).select(merchant_logos::png).first(&mut conn).await.optional().map_err(db)
    }

    async fn list_merchants(&self) -> Result<Vec<Merchant>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<MerchantRow> = merchants::table
            .order((merchants::created_at.asc(), merchants::id.asc()))
            .select(MerchantRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(Merchant::try_from).collect()
    }

    async fn set_status(&self, id: &MerchantId, status: MerchantStatus) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let n = diesel::update(merchants::table.find(id.as_str()))
            .set(merchants::status.eq(status.as_str()))
            .execute(&mut conn)
            .await
            .map_err(db)?;
        announce_found(self, &mut conn, n, id).await
    }
}

/// Announces a change of merchant `id` (what its keys' lookups answer) when the update found
/// it (`n` rows), NOT_FOUND otherwise.
async fn announce_found(
    store: &PgStore,
    conn: &mut diesel_async::AsyncPgConnection,
    n: usize,
    id: &MerchantId,
) -> Result<(), Error> {
    if n == 0 {
        return Err(Error::NotFound(Resource::Merchant));
    }
    crate::keycache::announce(store, conn, id.as_str()).await
}
