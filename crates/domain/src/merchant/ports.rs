//! The merchant store.

use async_trait::async_trait;

use crate::error::Error;
use crate::ids::MerchantId;
use crate::merchant::model::{LiveSettlement, Merchant, MerchantProfile, MerchantStatus};

/// Merchant accounts (operator level).
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait MerchantStore: Send + Sync {
    /// Inserts a new merchant. Errors: `Unavailable`, `Internal`.
    async fn insert_merchant(&self, merchant: &Merchant) -> Result<(), Error>;
    /// Errors: `NotFound(Merchant)` when it does not exist.
    async fn get_merchant(&self, id: &MerchantId) -> Result<Merchant, Error>;
    /// Sets the live settlement. Errors: `NotFound(Merchant)`.
    async fn set_live_settlement(&self, id: &MerchantId, live: &LiveSettlement) -> Result<(), Error>;
    /// Replaces the merchant's seller profile. Errors: `NotFound(Merchant)`.
    async fn set_profile(&self, id: &MerchantId, profile: &MerchantProfile) -> Result<(), Error>;
    /// Errors: `NotFound(Merchant)`.
    async fn set_status(&self, id: &MerchantId, status: MerchantStatus) -> Result<(), Error>;
    /// Every merchant, oldest first (an operator's list).
    async fn list_merchants(&self) -> Result<Vec<Merchant>, Error>;
}
