//! The due jobs the worker runs each tick.

use stablepay_domain::Error;
use stablepay_domain::billing::DueReport;
use stablepay_domain::ports::IdempotencyStore;

use crate::wiring::Adapters;

/// Runs every due time-based transition (checkout expiry, invoice expiry, past due) and purges
/// idempotency keys past their 24-hour window. An invoice whose work fails is logged and backed
/// off; the others go on.
pub async fn run_due(adapters: &Adapters) -> Result<DueReport, Error> {
    let report = adapters.billing().run_due(None, 50).await?;
    for f in &report.failed {
        tracing::error!(
            invoice = %f.invoice,
            merchant = %f.scope.merchant_id,
            mode = %f.scope.mode,
            failures = f.failures,
            error = %f.error,
            "due work of an invoice failed; it is retried later with a backoff"
        );
    }
    let purged = adapters.store.purge_expired().await?;
    if purged > 0 {
        tracing::info!(purged, "expired idempotency keys removed");
    }
    Ok(report)
}
