//! Idempotent requests: a key is claimed for a request's fingerprint, the first request runs,
//! its answer is recorded for replay, and a failure a retry may fix releases the key.

use crate::crypto::Crypto;
use crate::error::Error;
use crate::idempotency::model::{IdempotencyBegin, IdempotencyClaim, KeyedRequest};
use crate::idempotency::ports::IdempotencyStore;

/// The idempotency use cases over their store.
pub struct Idempotency<'a> {
    /// Claims and saved answers.
    pub store: &'a dyn IdempotencyStore,
    /// The fingerprint's hash.
    pub crypto: &'a dyn Crypto,
    /// Seconds after which an uncommitted claim is taken over
    /// ([`STALE_AFTER_SECONDS`](crate::idempotency::model::STALE_AFTER_SECONDS) by default).
    pub lease_seconds: i64,
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

    /// Claims the key of `request`: run it, replay an answer, answer again what committed,
    /// wait, or refuse a different request (an uncommitted claim abandoned for the lease is
    /// taken over).
    pub async fn claim(&self, request: &KeyedRequest) -> Result<IdempotencyBegin, Error> {
        self.store.begin(request, self.lease_seconds).await
    }

    /// Records the answer of a claimed request for replay.
    pub async fn record(&self, claim: &IdempotencyClaim, status: u16, body: &str) -> Result<(), Error> {
        self.store.complete(claim, status, body).await
    }

    /// Records the answer rebuilt for `request`, whose work committed without one.
    pub async fn record_committed(&self, request: &KeyedRequest, status: u16, body: &str) -> Result<(), Error> {
        self.store.complete_committed(request, status, body).await
    }

    /// Releases a claim whose request failed in a way a retry may fix.
    pub async fn release(&self, claim: &IdempotencyClaim) -> Result<(), Error> {
        self.store.abandon(claim).await
    }
}
