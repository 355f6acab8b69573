//! Operator use cases: merchants and API keys (used by the CLI and by admin tooling).

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::MerchantId;
use crate::merchant::logo::{Logo, LogoImage};
use crate::merchant::model::{
    LiveSettlement, MAX_POSTAL_ADDRESS_BYTES, MAX_PROFILE_FIELD_BYTES, Merchant, MerchantProfile, MerchantStatus,
    Token, UNIQUE_AMOUNTS_WHEN_FIRST_ACTIVATED, WalletAddress,
};
use crate::merchant::ports::MerchantStore;
use crate::url::HttpUrl;

/// Longest merchant name, in UTF-8 bytes.
pub const MAX_NAME_BYTES: usize = 200;

/// Optional settings of a new merchant.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MerchantOptions {
    /// Prefix of invoice numbers: 1-20 of `A-Z`, `0-9`, `-` (default `INV`).
    pub invoice_prefix: Option<String>,
    /// Platform fee in basis points, 0-10000 (default 0).
    pub fee_basis_points: Option<u32>,
}

/// Creates an active merchant with test mode ready (simulated settlement) and live mode not yet
/// activated. Errors: `Validation` on `name` (1-200 bytes), `website` (absolute http(s) URL),
/// `invoice_prefix` or `fee_basis_points`.
pub async fn create_merchant(
    store: &dyn MerchantStore,
    crypto: &dyn Crypto,
    now: DateTime<Utc>,
    name: &str,
    website: Option<&str>,
    options: MerchantOptions,
) -> Result<Merchant, Error> {
    let merchant = new_merchant(crypto, now, name, website, options)?;
    store.insert_merchant(&merchant).await?;
    Ok(merchant)
}

/// A new merchant as [`create_merchant`] makes it, checked but not stored (an open sign-up
/// stores it with its first owner). Errors: as [`create_merchant`]'s.
pub fn new_merchant(
    crypto: &dyn Crypto,
    now: DateTime<Utc>,
    name: &str,
    website: Option<&str>,
    options: MerchantOptions,
) -> Result<Merchant, Error> {
    let name = name.trim();
    if name.is_empty() || name.len() > MAX_NAME_BYTES {
        return Err(Error::validation("name", "name must be 1-200 bytes"));
    }
    crate::invoice::validate::check_one_line("name", name)?;
    let website_origin = website
        .map(|w| HttpUrl::parse(w).map(|u| u.origin().to_owned()))
        .transpose()
        .map_err(|e| Error::validation("website", e.to_string()))?;
    let invoice_prefix = options.invoice_prefix.unwrap_or_else(|| "INV".to_owned());
    let prefix_ok = (1..=20).contains(&invoice_prefix.len())
        && invoice_prefix.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'-');
    if !prefix_ok {
        return Err(Error::validation("invoice_prefix", "invoice prefix must be 1-20 of A-Z, 0-9 and -"));
    }
    let fee_basis_points = options.fee_basis_points.unwrap_or(0);
    if fee_basis_points > 10_000 {
        return Err(Error::validation("fee_basis_points", "fee must be 0-10000 basis points"));
    }
    let merchant = Merchant {
        id: MerchantId::generate(crypto),
        name: name.to_owned(),
        website_origin,
        status: MerchantStatus::Active,
        live: None,
        fee_basis_points,
        invoice_prefix,
        created_at: now,
        profile: MerchantProfile::default(),
        logo: None,
    };
    Ok(merchant)
}

/// Activates live mode with a settlement wallet. Errors: `InvalidWalletAddress` on
/// `settlement_wallet`; `NotFound(Merchant)`; `AccountSuspended` for a suspended merchant
/// (unsuspend it first: activation is a review that a suspension puts on hold).
pub async fn activate_merchant(
    store: &dyn MerchantStore,
    now: DateTime<Utc>,
    id: &MerchantId,
    wallet: &str,
    token: Token,
) -> Result<LiveSettlement, Error> {
    let wallet = WalletAddress::parse(wallet)
        .map_err(|e| Error::InvalidWalletAddress { field: "settlement_wallet".into(), message: e.to_string() })?;
    let merchant = store.get_merchant(id).await?;
    if merchant.status == MerchantStatus::Suspended {
        return Err(Error::AccountSuspended);
    }
    // A new wallet or token keeps the merchant's unique-amount setting; a first activation
    // turns it on.
    let unique_amounts = merchant.live.map_or(UNIQUE_AMOUNTS_WHEN_FIRST_ACTIVATED, |l| l.unique_amounts);
    let live = LiveSettlement { wallet, token, activated_at: now, unique_amounts };
    store.set_live_settlement(id, &live).await?;
    Ok(live)
}

/// Replaces what `id`'s documents say about the seller (an empty text clears a field). Errors:
/// `Validation` naming the field (`legal_name` and `tax_id`: one line, at most 200 bytes;
/// `postal_address`: at most 500 bytes, line breaks allowed, no other control characters;
/// `support_email` and `reply_to`: an email address); `NotFound(Merchant)`.
pub async fn set_profile(
    store: &dyn MerchantStore,
    id: &MerchantId,
    profile: MerchantProfile,
) -> Result<MerchantProfile, Error> {
    use crate::invoice::validate::{check_email, check_len, check_one_line};
    let clean = |v: Option<String>| v.map(|v| v.trim().to_owned()).filter(|v| !v.is_empty());
    let profile = MerchantProfile {
        legal_name: clean(profile.legal_name),
        postal_address: clean(profile.postal_address).map(|a| a.replace("\r\n", "\n")),
        tax_id: clean(profile.tax_id),
        support_email: clean(profile.support_email),
        reply_to: clean(profile.reply_to),
    };
    for (field, value) in [("legal_name", &profile.legal_name), ("tax_id", &profile.tax_id)] {
        if let Some(v) = value {
            check_len(field, v, 1, MAX_PROFILE_FIELD_BYTES)?;
            check_one_line(field, v)?;
        }
    }
    if let Some(a) = &profile.postal_address {
        check_len("postal_address", a, 1, MAX_POSTAL_ADDRESS_BYTES)?;
        for line in a.lines() {
            check_one_line("postal_address", line)?;
        }
    }
    for (field, value) in [("support_email", &profile.support_email), ("reply_to", &profile.reply_to)] {
        if let Some(v) = value {
            check_email(field, v)?;
        }
    }
    store.get_merchant(id).await?;
    store.set_profile(id, &profile).await?;
    Ok(profile)
}

/// Sets `id`'s logo to the PNG file `png` (checked by [`Logo::check`]), or removes it
/// (`None`). Answers the logo now set. Errors: `Validation` on `logo`; `NotFound(Merchant)`.
pub async fn set_logo(store: &dyn MerchantStore, id: &MerchantId, png: Option<Vec<u8>>) -> Result<Option<Logo>, Error> {
    let image = match png {
        Some(png) => Some(LogoImage { logo: Logo::check(&png)?, png }),
        None => None,
    };
    store.get_merchant(id).await?;
    let logo = image.as_ref().map(|i| i.logo.clone());
    store.set_logo(id, image).await?;
    Ok(logo)
}

/// Turns unique amounts on or off for a merchant's new live checkouts (see
/// [`LiveSettlement::unique_amounts`]); open checkouts keep what they ask. Errors:
/// `NotFound(Merchant)`; `ActiveMerchantRequired` before live activation.
pub async fn set_unique_amounts(store: &dyn MerchantStore, id: &MerchantId, on: bool) -> Result<LiveSettlement, Error> {
    let merchant = store.get_merchant(id).await?;
    let mut live = merchant.live.ok_or(Error::ActiveMerchantRequired)?;
    live.unique_amounts = on;
    store.set_live_settlement(id, &live).await?;
    Ok(live)
}

/// Suspends a merchant: its keys then answer ACCOUNT_SUSPENDED. Errors: `NotFound(Merchant)`.
pub async fn suspend_merchant(store: &dyn MerchantStore, id: &MerchantId) -> Result<(), Error> {
    store.set_status(id, MerchantStatus::Suspended).await
}

/// Lifts a suspension: the merchant's keys work again. Errors: `NotFound(Merchant)`.
pub async fn unsuspend_merchant(store: &dyn MerchantStore, id: &MerchantId) -> Result<(), Error> {
    store.set_status(id, MerchantStatus::Active).await
}

/// Every merchant, oldest first.
pub async fn list_merchants(store: &dyn MerchantStore) -> Result<Vec<Merchant>, Error> {
    store.list_merchants().await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merchant::ports::MockMerchantStore;
    use crate::testing::SeqCrypto;

    #[tokio::test]
    async fn create_merchant_validates_and_stores() {
        let crypto = SeqCrypto::default();
        let mut store = MockMerchantStore::new();
        store.expect_insert_merchant().times(1).returning(|_| Ok(()));
        let m = create_merchant(
            &store,
            &crypto,
            Utc::now(),
            " Shop ",
            Some("https://Shop.example/x"),
            MerchantOptions::default(),
        )
        .await
        .unwrap();
        assert_eq!(m.name, "Shop");
        assert_eq!(m.website_origin.as_deref(), Some("https://shop.example"));
        assert_eq!(m.status, MerchantStatus::Active);

        let empty = MockMerchantStore::new(); // no insert expected
        let e = create_merchant(&empty, &crypto, Utc::now(), "  ", None, MerchantOptions::default()).await.unwrap_err();
        assert_eq!(e.field(), Some("name"));
        let e = create_merchant(&empty, &crypto, Utc::now(), "a", Some("ftp://x"), MerchantOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.field(), Some("website"));
        let bad_prefix = MerchantOptions { invoice_prefix: Some("inv".into()), ..Default::default() };
        let e = create_merchant(&empty, &crypto, Utc::now(), "a", None, bad_prefix).await.unwrap_err();
        assert_eq!(e.field(), Some("invoice_prefix"));
        let bad_fee = MerchantOptions { fee_basis_points: Some(10_001), ..Default::default() };
        let e = create_merchant(&empty, &crypto, Utc::now(), "a", None, bad_fee).await.unwrap_err();
        assert_eq!(e.field(), Some("fee_basis_points"));
    }

    #[tokio::test]
    async fn activation_checks_the_wallet() {
        let store = MockMerchantStore::new();
        let id = MerchantId::from_trusted("mer_1".into());
        let e = activate_merchant(&store, Utc::now(), &id, "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD", Token::Usdc)
            .await
            .unwrap_err();
        assert!(matches!(e, Error::InvalidWalletAddress { .. }));
    }

    #[tokio::test]
    async fn a_suspended_merchant_is_not_activated() {
        let mut store = MockMerchantStore::new();
        store
            .expect_get_merchant()
            .returning(|_| Ok(crate::testing::merchant(crate::merchant::model::MerchantStatus::Suspended, Utc::now())));
        store.expect_set_live_settlement().never();
        let id = MerchantId::from_trusted("mer_1".into());
        let e = activate_merchant(&store, Utc::now(), &id, "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", Token::Usdc)
            .await
            .unwrap_err();
        assert_eq!(e, Error::AccountSuspended);
    }
}
