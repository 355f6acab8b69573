//! The pure decisions behind the billing use cases: building records, crediting a payment,
//! and the time-based transitions. No I/O; every function is tested in `tests.rs`.

use std::cmp::Ordering;

use chrono::{DateTime, Duration, Utc};

use super::{InvoiceAggregate, InvoiceChange, PendingEvent, Settlement};
use crate::chain::Verdict;
use crate::checkout::{CheckoutSession, CheckoutStatus};
use crate::error::Error;
use crate::event::EventType;
use crate::ids::{CheckoutSessionId, EventId, InvoiceId, PaymentId, PublicToken};
use crate::invoice::validate::{self, check_len};
use crate::invoice::{
    CollectionState, CollectionTrigger, Coverage, Invoice, InvoiceFields, InvoiceKind, LifecycleStatus,
    LifecycleTrigger, Totals, collection, lifecycle,
};
use crate::merchant::{Merchant, POLYGON_CHAIN_ID};
use crate::mode::Scope;
use crate::money::Amount;
use crate::payment::{self as pay, Payment, PaymentStatus, PaymentTrigger, TxHash};
use crate::ports::Crypto;

use super::MAX_REASON_BYTES;

pub(super) fn event(
    crypto: &dyn Crypto,
    event_type: EventType,
    payment_id: Option<PaymentId>,
    at: DateTime<Utc>,
) -> PendingEvent {
    PendingEvent { id: EventId::generate(crypto), event_type, payment_id, created_at: at }
}

pub(super) fn new_session(
    crypto: &dyn Crypto,
    invoice: &Invoice,
    amount_due: Amount,
    now: DateTime<Utc>,
    customer_email: Option<String>,
) -> CheckoutSession {
    let f = &invoice.fields;
    CheckoutSession {
        id: CheckoutSessionId::generate(crypto),
        scope: invoice.scope.clone(),
        invoice_id: invoice.id.clone(),
        status: CheckoutStatus::Pending,
        amount_due,
        currency: f.currency,
        settlement_wallet: invoice.settlement_wallet.clone(),
        external_reference: f.external_reference.clone(),
        customer_email,
        success_url: f.success_url.clone(),
        cancel_url: f.cancel_url.clone(),
        expires_at: now + Duration::minutes(i64::from(f.checkout_expires_in_minutes)),
        created_at: now,
        completed_at: None,
    }
}

#[allow(clippy::too_many_arguments)]
pub(super) fn new_invoice(
    crypto: &dyn Crypto,
    merchant: &Merchant,
    scope: &Scope,
    settlement: &Settlement,
    kind: InvoiceKind,
    fields: InvoiceFields,
    totals: Totals,
    now: DateTime<Utc>,
) -> Invoice {
    let mut invoice = Invoice {
        id: InvoiceId::generate(crypto),
        scope: scope.clone(),
        kind,
        number: None,
        number_prefix: merchant.invoice_prefix.clone(),
        public_token: None,
        fields,
        totals,
        collection_state: CollectionState::Draft,
        status: LifecycleStatus::Pending,
        version: 1,
        customer_amount_paid: Amount::zero(),
        merchant_amount_settled: Amount::zero(),
        fee_basis_points: merchant.fee_basis_points,
        settlement_wallet: settlement.wallet.clone(),
        close_reason: None,
        refunds: Vec::new(),
        activity: Vec::new(),
        issued_at: None,
        paid_at: None,
        closed_at: None,
        past_due_at: None,
        created_at: now,
        updated_at: now,
        lock_version: 0,
    };
    invoice.log(now, "created", "api", None);
    invoice
}

/// Makes an invoice collectible inside `change`: hosted token and first checkout. An itemized
/// draft is issued (number and invoice.issued); an amount-only invoice is payable at once and
/// is numbered when its first payment is credited, so creating checkouts never queues on the
/// merchant's number sequence and abandoned checkouts consume no numbers.
pub(super) fn issue_into(
    change: &mut InvoiceChange,
    crypto: &dyn Crypto,
    now: DateTime<Utc>,
    customer_email: Option<String>,
) -> Result<(), Error> {
    let invoice = &mut change.aggregate.invoice;
    let t = collection::transition(invoice.collection_state, CollectionTrigger::Issue)?;
    invoice.collection_state = t.to;
    invoice.public_token = Some(PublicToken::generate(crypto));
    invoice.issued_at = Some(now);
    invoice.updated_at = now;
    invoice.log(now, "issued", "api", None);
    let session = new_session(crypto, invoice, invoice.totals.total.clone(), now, customer_email);
    change.changed_sessions.push(session.id.clone());
    change.aggregate.sessions.push(session);
    if change.aggregate.invoice.kind == InvoiceKind::Itemized {
        change.assign_number = Some(change.aggregate.invoice.number_prefix.clone());
        for e in t.events {
            change.events.push(event(crypto, e, None, now));
        }
    }
    Ok(())
}

pub(super) fn check_reason(reason: &str) -> Result<String, Error> {
    let reason = reason.trim();
    check_len("reason", reason, 1, MAX_REASON_BYTES)?;
    Ok(reason.to_owned())
}

pub(super) fn check_send(fields: &InvoiceFields) -> Result<(), Error> {
    let email = fields.customer.as_ref().and_then(|c| c.email.as_deref());
    if !email.is_some_and(validate::is_valid_email) {
        return Err(Error::CustomerEmailRequired { field: "customer.email".into() });
    }
    // Email delivery arrives with its own issue; until then nothing is issued half-way.
    Err(Error::FeatureUnavailable("sending invoices by email"))
}

/// The pure crediting decision for one verified (or failed, or duplicate) transfer.
#[allow(clippy::too_many_arguments)]
pub(super) fn credit(
    crypto: &dyn Crypto,
    mut agg: InvoiceAggregate,
    session: &CheckoutSession,
    tx: &TxHash,
    verdict: Verdict,
    duplicate: bool,
    now: DateTime<Utc>,
    actor: &str,
) -> InvoiceChange {
    let mut payment = Payment {
        id: PaymentId::generate(crypto),
        scope: agg.invoice.scope.clone(),
        invoice_id: agg.invoice.id.clone(),
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
    };
    let step = |p: &mut Payment, t: PaymentTrigger| {
        if let Ok(next) = pay::transition(p.status, t) {
            p.status = next;
        }
    };
    let mut events = Vec::new();
    let mut number = None;
    let inv = &mut agg.invoice;
    if duplicate {
        step(&mut payment, PaymentTrigger::DuplicateTransaction);
        payment.failure_reason = Some("duplicate_transaction".into());
        inv.log(now, "payment_duplicate", actor, Some(tx.as_str().to_owned()));
    } else {
        step(&mut payment, PaymentTrigger::VerificationStarted);
        inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentDetected).unwrap_or(inv.status);
        match verdict {
            Verdict::Failed { reason } => {
                step(&mut payment, PaymentTrigger::VerificationFailed);
                payment.failure_reason = Some(reason.clone());
                let has_credit = !inv.customer_amount_paid.is_zero();
                inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentFailed { has_credit })
                    .unwrap_or(inv.status);
                inv.log(now, "payment_failed", actor, Some(reason));
                events.push(event(crypto, EventType::PaymentFailed, Some(payment.id.clone()), now));
            }
            Verdict::Verified { amount, sender, at } => {
                let cmp = amount.cmp(&payment.amount_expected);
                step(&mut payment, PaymentTrigger::Verified(cmp));
                payment.amount_received = amount.clone();
                payment.customer_amount_credited = amount.clone();
                payment.merchant_amount_settled = amount.clone();
                payment.payer_address = sender;
                payment.confirmed_at = Some(at);
                inv.customer_amount_paid = inv.customer_amount_paid.add(&amount);
                inv.merchant_amount_settled = inv.merchant_amount_settled.add(&amount);
                let total = inv.totals.total.clone();
                let coverage = match inv.customer_amount_paid.cmp(&total) {
                    Ordering::Less => Coverage::Partial,
                    Ordering::Equal => Coverage::Full,
                    Ordering::Greater => Coverage::Over,
                };
                let trigger = CollectionTrigger::PaymentCredited {
                    remaining_zero: coverage != Coverage::Partial,
                    over: coverage == Coverage::Over,
                };
                if let Ok(t) = collection::transition(inv.collection_state, trigger) {
                    inv.collection_state = t.to;
                    events.extend(t.events.into_iter().map(|e| event(crypto, e, None, now)));
                }
                inv.status = lifecycle::transition(inv.status, LifecycleTrigger::PaymentCredited(coverage))
                    .unwrap_or(inv.status);
                if coverage != Coverage::Partial && inv.paid_at.is_none() && !inv.collection_state.is_closed() {
                    inv.paid_at = Some(now);
                }
                inv.log(now, "payment_credited", actor, Some(format!("{} via {}", amount, payment.id)));
                if inv.number.is_none() {
                    number = Some(inv.number_prefix.clone());
                }
                match payment.status {
                    PaymentStatus::Underpaid => {
                        events.push(event(crypto, EventType::PaymentUnderpaid, Some(payment.id.clone()), now))
                    }
                    PaymentStatus::Overpaid => {
                        events.push(event(crypto, EventType::PaymentOverpaid, Some(payment.id.clone()), now))
                    }
                    _ => {}
                }
            }
        }
    }
    inv.updated_at = now;
    let invoice_settled = inv.remaining().is_zero();
    let session_paid = agg
        .payments
        .iter()
        .filter(|p| p.checkout_session_id == session.id)
        .fold(payment.customer_amount_credited.clone(), |acc, p| acc.add(&p.customer_amount_credited));
    let mut changed_sessions = Vec::new();
    for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending) {
        let this = s.id == session.id;
        if (this && session_paid >= s.amount_due) || invoice_settled {
            if this {
                s.status = CheckoutStatus::Completed;
                s.completed_at = Some(now);
            } else {
                s.status = CheckoutStatus::Cancelled;
            }
            changed_sessions.push(s.id.clone());
        }
    }
    let id = payment.id.clone();
    agg.payments.push(payment);
    let mut change = InvoiceChange::new(agg, None);
    change.changed_payments.push(id);
    change.changed_sessions = changed_sessions;
    change.events = events;
    change.assign_number = number;
    change
}

/// The pure time-based decision: expire checkouts, expire the invoice, mark past due.
pub(super) fn due_transitions(
    crypto: &dyn Crypto,
    mut agg: InvoiceAggregate,
    now: DateTime<Utc>,
) -> Option<InvoiceChange> {
    let mut changed_sessions = Vec::new();
    let mut events = Vec::new();
    for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending && s.expires_at <= now) {
        s.status = CheckoutStatus::Expired;
        changed_sessions.push(s.id.clone());
    }
    let inv = &mut agg.invoice;
    let any_pending = agg.sessions.iter().any(|s| s.status == CheckoutStatus::Pending);
    let mut touched = !changed_sessions.is_empty();
    if !changed_sessions.is_empty()
        && !any_pending
        && inv.collection_state.is_collectible()
        && let Ok(next) = lifecycle::transition(inv.status, LifecycleTrigger::CheckoutExpired)
    {
        inv.status = next;
        inv.log(now, "expired", "system", None);
        events.push(event(crypto, EventType::InvoiceExpired, None, now));
    }
    let past_due =
        inv.fields.due_at.is_some_and(|d| d <= now) && inv.past_due_at.is_none() && !inv.remaining().is_zero();
    if past_due && let Ok(t) = collection::transition(inv.collection_state, CollectionTrigger::DueDatePassed) {
        inv.collection_state = t.to;
        inv.past_due_at = Some(now);
        inv.log(now, "past_due", "system", None);
        events.extend(t.events.into_iter().map(|e| event(crypto, e, None, now)));
        touched = true;
    }
    if !touched {
        return None;
    }
    inv.updated_at = now;
    let mut change = InvoiceChange::new(agg, None);
    change.changed_sessions = changed_sessions;
    change.events = events;
    Some(change)
}
