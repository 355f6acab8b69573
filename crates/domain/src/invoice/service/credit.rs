//! The pure crediting decisions: recording an attempt to pay a checkout, and settling it from
//! what the chain says. The same decisions serve test mode (a simulated, final transfer) and
//! live mode (transfers read from Polygon); only the observation differs.
//!
//! A payment is `detected` until its transfer is seen, `validating` while the block it is in
//! is not final (back to `detected` if that block is reorganised away), and then `confirmed`,
//! `underpaid` or `overpaid` (credited), `failed` or `duplicate`. Every state-machine step
//! either applies or is refused; a refusal is an error, because the steps below only ask for
//! moves the machines allow from the states they start in.

use std::cmp::Ordering;

use chrono::{DateTime, Duration, Utc};

use crate::chain::model::{Observation, ObservedTransaction, TokenTransfer};
use crate::chain::verify::{Expected, Verdict, verify};
use crate::crypto::Crypto;
use crate::error::{Error, Limit, Resource};
use crate::event::model::EventType;
use crate::ids::{CheckoutSessionId, PaymentId};
use crate::invoice::aggregate::{Decision, InvoiceAggregate, InvoiceChange};
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::collection::{self, CollectionTrigger};
use crate::invoice::lifecycle::{self, Coverage, LifecycleStatus, LifecycleTrigger};
use crate::invoice::model::{ActivityAction, Actor, MAX_PAYMENT_RECORDS};
use crate::invoice::payment::{self as pay, BlockRef, FailureReason, Payment, PaymentStatus, PaymentTrigger, TxHash};
use crate::money::Amount;

/// Where an attempt comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A transaction hash sent by the customer (or the hosted page).
    Submitted,
    /// A transfer found by following the chain: real money seen arriving, never refused.
    Detected,
    /// A test helper's simulated transfer.
    Simulated,
}

/// What settling a payment did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// Nothing new: not seen yet, or seen in the same block and not final yet.
    Waiting,
    /// Seen in a block that is not final yet.
    Validating,
    /// Its block was reorganised away: waiting to be seen again.
    Reorganized,
    /// Final and credited (confirmed, underpaid or overpaid).
    Credited(PaymentStatus),
    /// The transfer does not pay the checkout, for this reason.
    Failed(FailureReason),
    /// Its hash was already credited to another payment.
    Duplicate,
    /// The payment had already ended (a concurrent verification settled it).
    AlreadySettled,
}

/// Records an attempt to pay `session_id` with `tx` inside `change`: a `detected` payment, the
/// invoice processing. Answers the payment's id.
pub(super) fn attempt_into(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    session_id: &CheckoutSessionId,
    tx: &TxHash,
    (origin, actor): (Origin, Actor),
    now: DateTime<Utc>,
) -> Result<PaymentId, Error> {
    if change.aggregate.payments.len() >= MAX_PAYMENT_RECORDS && origin != Origin::Detected {
        return Err(Error::LimitReached { what: Limit::PaymentRecords, limit: MAX_PAYMENT_RECORDS });
    }
    let session = change.aggregate.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let payment = new_payment(crypto, session, tx, now);
    let id = payment.id.clone();
    let inv = &mut change.aggregate.invoice;
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentDetected)?;
    if origin != Origin::Simulated {
        inv.log(now, ActivityAction::PaymentDetected, actor, Some(tx.as_str().to_owned()));
    }
    change.push_payment(payment);
    Ok(id)
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
        chain_id: session.chain_id,
        token_contract: session.token_contract.clone(),
        settlement_wallet: session.settlement_wallet.clone(),
        payer_address: None,
        failure_reason: None,
        block: None,
        diagnostic: None,
        detected_at: now,
        confirmed_at: None,
    }
}

/// How long a submitted hash may stay unknown to the chain before it fails as not found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct NotFoundAfter(pub Duration);

/// The test helper's decision: a simulated transfer to `session_id`, recorded and settled at
/// once as a final transfer. The session must be payable when it is credited.
pub(super) fn simulated(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    (session_id, tx): (&CheckoutSessionId, &TxHash),
    (amount, succeed, duplicate): (Option<&Amount>, bool, bool),
    now: DateTime<Utc>,
) -> Result<Decision<PaymentId>, Error> {
    let session = current.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    // A transfer can still reach a session whose invoice was closed (cancelled): that is the
    // late payment the after_void / after_uncollectible events report. Expired and completed
    // sessions take no more transfers.
    let open = matches!(session.status, CheckoutStatus::Pending | CheckoutStatus::Cancelled);
    if !open || now >= session.expires_at {
        return Err(Error::CheckoutSessionNotPayable);
    }
    let observed = ObservedTransaction {
        tx_hash: tx.clone(),
        chain_id: session.chain_id,
        succeeded: succeed,
        block: BlockRef { number: 0, hash: tx.as_str().to_owned() },
        block_time: now,
        sender: None,
        transfers: vec![TokenTransfer {
            token_contract: session.token_contract.clone(),
            from: session.settlement_wallet.clone(),
            to: session.settlement_wallet.clone(),
            amount: amount.cloned().unwrap_or_else(|| session.amount_due.clone()),
        }],
        finalized: true,
    };
    let mut change = InvoiceChange::update(current.clone());
    let id = attempt_into(crypto, &mut change, session_id, tx, (Origin::Simulated, Actor::TestHelper), now)?;
    let observation = Observation::Included(observed);
    let wait = NotFoundAfter(Duration::zero());
    settle_into(crypto, &mut change, &id, (&observation, duplicate), (now, Actor::TestHelper, wait))?;
    Ok(Decision::save(change, id))
}

/// The verification decision: settle payment `id` from `observation`; nothing is saved when
/// nothing changed.
pub(super) fn verified(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    id: &PaymentId,
    (observation, duplicate): (&Observation, bool),
    (now, not_found_after): (DateTime<Utc>, NotFoundAfter),
) -> Result<Decision<Settled>, Error> {
    let mut change = InvoiceChange::update(current.clone());
    let settled =
        settle_into(crypto, &mut change, id, (observation, duplicate), (now, Actor::System, not_found_after))?;
    Ok(match settled {
        Settled::Waiting | Settled::AlreadySettled => Decision::unchanged(settled),
        _ => Decision::save(change, settled),
    })
}

/// A customer's (or the follower's) report of transfer `tx` to `session_id`: recorded as
/// detected for verification. The same hash on the same session answers the existing payment
/// (unless that one failed as not found: the chain may know it now).
pub(super) fn reported(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    (session_id, tx): (&CheckoutSessionId, &TxHash),
    (origin, actor): (Origin, Actor),
    now: DateTime<Utc>,
) -> Result<Decision<PaymentId>, Error> {
    let session = current.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let known = current.payments.iter().rev().find(|p| {
        p.checkout_session_id == *session_id
            && p.transaction_hash == *tx
            && p.failure_reason != Some(FailureReason::TransactionNotFound)
    });
    if let Some(p) = known {
        return Ok(Decision::unchanged(p.id.clone()));
    }
    // A customer reports only to a checkout still taking payments (a closed invoice's
    // cancelled checkout still takes the late payment); the follower records what it saw.
    let open =
        matches!(session.status, CheckoutStatus::Pending | CheckoutStatus::Cancelled) && now < session.expires_at;
    if origin == Origin::Submitted && !open {
        return Err(Error::CheckoutSessionNotPayable);
    }
    let mut change = InvoiceChange::update(current.clone());
    let id = attempt_into(crypto, &mut change, session_id, tx, (origin, actor), now)?;
    Ok(Decision::save(change, id))
}

/// Settles the in-flight payment `id` of `change`'s aggregate from what the chain says of its
/// transaction (`duplicate`: the store found its hash credited elsewhere).
pub(super) fn settle_into(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    id: &PaymentId,
    (observation, duplicate): (&Observation, bool),
    (now, actor, not_found_after): (DateTime<Utc>, Actor, NotFoundAfter),
) -> Result<Settled, Error> {
    let mut payment = change.aggregate.payment(id).cloned().ok_or(Error::NotFound(Resource::Payment))?;
    if !payment.in_flight() {
        return Ok(Settled::AlreadySettled);
    }
    let session = change
        .aggregate
        .session(&payment.checkout_session_id)
        .cloned()
        .ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let settled = if duplicate {
        step(&mut payment, PaymentTrigger::DuplicateTransaction)?;
        payment.failure_reason = Some(FailureReason::DuplicateTransaction);
        let detail = Some(payment.transaction_hash.as_str().to_owned());
        change.aggregate.invoice.log(now, ActivityAction::PaymentDuplicate, actor, detail);
        settle_invoice_status(change, &payment, None)?;
        Settled::Duplicate
    } else {
        match observation {
            Observation::NotFound => not_seen(crypto, change, &mut payment, now, (actor, not_found_after))?,
            Observation::Included(tx) => seen(crypto, change, &mut payment, (&session, tx), (now, actor))?,
        }
    };
    if settled == Settled::Waiting {
        return Ok(settled);
    }
    payment.diagnostic = None;
    settle_sessions(change, &session, &payment, now);
    replace(change, payment);
    Ok(settled)
}

/// The chain does not know the transaction: a validating payment's block was reorganised away;
/// a detected one waits, and fails as not found once it waited long enough.
fn not_seen(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    now: DateTime<Utc>,
    (actor, NotFoundAfter(wait)): (Actor, NotFoundAfter),
) -> Result<Settled, Error> {
    if payment.status == PaymentStatus::Validating {
        step(payment, PaymentTrigger::Reorganized)?;
        payment.block = None;
        payment.amount_received = Amount::zero();
        return Ok(Settled::Reorganized);
    }
    if now.signed_duration_since(payment.detected_at) < wait {
        return Ok(Settled::Waiting);
    }
    fail(crypto, change, payment, FailureReason::TransactionNotFound, (now, actor))?;
    Ok(Settled::Failed(FailureReason::TransactionNotFound))
}

/// The transaction is in a block: fail it, wait for finality, or credit it.
fn seen(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    (session, tx): (&CheckoutSession, &ObservedTransaction),
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<Settled, Error> {
    let expected = Expected {
        chain_id: session.chain_id,
        token_contract: session.token_contract.clone(),
        recipient: session.settlement_wallet.clone(),
        expires_at: session.expires_at,
    };
    let (amount, sender) = match verify(&expected, tx) {
        Verdict::Failed { reason } => {
            fail(crypto, change, payment, reason, (now, actor))?;
            return Ok(Settled::Failed(reason));
        }
        Verdict::Verified { amount, sender } => (amount, sender),
    };
    let moved = payment.block.as_ref() != Some(&tx.block);
    if payment.status == PaymentStatus::Detected {
        step(payment, PaymentTrigger::VerificationStarted)?;
    }
    payment.block = Some(tx.block.clone());
    payment.amount_received = amount.clone();
    payment.payer_address = sender.map(|s| s.to_string());
    if !tx.finalized {
        return Ok(if moved { Settled::Validating } else { Settled::Waiting });
    }
    // When the service confirmed it: its block final and every check passed.
    payment.confirmed_at = Some(now);
    accept(crypto, change, payment, amount, (now, actor))?;
    Ok(Settled::Credited(payment.status))
}

fn step(payment: &mut Payment, trigger: PaymentTrigger) -> Result<(), Error> {
    payment.status = pay::transition(payment.status, trigger)?;
    Ok(())
}

/// Puts the settled `payment` back into the aggregate, marked as changed.
fn replace(change: &mut InvoiceChange, payment: Payment) {
    if !change.changed_payments.contains(&payment.id) {
        change.changed_payments.push(payment.id.clone());
    }
    if let Some(slot) = change.aggregate.payments.iter_mut().find(|p| p.id == payment.id) {
        *slot = payment;
    }
}

/// The invoice's status after a payment ended without credit: still processing while another
/// payment is in flight, otherwise failed (or underpaid when earlier payments are credited).
fn settle_invoice_status(
    change: &mut InvoiceChange,
    ended: &Payment,
    reason: Option<FailureReason>,
) -> Result<(), Error> {
    let others_in_flight = change.aggregate.payments.iter().any(|p| p.id != ended.id && p.in_flight());
    let inv = &mut change.aggregate.invoice;
    if reason.is_some() && !others_in_flight {
        let has_credit = !inv.customer_amount_paid.is_zero();
        inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentFailed { has_credit })?;
    } else if reason.is_none() && !others_in_flight && inv.status == LifecycleStatus::Processing {
        // A duplicate changes nothing of the invoice: back to where its payments leave it.
        let has_credit = !inv.customer_amount_paid.is_zero();
        inv.status = if has_credit { LifecycleStatus::Underpaid } else { LifecycleStatus::Pending };
    }
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
    payment.amount_received = Amount::zero();
    settle_invoice_status(change, payment, Some(reason))?;
    change.aggregate.invoice.log(now, ActivityAction::PaymentFailed, actor, Some(reason.as_str().to_owned()));
    change.emit(crypto, EventType::PaymentFailed, Some(payment.id.clone()), now);
    Ok(())
}

/// A verified, final transfer of `amount`: credited to the invoice (a closed invoice records it
/// and stays closed), numbered here if it has no number yet (an amount-only invoice created before they were
/// numbered at creation).
fn accept(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    amount: Amount,
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<(), Error> {
    step(payment, PaymentTrigger::Verified(amount.cmp(&payment.amount_expected)))?;
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
    let paid_now = t.events.contains(&EventType::InvoicePaid);
    for e in t.events {
        change.emit(crypto, e, None, now);
    }
    // A single-use payment link is used once its invoice is paid.
    if paid_now
        && let Some(link) = change.aggregate.invoice.fields.payment_link.clone()
        && link.single_use
    {
        let data = crate::invoice::snapshot::link_completed_data(&link, &change.aggregate.invoice);
        change.emit_data(crypto, EventType::PaymentLinkCompleted, data, now);
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
        .filter(|p| p.checkout_session_id == paying.id && p.id != payment.id)
        .fold(payment.customer_amount_credited.clone(), |acc, p| acc.add(&p.customer_amount_credited));
    for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending) {
        let this = s.id == paying.id;
        if this && !payment.customer_amount_credited.is_zero() && (session_paid >= s.amount_due || invoice_settled) {
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
