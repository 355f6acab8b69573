//! What a request gets: the use cases over this HTTP worker's ports, and what the HTTP layer
//! itself needs (the worker's state, the trusted proxies, request ids, a request's clock).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use stablepay_domain::api_key::Principal;
use stablepay_domain::clock::{Clock, time_in_mode};
use stablepay_domain::ids::base62;
use stablepay_domain::use_cases::UseCases;
use stablepay_domain::{Error, Scope};

use crate::client::TrustedProxies;
use crate::status::WorkerStatus;

/// Bytes of randomness a thread draws at once for request ids.
const ID_POOL: usize = 4096;

thread_local! {
    /// This thread's randomness for request ids, and how much of it is used (all of it at first).
    static ID_BYTES: std::cell::RefCell<(Box<[u8; ID_POOL]>, usize)> =
        std::cell::RefCell::new((Box::new([0u8; ID_POOL]), ID_POOL));
}

/// The application state handed to every handler. It holds use cases, not ports: a handler
/// calls the domain, never a store.
pub struct AppState {
    /// Every use case over this HTTP worker's ports.
    pub use_cases: UseCases,
    /// The background worker of this process, as readiness and metrics show it.
    pub worker: Arc<WorkerStatus>,
    /// Proxies whose `X-Forwarded-For` names the client.
    pub trusted_proxies: TrustedProxies,
}

impl AppState {
    /// The clock of a request: its merchant's test-clock offset came with the key lookup.
    pub fn clock_for(&self, principal: &Principal) -> RequestClock {
        RequestClock {
            scope: principal.scope.clone(),
            offset_seconds: principal.test_clock_offset_seconds,
            fallback: self.use_cases.shared_clock(),
        }
    }

    /// A new request id: `req_` + 22 base62 characters of 22 random bytes, taken from this
    /// thread's pool of the operating system's randomness ([`ID_POOL`] bytes at a time: a
    /// request id names a request, it guards nothing, and one `getrandom` per request was a
    /// system call of every request).
    pub fn new_request_id(&self) -> String {
        const LEN: usize = 22;
        let mut bytes = [0u8; LEN];
        ID_BYTES.with(|pool| {
            let mut pool = pool.borrow_mut();
            let (buffer, used) = &mut *pool;
            if *used + LEN > ID_POOL {
                self.use_cases.crypto().fill_random(&mut buffer[..]);
                *used = 0;
            }
            bytes.copy_from_slice(&buffer[*used..*used + LEN]);
            *used += LEN;
        });
        let mut id = String::with_capacity(26);
        id.push_str("req_");
        id.push_str(&base62(&bytes, LEN));
        id
    }
}

/// A request's clock: the domain's time of the request's scope, from the test-clock offset read
/// with the request's key. Other scopes fall back to the store's clock.
#[derive(Clone)]
pub struct RequestClock {
    scope: Scope,
    offset_seconds: i64,
    fallback: Arc<dyn Clock>,
}

#[async_trait]
impl Clock for RequestClock {
    async fn now(&self, scope: &Scope) -> Result<DateTime<Utc>, Error> {
        if *scope != self.scope {
            return self.fallback.now(scope).await;
        }
        time_in_mode(Utc::now(), scope.mode, self.offset_seconds)
    }

    fn system_now(&self) -> DateTime<Utc> {
        Utc::now()
    }
}
