//! Billing use cases: checkout sessions, invoices and payments.
//!
//! Every mutation follows one pattern: load the invoice aggregate, decide the new state and its
//! events with the pure state machines, and save it all in one transaction guarded by the
//! aggregate's lock version. When another writer got there first the store answers
//! `InvoiceStateMismatch` and the use case reloads and decides again (a few times), so
//! concurrent requests, payments and workers never lose an update or emit an event twice.

use chrono::{DateTime, Utc};

use crate::chain::{Chain, Expected, ObservedTransfer, verify};
use crate::checkout::{CheckoutSession, CheckoutStatus};
use crate::error::{Error, Resource};
use crate::event::{Event, EventType};
use crate::ids::{CheckoutSessionId, EventId, InvoiceId, PaymentId, PublicToken, RefundReferenceId};
use crate::invoice::validate::{self, DraftInput, check_len};
use crate::invoice::{
    CollectionState, CollectionTrigger, Invoice, InvoiceFields, InvoiceKind, LifecycleTrigger, LineItem, Metadata,
    RefundReference, Totals, collection, lifecycle, snapshot,
};
use crate::merchant::{Merchant, POLYGON_CHAIN_ID, Token, WalletAddress, test_settlement_wallet};
use crate::mode::{Mode, Scope};
use crate::money::Amount;
use crate::payment::{Payment, TxHash};
use crate::ports::{Clock, Crypto, InvoiceStore};
use crate::url::HttpUrl;

/// How many times a use case reloads and retries after a concurrent change.
const MAX_ATTEMPTS: usize = 8;

/// Longest close reason, in UTF-8 bytes.
pub const MAX_REASON_BYTES: usize = 500;

/// How an invoice is addressed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InvoiceKey {
    Id(InvoiceId),
    /// An issued invoice number (GET only).
    Number(String),
    /// The invoice of a checkout session.
    Session(CheckoutSessionId),
}

/// How the public hosted pages address an invoice: by an unguessable reference, never by a
/// merchant's scope.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublicRef {
    /// The hosted checkout page of a session.
    Session(CheckoutSessionId),
    /// The hosted invoice page's token.
    Token(PublicToken),
}

/// An invoice with its checkout sessions and payments (oldest first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceAggregate {
    pub invoice: Invoice,
    pub sessions: Vec<CheckoutSession>,
    pub payments: Vec<Payment>,
}

impl InvoiceAggregate {
    pub fn session(&self, id: &CheckoutSessionId) -> Option<&CheckoutSession> {
        self.sessions.iter().find(|s| &s.id == id)
    }

    /// The newest payment on a session.
    pub fn latest_payment_of(&self, session: &CheckoutSessionId) -> Option<&Payment> {
        self.payments.iter().rev().find(|p| &p.checkout_session_id == session)
    }
}

/// An event decided by a use case; its data is rendered from the final state when saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingEvent {
    pub id: EventId,
    pub event_type: EventType,
    /// For payment.* events: the payment it is about.
    pub payment_id: Option<PaymentId>,
    pub created_at: DateTime<Utc>,
}

/// One atomic change of an invoice aggregate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceChange {
    /// The new state.
    pub aggregate: InvoiceAggregate,
    /// `None` inserts the invoice; otherwise the stored lock version must equal this.
    pub expected_lock_version: Option<i64>,
    /// Assign the next invoice number with this prefix.
    pub assign_number: Option<String>,
    pub changed_sessions: Vec<CheckoutSessionId>,
    pub changed_payments: Vec<PaymentId>,
    pub events: Vec<PendingEvent>,
}

impl InvoiceChange {
    fn new(aggregate: InvoiceAggregate, expected: Option<i64>) -> Self {
        Self {
            aggregate,
            expected_lock_version: expected,
            assign_number: None,
            changed_sessions: Vec::new(),
            changed_payments: Vec::new(),
            events: Vec::new(),
        }
    }

    /// Called by the store inside its transaction: sets the allocated number (when one was
    /// asked for) and renders the events from the final state.
    pub fn finalize(&mut self, number_seq: Option<i64>) -> Vec<Event> {
        if let (Some(prefix), Some(seq)) = (&self.assign_number, number_seq) {
            self.aggregate.invoice.number = Some(Invoice::format_number(prefix, seq));
        }
        let agg = &self.aggregate;
        self.events
            .iter()
            .map(|e| {
                let payment = e.payment_id.as_ref().and_then(|id| agg.payments.iter().find(|p| &p.id == id));
                let data = match payment {
                    Some(p) => snapshot::payment_data(p),
                    None => snapshot::invoice_data(&agg.invoice, &agg.payments),
                };
                Event {
                    id: e.id.clone(),
                    scope: agg.invoice.scope.clone(),
                    event_type: e.event_type,
                    created_at: e.created_at,
                    data,
                }
            })
            .collect()
    }
}

/// Where and in what a mode settles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settlement {
    pub wallet: WalletAddress,
    pub token: Token,
}

/// Test mode settles to a simulated wallet (no configuration needed); live mode needs
/// activation (ACTIVE_MERCHANT_REQUIRED).
pub fn settlement_for(merchant: &Merchant, mode: Mode) -> Result<Settlement, Error> {
    match mode {
        Mode::Test => Ok(Settlement {
            wallet: test_settlement_wallet(&merchant.id),
            token: merchant.live.as_ref().map_or(Token::Usdc, |l| l.token),
        }),
        Mode::Live => merchant
            .live
            .as_ref()
            .map(|l| Settlement { wallet: l.wallet.clone(), token: l.token })
            .ok_or(Error::ActiveMerchantRequired),
    }
}

/// `POST /v1/checkout-sessions` input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckoutInput {
    pub amount: Option<Amount>,
    pub external_reference: Option<String>,
    pub customer_email: Option<String>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
    pub metadata: Option<Metadata>,
    pub expires_in_minutes: Option<i64>,
}

/// Legacy amount-only invoice input.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AmountOnlyInput {
    pub amount: Option<Amount>,
    pub external_reference: Option<String>,
    pub metadata: Option<Metadata>,
}

/// How a merchant closes collection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseAction {
    Void,
    VoidRemaining,
    MarkUncollectible,
}

/// A refund performed elsewhere, to be recorded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefundInput {
    pub payment_id: PaymentId,
    pub amount: Amount,
    pub reason: String,
    pub external_transaction_hash: TxHash,
    pub chain_id: u64,
    pub token_contract: WalletAddress,
}

/// A simulated payment (test helpers).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestPaymentInput {
    pub amount: Option<Amount>,
    pub transaction_hash: Option<TxHash>,
    pub succeed: bool,
}

/// The answer to opening a remainder checkout.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenedCheckout {
    pub aggregate: InvoiceAggregate,
    pub session_id: CheckoutSessionId,
    pub reused: bool,
}

/// The billing use cases over their ports.
pub struct Billing<'a> {
    pub store: &'a dyn InvoiceStore,
    pub crypto: &'a dyn Crypto,
    pub clock: &'a dyn Clock,
    pub chain: &'a dyn Chain,
}

impl Billing<'_> {
    /// Load, decide, save; retried on concurrent change. `decide` returns `None` when there is
    /// nothing to change.
    async fn mutate<F>(&self, scope: &Scope, key: &InvoiceKey, decide: F) -> Result<InvoiceAggregate, Error>
    where
        F: Fn(InvoiceAggregate, DateTime<Utc>) -> Result<Option<InvoiceChange>, Error>,
    {
        for _ in 0..MAX_ATTEMPTS {
            let aggregate = self.store.load_invoice(scope, key).await?;
            let now = self.clock.now(scope).await?;
            let lock = aggregate.invoice.lock_version;
            let Some(mut change) = decide(aggregate.clone(), now)? else {
                return Ok(aggregate);
            };
            change.expected_lock_version = Some(lock);
            match self.store.save_invoice(change).await {
                Err(Error::InvoiceStateMismatch) => continue,
                other => return other,
            }
        }
        Err(Error::InvoiceStateMismatch)
    }

    /// `POST /v1/checkout-sessions`: an amount-only invoice, issued at once, and its checkout.
    pub async fn create_checkout(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: CheckoutInput,
    ) -> Result<InvoiceAggregate, Error> {
        let amount = input.amount.ok_or_else(|| Error::validation("amount", "amount is required"))?;
        if amount.is_zero() {
            return Err(Error::invalid_amount("amount", "must be greater than zero"));
        }
        let minutes = validate::expiry_minutes("expiresInMinutes", input.expires_in_minutes)?;
        if let Some(r) = &input.external_reference {
            check_len("externalReference", r, 0, validate::MAX_EXTERNAL_REFERENCE_BYTES)?;
        }
        if let Some(email) = &input.customer_email {
            validate::check_email("customerEmail", email)?;
        }
        validate::check_metadata("metadata", &input.metadata)?;
        let settlement = settlement_for(merchant, scope.mode)?;
        let now = self.clock.now(scope).await?;
        let fields = InvoiceFields {
            lines: Vec::new(),
            amount: Some(amount.clone()),
            customer: input
                .customer_email
                .clone()
                .map(|email| crate::invoice::Customer { email: Some(email), ..Default::default() }),
            discount: None,
            taxes: Vec::new(),
            currency: settlement.token,
            due_at: None,
            checkout_expires_in_minutes: minutes,
            payment_terms: None,
            memo: None,
            footer: None,
            purchase_order_number: None,
            external_reference: input.external_reference,
            metadata: input.metadata,
            success_url: input.success_url,
            cancel_url: input.cancel_url,
            reminder_schedule: None,
        };
        let totals = Totals { subtotal: amount.clone(), discount: Amount::zero(), tax: Amount::zero(), total: amount };
        let invoice =
            new_invoice(self.crypto, merchant, scope, &settlement, InvoiceKind::AmountOnly, fields, totals, now);
        let mut change =
            InvoiceChange::new(InvoiceAggregate { invoice, sessions: Vec::new(), payments: Vec::new() }, None);
        issue_into(&mut change, self.crypto, now, input.customer_email)?;
        self.store.save_invoice(change).await
    }

    /// `POST /v1/invoices`, itemized form: a draft (version 1), or issued at once.
    pub async fn create_invoice(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: DraftInput,
        issue: bool,
        send: bool,
    ) -> Result<InvoiceAggregate, Error> {
        if send && !issue {
            return Err(Error::validation("send", "send=true requires issue=true"));
        }
        let settlement = settlement_for(merchant, scope.mode)?;
        let (fields, totals) = validate::build_fields(input, settlement.token)?;
        if send {
            check_send(&fields)?;
        }
        let now = self.clock.now(scope).await?;
        let invoice =
            new_invoice(self.crypto, merchant, scope, &settlement, InvoiceKind::Itemized, fields, totals, now);
        let mut change =
            InvoiceChange::new(InvoiceAggregate { invoice, sessions: Vec::new(), payments: Vec::new() }, None);
        if issue {
            let email = change.aggregate.invoice.fields.customer.as_ref().and_then(|c| c.email.clone());
            issue_into(&mut change, self.crypto, now, email)?;
        }
        self.store.save_invoice(change).await
    }

    /// `POST /v1/invoices`, legacy amount-only form: payable at once.
    pub async fn create_amount_only(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        input: AmountOnlyInput,
    ) -> Result<InvoiceAggregate, Error> {
        self.create_checkout(
            merchant,
            scope,
            CheckoutInput {
                amount: input.amount,
                external_reference: input.external_reference,
                metadata: input.metadata,
                ..Default::default()
            },
        )
        .await
    }

    /// `PATCH /v1/invoices/{id}`: full replacement of a draft's fields at `version`.
    pub async fn update_draft(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
        version: i64,
        input: DraftInput,
    ) -> Result<InvoiceAggregate, Error> {
        let settlement = settlement_for(merchant, scope.mode)?;
        let (fields, totals) = validate::build_fields(input, settlement.token)?;
        self.mutate(scope, key, |mut agg, now| {
            let inv = &mut agg.invoice;
            collection::transition(inv.collection_state, CollectionTrigger::Edit)?;
            if inv.kind != InvoiceKind::Itemized {
                return Err(Error::InvoiceNotEditable);
            }
            if version != inv.version {
                return Err(Error::InvoiceVersionConflict { provided: version, current: inv.version });
            }
            inv.fields = fields.clone();
            inv.totals = totals.clone();
            inv.version += 1;
            inv.updated_at = now;
            inv.log(now, "updated", "api", Some(format!("version {}", inv.version)));
            Ok(Some(InvoiceChange::new(agg, None)))
        })
        .await
    }

    /// `POST /v1/invoices/{id}/issue`.
    pub async fn issue(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        version: i64,
        send: bool,
    ) -> Result<InvoiceAggregate, Error> {
        self.mutate(scope, key, |agg, now| {
            let inv = &agg.invoice;
            collection::transition(inv.collection_state, CollectionTrigger::Issue)?;
            if version != inv.version {
                return Err(Error::InvoiceVersionConflict { provided: version, current: inv.version });
            }
            if send {
                check_send(&inv.fields)?;
            }
            let email = inv.fields.customer.as_ref().and_then(|c| c.email.clone());
            let mut change = InvoiceChange::new(agg, None);
            issue_into(&mut change, self.crypto, now, email)?;
            Ok(Some(change))
        })
        .await
    }

    /// `POST /v1/invoices/{id}/checkout-sessions`: a checkout for the collectible remainder,
    /// reusing an active one for the same remainder.
    pub async fn open_checkout(&self, scope: &Scope, key: &InvoiceKey) -> Result<OpenedCheckout, Error> {
        let mut chosen: std::sync::Mutex<Option<(CheckoutSessionId, bool)>> = std::sync::Mutex::new(None);
        let aggregate = self
            .mutate(scope, key, |mut agg, now| {
                let remaining = agg.invoice.remaining();
                if !agg.invoice.collection_state.is_collectible() || remaining.is_zero() {
                    return Err(Error::InvoiceNotPayable);
                }
                let reusable = agg.sessions.iter().rev().find(|s| s.is_payable(now) && s.amount_due == remaining);
                if let Some(s) = reusable {
                    if let Ok(mut c) = chosen.lock() {
                        *c = Some((s.id.clone(), true));
                    }
                    return Ok(None);
                }
                let session = new_session(
                    self.crypto,
                    &agg.invoice,
                    remaining,
                    now,
                    agg.invoice.fields.customer.as_ref().and_then(|c| c.email.clone()),
                );
                if let Ok(mut c) = chosen.lock() {
                    *c = Some((session.id.clone(), false));
                }
                let inv = &mut agg.invoice;
                inv.status = lifecycle::transition(inv.status, LifecycleTrigger::CheckoutOpened).unwrap_or(inv.status);
                inv.updated_at = now;
                inv.log(now, "checkout_opened", "api", Some(session.id.to_string()));
                let id = session.id.clone();
                agg.sessions.push(session);
                let mut change = InvoiceChange::new(agg, None);
                change.changed_sessions.push(id);
                Ok(Some(change))
            })
            .await?;
        let (session_id, reused) =
            chosen.get_mut().ok().and_then(|c| c.take()).ok_or_else(|| Error::Internal("no checkout chosen".into()))?;
        Ok(OpenedCheckout { aggregate, session_id, reused })
    }

    /// Void, void-remaining or mark-uncollectible, with a reason. Payment records stay.
    pub async fn close(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        action: CloseAction,
        reason: &str,
    ) -> Result<InvoiceAggregate, Error> {
        let reason = check_reason(reason)?;
        self.mutate(scope, key, |mut agg, now| {
            let has_payments = !agg.invoice.customer_amount_paid.is_zero();
            let (trigger, activity) = match action {
                CloseAction::Void => (CollectionTrigger::Void, "voided"),
                CloseAction::VoidRemaining => (CollectionTrigger::VoidRemaining { has_payments }, "void_remaining"),
                CloseAction::MarkUncollectible => (CollectionTrigger::MarkUncollectible, "marked_uncollectible"),
            };
            let t = collection::transition(agg.invoice.collection_state, trigger)?;
            let inv = &mut agg.invoice;
            inv.collection_state = t.to;
            inv.status = lifecycle::transition(inv.status, LifecycleTrigger::CollectionClosed).unwrap_or(inv.status);
            inv.close_reason = Some(reason.clone());
            inv.closed_at = Some(now);
            inv.updated_at = now;
            inv.log(now, activity, "api", Some(reason.clone()));
            let mut changed = Vec::new();
            for s in agg.sessions.iter_mut().filter(|s| s.status == CheckoutStatus::Pending) {
                s.status = CheckoutStatus::Cancelled;
                changed.push(s.id.clone());
            }
            let mut change = InvoiceChange::new(agg, None);
            change.changed_sessions = changed;
            change.events = t.events.into_iter().map(|e| event(self.crypto, e, None, now)).collect();
            Ok(Some(change))
        })
        .await
    }

    /// `POST /v1/invoices/{id}/refund-references`: records a refund made elsewhere.
    pub async fn record_refund(
        &self,
        scope: &Scope,
        key: &InvoiceKey,
        input: RefundInput,
    ) -> Result<(InvoiceAggregate, RefundReferenceId), Error> {
        let reason = check_reason(&input.reason)?;
        if input.amount.is_zero() {
            return Err(Error::invalid_amount("amount", "must be greater than zero"));
        }
        if input.chain_id != POLYGON_CHAIN_ID {
            return Err(Error::validation("chainId", "must be 137 (Polygon)"));
        }
        let refund_id = RefundReferenceId::generate(self.crypto);
        let aggregate = self
            .mutate(scope, key, |mut agg, now| {
                if agg.invoice.collection_state == CollectionState::Draft {
                    return Err(Error::InvoiceTransitionGuardFailed("a draft has no payments to refund".into()));
                }
                let payment = agg
                    .payments
                    .iter()
                    .find(|p| p.id == input.payment_id && p.status.is_credited())
                    .ok_or_else(|| Error::validation("paymentId", "not a credited payment of this invoice"))?;
                let refunded = agg
                    .invoice
                    .refunds
                    .iter()
                    .filter(|r| r.payment_id == input.payment_id)
                    .fold(Amount::zero(), |acc, r| acc.add(&r.amount));
                if refunded.add(&input.amount) > payment.customer_amount_credited {
                    return Err(Error::invalid_amount("amount", "exceeds what is left to refund of the payment"));
                }
                let inv = &mut agg.invoice;
                inv.refunds.push(RefundReference {
                    id: refund_id.clone(),
                    payment_id: input.payment_id.clone(),
                    amount: input.amount.clone(),
                    reason: reason.clone(),
                    external_transaction_hash: input.external_transaction_hash.as_str().to_owned(),
                    chain_id: input.chain_id,
                    token_contract: input.token_contract.clone(),
                    created_at: now,
                });
                inv.updated_at = now;
                inv.log(now, "refund_recorded", "api", Some(format!("{} of {}", input.amount, input.payment_id)));
                let mut change = InvoiceChange::new(agg, None);
                change.events.push(event(self.crypto, EventType::InvoiceRefundRecorded, None, now));
                Ok(Some(change))
            })
            .await?;
        Ok((aggregate, refund_id))
    }

    /// `POST /v1/invoices/{id}/duplicate`: a new draft with the same commercial fields.
    pub async fn duplicate(
        &self,
        merchant: &Merchant,
        scope: &Scope,
        key: &InvoiceKey,
    ) -> Result<InvoiceAggregate, Error> {
        let source = self.store.load_invoice(scope, key).await?.invoice;
        let settlement = settlement_for(merchant, scope.mode)?;
        let now = self.clock.now(scope).await?;
        let mut fields = source.fields.clone();
        if let Some(amount) = fields.amount.take() {
            let description = fields.external_reference.clone().unwrap_or_else(|| "Amount due".to_owned());
            fields.lines =
                vec![LineItem { id: None, sku: None, description, quantity: Amount::one(), unit_amount: amount }];
        }
        fields.currency = settlement.token;
        let mut invoice = new_invoice(
            self.crypto,
            merchant,
            scope,
            &settlement,
            InvoiceKind::Itemized,
            fields,
            source.totals.clone(),
            now,
        );
        invoice.log(now, "duplicated_from", "api", Some(source.id.to_string()));
        self.store
            .save_invoice(InvoiceChange::new(
                InvoiceAggregate { invoice, sessions: Vec::new(), payments: Vec::new() },
                None,
            ))
            .await
    }

    /// Test helper: simulate a transfer to a checkout and run it through verification and
    /// crediting, exactly as a live payment would go. Returns the payment and its invoice.
    pub async fn pay_test(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        input: TestPaymentInput,
    ) -> Result<(Payment, InvoiceAggregate), Error> {
        let key = InvoiceKey::Session(session_id.clone());
        let agg = self.store.load_invoice(scope, &key).await?;
        let now = self.clock.now(scope).await?;
        let session = agg.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?;
        // A transfer can still reach a session whose invoice was closed (cancelled): that is the
        // late payment the after_void / after_uncollectible events report. Expired and completed
        // sessions take no more transfers.
        let open_or_closed = matches!(session.status, CheckoutStatus::Pending | CheckoutStatus::Cancelled);
        if !open_or_closed || now >= session.expires_at {
            return Err(Error::CheckoutSessionNotPayable);
        }
        let amount = input.amount.unwrap_or_else(|| session.amount_due.clone());
        if amount.is_zero() {
            return Err(Error::invalid_amount("amount", "must be greater than zero"));
        }
        let tx = input.transaction_hash.unwrap_or_else(|| {
            let mut bytes = [0u8; 32];
            self.crypto.fill_random(&mut bytes);
            TxHash::from_trusted(format!("0x{}", bytes.iter().map(|b| format!("{b:02x}")).collect::<String>()))
        });
        self.chain
            .simulate(
                scope,
                ObservedTransfer {
                    tx_hash: tx.clone(),
                    chain_id: POLYGON_CHAIN_ID,
                    token_contract: session.currency.polygon_contract(),
                    recipient: session.settlement_wallet.clone(),
                    sender: None,
                    amount,
                    succeeded: input.succeed,
                    block_time: now,
                },
            )
            .await?;
        self.record_payment(scope, session_id, &tx, "test_helper").await
    }

    /// Verifies the transfer `tx` for a checkout and records the payment: credited, failed or
    /// duplicate. The same code serves test and live mode; only the chain adapter differs.
    pub async fn record_payment(
        &self,
        scope: &Scope,
        session_id: &CheckoutSessionId,
        tx: &TxHash,
        actor: &str,
    ) -> Result<(Payment, InvoiceAggregate), Error> {
        let observation = self.chain.observe(scope, tx).await?;
        let key = InvoiceKey::Session(session_id.clone());
        for _ in 0..MAX_ATTEMPTS {
            let agg = self.store.load_invoice(scope, &key).await?;
            let now = self.clock.now(scope).await?;
            let session = agg.session(session_id).ok_or(Error::NotFound(Resource::CheckoutSession))?.clone();
            let expected = Expected {
                chain_id: POLYGON_CHAIN_ID,
                token_contract: session.currency.polygon_contract(),
                recipient: session.settlement_wallet.clone(),
                expires_at: session.expires_at,
            };
            let verdict = verify(&expected, &observation);
            let duplicate = self.store.payment_using_tx(POLYGON_CHAIN_ID, tx).await?.is_some();
            let lock = agg.invoice.lock_version;
            let mut change = credit(self.crypto, agg, &session, tx, verdict, duplicate, now, actor);
            change.expected_lock_version = Some(lock);
            let payment_id =
                change.changed_payments.first().cloned().ok_or_else(|| Error::Internal("no payment".into()))?;
            match self.store.save_invoice(change).await {
                Err(Error::InvoiceStateMismatch) => continue,
                Err(e) => return Err(e),
                Ok(saved) => {
                    let payment = saved
                        .payments
                        .iter()
                        .find(|p| p.id == payment_id)
                        .cloned()
                        .ok_or_else(|| Error::Internal("payment not saved".into()))?;
                    return Ok((payment, saved));
                }
            }
        }
        Err(Error::InvoiceStateMismatch)
    }

    /// Runs the time-based transitions of one invoice that are due at its scope's time.
    /// Idempotent: a second run finds nothing to do.
    pub async fn process_due(&self, scope: &Scope, id: &InvoiceId) -> Result<bool, Error> {
        let changed = std::sync::atomic::AtomicBool::new(false);
        self.mutate(scope, &InvoiceKey::Id(id.clone()), |agg, now| {
            let change = due_transitions(self.crypto, agg, now);
            changed.store(change.is_some(), std::sync::atomic::Ordering::Relaxed);
            Ok(change)
        })
        .await?;
        Ok(changed.into_inner())
    }

    /// Claims and runs due work until none is left (or `max_rounds` batches); returns how many
    /// invoices changed. `only` limits it to one scope (the test clock).
    pub async fn run_due(&self, only: Option<&Scope>, max_rounds: usize) -> Result<usize, Error> {
        let mut done = 0;
        for _ in 0..max_rounds {
            let batch = self.store.claim_due(only.cloned(), 100, 30).await?;
            if batch.is_empty() {
                break;
            }
            let mut changed = 0;
            for (scope, id) in &batch {
                match self.process_due(scope, id).await {
                    Ok(true) => changed += 1,
                    Ok(false) => {}
                    Err(Error::NotFound(_)) => {}
                    Err(e) => return Err(e),
                }
            }
            done += changed;
            // A short batch is the last; a batch where nothing changed would only repeat.
            if batch.len() < 100 || changed == 0 {
                break;
            }
        }
        Ok(done)
    }

    /// Test helper: moves the merchant's test clock forward and runs what became due.
    /// Returns the new offset in seconds and how many invoices changed.
    pub async fn advance_test_clock(&self, scope: &Scope, seconds: i64) -> Result<(i64, usize), Error> {
        if scope.mode != Mode::Test {
            return Err(Error::ApiKeyForbidden);
        }
        if !(1..=10 * 366 * 86_400).contains(&seconds) {
            return Err(Error::validation("seconds", "must be an integer from 1 to 316224000"));
        }
        let offset = self.store.advance_test_clock(&scope.merchant_id, seconds).await?;
        let done = self.run_due(Some(scope), 1000).await?;
        Ok((offset, done))
    }
}

mod decide;

use decide::{check_reason, check_send, credit, due_transitions, event, issue_into, new_invoice, new_session};

#[cfg(test)]
mod tests;
