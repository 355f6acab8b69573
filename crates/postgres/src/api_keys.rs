//! API key rows. Only digests are stored.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use diesel_async::RunQueryDsl;
use stablepay_domain::api_key::{ApiKey, KeyLookup, KeyType, Permissions};
use stablepay_domain::ids::{ApiKeyId, MerchantId};
use stablepay_domain::ports::ApiKeyStore;
use stablepay_domain::{Error, Mode, Resource};

use crate::error::db;
use crate::merchants::MerchantRow;
use crate::pool::PgStore;
use crate::schema::{api_keys, merchants, test_clocks};

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = api_keys, check_for_backend(diesel::pg::Pg))]
struct ApiKeyRow {
    id: String,
    merchant_id: String,
    mode: String,
    key_type: String,
    digest: Vec<u8>,
    display_prefix: String,
    created_at: DateTime<Utc>,
    expires_at: Option<DateTime<Utc>>,
    revoked_at: Option<DateTime<Utc>>,
    last_used_at: Option<DateTime<Utc>>,
    permissions: Option<String>,
}

impl TryFrom<ApiKeyRow> for ApiKey {
    type Error = Error;

    fn try_from(row: ApiKeyRow) -> Result<Self, Error> {
        let corrupt = || Error::Internal(format!("api key {} is corrupt", row.id));
        let permissions = row.permissions.as_deref().map(Permissions::parse).transpose().map_err(|_| corrupt())?;
        Ok(ApiKey {
            permissions,
            mode: Mode::parse(&row.mode).ok_or_else(corrupt)?,
            key_type: KeyType::parse(&row.key_type).ok_or_else(corrupt)?,
            digest: row.digest.as_slice().try_into().map_err(|_| corrupt())?,
            id: ApiKeyId::from_trusted(row.id),
            merchant_id: MerchantId::from_trusted(row.merchant_id),
            display_prefix: row.display_prefix,
            created_at: row.created_at,
            expires_at: row.expires_at,
            revoked_at: row.revoked_at,
            last_used_at: row.last_used_at,
        })
    }
}

#[async_trait]
impl ApiKeyStore for PgStore {
    async fn insert_key(&self, key: &ApiKey) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let row = ApiKeyRow {
            id: key.id.to_string(),
            merchant_id: key.merchant_id.to_string(),
            mode: key.mode.as_str().to_owned(),
            key_type: key.key_type.as_str().to_owned(),
            digest: key.digest.to_vec(),
            display_prefix: key.display_prefix.clone(),
            created_at: key.created_at,
            expires_at: key.expires_at,
            revoked_at: key.revoked_at,
            last_used_at: key.last_used_at,
            permissions: key.permissions.as_ref().map(ToString::to_string),
        };
        diesel::insert_into(api_keys::table).values(&row).execute(&mut conn).await.map_err(|e| {
            if matches!(
                e,
                diesel::result::Error::DatabaseError(diesel::result::DatabaseErrorKind::ForeignKeyViolation, _)
            ) {
                Error::NotFound(Resource::Merchant)
            } else {
                db(e)
            }
        })?;
        Ok(())
    }

    async fn find_key_by_digest(&self, digest: [u8; 32]) -> Result<Option<KeyLookup>, Error> {
        let mut conn = self.conn().await?;
        let found: Option<(ApiKeyRow, MerchantRow, i64)> = api_keys::table
            .inner_join(merchants::table)
            .inner_join(test_clocks::table.on(test_clocks::merchant_id.eq(api_keys::merchant_id)))
            .filter(api_keys::digest.eq(digest.as_slice()))
            .select((ApiKeyRow::as_select(), MerchantRow::as_select(), test_clocks::offset_seconds))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        found
            .map(|(row, merchant, offset)| {
                Ok(KeyLookup {
                    merchant: merchant.try_into()?,
                    key: row.try_into()?,
                    test_clock_offset_seconds: offset,
                })
            })
            .transpose()
    }

    async fn record_key_use(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        // Never moves back: of two replicas recording at once, the later time stays.
        diesel::update(
            api_keys::table
                .find(id.as_str())
                .filter(api_keys::last_used_at.is_null().or(api_keys::last_used_at.lt(at))),
        )
        .set(api_keys::last_used_at.eq(at))
        .execute(&mut conn)
        .await
        .map_err(db)?;
        Ok(())
    }

    async fn list_keys(&self, merchant_id: &MerchantId) -> Result<Vec<ApiKey>, Error> {
        let mut conn = self.conn().await?;
        let rows: Vec<ApiKeyRow> = api_keys::table
            .filter(api_keys::merchant_id.eq(merchant_id.as_str()))
            .order((api_keys::created_at.asc(), api_keys::id.asc()))
            .select(ApiKeyRow::as_select())
            .load(&mut conn)
            .await
            .map_err(db)?;
        rows.into_iter().map(ApiKey::try_from).collect()
    }

    async fn revoke_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error> {
        let mut conn = self.conn().await?;
        let found: Option<(String, Option<DateTime<Utc>>)> = api_keys::table
            .find(id.as_str())
            .select((api_keys::merchant_id, api_keys::revoked_at))
            .first(&mut conn)
            .await
            .optional()
            .map_err(db)?;
        match found {
            None => Err(Error::NotFound(Resource::ApiKey)),
            Some((_, Some(_))) => Ok(()),
            Some((merchant, None)) => {
                diesel::update(api_keys::table.find(id.as_str()))
                    .set(api_keys::revoked_at.eq(at))
                    .execute(&mut conn)
                    .await
                    .map_err(db)?;
                // Every process drops its cached lookups of this merchant's keys now.
                crate::keycache::announce(self, &mut conn, &merchant).await?;
                Ok(())
            }
        }
    }
}
