//! Webhook adapter of stablepay: the signature scheme of the spec ("Signature").
//!
//! `X-Service-Signature: t=<timestamp>,v1=<digest>[,v1=<digest>...]` where digest is the
//! lowercase hex HMAC-SHA256, keyed with the endpoint's signing secret, of the UTF-8 timestamp,
//! a literal `.`, and the exact raw body. The timestamp is Unix seconds. During a secret
//! rotation the header carries one `v1` per valid secret (new first). The delivery worker,
//! retries and the destination guard arrive with the webhook-delivery issue.

use ring::hmac;

/// Default replay tolerance in seconds.
pub const DEFAULT_TOLERANCE_SECONDS: i64 = 300;

/// The lowercase hex HMAC-SHA256 of `timestamp.body` under `secret`.
pub fn digest(secret: &[u8], timestamp: i64, body: &[u8]) -> String {
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut ctx = hmac::Context::with_key(&key);
    ctx.update(timestamp.to_string().as_bytes());
    ctx.update(b".");
    ctx.update(body);
    ctx.sign().as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The signature header value for `body` signed with every secret in `secrets` (newest first).
pub fn signature_header(secrets: &[&[u8]], timestamp: i64, body: &[u8]) -> String {
    let mut header = format!("t={timestamp}");
    for secret in secrets {
        header.push_str(",v1=");
        header.push_str(&digest(secret, timestamp, body));
    }
    header
}

/// Why a signature was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VerifyError {
    Malformed,
    OutsideTolerance,
    NoMatch,
}

/// Verifies a header against `secret` at `now` (Unix seconds): the timestamp must be within
/// `tolerance` seconds and any `v1` must match, compared in constant time.
pub fn verify(header: &str, secret: &[u8], body: &[u8], now: i64, tolerance: i64) -> Result<(), VerifyError> {
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
    let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
    let mut signed = t.to_string().into_bytes();
    signed.push(b'.');
    signed.extend_from_slice(body);
    let ok = candidates.iter().any(|hex| decode_hex(hex).is_some_and(|tag| hmac::verify(&key, &signed, &tag).is_ok()));
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
        let key = b"Jefe";
        let d = {
            let k = hmac::Key::new(hmac::HMAC_SHA256, key);
            hmac::sign(&k, b"what do ya want for nothing?")
                .as_ref()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect::<String>()
        };
        assert_eq!(d, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
        assert_eq!(digest(b"k", 1, b"x").len(), 64);
    }

    #[test]
    fn sign_and_verify_with_rotation() {
        let body = br#"{"id":"evt_1"}"#;
        let header = signature_header(&[b"new", b"old"], 1_700_000_000, body);
        assert!(header.starts_with("t=1700000000,v1="));
        assert_eq!(header.matches("v1=").count(), 2);
        assert_eq!(verify(&header, b"new", body, 1_700_000_100, 300), Ok(()));
        assert_eq!(verify(&header, b"old", body, 1_700_000_100, 300), Ok(()));
        assert_eq!(verify(&header, b"other", body, 1_700_000_100, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&header, b"new", b"{\"id\": \"evt_1\"}", 1_700_000_100, 300), Err(VerifyError::NoMatch));
        assert_eq!(verify(&header, b"new", body, 1_700_000_301, 300), Err(VerifyError::OutsideTolerance));
        assert_eq!(verify(&header, b"new", body, 1_699_999_699, 300), Err(VerifyError::OutsideTolerance));
        assert_eq!(verify("v1=abc", b"new", body, 0, 300), Err(VerifyError::Malformed));
        assert_eq!(verify("t=1", b"new", body, 1, 300), Err(VerifyError::Malformed));
    }
}
