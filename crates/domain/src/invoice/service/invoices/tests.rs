use chrono::Duration;

use super::*;
use crate::chain::model::{Observation, ObservedTransaction, TokenTransfer};
use crate::chain::ports::MockChain;
use crate::clock::MockClock;
use crate::event::model::EventType;
use crate::ids::MerchantId;
use crate::invoice::aggregate::{ChangeKind, InvoiceChange};
use crate::invoice::checkout::CheckoutStatus;
use crate::invoice::collection::CollectionState;
use crate::invoice::lifecycle::LifecycleStatus;
use crate::invoice::model::{ActivityAction, Actor};
use crate::invoice::payment::{BlockRef, FailureReason, PaymentStatus, TxHash};
use crate::invoice::ports::MockInvoiceStore;
use crate::merchant::model::{ChainSettings, MerchantStatus, WalletAddress};
use crate::money::{Amount, Decimal6};
use crate::testing::SeqCrypto;

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
        profile: Default::default(),
        logo: None,
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
    let mut change = decide::checkout((&crypto, &ChainSettings::default()), &merchant(), &scope(), input, now).unwrap();
    // Amount-only: payable at once, numbered at creation, no invoice.issued.
    assert_eq!(change.kind, ChangeKind::Create);
    assert_eq!(change.assign_number.as_deref(), Some("INV"));
    assert!(change.events.is_empty());
    assert_eq!(change.changed_sessions.len(), 1);
    assert_eq!(change.aggregate.invoice.collection_state, CollectionState::Open);
    change.finalize(Some(7));
    assert_eq!(change.aggregate.invoice.number.as_deref(), Some("INV-000007"));
    change.aggregate
}

fn ctx_of<'a>(
    crypto: &'a SeqCrypto,
    settings: &'a ChainSettings,
) -> (&'a dyn crate::crypto::Crypto, &'a ChainSettings) {
    (crypto, settings)
}

fn tx(n: u8) -> TxHash {
    TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap()
}

/// What the chain would report for a final transfer of `amount` to the first session.
fn sent(agg: &InvoiceAggregate, amount: &str, now: DateTime<Utc>) -> Observation {
    seen(agg, amount, now, true)
}

fn seen(agg: &InvoiceAggregate, amount: &str, now: DateTime<Utc>, finalized: bool) -> Observation {
    let s = &agg.sessions[0];
    let payer = WalletAddress::parse(&format!("0x{}", "11".repeat(20))).unwrap();
    Observation::Included(ObservedTransaction {
        tx_hash: tx(9),
        chain_id: POLYGON_CHAIN_ID,
        succeeded: true,
        block: BlockRef { number: 5, hash: format!("0x{}", "55".repeat(32)) },
        block_time: now,
        sender: Some(payer.clone()),
        transfers: vec![TokenTransfer {
            log_index: 0,
            token_contract: s.token_contract.clone(),
            from: payer,
            to: s.settlement_wallet.clone(),
            amount: d(amount),
            authorization: None,
        }],
        finalized,
    })
}

/// Records an attempt on the first session and settles it from `observation` at once.
fn pay(agg: &InvoiceAggregate, observation: &Observation, duplicate: bool, now: DateTime<Utc>) -> InvoiceChange {
    let (change, _) = try_pay(agg, observation, duplicate, now).unwrap();
    assert_eq!(change.kind, ChangeKind::Update { expected_lock_version: agg.invoice.lock_version });
    change
}

fn try_pay(
    agg: &InvoiceAggregate,
    observation: &Observation,
    duplicate: bool,
    now: DateTime<Utc>,
) -> Result<(InvoiceChange, credit::Settled), Error> {
    let crypto = SeqCrypto::default();
    // Distinct ids for each payment of the aggregate (the sequence starts over per instance).
    for _ in 0..=agg.payments.len() * 4 {
        crate::crypto::Crypto::fill_random(&crypto, &mut [0u8; 1]);
    }
    let mut change = InvoiceChange::update(agg.clone());
    let how = (credit::Origin::Simulated, Actor::TestHelper);
    let id = credit::attempt_into(&crypto, &mut change, (&agg.sessions[0].id, &tx(1), None), how, now)?;
    let wait = credit::NotFoundAfter(Duration::zero());
    let seen = credit::Seen { observation, duplicate, claims: None, skew: Duration::zero() };
    let settled = credit::settle_into(&crypto, &mut change, &id, seen, (now, Actor::TestHelper, wait))?;
    assert_eq!(change.changed_payments, vec![id]);
    Ok((change, settled))
}

fn types(change: &InvoiceChange) -> Vec<EventType> {
    change.events.iter().map(|e| e.event_type).collect()
}

#[test]
fn partial_then_full_payment() {
    let now = Utc::now();
    let agg = issued("10", now);
    let c = pay(&agg, &sent(&agg, "4", now), false, now);
    assert_eq!(c.aggregate.payments[0].block.as_ref().map(|b| b.number), Some(5));
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::PartiallyPaid);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Underpaid);
    assert_eq!(c.aggregate.invoice.remaining(), d("6"));
    assert_eq!(c.aggregate.payments[0].status, PaymentStatus::Underpaid);
    assert_eq!(c.aggregate.payments[0].payer_address.as_deref(), Some("0x1111111111111111111111111111111111111111"));
    assert_eq!(types(&c), vec![EventType::InvoicePartiallyPaid, EventType::PaymentUnderpaid]);
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Pending);
    // Numbered at creation: a payment does not number it again.
    assert_eq!(c.assign_number, None);
    let mut numbered = c;
    numbered.finalize(None);
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
    // It paid exactly what remained: confirmed, expecting the remainder, no payment.underpaid.
    assert_eq!(types(&c), vec![EventType::InvoicePaid]);
    let second = c.aggregate.payments.last().unwrap();
    assert_eq!((second.status, &second.amount_expected), (PaymentStatus::Confirmed, &d("6")));
    assert_eq!(c.assign_number, None, "an invoice is numbered once");
    let mut change = c;
    let events = change.finalize(None);
    assert_eq!(change.aggregate.invoice.number.as_deref(), Some("INV-000007"));
    // invoice.paid data carries every credited payment id.
    let crate::event::model::EventData::Map(pairs) = &events[0].data else { panic!() };
    let ids = pairs.iter().find(|(k, _)| k == "creditedPaymentIds").unwrap();
    assert!(matches!(&ids.1, crate::event::model::EventData::List(l) if l.len() == 2));
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

/// What a page may offer is what the close itself does: `CloseAction::allowed` answers as
/// `decide::close` decides, in every collection state, with and without a payment received.
#[test]
fn a_close_is_allowed_exactly_where_closing_succeeds() {
    let now = Utc::now();
    let crypto = SeqCrypto::default();
    let states = [
        CollectionState::Draft,
        CollectionState::Open,
        CollectionState::PastDue,
        CollectionState::PartiallyPaid,
        CollectionState::Paid,
        CollectionState::Void,
        CollectionState::Uncollectible,
    ];
    let mut offered = Vec::new();
    for state in states {
        for paid in ["0", "4"] {
            let mut agg = issued("10", now);
            agg.invoice.collection_state = state;
            agg.invoice.customer_amount_paid = d(paid);
            for action in [CloseAction::Void, CloseAction::VoidRemaining, CloseAction::MarkUncollectible] {
                let closes = decide::close(&crypto, &agg, action, "reason", now).is_ok();
                assert_eq!(action.allowed(&agg.invoice), closes, "{state:?}, paid {paid}, {action:?}");
                if closes && action == CloseAction::VoidRemaining {
                    offered.push((state, paid));
                }
            }
        }
    }
    // The remainder is voided where something was paid and collection is still open.
    assert_eq!(offered, vec![(CollectionState::PastDue, "4"), (CollectionState::PartiallyPaid, "4")]);
}

/// Sending, reminding and opening a checkout, as the API and the pages both ask: a paid
/// invoice is still sent (as its receipt) but neither reminded nor given a checkout.
#[test]
fn what_may_be_sent_reminded_or_given_a_checkout_in_each_state() {
    let now = Utc::now();
    let rows = [
        (CollectionState::Draft, "0", false, false),
        (CollectionState::Open, "0", true, true),
        (CollectionState::PartiallyPaid, "4", true, true),
        (CollectionState::PastDue, "4", true, true),
        (CollectionState::Paid, "10", true, false),
        (CollectionState::Void, "4", false, false),
        (CollectionState::Uncollectible, "0", true, false),
    ];
    for (state, paid, sendable, collecting) in rows {
        let mut agg = issued("10", now);
        agg.invoice.collection_state = state;
        agg.invoice.customer_amount_paid = d(paid);
        let expected = if collecting { Ok(()) } else { Err(Error::InvoiceNotPayable) };
        assert_eq!(agg.invoice.check_sendable().is_ok(), sendable, "{state:?}");
        assert_eq!(agg.invoice.check_collecting(), expected, "{state:?}");
        assert_eq!(agg.invoice.check_remindable(), expected, "{state:?}");
    }
    // Without a number yet (an amount-only invoice made before numbering at creation, until
    // its first payment): it still takes a new checkout, but is neither sent nor reminded of.
    let mut unnumbered = issued("10", now);
    unnumbered.invoice.number = None;
    assert!(unnumbered.invoice.check_sendable().is_err());
    assert_eq!(unnumbered.invoice.check_collecting(), Ok(()));
    assert_eq!(unnumbered.invoice.check_remindable(), Err(Error::InvoiceNotPayable));
}

/// A checkout's time is up from its expiry on: payable until the instant before, not at it;
/// expiry (due work), crediting and payability all give that one answer.
#[test]
fn a_checkout_expires_at_its_expiry_inclusive() {
    let now = Utc::now();
    let crypto = SeqCrypto::default();
    let agg = issued("10", now);
    let at = agg.sessions[0].expires_at;
    let before = at - Duration::nanoseconds(1);
    assert!(!agg.sessions[0].expired(before) && agg.sessions[0].is_payable(before));
    assert!(agg.sessions[0].expired(at) && !agg.sessions[0].is_payable(at));
    assert!(!due::due(&crypto, &agg, before).unwrap().output);
    assert!(due::due(&crypto, &agg, at).unwrap().output);
    let id = &agg.sessions[0].id;
    assert!(credit::simulated(&crypto, &agg, (id, &tx(1)), (None, true, false), before).is_ok());
    let late = credit::simulated(&crypto, &agg, (id, &tx(2)), (None, true, false), at);
    assert_eq!(late.unwrap_err(), Error::CheckoutSessionNotPayable);
}

/// A refused state-machine step is never swallowed: the decision fails and nothing is saved.
#[test]
fn refused_steps_are_errors() {
    let now = Utc::now();
    let crypto = SeqCrypto::default();
    // A transfer to a draft's session (drafts have none) is refused by the collection machine.
    let mut draft = issued("10", now);
    draft.invoice.collection_state = CollectionState::Draft;
    let observation = sent(&draft, "10", now);
    assert_eq!(try_pay(&draft, &observation, false, now).unwrap_err(), Error::InvoiceNotPayable);

    // Opening a checkout on a paid invoice is refused, not a silent no-op.
    let paid = pay(&issued("10", now), &observation, false, now).aggregate;
    let settings = ChainSettings::default();
    let ctx = ctx_of(&crypto, &settings);
    assert_eq!(decide::open_checkout(ctx, &paid, now), Err(Error::InvoiceNotPayable));
    // Closing a paid invoice is refused by the collection machine.
    let err = decide::close(&crypto, &paid, CloseAction::Void, "x", now).unwrap_err();
    assert!(matches!(err, Error::InvoiceTransitionGuardFailed(_)), "{err:?}");
    // A processing status (never stored without a payment in flight) makes expiry refuse
    // rather than guess.
    let mut processing = issued("10", now);
    processing.invoice.status = LifecycleStatus::Processing;
    let err = due::due(&crypto, &processing, now + Duration::minutes(31)).unwrap_err();
    assert!(matches!(err, Error::InvoiceTransitionGuardFailed(_)), "{err:?}");
}

/// Live verification: detected until seen, validating until final, back to detected when the
/// block is reorganised away, credited only once final; an unknown hash waits, then fails.
#[test]
fn a_payment_is_credited_only_once_final() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let mut change = InvoiceChange::update(agg.clone());
    let how = (credit::Origin::Submitted, Actor::Api);
    let id = credit::attempt_into(&crypto, &mut change, (&agg.sessions[0].id, &tx(1), None), how, now).unwrap();
    assert_eq!(change.aggregate.invoice.status, LifecycleStatus::Processing);
    let detected = change.aggregate;
    assert_eq!(detected.payment(&id).unwrap().status, PaymentStatus::Detected);
    let wait = credit::NotFoundAfter(Duration::minutes(10));
    let verify = |agg: &InvoiceAggregate, observation: &Observation, at: DateTime<Utc>| {
        let seen = credit::Seen { observation, duplicate: false, claims: None, skew: Duration::zero() };
        credit::verified(&crypto, agg, &id, seen, (at, wait)).unwrap()
    };

    // Not seen yet: nothing changes, until the wait is over.
    assert_eq!(verify(&detected, &Observation::NotFound, now), Decision::unchanged(credit::Settled::Waiting));
    let gave_up = verify(&detected, &Observation::NotFound, now + Duration::minutes(11));
    assert_eq!(gave_up.output, credit::Settled::Failed(FailureReason::TransactionNotFound));
    assert_eq!(gave_up.change.unwrap().aggregate.invoice.status, LifecycleStatus::Failed);

    // Seen, not final: validating, nothing credited; the same again changes nothing.
    let pending = seen(&detected, "10", now, false);
    let validating = verify(&detected, &pending, now);
    assert_eq!(validating.output, credit::Settled::Validating);
    let validating = validating.change.unwrap().aggregate;
    let p = validating.payment(&id).unwrap();
    assert_eq!((p.status, &p.customer_amount_credited), (PaymentStatus::Validating, &Amount::zero()));
    assert_eq!(validating.invoice.customer_amount_paid, Amount::zero());
    assert_eq!(verify(&validating, &pending, now), Decision::unchanged(credit::Settled::Waiting));

    // Reorganised away before finality: back to detected.
    let reorged = verify(&validating, &Observation::NotFound, now);
    assert_eq!(reorged.output, credit::Settled::Reorganized);
    let reorged = reorged.change.unwrap().aggregate;
    assert_eq!(reorged.payment(&id).unwrap().status, PaymentStatus::Detected);
    assert_eq!(reorged.payment(&id).unwrap().block, None);

    // Final: credited.
    let credited = verify(&validating, &sent(&detected, "10", now), now);
    assert_eq!(credited.output, credit::Settled::Credited(PaymentStatus::Confirmed));
    let change = credited.change.unwrap();
    assert_eq!(change.aggregate.invoice.collection_state, CollectionState::Paid);
    assert_eq!(types(&change), vec![EventType::InvoicePaid]);
    // Settled payments are not settled again.
    let again = verify(&change.aggregate, &sent(&detected, "10", now), now);
    assert_eq!(again, Decision::unchanged(credit::Settled::AlreadySettled));
}

/// A checkout does not expire while a payment on it is still being verified (a transfer mined
/// before the expiry may still pay it).
#[test]
fn a_payment_in_flight_holds_its_checkout_open() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let mut change = InvoiceChange::update(agg.clone());
    let how = (credit::Origin::Submitted, Actor::Api);
    credit::attempt_into(&crypto, &mut change, (&agg.sessions[0].id, &tx(1), None), how, now).unwrap();
    let later = now + Duration::minutes(31);
    assert_eq!(due::due(&crypto, &change.aggregate, later).unwrap(), Decision::unchanged(false));
    assert!(due::due(&crypto, &agg, later).unwrap().output);
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
    let settings = ChainSettings::default();
    let ctx = ctx_of(&crypto, &settings);
    let reuse = decide::open_checkout(ctx, &agg, now).unwrap();
    assert_eq!(reuse, Decision::unchanged((agg.sessions[0].id.clone(), true)));
    // After a partial payment a new session for the remainder is opened.
    let partly = pay(&agg, &sent(&agg, "4", now), false, now).aggregate;
    let opened = decide::open_checkout(ctx, &partly, now).unwrap();
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
    let settings = ChainSettings::default();
    let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
    let out = invoices
        .close(&scope(), &InvoiceKey::Id(agg.invoice.id.clone()), CloseAction::Void, "customer left")
        .await
        .unwrap();
    assert_eq!(out.invoice.collection_state, CollectionState::Void);
    assert_eq!(out.sessions[0].status, CheckoutStatus::Cancelled);
    // A blank reason is refused before anything is loaded.
    let err =
        invoices.close(&scope(), &InvoiceKey::Id(agg.invoice.id.clone()), CloseAction::Void, "  ").await.unwrap_err();
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
    let settings = ChainSettings::default();
    let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
    let input = TestPaymentInput { amount: None, transaction_hash: Some(tx(3)), succeed: true };
    let (payment, saved) = invoices.pay_test(&scope(), &agg.sessions[0].id, input).await.unwrap();
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
    let settings = ChainSettings::default();
    let ctx = ctx_of(&crypto, &settings);
    let err = decide::open_checkout(ctx, &many, now).unwrap_err();
    assert!(matches!(err, Error::LimitReached { what: Limit::CheckoutSessions, .. }), "{err:?}");

    // Payment records: a full invoice refuses simulated and reported attempts, but records a
    // transfer the follower saw arriving (money the merchant received).
    let mut full = issued("10", now);
    let failed = pay(&full, &Observation::NotFound, false, now).aggregate.payments[0].clone();
    full.payments = vec![failed; MAX_PAYMENT_RECORDS];
    for origin in [credit::Origin::Simulated, credit::Origin::Submitted] {
        let mut change = InvoiceChange::update(full.clone());
        let err =
            credit::attempt_into(&crypto, &mut change, (&full.sessions[0].id, &tx(5), None), (origin, Actor::Api), now);
        assert!(matches!(err, Err(Error::LimitReached { what: Limit::PaymentRecords, .. })), "{err:?}");
    }
    let mut change = InvoiceChange::update(full.clone());
    let detected = (credit::Origin::Detected, Actor::System);
    assert!(credit::attempt_into(&crypto, &mut change, (&full.sessions[0].id, &tx(5), None), detected, now).is_ok());
}

#[tokio::test]
async fn a_stopping_worker_gives_back_the_leases_it_did_not_use() {
    let crypto = SeqCrypto::default();
    let ids: Vec<(Scope, crate::ids::InvoiceId)> =
        (0..3).map(|_| (scope(), crate::ids::InvoiceId::generate(&crypto))).collect();
    let claimed = ids.clone();
    let mut store = MockInvoiceStore::new();
    store.expect_claim_due().times(1).returning(move |_, _, _| Ok(claimed.clone()));
    let expected = ids.clone();
    store.expect_release_due().times(1).withf(move |items| items == expected.as_slice()).returning(|_| Ok(()));
    let (clock, chain, settings) = (MockClock::new(), MockChain::new(), ChainSettings::default());
    let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
    // The stop comes after the claim, before the first invoice: all three go back, none is run.
    let calls = std::sync::atomic::AtomicUsize::new(0);
    let stop = || calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst) >= 1;
    let report = invoices.run_due_until(None, 10, &stop).await.unwrap();
    assert_eq!(report.changed, 0);
    assert!(report.failed.is_empty());
}

/// A customer may report a hash to a checkout that expired less than a day ago (the block's
/// time decides whether it pays it); later, or on a completed checkout, the report is refused.
#[test]
fn a_report_is_taken_up_to_a_day_after_expiry() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let session = agg.sessions[0].clone();
    let report = |agg: &InvoiceAggregate, at: DateTime<Utc>, n: u8| {
        credit::reported(&crypto, agg, (&session.id, &tx(n), None), (credit::Origin::Submitted, Actor::Api), at)
    };
    let expired_at = session.expires_at;
    let mut expired = agg.clone();
    expired.sessions[0].status = CheckoutStatus::Expired;
    assert!(report(&expired, expired_at + Duration::hours(23), 1).is_ok());
    let late = expired_at + Duration::hours(credit::REPORT_AFTER_EXPIRY_HOURS);
    assert_eq!(report(&expired, late, 2).map(|_| ()), Err(Error::CheckoutSessionNotPayable));
    let mut completed = agg.clone();
    completed.sessions[0].status = CheckoutStatus::Completed;
    assert_eq!(report(&completed, now, 3).map(|_| ()), Err(Error::CheckoutSessionNotPayable));
    // The follower records what it saw, whatever the checkout's state.
    let detected = (credit::Origin::Detected, Actor::System);
    assert!(
        credit::reported(
            &crypto,
            &completed,
            (&session.id, &tx(4), Some((0, crate::invoice::payment::Evidence::Amount))),
            detected,
            late
        )
        .is_ok()
    );
}

#[tokio::test]
async fn a_check_the_chain_cannot_answer_is_deferred_by_the_schedule_with_its_reason() {
    use crate::invoice::service::{Checked, DueCheck};
    use crate::schedule::model::{CHAIN_SILENT_RETRY_SECONDS, CHECK_FAILED_RETRY_SECONDS};
    let crypto = SeqCrypto::default();
    let payment = PaymentId::from_trusted("pay_1".into());
    let mut store = MockInvoiceStore::new();
    let deferred = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = deferred.clone();
    store.expect_defer_payment().times(2).returning(move |s, id, seconds, diagnostic| {
        seen.lock().unwrap().push((s.clone(), id.clone(), seconds, diagnostic.to_owned()));
        Ok(())
    });
    let mut chain = MockChain::new();
    let mut answers = vec![Err(Error::ChainUnavailable("chain 80002, not 137".into())), Err(Error::Unavailable)];
    chain.expect_observe().times(2).returning(move |_, _| answers.pop().unwrap());
    let clock = MockClock::new();
    let settings = ChainSettings::default();
    let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
    let due = DueCheck { scope: scope(), payment: payment.clone(), tx: tx(4) };
    let first = invoices.check(&due).await.unwrap();
    assert!(matches!(first, Checked::Deferred { seconds: CHAIN_SILENT_RETRY_SECONDS, cause: Error::Unavailable, .. }));
    let second = invoices.check(&due).await.unwrap();
    assert!(matches!(second, Checked::Deferred { seconds: CHECK_FAILED_RETRY_SECONDS, .. }), "{second:?}");
    let deferred = deferred.lock().unwrap();
    assert_eq!(deferred[0], (scope(), payment.clone(), 5, "the chain RPC endpoints do not answer; retrying".into()));
    assert_eq!(deferred[1], (scope(), payment, 30, "chain 80002, not 137".into()));
}
