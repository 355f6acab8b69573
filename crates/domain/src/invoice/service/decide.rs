//! The pure decisions behind the merchant's invoice actions: building new records, editing,
//! issuing, opening a remainder checkout, closing collection, recording refunds. No I/O; each
//! takes the current aggregate and the time and returns what to save and what to answer.

use chrono::{DateTime, Duration, Utc};

use crate::crypto::Crypto;
use crate::error::{Error, Limit};
use crate::event::model::EventType;
use crate::ids::{CheckoutSessionId, InvoiceId, PublicToken, RefundReferenceId};
use crate::invoice::aggregate::{Decision, InvoiceAggregate, InvoiceChange};
use crate::invoice::checkout::{CheckoutSession, CheckoutStatus};
use crate::invoice::collection::{self, CollectionState, CollectionTrigger};
use crate::invoice::input::{CheckoutInput, CloseAction, MAX_REASON_BYTES, RefundInput};
use crate::invoice::lifecycle::{self, LifecycleStatus, LifecycleTrigger};
use crate::invoice::model::{
    ActivityAction, Actor, Customer, Invoice, InvoiceContent, InvoiceFields, InvoiceKind, LineItem,
    MAX_CHECKOUT_SESSIONS, MAX_DRAFT_VERSIONS, Refund, RefundReference,
};
use crate::invoice::totals::Totals;
use crate::invoice::validate::{self, DraftInput, check_len};
use crate::merchant::model::{ChainSettings, MAX_AMOUNT_OFFSET_UNITS, Merchant, Settlement};
use crate::mode::{Mode, Scope};
use crate::money::Amount;

/// A new checkout session of `invoice` collecting `amount_due`, on the configured chain; with
/// `unique` (the merchant's unique amounts, live mode), asking a random offset more.
pub(super) fn new_session(
    (crypto, chain): (&dyn Crypto, &ChainSettings),
    invoice: &Invoice,
    (amount_due, unique): (Amount, bool),
    now: DateTime<Utc>,
) -> Result<CheckoutSession, Error> {
    let f = &invoice.fields;
    let expires_at = now
        .checked_add_signed(Duration::minutes(i64::from(f.checkout_expires_in_minutes)))
        .ok_or_else(|| Error::Internal("checkout expiry out of range".into()))?;
    let amount_offset = if unique && invoice.scope.mode == Mode::Live { amount_offset(crypto) } else { Amount::zero() };
    let amount_due = amount_due.add(&amount_offset);
    Ok(CheckoutSession {
        id: CheckoutSessionId::generate(crypto),
        scope: invoice.scope.clone(),
        invoice_id: invoice.id.clone(),
        status: CheckoutStatus::Pending,
        amount_due,
        currency: f.currency,
        chain_id: chain.chain_id,
        token_contract: chain.contract(f.currency).clone(),
        settlement_wallet: invoice.settlement_wallet.clone(),
        external_reference: f.content.external_reference.clone(),
        customer_email: f.content.customer_email().map(str::to_owned),
        success_url: f.content.success_url.clone(),
        cancel_url: f.content.cancel_url.clone(),
        expires_at,
        created_at: now,
        completed_at: None,
        amount_offset,
    })
}

/// A random offset of 1 to [`MAX_AMOUNT_OFFSET_UNITS`] base units. Random, not the smallest
/// free one: concurrent creations rarely pick the same, and when they do the store's unique
/// index refuses the second, which decides again.
fn amount_offset(crypto: &dyn Crypto) -> Amount {
    let mut bytes = [0u8; 8];
    crypto.fill_random(&mut bytes);
    let units = u64::from_be_bytes(bytes) % u64::from(MAX_AMOUNT_OFFSET_UNITS) + 1;
    Amount::from_units(&units.to_string()).unwrap_or_else(Amount::zero)
}

/// A new invoice of `merchant` in `scope`, logged as created.
pub(super) fn new_invoice(
    crypto: &dyn Crypto,
    merchant: &Merchant,
    scope: &Scope,
    settlement: Settlement,
    kind: InvoiceKind,
    (fields, totals): (InvoiceFields, Totals),
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
        settlement_wallet: settlement.wallet,
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
    invoice.log(now, ActivityAction::Created, Actor::Api, None);
    invoice
}

/// Makes an invoice collectible inside `change`: hosted token and first checkout. An itemized
/// draft is issued (number and invoice.issued); an amount-only invoice is payable at once and
/// numbered at creation too (the spec's "assigned on issue"). Numbers come from the store's
/// per-scope sequence, which never serializes concurrent creations: unique and increasing, with
/// gaps only where a creation did not commit.
pub(super) fn issue_into(
    change: &mut InvoiceChange,
    ctx: (&dyn Crypto, &ChainSettings),
    unique: bool,
    now: DateTime<Utc>,
) -> Result<(), Error> {
    let crypto = ctx.0;
    let invoice = &mut change.aggregate.invoice;
    let t = collection::transition(invoice.collection_state, CollectionTrigger::Issue)?;
    invoice.collection_state = t.to;
    invoice.public_token = Some(PublicToken::generate(crypto));
    invoice.issued_at = Some(now);
    invoice.log(now, ActivityAction::Issued, Actor::Api, None);
    let session = new_session(ctx, invoice, (invoice.totals.total.clone(), unique), now)?;
    let itemized = invoice.kind == InvoiceKind::Itemized;
    let prefix = invoice.number_prefix.clone();
    change.push_session(session);
    change.assign_number = Some(prefix);
    if itemized {
        for e in t.events {
            change.emit(crypto, e, None, now);
        }
    }
    Ok(())
}

/// A new amount-only invoice, payable at once, with its checkout.
pub(crate) fn checkout(
    ctx: (&dyn Crypto, &ChainSettings),
    merchant: &Merchant,
    scope: &Scope,
    input: CheckoutInput,
    now: DateTime<Utc>,
) -> Result<InvoiceChange, Error> {
    let amount = input.amount.ok_or_else(|| Error::validation("amount", "amount is required"))?;
    if amount.is_zero() {
        return Err(Error::invalid_amount("amount", "must be greater than zero"));
    }
    let minutes = validate::expiry_minutes("expires_in_minutes", input.expires_in_minutes)?;
    if let Some(r) = &input.external_reference {
        check_len("external_reference", r, 0, validate::MAX_EXTERNAL_REFERENCE_BYTES)?;
    }
    if let Some(email) = &input.customer_email {
        validate::check_email("customer_email", email)?;
    }
    validate::check_metadata("metadata", &input.metadata)?;
    let settlement = merchant.settlement(scope.mode)?;
    let unique = settlement.unique_amounts;
    let content = InvoiceContent {
        customer: input.customer_email.map(|email| Customer { email: Some(email), ..Default::default() }),
        external_reference: input.external_reference,
        metadata: input.metadata,
        success_url: input.success_url,
        cancel_url: input.cancel_url,
        ..Default::default()
    };
    let fields = InvoiceFields {
        content,
        amount: Some(amount.clone()),
        currency: settlement.token,
        checkout_expires_in_minutes: minutes,
        reminder_schedule: None,
        payment_link: None,
    };
    let totals = Totals::of_amount(amount);
    let invoice = new_invoice(ctx.0, merchant, scope, settlement, InvoiceKind::AmountOnly, (fields, totals), now);
    let mut change = InvoiceChange::create(InvoiceAggregate::new(invoice));
    issue_into(&mut change, ctx, unique, now)?;
    Ok(change)
}

/// A new itemized draft, or an issued invoice when `issue`.
pub(super) fn itemized(
    ctx: (&dyn Crypto, &ChainSettings),
    merchant: &Merchant,
    scope: &Scope,
    input: DraftInput,
    (issue, send): (bool, bool),
    now: DateTime<Utc>,
) -> Result<InvoiceChange, Error> {
    if send && !issue {
        return Err(Error::validation("send", "send=true requires issue=true"));
    }
    let settlement = merchant.settlement(scope.mode)?;
    let unique = settlement.unique_amounts;
    let built = validate::build_fields(input, settlement.token)?;
    check_due(&built.0, now)?;
    if send {
        check_send(&built.0.content)?;
    }
    let invoice = new_invoice(ctx.0, merchant, scope, settlement, InvoiceKind::Itemized, built, now);
    let mut change = InvoiceChange::create(InvoiceAggregate::new(invoice));
    if issue {
        issue_into(&mut change, ctx, unique, now)?;
    }
    if send {
        queue_send(&mut change, ctx.0, now)?;
    }
    Ok(change)
}

/// A new draft with the commercial fields of `source` (an amount-only source becomes one line).
pub(super) fn duplicate(
    crypto: &dyn Crypto,
    merchant: &Merchant,
    scope: &Scope,
    source: &Invoice,
    now: DateTime<Utc>,
) -> Result<InvoiceChange, Error> {
    let settlement = merchant.settlement(scope.mode)?;
    let mut fields = source.fields.clone();
    if let Some(amount) = fields.amount.take() {
        let description = fields.content.external_reference.clone().unwrap_or_else(|| "Amount due".to_owned());
        fields.content.lines =
            vec![LineItem { id: None, sku: None, description, quantity: Amount::one(), unit_amount: amount }];
    }
    fields.currency = settlement.token;
    let kind = InvoiceKind::Itemized;
    let mut invoice = new_invoice(crypto, merchant, scope, settlement, kind, (fields, source.totals.clone()), now);
    invoice.log(now, ActivityAction::DuplicatedFrom, Actor::Api, Some(source.id.to_string()));
    Ok(InvoiceChange::create(InvoiceAggregate::new(invoice)))
}

fn check_version(invoice: &Invoice, version: i64) -> Result<(), Error> {
    if version != invoice.version {
        return Err(Error::InvoiceVersionConflict { provided: version, current: invoice.version });
    }
    Ok(())
}

/// PATCH: the draft's fields replaced at `version`.
pub(super) fn update(
    current: &InvoiceAggregate,
    version: i64,
    (fields, totals): &(InvoiceFields, Totals),
    now: DateTime<Utc>,
) -> Result<Decision<()>, Error> {
    collection::transition(current.invoice.collection_state, CollectionTrigger::Edit)?;
    if current.invoice.kind != InvoiceKind::Itemized {
        return Err(Error::InvoiceNotEditable);
    }
    check_version(&current.invoice, version)?;
    if current.invoice.version >= MAX_DRAFT_VERSIONS {
        return Err(Error::LimitReached {
            what: Limit::DraftVersions,
            limit: usize::try_from(MAX_DRAFT_VERSIONS).unwrap_or(0),
        });
    }
    let mut change = InvoiceChange::update(current.clone());
    let inv = &mut change.aggregate.invoice;
    inv.fields = fields.clone();
    inv.totals = totals.clone();
    inv.version += 1;
    let detail = format!("version {}", inv.version);
    inv.log(now, ActivityAction::Updated, Actor::Api, Some(detail));
    Ok(Decision::of(change))
}

/// Issue the draft at `version` (`unique`: the merchant's unique amounts).
pub(super) fn issue(
    ctx: (&dyn Crypto, &ChainSettings),
    current: &InvoiceAggregate,
    (version, send, unique): (i64, bool, bool),
    now: DateTime<Utc>,
) -> Result<Decision<()>, Error> {
    collection::transition(current.invoice.collection_state, CollectionTrigger::Issue)?;
    check_version(&current.invoice, version)?;
    if send {
        check_send(&current.invoice.fields.content)?;
    }
    let mut change = InvoiceChange::update(current.clone());
    issue_into(&mut change, ctx, unique, now)?;
    if send {
        queue_send(&mut change, ctx.0, now)?;
    }
    Ok(Decision::of(change))
}

/// A checkout for the collectible remainder; an active one for the same remainder is reused.
/// The answer is the session and whether it was reused.
pub(super) fn open_checkout(
    ctx: (&dyn Crypto, &ChainSettings),
    current: &InvoiceAggregate,
    now: DateTime<Utc>,
) -> Result<Decision<(CheckoutSessionId, bool)>, Error> {
    current.invoice.check_collecting()?;
    let remaining = current.invoice.remaining();
    if let Some(s) = current.sessions.iter().rev().find(|s| s.is_payable(now) && s.collects() == remaining) {
        return Ok(Decision::unchanged((s.id.clone(), true)));
    }
    if current.sessions.len() >= MAX_CHECKOUT_SESSIONS {
        return Err(Error::LimitReached { what: Limit::CheckoutSessions, limit: MAX_CHECKOUT_SESSIONS });
    }
    let mut change = InvoiceChange::update(current.clone());
    let inv = &mut change.aggregate.invoice;
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::CheckoutOpened)?;
    // A remainder asks a unique amount when the invoice's first checkout did.
    let unique = current.sessions.first().is_some_and(|s| !s.amount_offset.is_zero());
    let session = new_session(ctx, inv, (remaining, unique), now)?;
    let id = session.id.clone();
    inv.log(now, ActivityAction::CheckoutOpened, Actor::Api, Some(id.to_string()));
    change.push_session(session);
    Ok(Decision::save(change, (id, false)))
}

/// Void, void-remaining or mark-uncollectible with `reason`; pending checkouts are cancelled.
pub(super) fn close(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    action: CloseAction,
    reason: &str,
    now: DateTime<Utc>,
) -> Result<Decision<()>, Error> {
    let activity = match action {
        CloseAction::Void => ActivityAction::Voided,
        CloseAction::VoidRemaining => ActivityAction::VoidRemaining,
        CloseAction::MarkUncollectible => ActivityAction::MarkedUncollectible,
    };
    let t = collection::transition(current.invoice.collection_state, action.trigger(&current.invoice))?;
    let mut change = InvoiceChange::update(current.clone());
    let agg = &mut change.aggregate;
    let inv = &mut agg.invoice;
    inv.collection_state = t.to;
    inv.status = lifecycle::transition(inv.status, LifecycleTrigger::CollectionClosed)?;
    inv.close_reason = Some(reason.to_owned());
    inv.closed_at = Some(now);
    inv.log(now, activity, Actor::Api, Some(reason.to_owned()));
    for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending) {
        s.status = CheckoutStatus::Cancelled;
        change.changed_sessions.push(s.id.clone());
    }
    for e in t.events {
        change.emit(crypto, e, None, now);
    }
    Ok(Decision::of(change))
}

/// Records a refund made elsewhere against a credited payment of the invoice.
pub(super) fn refund(
    crypto: &dyn Crypto,
    current: &InvoiceAggregate,
    input: &RefundInput,
    (id, reason): (&RefundReferenceId, &str),
    now: DateTime<Utc>,
) -> Result<Decision<()>, Error> {
    if current.invoice.collection_state == CollectionState::Draft {
        return Err(Error::InvoiceTransitionGuardFailed("a draft has no payments to refund".into()));
    }
    let payment = current
        .payment(&input.payment_id)
        .filter(|p| p.status.is_credited())
        .ok_or_else(|| Error::validation("payment_id", "not a credited payment of this invoice"))?;
    let refunded = current
        .invoice
        .refunds
        .iter()
        .filter(|r| r.refund.payment_id == input.payment_id)
        .fold(Amount::zero(), |acc, r| acc.add(&r.refund.amount));
    if refunded.add(&input.amount) > payment.customer_amount_credited {
        return Err(Error::invalid_amount("amount", "exceeds what is left to refund of the payment"));
    }
    let mut change = InvoiceChange::update(current.clone());
    let inv = &mut change.aggregate.invoice;
    let refund = Refund { reason: reason.to_owned(), ..input.clone() };
    inv.refunds.push(RefundReference { id: id.clone(), refund, created_at: now });
    let detail = format!("{} of {}", input.amount, input.payment_id);
    inv.log(now, ActivityAction::RefundRecorded, Actor::Api, Some(detail));
    change.recorded_refund = Some(id.clone());
    change.emit(crypto, EventType::InvoiceRefundRecorded, None, now);
    Ok(Decision::of(change))
}

/// A close or refund reason: trimmed, 1-500 bytes.
pub(super) fn check_reason(reason: &str) -> Result<String, Error> {
    let reason = reason.trim();
    check_len("reason", reason, 1, MAX_REASON_BYTES)?;
    Ok(reason.to_owned())
}

/// A new or edited invoice's due date is in the future (at the scope's time).
pub(super) fn check_due(fields: &crate::invoice::model::InvoiceFields, now: DateTime<Utc>) -> Result<(), Error> {
    if fields.content.due_at.is_some_and(|due| due <= now) {
        return Err(Error::validation("due_at", "must be in the future"));
    }
    Ok(())
}

fn check_send(content: &InvoiceContent) -> Result<(), Error> {
    if !content.customer_email().is_some_and(validate::is_valid_email) {
        return Err(Error::CustomerEmailRequired { field: "customer.email".into() });
    }
    Ok(())
}

/// Queues the invoice's email with the change that issues it (`send: true`).
fn queue_send(change: &mut InvoiceChange, crypto: &dyn Crypto, now: DateTime<Utc>) -> Result<(), Error> {
    use crate::email::model::{EmailKind, OutboundEmail};
    use crate::invoice::model::Activity;
    let email = OutboundEmail::queue(crypto, &change.aggregate.invoice, EmailKind::Invoice, None, now)?;
    change.aggregate.invoice.activity.push(Activity {
        at: now,
        action: ActivityAction::EmailQueued,
        actor: Actor::Api,
        detail: Some(format!("invoice to {}", email.to)),
        by: None,
    });
    change.emails.push(email);
    Ok(())
}
