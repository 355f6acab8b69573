//! Idempotent requests: a key is claimed for a request's fingerprint, the first request runs,
//! its answer is recorded for replay, and a failure a retry may fix releases the key.

use crate::crypto::Crypto;
use crate::error::Error;
use crate::idempotency::model::{IdempotencyBegin, IdempotencyNamespace};
use crate::idempotency::ports::IdempotencyStore;

/// An in-progress claim older than this is considered abandoned by a crashed process.
pub const STALE_AFTER_SECONDS: i64 = 60;

/// The idempotency use cases over their store.
pub struct Idempotency<'a> {
    /// Claims and saved answers.
    pub store: &'a dyn IdempotencyStore,
    /// The fingerprint's hash.
    pub crypto: &'a dyn Crypto,
}

impl Idempotency<'_> {
    /// What identifies a request under a key: its method, path and exact body.
    pub fn fingerprint(&self, method: &str, path: &str, body: &[u8]) -> [u8; 32] {
        let mut material = Vec::with_capacity(body.len() + 64);
        material.extend_from_slice(method.as_bytes());
        material.push(b'\n');
        material.extend_from_slice(path.as_bytes());
        material.push(b'\n');
        material.extend_from_slice(body);
        self.crypto.sha256(&material)
    }

    /// Claims `key` for a request with `fingerprint`: run it, replay an answer, wait, or refuse
    /// a different request (a claim abandoned for [`STALE_AFTER_SECONDS`] is taken over).
    pub async fn claim(
        &self,
        namespace: &IdempotencyNamespace,
        key: &str,
        fingerprint: [u8; 32],
    ) -> Result<IdempotencyBegin, Error> {
        self.store.begin(namespace, key, fingerprint, STALE_AFTER_SECONDS).await
    }

    /// Records the answer of a claimed request for replay.
    pub async fn record(
        &self,
        namespace: &IdempotencyNamespace,
        key: &str,
        status: u16,
        body: &str,
    ) -> Result<(), Error> {
        self.store.complete(namespace, key, status, body).await
    }

    /// Releases a claim whose request failed in a way a retry may fix.
    pub async fn release(&self, namespace: &IdempotencyNamespace, key: &str) -> Result<(), Error> {
        self.store.abandon(namespace, key).await
    }
}
