//! What reconciliation reads from the books.

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use std::collections::HashMap;

use crate::error::Error;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::ReconciliationRunId;
use crate::invoice::payment::Payment;
use crate::mode::Scope;
use crate::page::{Page, PageRequest};
use crate::reconciliation::model::{Discrepancy, DiscrepancyQuery, TokenSummary};
use crate::reconciliation::run::{FinishedRun, ItemFilter, LogKey, LogOwner, ReconciliationRun, RunItem, RunStatus};

/// The figures of a period, read from the store.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ReconciliationStore: Send + Sync {
    /// The figures of `scope` for `[from, to)` per token that had any (see [`TokenSummary`]
    /// for what each counts; the collectible states and the credited payment statuses are the
    /// domain's `is_collectible` and `is_credited`).
    async fn token_summaries(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<TokenSummary>, Error>;
    /// The discrepancies of `scope` that `asked` names, oldest first: unattributed transfers,
    /// overpaid and underpaid payments, and payments still unverified.
    async fn discrepancies(&self, scope: &Scope, asked: &DiscrepancyQuery) -> Result<Vec<Discrepancy>, Error>;
}

/// Reconciliation runs: their records, their items, and what a run reads from the books.
#[cfg_attr(any(test, feature = "mocks"), mockall::automock)]
#[async_trait]
pub trait ReconciliationRunStore: Send + Sync {
    /// Inserts a queued run (and marks `claim` committed in the same transaction). Errors:
    /// `IdempotencyClaimLost`.
    async fn insert_run(&self, run: &ReconciliationRun, claim: Option<IdempotencyClaim>) -> Result<(), Error>;
    /// Inserts the daily runs `runs` (queued, one per merchant and day: a run of the same
    /// merchant, mode and start queued daily before is kept instead). Answers how many were new.
    async fn insert_daily_runs(&self, runs: &[ReconciliationRun]) -> Result<usize, Error>;
    /// Whether the daily runs of the day starting at `from` were queued already.
    async fn daily_runs_queued(&self, from: DateTime<Utc>) -> Result<bool, Error>;
    /// A run with its totals. Errors: `NotFound(ReconciliationRun)` for an unknown or foreign
    /// id; `ModeMismatch` for one of the other mode.
    async fn get_run(&self, scope: &Scope, id: &ReconciliationRunId) -> Result<ReconciliationRun, Error>;
    /// Runs of `scope`, newest first, only those of `status` when given. Errors:
    /// `InvalidCursor`.
    async fn list_runs(
        &self,
        scope: &Scope,
        status: Option<RunStatus>,
        page: &PageRequest,
    ) -> Result<Page<ReconciliationRun>, Error>;
    /// The items of a completed run in their order (`line`), as `items` asks; the cursor is an
    /// item's `line`. Errors: `NotFound(ReconciliationRun)` for an
    /// unknown or foreign run, `ModeMismatch` for one of the other mode, `InvalidCursor`.
    async fn run_items(&self, scope: &Scope, items: &ItemFilter, page: &PageRequest) -> Result<Page<RunItem>, Error>;
    /// Claims the oldest queued run, or a running one whose lease ran out (a worker that
    /// died): marks it running for `lease_seconds` and answers it. Several workers never hold
    /// one run at once.
    async fn claim_run(&self, lease_seconds: u32) -> Result<Option<ReconciliationRun>, Error>;
    /// Extends a running run's lease; answers `false` when it is no longer running.
    async fn extend_run(&self, id: &ReconciliationRunId, lease_seconds: u32) -> Result<bool, Error>;
    /// Completes a running run with what it `found`, in one transaction; answers `false`
    /// (writing nothing) when it is no longer running.
    async fn finish_run(&self, id: &ReconciliationRunId, found: &FinishedRun) -> Result<bool, Error>;
    /// Marks a running run failed with `message`.
    async fn fail_run(&self, id: &ReconciliationRunId, message: &str, failed_at: DateTime<Utc>) -> Result<(), Error>;
    /// The payments of `scope` credited (confirmed, underpaid or overpaid) with transfers in
    /// blocks `from..=to` (`blocks`) of `chain_id`.
    async fn credited_payments(&self, scope: &Scope, chain_id: u64, blocks: (u64, u64)) -> Result<Vec<Payment>, Error>;
    /// What is known of each of `logs` (of `chain_id`) that no payment of `scope` is credited
    /// with: credited elsewhere, unattributed for `scope`, or named by a payment of `scope`.
    /// Logs nothing is known of are left out.
    async fn log_owners(
        &self,
        scope: &Scope,
        chain_id: u64,
        logs: &[LogKey],
    ) -> Result<HashMap<LogKey, LogOwner>, Error>;
}
