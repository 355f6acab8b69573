//! The API key store.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::api_key::model::{ApiKey, KeyLookup};
use crate::error::Error;
use crate::ids::{ApiKeyId, MerchantId};

/// API key records.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ApiKeyStore: Send + Sync {
    /// Inserts a key record for `key.merchant_id`. Errors: `NotFound(Merchant)`.
    async fn insert_key(&self, key: &ApiKey) -> Result<(), Error>;
    /// The key with this digest and its merchant's status, if any.
    async fn find_key_by_digest(&self, digest: [u8; 32]) -> Result<Option<KeyLookup>, Error>;
    /// Marks the key revoked at `at` (idempotent). Errors: `NotFound(ApiKey)`.
    async fn revoke_key(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error>;
    /// Records that the key was used at `at` (unless a later use is already recorded).
    async fn record_key_use(&self, id: &ApiKeyId, at: DateTime<Utc>) -> Result<(), Error>;
    /// The merchant's keys, oldest first.
    async fn list_keys(&self, merchant_id: &MerchantId) -> Result<Vec<ApiKey>, Error>;
}
