//! What a request gets: the use cases over this HTTP worker's ports, and what the HTTP layer
//! itself needs (the worker's state, the trusted proxies, request ids, a request's clock).

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use stablepay_domain::api_key::Principal;
use stablepay_domain::clock::{Clock, time_in_mode};
use stablepay_domain::ids::random_base62;
use stablepay_domain::use_cases::UseCases;
use stablepay_domain::{Error, Scope};

use crate::client::TrustedProxies;
use crate::status::WorkerStatus;

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

    /// A new request id: `req_` + 22 base62 characters.
    pub fn new_request_id(&self) -> String {
        format!("req_{}", random_base62(self.use_cases.crypto(), 22))
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
