//! The crypto port: randomness and digests. It sits below everything that makes ids, keys or
//! tokens, and imports nothing of the domain.

/// Randomness and digests.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
pub trait Crypto: Send + Sync {
    /// Fills `buf` from a cryptographically secure source.
    fn fill_random(&self, buf: &mut [u8]);
    /// SHA-256 of `data`.
    fn sha256(&self, data: &[u8]) -> [u8; 32];
}
