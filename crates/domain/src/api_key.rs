//! API keys: format, hashing and the authentication use case.
//!
//! A key is `{pk|sk}_{test|live}_` followed by 40 base62 characters (about 238 random bits).
//! Only its SHA-256 digest and a short display prefix are stored; the plaintext exists once,
//! in the answer to its creation.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::ids::{ApiKeyId, MerchantId, random_base62};
use crate::merchant::{Merchant, MerchantStatus};
use crate::mode::{Mode, Scope};
use crate::ports::{ApiKeyStore, Crypto};

/// Length of the random part of a key.
pub const KEY_RANDOM_LEN: usize = 40;
/// Characters of the plaintext kept for display (`sk_test_` plus four).
pub const DISPLAY_PREFIX_LEN: usize = 12;

/// Secret keys are for merchant backends; publishable keys may only create and read checkout
/// sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    Secret,
    Publishable,
}

impl KeyType {
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Secret => "secret",
            KeyType::Publishable => "publishable",
        }
    }

    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "secret" => Some(Self::Secret),
            "publishable" => Some(Self::Publishable),
            _ => None,
        }
    }

    fn tag(self) -> &'static str {
        match self {
            KeyType::Secret => "sk",
            KeyType::Publishable => "pk",
        }
    }
}

/// A key's plaintext. Its `Debug` never shows the value, so it cannot leak into logs.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    pub fn generate(crypto: &dyn Crypto, mode: Mode, key_type: KeyType) -> Self {
        Self(format!("{}_{}_{}", key_type.tag(), mode.as_str(), random_base62(crypto, KEY_RANDOM_LEN)))
    }

    /// Wraps presented text; use [`ApiKeySecret::classify`] to check its form.
    pub fn presented(value: &str) -> Self {
        Self(value.to_owned())
    }

    /// The mode and type named by a well-formed key; `None` for a malformed one.
    pub fn classify(&self) -> Option<(Mode, KeyType)> {
        let (head, random) = self.0.get(..8).zip(self.0.get(8..))?;
        let (key_type, mode) = match head {
            "sk_test_" => (KeyType::Secret, Mode::Test),
            "sk_live_" => (KeyType::Secret, Mode::Live),
            "pk_test_" => (KeyType::Publishable, Mode::Test),
            "pk_live_" => (KeyType::Publishable, Mode::Live),
            _ => return None,
        };
        let ok = (32..=128).contains(&random.len()) && random.bytes().all(|b| b.is_ascii_alphanumeric());
        ok.then_some((mode, key_type))
    }

    pub fn digest(&self, crypto: &dyn Crypto) -> [u8; 32] {
        crypto.sha256(self.0.as_bytes())
    }

    pub fn display_prefix(&self) -> String {
        self.0.chars().take(DISPLAY_PREFIX_LEN).collect()
    }

    /// The plaintext, for the one answer that shows it.
    pub fn reveal(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKeySecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKeySecret(..)")
    }
}

/// A stored key record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub id: ApiKeyId,
    pub merchant_id: MerchantId,
    pub mode: Mode,
    pub key_type: KeyType,
    pub digest: [u8; 32],
    pub display_prefix: String,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What the store returns for a digest: the key and its merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLookup {
    pub key: ApiKey,
    pub merchant: Merchant,
    /// The merchant's test-clock offset in seconds (read with the key, so a request needs no
    /// second query for its test-mode time).
    pub test_clock_offset_seconds: i64,
}

/// Who is calling: the merchant and mode selected by the key, and the key's capability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    pub scope: Scope,
    pub key_type: KeyType,
    pub key_id: ApiKeyId,
    pub merchant: Merchant,
    /// The merchant's test-clock offset when the key was checked.
    pub test_clock_offset_seconds: i64,
}

/// Authenticates a presented key.
///
/// Errors: [`Error::InvalidApiKey`] for a malformed, unknown, revoked or expired key;
/// [`Error::AccountSuspended`] when the key's merchant is suspended; store failures as they are.
pub async fn authenticate(
    store: &dyn ApiKeyStore,
    crypto: &dyn Crypto,
    presented: &ApiKeySecret,
    now: DateTime<Utc>,
) -> Result<Principal, Error> {
    let (mode, key_type) = presented.classify().ok_or(Error::InvalidApiKey)?;
    let found = store.find_key_by_digest(presented.digest(crypto)).await?.ok_or(Error::InvalidApiKey)?;
    let key = found.key;
    let usable = key.revoked_at.is_none()
        && key.expires_at.is_none_or(|at| at > now)
        && key.mode == mode
        && key.key_type == key_type;
    if !usable {
        return Err(Error::InvalidApiKey);
    }
    if found.merchant.status == MerchantStatus::Suspended {
        return Err(Error::AccountSuspended);
    }
    Ok(Principal {
        scope: Scope::new(key.merchant_id, key.mode),
        key_type: key.key_type,
        key_id: key.id,
        merchant: found.merchant,
        test_clock_offset_seconds: found.test_clock_offset_seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ports::MockApiKeyStore;
    use crate::testing::SeqCrypto;
    use chrono::TimeZone;

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().unwrap()
    }

    fn record(secret: &ApiKeySecret, crypto: &SeqCrypto) -> ApiKey {
        let (mode, key_type) = secret.classify().unwrap();
        ApiKey {
            id: ApiKeyId::from_trusted("key_1".into()),
            merchant_id: MerchantId::from_trusted("mer_1".into()),
            mode,
            key_type,
            digest: secret.digest(crypto),
            display_prefix: secret.display_prefix(),
            created_at: now(),
            expires_at: None,
            revoked_at: None,
        }
    }

    #[test]
    fn generated_keys_classify_and_hide() {
        let crypto = SeqCrypto::default();
        for mode in [Mode::Test, Mode::Live] {
            for key_type in [KeyType::Secret, KeyType::Publishable] {
                let key = ApiKeySecret::generate(&crypto, mode, key_type);
                assert_eq!(key.classify(), Some((mode, key_type)));
                assert_eq!(key.reveal().len(), 8 + KEY_RANDOM_LEN);
                assert_eq!(format!("{key:?}"), "ApiKeySecret(..)");
            }
        }
        for bad in [
            "",
            "sk_test_",
            "sk_test_short",
            "xk_test_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "sk_prod_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
            "sk_test_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa-aaaaaa",
        ] {
            assert_eq!(ApiKeySecret::presented(bad).classify(), None, "{bad}");
        }
    }

    async fn run(lookup: Option<KeyLookup>, presented: &ApiKeySecret) -> Result<Principal, Error> {
        let crypto = SeqCrypto::default();
        let mut store = MockApiKeyStore::new();
        store.expect_find_key_by_digest().returning(move |_| Ok(lookup.clone()));
        authenticate(&store, &crypto, presented, now()).await
    }

    #[tokio::test]
    async fn authentication_cases() {
        let crypto = SeqCrypto::default();
        let secret = ApiKeySecret::generate(&crypto, Mode::Test, KeyType::Secret);
        let good = record(&secret, &crypto);
        let merchant = |status| Merchant {
            id: MerchantId::from_trusted("mer_1".into()),
            name: "Shop".into(),
            website_origin: None,
            status,
            live: None,
            fee_basis_points: 0,
            invoice_prefix: "INV".into(),
            created_at: now(),
        };
        let active = |key: ApiKey| {
            Some(KeyLookup { key, merchant: merchant(MerchantStatus::Active), test_clock_offset_seconds: 0 })
        };

        let p = run(active(good.clone()), &secret).await.unwrap();
        assert_eq!(p.scope.mode, Mode::Test);
        assert_eq!(p.key_type, KeyType::Secret);

        assert_eq!(run(None, &secret).await, Err(Error::InvalidApiKey));
        assert_eq!(run(None, &ApiKeySecret::presented("nope")).await, Err(Error::InvalidApiKey));
        let revoked = ApiKey { revoked_at: Some(now()), ..good.clone() };
        assert_eq!(run(active(revoked), &secret).await, Err(Error::InvalidApiKey));
        let expired = ApiKey { expires_at: Some(now()), ..good.clone() };
        assert_eq!(run(active(expired), &secret).await, Err(Error::InvalidApiKey));
        let suspended =
            Some(KeyLookup { key: good, merchant: merchant(MerchantStatus::Suspended), test_clock_offset_seconds: 0 });
        assert_eq!(run(suspended, &secret).await, Err(Error::AccountSuspended));
    }
}
