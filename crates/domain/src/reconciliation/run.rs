//! A reconciliation run: the chain read again, independently of the follower, for a period of
//! a live merchant, and every `Transfer` log into its wallet matched one to one with the
//! payments the books credited (`reconcile`). Each log and each credited payment ends as one
//! item: `matched`, `onchain_not_credited` (with the invoice it would belong to, or
//! unattributed) or `credited_not_onchain` (must never happen; reported, never fixed).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use crate::chain::model::LoggedTransfer;
use crate::chain::verify::in_range;
use crate::ids::{InvoiceId, PaymentId, ReconciliationRunId, UnattributedTransferId};
use crate::invoice::payment::{FailureReason, Payment, PaymentStatus, TxHash};
use crate::merchant::model::{ChainSettings, Token, WalletAddress};
use crate::mode::Scope;
use crate::money::Amount;

/// How long a worker holds a run between two steps, in seconds.
pub const RUN_LEASE_SECONDS: u32 = 120;
/// Blocks asked for in one `eth_getLogs` call.
pub const BLOCKS_PER_QUERY: u64 = 2000;

/// Where a run stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// Waiting for a worker.
    Queued,
    /// A worker is reading the chain.
    Running,
    /// Its items can be read.
    Completed,
    /// It could not be completed (`failureMessage` says why).
    Failed,
}

impl RunStatus {
    /// Every status.
    pub const ALL: [RunStatus; 4] = [RunStatus::Queued, RunStatus::Running, RunStatus::Completed, RunStatus::Failed];

    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Queued => "queued",
            RunStatus::Running => "running",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
        }
    }

    /// The status named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// Which items of a run to list: those of `run`, only those of `outcome` when given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ItemFilter {
    /// The run.
    pub run: ReconciliationRunId,
    /// Only the items that ended so.
    pub outcome: Option<RunOutcome>,
}

/// How one transfer log or one credited payment ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunOutcome {
    /// The log and the payment credited with it agree, amount for amount.
    Matched,
    /// The chain shows the transfer; no payment of the merchant is credited with it.
    OnchainNotCredited,
    /// A payment is credited with a transfer the chain does not show (or shows for another
    /// amount). This must never happen: it is reported, never silently fixed.
    CreditedNotOnchain,
}

impl RunOutcome {
    /// Every outcome.
    pub const ALL: [RunOutcome; 3] =
        [RunOutcome::Matched, RunOutcome::OnchainNotCredited, RunOutcome::CreditedNotOnchain];

    /// The API's name.
    pub fn as_str(self) -> &'static str {
        match self {
            RunOutcome::Matched => "matched",
            RunOutcome::OnchainNotCredited => "onchain_not_credited",
            RunOutcome::CreditedNotOnchain => "credited_not_onchain",
        }
    }

    /// The outcome named `text`.
    pub fn parse(text: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == text)
    }
}

/// One line of a run's result: a transfer log, a credited payment, or both.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunItem {
    /// Its position in the run, from 1 (block and log order).
    pub line: u64,
    /// How it ended.
    pub outcome: RunOutcome,
    /// The token moved.
    pub token: Token,
    /// The transaction.
    pub transaction_hash: TxHash,
    /// The log's index in its block (`None`: a credited payment whose logs the chain does not
    /// show).
    pub log_index: Option<u64>,
    /// The block the transfer is in (as the chain says, or as the payment recorded it).
    pub block_number: Option<u64>,
    /// That block's time, when the chain showed the transfer.
    pub block_time: Option<DateTime<Utc>>,
    /// Who sent the tokens, when the chain showed the transfer.
    pub from_address: Option<WalletAddress>,
    /// The merchant's wallet that received them.
    pub to_address: WalletAddress,
    /// What the chain shows moved (`None`: nothing found).
    pub amount_onchain: Option<Amount>,
    /// What the books credited as settled for it (`None`: nothing credited).
    pub amount_credited: Option<Amount>,
    /// The payment concerned: the one credited, or the one that named the transaction without
    /// being credited with it.
    pub payment_id: Option<PaymentId>,
    /// The invoice that payment belongs to.
    pub invoice_id: Option<InvoiceId>,
    /// The unattributed transfer recorded for the log.
    pub unattributed_transfer_id: Option<UnattributedTransferId>,
    /// In words, for finance and support.
    pub detail: String,
}

/// A token's figures in a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunTotals {
    /// The token.
    pub token: Token,
    /// Items matched.
    pub matched: u64,
    /// Transfers not credited.
    pub onchain_not_credited: u64,
    /// Payments credited without their transfer.
    pub credited_not_onchain: u64,
    /// Everything the chain shows arrived, summed.
    pub onchain_total: Amount,
    /// Everything the books credited as settled, summed.
    pub credited_total: Amount,
    /// Transfers whose `Transfer` log claims more than any stablecoin holds
    /// ([`max_transfer_amount`](crate::chain::verify::max_transfer_amount)): listed as items,
    /// counted here, never summed into `onchain_total`.
    pub out_of_range: u64,
}

impl RunTotals {
    /// The figures of `items`, one entry per token (every token listed).
    pub fn of(items: &[RunItem]) -> Vec<RunTotals> {
        Token::ALL
            .into_iter()
            .map(|token| {
                let mine = || items.iter().filter(move |i| i.token == token);
                let count =
                    |o: RunOutcome| u64::try_from(mine().filter(|i| i.outcome == o).count()).unwrap_or(u64::MAX);
                let sum = |f: fn(&RunItem) -> Option<&Amount>| {
                    mine().filter_map(f).filter(|a| in_range(a)).fold(Amount::zero(), |acc, a| acc.add(a))
                };
                let beyond = mine().filter(|i| i.amount_onchain.as_ref().is_some_and(|a| !in_range(a))).count();
                RunTotals {
                    token,
                    matched: count(RunOutcome::Matched),
                    onchain_not_credited: count(RunOutcome::OnchainNotCredited),
                    credited_not_onchain: count(RunOutcome::CreditedNotOnchain),
                    onchain_total: sum(|i| i.amount_onchain.as_ref()),
                    credited_total: sum(|i| i.amount_credited.as_ref()),
                    out_of_range: u64::try_from(beyond).unwrap_or(u64::MAX),
                }
            })
            .collect()
    }
}

/// What a run found: what its chain scan covered, its items (numbered by their position from
/// 1), and when it completed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FinishedRun {
    /// What the scan covered.
    pub coverage: RunCoverage,
    /// Each log and each credited payment, as it ended.
    pub items: Vec<RunItem>,
    /// When.
    pub completed_at: DateTime<Utc>,
}

/// What the chain scan of a run covered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunCoverage {
    /// The first block of the period (its time at or after `from`).
    pub from_block: Option<u64>,
    /// The last block read (the period's last block, or the last final block when the period
    /// is not final to its end yet).
    pub to_block: Option<u64>,
    /// The newest final block when the run read the chain.
    pub final_block: Option<u64>,
    /// Whether every block of the period was final and read.
    pub complete: bool,
    /// The wallets read (the merchant's settlement wallet, and any wallet a credited payment
    /// of the period paid).
    pub wallets: Vec<WalletAddress>,
    /// Logs into these wallets credited to another merchant sharing the wallet (not listed).
    pub credited_elsewhere: u64,
}

/// A reconciliation run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReconciliationRun {
    /// `rcr_...`.
    pub id: ReconciliationRunId,
    /// The merchant, in live mode.
    pub scope: Scope,
    /// The period's start (included): blocks whose time is at or after it.
    pub from: DateTime<Utc>,
    /// The period's end (excluded).
    pub to: DateTime<Utc>,
    /// Where it stands.
    pub status: RunStatus,
    /// What the scan covered (once completed).
    pub coverage: RunCoverage,
    /// Per token, its figures (once completed; read back from the items).
    pub totals: Vec<RunTotals>,
    /// Why it failed.
    pub failure_message: Option<String>,
    /// When it was asked for.
    pub created_at: DateTime<Utc>,
    /// When it completed or failed.
    pub completed_at: Option<DateTime<Utc>>,
}

impl ReconciliationRun {
    /// A new run of `scope` over the period `from..to`, asked for at `now`: queued.
    pub fn queued(
        crypto: &dyn crate::crypto::Crypto,
        scope: Scope,
        (from, to): (DateTime<Utc>, DateTime<Utc>),
        now: DateTime<Utc>,
    ) -> Self {
        Self {
            id: ReconciliationRunId::generate(crypto),
            scope,
            from,
            to,
            status: RunStatus::Queued,
            coverage: RunCoverage::default(),
            totals: Vec::new(),
            failure_message: None,
            created_at: now,
            completed_at: None,
        }
    }
}

/// What the store knows of a transfer log no payment of the merchant is credited with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum LogOwner {
    /// Credited to a payment of another merchant (or mode) sharing the wallet.
    Elsewhere,
    /// Recorded for the merchant as unattributed.
    Unattributed(UnattributedTransferId),
    /// A payment of the merchant names the transaction without being credited with the log.
    Uncredited {
        /// The payment.
        payment_id: PaymentId,
        /// Its invoice.
        invoice_id: InvoiceId,
        /// Where it stands.
        status: PaymentStatus,
        /// Why it failed.
        failure_reason: Option<FailureReason>,
    },
}

/// One transfer log's identity: its transaction and its index.
pub type LogKey = (TxHash, u64);

/// Matches the transfer logs the chain shows with the credited payments of the same blocks,
/// one to one by transaction hash and log index (a payment that recorded no log index claims
/// every log of its transaction to its wallet in its token). `owners` tells what is known of
/// the logs no payment is credited with. Answers the items, in block and log order, and how
/// many logs were credited to another merchant (not listed).
pub fn reconcile(
    transfers: &[LoggedTransfer],
    payments: &[Payment],
    owners: &HashMap<LogKey, LogOwner>,
    settings: &ChainSettings,
) -> (Vec<RunItem>, u64) {
    let credited: Vec<&Payment> = payments.iter().filter(|p| p.status.is_credited()).collect();
    let claimant = |t: &LoggedTransfer| credited.iter().position(|p| claims(p, t));
    let mut found: BTreeMap<usize, Vec<&LoggedTransfer>> = BTreeMap::new();
    let mut items = Vec::new();
    let mut elsewhere = 0;
    for t in transfers {
        let Some(token) = settings.token_of(&t.transfer.token_contract) else { continue };
        if let Some(i) = claimant(t) {
            found.entry(i).or_default().push(t);
            continue;
        }
        let owner = owners.get(&(t.tx_hash.clone(), t.transfer.log_index));
        if owner == Some(&LogOwner::Elsewhere) {
            elsewhere += 1;
            continue;
        }
        items.push(not_credited(t, token, owner));
    }
    for (i, p) in credited.iter().enumerate() {
        let logs = found.remove(&i).unwrap_or_default();
        items.extend(credited_items(p, &logs, settings));
    }
    items.sort_by_key(|i| (i.block_number, i.log_index, i.outcome));
    for (n, item) in (1u64..).zip(items.iter_mut()) {
        item.line = n;
    }
    (items, elsewhere)
}

/// Whether credited payment `p` is credited with log `t`: by its recorded log indexes, or,
/// for a payment that recorded none, every log of its transaction to its wallet in its token.
fn claims(p: &Payment, t: &LoggedTransfer) -> bool {
    p.transaction_hash == t.tx_hash
        && if p.logs.is_empty() {
            p.settlement_wallet == t.transfer.to && p.token_contract == t.transfer.token_contract
        } else {
            p.logs.contains(&t.transfer.log_index)
        }
}

/// The logs of `transfers` that no credited payment of `payments` is credited with: those
/// [`reconcile`] needs the owners of.
pub fn unclaimed(transfers: &[LoggedTransfer], payments: &[Payment]) -> Vec<LogKey> {
    transfers
        .iter()
        .filter(|t| !payments.iter().any(|p| p.status.is_credited() && claims(p, t)))
        .map(|t| (t.tx_hash.clone(), t.transfer.log_index))
        .collect()
}

fn onchain_item(t: &LoggedTransfer, token: Token, outcome: RunOutcome, detail: String) -> RunItem {
    RunItem {
        line: 0,
        outcome,
        token,
        transaction_hash: t.tx_hash.clone(),
        log_index: Some(t.transfer.log_index),
        block_number: Some(t.block.number),
        block_time: Some(t.block_time),
        from_address: Some(t.transfer.from.clone()),
        to_address: t.transfer.to.clone(),
        amount_onchain: Some(t.transfer.amount.clone()),
        amount_credited: None,
        payment_id: None,
        invoice_id: None,
        unattributed_transfer_id: None,
        detail,
    }
}

fn not_credited(t: &LoggedTransfer, token: Token, owner: Option<&LogOwner>) -> RunItem {
    let amount = format!("{} {}", t.transfer.amount, token.symbol());
    let mut item = onchain_item(t, token, RunOutcome::OnchainNotCredited, String::new());
    item.detail = match owner {
        Some(LogOwner::Unattributed(id)) => {
            item.unattributed_transfer_id = Some(id.clone());
            format!("{amount} arrived and was recorded as unattributed ({id}): no checkout could be credited with it.")
        }
        Some(LogOwner::Uncredited { payment_id, invoice_id, status, failure_reason }) => {
            item.payment_id = Some(payment_id.clone());
            item.invoice_id = Some(invoice_id.clone());
            match (status, failure_reason) {
                (PaymentStatus::Detected | PaymentStatus::Validating, _) => {
                    format!("{amount} arrived for invoice {invoice_id}; payment {payment_id} is still being verified.")
                }
                (_, Some(reason)) => format!(
                    "{amount} arrived for invoice {invoice_id}; payment {payment_id} was not credited ({}).",
                    reason.as_str()
                ),
                (status, None) => format!(
                    "{amount} arrived for invoice {invoice_id}; payment {payment_id} is {} and not credited with it.",
                    status.as_str()
                ),
            }
        }
        Some(LogOwner::Elsewhere) | None => {
            format!("{amount} arrived and is not recorded yet: the chain follower has not decided it.")
        }
    };
    item
}

fn credited_items(p: &Payment, logs: &[&LoggedTransfer], settings: &ChainSettings) -> Vec<RunItem> {
    let token = settings.token_of(&p.token_contract).unwrap_or(Token::Usdc);
    let onchain = logs.iter().fold(Amount::zero(), |acc, t| acc.add(&t.transfer.amount));
    let missing = p.logs.iter().filter(|l| !logs.iter().any(|t| t.transfer.log_index == **l)).count();
    let with_payment = |mut item: RunItem| {
        item.payment_id = Some(p.id.clone());
        item.invoice_id = Some(p.invoice_id.clone());
        item
    };
    if !logs.is_empty() && missing == 0 && onchain == p.merchant_amount_settled {
        return logs
            .iter()
            .map(|t| {
                let mut item = onchain_item(t, token, RunOutcome::Matched, String::new());
                item.amount_credited = Some(t.transfer.amount.clone());
                item.detail = format!(
                    "{} {} credited to invoice {} by payment {}.",
                    t.transfer.amount,
                    token.symbol(),
                    p.invoice_id,
                    p.id
                );
                with_payment(item)
            })
            .collect();
    }
    let detail = if logs.is_empty() {
        format!(
            "Payment {} is credited with {} {} that the chain does not show in a final block of the period.",
            p.id,
            p.merchant_amount_settled,
            token.symbol()
        )
    } else {
        format!(
            "Payment {} is credited with {} {}; the chain shows {} {}.",
            p.id,
            p.merchant_amount_settled,
            token.symbol(),
            onchain,
            token.symbol()
        )
    };
    vec![with_payment(RunItem {
        line: 0,
        outcome: RunOutcome::CreditedNotOnchain,
        token,
        transaction_hash: p.transaction_hash.clone(),
        log_index: None,
        block_number: p.block.as_ref().map(|b| b.number),
        block_time: logs.first().map(|t| t.block_time),
        from_address: logs.first().map(|t| t.transfer.from.clone()),
        to_address: p.settlement_wallet.clone(),
        amount_onchain: (!logs.is_empty()).then_some(onchain),
        amount_credited: Some(p.merchant_amount_settled.clone()),
        payment_id: None,
        invoice_id: None,
        unattributed_transfer_id: None,
        detail,
    })]
}
