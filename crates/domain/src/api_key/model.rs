//! API keys: format, hashing, records, and who a key makes the caller.
//!
//! A key is `{pk|sk}_{test|live}_` followed by 40 base62 characters (about 238 random bits).
//! Authentication itself is the use case in `authentication`.
//! Only its SHA-256 digest and a short display prefix are stored; the plaintext exists once,
//! in the answer to its creation.

use std::fmt;

use chrono::{DateTime, Utc};

use crate::api_key::permission::Permissions;
use crate::crypto::Crypto;
use crate::error::Error;
use crate::ids::{ApiKeyId, MerchantId, random_base62};
use crate::merchant::model::Merchant;
use crate::mode::{Mode, Scope};
use crate::ratelimit::model::{PUBLISHABLE_CHECKOUT, Policy};

/// Length of the random part of a key.
pub const KEY_RANDOM_LEN: usize = 40;
/// Characters of the plaintext kept for display (`sk_test_` plus four).
pub const DISPLAY_PREFIX_LEN: usize = 12;

/// Secret keys are for merchant backends; publishable keys may only create and read checkout
/// sessions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyType {
    /// Full access to the merchant's API in its mode (`sk_...`); never in a browser.
    Secret,
    /// For browsers: creates checkouts with amount and externalReference only (`pk_...`).
    Publishable,
}

impl KeyType {
    /// The type as stored: `secret` or `publishable`.
    pub fn as_str(self) -> &'static str {
        match self {
            KeyType::Secret => "secret",
            KeyType::Publishable => "publishable",
        }
    }

    /// Reads `secret` or `publishable`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "secret" => Some(Self::Secret),
            "publishable" => Some(Self::Publishable),
            _ => None,
        }
    }

    /// Whether this key's answers show the merchant's side of a checkout (the platform fee, the
    /// net and settled amounts, an overpayment): a secret key's do; a publishable key's, read in
    /// a customer's browser, do not.
    pub fn sees_settlement(self) -> bool {
        self == KeyType::Secret
    }

    /// The quota a checkout this key creates counts against: a publishable key's (per key and
    /// client address, since anyone can read it from a page); none for a secret key.
    pub fn checkout_quota(self) -> Option<&'static Policy> {
        (self == KeyType::Publishable).then_some(&PUBLISHABLE_CHECKOUT)
    }

    /// Whether a checkout creation by this key may carry the body members `sent` (in the order
    /// sent, each under the name it was sent as): a publishable key sends only the amount and the
    /// external reference, and any other member, known or not and whatever its value (`null`
    /// too), is refused before anything else is read. Errors: `PublicKeyFieldNotAllowed` naming
    /// the first member refused, as it was sent.
    pub fn check_checkout_members<'a>(
        self,
        sent: impl IntoIterator<Item = (&'a str, CheckoutMember)>,
    ) -> Result<(), Error> {
        if self == KeyType::Secret {
            return Ok(());
        }
        match sent.into_iter().find(|(_, member)| *member == CheckoutMember::Other) {
            Some((name, _)) => Err(Error::PublicKeyFieldNotAllowed { field: name.to_owned() }),
            None => Ok(()),
        }
    }

    fn tag(self) -> &'static str {
        match self {
            KeyType::Secret => "sk",
            KeyType::Publishable => "pk",
        }
    }
}

/// A member of a checkout creation's body, as the driving adapter reads it: what a publishable
/// key may send, or anything else.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckoutMember {
    /// The amount due.
    Amount,
    /// The merchant's own reference.
    ExternalReference,
    /// Any other member, one the body knows (a secret key's) or not.
    Other,
}

/// A key's plaintext. Its `Debug` never shows the value, so it cannot leak into logs.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeySecret(String);

impl ApiKeySecret {
    /// A new random key of `key_type` for `mode` (`sk_test_...`, `pk_live_...`): shown once, stored
    /// only as its digest.
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

    /// The SHA-256 digest the key is stored and looked up by.
    pub fn digest(&self, crypto: &dyn Crypto) -> [u8; 32] {
        crypto.sha256(self.0.as_bytes())
    }

    /// The key's start (`sk_test_abcd`), shown in lists to recognize it.
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

/// A key's last use is recorded at most this often (a write per request would cost every
/// request a round trip; operators need the day, not the second).
pub const LAST_USED_PRECISION_SECONDS: i64 = 60;

/// A stored key record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    /// The key's id (`key_...`).
    pub id: ApiKeyId,
    /// Whose key it is.
    pub merchant_id: MerchantId,
    /// The mode it selects.
    pub mode: Mode,
    /// What it may do.
    pub key_type: KeyType,
    /// The SHA-256 digest of the key (the key itself is never stored).
    pub digest: [u8; 32],
    /// The key's start, to recognize it.
    pub display_prefix: String,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it stops working, if ever.
    pub expires_at: Option<DateTime<Utc>>,
    /// When it was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
    /// When it was last used, to within [`LAST_USED_PRECISION_SECONDS`].
    pub last_used_at: Option<DateTime<Utc>>,
    /// A restricted secret key's permissions; `None`: unrestricted.
    pub permissions: Option<Permissions>,
}

/// What the store returns for a digest: the key and its merchant.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyLookup {
    /// The key.
    pub key: ApiKey,
    /// Its merchant.
    pub merchant: Merchant,
    /// The merchant's test-clock offset in seconds (read with the key, so a request needs no
    /// second query for its test-mode time).
    pub test_clock_offset_seconds: i64,
}

/// Who is calling: the merchant and mode selected by the key, and the key's capability.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Principal {
    /// The merchant and mode the key selects.
    pub scope: Scope,
    /// What it may do.
    pub key_type: KeyType,
    /// The key's id.
    pub key_id: ApiKeyId,
    /// The merchant, as loaded with the key.
    pub merchant: Merchant,
    /// The merchant's test-clock offset when the key was checked.
    pub test_clock_offset_seconds: i64,
    /// A restricted key's permissions; `None`: the key type's whole access.
    pub permissions: Option<Permissions>,
    /// The key's use should be recorded now (its last record is older than
    /// [`LAST_USED_PRECISION_SECONDS`]); the adapter does it off the request's path.
    pub record_use: bool,
}

/// Which keys a route takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyNeed {
    /// A publishable or a secret key.
    Any,
    /// A secret key.
    Secret,
    /// A secret key of test mode (the test helpers).
    SecretTest,
}

/// The refusal of a live key on a test helper.
pub const TEST_HELPERS_ONLY: &str = "Test helpers require a secret test-mode key.";

/// Whether a key of `key_type` and `mode` may use a route that takes `need`. Errors:
/// `ApiKeyForbidden` saying which key the route takes.
pub fn require_key(key_type: KeyType, mode: Mode, need: KeyNeed) -> Result<(), Error> {
    let secret = key_type == KeyType::Secret;
    let refused = match need {
        KeyNeed::Any => None,
        KeyNeed::Secret => (!secret).then_some("This operation requires a secret key."),
        KeyNeed::SecretTest => (!secret || mode != Mode::Test).then_some(TEST_HELPERS_ONLY),
    };
    refused.map_or(Ok(()), |message| Err(Error::ApiKeyForbidden(message)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SeqCrypto;

    /// A route takes the keys it says: a publishable key no secret route, a live key no test
    /// helper; each refusal says which key the route takes.
    #[test]
    fn a_route_takes_the_keys_it_says() {
        for mode in [Mode::Test, Mode::Live] {
            for key in [KeyType::Secret, KeyType::Publishable] {
                assert_eq!(require_key(key, mode, KeyNeed::Any), Ok(()));
            }
            assert_eq!(require_key(KeyType::Secret, mode, KeyNeed::Secret), Ok(()));
            assert_eq!(
                require_key(KeyType::Publishable, mode, KeyNeed::Secret),
                Err(Error::ApiKeyForbidden("This operation requires a secret key."))
            );
            assert_eq!(
                require_key(KeyType::Publishable, mode, KeyNeed::SecretTest),
                Err(Error::ApiKeyForbidden(TEST_HELPERS_ONLY))
            );
        }
        assert_eq!(require_key(KeyType::Secret, Mode::Test, KeyNeed::SecretTest), Ok(()));
        assert_eq!(
            require_key(KeyType::Secret, Mode::Live, KeyNeed::SecretTest),
            Err(Error::ApiKeyForbidden(TEST_HELPERS_ONLY))
        );
    }

    /// A publishable key creates checkouts with the amount and the external reference only (the
    /// first other member is named as it was sent), counts against its quota and never sees the
    /// merchant's side; a secret key sends anything, has no such quota and sees it all.
    #[test]
    fn a_publishable_key_sends_two_members_and_sees_no_settlement() {
        use CheckoutMember::{Amount, ExternalReference, Other};
        let pk = KeyType::Publishable;
        assert_eq!(pk.check_checkout_members([("amount", Amount), ("externalReference", ExternalReference)]), Ok(()));
        assert_eq!(pk.check_checkout_members([]), Ok(()));
        assert_eq!(
            pk.check_checkout_members([("amount", Amount), ("meta_data", Other), ("successUrl", Other)]),
            Err(Error::PublicKeyFieldNotAllowed { field: "meta_data".into() })
        );
        assert_eq!(KeyType::Secret.check_checkout_members([("successUrl", Other), ("x", Other)]), Ok(()));
        assert_eq!(pk.checkout_quota(), Some(&PUBLISHABLE_CHECKOUT));
        assert_eq!(KeyType::Secret.checkout_quota(), None);
        assert!(!pk.sees_settlement() && KeyType::Secret.sees_settlement());
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
}
