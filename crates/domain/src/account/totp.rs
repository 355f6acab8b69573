//! Two-factor login: time-based one-time codes (RFC 6238 with its defaults, which every
//! authenticator app reads: HMAC-SHA-1, 30-second steps, six digits), the secret in base32 and
//! as an `otpauth://` URI for the QR code, and the ten single-use recovery codes.

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;

/// Seconds per code.
pub const STEP_SECONDS: i64 = 30;
/// Digits per code.
pub const DIGITS: usize = 6;
/// Bytes of a secret (160 bits, RFC 4226's recommendation).
pub const SECRET_BYTES: usize = 20;
/// Recovery codes made at enrolment.
pub const RECOVERY_CODES: usize = 10;
/// Steps either side of now a code may come from (an authenticator's clock drifts).
pub const DRIFT_STEPS: i64 = 1;

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// A two-factor secret as stored: sealed by the `TotpSealer` port.
#[derive(Clone, PartialEq, Eq)]
pub struct SealedTotp(pub Vec<u8>);

impl std::fmt::Debug for SealedTotp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealedTotp(..)")
    }
}

/// A two-factor secret (never logged; stored sealed).
#[derive(Clone, PartialEq, Eq)]
pub struct TotpSecret(Vec<u8>);

impl std::fmt::Debug for TotpSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TotpSecret(..)")
    }
}

impl TotpSecret {
    /// A new random secret.
    pub fn generate(crypto: &dyn Crypto) -> Self {
        let mut bytes = vec![0u8; SECRET_BYTES];
        crypto.fill_random(&mut bytes);
        Self(bytes)
    }

    /// A secret from its bytes (as opened from storage).
    pub fn from_bytes(bytes: Vec<u8>) -> Self {
        Self(bytes)
    }

    /// Its bytes (to seal).
    pub fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Its base32 form (RFC 4648, no padding), as an authenticator app takes it typed.
    pub fn base32(&self) -> String {
        base32(&self.0)
    }

    /// The `otpauth://totp/` URI a QR code carries: the issuer and the account's email.
    pub fn otpauth_uri(&self, issuer: &str, account: &str) -> String {
        let label = format!("{}:{}", percent(issuer), percent(account));
        format!(
            "otpauth://totp/{label}?secret={}&issuer={}&algorithm=SHA1&digits={DIGITS}&period={STEP_SECONDS}",
            self.base32(),
            percent(issuer)
        )
    }
}

/// RFC 4648 base32 without padding.
pub fn base32(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(5) * 8);
    let (mut buffer, mut bits) = (0u32, 0u32);
    for &b in bytes {
        buffer = (buffer << 8) | u32::from(b);
        bits += 8;
        while bits >= 5 {
            bits -= 5;
            out.push(char::from(BASE32[usize::try_from((buffer >> bits) & 31).unwrap_or(0)]));
        }
    }
    if bits > 0 {
        out.push(char::from(BASE32[usize::try_from((buffer << (5 - bits)) & 31).unwrap_or(0)]));
    }
    out
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'@' => char::from(b).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The step `at` falls in.
pub fn step_of(at: DateTime<Utc>) -> i64 {
    at.timestamp().div_euclid(STEP_SECONDS)
}

/// The code of `step` (RFC 4226's dynamic truncation of HMAC-SHA-1, six digits).
pub fn code_at(crypto: &dyn Crypto, secret: &TotpSecret, step: i64) -> String {
    let mac = crypto.hmac_sha1(secret.as_bytes(), &step.to_be_bytes());
    let offset = usize::from(mac[19] & 0x0f);
    let binary = (u32::from(mac[offset] & 0x7f) << 24)
        | (u32::from(mac[offset + 1]) << 16)
        | (u32::from(mac[offset + 2]) << 8)
        | u32::from(mac[offset + 3]);
    format!("{:06}", binary % 1_000_000)
}

/// The step (within [`DRIFT_STEPS`] of `at`, and after `after`, so a code is never accepted
/// twice) whose code `code` is; `None` when it is none of them. Spaces in `code` are ignored.
pub fn matching_step(
    crypto: &dyn Crypto,
    secret: &TotpSecret,
    code: &str,
    at: DateTime<Utc>,
    after: Option<i64>,
) -> Option<i64> {
    let code: String = code.chars().filter(|c| !c.is_whitespace()).collect();
    if code.len() != DIGITS || !code.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let now = step_of(at);
    let mut found = None;
    // Every candidate is computed and compared in full: the time does not say which matched.
    for step in (now - DRIFT_STEPS)..=(now + DRIFT_STEPS) {
        let expected = code_at(crypto, secret, step);
        let same = expected.bytes().zip(code.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0;
        if same && after.is_none_or(|a| step > a) && found.is_none() {
            found = Some(step);
        }
    }
    found
}

/// A new recovery code: 80 random bits as four groups of four base32 characters
/// (`abcd-efgh-ijkl-mnop`, lowercase), shown once.
pub fn recovery_code(crypto: &dyn Crypto) -> String {
    let mut bytes = [0u8; 10];
    crypto.fill_random(&mut bytes);
    let text = base32(&bytes).to_lowercase();
    text.as_bytes().chunks(4).map(|c| String::from_utf8_lossy(c).into_owned()).collect::<Vec<_>>().join("-")
}

/// A recovery code as typed, in the form its digest was made of: lowercase, without spaces
/// or dashes.
pub fn normalize_recovery_code(code: &str) -> String {
    code.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_lowercase()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::SeqCrypto;

    #[test]
    fn base32_follows_rfc_4648() {
        assert_eq!(base32(b""), "");
        assert_eq!(base32(b"f"), "MY");
        assert_eq!(base32(b"foobar"), "MZXW6YTBOI");
        assert_eq!(base32(b"12345678901234567890"), "GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ");
    }

    #[test]
    fn a_code_is_accepted_within_the_drift_and_only_once() {
        let crypto = SeqCrypto::default();
        let secret = TotpSecret::generate(&crypto);
        let at = DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let now = step_of(at);
        let code = code_at(&crypto, &secret, now);
        assert_eq!(code.len(), 6);
        assert_eq!(matching_step(&crypto, &secret, &code, at, None), Some(now));
        assert_eq!(matching_step(&crypto, &secret, &format!("{} {}", &code[..3], &code[3..]), at, None), Some(now));
        assert_eq!(matching_step(&crypto, &secret, &code, at, Some(now)), None, "never twice");
        let previous = code_at(&crypto, &secret, now - 1);
        assert_eq!(matching_step(&crypto, &secret, &previous, at, None), Some(now - 1));
        let old = code_at(&crypto, &secret, now - 2);
        if old != code && old != previous && old != code_at(&crypto, &secret, now + 1) {
            assert_eq!(matching_step(&crypto, &secret, &old, at, None), None);
        }
        assert_eq!(matching_step(&crypto, &secret, "12345", at, None), None);
        assert_eq!(matching_step(&crypto, &secret, "abcdef", at, None), None);
    }

    #[test]
    fn uris_and_recovery_codes() {
        let secret = TotpSecret::from_bytes(b"12345678901234567890".to_vec());
        assert_eq!(
            secret.otpauth_uri("stablepay", "ada@example.com"),
            "otpauth://totp/stablepay:ada@example.com?secret=GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ&issuer=stablepay&algorithm=SHA1&digits=6&period=30"
        );
        assert!(!format!("{secret:?}").contains("GEZ"));
        let code = recovery_code(&SeqCrypto::default());
        assert_eq!(code.len(), 19);
        assert_eq!(normalize_recovery_code(&code.to_uppercase()).len(), 16);
    }
}
