//! The two signature schemes every delivery carries, and their verification (for receivers
//! written in Rust, and for the tests).
//!
//! **The spec's** (`X-Stablepay-Signature: t=<timestamp>,v1=<digest>[,v1=<digest>...]`): the
//! digest is the lowercase hex HMAC-SHA256, keyed with the signing secret string (all of
//! `whsec_...`), of the UTF-8 timestamp (Unix seconds), a literal `.`, and the exact raw body.
//! During a rotation's overlap there is one `v1` per valid secret, newest first.
//!
//! **Standard Webhooks** (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64>
//! [v1,<base64>...]`): HMAC-SHA256 keyed with the base64-decoded part of the secret after
//! `whsec_`, over `<webhook-id>.<timestamp>.<body>`, in standard base64. The `standardwebhooks`
//! and `svix` libraries verify it unchanged.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;

/// Default replay tolerance in seconds.
pub const DEFAULT_TOLERANCE_SECONDS: i64 = 300;

fn hmac_sha256(key: &[u8], parts: &[&[u8]]) -> hmac::Tag {
    let key = hmac::Key::new(hmac::HMAC_SHA256, key);
    let mut ctx = hmac::Context::with_key(&key);
    for part in parts {
        ctx.update(part);
    }
    ctx.sign()
}

/// The lowercase hex HMAC-SHA256 of `timestamp.body` under `secret` (the secret string's bytes).
pub fn digest(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let tag = hmac_sha256(secret, &[timestamp.to_string().as_bytes(), b".", body]);
    tag.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The `X-Stablepay-Signature` value for `body` signed with every secret in `secrets` (newest
/// first).
pub fn signature_header(secrets: &[&str], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&digest(secret.as_bytes(), timestamp, body));
    }
    header
}

/// The Standard Webhooks key of a `whsec_` secret: its base64 part, decoded.
pub fn standard_key(secret: &str) -> Option<Vec<u8>> {
    STANDARD.decode(secret.strip_prefix("whsec_").unwrap_or(secret)).ok()
}

/// The `webhook-signature` value: `v1,<base64>` per secret, space-separated, newest first.
/// Answers `None` when a secret is not in the `whsec_<base64>` form.
pub fn standard_signature_header(secrets: &[&str], id: &str, timestamp: i64, body: &[u8]) -> Option<String> {
    let mut parts = Vec::with_capacity(secrets.len());
    for secret in secrets {
        let key = standard_key(secret)?;
        let tag = hmac_sha256(&key, &[id.as_bytes(), b".", timestamp.to_string().as_bytes(), b".", body]);
        parts.push(format!("v1,{}", STANDARD.encode(tag.as_ref())));
    }
    Some(parts.join(" "))
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    Malformed,
    OutsideTolerance,
    NoMatch,
}

/// Verifies an `X-Stablepay-Signature` header against `secret` (the `whsec_...` string) at
/// `now` (Unix seconds): the timestamp must be within `tolerance` seconds, and any `v1` must
/// match, compared in constant time.
///
/// ```
/// use stablepay_webhooks::signature::{signature_header, verify, DEFAULT_TOLERANCE_SECONDS};
/// let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// let body = br#"{"id":"evt_1","object":"event"}"#;
/// let header = signature_header(&[secret], 1_700_000_000, body);
/// assert_eq!(verify(&header, secret, body, 1_700_000_100, DEFAULT_TOLERANCE_SECONDS), Ok(()));
/// ```
pub fn verify(header: &str, secret: &str, body: &[u8], now: i64, tolerance: i64) -> Result<(), VerifyError> {
    let mut timestamp = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => timestamp = Some(v.parse::<i64>().map_err(|_| VerifyError::Malformed)?),
            Some(("v1", v)) => candidates.push(v),
            _ => {}
        }
    }
    let t = timestamp.ok_or(VerifyError::Malformed)?;
    if candidates.is_empty() {
        return Err(VerifyError::Malformed);
    }
    if (now - t).abs() > tolerance {
        return Err(VerifyError::OutsideTolerance);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret.as_bytes());
    let mut signed = t.to_string().into_bytes();
    signed.push(b'.');
    signed.extend_from_slice(body);
    let ok = candidates.iter().any(|hex| decode_hex(hex).is_some_and(|tag| hmac::verify(&key, &signed, &tag).is_ok()));
    if ok { Ok(()) } else { Err(VerifyError::NoMatch) }
}

/// Verifies the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
/// `webhook-signature`) against `secret` at `now`: the timestamp within `tolerance` seconds,
/// any `v1` signature matching in constant time.
pub fn verify_standard(
    id: &str,
    timestamp: &str,
    signatures: &str,
    secret: &str,
    body: &[u8],
    now: i64,
    tolerance: i64,
) -> Result<(), VerifyError> {
    let t: i64 = timestamp.parse().map_err(|_| VerifyError::Malformed)?;
    if (now - t).abs() > tolerance {
        return Err(VerifyError::OutsideTolerance);
    }
    let key = hmac::Key::new(hmac::HMAC_SHA256, &standard_key(secret).ok_or(VerifyError::Malformed)?);
    let signed = [id.as_bytes(), b".", timestamp.as_bytes(), b".", body].concat();
    let ok = signatures
        .split(' ')
        .filter_map(|s| s.strip_prefix("v1,"))
        .filter_map(|b64| STANDARD.decode(b64).ok())
        .any(|tag| hmac::verify(&key, &signed, &tag).is_ok());
    if ok { Ok(()) } else { Err(VerifyError::NoMatch) }
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc4231_vector() {
        // RFC 4231 test case 2, with the signed message split as "t.body".
        let tag = hmac_sha256(b"Jefe", &[b"what do ya want ", b"for nothing?"]);
        let hex: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert_eq!(digest(b"k", 1, b"x").len(), 64);
    }

    #[test]
    fn sign_and_verify_with_rotation() {
        let body = br#"{"id":"evt_1"}"#;
        let header = signature_header(&["whsec_new", "whsec_old"], 1_700_000_000, body);
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(header.matches("v1=").count(), 2);
        assert_eq!(verify(&header, "whsec_new", body, 1_700_000_100, 300), Ok(()));
        assert_eq!(verify(&header, "whsec_old", body, 1_700_000_100, 300), Ok(()));
        assert_eq!(verify(&header, "whsec_other", body, 1_700_000_100, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&header, "whsec_new", b"{\"id\": \"evt_1\"}", 1_700_000_100, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&header, "whsec_new", body, 1_700_000_301, 300), Err(VerifyError::OutsideTolerance));
        assert_eq!(verify(&header, "whsec_new", body, 1_699_999_699, 300), Err(VerifyError::OutsideTolerance));
        assert_eq!(verify("v1=abc", "whsec_new", body, 0, 300), Err(VerifyError::Malformed));
        assert_eq!(verify("t=1", "whsec_new", body, 1, 300), Err(VerifyError::Malformed));
    }

    #[test]
    fn standard_webhooks_reference_vector() {
        // The example of the Standard Webhooks specification's reference implementations.
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let id = "msg_p5jXN8AQM9LWM0D4loKWxJek";
        let body = br#"{"test": 2432232314}"#;
        let header = standard_signature_header(&[secret], id, 1_614_265_330, body).unwrap();
        assert_eq!(header, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert_eq!(verify_standard(id, "1614265330", &header, secret, body, 1_614_265_330, 300), Ok(()));
        assert_eq!(
            verify_standard(id, "1614265330", &header, secret, b"{}", 1_614_265_330, 300),
            Err(VerifyError::NoMatch)
        );
        let two = standard_signature_header(&["whsec_AAAA", secret], id, 1_614_265_330, body).unwrap();
        assert_eq!(verify_standard(id, "1614265330", &two, secret, body, 1_614_265_330, 300), Ok(()));
    }
}
