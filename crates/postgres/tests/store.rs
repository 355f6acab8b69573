//! The store port's contract, checked against a real PostgreSQL (a fresh database per test):
//! scoping by merchant and mode, optimistic locking, leases of due work, the once-only
//! transaction hash, numbering, the test clock's cap, and that the database's CHECK lists are
//! the domain's enumerations. A second store adapter would have to pass the same tests.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use stablepay_domain::payment_link::model::AmountType;
use stablepay_domain::payment_link::model::Usage;
use std::collections::BTreeSet;

use chrono::Utc;
use stablepay_domain::clock::{Clock, MAX_TEST_CLOCK_OFFSET_SECONDS};
use stablepay_domain::event::EventType;
use stablepay_domain::ids::{EventId, MerchantId, WebhookEndpointId};
use stablepay_domain::invoice::aggregate::InvoiceChange;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::input::{CheckoutInput, TestPaymentInput};
use stablepay_domain::invoice::lifecycle::LifecycleStatus;
use stablepay_domain::invoice::model::{InvoiceContent, LineItem};
use stablepay_domain::invoice::payment::{FailureReason, Payment, PaymentStatus, TxHash};
use stablepay_domain::invoice::service::Invoices;
use stablepay_domain::invoice::validate::DraftInput;
use stablepay_domain::invoice::{InvoiceAggregate, InvoiceKey};
use stablepay_domain::merchant::{ChainSettings, Merchant, service as merchants};
use stablepay_domain::money::{Amount, Decimal6};
use stablepay_domain::page::PageRequest;
use stablepay_domain::ports::{EventStore, InvoiceStore, MockChain};
use stablepay_domain::testing::SeqCrypto;
use stablepay_domain::url::HttpUrl;
use stablepay_domain::webhook::model::{AlertPreferences, EndpointState, SealedSecret, Subscription, WebhookEndpoint};
use stablepay_domain::webhook::ports::WebhookStore;
use stablepay_domain::{Error, Mode, Resource, Scope};
use stablepay_postgres::{PgClock, PgStore, PoolSettings};
use stablepay_test_db::TestDb;

struct Fixture {
    db: TestDb,
    store: PgStore,
    clock: PgClock,
    crypto: SeqCrypto,
    chain: MockChain,
    settings: ChainSettings,
}

impl Fixture {
    async fn new() -> Self {
        let db = TestDb::new(|url| async move {
            stablepay_postgres::run_migrations(&url).await.map(|_| ()).map_err(|e| e.to_string())
        })
        .await;
        let settings = PoolSettings { max_size: 8, ..PoolSettings::default() };
        let store = PgStore::connect(&db.url(), &settings).unwrap();
        let clock = PgClock::new(store.clone());
        Self {
            db,
            store,
            clock,
            crypto: SeqCrypto::default(),
            chain: MockChain::new(),
            settings: ChainSettings::default(),
        }
    }

    fn invoices(&self) -> Invoices<'_> {
        Invoices::new(&self.store, &self.crypto, &self.clock, (&self.chain, &self.settings))
    }

    async fn merchant(&self, name: &str) -> Merchant {
        let merchant = merchants::new_merchant(&self.crypto, Utc::now(), name, None, Default::default()).unwrap();
        stablepay_domain::ports::MerchantStore::insert_merchant(&self.store, &merchant).await.unwrap();
        merchant
    }

    async fn checkout(&self, m: &Merchant, amount: &str) -> InvoiceAggregate {
        let input = CheckoutInput { amount: Some(d(amount)), ..Default::default() };
        self.invoices().create_checkout(m, &test(m), input).await.unwrap()
    }

    async fn store_merchant(&self, id: &MerchantId) -> Merchant {
        stablepay_domain::ports::MerchantStore::get_merchant(&self.store, id).await.unwrap()
    }

    /// The values a CHECK constraint allows.
    async fn check_values(&self, constraint: &str) -> BTreeSet<String> {
        let rows = self
            .db
            .query(&format!("SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conname = '{constraint}'"))
            .await;
        let def: String = rows[0].get(0);
        def.split('\'').skip(1).step_by(2).map(str::to_owned).collect()
    }
}

fn d(s: &str) -> Amount {
    Decimal6::parse(s).unwrap()
}

fn test(m: &Merchant) -> Scope {
    Scope::new(m.id.clone(), Mode::Test)
}

fn live(m: &Merchant) -> Scope {
    Scope::new(m.id.clone(), Mode::Live)
}

fn page() -> PageRequest {
    PageRequest { limit: 100, starting_after: None }
}

/// A webhook endpoint of `scope` at a fixed URL, with a placeholder sealed secret.
fn endpoint(crypto: &SeqCrypto, scope: Scope, subscription: Subscription, state: EndpointState) -> WebhookEndpoint {
    WebhookEndpoint {
        id: WebhookEndpointId::generate(crypto),
        scope,
        url: HttpUrl::parse("https://hooks.example/").unwrap(),
        description: None,
        subscription,
        state,
        alerts: AlertPreferences::default(),
        secret: SealedSecret(vec![1, 2, 3]),
        previous_secret: None,
        created_at: Utc::now(),
        updated_at: Utc::now(),
        lock_version: 1,
    }
}

/// A change crediting `amount` to the first session of `agg` through transaction `tx`.
fn credited(crypto: &SeqCrypto, agg: &InvoiceAggregate, tx: &TxHash, amount: &str) -> InvoiceChange {
    let s = &agg.sessions[0];
    let now = Utc::now();
    let mut change = InvoiceChange::update(agg.clone());
    change.aggregate.invoice.customer_amount_paid = d(amount);
    change.push_payment(Payment {
        status: PaymentStatus::Confirmed,
        amount_received: d(amount),
        customer_amount_credited: d(amount),
        merchant_amount_settled: d(amount),
        chain_id: 137,
        confirmed_at: Some(now),
        logs: vec![0],
        ..Payment::detected(crypto, s, tx, now)
    });
    change
}

fn hash(n: u8) -> TxHash {
    TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap()
}

#[tokio::test]
async fn every_read_is_scoped_by_merchant_and_mode() {
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let agg = f.checkout(&a, "10").await;
    let (id, session) = (agg.invoice.id.clone(), agg.sessions[0].id.clone());
    let input = TestPaymentInput { amount: None, transaction_hash: None, succeed: true };
    let (payment, paid) = f.invoices().pay_test(&test(&a), &session, input).await.unwrap();
    let number = paid.invoice.number.clone().unwrap();

    let store = &f.store;
    for key in [InvoiceKey::Id(id.clone()), InvoiceKey::Number(number.clone())] {
        assert_eq!(store.load_invoice(&test(&a), &key).await.unwrap().invoice.id, id);
        assert_eq!(store.load_invoice(&test(&b), &key).await, Err(Error::NotFound(Resource::Invoice)), "{key:?}");
    }
    assert_eq!(store.load_invoice(&live(&a), &InvoiceKey::Id(id.clone())).await, Err(Error::ModeMismatch));
    // A number is per merchant and mode: the other mode simply has no such number.
    assert_eq!(
        store.load_invoice(&live(&a), &InvoiceKey::Number(number)).await,
        Err(Error::NotFound(Resource::Invoice))
    );
    let by_session = InvoiceKey::Session(session);
    assert_eq!(store.load_invoice(&test(&b), &by_session).await, Err(Error::NotFound(Resource::CheckoutSession)));
    assert_eq!(store.load_invoice(&live(&a), &by_session).await, Err(Error::ModeMismatch));

    assert_eq!(store.get_payment(&test(&a), &payment.id).await.unwrap().transaction_hash, payment.transaction_hash);
    assert_eq!(store.get_payment(&test(&b), &payment.id).await, Err(Error::NotFound(Resource::Payment)));
    assert_eq!(store.get_payment(&live(&a), &payment.id).await, Err(Error::ModeMismatch));

    assert_eq!(store.list_invoices(&test(&a), None, &page()).await.unwrap().items.len(), 1);
    assert!(store.list_invoices(&test(&b), None, &page()).await.unwrap().items.is_empty());
    assert!(store.list_invoices(&live(&a), None, &page()).await.unwrap().items.is_empty());
    let foreign = PageRequest { limit: 10, starting_after: Some(id.to_string()) };
    assert_eq!(store.list_invoices(&test(&b), None, &foreign).await, Err(Error::InvalidCursor));

    // Several by id in one read: in the order asked, with their sessions and payments, and only
    // those of the scope.
    let other = f.checkout(&a, "4").await;
    let theirs = f.checkout(&b, "5").await;
    let asked = [other.invoice.id.clone(), theirs.invoice.id.clone(), id.clone()];
    let got = store.load_invoices(&test(&a), &asked).await.unwrap();
    assert_eq!(
        got.iter().map(|g| g.invoice.id.clone()).collect::<Vec<_>>(),
        vec![other.invoice.id.clone(), id.clone()]
    );
    assert_eq!(got[1], store.load_invoice(&test(&a), &InvoiceKey::Id(id.clone())).await.unwrap());
    assert_eq!(got[1].payments.len(), 1);
    assert!(store.load_invoices(&live(&a), &asked).await.unwrap().is_empty());
    assert!(store.load_invoices(&test(&a), &[]).await.unwrap().is_empty());

    let events = store.list_events(&test(&a), None, &page()).await.unwrap().items;
    assert!(!events.is_empty());
    assert!(store.list_events(&test(&b), None, &page()).await.unwrap().items.is_empty());
    let event: &EventId = &events[0].id;
    assert_eq!(store.get_event(&test(&b), event).await, Err(Error::NotFound(Resource::Event)));
    assert_eq!(store.get_event(&live(&a), event).await, Err(Error::ModeMismatch));
    let foreign = PageRequest { limit: 10, starting_after: Some(event.to_string()) };
    assert_eq!(store.list_events(&test(&b), None, &foreign).await, Err(Error::InvalidCursor));
}

#[tokio::test]
async fn a_stale_lock_version_writes_nothing() {
    let f = Fixture::new().await;
    let a = f.merchant("A").await;
    let loaded = f.checkout(&a, "10").await;
    assert_eq!(loaded.invoice.lock_version, 1);

    let mut first = InvoiceChange::update(loaded.clone());
    first.aggregate.invoice.close_reason = Some("first".into());
    first.emit(&f.crypto, EventType::InvoiceVoided, None, Utc::now());
    let saved = f.store.save_invoice(first).await.unwrap();
    assert_eq!(saved.invoice.lock_version, 2);

    // A change decided on the same (now stale) aggregate: refused, and none of it is written.
    let mut second = InvoiceChange::update(loaded.clone());
    second.aggregate.invoice.close_reason = Some("second".into());
    second.emit(&f.crypto, EventType::InvoiceVoided, None, Utc::now());
    let payment = credited(&f.crypto, &loaded, &hash(1), "10").aggregate.payments.remove(0);
    second.push_payment(payment);
    assert_eq!(f.store.save_invoice(second).await, Err(Error::InvoiceStateMismatch));

    let now = f.store.load_invoice(&test(&a), &InvoiceKey::Id(loaded.invoice.id.clone())).await.unwrap();
    assert_eq!(now.invoice.close_reason.as_deref(), Some("first"));
    assert_eq!(now.invoice.lock_version, 2);
    assert!(now.payments.is_empty());
    assert_eq!(f.store.list_events(&test(&a), None, &page()).await.unwrap().items.len(), 1);
}

#[tokio::test]
async fn a_transaction_hash_is_credited_once_even_under_concurrency() {
    let f = Fixture::new().await;
    let a = f.merchant("A").await;
    let (one, two) = (f.checkout(&a, "10").await, f.checkout(&a, "10").await);
    let tx = hash(7);
    let (r1, r2) = tokio::join!(
        f.store.save_invoice(credited(&f.crypto, &one, &tx, "10")),
        f.store.save_invoice(credited(&f.crypto, &two, &tx, "10")),
    );
    let mut outcomes = [r1.map(|_| ()), r2.map(|_| ())];
    outcomes.sort_by_key(|r| r.is_ok());
    assert_eq!(outcomes, [Err(Error::DuplicateTransaction), Ok(())]);
    let rows = f.db.query(&format!("SELECT count(*) FROM payments WHERE transaction_hash = '{}'", tx.as_str())).await;
    assert_eq!(rows[0].get::<_, i64>(0), 1);

    // Recorded as a duplicate (never credited), the same hash may be stored again.
    let third = f.checkout(&a, "10").await;
    let mut dup = credited(&f.crypto, &third, &tx, "0");
    dup.aggregate.payments[0].status = PaymentStatus::Duplicate;
    dup.aggregate.payments[0].failure_reason = Some(FailureReason::DuplicateTransaction);
    dup.aggregate.invoice.customer_amount_paid = Amount::zero();
    let saved = f.store.save_invoice(dup).await.unwrap();
    assert_eq!(saved.payments[0].status, PaymentStatus::Duplicate);
}

/// Test-mode hashes are simulated: each merchant has its own. A live hash is credited once in
/// the whole service. A failed (uncredited) attempt blocks nothing.
#[tokio::test]
async fn hash_uniqueness_is_per_merchant_in_test_mode_and_global_in_live_mode() {
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let tx = hash(9);
    for m in [&a, &b] {
        let agg = f.checkout(m, "5").await;
        f.store.save_invoice(credited(&f.crypto, &agg, &tx, "5")).await.unwrap();
    }
    let again = f.checkout(&a, "5").await;
    assert_eq!(f.store.save_invoice(credited(&f.crypto, &again, &tx, "5")).await, Err(Error::DuplicateTransaction));

    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    let token = stablepay_domain::merchant::Token::Usdc;
    let mut live_checkouts = Vec::new();
    for m in [&a, &b] {
        merchants::activate_merchant(&f.store, Utc::now(), &m.id, wallet, token).await.unwrap();
        let m = f.store_merchant(&m.id).await;
        let input = CheckoutInput { amount: Some(d("5")), ..Default::default() };
        live_checkouts.push(f.invoices().create_checkout(&m, &live(&m), input).await.unwrap());
    }
    let live_tx = hash(10);
    let mut failed = credited(&f.crypto, &live_checkouts[0], &live_tx, "0");
    failed.aggregate.payments[0].status = PaymentStatus::Failed;
    failed.aggregate.payments[0].failure_reason = Some(FailureReason::TransactionNotFound);
    failed.aggregate.invoice.customer_amount_paid = Amount::zero();
    f.store.save_invoice(failed).await.unwrap();
    let first = f.store.load_invoice(&live(&a), &InvoiceKey::Id(live_checkouts[0].invoice.id.clone())).await.unwrap();
    f.store.save_invoice(credited(&f.crypto, &first, &live_tx, "5")).await.unwrap();
    let other = credited(&f.crypto, &live_checkouts[1], &live_tx, "5");
    assert_eq!(f.store.save_invoice(other).await, Err(Error::DuplicateTransaction));
    // Another log of the same transaction is another transfer: credited once too.
    let mut log_one = credited(&f.crypto, &live_checkouts[1], &live_tx, "5");
    log_one.aggregate.payments[0].logs = vec![1];
    f.store.save_invoice(log_one).await.unwrap();
    let again = f.store.load_invoice(&live(&b), &InvoiceKey::Id(live_checkouts[1].invoice.id.clone())).await.unwrap();
    let mut both = credited(&f.crypto, &again, &live_tx, "5");
    both.aggregate.payments.last_mut().unwrap().logs = vec![1, 2];
    assert_eq!(f.store.save_invoice(both).await, Err(Error::DuplicateTransaction), "log 1 is credited already");
}

#[tokio::test]
async fn two_claimers_share_due_work_without_overlap() {
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    for _ in 0..30 {
        f.checkout(&a, "1").await;
    }
    // B's checkouts are not due: only A's test clock moves past their expiry.
    for _ in 0..3 {
        f.checkout(&b, "1").await;
    }
    assert!(f.store.claim_due(None, 100, 30).await.unwrap().is_empty(), "nothing is due yet");
    assert_eq!(f.store.advance_test_clock(&a.id, 31 * 60).await, Ok(31 * 60));

    let (x, y) = tokio::join!(f.store.claim_due(None, 20, 30), f.store.claim_due(None, 20, 30));
    let (x, y) = (x.unwrap(), y.unwrap());
    let xs: BTreeSet<_> = x.iter().map(|(_, id)| id.clone()).collect();
    let ys: BTreeSet<_> = y.iter().map(|(_, id)| id.clone()).collect();
    assert!(xs.is_disjoint(&ys), "a due invoice was claimed twice");
    assert_eq!(xs.len() + ys.len(), 30);
    assert!(x.iter().chain(&y).all(|(scope, _)| *scope == test(&a)));
    // Leased: a third claimer finds nothing, but a scoped run (the test clock) sees them all.
    assert!(f.store.claim_due(None, 100, 30).await.unwrap().is_empty());
    assert_eq!(f.store.claim_due(Some(test(&a)), 100, 30).await.unwrap().len(), 30);
    assert!(f.store.claim_due(Some(test(&b)), 100, 30).await.unwrap().is_empty());
}

#[tokio::test]
async fn payments_in_verification_are_claimed_once_per_lease_and_only_when_they_can_progress() {
    let f = Fixture::new().await;
    let m = f.merchant("A").await;
    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    merchants::activate_merchant(&f.store, Utc::now(), &m.id, wallet, stablepay_domain::merchant::Token::Usdc)
        .await
        .unwrap();
    let m = f.store_merchant(&m.id).await;
    let mut ids = Vec::new();
    for n in 0..3u8 {
        let input = CheckoutInput { amount: Some(d("5")), ..Default::default() };
        let agg = f.invoices().create_checkout(&m, &live(&m), input).await.unwrap();
        let session = agg.sessions[0].id.clone();
        ids.push(f.invoices().submit_payment(&session, &hash(20 + n)).await.unwrap().id);
    }
    // One stays detected; two were seen in blocks 100 and 200.
    for (id, block) in [(&ids[1], 100), (&ids[2], 200)] {
        f.db.query(&format!(
            "UPDATE payments SET status = 'validating', block_number = {block}, block_hash = '0x{}' WHERE id = '{id}'",
            "ab".repeat(32)
        ))
        .await;
    }
    let store = &f.store;
    let claimed = |final_block: Option<u64>| async move {
        let mut got: Vec<_> =
            store.claim_payments(10, 60_000, final_block).await.unwrap().into_iter().map(|(_, id, _)| id).collect();
        got.sort();
        got
    };
    // Without a known final block only the detected payment can progress.
    assert_eq!(claimed(None).await, vec![ids[0].clone()]);
    // Leased: not again. Block 100 is final at 150, block 200 is not.
    assert_eq!(claimed(Some(150)).await, vec![ids[1].clone()]);
    assert_eq!(claimed(Some(500)).await, vec![ids[2].clone()]);
    assert!(claimed(Some(500)).await.is_empty());
    // Test-mode payments are never claimed.
    f.checkout(&m, "1").await;
    assert!(claimed(Some(u64::MAX)).await.is_empty());
}

#[tokio::test]
async fn creations_number_in_their_transaction() {
    let f = Fixture::new().await;
    let a = f.merchant("A").await;
    let draft = |description: &str| DraftInput {
        content: InvoiceContent {
            lines: vec![LineItem {
                id: None,
                sku: None,
                description: description.into(),
                quantity: d("2"),
                unit_amount: d("2.5"),
            }],
            ..Default::default()
        },
        ..Default::default()
    };
    let mut numbers = Vec::new();
    for n in 0..3 {
        let agg = f.invoices().create_invoice(&a, &test(&a), draft(&format!("item {n}")), true, false).await.unwrap();
        assert_eq!(agg.invoice.collection_state, CollectionState::Open);
        assert_eq!(agg.invoice.status, LifecycleStatus::Pending);
        numbers.push(agg.invoice.number.unwrap());
    }
    assert_eq!(numbers, ["INV-000001", "INV-000002", "INV-000003"]);
    // A draft takes no number, and the other mode has its own sequence.
    let draft_only = f.invoices().create_invoice(&a, &test(&a), draft("later"), false, false).await.unwrap();
    assert_eq!(draft_only.invoice.number, None);
    let issued = f.store.list_events(&test(&a), Some(EventType::InvoiceIssued), &page()).await.unwrap();
    assert_eq!(issued.items.len(), 3);
    // Checkout-created invoices are numbered at creation, from the same sequence.
    assert_eq!(f.checkout(&a, "1").await.invoice.number.as_deref(), Some("INV-000004"));
    // Concurrent creations never wait on each other and never share a number.
    let creations = (0..20).map(|_| f.checkout(&a, "2"));
    let mut got: Vec<String> =
        futures_util::future::join_all(creations).await.into_iter().map(|agg| agg.invoice.number.unwrap()).collect();
    got.sort();
    got.dedup();
    assert_eq!(got.len(), 20);
    assert_eq!(got.last().map(String::as_str), Some("INV-000024"));
    // The SQL rendering of the digits equals the domain's past six digits too, on both paths.
    f.db.query(&format!("SELECT setval('invoice_numbers.\"{}_test\"', 999998)", a.id.as_str())).await;
    assert_eq!(f.checkout(&a, "1").await.invoice.number.as_deref(), Some("INV-999999"));
    assert_eq!(
        f.invoices().create_invoice(&a, &test(&a), draft("big"), true, false).await.unwrap().invoice.number,
        Some(stablepay_domain::invoice::model::Invoice::format_number("INV", 1_000_000))
    );
    assert_eq!(f.checkout(&a, "1").await.invoice.number.as_deref(), Some("INV-1000001"));
    // Another merchant has its own sequence.
    let b = f.merchant("B").await;
    assert_eq!(f.checkout(&b, "1").await.invoice.number.as_deref(), Some("INV-000001"));
}

#[tokio::test]
async fn the_test_clock_is_capped_at_a_hundred_years() {
    let f = Fixture::new().await;
    let a = f.merchant("A").await;
    let store = &f.store;
    assert_eq!(
        store.advance_test_clock(&a.id, MAX_TEST_CLOCK_OFFSET_SECONDS - 10).await,
        Ok(MAX_TEST_CLOCK_OFFSET_SECONDS - 10)
    );
    let err = store.advance_test_clock(&a.id, 11).await.unwrap_err();
    assert_eq!(err.field(), Some("seconds"));
    assert_eq!(store.advance_test_clock(&a.id, 10).await, Ok(MAX_TEST_CLOCK_OFFSET_SECONDS));
    let nobody = MerchantId::from_trusted("mer_nobody".into());
    assert_eq!(store.advance_test_clock(&nobody, 1).await, Err(Error::NotFound(Resource::Merchant)));
    // The capped clock still tells a valid time, and due work still runs.
    assert!(f.clock.now(&test(&a)).await.unwrap() > Utc::now());
    assert!(store.claim_due(None, 10, 30).await.is_ok());
}

/// The one SQL definition of a scope's time (the `scope_clocks` view, read by every statement
/// that judges many scopes at once) agrees with the domain's rule as the clock port applies it:
/// live mode real time, test mode real time plus the merchant's offset, one row per scope.
#[tokio::test]
async fn the_sql_time_of_every_scope_is_the_domain_clocks() {
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    f.store.advance_test_clock(&a.id, 90 * 86_400).await.unwrap();
    for scope in [test(&a), live(&a), test(&b), live(&b)] {
        let before = f.clock.now(&scope).await.unwrap();
        let rows =
            f.db.query(&format!(
                "SELECT (extract(epoch FROM now) * 1000000)::bigint, ahead_seconds FROM scope_clocks \
                 WHERE merchant_id = '{}' AND mode = '{}'",
                scope.merchant_id,
                scope.mode.as_str()
            ))
            .await;
        let after = f.clock.now(&scope).await.unwrap();
        assert_eq!(rows.len(), 1, "{scope:?}");
        let sql: i64 = rows[0].get(0);
        assert!(
            before.timestamp_micros() - 1_000_000 <= sql && sql <= after.timestamp_micros() + 1_000_000,
            "{scope:?}: SQL {sql}, domain {before}..{after}"
        );
        let ahead: i64 = rows[0].get(1);
        let want = stablepay_domain::clock::time_in_mode(Utc::now(), scope.mode, ahead).unwrap();
        assert!((want - after).num_seconds().abs() <= 1, "{scope:?}: offset {ahead}");
    }
    let all = f.db.query("SELECT count(*) FROM scope_clocks").await;
    assert_eq!(all[0].get::<_, i64>(0), 4);
}

/// Each worker loop's next due time is the earliest of its work, a test scope's brought back to
/// real time by its clock's offset: a checkout's expiry for the due pass, nothing for the other
/// loops of an idle store.
#[tokio::test]
async fn the_next_due_time_is_the_earliest_work_in_real_time() {
    use stablepay_domain::schedule::{DueTimes, WorkKind};
    let f = Fixture::new().await;
    for kind in [WorkKind::Due, WorkKind::Exports, WorkKind::ReconciliationRuns, WorkKind::WebhookDeliveries] {
        assert_eq!(f.store.next_due(kind).await.unwrap(), None, "{kind:?}");
    }
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let cs = f.checkout(&a, "5").await;
    let expires = cs.sessions[0].expires_at;
    let near = |got: Option<chrono::DateTime<Utc>>, want: chrono::DateTime<Utc>| {
        got.is_some_and(|g| (g - want).num_milliseconds().abs() < 5)
    };
    assert!(near(f.store.next_due(WorkKind::Due).await.unwrap(), expires));
    // B's checkout, made after A's, expires after it; B's clock then moves 20 minutes ahead:
    // B's is due 20 minutes earlier in real time, before A's.
    let theirs = f.checkout(&b, "5").await.sessions[0].expires_at;
    assert!(theirs > expires);
    f.store.advance_test_clock(&b.id, 1200).await.unwrap();
    assert!(near(f.store.next_due(WorkKind::Due).await.unwrap(), theirs - chrono::Duration::seconds(1200)));
    assert_eq!(f.store.next_due(WorkKind::Exports).await.unwrap(), None);
    f.store.announce().await.unwrap();
}

#[tokio::test]
async fn failed_due_work_is_backed_off_by_the_domains_schedule() {
    use stablepay_domain::schedule::model::{Backoff, DUE_WORK_BACKOFF, DUE_WORK_SCHEDULE, DueSchedule};
    let f = Fixture::new().await;
    let m = f.merchant("A").await;
    let id = f.checkout(&m, "5").await.invoice.id;
    // The lease the store gave, in seconds from now, after each failure in a row.
    let lease = || async {
        let sql =
            format!("SELECT round(extract(epoch FROM lease_until - now()))::int8 FROM invoices WHERE id = '{id}'");
        let rows = f.db.query(&sql).await;
        rows[0].get::<_, i64>(0)
    };
    for failures in 1..=10 {
        assert_eq!(f.store.defer_due(&test(&m), &id, "boom", DUE_WORK_SCHEDULE).await.unwrap(), failures);
        assert_eq!(lease().await, DUE_WORK_BACKOFF.delay(failures).num_seconds(), "after {failures} failures");
    }
    // Another schedule is the store's too; a failure long after the last counts from one.
    let other = Backoff { first_seconds: 7, longest_seconds: 100, max_doublings: 3 };
    let schedule = DueSchedule { backoff: other, forgotten_after_seconds: 10 };
    f.db.query(&format!(
        "UPDATE invoice_due_failures SET last_failed_at = now() - interval '11 seconds' WHERE invoice_id = '{id}'"
    ))
    .await;
    assert_eq!(f.store.defer_due(&test(&m), &id, "boom", schedule).await.unwrap(), 1);
    assert_eq!(lease().await, other.delay(1).num_seconds());
    assert_eq!(f.store.defer_due(&test(&m), &id, "boom", schedule).await.unwrap(), 2);
    assert_eq!(lease().await, 14);
    let missing = stablepay_domain::ids::InvoiceId::from_trusted("inv_missing".into());
    assert_eq!(f.store.defer_due(&test(&m), &missing, "boom", schedule).await, Err(Error::NotFound(Resource::Invoice)));
}

#[tokio::test]
async fn check_constraints_list_the_domain_enumerations() {
    let f = Fixture::new().await;
    let names = |values: Vec<&str>| values.into_iter().map(str::to_owned).collect::<BTreeSet<_>>();
    assert_eq!(
        f.check_values("invoices_collection_state_check").await,
        names(CollectionState::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(
        f.check_values("invoices_status_check").await,
        names(LifecycleStatus::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(
        f.check_values("payments_status_check").await,
        names(PaymentStatus::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(
        f.check_values("payments_failure_reason_check").await,
        names(FailureReason::ALL.iter().map(|s| s.as_str()).collect())
    );
    assert_eq!(f.check_values("events_type_check").await, names(EventType::ALL.iter().map(|s| s.as_str()).collect()));
    use stablepay_domain::export::{ExportStatus, ExportType};
    assert_eq!(
        f.check_values("exports_status_check").await,
        names(ExportStatus::ALL.map(ExportStatus::as_str).to_vec())
    );
    assert_eq!(
        f.check_values("exports_export_type_check").await,
        names(ExportType::ALL.map(ExportType::as_str).to_vec())
    );
    use stablepay_domain::chain::UnattributedReason;
    assert_eq!(
        f.check_values("unattributed_transfers_reason_check").await,
        names(UnattributedReason::ALL.map(UnattributedReason::as_str).to_vec())
    );
    use stablepay_domain::chain::UnattributedStatus;
    assert_eq!(
        f.check_values("unattributed_transfers_status_check").await,
        names(UnattributedStatus::ALL.map(UnattributedStatus::as_str).to_vec())
    );
    use stablepay_domain::invoice::payment::Evidence;
    assert_eq!(f.check_values("payments_evidence_check").await, names(Evidence::ALL.map(Evidence::as_str).to_vec()));
    use stablepay_domain::payment_link::model::{Lifecycle, Usage};
    assert_eq!(
        f.check_values("payment_links_lifecycle_check").await,
        names(Lifecycle::ALL.map(Lifecycle::as_str).to_vec())
    );
    assert_eq!(f.check_values("payment_links_usage_type_check").await, names(Usage::ALL.map(Usage::as_str).to_vec()));
    assert_eq!(
        f.check_values("payment_links_amount_type_check").await,
        names(AmountType::ALL.map(AmountType::as_str).to_vec())
    );
    use stablepay_domain::email::model::{EmailKind, EmailStatus};
    assert_eq!(f.check_values("emails_kind_check").await, names(EmailKind::ALL.map(EmailKind::as_str).to_vec()));
    assert_eq!(f.check_values("emails_status_check").await, names(EmailStatus::ALL.map(EmailStatus::as_str).to_vec()));
    use stablepay_domain::webhook::model::DeliveryStatus;
    assert_eq!(f.check_values("exports_filter_usage_check").await, names(Usage::ALL.map(Usage::as_str).to_vec()));
    assert_eq!(
        f.check_values("exports_filter_amount_type_check").await,
        names(AmountType::ALL.map(AmountType::as_str).to_vec())
    );
    assert_eq!(
        f.check_values("exports_filter_token_check").await,
        names(stablepay_domain::merchant::Token::ALL.map(stablepay_domain::merchant::Token::symbol).to_vec())
    );
    assert_eq!(
        f.check_values("exports_filter_delivery_status_check").await,
        names(DeliveryStatus::ALL.map(DeliveryStatus::as_str).to_vec())
    );
}

/// The payment-link store: scoping (another merchant's id is NOT_FOUND, the other mode's
/// MODE_MISMATCH), the lock version of updates, a single-use reservation taken only at the lock
/// version the submission read (so a second submission at that version writes nothing), the
/// reservation read back from the invoice, and the state filter judged at the given time.
#[tokio::test]
async fn payment_links_are_scoped_locked_and_reserved_once() {
    use stablepay_domain::payment_link::machine::LinkState;
    use stablepay_domain::payment_link::ports::{LinkFilter, LinkQuery, PaymentLinkStore};
    use stablepay_domain::payment_link::service::{LinkSubmission, PaymentLinks};
    use stablepay_domain::payment_link::validate::LinkInput;

    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let links = PaymentLinks {
        store: &f.store,
        merchants: &f.store,
        crypto: &f.crypto,
        clock: &f.clock,
        chain: &f.settings,
        claim: None,
    };
    let input = LinkInput {
        title: Some("Seat".into()),
        amount_type: Some(AmountType::Fixed),
        amount: Some(d("10")),
        usage_type: Some(Usage::SingleUse),
        expires_at: Some(Utc::now() + chrono::Duration::hours(1)),
        ..Default::default()
    };
    let link = links.create(&a, &test(&a), input).await.unwrap();
    assert_eq!(f.store.get_link(&test(&b), &link.id).await, Err(Error::NotFound(Resource::PaymentLink)));
    assert_eq!(f.store.get_link(&Scope::new(a.id.clone(), Mode::Live), &link.id).await, Err(Error::ModeMismatch));
    assert_eq!(f.store.get_public_link(&link.public_id).await.unwrap().id, link.id);

    // An update at a stale lock version writes nothing.
    let mut next = link.clone();
    next.lock_version = 2;
    assert!(f.store.update_link(&next, 1, None).await.unwrap());
    assert!(!f.store.update_link(&next, 1, None).await.unwrap());

    // Two submissions decided at the same lock version: only the first is written.
    let stored = f.store.get_link(&test(&a), &link.id).await.unwrap();
    let created = links.submit(&link.public_id, LinkSubmission { version: 1, ..Default::default() }).await.unwrap();
    let held = f.store.get_link(&test(&a), &link.id).await.unwrap();
    let reservation = held.reservation.clone().unwrap();
    assert_eq!(reservation.invoice_id, created.invoice_id);
    assert_eq!(reservation.open_until.map(|t| t.timestamp_micros()), Some(created.expires_at.timestamp_micros()));
    assert!(!reservation.paid && !reservation.any_payment);
    let other = f.checkout(&a, "10").await;
    let mut late = stored.clone();
    late.lock_version = stored.lock_version + 1;
    assert!(!f.store.save_link_checkout(&late, stored.lock_version, InvoiceChange::create(other)).await.unwrap());
    let made = f.store.list_link_invoices(&test(&a), &link.id, &page()).await.unwrap();
    assert_eq!(made.items.iter().map(|i| i.invoice_id.clone()).collect::<Vec<_>>(), vec![created.invoice_id.clone()]);

    // Paid: the reservation reads as paid, the link as completed, at any time.
    let pay = TestPaymentInput { amount: None, transaction_hash: None, succeed: true };
    f.invoices().pay_test(&test(&a), &created.checkout_session_id, pay).await.unwrap();
    let done = f.store.get_link(&test(&a), &link.id).await.unwrap();
    assert!(done.reservation.as_ref().unwrap().paid);
    let scope_a = test(&a);
    let (store, scope_a) = (&f.store, &scope_a);
    let at = |filter: LinkState, now| async move {
        let filter = LinkFilter { state: Some(filter), ..Default::default() };
        store.list_links(scope_a, &LinkQuery { filter, page: page(), now }).await.unwrap().items.len()
    };
    let later = Utc::now() + chrono::Duration::hours(2);
    assert_eq!((at(LinkState::Completed, Utc::now()).await, at(LinkState::Completed, later).await), (1, 1));
    assert_eq!(at(LinkState::Expired, later).await, 0, "completed wins over expired");

    // A reusable link: active now, expired after its expiry (judged at the time given).
    let reusable = LinkInput {
        title: Some("Mug".into()),
        amount_type: Some(AmountType::Fixed),
        amount: Some(d("3")),
        expires_at: Some(Utc::now() + chrono::Duration::hours(1)),
        ..Default::default()
    };
    links.create(&a, &test(&a), reusable).await.unwrap();
    assert_eq!((at(LinkState::Active, Utc::now()).await, at(LinkState::Expired, Utc::now()).await), (1, 0));
    assert_eq!((at(LinkState::Active, later).await, at(LinkState::Expired, later).await), (0, 1));
    assert!(f.store.expired_unannounced(None, 10).await.unwrap().is_empty(), "not expired at the database's time");
}

/// The outbox's fan-out trigger follows the domain's rule (`WebhookEndpoint::receives`): each
/// event becomes a delivery to every enabled, unarchived endpoint of its merchant and mode
/// that receives its type, and synthetic test events to none.
#[tokio::test]
async fn the_fan_out_trigger_follows_the_domain_rule() {
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let make = |m: &Merchant, mode: Mode, subscription: Subscription, state: EndpointState| {
        endpoint(&f.crypto, Scope::new(m.id.clone(), mode), subscription, state)
    };
    let some = Subscription::Only(vec![EventType::InvoicePaid, EventType::PaymentFailed]);
    let endpoints = [
        make(&a, Mode::Test, Subscription::All, EndpointState::Enabled),
        make(&a, Mode::Test, some.clone(), EndpointState::Enabled),
        make(&a, Mode::Test, Subscription::All, EndpointState::Disabled),
        make(&a, Mode::Live, Subscription::All, EndpointState::Enabled),
        make(&b, Mode::Test, Subscription::All, EndpointState::Enabled),
        make(&a, Mode::Test, Subscription::All, EndpointState::Enabled),
    ];
    for e in &endpoints {
        f.store.insert_endpoint(e).await.unwrap();
    }
    f.store.archive_endpoint(&test(&a), &endpoints[5].id, Utc::now()).await.unwrap();
    for (i, t) in EventType::ALL.iter().enumerate() {
        f.db.query(&format!(
            "INSERT INTO events (id, merchant_id, mode, type, data, created_at) VALUES ('evt_{i:022}', '{}', 'test', '{}', '{{}}', now())",
            a.id,
            t.as_str()
        ))
        .await;
    }
    f.db.query(&format!(
        "INSERT INTO events (id, merchant_id, mode, type, data, created_at, test) VALUES ('evt_synthetic0000000000000', '{}', 'test', 'invoice.paid', '{{}}', now(), true)",
        a.id
    ))
    .await;
    for (n, e) in endpoints.iter().enumerate() {
        let rows = f.db.query(&format!("SELECT count(*) FROM webhook_deliveries WHERE endpoint_id = '{}'", e.id)).await;
        let got: i64 = rows[0].get(0);
        let same_scope = e.scope == test(&a) && n != 5;
        let want = if same_scope { EventType::ALL.iter().filter(|t| e.receives(**t)).count() } else { 0 };
        assert_eq!(usize::try_from(got).unwrap(), want, "endpoint {n}");
    }
}

/// Events, deliveries and attempts are kept by month: the months ahead are made by migrating,
/// a month past retention goes whole (its deliveries and attempts with it), a month with a
/// delivery still pending stays until it is delivered, the current month is never dropped,
/// and a month a transaction still reads is left half-detached for the next call to finish
/// instead of waiting for it.
#[tokio::test]
async fn months_of_events_are_made_ahead_and_dropped_whole_past_retention() {
    use chrono::{Datelike, Months};
    let f = Fixture::new().await;
    let a = f.merchant("A").await;
    let partitions = async || -> Vec<String> {
        let rows =
            f.db.query(
                "SELECT c.relname::text FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                 WHERE i.inhparent = 'events'::regclass ORDER BY 1",
            )
            .await;
        rows.iter().map(|r| r.get(0)).collect()
    };
    let this_month = Utc::now().date_naive().with_day(1).unwrap();
    let ahead: Vec<String> =
        (0..=3).map(|n| format!("events_{}", (this_month + Months::new(n)).format("y%Ym%m"))).collect();
    assert_eq!(partitions().await, ahead, "the current month and three ahead, made by migrating");
    assert_eq!(f.store.prepare_months(3).await.unwrap(), 0, "already there");
    assert_eq!(f.store.prepare_months(4).await.unwrap(), 1, "one more month ahead");

    f.db.query(
        "SELECT stablepay_prepare_month(m::date) FROM generate_series('2026-01-01'::date, '2026-03-01', '1 month') m",
    )
    .await;
    let hooks = endpoint(&f.crypto, test(&a), Subscription::All, EndpointState::Enabled);
    f.store.insert_endpoint(&hooks).await.unwrap();
    for (id, stored) in
        [("jan1", "2026-01-05"), ("jan2", "2026-01-31 23:59"), ("feb", "2026-02-10"), ("mar", "2026-03-03")]
    {
        f.db.query(&format!(
            "INSERT INTO events (id, merchant_id, mode, type, data, created_at, stored_at)
             VALUES ('evt_{id}', '{}', 'test', 'invoice.paid', '{{}}', '{stored}+00', '{stored}+00')",
            a.id
        ))
        .await;
    }
    f.db.query(&format!(
        "INSERT INTO events (id, merchant_id, mode, type, data, created_at) VALUES ('evt_now', '{}', 'test', 'invoice.paid', '{{}}', now())",
        a.id
    ))
    .await;
    // January's deliveries delivered with an attempt, March's failed; February's still pending.
    f.db.query(
        "UPDATE webhook_deliveries SET status = CASE WHEN event_id = 'evt_mar' THEN 'failed' ELSE 'delivered' END
         WHERE event_id IN ('evt_jan1', 'evt_jan2', 'evt_mar')",
    )
    .await;
    f.db.query(
        "INSERT INTO webhook_attempts (delivery_id, number, started_at, duration_ms, request_headers, event_stored_at)
         SELECT id, 1, now(), 5, '[]', event_stored_at FROM webhook_deliveries WHERE event_id LIKE 'evt_jan%'",
    )
    .await;
    let count = async |sql: &str| -> i64 { f.db.query(sql).await[0].get(0) };
    assert_eq!(count("SELECT count(*) FROM webhook_deliveries_y2026m01").await, 2, "kept in their event's month");
    assert_eq!(count("SELECT count(*) FROM webhook_attempts_y2026m01").await, 2);

    // A month whose tables are busy is not waited for.
    let hold = stablepay_test_db::connect(&f.db.url()).await;
    hold.batch_execute("BEGIN; SELECT count(*) FROM events").await.unwrap();
    assert_eq!(f.store.drop_months(90).await.unwrap(), 0, "busy: left for the next call");
    let pending = count("SELECT count(*) FROM pg_inherits WHERE inhdetachpending").await;
    assert_eq!(pending, 1, "January's attempts wait for the reader to finish their detach");
    hold.batch_execute("ROLLBACK").await.unwrap();

    assert_eq!(f.store.drop_months(90).await.unwrap(), 2, "January and March");
    let left = partitions().await;
    assert!(
        left.contains(&"events_y2026m02".to_owned()) && !left.iter().any(|p| p.ends_with("m01") && p.contains("2026"))
    );
    assert!(!left.contains(&"events_y2026m03".to_owned()));
    let ids = f.db.query("SELECT id FROM events ORDER BY id").await;
    let ids: Vec<String> = ids.iter().map(|r| r.get(0)).collect();
    assert_eq!(ids, ["evt_feb", "evt_now"]);
    assert_eq!(count("SELECT count(*) FROM webhook_attempts").await, 0);
    assert_eq!(count("SELECT count(*) FROM webhook_deliveries WHERE event_id IN ('evt_feb', 'evt_now')").await, 2);

    // February's delivery done: its month goes too. The current month never does.
    f.db.query("UPDATE webhook_deliveries SET status = 'delivered' WHERE event_id = 'evt_feb'").await;
    assert_eq!(f.store.drop_months(1).await.unwrap(), 1);
    let ids = f.db.query("SELECT id FROM events").await;
    assert_eq!(ids.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>(), ["evt_now"]);
    assert!(partitions().await.contains(&ahead[0]));
}

/// A keyed request's work marks its key committed in the work's own transaction: a retry
/// finds the marker (and what the work created) instead of running it again; a claim taken
/// over after its lease commits nothing, and its late answer is not recorded.
#[tokio::test]
async fn keyed_work_marks_its_key_in_its_own_transaction() {
    use stablepay_domain::api_key::KeyType;
    use stablepay_domain::idempotency::{IdempotencyBegin, IdempotencyNamespace, KeyedRequest, Requester};
    use stablepay_domain::ports::IdempotencyStore;

    let f = Fixture::new().await;
    let m = f.merchant("Keyed").await;
    let namespace = IdempotencyNamespace { scope: test(&m), requester: Requester::Key(KeyType::Secret) };
    let request =
        |key: &str| KeyedRequest { namespace: namespace.clone(), key: key.to_owned(), fingerprint: [7u8; 32] };
    let IdempotencyBegin::Started(claim) = f.store.begin(&request("k1"), 60).await.unwrap() else {
        panic!("not started")
    };
    let input = CheckoutInput { amount: Some(d("5")), ..Default::default() };
    let keyed = Invoices { claim: Some(claim.clone()), ..f.invoices() };
    let agg = keyed.create_checkout(&m, &test(&m), input.clone()).await.unwrap();
    // The process "dies" here, before recording the answer: the retry finds the work.
    match f.store.begin(&request("k1"), 0).await.unwrap() {
        IdempotencyBegin::Committed(c) => {
            assert_eq!(c.invoice.as_deref(), Some(agg.invoice.id.as_str()));
            assert_eq!(c.session.as_deref(), Some(agg.sessions[0].id.as_str()));
        }
        other => panic!("expected the committed work, got {other:?}"),
    }
    f.store.complete_committed(&request("k1"), 201, "{\"rebuilt\":true}").await.unwrap();
    assert_eq!(
        f.store.begin(&request("k1"), 0).await.unwrap(),
        IdempotencyBegin::Replay { status: 201, body: "{\"rebuilt\":true}".into() }
    );

    // A claim whose lease ran out is taken over; the first claim's work then commits nothing.
    let IdempotencyBegin::Started(first) = f.store.begin(&request("k2"), 60).await.unwrap() else { panic!() };
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let IdempotencyBegin::Started(second) = f.store.begin(&request("k2"), 0).await.unwrap() else {
        panic!("the stale claim was not taken over")
    };
    assert_ne!(first.claimed_at, second.claimed_at);
    let late = Invoices { claim: Some(first.clone()), ..f.invoices() };
    assert_eq!(late.create_checkout(&m, &test(&m), input.clone()).await.unwrap_err(), Error::IdempotencyClaimLost);
    f.store.complete(&first, 201, "late").await.unwrap();
    f.store.abandon(&first).await.unwrap();
    let page = f.invoices().list(&test(&m), None, &page()).await.unwrap();
    assert_eq!(page.items.len(), 1, "the lost claim's invoice was rolled back");
    assert_eq!(f.store.begin(&request("k2"), 60).await.unwrap(), IdempotencyBegin::InProgress);
    let on_time = Invoices { claim: Some(second.clone()), ..f.invoices() };
    on_time.create_checkout(&m, &test(&m), input).await.unwrap();
    f.store.complete(&second, 201, "the one").await.unwrap();
    assert_eq!(
        f.store.begin(&request("k2"), 60).await.unwrap(),
        IdempotencyBegin::Replay { status: 201, body: "the one".into() }
    );
}

/// Telemetry steps land in their checkout's merchant and mode (an unknown checkout writes
/// nothing), and the funnel counts checkouts, not reports, per step in its period.
#[tokio::test]
async fn telemetry_is_scoped_by_its_checkout_and_counted_per_checkout() {
    use stablepay_domain::ids::CheckoutSessionId;
    use stablepay_domain::ports::TelemetryStore;
    use stablepay_domain::telemetry::model::{Step, StepRecord};

    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let (one, two, other) = (f.checkout(&a, "1").await, f.checkout(&a, "2").await, f.checkout(&b, "3").await);
    let now = Utc::now();
    let report = |agg: &InvoiceAggregate, step| StepRecord {
        session_id: agg.sessions[0].id.clone(),
        step,
        wallet: None,
        detail: Some("x".into()),
        at: now,
    };
    for (agg, step) in [
        (&one, Step::Viewed),
        (&one, Step::Viewed),
        (&two, Step::Viewed),
        (&one, Step::WalletConnected),
        (&other, Step::Viewed),
    ] {
        f.store.record_step(&report(agg, step)).await.unwrap();
    }
    let unknown =
        StepRecord { session_id: CheckoutSessionId::parse("cs_nothing").unwrap(), ..report(&one, Step::Viewed) };
    assert_eq!(f.store.record_step(&unknown).await, Err(Error::NotFound(Resource::CheckoutSession)));
    let hour = chrono::Duration::hours(1);
    let funnel = f.store.funnel(&test(&a), now - hour, now + hour).await.unwrap();
    assert_eq!((funnel.viewed, funnel.wallet_connected, funnel.transfer_sent), (2, 1, 0));
    assert_eq!(f.store.funnel(&test(&b), now - hour, now + hour).await.unwrap().viewed, 1);
    assert_eq!(f.store.funnel(&test(&a), now + hour, now + hour * 2).await.unwrap().viewed, 0);
    let live = Scope::new(a.id.clone(), Mode::Live);
    assert_eq!(f.store.funnel(&live, now - hour, now + hour).await.unwrap().viewed, 0);
    assert_eq!(
        f.check_values("checkout_telemetry_step_check").await,
        Step::ALL.iter().map(|s| s.as_str().to_owned()).collect::<BTreeSet<_>>()
    );
}

#[tokio::test]
async fn two_pending_unique_amount_checkouts_of_a_wallet_never_ask_the_same_amount() {
    let f = Fixture::new().await;
    let m = f.merchant("Unique").await;
    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    merchants::activate_merchant(&f.store, Utc::now(), &m.id, wallet, stablepay_domain::merchant::Token::Usdc)
        .await
        .unwrap();
    merchants::set_unique_amounts(&f.store, &m.id, true).await.unwrap();
    let m = f.store_merchant(&m.id).await;
    let input = || CheckoutInput { amount: Some(d("10")), ..Default::default() };
    let first = f.invoices().create_checkout(&m, &live(&m), input()).await.unwrap();
    let asked = first.sessions[0].amount_due.clone();
    assert!(asked > d("10") && asked <= d("10.000999"), "{asked}");
    assert_eq!(first.sessions[0].collects(), d("10"));
    // Another creation that drew the same amount is refused (the caller draws again).
    let settings = ChainSettings::default();
    let mut twin =
        stablepay_domain::invoice::service::decide_checkout(&f.crypto, &settings, &m, &live(&m), input(), Utc::now())
            .unwrap();
    twin.aggregate.sessions[0].amount_due = asked.clone();
    twin.aggregate.sessions[0].amount_offset = first.sessions[0].amount_offset.clone();
    assert_eq!(f.store.save_invoice(twin).await.map(|_| ()), Err(Error::InvoiceStateMismatch));
    // Through the use case, creations always succeed with distinct amounts.
    let mut amounts = BTreeSet::from([asked.to_string()]);
    for _ in 0..20 {
        let created = f.invoices().create_checkout(&m, &live(&m), input()).await.unwrap();
        assert!(amounts.insert(created.sessions[0].amount_due.to_string()), "{amounts:?}");
    }
}

/// A PNG file as the logo check reads it (signature, IHDR, IDAT, IEND), `width` x `height`,
/// made distinct by `tag`.
fn png(width: u32, height: u32, tag: u8) -> Vec<u8> {
    let chunk = |kind: &[u8], data: &[u8]| {
        let mut out = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&[0, 0, 0, 0]);
        out
    };
    let mut header = width.to_be_bytes().to_vec();
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 6, 0, 0, 0]);
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(chunk(b"IHDR", &header));
    out.extend(chunk(b"IDAT", &[tag]));
    out.extend(chunk(b"IEND", &[]));
    out
}

#[tokio::test]
async fn a_logo_is_stored_once_and_goes_when_no_merchant_uses_it() {
    use stablepay_domain::ports::MerchantStore;
    let f = Fixture::new().await;
    let (a, b) = (f.merchant("A").await, f.merchant("B").await);
    let (first, second) = (png(120, 40, 1), png(64, 64, 2));
    let logo = merchants::set_logo(&f.store, &a.id, Some(first.clone())).await.unwrap().unwrap();
    merchants::set_logo(&f.store, &b.id, Some(first.clone())).await.unwrap();
    let stored = f.store_merchant(&a.id).await.logo.unwrap();
    assert_eq!((stored.width, stored.height, &stored.digest), (120, 40, &logo.digest));
    assert_eq!(f.store.logo_png(&logo.digest).await.unwrap(), Some(first.clone()));
    assert_eq!(f.db.query("SELECT 1 FROM merchant_logos").await.len(), 1, "one image for two merchants");

    // A replaces its logo: B still uses the first image, so it stays.
    let other = merchants::set_logo(&f.store, &a.id, Some(second.clone())).await.unwrap().unwrap();
    assert_eq!(f.store_merchant(&a.id).await.logo.unwrap().digest, other.digest);
    assert_eq!(f.store.logo_png(&logo.digest).await.unwrap(), Some(first));
    // B removes it: nobody uses it any more.
    assert_eq!(merchants::set_logo(&f.store, &b.id, None).await.unwrap(), None);
    assert_eq!(f.store_merchant(&b.id).await.logo, None);
    assert_eq!(f.store.logo_png(&logo.digest).await.unwrap(), None);
    assert_eq!(f.store.logo_png(&other.digest).await.unwrap(), Some(second));

    // A refused image and an unknown merchant change nothing.
    let refused = merchants::set_logo(&f.store, &a.id, Some(b"GIF89a".to_vec())).await;
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "logo"), "{refused:?}");
    let unknown = MerchantId::from_trusted("mer_unknown".into());
    assert_eq!(merchants::set_logo(&f.store, &unknown, None).await, Err(Error::NotFound(Resource::Merchant)));
    assert_eq!(f.store.set_logo(&unknown, None).await, Err(Error::NotFound(Resource::Merchant)));
    assert_eq!(f.store_merchant(&a.id).await.logo.unwrap().digest, other.digest);
}

#[tokio::test]
async fn an_export_is_claimed_by_one_worker_and_read_only_in_its_scope() {
    use stablepay_domain::export::model::FinishedFile;
    use stablepay_domain::export::ports::ExportStore;
    use stablepay_domain::export::{Export, ExportFilters, ExportSpec, ExportStatus, ExportType};
    use stablepay_domain::ids::ExportId;
    let f = Fixture::new().await;
    let (m, other) = (f.merchant("M").await, f.merchant("O").await);
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let spec =
        ExportSpec::new(ExportType::Invoices, None, (now - chrono::Duration::hours(1), now), ExportFilters::default())
            .unwrap();
    let export =
        Export { id: ExportId::parse("exp_store1").unwrap(), ..Export::queued(&f.crypto, &test(&m), spec, now) };
    f.store.insert_export(&export, None).await.unwrap();
    assert_eq!(f.store.get_export(&test(&m), &export.id).await.unwrap(), export);
    assert_eq!(f.store.get_export(&test(&other), &export.id).await, Err(Error::NotFound(Resource::Export)));
    let live = Scope::new(m.id.clone(), Mode::Live);
    assert_eq!(f.store.get_export(&live, &export.id).await, Err(Error::ModeMismatch));
    assert_eq!(f.store.expire_export(&test(&other), &export.id).await, Err(Error::NotFound(Resource::Export)));

    // Two workers claim at once: one gets it.
    let (a, b) = tokio::join!(f.store.claim_export(60), f.store.claim_export(60));
    let claimed: Vec<Export> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].status, ExportStatus::Running);
    assert!(f.store.append_chunk(&export.id, 0, b"id\r\n", 60).await.unwrap());
    // Another merchant's cancel changes nothing; the merchant's stops the writer.
    assert_eq!(f.store.cancel_export(&test(&other), &export.id).await, Err(Error::NotFound(Resource::Export)));
    assert_eq!(f.store.cancel_export(&test(&m), &export.id).await.unwrap().status, ExportStatus::Cancelled);
    assert!(!f.store.append_chunk(&export.id, 1, b"x", 60).await.unwrap());
    assert!(
        !f.store
            .finish_export(&export.id, &FinishedFile { rows: 1, bytes: 4, ready_at: now, expires_at: now })
            .await
            .unwrap()
    );
    assert!(f.db.query("SELECT 1 FROM export_chunks").await.is_empty());
    assert_eq!(f.store.claim_export(60).await.unwrap(), None);
}

#[tokio::test]
async fn a_reconciliation_run_is_claimed_once_and_its_items_written_with_its_completion() {
    use stablepay_domain::ids::ReconciliationRunId;
    use stablepay_domain::invoice::payment::TxHash;
    use stablepay_domain::merchant::{Token, WalletAddress};
    use stablepay_domain::money::Decimal6;
    use stablepay_domain::page::PageRequest;
    use stablepay_domain::ports::ReconciliationRunStore;
    use stablepay_domain::reconciliation::{
        FinishedRun, ItemFilter, ReconciliationRun, RunCoverage, RunItem, RunOutcome, RunStatus,
    };
    let f = Fixture::new().await;
    let (m, other) = (f.merchant("M").await, f.merchant("O").await);
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let run = ReconciliationRun {
        id: ReconciliationRunId::parse("rcr_store1").unwrap(),
        ..ReconciliationRun::queued(&f.crypto, live(&m), (now - chrono::Duration::days(1), now), now)
    };
    f.store.insert_run(&run, None).await.unwrap();
    assert_eq!(f.store.get_run(&live(&other), &run.id).await, Err(Error::NotFound(Resource::ReconciliationRun)));
    assert_eq!(f.store.get_run(&test(&m), &run.id).await, Err(Error::ModeMismatch));
    let page = PageRequest { limit: 10, starting_after: None };
    assert!(f.store.list_runs(&live(&other), None, &page).await.unwrap().items.is_empty());

    // Two workers claim at once: one gets it.
    let (a, b) = tokio::join!(f.store.claim_run(60), f.store.claim_run(60));
    let claimed: Vec<ReconciliationRun> = [a.unwrap(), b.unwrap()].into_iter().flatten().collect();
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].status, RunStatus::Running);
    assert!(f.store.extend_run(&run.id, 60).await.unwrap());

    let wallet = WalletAddress::from_trusted(format!("0x{}", "a".repeat(40)));
    let item = |line: u64, outcome: RunOutcome, amount: &str| RunItem {
        line,
        outcome,
        token: Token::Usdc,
        transaction_hash: TxHash::from_trusted(format!("0x{}", format!("{line:02}").repeat(32))),
        log_index: Some(0),
        block_number: Some(10 + line),
        block_time: Some(now - chrono::Duration::hours(1)),
        from_address: None,
        to_address: wallet.clone(),
        amount_onchain: Some(Decimal6::parse(amount).unwrap()),
        amount_credited: (outcome == RunOutcome::Matched).then(|| Decimal6::parse(amount).unwrap()),
        payment_id: None,
        invoice_id: None,
        unattributed_transfer_id: None,
        detail: format!("item {line}"),
    };
    let items = vec![item(1, RunOutcome::Matched, "10"), item(2, RunOutcome::OnchainNotCredited, "2.5")];
    let coverage = RunCoverage {
        from_block: Some(11),
        to_block: Some(12),
        final_block: Some(20),
        complete: true,
        wallets: vec![wallet.clone()],
        credited_elsewhere: 1,
    };
    let found = FinishedRun { coverage: coverage.clone(), items: items.clone(), completed_at: now };
    assert!(f.store.finish_run(&run.id, &found).await.unwrap());
    // Finished once: a second completion writes nothing.
    let again = FinishedRun { items: items[..1].to_vec(), ..found.clone() };
    assert!(!f.store.finish_run(&run.id, &again).await.unwrap());
    let done = f.store.get_run(&live(&m), &run.id).await.unwrap();
    assert_eq!((done.status, done.coverage.clone()), (RunStatus::Completed, coverage));
    let usdc = done.totals.iter().find(|t| t.token == Token::Usdc).unwrap();
    assert_eq!((usdc.matched, usdc.onchain_not_credited, usdc.credited_not_onchain), (1, 1, 0));
    assert_eq!(usdc.onchain_total, Decimal6::parse("12.5").unwrap());
    assert_eq!(usdc.credited_total, Decimal6::parse("10").unwrap());
    let asked = |outcome| ItemFilter { run: run.id.clone(), outcome };
    let read = f.store.run_items(&live(&m), &asked(None), &page).await.unwrap();
    assert_eq!(read.items, items);
    let first = PageRequest { limit: 1, starting_after: None };
    let one = f.store.run_items(&live(&m), &asked(None), &first).await.unwrap();
    assert!(one.has_more);
    let next = PageRequest { limit: 1, starting_after: Some("1".into()) };
    assert_eq!(f.store.run_items(&live(&m), &asked(None), &next).await.unwrap().items, items[1..]);
    let odd = f.store.run_items(&live(&m), &asked(Some(RunOutcome::OnchainNotCredited)), &page).await.unwrap();
    assert_eq!(odd.items.len(), 1);
    assert_eq!(
        f.store.run_items(&live(&other), &asked(None), &page).await,
        Err(Error::NotFound(Resource::ReconciliationRun))
    );
    assert_eq!(f.store.claim_run(60).await.unwrap(), None);
}

/// Statements: the setting (set, changed with its first `enabled_at` kept, turned off; an
/// unknown merchant refused), one statement per scope and month even when two workers issue it
/// at once (its exports written with it, nothing of the loser), reads by token and by scope,
/// the mailing that writes the outbox email with the status once, and the status constraint.
#[tokio::test]
async fn a_statement_is_issued_once_per_month_and_mailed_once() {
    use stablepay_domain::email::model::{EmailAbout, EmailStatus};
    use stablepay_domain::email::ports::EmailStore;
    use stablepay_domain::export::ports::ExportStore;
    use stablepay_domain::export::{Export, ExportStatus};
    use stablepay_domain::ids::PublicToken;
    use stablepay_domain::statement::ports::StatementStore;
    use stablepay_domain::statement::{Statement, StatementMonth, StatementStatus};
    let f = Fixture::new().await;
    let (m, other) = (f.merchant("M").await, f.merchant("O").await);
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let unknown = Scope::new(MerchantId::from_trusted("mer_nobody".into()), Mode::Test);
    let refused = f.store.set_statement_email(&unknown, Some("f@x.example".into()), now).await;
    assert_eq!(refused, Err(Error::NotFound(Resource::Merchant)));
    let set = f.store.set_statement_email(&test(&m), Some("a@x.example".into()), now).await.unwrap().unwrap();
    let later = now + chrono::Duration::days(3);
    let changed = f.store.set_statement_email(&test(&m), Some("b@x.example".into()), later).await.unwrap().unwrap();
    assert_eq!((changed.email.as_str(), changed.enabled_at), ("b@x.example", set.enabled_at));
    assert_eq!(f.store.statement_settings(None).await.unwrap(), vec![changed.clone()]);
    assert_eq!(f.store.statement_settings(Some(test(&other))).await.unwrap(), vec![]);

    let month = StatementMonth::containing(now).previous();
    let issue = |n: u8| {
        let exports = month.export_specs().map(|spec| Export::queued(&f.crypto, &test(&m), spec, now));
        let statement = Statement {
            token: PublicToken::from_trusted(format!("{}", n).repeat(43)),
            ..Statement::issued(&f.crypto, (&test(&m), month), "b@x.example", &exports, now)
        };
        (statement, exports)
    };
    let ((a, a_exports), (b, b_exports)) = (issue(1), issue(2));
    let (x, y) = tokio::join!(f.store.insert_statement(&a, &a_exports), f.store.insert_statement(&b, &b_exports));
    let (won, lost) = match (x.unwrap(), y.unwrap()) {
        (true, false) => ((a, a_exports), b_exports),
        (false, true) => ((b, b_exports), a_exports),
        other => panic!("one statement per month: {other:?}"),
    };
    let (statement, exports) = won;
    assert_eq!(f.store.get_export(&test(&m), &exports[0].id).await.unwrap(), exports[0]);
    assert_eq!(f.store.get_export(&test(&m), &lost[0].id).await, Err(Error::NotFound(Resource::Export)));
    assert_eq!(f.store.statement_by_token(&statement.token).await.unwrap(), statement);
    assert_eq!(f.store.get_statement(&test(&m), &statement.id).await.unwrap(), statement);
    for scope in [test(&other), live(&m)] {
        assert_eq!(f.store.get_statement(&scope, &statement.id).await, Err(Error::NotFound(Resource::Statement)));
    }
    let pending = f.store.exporting_statements(10).await.unwrap();
    assert_eq!(pending.len(), 1);
    assert_eq!((pending[0].invoices, pending[0].payments), (ExportStatus::Queued, ExportStatus::Queued));

    let email = stablepay_domain::email::model::OutboundEmail::statement(&f.crypto, &statement, now);
    assert!(f.store.statement_mailed(&statement, &email).await.unwrap());
    let again = stablepay_domain::email::model::OutboundEmail::statement(&f.crypto, &statement, now);
    assert!(!f.store.statement_mailed(&statement, &again).await.unwrap(), "mailed once");
    let mailed = f.store.get_statement(&test(&m), &statement.id).await.unwrap();
    assert_eq!((mailed.status, mailed.email_id.as_ref()), (StatementStatus::Mailed, Some(&email.id)));
    assert!(f.store.exporting_statements(10).await.unwrap().is_empty());
    let claimed = f.store.claim_emails(10, 30).await.unwrap();
    assert_eq!(claimed.len(), 1);
    assert_eq!(
        (claimed[0].about.clone(), claimed[0].status),
        (EmailAbout::Statement(test(&m), statement.id.clone()), EmailStatus::Queued)
    );
    let mut sent = claimed[0].clone();
    sent.sent(now);
    f.store.record_email(&sent).await.unwrap();
    assert!(f.store.claim_emails(10, 30).await.unwrap().is_empty());
    assert_eq!(f.store.list_statements(&test(&m), 12).await.unwrap(), vec![mailed]);

    assert_eq!(f.store.set_statement_email(&test(&m), None, now).await.unwrap(), None);
    assert!(f.store.statement_settings(None).await.unwrap().is_empty());
    assert_eq!(
        f.check_values("statements_status_check").await,
        StatementStatus::ALL.iter().map(|s| s.as_str().to_owned()).collect::<BTreeSet<_>>()
    );
}

/// Accounts: a user with its first membership (an email taken twice, in any case, and an
/// unknown merchant refused with nothing written), sessions found by their token's digest only,
/// touched, ended one by one or all of a user's at once, and the role constraint.
#[tokio::test]
async fn users_sessions_and_memberships_keep_their_rules() {
    use stablepay_domain::account::ports::AccountStore;
    use stablepay_domain::account::{Membership, Role, Session, User};
    use stablepay_domain::ids::{SessionId, UserId};
    let f = Fixture::new().await;
    let m = f.merchant("M").await;
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let user = |n: u8, email: &str| User {
        id: UserId::from_trusted(format!("usr_{n}")),
        email: email.into(),
        name: "Ada".into(),
        password_hash: "$argon2id$...".into(),
        email_verified_at: Some(now),
        two_factor_since: None,
        created_at: now,
    };
    let member = |u: &User, merchant: &MerchantId| Membership {
        user_id: u.id.clone(),
        merchant_id: merchant.clone(),
        role: Role::Owner,
        requires_two_factor: false,
        webhook_alerts: false,
        created_at: now,
    };
    let ada = user(1, "ada@example.com");
    f.store.insert_user(&ada, &member(&ada, &m.id), &[]).await.unwrap();
    let twin = user(2, "ada@example.com");
    let refused = f.store.insert_user(&twin, &member(&twin, &m.id), &[]).await;
    assert!(matches!(refused, Err(Error::Validation { ref field, .. }) if field == "email"), "{refused:?}");
    let nobody = MerchantId::from_trusted("mer_nobody".into());
    let bob = user(3, "bob@example.com");
    assert_eq!(f.store.insert_user(&bob, &member(&bob, &nobody), &[]).await, Err(Error::NotFound(Resource::Merchant)));
    assert_eq!(f.store.user_by_email("bob@example.com").await.unwrap(), None, "nothing of a refused user stays");
    assert_eq!(f.store.user_by_email("ada@example.com").await.unwrap(), Some(ada.clone()));
    assert_eq!(f.store.memberships(&ada.id).await.unwrap(), vec![member(&ada, &m.id)]);

    let session = |n: u8| Session {
        id: SessionId::from_trusted(format!("ses_{n}")),
        user_id: ada.id.clone(),
        token_digest: [n; 32],
        csrf_token: format!("csrf{n}"),
        created_at: now,
        last_seen_at: now,
        reauthenticated_at: now,
    };
    for n in [1, 2, 3] {
        f.store.insert_session(&session(n), &[]).await.unwrap();
    }
    let (found, owner) = f.store.session_by_digest(&[2; 32]).await.unwrap().unwrap();
    assert_eq!((found, owner), (session(2), ada.clone()));
    assert_eq!(f.store.session_by_digest(&[9; 32]).await.unwrap(), None);
    let later = now + chrono::Duration::minutes(5);
    f.store.touch_session(&session(2).id, later).await.unwrap();
    assert_eq!(f.store.session_by_digest(&[2; 32]).await.unwrap().unwrap().0.last_seen_at, later);
    f.store.delete_session(&session(1).id).await.unwrap();
    assert_eq!(f.store.session_by_digest(&[1; 32]).await.unwrap(), None);
    assert_eq!(f.store.delete_user_sessions(&ada.id, Some(session(3).id), &[]).await.unwrap(), 1);
    assert!(f.store.session_by_digest(&[3; 32]).await.unwrap().is_some(), "the session kept stays");
    assert_eq!(f.store.delete_user_sessions(&ada.id, None, &[]).await.unwrap(), 1);
    assert_eq!(f.store.session_by_digest(&[3; 32]).await.unwrap(), None);
    assert_eq!(
        f.check_values("memberships_role_check").await,
        Role::ALL.iter().map(|r| r.as_str().to_owned()).collect::<BTreeSet<_>>()
    );
}

/// Emailed links: a new link of a kind replaces the unused earlier one, its email is claimed
/// once, its token is found by digest, and it is used once (a second use changes nothing);
/// two-factor steps are taken once and recovery codes used once; the last owner stays even
/// when two removals race; the audit log pages newest first.
#[tokio::test]
async fn links_two_factor_and_the_team_keep_their_rules() {
    use stablepay_domain::account::link::{AccountLink, Invitation, LinkEffect, LinkPurpose};
    use stablepay_domain::account::members::MembershipChange;
    use stablepay_domain::account::ports::{AccountStore, TwoFactorOn};
    use stablepay_domain::account::totp::SealedTotp;
    use stablepay_domain::account::{AuditAction, AuditEntry, Membership, Role, User};
    use stablepay_domain::email::model::{EmailAbout, EmailStatus};
    use stablepay_domain::email::ports::EmailStore;
    use stablepay_domain::ids::{AccountLinkId, AuditEntryId, EmailId, UserId};
    let f = Fixture::new().await;
    let m = f.merchant("M").await;
    let now = chrono::SubsecRound::trunc_subsecs(Utc::now(), 6) - chrono::Duration::seconds(5);
    let user = |n: u8| User {
        id: UserId::from_trusted(format!("usr_{n}")),
        email: format!("u{n}@example.com"),
        name: "U".into(),
        password_hash: "old".into(),
        email_verified_at: None,
        two_factor_since: None,
        created_at: now,
    };
    let member = |u: &User, role: Role| Membership {
        user_id: u.id.clone(),
        merchant_id: m.id.clone(),
        role,
        requires_two_factor: false,
        webhook_alerts: false,
        created_at: now,
    };
    let (a, b) = (user(1), user(2));
    f.store.insert_user(&a, &member(&a, Role::Owner), &[]).await.unwrap();
    f.store.insert_user(&b, &member(&b, Role::Owner), &[]).await.unwrap();

    // A reset link replaces the earlier one; its email is one row of the one outbox, claimed
    // once, with the replaced link's skipped.
    let link = |n: u8| {
        AccountLink::new(
            (AccountLinkId::from_trusted(format!("alk_{n}")), EmailId::from_trusted(format!("eml_l{n}"))),
            (LinkPurpose::ResetPassword, "u1@example.com"),
            Some(a.id.clone()),
            None,
            now,
        )
    };
    f.store.insert_link(&link(1), &[]).await.unwrap();
    f.store.insert_link(&link(2), &[]).await.unwrap();
    let claimed = f.store.claim_emails(10, 60).await.unwrap();
    assert_eq!(
        claimed.iter().map(|e| (e.about.clone(), e.id.to_string())).collect::<Vec<_>>(),
        [(EmailAbout::AccountLink(link(2).id), "eml_l2".to_owned())],
        "the replaced link's email is skipped"
    );
    assert!(f.store.claim_emails(10, 60).await.unwrap().is_empty(), "leased");
    f.store.set_link_token(&link(1).id, &[1; 32]).await.unwrap();
    f.store.set_link_token(&link(2).id, &[2; 32]).await.unwrap();
    let first = f.store.link_by_digest(&[1; 32]).await.unwrap().unwrap();
    assert!(first.used_at.is_some(), "replaced by the newer link");
    assert_eq!(first.mail.status, EmailStatus::Skipped);
    let second = f.store.link_by_digest(&[2; 32]).await.unwrap().unwrap();
    assert_eq!((second.used_at, second.mail.status), (None, EmailStatus::Queued));
    let mut mail = claimed[0].clone();
    mail.sent(now);
    f.store.record_email(&mail).await.unwrap();
    let second = f.store.link_by_id(&second.id).await.unwrap().unwrap();
    assert_eq!((second.mail.status, second.mail.attempts), (EmailStatus::Sent, 1));
    assert_eq!(f.store.link_by_id(&AccountLinkId::from_trusted("alk_none".into())).await.unwrap(), None);

    // A notice is written with its email in the same outbox, claimed by the same statement.
    use stablepay_domain::account::notice::{Notice, NoticeKind};
    use stablepay_domain::ids::NoticeId;
    let notice = Notice::new(
        (NoticeId::from_trusted("ntc_1".into()), EmailId::from_trusted("eml_n1".into())),
        (&m.id, NoticeKind::WalletChanged),
        "u1@example.com",
        ("The wallet changed".into(), "It did.".into()),
        ("Open".into(), "https://pay.example/dashboard/settings".into()),
        now,
    );
    let wallet = stablepay_domain::merchant::model::WalletAddress::from_trusted(
        "0x1111111111111111111111111111111111111111".into(),
    );
    let token = stablepay_domain::merchant::model::Token::Usdc;
    f.store.set_settlement_wallet(&m.id, &wallet, token, std::slice::from_ref(&notice), &[]).await.unwrap();
    let claimed_notice = f.store.claim_emails(10, 60).await.unwrap();
    assert_eq!(
        claimed_notice.iter().map(|e| e.about.clone()).collect::<Vec<_>>(),
        [EmailAbout::Notice(notice.id.clone())]
    );
    assert_eq!(claimed_notice[0], notice.mail);
    assert_eq!(f.store.notice(&notice.id).await.unwrap(), Some(notice.clone()));
    let mut failed = claimed_notice[0].clone();
    failed.attempt_failed("451 later", false, now);
    f.store.record_email(&failed).await.unwrap();
    assert_eq!(f.store.notice(&notice.id).await.unwrap().map(|n| n.mail), Some(failed));
    let effect = LinkEffect::SetPassword { user: a.id.clone(), password_hash: "new".into() };
    f.store
        .insert_session(
            &stablepay_domain::account::Session {
                id: stablepay_domain::ids::SessionId::from_trusted("ses_1".into()),
                user_id: a.id.clone(),
                token_digest: [7; 32],
                csrf_token: "c".into(),
                created_at: now,
                last_seen_at: now,
                reauthenticated_at: now,
            },
            &[],
        )
        .await
        .unwrap();
    assert!(f.store.consume_link(&second.id, now, &effect, &[]).await.unwrap());
    assert!(!f.store.consume_link(&second.id, now, &effect, &[]).await.unwrap(), "once");
    let a_now = f.store.user_by_id(&a.id).await.unwrap().unwrap();
    assert_eq!(a_now.password_hash, "new");
    assert!(a_now.email_verified_at.is_some(), "the link reached the address");
    assert_eq!(f.store.session_by_digest(&[7; 32]).await.unwrap(), None, "every session ended");

    // An invitation for a new user: the user and the membership in one transaction.
    let invitation = Invitation { merchant_id: m.id.clone(), role: Role::Viewer, invited_by: Some(a.id.clone()) };
    let inv = AccountLink::new(
        (AccountLinkId::from_trusted("alk_9".into()), EmailId::from_trusted("eml_l9".into())),
        (LinkPurpose::Invitation, "new@example.com"),
        None,
        Some(invitation),
        now,
    );
    f.store.insert_link(&inv, &[]).await.unwrap();
    assert_eq!(f.store.invitations(&m.id, now).await.unwrap().len(), 1);
    let newcomer = User { email: "new@example.com".into(), ..user(3) };
    let join = LinkEffect::Join { new_user: Some(newcomer.clone()), membership: member(&newcomer, Role::Viewer) };
    assert!(f.store.consume_link(&inv.id, now, &join, &[]).await.unwrap());
    assert!(f.store.invitations(&m.id, now).await.unwrap().is_empty());
    assert_eq!(f.store.members(&m.id).await.unwrap().len(), 3);

    // Two-factor: a step once, a recovery code once.
    f.store.set_pending_two_factor(&a.id, &SealedTotp(vec![1, 2, 3])).await.unwrap();
    assert!(
        f.store
            .enable_two_factor(&a.id, &TwoFactorOn { step: 100, at: now, recovery_digests: vec![[5; 32]] }, &[])
            .await
            .unwrap()
    );
    let record = f.store.two_factor(&a.id).await.unwrap();
    assert_eq!((record.secret, record.pending, record.last_step), (Some(SealedTotp(vec![1, 2, 3])), None, Some(100)));
    assert!(!f.store.use_totp_step(&a.id, 100).await.unwrap(), "the enrolment's code is used");
    assert!(f.store.use_totp_step(&a.id, 101).await.unwrap());
    assert!(!f.store.use_totp_step(&a.id, 101).await.unwrap());
    assert_eq!(f.store.recovery_codes_left(&a.id).await.unwrap(), 1);
    assert!(f.store.use_recovery_code(&a.id, &[5; 32], now, &[]).await.unwrap());
    assert!(!f.store.use_recovery_code(&a.id, &[5; 32], now, &[]).await.unwrap());
    f.store.disable_two_factor(&a.id, &[]).await.unwrap();
    assert_eq!(f.store.two_factor(&a.id).await.unwrap().secret, None);

    // Two owners, two removals at once: one of them is refused.
    let (x, y) = tokio::join!(
        f.store.change_membership(&m.id, &a.id, MembershipChange::Remove, &[]),
        f.store.change_membership(&m.id, &b.id, MembershipChange::Remove, &[]),
    );
    assert_eq!([x.is_ok(), y.is_ok()].iter().filter(|ok| **ok).count(), 1, "{x:?} {y:?}");
    let refused = if x.is_ok() { y } else { x };
    assert!(matches!(refused, Err(Error::AuthForbidden(_))), "{refused:?}");
    let owners = f.store.members(&m.id).await.unwrap().into_iter().filter(|(m, _)| m.role == Role::Owner).count();
    assert_eq!(owners, 1);

    // The audit log, newest first, paged by id.
    for n in 1..=3u8 {
        let e = AuditEntry {
            id: AuditEntryId::from_trusted(format!("aud_{n}")),
            merchant_id: m.id.clone(),
            actor: None,
            actor_email: None,
            action: AuditAction::SecurityChanged,
            target: None,
            detail: format!("change {n}"),
            at: now,
        };
        f.store.set_require_two_factor(&m.id, n % 2 == 1, &[e]).await.unwrap();
    }
    let page = f.store.audit_log(&m.id, 2, None).await.unwrap();
    assert_eq!(page.iter().map(|e| e.id.to_string()).collect::<Vec<_>>(), ["aud_3", "aud_2"]);
    let rest = f.store.audit_log(&m.id, 2, Some(AuditEntryId::from_trusted("aud_2".into()))).await.unwrap();
    assert_eq!(rest.iter().map(|e| e.id.to_string()).collect::<Vec<_>>(), ["aud_1"]);
    let viewer = f.store.memberships(&newcomer.id).await.unwrap();
    assert!(viewer[0].requires_two_factor, "the merchant's setting is read with the membership");
    assert_eq!(
        f.check_values("account_links_purpose_check").await,
        LinkPurpose::ALL.iter().map(|p| p.as_str().to_owned()).collect::<BTreeSet<_>>()
    );
}

/// The relayer's store: an attempt's terms kept with its nonce and read back only for its
/// checkout; one submission per nonce; the day's gas budget checked at insertion; the sender's
/// lease held by one worker; the account's nonce handed out once, only under the lease and only
/// with the transaction signed with it (never twice, even by two workers at once); the
/// submissions in flight, their versions, outcomes and the day's use.
#[tokio::test]
async fn the_relayers_nonce_is_handed_out_once_under_its_lease_within_the_days_budget() {
    use stablepay_domain::invoice::wallet::{AuthorizationNonce, AuthorizationTerms};
    use stablepay_domain::merchant::WalletAddress;
    use stablepay_domain::relay::model::{
        Fees, Inserted, Rebroadcast, Relay, RelayReceipt, RelayStatus, RelayTransaction, Signature,
        SignedAuthorization, day_start,
    };
    use stablepay_domain::relay::ports::RelayStore;

    let f = Fixture::new().await;
    let m = f.merchant("Relayed").await;
    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    merchants::activate_merchant(&f.store, Utc::now(), &m.id, wallet, stablepay_domain::merchant::Token::Usdc)
        .await
        .unwrap();
    let m = f.store_merchant(&m.id).await;
    let input = || CheckoutInput { amount: Some(d("10")), ..Default::default() };
    let (a, b) = (
        f.invoices().create_checkout(&m, &live(&m), input()).await.unwrap(),
        f.invoices().create_checkout(&m, &live(&m), input()).await.unwrap(),
    );
    let (session, other) = (a.sessions[0].id.clone(), b.sessions[0].id.clone());
    let payer = WalletAddress::parse("0x00000000000000000000000000000000000000aa").unwrap();
    let terms = |n: u8| AuthorizationTerms {
        token_contract: a.sessions[0].token_contract.clone(),
        from: payer.clone(),
        to: a.sessions[0].settlement_wallet.clone(),
        value: d("10"),
        valid_after: 0,
        valid_before: a.sessions[0].expires_at.timestamp(),
        nonce: AuthorizationNonce([n; 32]),
    };
    for n in 1..=3 {
        assert!(f.store.bind_wallet(&live(&m), &session, &payer, Some(terms(n)), Utc::now()).await.unwrap());
    }
    assert_eq!(
        f.store.authorization_terms(&live(&m), &session, &AuthorizationNonce([1; 32])).await.unwrap(),
        Some(terms(1))
    );
    assert_eq!(f.store.authorization_terms(&live(&m), &other, &AuthorizationNonce([1; 32])).await.unwrap(), None);

    let relayer = WalletAddress::parse("0xa0Ee7A142d267C1f36714E4a8F75612F20a79720").unwrap();
    // The store keeps microseconds.
    let now = || chrono::SubsecRound::trunc_subsecs(Utc::now(), 6);
    let relay = |n: u8| {
        let authorization =
            SignedAuthorization { terms: terms(n), signature: Signature { r: [n; 32], s: [1; 32], v: 27 } };
        Relay::queued(&f.crypto, (live(&m), session.clone()), (authorization, relayer.clone()), 85_000, now())
    };
    let budget = (day_start(Utc::now()), 200_000);
    let (first, second, third) = (relay(1), relay(2), relay(3));
    assert_eq!(f.store.insert_relay(&first, budget).await.unwrap(), Inserted::New);
    assert!(
        matches!(f.store.insert_relay(&relay(1), budget).await.unwrap(), Inserted::Existing(r) if r.id == first.id)
    );
    assert_eq!(f.store.insert_relay(&second, budget).await.unwrap(), Inserted::New);
    assert_eq!(f.store.insert_relay(&third, budget).await.unwrap(), Inserted::OverBudget, "170,000 + 85,000 > 200,000");
    let nonce = AuthorizationNonce([1; 32]);
    assert_eq!(
        f.store.relay_for_nonce(&live(&m), &session, &nonce).await.unwrap().map(|r| r.id),
        Some(first.id.clone())
    );
    assert_eq!(f.store.relay_for_nonce(&test(&m), &session, &nonce).await.unwrap(), None, "scoped");
    assert_eq!(f.store.relay_for_nonce(&live(&m), &other, &nonce).await.unwrap(), None, "scoped by checkout");
    assert_eq!(
        f.store.get_relay(&test(&m), &session, &first.id).await.unwrap_err(),
        Error::NotFound(Resource::RelayedAuthorization)
    );
    assert_eq!(f.store.get_relay(&live(&m), &session, &first.id).await.unwrap(), first);
    assert!(f.store.relay_in_flight(&live(&m), &session).await.unwrap().is_some());
    assert!(f.store.has_work(&relayer).await.unwrap());

    // One holder at a time.
    assert_eq!(f.store.take_lease(&relayer, "a", 30).await.unwrap(), Some(0));
    assert_eq!(f.store.take_lease(&relayer, "b", 30).await.unwrap(), None);
    assert_eq!(f.store.take_lease(&relayer, "a", 30).await.unwrap(), Some(0), "renewed by its holder");

    let version = |n: u8, nonce: u64| RelayTransaction {
        hash: TxHash::parse(&format!("0x{}", format!("{n:02x}").repeat(32))).unwrap(),
        raw: vec![2, n],
        fees: Fees { max_fee_per_gas: 100 + u128::from(n), max_priority_fee_per_gas: 2 },
        signed_at: now() + chrono::Duration::milliseconds(i64::from(n) + i64::try_from(nonce).unwrap()),
    };
    assert!(!f.store.record_first(&first.id, "b", (0, 0), &version(10, 0)).await.unwrap(), "not the holder");
    // Two records of nonce 0 at once: exactly one is written.
    let (v11, v12) = (version(11, 0), version(12, 0));
    let (x, y) = tokio::join!(
        f.store.record_first(&first.id, "a", (0, 0), &v11),
        f.store.record_first(&second.id, "a", (0, 0), &v12),
    );
    assert_eq!(u8::from(x.unwrap()) + u8::from(y.unwrap()), 1, "nonce 0 handed out once");
    let queued = f.store.queued(&relayer, 10).await.unwrap();
    assert_eq!(queued.len(), 1);
    let waiting = queued[0].id.clone();
    assert!(!f.store.record_first(&waiting, "a", (0, 1), &version(13, 1)).await.unwrap(), "the next nonce moved");
    assert!(f.store.record_first(&waiting, "a", (1, 1), &version(13, 1)).await.unwrap());
    let flying = f.store.in_flight(&relayer, 10).await.unwrap();
    assert_eq!(flying.iter().map(|r| r.tx_nonce).collect::<Vec<_>>(), vec![Some(0), Some(1)]);
    assert!(flying.iter().all(|r| r.status == RelayStatus::Sent && r.transactions.len() == 1));
    assert_eq!(f.store.take_lease(&relayer, "a", 30).await.unwrap(), Some(2));

    // A replacement under the same nonce, then the outcome.
    let mut mined = flying[0].clone();
    let replacement = version(14, mined.tx_nonce.unwrap());
    assert!(
        f.store
            .record_broadcast(&mined.id, "a", &Rebroadcast { at: Utc::now(), replacement: Some(replacement.clone()) })
            .await
            .unwrap()
    );
    assert!(
        !f.store.record_broadcast(&mined.id, "b", &Rebroadcast { at: Utc::now(), replacement: None }).await.unwrap(),
        "not the holder"
    );
    let versions = f.store.get_relay(&live(&m), &session, &mined.id).await.unwrap().transactions;
    assert_eq!(versions.last(), Some(&replacement));
    mined.status = RelayStatus::Confirmed;
    mined.receipt = Some(RelayReceipt {
        hash: replacement.hash.clone(),
        succeeded: true,
        block_number: 9,
        gas_used: 61_000,
        fee_wei: 61_000 * 50,
    });
    assert!(!f.store.record_outcome(&mined, "b").await.unwrap(), "not the holder");
    assert!(f.store.record_outcome(&mined, "a").await.unwrap());
    assert_eq!(f.store.in_flight(&relayer, 10).await.unwrap().len(), 1);
    let usage = f.store.usage(&relayer, day_start(Utc::now())).await.unwrap();
    assert_eq!((usage.gas, usage.spent_wei, usage.confirmed, usage.in_flight), (61_000 + 85_000, 61_000 * 50, 1, 1));
    let names = |values: Vec<&str>| values.into_iter().map(str::to_owned).collect::<BTreeSet<_>>();
    assert_eq!(
        f.check_values("relayed_authorizations_status_check").await,
        names(RelayStatus::ALL.map(RelayStatus::as_str).to_vec())
    );
}
