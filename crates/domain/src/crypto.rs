//! The crypto port: randomness, digests and the HMAC of one-time codes. It sits below everything that makes ids, keys or
//! tokens, and imports nothing of the domain.

/// Randomness and digests.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Crypto: Send + Sync {
    /// Fills `buf` from a cryptographically secure source.
    fn fill_random(&self, buf: &mut [u8]);
    /// SHA-256 of `data`.
    fn sha256(&self, data: &[u8]) -> [u8; 32];
    /// HMAC-SHA-1 of `data` under `key` (only for RFC 6238 one-time codes, which name it).
    fn hmac_sha1(&self, key: &[u8], data: &[u8]) -> [u8; 20];
    /// HMAC-SHA-256 of `data` under `key` (EIP-3009 authorization nonces).
    fn hmac_sha256(&self, key: &[u8], data: &[u8]) -> [u8; 32];
}
