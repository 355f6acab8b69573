//! The merchant store.

use async_trait::async_trait;

use crate::error::Error;
use crate::ids::MerchantId;
use crate::merchant::logo::LogoImage;
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
    /// Replaces the merchant's logo (`None`: removes it); an image no merchant uses any more
    /// is deleted. Errors: `NotFound(Merchant)`.
    async fn set_logo(&self, id: &MerchantId, logo: Option<LogoImage>) -> Result<(), Error>;
    /// The PNG file of the logo named `digest`, whichever merchant set it (logos are public:
    /// every hosted page of the merchant shows it), or `None`.
    async fn logo_png(&self, digest: &str) -> Result<Option<Vec<u8>>, Error>;
    /// The logo of `merchant` with its image, or `None` when it has none.
    async fn logo_image(&self, merchant: &Merchant) -> Result<Option<LogoImage>, Error> {
        let Some(logo) = merchant.logo.clone() else { return Ok(None) };
        Ok(self.logo_png(&logo.digest).await?.map(|png| LogoImage { logo, png }))
    }
    /// Errors: `NotFound(Merchant)`.
    async fn set_status(&self, id: &MerchantId, status: MerchantStatus) -> Result<(), Error>;
    /// Every merchant, oldest first (an operator's list).
    async fn list_merchants(&self) -> Result<Vec<Merchant>, Error>;
}
