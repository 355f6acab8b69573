//! The diagnostics use cases: a checkout's (or a payment's) diagnosis.

use chrono::{DateTime, Utc};

use crate::chain::model::ChainHealth;
use crate::chain::ports::Chain;
use crate::clock::Clock;
use crate::diagnostics::model::{
    ChainState, Check, CheckName, CheckOutcome, CheckoutDiagnosis, Finality, TransferDiagnosis, is_verified,
};
use crate::error::Error;
use crate::ids::{CheckoutSessionId, PaymentId};
use crate::invoice::aggregate::{InvoiceAggregate, InvoiceKey};
use crate::invoice::checkout::CheckoutSession;
use crate::invoice::payment::{Payment, PaymentStatus};
use crate::invoice::ports::InvoiceStore;
use crate::invoice::public::CheckoutPhase;
use crate::mode::{Mode, Scope};

/// The diagnostics use cases.
pub struct Diagnostics<'a> {
    /// Invoices, their checkouts and payments.
    pub invoices: &'a dyn InvoiceStore,
    /// The chain (live mode).
    pub chain: &'a dyn Chain,
    /// Each scope's time.
    pub clock: &'a dyn Clock,
}

impl Diagnostics<'_> {
    /// `GET /v1/checkout-sessions/{id}/diagnostics`. Errors: `NotFound(CheckoutSession)`,
    /// `ModeMismatch`.
    pub async fn checkout(&self, scope: &Scope, id: &CheckoutSessionId) -> Result<CheckoutDiagnosis, Error> {
        let agg = self.invoices.load_invoice(scope, &InvoiceKey::Session(id.clone())).await?;
        self.diagnose(scope, &agg, id, None).await
    }

    /// `GET /v1/payments/{id}/diagnostics`: its checkout's diagnosis with this transfer alone.
    /// Errors: `NotFound(Payment)`, `ModeMismatch`.
    pub async fn payment(&self, scope: &Scope, id: &PaymentId) -> Result<CheckoutDiagnosis, Error> {
        let agg = self.invoices.load_invoice(scope, &InvoiceKey::Payment(id.clone())).await?;
        let session = agg
            .payments
            .iter()
            .find(|p| &p.id == id)
            .map(|p| p.checkout_session_id.clone())
            .ok_or(Error::NotFound(crate::error::Resource::Payment))?;
        self.diagnose(scope, &agg, &session, Some(id)).await
    }

    async fn diagnose(
        &self,
        scope: &Scope,
        agg: &InvoiceAggregate,
        id: &CheckoutSessionId,
        only: Option<&PaymentId>,
    ) -> Result<CheckoutDiagnosis, Error> {
        let session = agg.session(id).cloned().ok_or(Error::NotFound(crate::error::Resource::CheckoutSession))?;
        let now = self.clock.now(scope).await?;
        let chain = self.chain_state(scope.mode).await;
        let latest = agg.latest_payment_of(id);
        let phase = CheckoutPhase::of(&session, latest, now);
        let transfers: Vec<TransferDiagnosis> = agg
            .payments
            .iter()
            .filter(|p| &p.checkout_session_id == id && only.is_none_or(|o| &p.id == o))
            .map(|p| TransferDiagnosis {
                payment: p.clone(),
                checks: checks(&session, p),
                finality: finality(p, &chain),
            })
            .collect();
        let remaining = agg.invoice.remaining();
        let next_step = next_step(
            &session,
            phase,
            (&remaining, agg.invoice.collection_state.is_collectible()),
            latest,
            &chain,
            now,
        );
        Ok(CheckoutDiagnosis { session, phase, invoice_remaining: remaining, transfers, chain, next_step, as_of: now })
    }

    async fn chain_state(&self, mode: Mode) -> ChainState {
        if mode == Mode::Test {
            return ChainState { simulated: true, health: ChainHealth::Ok, final_block: None };
        }
        let health = self.chain.health().await;
        let final_block = if health == ChainHealth::Ok { self.chain.final_head().await.ok() } else { None };
        ChainState { simulated: false, health, final_block }
    }
}

/// The checks of `payment` against `session`, in verification's order.
pub fn checks(session: &CheckoutSession, payment: &Payment) -> Vec<Check> {
    let failed_at = payment
        .failure_reason
        .map(CheckName::of_failure)
        .or_else(|| (payment.status == PaymentStatus::Duplicate).then_some(CheckName::Duplicate));
    let verified = is_verified(payment.status);
    let mut past_failure = false;
    CheckName::ALL
        .into_iter()
        .map(|name| {
            let (expected, found) = values(name, session, payment);
            let outcome = if name == CheckName::Payer && session.payer_wallet.is_none() {
                CheckOutcome::Skipped
            } else if Some(name) == failed_at {
                past_failure = true;
                CheckOutcome::Failed
            } else if past_failure {
                CheckOutcome::Skipped
            } else if failed_at.is_some() || verified || (name == CheckName::Hash && payment.block.is_some()) {
                CheckOutcome::Passed
            } else {
                CheckOutcome::Pending
            };
            let (outcome, note) = amount_note(name, outcome, payment);
            Check { name, outcome, expected, found, note }
        })
        .collect()
}

/// The amount check of a credited transfer says by how much it missed.
fn amount_note(name: CheckName, outcome: CheckOutcome, p: &Payment) -> (CheckOutcome, Option<String>) {
    if name != CheckName::Amount {
        return (outcome, None);
    }
    match p.status {
        PaymentStatus::Underpaid => (
            CheckOutcome::Failed,
            Some(format!(
                "credited, {} short of what was due",
                p.amount_expected.saturating_sub(&p.amount_received).to_trimmed(2)
            )),
        ),
        PaymentStatus::Overpaid => (
            CheckOutcome::Passed,
            Some(format!(
                "credited, {} more than was due",
                p.amount_received.saturating_sub(&p.amount_expected).to_trimmed(2)
            )),
        ),
        _ => (outcome, None),
    }
}

/// What the checkout asked and what the transfer had, for one check.
fn values(name: CheckName, s: &CheckoutSession, p: &Payment) -> (Option<String>, Option<String>) {
    match name {
        CheckName::Hash => (None, Some(p.transaction_hash.as_str().to_owned())),
        CheckName::Chain => (Some(s.chain_id.to_string()), Some(p.chain_id.to_string())),
        CheckName::Token => (Some(s.token_contract.to_string()), Some(p.token_contract.to_string())),
        CheckName::Recipient => (Some(s.settlement_wallet.to_string()), Some(p.settlement_wallet.to_string())),
        CheckName::Payer => (s.payer_wallet.as_ref().map(ToString::to_string), p.payer_address.clone()),
        CheckName::Amount => (Some(p.amount_expected.to_string()), Some(p.amount_received.to_string())),
        CheckName::Expiry => (
            Some(format!("between {} and {}", stamp(s.created_at), stamp(s.expires_at))),
            Some(format!("detected {}", stamp(p.detected_at))),
        ),
        CheckName::Duplicate => (Some("credited once".into()), None),
    }
}

fn stamp(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Where `p`'s block stands.
fn finality(p: &Payment, chain: &ChainState) -> Finality {
    if chain.simulated {
        return Finality::Final;
    }
    match (&p.block, chain.final_block) {
        (None, _) => Finality::NotMined,
        (Some(b), Some(head)) if head >= b.number => Finality::Final,
        (Some(b), Some(head)) => Finality::Waiting(b.number - head),
        // A transfer is credited only once its block is final.
        (Some(_), None) if is_verified(p.status) => Finality::Final,
        (Some(_), None) => Finality::Unknown,
    }
}

/// What to do next, in words a support agent can read to the customer.
fn next_step(
    s: &CheckoutSession,
    phase: CheckoutPhase,
    (remaining, collectible): (&crate::money::Amount, bool),
    latest: Option<&Payment>,
    chain: &ChainState,
    now: DateTime<Utc>,
) -> String {
    let token = s.currency.symbol();
    let again = if collectible && !remaining.is_zero() {
        format!("the remaining {} {token} can be paid on a new checkout", remaining.to_trimmed(2))
    } else {
        "nothing more is due".to_owned()
    };
    match phase {
        CheckoutPhase::Paid => "Paid in full: nothing to do.".to_owned(),
        CheckoutPhase::Pay => format!(
            "Nothing received yet. The customer can send {} {token} to {} on Polygon until {}.",
            s.amount_due.to_trimmed(2),
            s.settlement_wallet,
            stamp(s.expires_at)
        ),
        CheckoutPhase::Validating => match (&chain.health, latest.and_then(|p| p.block.as_ref())) {
            (ChainHealth::Ok, Some(b)) => match chain.final_block {
                Some(head) if head < b.number => format!(
                    "A transfer is being verified: its block {} is {} blocks from final. It is credited when final; nothing to do.",
                    b.number,
                    b.number - head
                ),
                _ => "A transfer is being verified; it is credited when its block is final. Nothing to do.".to_owned(),
            },
            (ChainHealth::Ok, None) => {
                "A transfer was reported and is not in a block yet; it is checked again until it is mined (or found missing). Nothing to do.".to_owned()
            }
            (ChainHealth::Off, _) => {
                "A transfer is waiting: this deployment has no chain endpoint configured, so live payments are not verified (the operator must set STABLEPAY_CHAIN_RPC_URLS).".to_owned()
            }
            (ChainHealth::Unreachable(why) | ChainHealth::WrongChain(why), _) => {
                format!("A transfer is waiting: the chain cannot be used now ({why}); verification resumes when it can.")
            }
        },
        CheckoutPhase::Underpaid => format!("The transfer was credited but fell short; {again}."),
        CheckoutPhase::Failed => {
            let why = latest.and_then(|p| p.failure_reason).map_or("it was a duplicate", |r| r.as_str());
            format!("The last transfer could not be accepted ({why}); the customer can pay again on this checkout until {}.", stamp(s.expires_at))
        }
        CheckoutPhase::Expired if s.expires_at <= now => format!("The checkout expired at {}; {again}.", stamp(s.expires_at)),
        CheckoutPhase::Expired => format!("The checkout expired; {again}."),
        CheckoutPhase::Cancelled => "The invoice was closed: nothing can be paid on this checkout.".to_owned(),
    }
}
