//! The crypto port on `ring`: the operating system's CSPRNG, SHA-256, HMAC-SHA-1 (for
//! one-time codes) and HMAC-SHA-256 (authorization nonces).

use ring::digest::{SHA256, digest};
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use stablepay_domain::ports::Crypto;

pub struct RingCrypto {
    rng: SystemRandom,
}

impl RingCrypto {
    pub fn new() -> Self {
        Self { rng: SystemRandom::new() }
    }
}

impl Crypto for RingCrypto {
    fn fill_random(&self, buf: &mut [u8]) {
        // SystemRandom fails only when the OS has no entropy source at all; the process cannot
        // make safe ids or keys then, so it stops rather than continue with weak randomness.
        if self.rng.fill(buf).is_err() {
            tracing::error!("the operating system random source failed");
            std::process::abort();
        }
    }

    fn sha256(&self, data: &[u8]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(digest(&SHA256, data).as_ref());
        out
    }

    fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> [u8; 32] {
        let key = hmac::Key::new(hmac::HMAC_SHA256, key);
        let mut out = [0u8; 32];
        out.copy_from_slice(hmac::sign(&key, data).as_ref());
        out
    }

    fn hmac_sha1(&self, key: &[u8], data: &[u8]) -> [u8; 20] {
        let key = hmac::Key::new(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, key);
        let mut out = [0u8; 20];
        out.copy_from_slice(hmac::sign(&key, data).as_ref());
        out
    }
}

/// The password hasher on Argon2id with OWASP's parameters (19 MiB of memory, 2 passes, one
/// lane), salts from the operating system's random source.
pub struct Argon2Passwords {
    argon: argon2::Argon2<'static>,
    /// The hash of a random password, checked when a login names no account (made at the
    /// first such login, not at start: most processes never need it).
    dummy: std::sync::OnceLock<String>,
}

impl Argon2Passwords {
    pub fn new() -> Result<Self, stablepay_domain::Error> {
        let params = argon2::Params::new(19 * 1024, 2, 1, None)
            .map_err(|e| stablepay_domain::Error::Internal(format!("argon2 parameters: {e}")))?;
        let argon = argon2::Argon2::new(argon2::Algorithm::Argon2id, argon2::Version::V0x13, params);
        Ok(Self { argon, dummy: std::sync::OnceLock::new() })
    }

    fn dummy(&self) -> &str {
        self.dummy.get_or_init(|| {
            let mut random = [0u8; 24];
            RingCrypto::new().fill_random(&mut random);
            // A hash that never fails to be made: the same parameters, a random password.
            stablepay_domain::ports::PasswordHasher::hash(self, &String::from_utf8_lossy(&random)).unwrap_or_default()
        })
    }
}

impl stablepay_domain::ports::PasswordHasher for Argon2Passwords {
    fn hash(&self, password: &str) -> Result<String, stablepay_domain::Error> {
        use argon2::password_hash::PasswordHasher as _;
        let mut salt = [0u8; 16];
        RingCrypto::new().fill_random(&mut salt);
        self.argon
            .hash_password_with_salt(password.as_bytes(), &salt)
            .map(|h| h.to_string())
            .map_err(|e| stablepay_domain::Error::Internal(format!("argon2: {e}")))
    }

    fn verify(&self, password: &str, hash: Option<&str>) -> bool {
        use argon2::password_hash::PasswordVerifier as _;
        let matches = self.argon.verify_password(password.as_bytes(), hash.unwrap_or_else(|| self.dummy())).is_ok();
        matches && hash.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// RFC 6238's SHA-1 test vectors (the last six of their eight digits), through the
    /// domain's code on this HMAC.
    #[test]
    fn one_time_codes_match_rfc_6238() {
        use stablepay_domain::account::totp::{TotpSecret, code_at, step_of};
        let crypto = RingCrypto::new();
        let secret = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        for (time, code) in
            [(59, "287082"), (1_111_111_109, "081804"), (1_234_567_890, "005924"), (2_000_000_000, "279037")]
        {
            let at = chrono::DateTime::from_timestamp(time, 0).unwrap();
            assert_eq!(code_at(&crypto, &secret, step_of(at)), code, "at {time}");
        }
    }

    #[test]
    fn passwords_hash_to_argon2id_and_verify_only_themselves() {
        use stablepay_domain::ports::PasswordHasher;
        let p = Argon2Passwords::new().unwrap();
        let hash = p.hash("correct horse battery staple").unwrap();
        assert!(hash.starts_with("$argon2id$v=19$m=19456,t=2,p=1$"), "{hash}");
        assert_ne!(hash, p.hash("correct horse battery staple").unwrap(), "salted");
        assert!(p.verify("correct horse battery staple", Some(&hash)));
        assert!(!p.verify("correct horse battery stapler", Some(&hash)));
        assert!(!p.verify("correct horse battery staple", None));
        assert!(!p.verify("x", Some("not a hash")));
    }

    #[test]
    fn sha256_vector() {
        let d = RingCrypto::new().sha256(b"abc");
        let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
