//! The pure crediting decision: what one transfer to a checkout does to its invoice. The same
//! decision serves test mode (simulated transfers) and live mode (transfers read from the
//! chain); only the observation differs.
//!
//! Every state-machine step either applies or is refused; a refusal is an error, because the
//! steps below only ever ask for moves the machines allow from the states they start in.

use std::cmp::Ordering;

use chrono::{DateTime, Utc};

use crate::chain::{Expected, Observation, Verdict, verify};
use crate::checkout::{CheckoutSession, CheckoutStatus};
use crate::crypto::Crypto;
use crate::error::{Error, Limit};
use crate::event::EventType;
use crate::ids::PaymentId;
use crate::invoice::aggregate::{Decision, InvoiceAggregate, InvoiceChange};
use crate::invoice::collection::{self, CollectionTrigger};
use crate::invoice::lifecycle::{self, Coverage, LifecycleTrigger};
use crate::invoice::model::{ActivityAction, Actor, MAX_PAYMENT_RECORDS};
use crate::merchant::POLYGON_CHAIN_ID;
use crate::mode::Mode;
use crate::money::Amount;
use crate::payment::{self as pay, FailureReason, Payment, PaymentStatus, PaymentTrigger, TxHash};

/// One transfer to settle: which session it pays, its hash, what the chain says of it, and
/// whether its hash was already credited elsewhere.
pub(super) struct Transfer<'a> {
    pub session: &'a CheckoutSession,
    pub tx: &'a TxHash,
    pub observation: &'a Observation,
    pub duplicate: bool,
    pub actor: Actor,
}

/// Records the transfer as a payment of `current` (credited, failed or duplicate) and moves
/// the invoice and its sessions accordingly. Answers the new payment's id.
pub(super) fn credit(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    transfer: Transfer<'_>,
    now: DateTime<Utc>,
) -> Result<Decision<PaymentId>, Error> {
    let mut change = InvoiceChange::update(current.clone());
    let mut payment = new_payment(crypto, transfer.session, transfer.tx, now);
    let actor = transfer.actor;
    if transfer.duplicate {
        step(&mut payment, PaymentTrigger::DuplicateTransaction)?;
        payment.failure_reason = Some(FailureReason::DuplicateTransaction);
        let detail = Some(transfer.tx.as_str().to_owned());
        change.aggregate.invoice.log(now, ActivityAction::PaymentDuplicate, actor, detail);
    } else {
        step(&mut payment, PaymentTrigger::VerificationStarted)?;
        let inv = &mut change.aggregate.invoice;
        inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentDetected)?;
        match verify(&expected(transfer.session), transfer.observation) {
            Verdict::Failed { reason } => fail(crypto, &mut change, &mut payment, reason, (now, actor))?,
            Verdict::Verified { amount, sender, at } => {
                payment.payer_address = sender;
                payment.confirmed_at = Some(at);
                accept(crypto, &mut change, &mut payment, amount, (now, actor))?;
            }
        }
    }
    let full = current.payments.len() >= MAX_PAYMENT_RECORDS;
    if full && (!payment.status.is_credited() || payment.scope.mode == Mode::Test) {
        return Err(Error::LimitReached { what: Limit::PaymentRecords, limit: MAX_PAYMENT_RECORDS });
    }
    settle_sessions(&mut change, transfer.session, &payment, now);
    let id = payment.id.clone();
    change.push_payment(payment);
    Ok(Decision::save(change, id))
}

/// What a transfer to `session` must match.
fn expected(session: &CheckoutSession) -> Expected {
    Expected {
        chain_id: POLYGON_CHAIN_ID,
        token_contract: session.currency.polygon_contract(),
        recipient: session.settlement_wallet.clone(),
        expires_at: session.expires_at,
    }
}

fn new_payment(crypto: &dyn Crypto, session: &CheckoutSession, tx: &TxHash, now: DateTime<Utc>) -> Payment {
    Payment {
        id: PaymentId::generate(crypto),
        scope: session.scope.clone(),
        invoice_id: session.invoice_id.clone(),
        checkout_session_id: session.id.clone(),
        status: PaymentStatus::Detected,
        amount_expected: session.amount_due.clone(),
        amount_received: Amount::zero(),
        customer_amount_credited: Amount::zero(),
        merchant_amount_settled: Amount::zero(),
        transaction_hash: tx.clone(),
        chain_id: POLYGON_CHAIN_ID,
        token_contract: session.currency.polygon_contract(),
        settlement_wallet: session.settlement_wallet.clone(),
        payer_address: None,
        failure_reason: None,
        detected_at: now,
        confirmed_at: None,
    }
}

fn step(payment: &mut Payment, trigger: PaymentTrigger) -> Result<(), Error> {
    payment.status = pay::transition(payment.status, trigger)?;
    Ok(())
}

/// A transfer that failed verification: nothing is credited.
fn fail(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    reason: FailureReason,
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<(), Error> {
    step(payment, PaymentTrigger::VerificationFailed)?;
    payment.failure_reason = Some(reason);
    let inv = &mut change.aggregate.invoice;
    let has_credit = !inv.customer_amount_paid.is_zero();
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentFailed { has_credit })?;
    inv.log(now, ActivityAction::PaymentFailed, actor, Some(reason.as_str().to_owned()));
    change.emit(crypto, EventType::PaymentFailed, Some(payment.id.clone()), now);
    Ok(())
}

/// A verified transfer of `amount`: credited to the invoice (a closed invoice records it and
/// stays closed), numbered when it is the first credit of an amount-only invoice.
fn accept(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    amount: Amount,
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<(), Error> {
    step(payment, PaymentTrigger::Verified(amount.cmp(&payment.amount_expected)))?;
    payment.amount_received = amount.clone();
    payment.customer_amount_credited = amount.clone();
    payment.merchant_amount_settled = amount.clone();
    let inv = &mut change.aggregate.invoice;
    inv.customer_amount_paid = inv.customer_amount_paid.add(&amount);
    inv.merchant_amount_settled = inv.merchant_amount_settled.add(&amount);
    let coverage = match inv.customer_amount_paid.cmp(&inv.totals.total) {
        Ordering::Less => Coverage::Partial,
        Ordering::Equal => Coverage::Full,
        Ordering::Greater => Coverage::Over,
    };
    let trigger = CollectionTrigger::PaymentCredited {
        remaining_zero: coverage != Coverage::Partial,
        over: coverage == Coverage::Over,
    };
    let t = collection::transition(inv.collection_state, trigger)?;
    inv.collection_state = t.to;
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentCredited(coverage))?;
    if coverage != Coverage::Partial && inv.paid_at.is_none() && !inv.collection_state.is_closed() {
        inv.paid_at = Some(now);
    }
    inv.log(now, ActivityAction::PaymentCredited, actor, Some(format!("{} via {}", amount, payment.id)));
    if inv.number.is_none() {
        change.assign_number = Some(inv.number_prefix.clone());
    }
    for e in t.events {
        change.emit(crypto, e, None, now);
    }
    let payment_event = match payment.status {
        PaymentStatus::Underpaid => Some(EventType::PaymentUnderpaid),
        PaymentStatus::Overpaid => Some(EventType::PaymentOverpaid),
        _ => None,
    };
    if let Some(e) = payment_event {
        change.emit(crypto, e, Some(payment.id.clone()), now);
    }
    Ok(())
}

/// The paying session completes once its payments cover its amount due or the invoice got paid
/// through it; every other pending session is cancelled once the invoice has nothing left to
/// collect.
fn settle_sessions(change: &mut InvoiceChange, paying: &CheckoutSession, payment: &Payment, now: DateTime<Utc>) {
    let agg = &mut change.aggregate;
    let invoice_settled = agg.invoice.remaining().is_zero();
    let session_paid = agg
        .payments
        .iter()
        .filter(|p| p.checkout_session_id == paying.id)
        .fold(payment.customer_amount_credited.clone(), |acc, p| acc.add(&p.customer_amount_credited));
    for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending) {
        let this = s.id == paying.id;
        if this && (session_paid >= s.amount_due || invoice_settled) {
            s.status = CheckoutStatus::Completed;
            s.completed_at = Some(now);
        } else if invoice_settled {
            s.status = CheckoutStatus::Cancelled;
        } else {
            continue;
        }
        change.changed_sessions.push(s.id.clone());
    }
}
