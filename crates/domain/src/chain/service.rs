//! Detection: following the live chain for token transfers into merchants' settlement wallets,
//! so a customer who paid without reporting the hash is still credited when the evidence names
//! one checkout (`chain::evidence`). Anything else is recorded as unattributed for the merchant
//! (with a `payment.unattributed` event; a dispute with its candidate checkouts), for a person
//! to decide: never guessed, never lost.
//!
//! The unit is a transfer log (transaction, log index, recipient). A final log into a watched
//! wallet always ends credited or unattributed: when a payment claiming it is still being
//! verified (a reported hash, or this follower's own attribution), the log is kept and decided
//! again once that payment is, so a failed or foreign claim never hides it.
//!
//! Only final blocks are scanned, from a stored cursor that any number of workers may advance
//! (each step is idempotent: an attributed transfer finds its payment already recorded, an
//! unattributed one its record, a deferred one its row).

use chrono::{DateTime, Duration, Utc};

use crate::chain::evidence::{Attribution, Claims, attribute};
use crate::chain::model::{
    CandidateQuery, Candidates, LogClaim, LoggedTransfer, Naming, OpenCheckout, ScanPass, TransferQuery, TransferScan,
    UnattributedReason, UnattributedStatus, UnattributedTransfer,
};
use crate::chain::ports::{Chain, FollowerStore};
use crate::chain::verify::in_range;
use crate::error::Error;
use crate::event::model::{Event, EventType};
use crate::ids::{CheckoutSessionId, EventId, PaymentId, UnattributedTransferId};
use crate::invoice::input::MAX_REASON_BYTES;
use crate::invoice::payment::{Evidence, Payment, TxHash};
use crate::invoice::service::Invoices;
use crate::invoice::validate::check_len;
use crate::mode::{Mode, Scope};
use crate::page::{Page, PageRequest};
use crate::schedule::model::Batch;

/// At most this many blocks are scanned in one step.
pub const MAX_BLOCKS_PER_SCAN: u64 = 500;

/// At most this many deferred transfer logs are decided again in one step.
pub const DEFERRED_PER_STEP: u32 = 200;

/// A follower without a cursor starts this many seconds before the oldest watched checkout
/// was created (block times are whole seconds, and clocks differ a little).
pub const START_MARGIN_SECONDS: i64 = 60;

/// How long the follower keeps retrying a range it could not confirm complete before it moves
/// on (the range is read again by the second pass, and by reconciliation runs). Short: a busy
/// block fills its bloom, so a range may stay uncertain with nothing missing, and a hold is
/// time the follower falls behind.
pub const UNCERTAIN_HOLD_SECONDS: i64 = 5;

/// At most this many ranges are read a second time in one step, each held for a minute.
pub const RECHECK_BATCH: Batch = Batch { limit: 20, lease_seconds: 60 };

/// The first of blocks `0..=final_block` whose time is at or after `at`, by bisection on block
/// times (`None` when even `final_block` is older). Errors: `Unavailable` when the chain does
/// not know a block it reported final; the chain's.
pub async fn first_block_at_or_after(
    chain: &dyn Chain,
    at: DateTime<Utc>,
    final_block: u64,
) -> Result<Option<u64>, Error> {
    let time = |n: u64| async move { chain.block_time(n).await?.ok_or(Error::Unavailable) };
    if time(final_block).await? < at {
        return Ok(None);
    }
    let (mut low, mut high) = (0u64, final_block);
    while low < high {
        let mid = low + (high - low) / 2;
        if time(mid).await? < at {
            low = mid + 1;
        } else {
            high = mid;
        }
    }
    Ok(Some(low))
}

/// What one step of following did.
#[derive(Debug, Default, PartialEq)]
pub struct FollowReport {
    /// The newest final block, as the chain answered it.
    pub final_head: Option<u64>,
    /// The last block scanned (this step, or before it when nothing new was final).
    pub scanned_to: Option<u64>,
    /// Payments recorded for attributed transfers.
    pub detected: Vec<(Scope, PaymentId, TxHash)>,
    /// Unattributed transfers recorded (new ones only).
    pub unattributed: usize,
    /// Blocks of the range scanned whose answer could not be confirmed complete.
    pub uncertain: usize,
    /// The cursor was held on an uncertain range, to read it again next step.
    pub held: bool,
    /// Endpoints that disagreed on a range (one left out logs another returned).
    pub disagreements: u64,
    /// Ranges read a second time in this step.
    pub rechecked: usize,
    /// Logs the second reading found that nothing had been done with: what the first reading
    /// missed (each credited or recorded now).
    pub second_pass_found: usize,
    /// Ranges still waiting for their second reading.
    pub rechecks_pending: u64,
}

/// The follower over the invoice use cases and its store.
pub struct Follower<'a> {
    /// The invoice use cases that verify and credit what the follower finds.
    pub invoices: Invoices<'a>,
    /// Where the follower keeps its position on the chain and the transfers it saw.
    pub store: &'a dyn FollowerStore,
}

impl Follower<'_> {
    /// A page of `scope`'s unattributed transfers in `status` (every status: `None`), newest
    /// first. Errors: `InvalidCursor`.
    pub async fn unattributed(
        &self,
        scope: &Scope,
        status: Option<UnattributedStatus>,
        page: &PageRequest,
    ) -> Result<Page<UnattributedTransfer>, Error> {
        self.store.list_unattributed(scope, status, page).await
    }

    /// `scope`'s unattributed transfer `id`. Errors: `NotFound(UnattributedTransfer)`.
    pub async fn unattributed_transfer(
        &self,
        scope: &Scope,
        id: &UnattributedTransferId,
    ) -> Result<UnattributedTransfer, Error> {
        self.store.get_unattributed(scope, id).await
    }

    /// A person decides: the recorded transfer `id` pays checkout `session_id` of the same
    /// merchant and mode, because `why`. Credited once, under the same checks as any
    /// verification, with the ordinary events; the record leaves the open list. Answers the
    /// record as it stands now and the payment. Errors: `Validation` on `reason` (1 to 500
    /// bytes); `NotFound(UnattributedTransfer)`; `NotFound(CheckoutSession)`, `ModeMismatch`;
    /// `TransferAlreadyAttributed`; `TransferDoesNotPay`.
    pub async fn attribute_by_hand(
        &self,
        scope: &Scope,
        id: &UnattributedTransferId,
        session_id: &CheckoutSessionId,
        why: &str,
    ) -> Result<(UnattributedTransfer, Payment), Error> {
        let why = why.trim();
        check_len("reason", why, 1, MAX_REASON_BYTES)?;
        let record = self.store.get_unattributed(scope, id).await?;
        if record.status == UnattributedStatus::Attributed {
            return Err(Error::TransferAlreadyAttributed);
        }
        let payment = self.invoices.attribute_recorded(scope, session_id, (&record, why)).await?;
        let record = self.store.get_unattributed(scope, id).await?;
        Ok((record, payment))
    }

    /// The service's clock less the time of the chain's newest block (a block is a few seconds
    /// old when read, so a few seconds when the clocks agree). Errors: the chain's.
    pub async fn clock_skew(&self) -> Result<Duration, Error> {
        let (_, mined) = self.invoices.chain.head().await?;
        Ok(self.invoices.clock.system_now() - mined)
    }

    /// The newest final block of the live chain (how far the follower could scan). Errors: the
    /// chain's.
    pub async fn final_head(&self) -> Result<u64, Error> {
        self.invoices.chain.final_head().await
    }

    /// Scans the next range of final blocks, after deciding again the transfer logs kept while
    /// a payment claiming them was in flight. The first step (no cursor yet) places the cursor
    /// [`START_MARGIN_SECONDS`] before the oldest watched live checkout was created (after the
    /// current final block when none is watched): a transfer paying a checkout created before
    /// the chain could first be reached is still found.
    pub async fn follow(&self) -> Result<FollowReport, Error> {
        let b = &self.invoices;
        let chain_id = b.settings.chain_id;
        let head = b.chain.final_head().await?;
        let mut report = FollowReport { final_head: Some(head), ..FollowReport::default() };
        self.decide_deferred(&mut report).await?;
        let Some(from) = self.store.scan_cursor(chain_id).await? else {
            let start = self.starting_block(head).await?;
            self.store.move_cursor(chain_id, None, start).await?;
            report.scanned_to = Some(start.saturating_sub(1));
            return Ok(report);
        };
        if from > head {
            report.scanned_to = Some(from.saturating_sub(1));
            self.second_pass(&mut report).await?;
            return Ok(report);
        }
        let to = head.min(from.saturating_add(MAX_BLOCKS_PER_SCAN - 1));
        let scan = self.scan((from, to), ScanPass::First, &mut report).await?;
        let now = b.clock.system_now();
        if !scan.uncertain.is_empty() {
            // A node that has not indexed the range yet answers nothing: read it again on the
            // next steps, for a while, then move on and leave it to the second pass.
            let since = self.store.hold_cursor(chain_id, from, now).await?;
            if now - since < Duration::seconds(UNCERTAIN_HOLD_SECONDS) {
                report.held = true;
                report.scanned_to = Some(from.saturating_sub(1));
                return Ok(report);
            }
        }
        self.store.queue_recheck(chain_id, from, to, now + b.settings.recheck_after).await?;
        self.store.move_cursor(chain_id, Some(from), to.saturating_add(1)).await?;
        report.scanned_to = Some(to);
        self.second_pass(&mut report).await?;
        Ok(report)
    }

    /// Reads blocks `from..=to` for transfers into watched wallets and handles each log found.
    async fn scan(
        &self,
        (from, to): (u64, u64),
        pass: ScanPass,
        report: &mut FollowReport,
    ) -> Result<TransferScan, Error> {
        let b = &self.invoices;
        let wallets = self.store.live_settlement_wallets().await?;
        if wallets.is_empty() {
            return Ok(TransferScan::default());
        }
        let tokens = vec![b.settings.usdc.clone(), b.settings.usdt.clone()];
        let scan = b.chain.transfers(&TransferQuery { blocks: (from, to), tokens, wallets, pass }).await?;
        report.uncertain += scan.uncertain.len();
        report.disagreements += scan.disagreements;
        for logged in &scan.logs {
            if pass == ScanPass::Second && !self.store.log_seen(b.settings.chain_id, logged).await? {
                report.second_pass_found += 1;
            }
            self.handle(logged, report).await?;
        }
        Ok(scan)
    }

    /// The second reading of the ranges due: each range of final blocks is read once more
    /// after [`ChainSettings::recheck_after`](crate::merchant::model::ChainSettings), through
    /// another endpoint where there is one, and what the first reading missed is credited or
    /// recorded now.
    async fn second_pass(&self, report: &mut FollowReport) -> Result<(), Error> {
        let b = &self.invoices;
        let chain_id = b.settings.chain_id;
        let now = b.clock.system_now();
        for range in self.store.claim_rechecks(chain_id, now, RECHECK_BATCH).await? {
            self.scan(range, ScanPass::Second, report).await?;
            self.store.finish_recheck(chain_id, range.0).await?;
            report.rechecked += 1;
        }
        report.rechecks_pending = self.store.rechecks_pending(chain_id).await?;
        Ok(())
    }

    /// A final transfer log a later reading found (a reconciliation run): when nothing was done
    /// with it yet, it is handled as the follower handles any log (credited, held or
    /// recorded). Answers whether it was. Errors: the stores' and the chain's.
    pub async fn decide_missed(&self, logged: &LoggedTransfer) -> Result<bool, Error> {
        if self.store.log_seen(self.invoices.settings.chain_id, logged).await? {
            return Ok(false);
        }
        self.handle(logged, &mut FollowReport::default()).await?;
        Ok(true)
    }

    /// Where following starts: the first block at or after [`START_MARGIN_SECONDS`] before the
    /// oldest watched live checkout was created, or after the current final block `head` when
    /// no checkout is watched (older transfers paid nothing the service can credit).
    async fn starting_block(&self, head: u64) -> Result<u64, Error> {
        let Some(created) = self.store.oldest_watched_checkout().await? else {
            return Ok(head.saturating_add(1));
        };
        let since = created - chrono::Duration::seconds(START_MARGIN_SECONDS);
        Ok(first_block_at_or_after(self.invoices.chain, since, head).await?.unwrap_or(head.saturating_add(1)))
    }

    /// The deferred logs whose claim is no longer in flight: forgotten once credited, else
    /// attributed now (the claim failed, or it paid another wallet).
    async fn decide_deferred(&self, report: &mut FollowReport) -> Result<(), Error> {
        let chain_id = self.invoices.settings.chain_id;
        for logged in self.store.deferred_transfers(chain_id, DEFERRED_PER_STEP).await? {
            match self.store.log_claim(chain_id, &logged).await? {
                LogClaim::InFlight(_) => continue,
                LogClaim::Credited => {}
                LogClaim::Free => self.attribute(&logged, report).await?,
            }
            self.store.forget_deferred(chain_id, &logged.tx_hash, logged.transfer.log_index).await?;
        }
        Ok(())
    }

    /// A final transfer log into a watched wallet: it ends credited or unattributed, whoever
    /// reported its hash to which checkout.
    async fn handle(&self, logged: &LoggedTransfer, report: &mut FollowReport) -> Result<(), Error> {
        let chain_id = self.invoices.settings.chain_id;
        match self.store.log_claim(chain_id, logged).await? {
            LogClaim::Credited => Ok(()),
            // A reported hash (or an earlier pass's attribution) is being verified: decided
            // again once it is (the next step after its verification), so a claim that fails
            // never hides the transfer, and one that stronger evidence contradicts fails
            // against it first.
            LogClaim::InFlight(_) => self.store.defer_transfer(chain_id, logged).await,
            LogClaim::Free => self.attribute(logged, report).await,
        }
    }

    /// What attribution weighs for `logged`: the checkouts that may take it and that its
    /// amount, its sender or its reports may name, and the ones its hash was reported for.
    async fn claims(&self, logged: &LoggedTransfer) -> Result<(Candidates, Vec<CheckoutSessionId>), Error> {
        let (b, t) = (&self.invoices, &logged.transfer);
        let reported = b.store.reported_checkouts(&logged.tx_hash, &t.to, &t.token_contract).await?;
        let naming = Naming {
            amount: t.amount.clone(),
            from: Some(t.from.clone()),
            reported: reported.clone(),
            authorization: t.authorization,
        };
        let (at, early) = (logged.block_time, b.settings.clock_skew);
        let asked =
            CandidateQuery { wallet: t.to.clone(), token_contract: t.token_contract.clone(), at, early, naming };
        let open = b.store.open_checkouts(&asked).await?;
        Ok((open, reported))
    }

    /// Credits `logged` to the one checkout the evidence names, or records it as unattributed
    /// (held, with its candidates, where equal evidence names several).
    async fn attribute(&self, logged: &LoggedTransfer, report: &mut FollowReport) -> Result<(), Error> {
        if !in_range(&logged.transfer.amount) {
            return self.record_unattributed(logged, (UnattributedReason::AmountOutOfRange, &[]), report).await;
        }
        let (open, reported) = self.claims(logged).await?;
        let skew = self.invoices.settings.clock_skew;
        let claims = Claims { open: &open.named, any_open: open.any_open, reported: &reported, skew };
        let attribution = attribute(logged, &claims);
        match &attribution {
            Attribution::Checkout { checkout, evidence } => self.credit(logged, checkout, *evidence, report).await,
            Attribution::Held { candidates, .. } => {
                let reason = attribution.unattributed().map_or(UnattributedReason::Disputed, |(r, _)| r);
                self.record_unattributed(logged, (reason, candidates), report).await
            }
            Attribution::Unattributed(reason) => self.record_unattributed(logged, (*reason, &[]), report).await,
        }
    }

    /// Records a payment of `checkout` claiming `logged`, named by `evidence`, and keeps the log
    /// until that payment is decided (credited, or attributed again).
    async fn credit(
        &self,
        logged: &LoggedTransfer,
        checkout: &OpenCheckout,
        evidence: Evidence,
        report: &mut FollowReport,
    ) -> Result<(), Error> {
        let b = &self.invoices;
        let claim = (&logged.tx_hash, logged.transfer.log_index, evidence);
        let payment = b.record_detected(&checkout.scope, &checkout.session_id, claim).await?;
        if payment.in_flight() {
            report.detected.push((checkout.scope.clone(), payment.id, logged.tx_hash.clone()));
            self.store.defer_transfer(b.settings.chain_id, logged).await
        } else if payment.status.is_credited() {
            Ok(())
        } else {
            self.record_unattributed(logged, (UnattributedReason::VerificationFailed, &[]), report).await
        }
    }

    /// Records `logged` as unattributed for every merchant whose wallet it paid, each with its
    /// own candidate checkouts.
    async fn record_unattributed(
        &self,
        logged: &LoggedTransfer,
        (reason, candidates): (UnattributedReason, &[&OpenCheckout]),
        report: &mut FollowReport,
    ) -> Result<(), Error> {
        let b = &self.invoices;
        let t = &logged.transfer;
        let Some(token) = b.settings.token_of(&t.token_contract) else { return Ok(()) };
        let now = b.clock.system_now();
        for merchant in self.store.merchants_with_wallet(&t.to).await? {
            let scope = Scope::new(merchant, Mode::Live);
            let own = candidates.iter().filter(|c| c.scope == scope).map(|c| c.session_id.clone()).collect();
            let transfer = UnattributedTransfer {
                id: UnattributedTransferId::generate(b.crypto),
                scope: scope.clone(),
                chain_id: b.settings.chain_id,
                logged: logged.clone(),
                token,
                reason,
                candidates: own,
                detected_at: now,
                status: UnattributedStatus::Open,
                payment_id: None,
                attributed_at: None,
            };
            let event = Event {
                id: EventId::generate(b.crypto),
                scope,
                event_type: EventType::PaymentUnattributed,
                created_at: now,
                data: transfer.event_data(),
            };
            if self.store.record_unattributed(&transfer, &event).await? {
                report.unattributed += 1;
            }
        }
        Ok(())
    }
}
