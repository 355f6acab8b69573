//! The worker runtime: runs the time-based jobs on a schedule until told to stop.
//!
//! Every job claims its rows with `FOR UPDATE SKIP LOCKED` and is idempotent, so any number of
//! workers (in `serve` processes or `worker` processes) can run at once.

use std::time::Duration;

use tokio::sync::watch;

use crate::wiring::Adapters;

pub async fn run(adapters: Adapters, interval: Duration, mut stop: watch::Receiver<bool>) {
    tracing::info!(interval_ms = interval.as_millis(), "worker started");
    loop {
        match crate::jobs::run_due(&adapters).await {
            Ok(done) if done > 0 => {
                tracing::info!(transitions = done, "worker ran due transitions")
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "worker pass failed; retrying next tick"),
        }
        tokio::select! {
            _ = tokio::time::sleep(interval) => {}
            _ = stop.changed() => break,
        }
    }
    tracing::info!("worker stopped");
}
