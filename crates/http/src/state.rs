//! What handlers share: the ports, configuration, and the request id source.

use std::sync::Arc;

use stablepay_domain::billing::Billing;
use stablepay_domain::chain::Chain;
use stablepay_domain::ids::random_base62;
use stablepay_domain::ports::{ApiKeyStore, Clock, Crypto, EventStore, Health, IdempotencyStore, InvoiceStore};

/// The application state handed to every handler.
pub struct AppState {
    pub keys: Arc<dyn ApiKeyStore>,
    pub crypto: Arc<dyn Crypto>,
    pub clock: Arc<dyn Clock>,
    pub health: Arc<dyn Health>,
    pub events: Arc<dyn EventStore>,
    pub invoices: Arc<dyn InvoiceStore>,
    pub idempotency: Arc<dyn IdempotencyStore>,
    pub chain: Arc<dyn Chain>,
    /// Base URL of this service as customers reach it (checkoutUrl, hostedInvoiceUrl).
    pub public_base_url: String,
}

impl AppState {
    /// The billing use cases over this state's ports.
    pub fn billing(&self) -> Billing<'_> {
        Billing {
            store: self.invoices.as_ref(),
            crypto: self.crypto.as_ref(),
            clock: self.clock.as_ref(),
            chain: self.chain.as_ref(),
        }
    }

    /// A new request id: `req_` + 22 base62 characters.
    pub fn new_request_id(&self) -> String {
        format!("req_{}", random_base62(self.crypto.as_ref(), 22))
    }
}
