//! API keys: format, hashing, records, and who a key makes the caller.
//!
//! A key is `{pk|sk}_{test|live}_` followed by 40 base62 characters (about 238 random bits).
//! Authentication itself is the use case in `authentication`.
//! Only its SHA-256 digest and a short display prefix are stored; the plaintext exists once,
//! in the answer to its creation.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::ids::{ApiKeyId, MerchantId, random_base62};
use crate::merchant::Merchant;
use crate::mode::{Mode, Scope};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SeqCrypto;

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
}
