//! A period's reconciliation as `GET /v1/reconciliation` answers it, and reconciliation runs
//! with their items.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use stablepay_domain::reconciliation::{
    Discrepancy, Reconciliation, ReconciliationRun, RunItem, RunStatus, TokenSummary,
};
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{ListOut, envelope};
use crate::wire::fields;

/// One token's figures for the period.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TokenSummaryOut {
    /// `USDC` or `USDT`.
    pub token: String,
    /// Invoices issued in the period.
    pub invoices_issued: u64,
    /// Their totals, summed.
    pub invoiced_total: String,
    /// Credited payments (confirmed, underpaid or overpaid) confirmed in the period.
    pub payments_credited: u64,
    /// What they credited, summed.
    pub collected: String,
    /// What overpaid payments of the period carried above what was due of them.
    pub overpaid_excess: String,
    /// Refund references recorded in the period.
    pub refunds_count: u64,
    /// Their amounts, summed.
    pub refunds_referenced: String,
    /// What collectible invoices issued before `to` still ask, as they stand now.
    pub outstanding: String,
    /// Of that, what was past its due date at `to`.
    pub overdue: String,
    /// The invoices behind `overdue`.
    pub overdue_count: u64,
    /// Unattributed transfers detected in the period and still open (a transfer credited since,
    /// by any path, counts once: in `collected`).
    pub unattributed_count: u64,
    /// Their amounts, summed.
    pub unattributed_total: String,
    /// Open unattributed transfers claiming more than any stablecoin holds (10^15 tokens):
    /// counted apart, never summed into `unattributedTotal`.
    pub unattributed_out_of_range: u64,
}

impl From<&TokenSummary> for TokenSummaryOut {
    fn from(t: &TokenSummary) -> Self {
        Self {
            token: t.token.symbol().into(),
            invoices_issued: t.invoices_issued,
            invoiced_total: t.invoiced_total.to_string(),
            payments_credited: t.payments_credited,
            collected: t.collected.to_string(),
            overpaid_excess: t.overpaid_excess.to_string(),
            refunds_count: t.refunds_count,
            refunds_referenced: t.refunds_referenced.to_string(),
            outstanding: t.outstanding.to_string(),
            overdue: t.overdue.to_string(),
            overdue_count: t.overdue_count,
            unattributed_count: t.unattributed_count,
            unattributed_total: t.unattributed_total.to_string(),
            unattributed_out_of_range: t.unattributed_out_of_range,
        }
    }
}

/// Something that does not add up.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscrepancyOut {
    /// `unattributed_transfer`, `overpaid_payment`, `underpaid_payment` or `unverified_payment`.
    pub kind: String,
    /// The record it is about (`utr_...` or `pay_...`).
    pub id: String,
    /// The invoice concerned.
    pub invoice_id: Option<String>,
    pub token: String,
    /// The transfer, the excess, the shortfall, or what is unverified.
    pub amount: String,
    pub at: String,
    /// In words.
    pub detail: String,
}

impl From<&Discrepancy> for DiscrepancyOut {
    fn from(d: &Discrepancy) -> Self {
        Self {
            kind: d.kind.as_str().into(),
            id: d.id.clone(),
            invoice_id: d.invoice_id.clone(),
            token: d.token.symbol().into(),
            amount: d.amount.to_string(),
            at: timestamp(d.at),
            detail: d.detail.clone(),
        }
    }
}

/// A period's reconciliation of the merchant's books in the key's mode.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationOut {
    /// Always `reconciliation`.
    pub object: String,
    pub mode: String,
    pub from: String,
    pub to: String,
    /// When the figures were read (the merchant's clock).
    pub as_of: String,
    /// Every token, with zeros when nothing happened.
    pub tokens: Vec<TokenSummaryOut>,
    /// Oldest first, at most 100.
    pub discrepancies: Vec<DiscrepancyOut>,
    pub has_more_discrepancies: bool,
}

impl ReconciliationOut {
    pub fn new(r: &Reconciliation, mode: &str) -> Self {
        Self {
            object: "reconciliation".into(),
            mode: mode.into(),
            from: timestamp(r.from),
            to: timestamp(r.to),
            as_of: timestamp(r.as_of),
            tokens: r.tokens.iter().map(TokenSummaryOut::from).collect(),
            discrepancies: r.discrepancies.iter().map(DiscrepancyOut::from).collect(),
            has_more_discrepancies: r.has_more_discrepancies,
        }
    }
}

envelope!(/// A period's reconciliation.
    ReconciliationEnvelope, ReconciliationOut);

/// The body of `POST /v1/reconciliation-runs`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReconciliationRunIn {
    /// RFC 3339; the period's start, included (blocks whose time is at or after it).
    #[schema(example = "2026-11-01T00:00:00Z")]
    pub from: String,
    /// RFC 3339; the period's end, excluded; at most 366 days after `from`.
    #[schema(example = "2026-12-01T00:00:00Z")]
    pub to: String,
}

impl ReconciliationRunIn {
    /// The period. Errors: VALIDATION_ERROR naming `from` or `to`.
    pub fn period(self) -> Result<(DateTime<Utc>, DateTime<Utc>), ApiError> {
        let from = fields::date_time("from", &Some(self.from))?
            .ok_or_else(|| ApiError::validation("from", "from is required (RFC 3339)."))?;
        let to = fields::date_time("to", &Some(self.to))?
            .ok_or_else(|| ApiError::validation("to", "to is required (RFC 3339)."))?;
        Ok((from, to))
    }
}

/// One token's figures in a run.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunTotalsOut {
    /// `USDC` or `USDT`.
    pub token: String,
    /// Items whose transfer and credited payment agree.
    pub matched: u64,
    /// Transfers no payment is credited with.
    pub onchain_not_credited: u64,
    /// Payments credited with a transfer the chain does not show (must be 0).
    pub credited_not_onchain: u64,
    /// Everything the chain shows arrived, summed (but what is out of range).
    pub onchain_total: String,
    /// Everything the books credited as settled, summed.
    pub credited_total: String,
    /// Transfers claiming more than any stablecoin holds (10^15 tokens): listed as items,
    /// counted here, never summed into `onchainTotal`.
    pub out_of_range: u64,
}

/// A reconciliation run: the live chain read again for a period and matched with the books.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationRunOut {
    /// `rcr_...`.
    pub id: String,
    /// Always `reconciliation_run`.
    pub object: String,
    /// Always `live`.
    pub mode: String,
    pub from: String,
    pub to: String,
    /// `queued`, `running`, `completed` or `failed`.
    pub status: String,
    /// The first block of the period (once completed; null when no final block is that late).
    pub from_block: Option<u64>,
    /// The last block read.
    pub to_block: Option<u64>,
    /// The newest final block when the chain was read.
    pub final_block: Option<u64>,
    /// Whether every block of the period was final and read (false: read to `toBlock`, the
    /// final block then; run again later for the rest).
    pub complete: bool,
    /// The wallets read.
    pub wallets: Vec<String>,
    /// Transfers into these wallets credited to another account sharing the wallet (not listed).
    pub credited_elsewhere: u64,
    /// Per token (every token listed once completed).
    pub totals: Vec<RunTotalsOut>,
    pub failure_message: Option<String>,
    pub created_at: String,
    pub completed_at: Option<String>,
}

impl From<&ReconciliationRun> for ReconciliationRunOut {
    fn from(r: &ReconciliationRun) -> Self {
        let c = &r.coverage;
        let completed = r.status == RunStatus::Completed;
        Self {
            id: r.id.to_string(),
            object: "reconciliation_run".into(),
            mode: r.scope.mode.as_str().into(),
            from: timestamp(r.from),
            to: timestamp(r.to),
            status: r.status.as_str().into(),
            from_block: c.from_block,
            to_block: c.to_block,
            final_block: c.final_block,
            complete: c.complete,
            wallets: c.wallets.iter().map(ToString::to_string).collect(),
            credited_elsewhere: c.credited_elsewhere,
            totals: if completed {
                r.totals
                    .iter()
                    .map(|t| RunTotalsOut {
                        token: t.token.symbol().into(),
                        matched: t.matched,
                        onchain_not_credited: t.onchain_not_credited,
                        credited_not_onchain: t.credited_not_onchain,
                        onchain_total: t.onchain_total.to_string(),
                        credited_total: t.credited_total.to_string(),
                        out_of_range: t.out_of_range,
                    })
                    .collect()
            } else {
                Vec::new()
            },
            failure_message: r.failure_message.clone(),
            created_at: timestamp(r.created_at),
            completed_at: r.completed_at.map(timestamp),
        }
    }
}

/// One item of a run: a transfer log, a credited payment, or both.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReconciliationItemOut {
    /// Always `reconciliation_item`.
    pub object: String,
    /// Its position in the run, from 1 (the list's cursor).
    pub line: u64,
    /// `matched`, `onchain_not_credited` or `credited_not_onchain`.
    pub outcome: String,
    pub token: String,
    pub transaction_hash: String,
    /// Null for a credited payment whose transfer the chain does not show.
    pub log_index: Option<u64>,
    pub block_number: Option<u64>,
    pub block_time: Option<String>,
    pub from_address: Option<String>,
    /// The merchant's wallet.
    pub to_address: String,
    /// What the chain shows moved.
    pub amount_onchain: Option<String>,
    /// What the books credited as settled for it.
    pub amount_credited: Option<String>,
    pub payment_id: Option<String>,
    /// The invoice it belongs to (or would belong to).
    pub invoice_id: Option<String>,
    pub unattributed_transfer_id: Option<String>,
    /// In words, for finance and support.
    pub detail: String,
}

impl From<&RunItem> for ReconciliationItemOut {
    fn from(i: &RunItem) -> Self {
        Self {
            object: "reconciliation_item".into(),
            line: i.line,
            outcome: i.outcome.as_str().into(),
            token: i.token.symbol().into(),
            transaction_hash: i.transaction_hash.as_str().into(),
            log_index: i.log_index,
            block_number: i.block_number,
            block_time: i.block_time.map(timestamp),
            from_address: i.from_address.as_ref().map(ToString::to_string),
            to_address: i.to_address.to_string(),
            amount_onchain: i.amount_onchain.as_ref().map(ToString::to_string),
            amount_credited: i.amount_credited.as_ref().map(ToString::to_string),
            payment_id: i.payment_id.as_ref().map(ToString::to_string),
            invoice_id: i.invoice_id.as_ref().map(ToString::to_string),
            unattributed_transfer_id: i.unattributed_transfer_id.as_ref().map(ToString::to_string),
            detail: i.detail.clone(),
        }
    }
}

envelope!(/// A reconciliation run.
    ReconciliationRunEnvelope, ReconciliationRunOut);
envelope!(/// A page of reconciliation runs.
    ReconciliationRunListEnvelope, ListOut<ReconciliationRunOut>);
envelope!(/// A page of a run's items.
    ReconciliationItemListEnvelope, ListOut<ReconciliationItemOut>);
