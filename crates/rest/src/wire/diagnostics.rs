//! A checkout's diagnosis as `GET /v1/checkout-sessions/{id}/diagnostics` and
//! `GET /v1/payments/{id}/diagnostics` answer it.

use serde::Serialize;
use stablepay_domain::chain::model::ChainHealth;
use stablepay_domain::diagnostics::{Check, CheckoutDiagnosis, Finality, TransferDiagnosis};
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::checkout::BlockOut;
use crate::wire::common::envelope;

/// One check of a transfer, with the values compared.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckOut {
    /// `hash`, `chain`, `token`, `recipient`, `payer`, `amount`, `expiry` or `duplicate`.
    pub name: String,
    /// `passed`, `failed`, `pending` or `skipped`.
    pub outcome: String,
    /// What the checkout asked.
    pub expected: Option<String>,
    /// What the transfer had.
    pub found: Option<String>,
    /// In words.
    pub note: Option<String>,
}

impl From<&Check> for CheckOut {
    fn from(c: &Check) -> Self {
        Self {
            name: c.name.as_str().into(),
            outcome: c.outcome.as_str().into(),
            expected: c.expected.clone(),
            found: c.found.clone(),
            note: c.note.clone(),
        }
    }
}

/// Where a transfer's block stands.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FinalityOut {
    /// `final`, `waiting`, `not_mined` or `unknown`.
    pub state: String,
    /// `waiting`: blocks until its block is final.
    pub blocks_to_final: Option<u64>,
}

/// One transfer reported or detected for the checkout.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferOut {
    pub payment_id: String,
    pub transaction_id: String,
    /// The payment's status.
    pub status: String,
    pub failure_reason: Option<String>,
    /// The verifier's last note (what it waits for).
    pub diagnostic: Option<String>,
    pub detected_at: String,
    pub confirmed_at: Option<String>,
    pub block: Option<BlockOut>,
    pub finality: FinalityOut,
    /// In verification's order.
    pub checks: Vec<CheckOut>,
}

impl From<&TransferDiagnosis> for TransferOut {
    fn from(t: &TransferDiagnosis) -> Self {
        let p = &t.payment;
        let (state, blocks) = match t.finality {
            Finality::Final => ("final", None),
            Finality::Waiting(n) => ("waiting", Some(n)),
            Finality::NotMined => ("not_mined", None),
            Finality::Unknown => ("unknown", None),
        };
        Self {
            payment_id: p.id.to_string(),
            transaction_id: p.transaction_hash.as_str().to_owned(),
            status: p.status.as_str().into(),
            failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
            diagnostic: p.diagnostic.clone(),
            detected_at: timestamp(p.detected_at),
            confirmed_at: p.confirmed_at.map(timestamp),
            block: p.block.as_ref().map(|b| BlockOut { number: b.number, hash: b.hash.clone() }),
            finality: FinalityOut { state: state.into(), blocks_to_final: blocks },
            checks: t.checks.iter().map(CheckOut::from).collect(),
        }
    }
}

/// The chain as the diagnosis saw it.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosisChainOut {
    /// Test mode: transfers are simulated, no chain is asked.
    pub simulated: bool,
    /// `ok`, `off` (no endpoint configured), `unreachable` or `wrong_chain`.
    pub state: String,
    /// Why it is not ok.
    pub detail: Option<String>,
    /// The newest final block, when the chain answered.
    pub final_block: Option<u64>,
}

/// A wallet bound to a checkout by a wallet payment attempt.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BoundWalletOut {
    pub address: String,
    /// When it was first bound.
    pub bound_at: String,
}

/// Why a checkout is or is not paid.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiagnosisOut {
    /// Always `checkout_diagnosis`.
    pub object: String,
    pub checkout_session_id: String,
    pub invoice_id: String,
    pub mode: String,
    /// The checkout's status.
    pub status: String,
    /// Where it stands for its customer: `pay`, `validating`, `paid`, `underpaid`, `failed`, `held`,
    /// `expired` or `cancelled`.
    pub phase: String,
    pub amount_due: String,
    /// What the invoice still asks.
    pub invoice_remaining: String,
    pub currency_code: String,
    pub chain_id: u64,
    pub token_contract: String,
    pub settlement_wallet_address: String,
    /// The wallet a wallet payment attempt bound the checkout to last (see `boundWallets`).
    pub payer_wallet: Option<String>,
    /// Every wallet wallet payment attempts bound to the checkout, first bound first: evidence
    /// that their transfers are this checkout's, never a restriction.
    pub bound_wallets: Vec<BoundWalletOut>,
    pub expires_at: String,
    /// Every transfer reported or detected for it, oldest first (one, for a payment's diagnosis).
    pub transfers: Vec<TransferOut>,
    pub chain: DiagnosisChainOut,
    /// What to do next, in words a support agent can read to the customer.
    pub next_step: String,
    pub as_of: String,
}

impl From<&CheckoutDiagnosis> for DiagnosisOut {
    fn from(d: &CheckoutDiagnosis) -> Self {
        let s = &d.session;
        let (state, detail) = match &d.chain.health {
            ChainHealth::Ok => ("ok", None),
            ChainHealth::Off => ("off", None),
            ChainHealth::Unreachable(why) => ("unreachable", Some(why.clone())),
            ChainHealth::WrongChain(why) => ("wrong_chain", Some(why.clone())),
        };
        Self {
            object: "checkout_diagnosis".into(),
            checkout_session_id: s.id.to_string(),
            invoice_id: s.invoice_id.to_string(),
            mode: s.scope.mode.as_str().into(),
            status: s.status.as_str().into(),
            phase: d.phase.as_str().into(),
            amount_due: s.amount_due.to_string(),
            invoice_remaining: d.invoice_remaining.to_string(),
            currency_code: s.currency.symbol().into(),
            chain_id: s.chain_id,
            token_contract: s.token_contract.to_string(),
            settlement_wallet_address: s.settlement_wallet.to_string(),
            payer_wallet: d.bindings.last().map(|b| b.wallet.to_string()),
            bound_wallets: d
                .bindings
                .iter()
                .map(|b| BoundWalletOut { address: b.wallet.to_string(), bound_at: timestamp(b.bound_at) })
                .collect(),
            expires_at: timestamp(s.expires_at),
            transfers: d.transfers.iter().map(TransferOut::from).collect(),
            chain: DiagnosisChainOut {
                simulated: d.chain.simulated,
                state: state.into(),
                detail,
                final_block: d.chain.final_block,
            },
            next_step: d.next_step.clone(),
            as_of: timestamp(d.as_of),
        }
    }
}

envelope!(/// A checkout's diagnosis.
    DiagnosisEnvelope, DiagnosisOut);
