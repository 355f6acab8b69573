//! The pure time-based decision: expire checkouts (and with the last one an unpaid invoice),
//! and mark an invoice past its due date. Running it twice at the same time changes nothing
//! the second time.

use chrono::{DateTime, Utc};

use crate::crypto::Crypto;
use crate::error::Error;
use crate::event::model::EventType;
use crate::invoice::aggregate::{Decision, InvoiceAggregate, InvoiceChange};
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::collection::{self, CollectionTrigger};
use crate::invoice::lifecycle::{self, LifecycleStatus, LifecycleTrigger};
use crate::invoice::model::{ActivityAction, Actor};

/// A pending session past its expiry, with no payment still being verified on it (a transfer
/// mined before the expiry may still pay it: it expires once its payments are settled).
fn expiring(agg: &InvoiceAggregate, s: &CheckoutSession, now: DateTime<Utc>) -> bool {
    s.status == CheckoutStatus::Pending
        && s.expired(now)
        && !agg.payments.iter().any(|p| p.checkout_session_id == s.id && p.in_flight())
}

/// What is due on `current` at `now`. The answer tells whether anything changed.
pub(super) fn due(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    now: DateTime<Utc>,
) -> Result<Decision<bool>, Error> {
    let expiring = current.sessions.iter().any(|s| expiring(current, s, now));
    let inv = &current.invoice;
    let past_due = inv.fields.content.due_at.is_some_and(|d| d <= now)
        && inv.past_due_at.is_none()
        && !inv.remaining().is_zero()
        && collection::transition(inv.collection_state, CollectionTrigger::DueDatePassed)?.to != inv.collection_state;
    if !expiring && !past_due {
        return Ok(Decision::unchanged(false));
    }
    let mut change = InvoiceChange::update(current.clone());
    if expiring {
        expire_sessions(crypto, &mut change, now)?;
    }
    if past_due {
        mark_past_due(crypto, &mut change, now)?;
    }
    change.aggregate.invoice.updated_at = now;
    Ok(Decision::save(change, true))
}

/// Expires the pending sessions past their expiry; when none stays pending, the invoice
/// expires too, unless something was paid or collection is closed (the lifecycle machine's
/// explicit no-ops).
fn expire_sessions(crypto: &dyn Crypto, change: &mut InvoiceChange, now: DateTime<Utc>) -> Result<(), Error> {
    let ids: Vec<_> = change
        .aggregate
        .sessions
        .iter()
        .filter(|s| expiring(&change.aggregate, s, now))
        .map(|s| s.id.clone())
        .collect();
    let agg = &mut change.aggregate;
    for s in agg.sessions.iter_mut().filter(|s| ids.contains(&s.id)) {
        s.status = CheckoutStatus::Expired;
        change.changed_sessions.push(s.id.clone());
    }
    let inv = &mut agg.invoice;
    if agg.sessions.iter().any(|s| s.status == CheckoutStatus::Pending) || !inv.collection_state.is_collectible() {
        return Ok(());
    }
    let next = lifecycle::transition(inv.status, LifecycleTrigger::CheckoutExpired)?;
    if next == LifecycleStatus::Expired && inv.status != LifecycleStatus::Expired {
        inv.status = next;
        inv.log(now, ActivityAction::Expired, Actor::System, None);
        change.emit(crypto, EventType::InvoiceExpired, None, now);
    }
    Ok(())
}

fn mark_past_due(crypto: &dyn Crypto, change: &mut InvoiceChange, now: DateTime<Utc>) -> Result<(), Error> {
    let inv = &mut change.aggregate.invoice;
    let t = collection::transition(inv.collection_state, CollectionTrigger::DueDatePassed)?;
    inv.collection_state = t.to;
    inv.past_due_at = Some(now);
    inv.log(now, ActivityAction::PastDue, Actor::System, None);
    for e in t.events {
        change.emit(crypto, e, None, now);
    }
    Ok(())
}
