//! The `SecretBox` and `TotpSealer` ports: signing secrets and two-factor secrets sealed at rest with AES-256-GCM (ring) under the
//! operator's key (`STABLEPAY_SECRET_KEY`, the standard base64 of 32 random bytes). A sealed
//! secret is `1 || nonce (12 bytes) || ciphertext and tag`; the database never holds a secret
//! in the clear, and a copy of the database without the key signs nothing.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};
use stablepay_domain::Error;
use stablepay_domain::account::ports::TotpSealer;
use stablepay_domain::account::totp::{SealedTotp, TotpSecret};
use stablepay_domain::webhook::model::{SealedSecret, SigningSecret};
use stablepay_domain::webhook::ports::SecretBox;

const VERSION: u8 = 1;
const AAD: &[u8] = b"stablepay webhook signing secret v1";
/// Two-factor secrets are sealed for their own purpose: one never opens as the other.
const TOTP_AAD: &[u8] = b"stablepay two-factor secret v1";
const WEBHOOKS: &str = "webhook endpoints without STABLEPAY_SECRET_KEY";
const TWO_FACTOR: &str = "two-factor login without STABLEPAY_SECRET_KEY";

pub struct AesSecretBox {
    key: Option<LessSafeKey>,
    rng: SystemRandom,
}

impl AesSecretBox {
    /// A box with `key`, or without one (sealing and opening then answer
    /// `FeatureUnavailable`).
    pub fn new(key: Option<[u8; 32]>) -> Self {
        let key = key.and_then(|k| UnboundKey::new(&AES_256_GCM, &k).ok()).map(LessSafeKey::new);
        Self { key, rng: SystemRandom::new() }
    }

    /// Parses the operator's key: the standard base64 of exactly 32 bytes.
    pub fn parse_key(text: &str) -> Result<[u8; 32], String> {
        let bytes = STANDARD.decode(text.trim()).map_err(|_| "must be standard base64".to_owned())?;
        <[u8; 32]>::try_from(bytes.as_slice()).map_err(|_| format!("must encode 32 bytes, not {}", bytes.len()))
    }

    /// The form `parse_key` reads: standard base64.
    pub fn encode_key(key: &[u8; 32]) -> String {
        STANDARD.encode(key)
    }

    fn key(&self, feature: &'static str) -> Result<&LessSafeKey, Error> {
        self.key.as_ref().ok_or(Error::FeatureUnavailable(feature))
    }

    /// `1 || nonce || ciphertext and tag` of `plain`, bound to `aad`.
    fn seal_bytes(&self, key: &LessSafeKey, aad: &'static [u8], plain: &[u8]) -> Result<Vec<u8>, Error> {
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).map_err(|_| Error::Internal("no randomness for a nonce".into()))?;
        let mut data = plain.to_vec();
        key.seal_in_place_append_tag(Nonce::assume_unique_for_key(nonce), Aad::from(aad), &mut data)
            .map_err(|_| Error::Internal("sealing a secret failed".into()))?;
        let mut out = Vec::with_capacity(1 + NONCE_LEN + data.len());
        out.push(VERSION);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&data);
        Ok(out)
    }

    /// What [`Self::seal_bytes`] sealed with `aad`. Errors: `Internal`.
    fn open_bytes(key: &LessSafeKey, aad: &'static [u8], sealed: &[u8]) -> Result<Vec<u8>, Error> {
        let bad = || Error::Internal("a sealed secret does not open with STABLEPAY_SECRET_KEY".into());
        let (version, rest) = sealed.split_first().ok_or_else(bad)?;
        if *version != VERSION || rest.len() < NONCE_LEN {
            return Err(bad());
        }
        let (nonce, data) = rest.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).map_err(|_| bad())?;
        let mut data = data.to_vec();
        let plain = key.open_in_place(nonce, Aad::from(aad), &mut data).map_err(|_| bad())?;
        Ok(plain.to_vec())
    }
}

impl SecretBox for AesSecretBox {
    fn seal(&self, secret: &SigningSecret) -> Result<SealedSecret, Error> {
        let key = self.key(WEBHOOKS)?;
        Ok(SealedSecret(self.seal_bytes(key, AAD, secret.as_str().as_bytes())?))
    }

    fn open(&self, sealed: &SealedSecret) -> Result<SigningSecret, Error> {
        let plain = Self::open_bytes(self.key(WEBHOOKS)?, AAD, &sealed.0)?;
        let text =
            String::from_utf8(plain).map_err(|_| Error::Internal("a sealed signing secret is not text".into()))?;
        Ok(SigningSecret::from_trusted(text))
    }
}

impl TotpSealer for AesSecretBox {
    fn seal_totp(&self, secret: &TotpSecret) -> Result<SealedTotp, Error> {
        let key = self.key(TWO_FACTOR)?;
        Ok(SealedTotp(self.seal_bytes(key, TOTP_AAD, secret.as_bytes())?))
    }

    fn open_totp(&self, sealed: &SealedTotp) -> Result<TotpSecret, Error> {
        Ok(TotpSecret::from_bytes(Self::open_bytes(self.key(TWO_FACTOR)?, TOTP_AAD, &sealed.0)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seals_and_opens_only_with_its_key() {
        let a = AesSecretBox::new(Some([7u8; 32]));
        let secret = SigningSecret::from_trusted("whsec_abc".into());
        let sealed = a.seal(&secret).unwrap();
        assert!(!sealed.0.windows(9).any(|w| w == b"whsec_abc"));
        assert_eq!(a.open(&sealed).unwrap(), secret);
        assert_ne!(a.seal(&secret).unwrap(), sealed, "a fresh nonce each time");
        let b = AesSecretBox::new(Some([8u8; 32]));
        assert!(matches!(b.open(&sealed), Err(Error::Internal(_))));
        let none = AesSecretBox::new(None);
        assert!(matches!(none.seal(&secret), Err(Error::FeatureUnavailable(_))));
        assert_eq!(AesSecretBox::parse_key(&STANDARD.encode([1u8; 32])).unwrap(), [1u8; 32]);
        assert!(AesSecretBox::parse_key("c2hvcnQ=").is_err());
    }

    #[test]
    fn two_factor_secrets_are_sealed_for_their_own_purpose() {
        let a = AesSecretBox::new(Some([7u8; 32]));
        let secret = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        let sealed = a.seal_totp(&secret).unwrap();
        assert!(!sealed.0.windows(20).any(|w| w == b"12345678901234567890"));
        assert_eq!(a.open_totp(&sealed).unwrap(), secret);
        // A signing secret's box does not open as a two-factor secret, nor the other way.
        assert!(a.open(&SealedSecret(sealed.0.clone())).is_err());
        let signing = a.seal(&SigningSecret::from_trusted("whsec_abc".into())).unwrap();
        assert!(a.open_totp(&SealedTotp(signing.0)).is_err());
        assert!(matches!(AesSecretBox::new(None).seal_totp(&secret), Err(Error::FeatureUnavailable(_))));
    }
}
