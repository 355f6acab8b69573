//! A period's reconciliation as `GET /v1/reconciliation` answers it.

use serde::Serialize;
use stablepay_domain::reconciliation::{Discrepancy, Reconciliation, TokenSummary};
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::envelope;

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
    /// Unattributed transfers detected in the period.
    pub unattributed_count: u64,
    /// Their amounts, summed.
    pub unattributed_total: String,
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
