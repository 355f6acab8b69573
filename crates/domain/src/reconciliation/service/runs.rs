//! The reconciliation-run use cases: ask for a run of a live period, read and list runs and
//! their items, and (the worker) read the chain for the period and match it with the books.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use crate::chain::model::{LoggedTransfer, ScanPass, TransferQuery};
use crate::chain::ports::Chain;
use crate::chain::service::{Follower, first_block_at_or_after};
use crate::clock::Clock;
use crate::crypto::Crypto;
use crate::error::{Error, Resource};
use crate::export::model::check_range;
use crate::idempotency::model::IdempotencyClaim;
use crate::ids::ReconciliationRunId;
use crate::merchant::model::{ChainSettings, MerchantStatus, WalletAddress};
use crate::merchant::ports::MerchantStore;
use crate::mode::{Mode, Scope};
use crate::page::{Page, PageRequest};
use crate::reconciliation::ports::ReconciliationRunStore;
use crate::reconciliation::run::{
    BLOCKS_PER_QUERY, FinishedRun, ItemFilter, LogKey, LogOwner, RUN_LEASE_SECONDS, ReconciliationRun, RunCoverage,
    RunItem, RunStatus, reconcile, unclaimed,
};

/// The reconciliation-run use cases.
pub struct ReconciliationRuns<'a> {
    /// Runs, their items, and the books they read.
    pub store: &'a dyn ReconciliationRunStore,
    /// The live chain.
    pub chain: &'a dyn Chain,
    /// Merchants (their settlement wallets).
    pub merchants: &'a dyn MerchantStore,
    /// The live chain's id and token contracts.
    pub settings: &'a ChainSettings,
    /// Run ids.
    pub crypto: &'a dyn Crypto,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
    /// The idempotency key of the request these use cases serve.
    pub claim: Option<IdempotencyClaim>,
}

/// What a worker's pass did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RunStep {
    /// No run was waiting.
    Idle,
    /// The run completed.
    Completed(ReconciliationRunId),
    /// The run failed (the merchant is not live any more, or the period has no block).
    Failed(ReconciliationRunId),
    /// The worker is stopping, or the run was taken over: left for its lease to run out.
    Interrupted(ReconciliationRunId),
}

impl ReconciliationRuns<'_> {
    /// `POST /v1/reconciliation-runs`: a queued run of `[from, to)` (at most 366 days). Errors:
    /// `FeatureUnavailable` in test mode (there is no chain to read); `ActiveMerchantRequired`
    /// for a merchant not activated for live mode; `Validation` on `to`; `ExportRangeTooLarge`.
    pub async fn create(
        &self,
        scope: &Scope,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<ReconciliationRun, Error> {
        if scope.mode == Mode::Test {
            return Err(Error::FeatureUnavailable(
                "reconciliation runs in test mode: they read the live chain; use a live key",
            ));
        }
        check_range(from, to)?;
        if self.merchants.get_merchant(&scope.merchant_id).await?.live.is_none() {
            return Err(Error::ActiveMerchantRequired);
        }
        let run = ReconciliationRun::queued(self.crypto, scope.clone(), (from, to), self.clock.now(scope).await?);
        self.store.insert_run(&run, self.claim.clone()).await?;
        Ok(run)
    }

    /// One run. Errors: `NotFound(ReconciliationRun)`, `ModeMismatch`.
    pub async fn get(&self, scope: &Scope, id: &ReconciliationRunId) -> Result<ReconciliationRun, Error> {
        self.store.get_run(scope, id).await
    }

    /// Runs of `scope`, newest first. Errors: `InvalidCursor`.
    pub async fn list(
        &self,
        scope: &Scope,
        status: Option<RunStatus>,
        page: &PageRequest,
    ) -> Result<Page<ReconciliationRun>, Error> {
        self.store.list_runs(scope, status, page).await
    }

    /// The items of a run, in order (none before it completed). Errors: as [`Self::get`];
    /// `InvalidCursor`.
    pub async fn items(&self, scope: &Scope, items: &ItemFilter, page: &PageRequest) -> Result<Page<RunItem>, Error> {
        self.store.run_items(scope, items, page).await
    }

    /// The worker: claims one waiting run, reads the final blocks of its period (the first
    /// block at or after `from` to the last before `to`, or to the final block when the period
    /// is not final to its end), every `Transfer` log of the live tokens into the merchant's
    /// wallets in bounded block ranges, and the payments credited in those blocks, and stores
    /// the matched items at once. A chain or store failure leaves the run running; after its
    /// lease another worker starts it again.
    ///
    /// A transfer log of the period that nothing was done with (the follower never decided it:
    /// a block it could not read, a node that lied) is handed to `follower`, which credits it,
    /// holds it or records it now, before the items are made.
    pub async fn run_one(
        &self,
        stopping: &(dyn Fn() -> bool + Sync),
        follower: Option<&Follower<'_>>,
    ) -> Result<RunStep, Error> {
        let Some(run) = self.store.claim_run(RUN_LEASE_SECONDS).await? else { return Ok(RunStep::Idle) };
        let id = run.id.clone();
        let wallet = match self.merchants.get_merchant(&run.scope.merchant_id).await {
            Ok(m) => m.live.map(|l| l.wallet),
            Err(Error::NotFound(Resource::Merchant)) => None,
            Err(e) => return Err(e),
        };
        let Some(wallet) = wallet else {
            let now = self.clock.now(&run.scope).await?;
            self.store.fail_run(&id, "the merchant is not activated for live mode", now).await?;
            return Ok(RunStep::Failed(id));
        };
        let final_block = self.chain.final_head().await?;
        let mut coverage = RunCoverage { final_block: Some(final_block), ..RunCoverage::default() };
        let first = first_block_at_or_after(self.chain, run.from, final_block).await?;
        let end = first_block_at_or_after(self.chain, run.to, final_block).await?;
        let (mut transfers, mut payments) = (Vec::new(), Vec::new());
        let mut wallets = vec![wallet];
        if let (Some(first), last) = (first, end.map_or(final_block, |e| e.saturating_sub(1))) {
            coverage.complete = end.is_some();
            if first <= last {
                coverage.from_block = Some(first);
                coverage.to_block = Some(last);
                payments = self.store.credited_payments(&run.scope, self.settings.chain_id, (first, last)).await?;
                for p in &payments {
                    if !wallets.contains(&p.settlement_wallet) {
                        wallets.push(p.settlement_wallet.clone());
                    }
                }
                match self.scan(&id, (first, last), &wallets, stopping).await? {
                    Some(found) => transfers = found,
                    None => return Ok(RunStep::Interrupted(id)),
                }
            }
        }
        coverage.wallets = wallets;
        let keys: Vec<LogKey> = unclaimed(&transfers, &payments);
        let mut owners = self.owners(&run.scope, &keys).await?;
        if let Some(follower) = follower
            && self.decide_missed(follower, &transfers, &keys, &owners).await? > 0
        {
            if let (Some(first), Some(last)) = (coverage.from_block, coverage.to_block) {
                payments = self.store.credited_payments(&run.scope, self.settings.chain_id, (first, last)).await?;
            }
            owners = self.owners(&run.scope, &unclaimed(&transfers, &payments)).await?;
        }
        let (items, elsewhere) = reconcile(&transfers, &payments, &owners, self.settings);
        coverage.credited_elsewhere = elsewhere;
        let found = FinishedRun { coverage, items, completed_at: self.clock.now(&run.scope).await? };
        if self.store.finish_run(&id, &found).await? {
            Ok(RunStep::Completed(id))
        } else {
            Ok(RunStep::Interrupted(id))
        }
    }

    /// What is known of the logs `keys` no payment of `scope` is credited with.
    async fn owners(&self, scope: &Scope, keys: &[LogKey]) -> Result<HashMap<LogKey, LogOwner>, Error> {
        if keys.is_empty() {
            return Ok(HashMap::new());
        }
        self.store.log_owners(scope, self.settings.chain_id, keys).await
    }

    /// Hands the logs of `transfers` among `keys` that nothing is known of to `follower`;
    /// answers how many it decided.
    async fn decide_missed(
        &self,
        follower: &Follower<'_>,
        transfers: &[LoggedTransfer],
        keys: &[LogKey],
        owners: &HashMap<LogKey, LogOwner>,
    ) -> Result<usize, Error> {
        let mut decided = 0;
        for t in transfers {
            let key = (t.tx_hash.clone(), t.transfer.log_index);
            if keys.contains(&key) && !owners.contains_key(&key) && follower.decide_missed(t).await? {
                decided += 1;
            }
        }
        Ok(decided)
    }

    /// The worker, once a day: queues a run of the previous UTC day for every merchant live
    /// before its end (once per day, whichever worker comes first). Answers how many runs were
    /// queued.
    pub async fn queue_daily(&self, now: DateTime<Utc>) -> Result<usize, Error> {
        let end = now.date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
        let from = end - chrono::Duration::days(1);
        if self.store.daily_runs_queued(from).await? {
            return Ok(0);
        }
        let runs: Vec<ReconciliationRun> = self
            .merchants
            .list_merchants()
            .await?
            .into_iter()
            .filter(|m| m.status == MerchantStatus::Active && m.live.as_ref().is_some_and(|l| l.activated_at < end))
            .map(|m| ReconciliationRun::queued(self.crypto, Scope::new(m.id, Mode::Live), (from, end), now))
            .collect();
        if runs.is_empty() {
            return Ok(0);
        }
        self.store.insert_daily_runs(&runs).await
    }

    /// Every transfer log of the live tokens into `wallets` in blocks `from..=to`, asked for in
    /// ranges of [`BLOCKS_PER_QUERY`] blocks, the run's lease extended after each; `None` when
    /// the worker is stopping or lost the run.
    async fn scan(
        &self,
        id: &ReconciliationRunId,
        (from, to): (u64, u64),
        wallets: &[WalletAddress],
        stopping: &(dyn Fn() -> bool + Sync),
    ) -> Result<Option<Vec<LoggedTransfer>>, Error> {
        let tokens = vec![self.settings.usdc.clone(), self.settings.usdt.clone()];
        let mut asked = TransferQuery { blocks: (from, to), tokens, wallets: wallets.to_vec(), pass: ScanPass::First };
        let mut found = Vec::new();
        let mut start = from;
        while start <= to {
            if stopping() || !self.store.extend_run(id, RUN_LEASE_SECONDS).await? {
                return Ok(None);
            }
            let end = to.min(start.saturating_add(BLOCKS_PER_QUERY - 1));
            asked.blocks = (start, end);
            let scan = self.chain.transfers(&asked).await?;
            found.extend(scan.logs);
            start = end.saturating_add(1);
        }
        Ok(Some(found))
    }
}

#[cfg(test)]
mod tests;
