//! What handlers share: the ports, configuration, and the request id source.

use std::sync::Arc;

use stablepay_domain::ids::random_base62;
use stablepay_domain::ports::{ApiKeyStore, Clock, Crypto, EventStore, Health};

/// The application state handed to every handler.
pub struct AppState {
    pub keys: Arc<dyn ApiKeyStore>,
    pub crypto: Arc<dyn Crypto>,
    pub clock: Arc<dyn Clock>,
    pub health: Arc<dyn Health>,
    pub events: Arc<dyn EventStore>,
    /// Base URL of this service as customers reach it (checkoutUrl, hostedInvoiceUrl).
    pub public_base_url: String,
}

impl AppState {
    /// A new request id: `req_` + 22 base62 characters.
    pub fn new_request_id(&self) -> String {
        format!("req_{}", random_base62(self.crypto.as_ref(), 22))
    }
}
