use super::*;
use crate::chain::Verdict;
use crate::ids::MerchantId;
use crate::invoice::{InvoiceFields, LifecycleStatus};
use crate::merchant::MerchantStatus;
use crate::money::Decimal6;
use crate::payment::PaymentStatus;
use crate::ports::{MockClock, MockInvoiceStore};
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

/// An issued amount-only invoice of `total` with one checkout, built with the real use-case
/// helpers.
fn issued(total: &str, now: DateTime<Utc>) -> InvoiceAggregate {
    let crypto = SeqCrypto::default();
    let m = merchant();
    let settlement = settlement_for(&m, Mode::Test).unwrap();
    let fields = InvoiceFields {
        lines: vec![],
        amount: Some(d(total)),
        customer: None,
        discount: None,
        taxes: vec![],
        currency: Token::Usdc,
        due_at: None,
        checkout_expires_in_minutes: 30,
        payment_terms: None,
        memo: None,
        footer: None,
        purchase_order_number: None,
        external_reference: None,
        metadata: None,
        success_url: None,
        cancel_url: None,
        reminder_schedule: None,
    };
    let totals = Totals { subtotal: d(total), discount: Amount::zero(), tax: Amount::zero(), total: d(total) };
    let invoice = new_invoice(&crypto, &m, &scope(), &settlement, InvoiceKind::AmountOnly, fields, totals, now);
    let mut change = InvoiceChange::new(InvoiceAggregate { invoice, sessions: vec![], payments: vec![] }, None);
    issue_into(&mut change, &crypto, now, None).unwrap();
    // Amount-only: payable at once, numbered when first paid, no invoice.issued.
    assert_eq!(change.assign_number, None);
    assert!(change.events.is_empty());
    assert_eq!(change.aggregate.invoice.collection_state, CollectionState::Open);
    change.aggregate
}

fn tx(n: u8) -> TxHash {
    TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap()
}

fn verified(amount: &str) -> Verdict {
    Verdict::Verified { amount: d(amount), sender: None, at: Utc::now() }
}

fn types(change: &InvoiceChange) -> Vec<EventType> {
    change.events.iter().map(|e| e.event_type).collect()
}

#[test]
fn partial_then_full_payment() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let session = agg.sessions[0].clone();
    let c = credit(&crypto, agg, &session, &tx(1), verified("4"), false, now, "test");
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::PartiallyPaid);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Underpaid);
    assert_eq!(c.aggregate.invoice.remaining(), d("6"));
    assert_eq!(c.aggregate.payments[0].status, PaymentStatus::Underpaid);
    assert_eq!(types(&c), vec![EventType::InvoicePartiallyPaid, EventType::PaymentUnderpaid]);
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Pending);
    // The first credited payment numbers an amount-only invoice.
    assert_eq!(c.assign_number.as_deref(), Some("INV"));
    let mut numbered = c;
    numbered.finalize(Some(7));
    assert_eq!(numbered.aggregate.invoice.number.as_deref(), Some("INV-000007"));

    let agg = numbered.aggregate;
    let c = credit(&crypto, agg, &session, &tx(2), verified("6"), false, now, "test");
    let inv = &c.aggregate.invoice;
    assert_eq!(inv.collection_state, CollectionState::Paid);
    assert_eq!(inv.status, LifecycleStatus::Paid);
    assert_eq!(inv.customer_amount_paid, d("10"));
    assert!(inv.paid_at.is_some());
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Completed);
    assert_eq!(types(&c), vec![EventType::InvoicePaid, EventType::PaymentUnderpaid]);
    // invoice.paid data carries every credited payment id.
    assert_eq!(c.assign_number, None, "an invoice is numbered once");
    let mut change = c;
    let events = change.finalize(None);
    assert_eq!(change.aggregate.invoice.number.as_deref(), Some("INV-000007"));
    let crate::event::EventData::Map(pairs) = &events[0].data else { panic!() };
    let ids = pairs.iter().find(|(k, _)| k == "creditedPaymentIds").unwrap();
    assert!(matches!(&ids.1, crate::event::EventData::List(l) if l.len() == 2));
}

#[test]
fn overpayment_duplicate_and_failure() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let session = agg.sessions[0].clone();
    let c = credit(&crypto, agg.clone(), &session, &tx(1), verified("12.5"), false, now, "test");
    assert_eq!(types(&c), vec![EventType::InvoicePaid, EventType::InvoiceOverpaid, EventType::PaymentOverpaid]);
    assert_eq!(c.aggregate.invoice.overpayment(), d("2.5"));
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Overpaid);

    let dup = credit(&crypto, agg.clone(), &session, &tx(1), verified("10"), true, now, "test");
    assert_eq!(dup.aggregate.payments[0].status, PaymentStatus::Duplicate);
    assert_eq!(dup.aggregate.invoice.customer_amount_paid, Amount::zero());
    assert!(dup.events.is_empty());

    let failed = credit(
        &crypto,
        agg,
        &session,
        &tx(3),
        Verdict::Failed { reason: "wrong_recipient".into() },
        false,
        now,
        "test",
    );
    assert_eq!(failed.aggregate.payments[0].status, PaymentStatus::Failed);
    assert_eq!(failed.aggregate.invoice.status, LifecycleStatus::Failed);
    assert_eq!(failed.aggregate.invoice.customer_amount_paid, Amount::zero());
    assert_eq!(types(&failed), vec![EventType::PaymentFailed]);
}

#[test]
fn payment_after_void_leaves_the_state() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let mut agg = issued("10", now);
    agg.invoice.collection_state = CollectionState::Void;
    agg.invoice.status = LifecycleStatus::Cancelled;
    let session = agg.sessions[0].clone();
    let c = credit(&crypto, agg, &session, &tx(1), verified("10"), false, now, "test");
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::Void);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Cancelled);
    assert_eq!(types(&c), vec![EventType::InvoicePaymentReceivedAfterVoid]);
}

#[test]
fn expiry_and_past_due() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let mut agg = issued("10", now);
    assert!(due_transitions(&crypto, agg.clone(), now).is_none());
    let later = now + Duration::minutes(31);
    let c = due_transitions(&crypto, agg.clone(), later).unwrap();
    assert_eq!(c.aggregate.sessions[0].status, CheckoutStatus::Expired);
    assert_eq!(c.aggregate.invoice.status, LifecycleStatus::Expired);
    assert_eq!(types(&c), vec![EventType::InvoiceExpired]);
    // Run again on the result: nothing more to do (idempotent).
    assert!(due_transitions(&crypto, c.aggregate, later).is_none());

    agg.invoice.fields.due_at = Some(now + Duration::minutes(5));
    let c = due_transitions(&crypto, agg, now + Duration::minutes(6)).unwrap();
    assert_eq!(c.aggregate.invoice.collection_state, CollectionState::PastDue);
    assert_eq!(types(&c), vec![EventType::InvoicePastDue]);
    assert!(due_transitions(&crypto, c.aggregate, now + Duration::minutes(7)).is_none());
}

#[tokio::test]
async fn a_concurrent_change_is_reloaded_and_retried() {
    let crypto = SeqCrypto::default();
    let now = Utc::now();
    let agg = issued("10", now);
    let mut store = MockInvoiceStore::new();
    let loaded = agg.clone();
    store.expect_load_invoice().times(2).returning(move |_, _| Ok(loaded.clone()));
    let mut calls = 0;
    store.expect_save_invoice().times(2).returning(move |change| {
        calls += 1;
        if calls == 1 { Err(Error::InvoiceStateMismatch) } else { Ok(change.aggregate) }
    });
    let mut clock = MockClock::new();
    clock.expect_now().returning(move |_| Ok(now));
    let chain = crate::chain::MockChain::new();
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
