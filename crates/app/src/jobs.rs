//! The due jobs the worker runs each tick.

use stablepay_domain::Error;
use stablepay_domain::invoice::service::DueReport;
use stablepay_domain::retention::Purged;
use stablepay_domain::retention::model::PURGE_BATCH;

use crate::wiring::Adapters;

/// Runs every due time-based transition (checkout expiry, invoice expiry, past due, payment
/// link expiry), queues the reminders whose slot came due, issues the monthly statements that
/// came due and mails those whose files are ready, delivers due emails, and purges one bounded
/// batch of what is past its retention (events a test clock aged, finished emails, idempotency
/// keys past their 24-hour window) and, each minute, looks after the months of events (made
/// ahead, dropped whole past retention). An invoice whose work fails is logged and backed off;
/// the others go on.
/// What one due pass did: the invoices' due work, and the email attempts that failed (counted
/// with the invoices whose work failed, so the worker shows `degraded` while emails fail).
pub struct DuePass {
    /// The invoices' due work.
    pub due: DueReport,
    /// Email attempts that failed or could not be made.
    pub emails_failed: usize,
    /// Whether the pass did anything (more may be waiting: the next pass comes at the busy
    /// pace); otherwise the loop rests until its next due time.
    pub busy: bool,
}

pub async fn run_due(adapters: &Adapters, stop: &tokio::sync::watch::Receiver<bool>) -> Result<DuePass, Error> {
    let stopping = || *stop.borrow();
    let report = adapters.use_cases().invoices().run_due_until(None, 50, &stopping).await?;
    if stopping() {
        return Ok(DuePass { due: report, emails_failed: 0, busy: true });
    }
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
    let mut busy = report.changed > 0;
    let announced = adapters.use_cases().links().announce_expiries(None).await?;
    busy |= announced > 0;
    if announced > 0 {
        tracing::info!(announced, "payment links expired");
    }
    if reminder_pass_due() {
        let reminders = adapters.use_cases().emails().schedule_reminders(None).await?;
        if reminders > 0 {
            tracing::info!(reminders, "scheduled reminders queued");
        }
        busy |= reminders > 0;
        let statements = adapters.use_cases().statements().issue_due(None).await?;
        if statements > 0 {
            tracing::info!(statements, "monthly statements issued; their exports are queued");
        }
        busy |= statements > 0;
    }
    let mailing = adapters.use_cases().statements().mail_ready(50).await?;
    busy |= mailing.mailed + mailing.failed > 0;
    if mailing.mailed > 0 {
        tracing::info!(mailed = mailing.mailed, "monthly statements ready; their emails are queued");
    }
    if mailing.failed > 0 {
        tracing::warn!(failed = mailing.failed, "monthly statements given up: one of their exports did not complete");
    }
    let (emails_busy, emails_failed) = deliver_outbox(adapters).await?;
    busy |= emails_busy;
    rotate_months(adapters).await?;
    let purged = adapters.use_cases().retention().purge(PURGE_BATCH).await?;
    busy |= purged != Purged::default();
    if purged != Purged::default() {
        tracing::info!(
            events = purged.events,
            emails = purged.emails,
            idempotency_keys = purged.idempotency_keys,
            "records past their retention removed"
        );
    }
    Ok(DuePass { due: report, emails_failed, busy })
}

/// Queues the webhook incidents' alerts (their notices), then attempts the one outbox's due
/// emails (invoices, reminders, statements, account links, notices): whether anything was
/// queued or attempted, and how many attempts failed or could not be made.
async fn deliver_outbox(adapters: &Adapters) -> Result<(bool, usize), Error> {
    let use_cases = adapters.use_cases();
    let alerts = use_cases.accounts().queue_incident_alerts(50).await?;
    if alerts > 0 {
        tracing::info!(alerts, "webhook incident alerts queued");
    }
    let lease = u32::try_from(adapters.email_lease.as_secs().saturating_add(1)).unwrap_or(u32::MAX);
    let delivered = use_cases.emails().deliver_due(50, lease).await?;
    for (email, error) in &delivered.errors {
        tracing::error!(email = %email, error = %error, "an email could not be attempted; retried when its lease ends");
    }
    if delivered.sent + delivered.not_sent > 0 {
        tracing::info!(sent = delivered.sent, not_sent = delivered.not_sent, "emails attempted");
    }
    if delivered.failed > 0 {
        tracing::warn!(failed = delivered.failed, "email attempts failed; each is retried with a backoff or given up");
    }
    let busy = alerts + delivered.sent + delivered.not_sent + delivered.errors.len() > 0;
    Ok((busy, delivered.failed + delivered.errors.len()))
}

/// Reminder slots are whole days apart and statements monthly: their candidates are scanned at
/// most this often (a test-clock advance queues its slots and issues its statement at once).
/// The months of events are looked after as often: a month is made three months ahead, and
/// dropped once past retention.
const REMINDER_PASS_SECONDS: u64 = 60;

/// Whether a pass that runs every [`REMINDER_PASS_SECONDS`] is due in this process, by the
/// time it last ran (`last`, marked now when it is due); the first is due at once.
fn minute_pass_due(last: &std::sync::atomic::AtomicU64) -> bool {
    use std::sync::atomic::Ordering;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let before = last.load(Ordering::Relaxed);
    (before == 0 || now >= before + REMINDER_PASS_SECONDS)
        && last.compare_exchange(before, now, Ordering::Relaxed, Ordering::Relaxed).is_ok()
}

/// Whether a reminder pass is due in this process (and, if so, marks it done now).
fn reminder_pass_due() -> bool {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    minute_pass_due(&LAST)
}

/// Whether the months of events are due to be looked after in this process.
fn months_pass_due() -> bool {
    static LAST: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    minute_pass_due(&LAST)
}

/// Makes the months of events ahead and drops the old ones, when due.
async fn rotate_months(adapters: &Adapters) -> Result<(), Error> {
    if !months_pass_due() {
        return Ok(());
    }
    let months = adapters.use_cases().retention().rotate_months().await?;
    if months.prepared > 0 {
        tracing::info!(months = months.prepared, "months of events made ahead");
    }
    if months.dropped > 0 {
        tracing::info!(months = months.dropped, "months of events past their retention dropped");
    }
    Ok(())
}

/// Payments verified in parallel by one pass.
const VERIFY_CONCURRENCY: usize = 16;
/// Payments claimed by one pass.
const VERIFY_BATCH: u32 = 256;

/// What one chain pass did.
#[derive(Debug, Default)]
pub struct ChainReport {
    pub verified: usize,
    pub settled: usize,
    pub deferred: usize,
    pub detected: usize,
    pub unattributed: usize,
    /// The batch was full: more payments may be due now.
    pub more: bool,
}

/// The follower's step of a chain pass: what it found goes into `report`, how far and how
/// completely it read into `status`. Answers the newest final block, when the chain told it.
async fn follow_pass(
    use_cases: &stablepay_domain::use_cases::UseCases,
    status: &stablepay_http::status::WorkerStatus,
    report: &mut ChainReport,
) -> Option<u64> {
    match use_cases.follower().follow().await {
        Ok(w) => {
            report.detected = w.detected.len();
            report.unattributed = w.unattributed;
            // Final blocks not yet scanned for transfers to merchants' wallets.
            let lag = w.final_head.zip(w.scanned_to).map(|(head, to)| head.saturating_sub(to));
            let now = use_cases.clock().system_now();
            status.followed(now, w.scanned_to, lag);
            if let Some(lag) = lag {
                metrics::gauge!("stablepay_chain_follow_lag_blocks").set(u32::try_from(lag).unwrap_or(u32::MAX));
            }
            let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
            status.follow_facts(stablepay_http::status::FollowFacts {
                uncertain_blocks: count(w.uncertain),
                held: w.held,
                disagreements: w.disagreements,
                second_pass_found: count(w.second_pass_found),
                rechecks_pending: w.rechecks_pending,
            });
            if w.second_pass_found > 0 {
                tracing::warn!(
                    found = w.second_pass_found,
                    "the second reading of final blocks found transfers the first had missed"
                );
            }
            if status.clock_skew_due(now)
                && let Ok(skew) = use_cases.follower().clock_skew().await
            {
                status.clock_skew(now, skew.num_seconds());
            }
            w.final_head
        }
        Err(e) => {
            tracing::warn!(error = %e, "following the chain failed; retrying next pass");
            // A follower that fails every pass falls behind: the lag says by how much.
            let head = use_cases.follower().final_head().await.ok();
            if let Some(lag) = status.follow_failed(head) {
                metrics::gauge!("stablepay_chain_follow_lag_blocks").set(u32::try_from(lag).unwrap_or(u32::MAX));
            }
            // Without a final block every payment in flight is checked: those the chain cannot
            // be asked about now wait with the reason as their diagnostic.
            head.or(Some(u64::try_from(i64::MAX).unwrap_or(u64::MAX)))
        }
    }
}

/// One pass over the live chain: follow transfers into merchants' wallets (when an RPC endpoint
/// is configured), then verify every payment in flight whose check is due. A payment the chain
/// cannot be asked about now waits with a diagnostic and is checked again after a backoff.
pub async fn chain_pass(
    adapters: &Adapters,
    poll: std::time::Duration,
    status: &stablepay_http::status::WorkerStatus,
) -> Result<ChainReport, Error> {
    use futures_util::StreamExt;
    use stablepay_domain::invoice::service::Checked;

    let use_cases = std::sync::Arc::new(adapters.use_cases());
    let mut report = ChainReport::default();
    let mut final_block = None;
    if adapters.chain.is_live() {
        final_block = follow_pass(&use_cases, status, &mut report).await;
    }
    // The claim keeps other workers off these payments for one interval: a payment still
    // waiting for finality is due again by the next pass (the pass itself takes longer than
    // the interval only under a backlog, and checking one twice is harmless).
    let lease = u32::try_from(poll.as_millis()).unwrap_or(u32::MAX).max(50);
    let claimed = use_cases.invoices().claim_checks(VERIFY_BATCH, lease, final_block).await?;
    report.verified = claimed.len();
    report.more = u32::try_from(claimed.len()).unwrap_or(u32::MAX) >= VERIFY_BATCH;
    // Each verification is a task of its own, so the runtime's threads share them: a crediting
    // that holds the merchant's number counter is resumed at once, not after its siblings.
    let outcomes: Vec<_> = futures_util::stream::iter(claimed)
        .map(|due| {
            let use_cases = use_cases.clone();
            tokio::spawn(async move {
                let outcome = use_cases.invoices().check(&due).await;
                (due.payment, outcome)
            })
        })
        .buffer_unordered(VERIFY_CONCURRENCY)
        .collect()
        .await;
    for joined in outcomes {
        let Ok((id, outcome)) = joined else {
            tracing::error!("a payment verification panicked; it is checked again after its lease");
            continue;
        };
        match outcome {
            Ok(Checked::Unchanged) => {}
            Ok(Checked::Settled(_)) => report.settled += 1,
            Ok(Checked::Deferred { cause, .. }) => {
                report.deferred += 1;
                if !matches!(cause, Error::Unavailable | Error::ChainUnavailable(_)) {
                    tracing::error!(payment = %id, error = %cause, "verifying a payment failed; retrying later");
                }
            }
            Err(e) => {
                report.deferred += 1;
                tracing::warn!(payment = %id, error = %e, "could not defer a payment; checked again after its lease");
            }
        }
    }
    Ok(report)
}
