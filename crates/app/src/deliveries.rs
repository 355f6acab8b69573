//! The webhook delivery loop: woken by `LISTEN/NOTIFY` when deliveries are inserted, it claims
//! due deliveries with a lease, sends up to [`CONCURRENCY`] at once, and records the attempts in
//! batches. With nothing due and nothing in flight it rests until the next retry or lease's end
//! (the domain's schedule); otherwise, and while the notification connection is down, it looks
//! every second.
//!
//! At least once, never lost: a delivery is claimed for a lease (longer than an attempt may
//! take: its time limit and 5 s to record it); a worker killed mid-attempt leaves it
//! `delivering` until the lease runs out, and then any worker sends the same attempt again. A
//! record is written only while its claim holds.

use std::sync::Arc;
use std::time::Duration;

use stablepay_domain::schedule::WorkKind;
use stablepay_domain::webhook::ports::AttemptRecord;
use tokio::sync::{Notify, Semaphore, mpsc, watch};

use crate::wiring::Adapters;

/// Attempts in flight at once in this process.
pub const CONCURRENCY: usize = 256;
/// Deliveries claimed at most per query.
const CLAIM_BATCH: usize = 200;
/// The busy pace: how often the loop looks while attempts are in flight or no notification comes.
const POLL: Duration = Duration::from_secs(1);
/// Records written per transaction at most, and how long one waits for more.
const RECORD_BATCH: usize = 256;
const RECORD_WAIT: Duration = Duration::from_millis(5);

pub async fn run(adapters: Adapters, database_url: String, mut stop: watch::Receiver<bool>) {
    let wake = Arc::new(Notify::new());
    let listening = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let listener = stablepay_postgres::listen_for_deliveries(database_url, wake.clone(), listening.clone());
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    let (records_tx, records_rx) = mpsc::channel::<AttemptRecord>(CONCURRENCY * 2);
    let recorder = tokio::spawn(record(adapters.clone(), records_rx));
    tracing::info!(concurrency = CONCURRENCY, "webhook delivery worker started");
    loop {
        if *stop.borrow() {
            break;
        }
        let free = slots.available_permits().min(CLAIM_BATCH);
        let mut claimed_full = false;
        let mut claimed_none = false;
        if free > 0 {
            let lease_ms = u32::try_from(adapters.webhook_lease.as_millis()).unwrap_or(u32::MAX);
            match adapters.use_cases().webhooks().claim_due(u32::try_from(free).unwrap_or(1), lease_ms).await {
                Ok(batch) => {
                    claimed_full = batch.len() == free;
                    claimed_none = batch.is_empty();
                    for claimed in batch {
                        let Ok(permit) = slots.clone().acquire_owned().await else { break };
                        let (adapters, tx) = (adapters.clone(), records_tx.clone());
                        tokio::spawn(async move {
                            let record =
                                adapters.use_cases().webhooks().attempt(adapters.sender.as_ref(), claimed).await;
                            drop(permit);
                            // The recorder lives as long as this loop; if it is gone, the lease
                            // runs out and the attempt is made again.
                            let _ = tx.send(record).await;
                        });
                    }
                }
                Err(e) => tracing::warn!(error = %e, "claiming webhook deliveries failed; retrying"),
            }
        }
        if claimed_full && slots.available_permits() > 0 {
            continue;
        }
        // Nothing claimed and nothing in flight: rest until the next retry or lease's end (the
        // notification wakes the loop for new deliveries); otherwise the busy pace.
        let pause = if claimed_none && slots.available_permits() == CONCURRENCY {
            let listening = listening.load(std::sync::atomic::Ordering::Relaxed);
            crate::worker::idle_rest(&adapters, listening, WorkKind::WebhookDeliveries, POLL).await
        } else {
            POLL
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(pause) => {}
            // A slot came free while every slot was busy.
            _ = slots.acquire(), if slots.available_permits() == 0 => {}
            _ = stop.changed() => {}
        }
    }
    // Let the attempts in flight finish (each is bounded by its time limit), then the records.
    let _ = tokio::time::timeout(
        adapters.webhook_lease,
        slots.acquire_many(u32::try_from(CONCURRENCY).unwrap_or(u32::MAX)),
    )
    .await;
    drop(records_tx);
    let _ = tokio::time::timeout(Duration::from_secs(5), recorder).await;
    listener.abort();
    tracing::info!("webhook delivery worker stopped");
}

/// Writes records in batches (one transaction each). A batch that cannot be written is retried
/// a few times; after that its deliveries stay claimed until their leases run out and are
/// attempted again (at least once).
async fn record(adapters: Adapters, mut rx: mpsc::Receiver<AttemptRecord>) {
    let mut batch = Vec::with_capacity(RECORD_BATCH);
    while let Some(first) = rx.recv().await {
        batch.push(first);
        let deadline = tokio::time::Instant::now() + RECORD_WAIT;
        while batch.len() < RECORD_BATCH {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(r)) => batch.push(r),
                _ => break,
            }
        }
        let mut tries = 0;
        loop {
            match adapters.use_cases().webhooks().record(&batch).await {
                Ok(()) => break,
                Err(e) if tries < 3 => {
                    tries += 1;
                    tracing::warn!(error = %e, records = batch.len(), "recording webhook attempts failed; retrying");
                    tokio::time::sleep(Duration::from_millis(200 * tries)).await;
                }
                Err(e) => {
                    tracing::error!(error = %e, records = batch.len(), "webhook attempts not recorded; they run again after their lease");
                    break;
                }
            }
        }
        for r in &batch {
            let outcome = r.attempt.outcome.error_category.map_or("delivered", |c| c.as_str());
            metrics::counter!("stablepay_webhook_attempts_total", "outcome" => outcome).increment(1);
            if let Some(category) = r.attempt.outcome.error_category {
                tracing::info!(delivery = %r.delivery_id, attempt = r.attempt.number, category = category.as_str(), status = ?r.attempt.outcome.status_code, "webhook attempt failed");
            }
        }
        batch.clear();
    }
}
