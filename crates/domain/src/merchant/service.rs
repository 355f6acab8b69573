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

/// A new active merchant with test mode ready (simulated settlement) and live mode not yet
/// activated, checked but not stored (the operator stores it alone, an open sign-up with its
/// first owner). Errors: `Validation` on `name` (1-200 bytes), `website` (absolute http(s)
/// URL), `invoice_prefix` or `fee_basis_points`.
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

/// The operator's administration of merchants and their keys, on the real time: what the
/// CLI's `merchant` and `key` commands and internal admin tooling call (who acts: the
/// operator, who may do all of it). [`UseCases::operator`](crate::use_cases::UseCases::operator)
/// builds it.
pub struct Operator<'a> {
    /// Merchants.
    pub merchants: &'a dyn MerchantStore,
    /// API keys.
    pub keys: &'a dyn crate::api_key::ports::ApiKeyStore,
    /// Accounts (an owner's live activation request).
    pub accounts: &'a dyn crate::account::ports::AccountStore,
    /// Ids and key secrets.
    pub crypto: &'a dyn Crypto,
    /// The real time.
    pub clock: &'a dyn crate::clock::Clock,
}

impl Operator<'_> {
    /// A new merchant, stored (see [`new_merchant`]).
    pub async fn create_merchant(
        &self,
        name: &str,
        website: Option<&str>,
        options: MerchantOptions,
    ) -> Result<Merchant, Error> {
        let merchant = new_merchant(self.crypto, self.clock.system_now(), name, website, options)?;
        self.merchants.insert_merchant(&merchant).await?;
        Ok(merchant)
    }

    /// One merchant. Errors: `NotFound(Merchant)`.
    pub async fn merchant(&self, id: &MerchantId) -> Result<Merchant, Error> {
        self.merchants.get_merchant(id).await
    }

    /// Every merchant, oldest first.
    pub async fn merchants(&self) -> Result<Vec<Merchant>, Error> {
        list_merchants(self.merchants).await
    }

    /// Activates live mode (see [`activate_merchant`]) to `wallet`, or, without one, to the
    /// wallet an owner asked for (and its token unless `token` says). Errors: as
    /// [`activate_merchant`]; `DefaultWalletRequired` when no wallet is given or asked for.
    pub async fn activate(
        &self,
        id: &MerchantId,
        wallet: Option<&str>,
        token: Option<Token>,
    ) -> Result<LiveSettlement, Error> {
        let (wallet, token) = match wallet {
            Some(w) => (w.to_owned(), token.unwrap_or(Token::Usdc)),
            None => {
                let asked = self.accounts.live_request(id).await?.ok_or(Error::DefaultWalletRequired)?;
                (asked.wallet.as_str().to_owned(), token.unwrap_or(asked.token))
            }
        };
        activate_merchant(self.merchants, self.clock.system_now(), id, &wallet, token).await
    }

    /// Changes what `id`'s documents say about the seller: `change` edits the stored profile,
    /// which is then checked and saved (see [`set_profile`]).
    pub async fn update_profile(
        &self,
        id: &MerchantId,
        change: impl FnOnce(&mut MerchantProfile) + Send,
    ) -> Result<MerchantProfile, Error> {
        let mut profile = self.merchants.get_merchant(id).await?.profile;
        change(&mut profile);
        set_profile(self.merchants, id, profile).await
    }

    /// Sets or removes the logo (see [`set_logo`]).
    pub async fn set_logo(&self, id: &MerchantId, png: Option<Vec<u8>>) -> Result<Option<Logo>, Error> {
        set_logo(self.merchants, id, png).await
    }

    /// Unique amounts on or off (see [`set_unique_amounts`]).
    pub async fn set_unique_amounts(&self, id: &MerchantId, on: bool) -> Result<LiveSettlement, Error> {
        set_unique_amounts(self.merchants, id, on).await
    }

    /// Suspends the merchant (`true`) or lifts its suspension. Errors: `NotFound(Merchant)`.
    pub async fn suspend(&self, id: &MerchantId, suspend: bool) -> Result<(), Error> {
        if suspend { suspend_merchant(self.merchants, id).await } else { unsuspend_merchant(self.merchants, id).await }
    }

    /// A new key of `merchant` (see [`create_api_key`](crate::api_key::service::create_api_key)):
    /// its record and its secret, shown once.
    pub async fn create_key(
        &self,
        merchant: &MerchantId,
        kind: (crate::mode::Mode, crate::api_key::model::KeyType),
        permissions: Option<crate::api_key::permission::Permissions>,
    ) -> Result<(crate::api_key::model::ApiKey, crate::api_key::model::ApiKeySecret), Error> {
        let now = self.clock.system_now();
        crate::api_key::service::create_api_key(self.keys, self.crypto, now, merchant, kind, permissions).await
    }

    /// A merchant's keys, revoked ones included, oldest first. Errors: `NotFound(Merchant)`.
    pub async fn keys(&self, merchant: &MerchantId) -> Result<Vec<crate::api_key::model::ApiKey>, Error> {
        crate::api_key::service::list_api_keys(self.merchants, self.keys, merchant).await
    }

    /// Revokes a key (idempotent). Errors: `NotFound(ApiKey)`.
    pub async fn revoke_key(&self, id: &crate::ids::ApiKeyId) -> Result<(), Error> {
        crate::api_key::service::revoke_api_key(self.keys, self.clock.system_now(), id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merchant::ports::MockMerchantStore;
    use crate::testing::SeqCrypto;

    #[test]
    fn a_new_merchant_is_checked_and_active() {
        let crypto = SeqCrypto::default();
        let m = new_merchant(&crypto, Utc::now(), " Shop ", Some("https://Shop.example/x"), MerchantOptions::default())
            .unwrap();
        assert_eq!(m.name, "Shop");
        assert_eq!(m.website_origin.as_deref(), Some("https://shop.example"));
        assert_eq!(m.status, MerchantStatus::Active);
        assert_eq!((m.invoice_prefix.as_str(), m.fee_basis_points), ("INV", 0));

        let refused = |name: &str, website: Option<&str>, options: MerchantOptions| {
            new_merchant(&crypto, Utc::now(), name, website, options).unwrap_err().field().map(str::to_owned)
        };
        assert_eq!(refused("  ", None, MerchantOptions::default()).as_deref(), Some("name"));
        assert_eq!(refused("a", Some("ftp://x"), MerchantOptions::default()).as_deref(), Some("website"));
        let bad_prefix = MerchantOptions { invoice_prefix: Some("inv".into()), ..Default::default() };
        assert_eq!(refused("a", None, bad_prefix).as_deref(), Some("invoice_prefix"));
        let bad_fee = MerchantOptions { fee_basis_points: Some(10_001), ..Default::default() };
        assert_eq!(refused("a", None, bad_fee).as_deref(), Some("fee_basis_points"));
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

    /// The operator activates live mode to the wallet given, or to the one an owner asked
    /// for (its token unless another is given), and is told when there is neither.
    #[tokio::test]
    async fn the_operator_activates_to_the_wallet_given_or_asked_for() {
        use crate::account::model::LiveRequest;
        use crate::account::ports::MockAccountStore;
        use crate::api_key::ports::MockApiKeyStore;
        let (a, b) = ("0x1111111111111111111111111111111111111111", "0x2222222222222222222222222222222222222222");
        let crypto = SeqCrypto::default();
        let mut clock = crate::clock::MockClock::new();
        clock.expect_system_now().returning(Utc::now);
        let mut merchants = MockMerchantStore::new();
        merchants.expect_get_merchant().returning(|_| Ok(crate::testing::merchant(MerchantStatus::Active, Utc::now())));
        let set = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let s = set.clone();
        merchants.expect_set_live_settlement().returning(move |_, live| {
            s.lock().unwrap().push((live.wallet.as_str().to_owned(), live.token));
            Ok(())
        });
        let mut accounts = MockAccountStore::new();
        let asked =
            LiveRequest { wallet: WalletAddress::from_trusted(b.into()), token: Token::Usdt, requested_at: None };
        accounts.expect_live_request().returning(move |m| Ok((m.as_str() == "mer_asked").then(|| asked.clone())));
        let keys = MockApiKeyStore::new();
        let op = Operator { merchants: &merchants, keys: &keys, accounts: &accounts, crypto: &crypto, clock: &clock };
        let (asked_id, none) =
            (MerchantId::from_trusted("mer_asked".into()), MerchantId::from_trusted("mer_none".into()));
        op.activate(&none, Some(a), None).await.unwrap();
        op.activate(&asked_id, None, None).await.unwrap();
        op.activate(&asked_id, None, Some(Token::Usdc)).await.unwrap();
        assert_eq!(op.activate(&none, None, None).await, Err(Error::DefaultWalletRequired));
        assert_eq!(
            *set.lock().unwrap(),
            [(a.to_owned(), Token::Usdc), (b.to_owned(), Token::Usdt), (b.to_owned(), Token::Usdc)]
        );
    }
}
