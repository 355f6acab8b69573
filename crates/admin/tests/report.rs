//! The report against a real PostgreSQL: records made by the domain's own use cases, read
//! back through the ports, judged at the merchant's (test) clock.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use chrono::{Duration, Utc};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::input::{CheckoutInput, TestPaymentInput};
use stablepay_domain::invoice::model::{InvoiceContent, LineItem};
use stablepay_domain::invoice::service::Invoices;
use stablepay_domain::invoice::validate::DraftInput;
use stablepay_domain::merchant::ports::MerchantStore;
use stablepay_domain::merchant::{ChainSettings, service as merchants};
use stablepay_domain::money::Decimal6;
use stablepay_domain::ports::MockChain;
use stablepay_domain::testing::SeqCrypto;
use stablepay_domain::{Mode, Scope};
use stablepay_postgres::{PgClock, PgStore, PoolSettings};
use stablepay_test_db::TestDb;

fn d(text: &str) -> Decimal6 {
    Decimal6::parse(text).unwrap()
}

#[tokio::test]
async fn open_invoices_and_overdue_amounts_follow_the_domain_rules() {
    let db = TestDb::new(|url| async move {
        stablepay_postgres::run_migrations(&url).await.map(|_| ()).map_err(|e| e.to_string())
    })
    .await;
    let store = PgStore::connect(&db.url(), &PoolSettings { max_size: 4, ..Default::default() }).unwrap();
    let clock = PgClock::new(store.clone());
    let crypto = SeqCrypto::default();
    let (chain, settings) = (MockChain::new(), ChainSettings::default());
    let invoices = Invoices::new(&store, &crypto, &clock, (&chain, &settings));
    let m = merchants::new_merchant(&crypto, Utc::now(), "Shop", None, Default::default()).unwrap();
    store.insert_merchant(&m).await.unwrap();
    let scope = Scope::new(m.id.clone(), Mode::Test);

    // Issued, due in two days: 10.
    let line = LineItem { id: None, sku: None, description: "Audit".into(), quantity: d("2"), unit_amount: d("5") };
    let content =
        InvoiceContent { lines: vec![line], due_at: Some(Utc::now() + Duration::days(2)), ..Default::default() };
    let due =
        invoices.create_invoice(&m, &scope, DraftInput { content, ..Default::default() }, true, false).await.unwrap();
    // A checkout of 5 with 2 paid: 3 remain, no due date.
    let partial = invoices
        .create_checkout(&m, &scope, CheckoutInput { amount: Some(d("5")), ..Default::default() })
        .await
        .unwrap();
    let pay = TestPaymentInput { amount: Some(d("2")), transaction_hash: None, succeed: true };
    invoices.pay_test(&scope, &partial.sessions[0].id, pay).await.unwrap();
    // Not collectible: a draft, and a paid checkout.
    let line = LineItem { id: None, sku: None, description: "Later".into(), quantity: d("1"), unit_amount: d("7") };
    let draft =
        DraftInput { content: InvoiceContent { lines: vec![line], ..Default::default() }, ..Default::default() };
    invoices.create_invoice(&m, &scope, draft, false, false).await.unwrap();
    let paid = invoices
        .create_checkout(&m, &scope, CheckoutInput { amount: Some(d("4")), ..Default::default() })
        .await
        .unwrap();
    let full = TestPaymentInput { amount: None, transaction_hash: None, succeed: true };
    invoices.pay_test(&scope, &paid.sessions[0].id, full).await.unwrap();

    let report = stablepay_admin::open_invoices(&store, &clock, &scope).await.unwrap();
    assert_eq!(report.invoices.len(), 2, "{report:#?}");
    assert_eq!(report.outstanding, d("13"));
    assert_eq!(report.overdue, d("0"));

    // Three days later at the merchant's clock (the due work marks it past due): 10 overdue.
    invoices.advance_test_clock(&scope, 3 * 86_400).await.unwrap();
    let report = stablepay_admin::open_invoices(&store, &clock, &scope).await.unwrap();
    assert_eq!(report.outstanding, d("13"));
    assert_eq!(report.overdue, d("10"));
    let late = report.invoices.iter().find(|i| i.id == due.invoice.id.to_string()).unwrap();
    assert_eq!(late.state, CollectionState::PastDue);
    assert_eq!(late.days_overdue, 1);
    assert_eq!(late.number.as_deref(), due.invoice.number.as_deref());
    let rest = report.invoices.iter().find(|i| i.id == partial.invoice.id.to_string()).unwrap();
    assert_eq!((rest.state, rest.remaining.clone()), (CollectionState::PartiallyPaid, d("3")));
    // The live mode has none of these.
    let live = stablepay_admin::open_invoices(&store, &clock, &Scope::new(m.id.clone(), Mode::Live)).await.unwrap();
    assert!(live.invoices.is_empty());

    // The binary prints the same report.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_stablepay-admin"))
        .args(["open-invoices", "--merchant", m.id.as_str(), "--mode", "test"])
        .env("DATABASE_URL", db.url())
        .output()
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text} {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.contains("outstanding 13.000000") && text.contains("overdue     10.000000"), "{text}");
    assert!(text.contains(due.invoice.number.as_deref().unwrap()), "{text}");
    // Usage errors are clear.
    let bad = tokio::process::Command::new(env!("CARGO_BIN_EXE_stablepay-admin"))
        .args(["open-invoices", "--merchant", "nobody"])
        .env("DATABASE_URL", db.url())
        .output()
        .await
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("--merchant must be a merchant id"));
}
