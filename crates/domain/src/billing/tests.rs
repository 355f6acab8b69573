use super::*;
use crate::chain::MockChain;
use crate::clock::MockClock;
use crate::event::EventType;
use crate::ids::MerchantId;
use crate::invoice::aggregate::{ChangeKind, InvoiceChange};
use crate::invoice::collection::CollectionState;
use crate::invoice::lifecycle::LifecycleStatus;
use crate::invoice::model::{ActivityAction, Actor};
use crate::invoice::ports::MockInvoiceStore;
use crate::merchant::MerchantStatus;
use crate::money::{Amount, Decimal6};
use crate::payment::{FailureReason, PaymentStatus};
use crate::testing::SeqCrypto;
use chrono::Duration;

fn d(s: &str) -> Amount {
    Decimal6::parse(s).unwrap()
}

fn merchant() -> Merchant {
    Merchant {
        id: MerchantId::from_trusted("mer_1".into()),
        name: "Shop".into(),
        website_origin: None,
        status: MerchantStatus::Active,
        live: None,
        fee_basis_points: 100,
        invoice_prefix: "INV".into(),
        created_at: Utc::now(),
    }
}

fn scope() -> Scope {
    Scope::new(MerchantId::from_trusted("mer_1".into()), Mode::Test)
}

/// A stored (lock version 1) amount-only invoice of `total` with one checkout, built with the
/// real decisions.
fn issued(total: &str, now: DateTime<Utc>) -> InvoiceAggregate {
    let crypto = SeqCrypto::default();
    let input = CheckoutInput { amount: Some(d(total)), ..Default::default() };
    let mut change = decide::checkout(&crypto, &merchant(), &scope(), input, now).unwrap();
    // Amount-only: payable at once, numbered when first paid, no invoice.issued.
    assert_eq!(change.kind, ChangeKind::Create);
    assert_eq!(change.assign_number, None);
    assert!(change.events.is_empty());
    assert_eq!(change.changed_sessions.len(), 1);
    assert_eq!(change.aggregate.invoice.collection_state, CollectionState::Open);
    change.finalize(None);
    change.aggregate
}

fn tx(n: u8) -> TxHash {
    TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap()
}

/// What the chain would report for a transfer of `amount` to the first session.
fn sent(agg: &InvoiceAggregate, amount: &str, now: DateTime<Utc>) -> Observation {
    let s = &agg.sessions[0];
    Observation::Found(ObservedTransfer {
        tx_hash: tx(9),
        chain_id: POLYGON_CHAIN_ID,
        token_contract: s.currency.polygon_contract(),
        recipient: s.settlement_wallet.clone(),
        sender: Some("0xpayer".into()),
        amount: d(amount),
        succeeded: true,
        block_time: now,
    })
}

fn pay(agg: &InvoiceAggregate, observation: &Observation, duplicate: bool, now: DateTime<Utc>) -> InvoiceChange {
    let crypto = SeqCrypto::default();
    let session = &agg.sessions[0];
    let transfer = credit::Transfer { session, tx: &tx(1), observation, duplicate, actor: Actor::TestHelper };
    let decision = credit::credit(&crypto, agg, transfer, now).unwrap();
    let change = decision.change.unwrap();
    assert_eq!(change.changed_payments, vec![decision.output]);
    assert_eq!(change.kind, ChangeKind::Update { expected_lock_version: agg.invoice.lock_version });
    change
}

fn types(change: &InvoiceChange) -> Vec<EventType> {
    change.events.iter().map(|e| e.event_type).collect()
}

#[test]
fn partial_then_full_payment() {
    let now = Utc::now();
    let agg = issued("10", now);
    let c = pay(&agg, &sent(&agg, "4", now), false, now);
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::PartiallyPaid);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Underpaid);
    assert_eq!(c.aggregate.invoice.remaining(), d("6"));
    assert_eq!(c.aggregate.payments[0].status, PaymentStatus::Underpaid);
    assert_eq!(c.aggregate.payments[0].payer_address.as_deref(), Some("0xpayer"));
    assert_eq!(types(&c), vec![EventType::InvoicePartiallyPaid, EventType::PaymentUnderpaid]);
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Pending);
    // The first credited payment numbers an amount-only invoice.
    assert_eq!(c.assign_number.as_deref(), Some("INV"));
    let mut numbered = c;
    numbered.finalize(Some(7));
    assert_eq!(numbered.aggregate.invoice.number.as_deref(), Some("INV-000007"));
    assert_eq!(numbered.aggregate.invoice.lock_version, 2);

    let agg = numbered.aggregate;
    let c = pay(&agg, &sent(&agg, "6", now), false, now);
    let inv = &c.aggregate.invoice;
    assert_eq!(inv.collection_state, CollectionState::Paid);
    assert_eq!(inv.status, LifecycleStatus::Paid);
    assert_eq!(inv.customer_amount_paid, d("10"));
    assert!(inv.paid_at.is_some());
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Completed);
    assert_eq!(types(&c), vec![EventType::InvoicePaid, EventType::PaymentUnderpaid]);
    assert_eq!(c.assign_number, None, "an invoice is numbered once");
    let mut change = c;
    let events = change.finalize(None);
    assert_eq!(change.aggregate.invoice.number.as_deref(), Some("INV-000007"));
    // invoice.paid data carries every credited payment id.
    let crate::event::EventData::Map(pairs) = &events[0].data else { panic!() };
    let ids = pairs.iter().find(|(k, _)| k == "creditedPaymentIds").unwrap();
    assert!(matches!(&ids.1, crate::event::EventData::List(l) if l.len() == 2));
}

#[test]
fn overpayment_duplicate_and_failure() {
    let now = Utc::now();
    let agg = issued("10", now);
    let c = pay(&agg, &sent(&agg, "12.5", now), false, now);
    assert_eq!(types(&c), vec![EventType::InvoicePaid, EventType::InvoiceOverpaid, EventType::PaymentOverpaid]);
    assert_eq!(c.aggregate.invoice.overpayment(), d("2.5"));
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Overpaid);

    let dup = pay(&agg, &sent(&agg, "10", now), true, now);
    assert_eq!(dup.aggregate.payments[0].status, PaymentStatus::Duplicate);
    assert_eq!(dup.aggregate.payments[0].failure_reason, Some(FailureReason::DuplicateTransaction));
    assert_eq!(dup.aggregate.invoice.customer_amount_paid, Amount::zero());
    assert_eq!(dup.aggregate.invoice.activity.last().unwrap().action, ActivityAction::PaymentDuplicate);
    assert!(dup.events.is_empty());

    let failed = pay(&agg, &Observation::NotFound, false, now);
    assert_eq!(failed.aggregate.payments[0].status, PaymentStatus::Failed);
    assert_eq!(failed.aggregate.payments[0].failure_reason, Some(FailureReason::TransactionNotFound));
    assert_eq!(failed.aggregate.invoice.status, LifecycleStatus::Failed);
    assert_eq!(failed.aggregate.invoice.customer_amount_paid, Amount::zero());
    assert_eq!(types(&failed), vec![EventType::PaymentFailed]);
}

#[test]
fn payment_after_void_leaves_the_state() {
    let now = Utc::now();
    let mut agg = issued("10", now);
    agg.invoice.collection_state = CollectionState::Void;
    agg.invoice.status = LifecycleStatus::Cancelled;
    let c = pay(&agg, &sent(&agg, "10", now), false, now);
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::Void);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Cancelled);
    assert_eq!(c.aggregate.invoice.customer_amount_paid, d("10"));
    assert_eq!(c.aggregate.invoice.paid_at, None);
    assert_eq!(types(&c), vec![EventType::InvoicePaymentReceivedAfterVoid]);
}

/// A refused state-machine step is never swallowed: the decision fails and nothing is saved.
#[test]
fn refused_steps_are_errors() {
    let now = Utc::now();
    let crypto = SeqCrypto::default();
    // A transfer to a draft's session (drafts have none) is refused by the collection machine.
    let mut draft = issued("10", now);
    draft.invoice.collection_state = CollectionState::Draft;
    let session = &draft.sessions[0];
    let observation = sent(&draft, "10", now);
    let transfer =
        credit::Transfer { session, tx: &tx(1), observation: &observation, duplicate: false, actor: Actor::Api };
    assert_eq!(credit::credit(&crypto, &draft, transfer, now), Err(Error::InvoiceNotPayable));

    // Opening a checkout on a paid invoice is refused, not a silent no-op.
    let paid = pay(&issued("10", now), &observation, false, now).aggregate;
    assert_eq!(decide::open_checkout(&crypto, &paid, now), Err(Error::InvoiceNotPayable));
    // Closing a paid invoice is refused by the collection machine.
    let err = decide::close(&crypto, &paid, CloseAction::Void, "x", now).unwrap_err();
    assert!(matches!(err, Error::InvoiceTransitionGuardFailed(_)), "{err:?}");
    // A processing status (never stored) makes expiry refuse rather than guess.
    let mut processing = issued("10", now);
    processing.invoice.status = LifecycleStatus::Processing;
    let err = due::due(&crypto, &processing, now + Duration::minutes(31)).unwrap_err();
    assert!(matches!(err, Error::InvoiceTransitionGuardFailed(_)), "{err:?}");
}

#[test]
fn expiry_and_past_due() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let mut agg = issued("10", now);
    assert_eq!(due::due(&crypto, &agg, now).unwrap(), Decision::unchanged(false));
    let later = now + Duration::minutes(31);
    let decision = due::due(&crypto, &agg, later).unwrap();
    assert!(decision.output);
    let c = decision.change.unwrap();
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Expired);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Expired);
    assert_eq!(types(&c), vec![EventType::InvoiceExpired]);
    // Run again on the result: nothing more to do (idempotent).
    assert_eq!(due::due(&crypto, &c.aggregate, later).unwrap(), Decision::unchanged(false));

    agg.invoice.fields.content.due_at = Some(now + Duration::minutes(5));
    let c = due::due(&crypto, &agg, now + Duration::minutes(6)).unwrap().change.unwrap();
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::PastDue);
    assert_eq!(types(&c), vec![EventType::InvoicePastDue]);
    assert_eq!(due::due(&crypto, &c.aggregate, now + Duration::minutes(7)).unwrap(), Decision::unchanged(false));

    // Explicit no-ops: a partly paid invoice does not expire with its checkout, and a voided
    // one does not go past due.
    let partly = pay(&issued("10", now), &sent(&agg, "4", now), false, now).aggregate;
    let c = due::due(&crypto, &partly, later).unwrap().change.unwrap();
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Expired);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Underpaid);
    assert!(c.events.is_empty());
    let mut void = issued("10", now);
    void.invoice.collection_state = CollectionState::Void;
    void.invoice.fields.content.due_at = Some(now);
    void.sessions.clear();
    assert_eq!(due::due(&crypto, &void, later).unwrap(), Decision::unchanged(false));
}

#[test]
fn open_checkout_answers_the_session_it_chose() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    // The first session asks for the whole remainder: it is reused, nothing is saved.
    let reuse = decide::open_checkout(&crypto, &agg, now).unwrap();
    assert_eq!(reuse, Decision::unchanged((agg.sessions[0].id.clone(), true)));
    // After a partial payment a new session for the remainder is opened.
    let partly = pay(&agg, &sent(&agg, "4", now), false, now).aggregate;
    let opened = decide::open_checkout(&crypto, &partly, now).unwrap();
    let (id, reused) = opened.output.clone();
    assert!(!reused);
    let change = opened.change.unwrap();
    assert_eq!(change.changed_sessions, vec![id.clone()]);
    assert_eq!(change.aggregate.session(&id).unwrap().amount_due, d("6"));
}

/// A store that loads `agg` twice and answers the two saves with `save(call number, change)`,
/// and a clock at `now`.
fn twice(
    agg: &InvoiceAggregate,
    now: DateTime<Utc>,
    mut save: impl FnMut(u32, InvoiceChange) -> Result<InvoiceAggregate, Error> + Send + 'static,
) -> (MockInvoiceStore, MockClock) {
    let mut store = MockInvoiceStore::new();
    let loaded = agg.clone();
    store.expect_load_invoice().times(2).returning(move |_, _| Ok(loaded.clone()));
    let mut calls = 0;
    store.expect_save_invoice().times(2).returning(move |change| {
        calls += 1;
        save(calls, change)
    });
    let mut clock = MockClock::new();
    clock.expect_now().returning(move |_| Ok(now));
    (store, clock)
}

#[tokio::test]
async fn a_concurrent_change_is_reloaded_and_retried() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let (store, clock) =
        twice(
            &agg,
            now,
            |call, change| if call == 1 { Err(Error::InvoiceStateMismatch) } else { Ok(change.aggregate) },
        );
    let chain = MockChain::new();
    let billing = Billing { store: &store, crypto: &crypto, clock: &clock, chain: &chain };
    let out = billing
        .close(&scope(), &InvoiceKey::Id(agg.invoice.id.clone()), CloseAction::Void, "customer left")
        .await
        .unwrap();
    assert_eq!(out.invoice.collection_state, CollectionState::Void);
    assert_eq!(out.sessions[0].status, CheckoutStatus::Cancelled);
    // A blank reason is refused before anything is loaded.
    let err =
        billing.close(&scope(), &InvoiceKey::Id(agg.invoice.id.clone()), CloseAction::Void, "  ").await.unwrap_err();
    assert_eq!(err.field(), Some("reason"));
}

#[tokio::test]
async fn a_hash_credited_elsewhere_is_recorded_as_a_duplicate() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let (store, clock) = twice(&agg, now, |call, change| {
        let p = &change.aggregate.payments[0];
        if call == 1 {
            assert_eq!(p.status, PaymentStatus::Confirmed);
            Err(Error::DuplicateTransaction)
        } else {
            assert_eq!(p.status, PaymentStatus::Duplicate);
            Ok(change.aggregate)
        }
    });
    let chain = MockChain::new();
    let billing = Billing { store: &store, crypto: &crypto, clock: &clock, chain: &chain };
    let input = TestPaymentInput { amount: None, transaction_hash: Some(tx(3)), succeed: true };
    let (payment, saved) = billing.pay_test(&scope(), &agg.sessions[0].id, input).await.unwrap();
    assert_eq!(payment.status, PaymentStatus::Duplicate);
    assert_eq!(saved.invoice.customer_amount_paid, Amount::zero());
}

#[test]
fn an_invoice_accumulates_only_so_much() {
    use crate::error::Limit;
    use crate::invoice::model::{MAX_CHECKOUT_SESSIONS, MAX_DRAFT_VERSIONS, MAX_PAYMENT_RECORDS};
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    // Draft versions.
    let mut draft = issued("10", now);
    draft.invoice.collection_state = CollectionState::Draft;
    draft.invoice.kind = crate::invoice::model::InvoiceKind::Itemized;
    draft.invoice.version = MAX_DRAFT_VERSIONS;
    let built = (draft.invoice.fields.clone(), draft.invoice.totals.clone());
    let err = decide::update(&draft, MAX_DRAFT_VERSIONS, &built, now).unwrap_err();
    assert!(matches!(err, Error::LimitReached { what: Limit::DraftVersions, .. }), "{err:?}");
    draft.invoice.version = MAX_DRAFT_VERSIONS - 1;
    assert!(decide::update(&draft, MAX_DRAFT_VERSIONS - 1, &built, now).is_ok());

    // Checkout sessions: a full invoice still reuses a payable session, but opens no new one.
    let mut many = pay(&issued("10", now), &sent(&issued("10", now), "4", now), false, now).aggregate;
    let template = many.sessions[0].clone();
    while many.sessions.len() < MAX_CHECKOUT_SESSIONS {
        let mut s = template.clone();
        s.id = crate::ids::CheckoutSessionId::generate(&crypto);
        s.status = CheckoutStatus::Expired;
        many.sessions.push(s);
    }
    let err = decide::open_checkout(&crypto, &many, now).unwrap_err();
    assert!(matches!(err, Error::LimitReached { what: Limit::CheckoutSessions, .. }), "{err:?}");

    // Payment records: a full invoice refuses a failed attempt and any test-mode transfer, but
    // records a verified live transfer (money the merchant received).
    let mut full = issued("10", now);
    let paid = pay(&full, &Observation::NotFound, false, now).aggregate.payments[0].clone();
    full.payments = vec![paid; MAX_PAYMENT_RECORDS];
    let session = full.sessions[0].clone();
    for (observation, duplicate) in
        [(Observation::NotFound, false), (sent(&full, "1", now), false), (sent(&full, "1", now), true)]
    {
        let transfer =
            credit::Transfer { session: &session, tx: &tx(5), observation: &observation, duplicate, actor: Actor::Api };
        let err = credit::credit(&crypto, &full, transfer, now).unwrap_err();
        assert!(matches!(err, Error::LimitReached { what: Limit::PaymentRecords, .. }), "{err:?}");
    }
    let mut live = full.clone();
    live.invoice.scope.mode = Mode::Live;
    let mut live_session = session.clone();
    live_session.scope.mode = Mode::Live;
    let observation = sent(&live, "1", now);
    let transfer = credit::Transfer {
        session: &live_session,
        tx: &tx(5),
        observation: &observation,
        duplicate: false,
        actor: Actor::System,
    };
    assert!(credit::credit(&crypto, &live, transfer, now).is_ok());
}
