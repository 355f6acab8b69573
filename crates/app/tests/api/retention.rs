//! Retention against the real binary: the worker purges events (with their webhook deliveries
//! and attempts) past their retention in the scope's time, so a merchant's test clock ages its
//! test-mode events; finished emails past theirs, except a collectible invoice's scheduled
//! reminders; invoices and payments stay; another merchant's records are untouched.

use std::time::Duration;

use serde_json::{Value, json};

use crate::receiver::{Receiver, Reply};
use crate::support::{TestApp, fresh_db};

async fn count(app: &TestApp, sql: &str) -> i64 {
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.query(sql, &[]).await.unwrap()[0].get::<_, i64>(0)
}

async fn sql(app: &TestApp, statement: &str) {
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.batch_execute(statement).await.unwrap();
    crate::support::wake_the_worker(&app.db).await;
}

/// Waits (up to 20 s) until `done` answers true.
async fn until(what: &str, mut done: impl AsyncFnMut() -> bool) {
    for _ in 0..200 {
        if done().await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{what} did not happen within 20 s");
}

fn ids(list: &Value) -> Vec<String> {
    list["items"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()).collect()
}

#[tokio::test]
async fn events_and_emails_past_their_retention_are_purged_and_invoices_stay() {
    let dir = crate::emails::tempdir::Dir::new("stablepay-retention");
    let env = [
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_EMAIL_DIR", dir.0.to_string_lossy().into_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let (a, b) = (app.merchant("Aged"), app.merchant("Young"));
    let rx = Receiver::start().await;
    rx.answer(Reply::Status(200));
    app.post(&a.sk_test, "/v1/webhook-endpoints", json!({ "url": rx.url("/a") })).await.ok(201);
    let mut paid = Vec::new();
    for m in [&a, &b] {
        let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "3.00" })).await.ok(201).clone();
        let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
        app.post(&m.sk_test, &pay, json!({})).await.ok(201);
        paid.push(cs["invoiceId"].as_str().unwrap().to_owned());
    }
    let old_a = ids(app.get(&a.sk_test, "/v1/events?limit=100").await.ok(200));
    let old_b = ids(app.get(&b.sk_test, "/v1/events?limit=100").await.ok(200));
    assert!(!old_a.is_empty() && !old_b.is_empty());
    until("A's deliveries", async || {
        count(&app, "SELECT count(*) FROM webhook_deliveries WHERE status = 'delivered'").await >= 1
    })
    .await;
    let deliveries = count(&app, "SELECT count(*) FROM webhook_deliveries").await;
    assert!(deliveries >= 1 && count(&app, "SELECT count(*) FROM webhook_attempts").await >= 1);

    // A's test clock moves 91 days on: its test-mode events are past the 90-day retention.
    app.post(&a.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 91 * 86_400 })).await.ok(200);
    let first = old_a[0].clone();
    until("A's old events purged", async || app.get(&a.sk_test, &format!("/v1/events/{first}")).await.status == 404)
        .await;
    for id in &old_a {
        app.get(&a.sk_test, &format!("/v1/events/{id}")).await.assert_error(404, "NOT_FOUND");
    }
    assert_eq!(count(&app, "SELECT count(*) FROM webhook_deliveries").await, 0, "their deliveries went with them");
    assert_eq!(count(&app, "SELECT count(*) FROM webhook_attempts").await, 0, "and their attempts");
    // B's clock did not move: its events stay. Invoices and payments of both stay.
    for id in &old_b {
        app.get(&b.sk_test, &format!("/v1/events/{id}")).await.ok(200);
    }
    let inv = app.get(&a.sk_test, &format!("/v1/invoices/{}", paid[0])).await.ok(200).clone();
    assert_eq!((inv["collectionState"].as_str(), inv["payments"].as_array().map(Vec::len)), (Some("paid"), Some(1)));
    app.get(&b.sk_test, &format!("/v1/invoices/{}", paid[1])).await.ok(200);
    assert!(app.logs().contains("records past their retention removed"), "the worker says what it removed");
}

#[tokio::test]
async fn finished_emails_go_but_a_collectible_invoices_sent_reminders_stay() {
    let dir = crate::emails::tempdir::Dir::new("stablepay-retention-emails");
    let env = [
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
        ("STABLEPAY_EMAIL_DIR", dir.0.to_string_lossy().into_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let body = json!({ "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": "4" }],
                       "customer": { "email": "ada@example.com" }, "issue": true });
    let mut invoices = Vec::new();
    for _ in 0..2 {
        let inv = app.post(&m.sk_test, "/v1/invoices", body.clone()).await.ok(201)["id"].as_str().unwrap().to_owned();
        app.post(&m.sk_test, &format!("/v1/invoices/{inv}/send"), json!({})).await.ok(202);
        invoices.push(inv);
    }
    until("the emails sent", async || count(&app, "SELECT count(*) FROM emails WHERE status = 'sent'").await == 2)
        .await;
    // Both emails are 100 days old; the second stands for a scheduled reminder of an invoice
    // still open (its row tells the reminder pass the slot was sent).
    // One batch, so one transaction: aged apart from the reminder's slot, the worker could
    // purge both rows in between.
    let reminder =
        format!("UPDATE emails SET slot = 'schedule:after:1', kind = 'reminder' WHERE invoice_id = '{}'", invoices[1]);
    sql(&app, &format!("{reminder}; UPDATE emails SET created_at = now() - interval '100 days'")).await;
    until("the finished invoice email purged", async || count(&app, "SELECT count(*) FROM emails").await == 1).await;
    let left = count(&app, &format!("SELECT count(*) FROM emails WHERE invoice_id = '{}'", invoices[1])).await;
    assert_eq!(left, 1, "the open invoice's sent reminder stays");
    // Once the invoice is closed, its reminder may go too.
    app.post(&m.sk_test, &format!("/v1/invoices/{}/void", invoices[1]), json!({ "reason": "cancelled" })).await.ok(200);
    // Retention has no due time of its own: an idle worker purges at least every minute; the
    // test does not wait that long.
    crate::support::wake_the_worker(&app.db).await;
    until("the closed invoice's reminder purged", async || count(&app, "SELECT count(*) FROM emails").await == 0).await;
    for inv in &invoices {
        app.get(&m.sk_test, &format!("/v1/invoices/{inv}")).await.ok(200);
    }
}

#[tokio::test]
async fn idempotency_keys_are_kept_their_24_hours_then_purged() {
    let env = [("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    for key in ["young", "old"] {
        let req =
            app.http.post(app.url("/v1/checkout-sessions")).bearer_auth(&m.sk_test).header("Idempotency-Key", key);
        app.send(req.json(&json!({ "amount": "1.00" }))).await.ok(201);
    }
    sql(&app, "UPDATE idempotency_keys SET created_at = now() - interval '23 hours' WHERE key = 'young'").await;
    sql(&app, "UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = 'old'").await;
    until("the old key purged", async || {
        count(&app, "SELECT count(*) FROM idempotency_keys WHERE key = 'old'").await == 0
    })
    .await;
    assert_eq!(count(&app, "SELECT count(*) FROM idempotency_keys WHERE key = 'young'").await, 1, "within its window");
    // The young key still replays its one result.
    let req =
        app.http.post(app.url("/v1/checkout-sessions")).bearer_auth(&m.sk_test).header("Idempotency-Key", "young");
    let again = app.send(req.json(&json!({ "amount": "1.00" }))).await;
    assert_eq!(again.header("idempotency-replayed"), Some("true"));
}

/// A whole month of events past retention goes at once, its deliveries and attempts with it,
/// when a worker looks after the months (at its first pass, then each minute); this month's
/// events, and the invoices, stay.
#[tokio::test]
async fn a_worker_drops_a_whole_month_of_events_past_retention() {
    let env =
        [("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()), ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    rx.answer(Reply::Status(200));
    app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": rx.url("/months") })).await.ok(201);
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "3.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    let recent = ids(app.get(&m.sk_test, "/v1/events?limit=100").await.ok(200));
    // An event stored in January 2026, as a deployment running then would have: its month is
    // made, and the event fanned out to the endpoint like any other.
    sql(
        &app,
        &format!(
            "SELECT stablepay_prepare_month('2026-01-01');
             INSERT INTO events (id, merchant_id, mode, type, data, created_at, stored_at)
             SELECT 'evt_january000000000000000', merchant_id, mode, type, data, '2026-01-10', '2026-01-10'
             FROM events WHERE id = '{}'",
            recent[0]
        ),
    )
    .await;
    app.get(&m.sk_test, "/v1/events/evt_january000000000000000").await.ok(200);
    until("January's delivery and the rest delivered", async || {
        count(&app, "SELECT count(*) FROM webhook_deliveries WHERE status <> 'delivered'").await == 0
    })
    .await;
    assert_eq!(count(&app, "SELECT count(*) FROM webhook_attempts_y2026m01").await, 1);
    // Many worker passes later, the row-by-row purge has left it to its month.
    app.get(&m.sk_test, "/v1/events/evt_january000000000000000").await.ok(200);

    // Another process's worker, at its first pass: January ended more than 90 days ago.
    let (_, _sibling) = app.sibling(&env).await;
    until("January dropped", async || {
        count(&app, "SELECT count(*) FROM pg_class WHERE relname LIKE '%\\_y2026m01'").await == 0
    })
    .await;
    app.get(&m.sk_test, "/v1/events/evt_january000000000000000").await.assert_error(404, "NOT_FOUND");
    for id in &recent {
        app.get(&m.sk_test, &format!("/v1/events/{id}")).await.ok(200);
    }
    let deliveries = app.get(&m.sk_test, "/v1/webhook-deliveries?limit=100").await.ok(200).clone();
    assert_eq!(deliveries["items"].as_array().unwrap().len(), recent.len(), "this month's deliveries stay");
    app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200);
    assert!(app.logs().contains("months of events past their retention dropped"), "the worker says so");
}
