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

use chrono::{DateTime, Duration, SubsecRound, Utc};

use crate::chain::evidence::{Claims, claimable};
use crate::chain::model::{
    LoggedTransfer, Observation, ObservedTransaction, OpenCheckout, TokenTransfer, UnattributedTransfer,
};
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
use crate::invoice::payment::{
    self as pay, BlockRef, Evidence, FailureReason, Payment, PaymentStatus, PaymentTrigger, TxHash,
};
use crate::mode::Mode;
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
    /// A person attributed a recorded transfer (manual attribution): real money, never refused
    /// for the number of records.
    Manual,
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

/// What a payment claims: a transaction (every log of the checkout's token to its wallet, for a
/// reported hash) or one log of it, and the evidence that named the checkout when known.
pub(super) type Claim<'a> = (&'a CheckoutSessionId, &'a TxHash, Option<(u64, Evidence)>);

/// Records an attempt to pay `session_id` with `tx` inside `change`: a `detected` payment, the
/// invoice processing. Answers the payment's id.
pub(super) fn attempt_into(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    (session_id, tx, claimed): Claim<'_>,
    (origin, actor): (Origin, Actor),
    now: DateTime<Utc>,
) -> Result<PaymentId, Error> {
    let real_money = matches!(origin, Origin::Detected | Origin::Manual);
    if change.aggregate.payments.len() >= MAX_PAYMENT_RECORDS && !real_money {
        return Err(Error::LimitReached { what: Limit::PaymentRecords, limit: MAX_PAYMENT_RECORDS });
    }
    let session = change.aggregate.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let mut payment = Payment::detected(crypto, session, tx, now);
    payment.claimed_log = claimed.map(|(log, _)| log);
    payment.evidence = claimed.map(|(_, evidence)| evidence);
    let id = payment.id.clone();
    let inv = &mut change.aggregate.invoice;
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentDetected)?;
    if origin != Origin::Simulated {
        inv.log(now, ActivityAction::PaymentDetected, actor, Some(tx.as_str().to_owned()));
    }
    change.push_payment(payment);
    Ok(id)
}

/// How long after a checkout's expiry its customer may still report a hash: a transfer mined
/// before the expiry becomes final minutes later (verification decides on the block's time).
pub const REPORT_AFTER_EXPIRY_HOURS: i64 = 24;

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
    if !open || session.expired(now) {
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
            log_index: 0,
            token_contract: session.token_contract.clone(),
            from: session.settlement_wallet.clone(),
            to: session.settlement_wallet.clone(),
            amount: amount.cloned().unwrap_or_else(|| session.amount_due.clone()),
            authorization: None,
        }],
        finalized: true,
    };
    let mut change = InvoiceChange::update(current.clone());
    let id = attempt_into(crypto, &mut change, (session_id, tx, None), (Origin::Simulated, Actor::TestHelper), now)?;
    let observation = Observation::Included(observed);
    let wait = NotFoundAfter(Duration::zero());
    let chain = Seen { observation: &observation, duplicate, claims: None, skew: Duration::zero() };
    settle_into(crypto, &mut change, &id, chain, (now, Actor::TestHelper, wait))?;
    Ok(Decision::save(change, id))
}

/// A person's decision: the recorded transfer `record` pays checkout `session_id` (`why` says
/// why, in their words). Checked as any verification is, on the transfer as the follower read it
/// from a final block: the checkout's token and wallet, the checkout open at the block's time,
/// an amount in range; then credited at once (`duplicate`: the store found the log credited
/// meanwhile). Errors: `NotFound(CheckoutSession)`; `TransferDoesNotPay` with the failed check.
pub(super) fn attributed(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    (session_id, record, why): (&CheckoutSessionId, &UnattributedTransfer, &str),
    (duplicate, actor): (bool, Actor),
    now: DateTime<Utc>,
) -> Result<Decision<PaymentId>, Error> {
    let session = current.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let l = &record.logged;
    let observed = ObservedTransaction {
        tx_hash: l.tx_hash.clone(),
        chain_id: record.chain_id,
        succeeded: true,
        block: l.block.clone(),
        block_time: l.block_time,
        sender: None,
        transfers: vec![l.transfer.clone()],
        finalized: true,
    };
    if let Verdict::Failed { reason } =
        verify(&expected_of(session, Some(l.transfer.log_index), Duration::zero()), &observed)
    {
        return Err(Error::TransferDoesNotPay(reason.as_str()));
    }
    let mut change = InvoiceChange::update(current.clone());
    let claim = (session_id, &l.tx_hash, Some((l.transfer.log_index, Evidence::Manual)));
    let id = attempt_into(crypto, &mut change, claim, (Origin::Manual, actor), now)?;
    let detail = format!("{} to {}: {}", record.id, session_id, why);
    change.aggregate.invoice.log(now, ActivityAction::TransferAttributed, actor, Some(detail));
    let observation = Observation::Included(observed);
    let chain = Seen { observation: &observation, duplicate, claims: None, skew: Duration::zero() };
    settle_into(crypto, &mut change, &id, chain, (now, actor, NotFoundAfter(Duration::zero())))?;
    Ok(Decision::save(change, id))
}

/// What verification learned of a payment's transaction.
#[derive(Clone, Copy, Debug)]
pub(super) struct Seen<'a> {
    /// What the chain says of it.
    pub observation: &'a Observation,
    /// The store found one of its logs credited elsewhere.
    pub duplicate: bool,
    /// For a reported live hash seen in a block: what names the checkout each of its logs pays
    /// (the checkouts taking transfers into its wallet at the block's time, and the reports of
    /// the hash). A report counts only the logs the evidence gives its checkout.
    pub claims: Option<Claims<'a>>,
    /// How far the service's clock may run ahead of the chain's (`Claims::skew`).
    pub skew: Duration,
}

/// The verification decision: settle payment `id` from what was `seen`; nothing is saved when
/// nothing changed.
pub(super) fn verified(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    id: &PaymentId,
    seen: Seen<'_>,
    (now, not_found_after): (DateTime<Utc>, NotFoundAfter),
) -> Result<Decision<Settled>, Error> {
    let mut change = InvoiceChange::update(current.clone());
    let settled = settle_into(crypto, &mut change, id, seen, (now, Actor::System, not_found_after))?;
    Ok(match settled {
        Settled::Waiting | Settled::AlreadySettled => Decision::unchanged(settled),
        _ => Decision::save(change, settled),
    })
}

/// A customer's report of transfer `tx` to `session_id`, or the follower's attribution of its
/// log (with the evidence that named the checkout): recorded as detected for verification. A
/// report of a hash the session already has a payment for (reported, or found by the follower)
/// answers that payment, and so does the follower's attribution of the same log again (unless
/// that payment failed as not found: the chain may know it now).
pub(super) fn reported(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    (session_id, tx, claimed): Claim<'_>,
    (origin, actor): (Origin, Actor),
    now: DateTime<Utc>,
) -> Result<Decision<PaymentId>, Error> {
    let session = current.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
    let claimed_log = claimed.map(|(log, _)| log);
    let known = current.payments.iter().rev().find(|p| {
        p.checkout_session_id == *session_id
            && p.transaction_hash == *tx
            && (origin == Origin::Submitted || p.claimed_log == claimed_log)
            && p.failure_reason != Some(FailureReason::TransactionNotFound)
    });
    if let Some(p) = known {
        return Ok(Decision::unchanged(p.id.clone()));
    }
    // A customer reports to a checkout still taking payments (a closed invoice's cancelled
    // checkout still takes the late payment), and up to a day after its expiry: whether the
    // transfer was mined in time is the block's to say. The follower records what it saw.
    let takes = matches!(session.status, CheckoutStatus::Pending | CheckoutStatus::Cancelled | CheckoutStatus::Expired);
    let in_time = now < session.expires_at + Duration::hours(REPORT_AFTER_EXPIRY_HOURS);
    if origin == Origin::Submitted && !(takes && in_time) {
        return Err(Error::CheckoutSessionNotPayable);
    }
    let mut change = InvoiceChange::update(current.clone());
    let id = attempt_into(crypto, &mut change, (session_id, tx, claimed), (origin, actor), now)?;
    Ok(Decision::save(change, id))
}

/// Settles the in-flight payment `id` of `change`'s aggregate from what the chain says of its
/// transaction (`duplicate`: the store found its hash credited elsewhere).
pub(super) fn settle_into(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    id: &PaymentId,
    seen_chain: Seen<'_>,
    (now, actor, not_found_after): (DateTime<Utc>, Actor, NotFoundAfter),
) -> Result<Settled, Error> {
    let Seen { observation, duplicate, .. } = seen_chain;
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
        settle_invoice_status(change, &payment, None, false)?;
        Settled::Duplicate
    } else {
        let ctx = (&session, now, actor);
        match observation {
            Observation::NotFound => not_seen(crypto, change, &mut payment, ctx, not_found_after)?,
            Observation::Included(tx) => seen(crypto, change, &mut payment, (&session, tx, seen_chain), (now, actor))?,
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
    (session, now, actor): (&CheckoutSession, DateTime<Utc>, Actor),
    NotFoundAfter(wait): NotFoundAfter,
) -> Result<Settled, Error> {
    if payment.status == PaymentStatus::Validating {
        step(payment, PaymentTrigger::Reorganized)?;
        payment.block = None;
        payment.block_time = None;
        payment.amount_received = Amount::zero();
        payment.logs.clear();
        // The wait for a transaction the chain does not know starts again: it may be mined
        // again later.
        payment.missing_since = Some(now);
        return Ok(Settled::Reorganized);
    }
    if now.signed_duration_since(payment.missing_since.unwrap_or(payment.detected_at)) < wait {
        return Ok(Settled::Waiting);
    }
    fail(crypto, change, payment, FailureReason::TransactionNotFound, (session, now, actor))?;
    Ok(Settled::Failed(FailureReason::TransactionNotFound))
}

/// What `session` expects of a transfer claiming log `only_log` (or every log), mined no
/// earlier than `allowance` before the session's creation.
fn expected_of(session: &CheckoutSession, only_log: Option<u64>, allowance: Duration) -> Expected {
    Expected {
        chain_id: session.chain_id,
        token_contract: session.token_contract.clone(),
        recipient: session.settlement_wallet.clone(),
        not_before: session.created_at.trunc_subsecs(0) - allowance,
        expires_at: session.expires_at,
        only_log,
    }
}

/// The logs of `counted` a report for `session` may count, by the evidence in `claims` (the
/// session itself is among the candidates even when it no longer takes transfers by its
/// status: it is the one the report names).
fn ranked(
    session: &CheckoutSession,
    remaining: &Amount,
    tx: &ObservedTransaction,
    counted: Vec<TokenTransfer>,
    claims: Claims<'_>,
) -> Result<(Amount, Vec<TokenTransfer>, Evidence), FailureReason> {
    let mut open = claims.open.to_vec();
    if !open.iter().any(|c| c.session_id == session.id) {
        open.push(OpenCheckout {
            scope: session.scope.clone(),
            session_id: session.id.clone(),
            invoice_id: session.invoice_id.clone(),
            amount_due: session.amount_due.clone(),
            amount_offset: session.amount_offset.clone(),
            invoice_remaining: remaining.clone(),
            created_at: session.created_at,
            bindings: Vec::new(),
        });
    }
    let logs: Vec<LoggedTransfer> = counted
        .into_iter()
        .map(|transfer| LoggedTransfer {
            tx_hash: tx.tx_hash.clone(),
            block: tx.block.clone(),
            block_time: tx.block_time,
            transfer,
        })
        .collect();
    let (transfers, evidence) = claimable(&session.id, &logs, &Claims { open: &open, ..claims })?;
    let amount = transfers.iter().fold(Amount::zero(), |acc, t| acc.add(&t.amount));
    Ok((amount, transfers, evidence))
}

/// The transaction is in a block: wait for finality, then fail it or credit it. A verdict is
/// only acted on once the block is final: the same transaction mined again elsewhere after a
/// reorganisation may pay where this block's copy did not.
fn seen(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    (session, tx, chain): (&CheckoutSession, &ObservedTransaction, Seen<'_>),
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<Settled, Error> {
    let report = payment.claimed_log.is_none() && payment.scope.mode == Mode::Live;
    // A transfer a little older than its checkout (the chain's clock behind the service's)
    // counts for it on evidence the transfer carries; a report is ranked below.
    let allowance =
        if report || payment.evidence.is_some_and(Evidence::is_strong) { chain.skew } else { Duration::zero() };
    let remaining = change.aggregate.invoice.remaining();
    let verdict = match (verify(&expected_of(session, payment.claimed_log, allowance), tx), chain.claims) {
        (Verdict::Verified { transfers, .. }, Some(claims)) if report => {
            match ranked(session, &remaining, tx, transfers, claims) {
                Ok((amount, transfers, evidence)) => match transfers.first().map(|t| t.from.clone()) {
                    Some(payer) => {
                        payment.evidence = Some(evidence);
                        Verdict::Verified { amount, payer, transfers }
                    }
                    None => Verdict::Failed { reason: FailureReason::AttributedToAnotherCheckout },
                },
                Err(reason) => Verdict::Failed { reason },
            }
        }
        // A report is never credited without the claims to weigh it against: it waits.
        (Verdict::Verified { .. }, None) if report => return Ok(Settled::Waiting),
        (v, _) => v,
    };
    let moved = payment.block.as_ref() != Some(&tx.block);
    if payment.status == PaymentStatus::Detected {
        step(payment, PaymentTrigger::VerificationStarted)?;
    }
    payment.block = Some(tx.block.clone());
    payment.block_time = Some(tx.block_time);
    payment.missing_since = None;
    let (amount, payer, transfers) = match verdict {
        Verdict::Failed { reason } if tx.finalized => {
            payment.logs.clear();
            fail(crypto, change, payment, reason, (session, now, actor))?;
            return Ok(Settled::Failed(reason));
        }
        Verdict::Failed { .. } => {
            payment.amount_received = Amount::zero();
            payment.logs.clear();
            return Ok(if moved { Settled::Validating } else { Settled::Waiting });
        }
        Verdict::Verified { amount, payer, transfers } => (amount, payer, transfers),
    };
    payment.amount_received = amount.clone();
    payment.payer_address = Some(payer.to_string());
    payment.logs = transfers.iter().map(|t| t.log_index).collect();
    if !tx.finalized {
        return Ok(if moved { Settled::Validating } else { Settled::Waiting });
    }
    // When the service confirmed it: its block final and every check passed.
    payment.confirmed_at = Some(now);
    accept(crypto, change, payment, (amount, &session.amount_offset), (now, actor))?;
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
/// A duplicate, or a failed report whose checkout can still be paid (`keep`: anyone holding a
/// checkout id can report a foreign hash), changes nothing of it.
fn settle_invoice_status(
    change: &mut InvoiceChange,
    ended: &Payment,
    reason: Option<FailureReason>,
    keep: bool,
) -> Result<(), Error> {
    let others_in_flight = change.aggregate.payments.iter().any(|p| p.id != ended.id && p.in_flight());
    let inv = &mut change.aggregate.invoice;
    if reason.is_some() && !keep && !others_in_flight {
        let has_credit = !inv.customer_amount_paid.is_zero();
        inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentFailed { has_credit })?;
    } else if !others_in_flight && inv.status == LifecycleStatus::Processing {
        // A duplicate changes nothing of the invoice: back to where its payments leave it.
        let has_credit = !inv.customer_amount_paid.is_zero();
        inv.status = if has_credit { LifecycleStatus::Underpaid } else { LifecycleStatus::Pending };
    }
    Ok(())
}

/// A transfer that failed verification: nothing is credited. A failed report on a checkout that
/// can still be paid leaves the invoice's status as it was.
fn fail(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    reason: FailureReason,
    (session, now, actor): (&CheckoutSession, DateTime<Utc>, Actor),
) -> Result<(), Error> {
    step(payment, PaymentTrigger::VerificationFailed)?;
    payment.failure_reason = Some(reason);
    payment.amount_received = Amount::zero();
    let report = payment.claimed_log.is_none() && payment.scope.mode == Mode::Live;
    let keep = report && session.is_payable(now);
    settle_invoice_status(change, payment, Some(reason), keep)?;
    change.aggregate.invoice.log(now, ActivityAction::PaymentFailed, actor, Some(reason.as_str().to_owned()));
    change.emit(crypto, EventType::PaymentFailed, Some(payment.id.clone()), now);
    Ok(())
}

/// A verified, final transfer of `amount` to a session that added `offset` to what it collects
/// (unique amounts): credited to the invoice (a closed invoice records it and stays closed),
/// numbered here if it has no number yet (an amount-only invoice created before they were
/// numbered at creation).
fn accept(
    crypto: &dyn Crypto,
    change: &mut InvoiceChange,
    payment: &mut Payment,
    (amount, offset): (Amount, &Amount),
    (now, actor): (DateTime<Utc>, Actor),
) -> Result<(), Error> {
    let remaining = change.aggregate.invoice.remaining();
    // A unique-amount checkout's offset (what was sent above the remainder, up to the offset)
    // reaches the merchant's wallet but is not credited to the invoice.
    let surcharge =
        if remaining.is_zero() { Amount::zero() } else { offset.clone().min(amount.saturating_sub(&remaining)) };
    let credited = amount.saturating_sub(&surcharge);
    // What was due of this payment: its session's amount, or what remained of the invoice
    // when less (a payment that pays exactly the rest is confirmed, not underpaid).
    if !remaining.is_zero() && remaining < payment.amount_expected {
        payment.amount_expected = remaining;
    }
    step(payment, PaymentTrigger::Verified(credited.cmp(&payment.amount_expected)))?;
    payment.customer_amount_credited = credited.clone();
    payment.merchant_amount_settled = amount.clone();
    let inv = &mut change.aggregate.invoice;
    inv.customer_amount_paid = inv.customer_amount_paid.add(&credited);
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
    // The paying session may have expired meanwhile: its transfer was mined in time.
    let takes = |s: &CheckoutSession| {
        s.status == CheckoutStatus::Pending || (s.id == paying.id && s.status == CheckoutStatus::Expired)
    };
    for s in agg.sessions.iter_mut().filter(|s| takes(s)) {
        let this = s.id == paying.id;
        if this && !payment.customer_amount_credited.is_zero() && (session_paid >= s.collects() || invoice_settled) {
            s.status = CheckoutStatus::Completed;
            s.completed_at = Some(now);
        } else if invoice_settled && s.status == CheckoutStatus::Pending {
            s.status = CheckoutStatus::Cancelled;
        } else {
            continue;
        }
        change.changed_sessions.push(s.id.clone());
    }
}
