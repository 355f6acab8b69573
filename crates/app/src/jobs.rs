//! The due jobs the worker runs each tick.

use stablepay_domain::Error;
use stablepay_domain::ports::IdempotencyStore;

use crate::wiring::Adapters;

/// Runs every due time-based transition (checkout expiry, invoice expiry, past due) and purges
/// idempotency keys past their 24-hour window; returns how many invoices changed.
pub async fn run_due(adapters: &Adapters) -> Result<usize, Error> {
    let done = adapters.billing().run_due(None, 50).await?;
    let purged = adapters.store.purge_expired().await?;
    if purged > 0 {
        tracing::info!(purged, "expired idempotency keys removed");
    }
    Ok(done)
}
