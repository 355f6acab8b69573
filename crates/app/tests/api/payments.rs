//! Payments in test mode, idempotency, time-based transitions and the hosted pages.

use std::collections::HashSet;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{Merchant, TestApp, count_by};

async fn checkout(app: &TestApp, m: &Merchant, amount: &str) -> Value {
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": amount})).await.ok(201).clone()
}

fn pay_path(cs: &Value) -> String {
    format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap())
}

async fn invoice_of(app: &TestApp, m: &Merchant, cs: &Value) -> Value {
    app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone()
}

#[tokio::test]
async fn overpaid_failed_and_duplicate_payments() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");

    // Over the total: overpaid, with overpaymentAmount and invoice.overpaid.
    let cs = checkout(&app, &m, "10").await;
    let p = app.post(&m.sk_test, &pay_path(&cs), json!({"amount": "12.5"})).await.ok(201).clone();
    assert_eq!(p["status"], "overpaid");
    assert_eq!(p["amountExpected"], "10.000000");
    assert_eq!(p["amountReceived"], "12.500000");
    assert_eq!(p["chainId"], 137);
    assert_eq!(p["settlementWalletAddress"], cs["settlementWalletAddress"]);
    let inv = invoice_of(&app, &m, &cs).await;
    assert_eq!(inv["collectionState"], "paid");
    assert_eq!(inv["status"], "overpaid");
    assert_eq!(inv["overpaymentAmount"], "2.500000");
    let session =
        app.get(&m.sk_test, &format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(session["overpaymentAmount"], "2.500000");
    assert_eq!(session["merchantAmountSettled"], "12.500000");

    // A failed transfer is recorded but never credited.
    let cs2 = checkout(&app, &m, "4").await;
    let failed = app.post(&m.sk_test, &pay_path(&cs2), json!({"outcome": "failed"})).await.ok(201).clone();
    assert_eq!(failed["status"], "failed");
    assert_eq!(failed["failureReason"], "transaction_reverted");
    assert_eq!(failed["customerAmountCredited"], "0.000000");
    let inv2 = invoice_of(&app, &m, &cs2).await;
    assert_eq!(inv2["customerAmountPaid"], "0.000000");
    assert_eq!(inv2["status"], "failed");
    assert_eq!(inv2["collectionState"], "open");

    // A hash already credited (to any invoice of this merchant and mode) is a duplicate, never
    // credited twice. Test-mode hashes are simulated: another merchant's are its own.
    let hash = format!("0x{}", "7f".repeat(32));
    let first = app.post(&m.sk_test, &pay_path(&cs2), json!({"transactionHash": hash})).await.ok(201).clone();
    assert_eq!(first["status"], "confirmed");
    let cs3 = checkout(&app, &m, "4").await;
    let dup = app
        .post(&m.sk_test, &pay_path(&cs3), json!({"transactionHash": hash.to_uppercase().replace("0X", "0x")}))
        .await
        .ok(201)
        .clone();
    assert_eq!(dup["status"], "duplicate");
    assert_eq!(dup["customerAmountCredited"], "0.000000");
    let other = app.merchant("Other");
    let cs4 = checkout(&app, &other, "4").await;
    let theirs = app.post(&other.sk_test, &pay_path(&cs4), json!({"transactionHash": hash})).await.ok(201).clone();
    assert_eq!(theirs["status"], "confirmed");
    assert_eq!(invoice_of(&app, &m, &cs3).await["customerAmountPaid"], "0.000000");

    // Input errors of the helper.
    let res = app.post(&m.sk_test, &pay_path(&cs3), json!({"transactionHash": "0x12"})).await;
    assert_eq!(res.assert_error(400, "INVALID_TX_HASH").as_deref(), Some("transactionHash"));
    let res = app.post(&m.sk_test, &pay_path(&cs3), json!({"outcome": "maybe"})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("outcome"));
    let res = app.post(&m.sk_test, &pay_path(&cs3), json!({"amount": "0"})).await;
    assert_eq!(res.assert_error(400, "INVALID_AMOUNT").as_deref(), Some("amount"));
    app.post(&m.sk_test, "/v1/test-helpers/checkout-sessions/cs_nope/payments", json!({}))
        .await
        .assert_error(404, "NOT_FOUND");
    // A paid checkout takes no more payments.
    app.post(&m.sk_test, &pay_path(&cs), json!({})).await.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE");

    let events = app.get(&m.sk_test, "/v1/events?limit=100").await.ok(200).clone();
    let types = count_by(events["items"].as_array().unwrap(), "type");
    assert_eq!(types.get("invoice.overpaid"), Some(&1));
    assert_eq!(types.get("payment.overpaid"), Some(&1));
    assert_eq!(types.get("payment.failed"), Some(&1));
    let failed_event = events["items"].as_array().unwrap().iter().find(|e| e["type"] == "payment.failed").unwrap();
    assert_eq!(failed_event["data"]["id"], failed["id"]);
    // Exactly as many payments credited as the database holds (no double credit).
    let rows = app
        .db
        .query(&format!(
            "SELECT count(*) AS n FROM payments WHERE status IN ('confirmed','overpaid','underpaid') AND merchant_id = '{}'",
            m.id
        ))
        .await;
    assert_eq!(rows[0].get::<_, i64>("n"), 2);
}

#[tokio::test]
async fn idempotent_replays_and_conflicts() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let body = json!({"amount": "3", "externalReference": "once"});
    let first = app.post_idem(&m.sk_test, "/v1/checkout-sessions", "key-1", body.clone()).await;
    let data = first.ok(201).clone();
    assert!(first.header("idempotency-replayed").is_none());
    let replay = app.post_idem(&m.sk_test, "/v1/checkout-sessions", "key-1", body.clone()).await;
    assert_eq!(replay.status.as_u16(), 201);
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(replay.body, first.body);
    assert_eq!(replay.header("x-request-id"), first.header("x-request-id"));
    assert_eq!(replay.body["data"]["id"], data["id"]);
    // Changed body, same key: conflict.
    let res = app.post_idem(&m.sk_test, "/v1/checkout-sessions", "key-1", json!({"amount": "4"})).await;
    res.assert_error(409, "IDEMPOTENCY_KEY_CONFLICT");
    // Keys are per merchant and mode.
    let other = app.merchant("Other");
    app.post_idem(&other.sk_test, "/v1/checkout-sessions", "key-1", body.clone()).await.ok(201);
    // Badly formed keys.
    for bad in ["", "has space", &"k".repeat(256), "naïve"] {
        let res = app
            .request(
                Method::POST,
                "/v1/checkout-sessions",
                Some(&m.sk_test),
                &[("Content-Type", "application/json"), ("Idempotency-Key", bad)],
                Some(body.to_string().into_bytes()),
            )
            .await;
        if bad == "naïve" {
            // Not representable as a visible-ASCII header value at all: refused either way.
            assert!(res.status.is_client_error());
            continue;
        }
        assert_eq!(res.assert_error(400, "INVALID_IDEMPOTENCY_KEY").as_deref(), Some("Idempotency-Key"), "{bad:?}");
    }
    app.post_idem(&m.sk_test, "/v1/checkout-sessions", &"k".repeat(255), body.clone()).await.ok(201);
    // Errors are replayed too (same status and body), and nothing is created.
    let bad = app.post_idem(&m.sk_test, "/v1/invoices", "key-2", json!({"lines": []})).await;
    bad.assert_error(400, "VALIDATION_ERROR");
    let rows = app.db.query("SELECT count(*) AS n FROM invoices").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 3);
}

#[tokio::test]
async fn fifty_concurrent_identical_requests_create_one_resource() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let body = json!({"amount": "8", "externalReference": "burst"});
    let tasks = (0..50).map(|_| app.post_idem(&m.sk_test, "/v1/checkout-sessions", "burst-key", body.clone()));
    let results = futures_join_all(tasks).await;
    let mut ids = HashSet::new();
    for r in &results {
        match r.status.as_u16() {
            201 => {
                ids.insert(r.body["data"]["id"].as_str().unwrap().to_owned());
            }
            409 => {
                assert_eq!(r.body["error"]["code"], "IDEMPOTENCY_KEY_CONFLICT");
                assert_eq!(r.body["error"]["details"]["reason"], "in_progress");
                assert_eq!(r.header("retry-after"), Some("1"));
            }
            other => panic!("unexpected {other}: {}", r.body),
        }
    }
    assert_eq!(ids.len(), 1, "every success names the same session");
    let rows = app.db.query("SELECT count(*) AS n FROM checkout_sessions").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 1);
    let rows = app.db.query("SELECT count(*) AS n FROM invoices").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 1);
}

async fn futures_join_all<F: std::future::Future>(futures: impl Iterator<Item = F>) -> Vec<F::Output> {
    let handles: Vec<_> = futures.collect();
    let mut out = Vec::with_capacity(handles.len());
    // Poll them concurrently on this task.
    let mut pinned: Vec<_> = handles.into_iter().map(Box::pin).collect();
    let mut done: Vec<Option<F::Output>> = (0..pinned.len()).map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if done[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => done[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending { std::task::Poll::Pending } else { std::task::Poll::Ready(()) }
    })
    .await;
    out.extend(done.into_iter().flatten());
    out
}

#[tokio::test]
async fn the_test_clock_expires_checkouts_and_marks_past_due() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = checkout(&app, &m, "5").await;
    let due = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let inv = app
        .post(&m.sk_test, "/v1/invoices", json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "9"}], "dueAt": due, "issue": true, "checkoutExpiresInMinutes": 1440}))
        .await
        .ok(201)
        .clone();
    let inv_cs = inv["checkout"]["checkoutSessionId"].as_str().unwrap().to_owned();
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{inv_cs}/payments"), json!({"amount": "1"}))
        .await
        .ok(201);

    for bad in [json!({"seconds": 0}), json!({"seconds": -5}), json!({"seconds": "60"}), json!({})] {
        let res = app.post(&m.sk_test, "/v1/test-helpers/clock/advance", bad.clone()).await;
        assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("seconds"), "{bad}");
    }
    // 31 minutes: the 30-minute checkout expires, and its unpaid invoice with it.
    let adv = app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({"seconds": 31 * 60})).await.ok(200).clone();
    assert_eq!(adv["offsetSeconds"], 31 * 60);
    assert_eq!(adv["transitionsRun"], 1);
    let session =
        app.get(&m.sk_test, &format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(session["status"], "expired");
    let expired = invoice_of(&app, &m, &cs).await;
    assert_eq!(expired["status"], "expired");
    assert_eq!(expired["collectionState"], "open");
    app.post(&m.sk_test, &pay_path(&cs), json!({})).await.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE");
    // A new checkout for the remainder reopens it.
    let rem = app
        .post(&m.sk_test, &format!("/v1/invoices/{}/checkout-sessions", cs["invoiceId"].as_str().unwrap()), json!({}))
        .await
        .ok(201)
        .clone();
    assert_eq!(rem["amount"], "5.000000");
    assert_eq!(invoice_of(&app, &m, &cs).await["status"], "pending");

    // Past the due date: the partially paid invoice becomes past_due, once.
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({"seconds": 2 * 3600})).await.ok(200);
    let pd = app.get(&m.sk_test, &format!("/v1/invoices/{}", inv["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(pd["collectionState"], "past_due");
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({"seconds": 60})).await.ok(200);
    let events = app.get(&m.sk_test, "/v1/events?limit=100").await.ok(200).clone();
    let types = count_by(events["items"].as_array().unwrap(), "type");
    // The first checkout expired, and so did the remainder checkout opened after it.
    assert_eq!(types.get("invoice.expired"), Some(&2));
    assert_eq!(types.get("invoice.past_due"), Some(&1));
    // Another merchant's clock did not move.
    let other = app.merchant("Other");
    let cs_other = checkout(&app, &other, "1").await;
    let fresh = app
        .get(&other.sk_test, &format!("/v1/checkout-sessions/{}", cs_other["id"].as_str().unwrap()))
        .await
        .ok(200)
        .clone();
    assert_eq!(fresh["status"], "pending");
    let live_adv = app.post(&m.sk_live, "/v1/test-helpers/clock/advance", json!({"seconds": 60})).await;
    live_adv.assert_error(403, "API_KEY_FORBIDDEN");
}

#[tokio::test]
async fn the_worker_expires_checkouts_on_its_own() {
    let db = crate::support::fresh_db().await;
    let app = TestApp::spawn_with(db, &[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned())], &[]).await;
    let m = app.merchant("Shop");
    let cs = checkout(&app, &m, "5").await;
    // Move the expiry into the past directly in the database, as real time would.
    app.db
        .query(&format!(
            "UPDATE checkout_sessions SET expires_at = now() - interval '1 second' WHERE id = '{}'",
            cs["id"].as_str().unwrap()
        ))
        .await;
    crate::support::wake_the_worker(&app.db).await;
    let mut status = String::new();
    for _ in 0..100 {
        let s =
            app.get(&m.sk_test, &format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap())).await.ok(200).clone();
        status = s["status"].as_str().unwrap().to_owned();
        if status == "expired" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(status, "expired");
    assert_eq!(invoice_of(&app, &m, &cs).await["status"], "expired");
}

#[tokio::test]
async fn hosted_checkout_page_simulates_payments_without_javascript() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = checkout(&app, &m, "10").await;
    let url = cs["checkoutUrl"].as_str().unwrap();
    let page = app.http.get(url).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    let html = page.text().await.unwrap();
    for needle in ["10.00", "USDC", "Polygon (chain 137)", "Simulate a payment", "<form", "partial", "Test mode"] {
        assert!(html.contains(needle), "page lacks {needle}");
    }
    let wallet = cs["settlementWalletAddress"].as_str().unwrap();
    assert!(!html.to_lowercase().contains(&wallet.to_lowercase()), "a test page shows no settlement address");
    // The page works without JavaScript: its only script is the optional enhancement.
    assert_eq!(html.matches("<script").count(), 1);
    assert!(html.contains("<script src=\"/assets/pages.js\" defer></script>"));
    let no_redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    // As a browser posts the page's form: with the page's origin.
    let posted = no_redirect
        .post(format!("{url}/simulate"))
        .header("Origin", &app.base)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("outcome=partial")
        .send()
        .await
        .unwrap();
    assert_eq!(posted.status().as_u16(), 303);
    let inv = invoice_of(&app, &m, &cs).await;
    assert_eq!(inv["collectionState"], "partially_paid");
    assert_eq!(inv["customerAmountPaid"], "5.000000");
    no_redirect.post(format!("{url}/simulate")).header("Origin", &app.base).body("outcome=full").send().await.unwrap();
    let inv = invoice_of(&app, &m, &cs).await;
    assert_eq!(inv["collectionState"], "paid");
    let html = app.http.get(url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Paid") && !html.contains("Simulate a payment"));
    let missing = app.http.get(format!("{}/checkout/cs_nothere", app.base)).send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    // Live checkouts have no simulate form.
    app.activate(&m, "USDC");
    let live = app.post(&m.sk_live, "/v1/checkout-sessions", json!({"amount": "1"})).await.ok(201).clone();
    let html = app.http.get(live["checkoutUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(!html.contains("Simulate a payment") && !html.contains("Test mode"));
    let refused = no_redirect
        .post(format!("{}/simulate", live["checkoutUrl"].as_str().unwrap()))
        .header("Origin", &app.base)
        .body("outcome=full")
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status().as_u16(), 404);
}

#[tokio::test]
async fn several_workers_apply_each_transition_once() {
    let db = crate::support::fresh_db().await;
    let app = TestApp::spawn_with(db, &[("STABLEPAY_WORKER_INTERVAL_MS", "20".to_owned())], &[]).await;
    let m = app.merchant("Shop");
    let mut ids = Vec::new();
    for i in 0..30 {
        let cs = app
            .post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": format!("{}.5", i + 1)}))
            .await
            .ok(201)
            .clone();
        ids.push(cs["invoiceId"].as_str().unwrap().to_owned());
    }
    // Two more worker processes beside the server's own.
    let workers: Vec<_> = (0..2)
        .map(|_| {
            tokio::process::Command::new(crate::support::BIN)
                .arg("worker")
                .env("DATABASE_URL", app.db.url())
                .env("STABLEPAY_METRICS_BIND", "127.0.0.1:0")
                .env("STABLEPAY_WORKER_INTERVAL_MS", "20")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap()
        })
        .collect();
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    app.db.query("UPDATE checkout_sessions SET expires_at = now() - interval '1 second'").await;
    crate::support::wake_the_worker(&app.db).await;
    let mut expired = 0;
    for _ in 0..150 {
        let rows = app.db.query("SELECT count(*) AS n FROM invoices WHERE status = 'expired'").await;
        expired = rows[0].get::<_, i64>("n");
        if expired == 30 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(expired, 30);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let rows = app
        .db
        .query("SELECT count(*) AS n, count(DISTINCT data->>'id') AS d FROM events WHERE type = 'invoice.expired'")
        .await;
    assert_eq!(rows[0].get::<_, i64>("n"), 30, "exactly one invoice.expired per invoice");
    assert_eq!(rows[0].get::<_, i64>("d"), 30);
    drop(workers);
    // The events page through without gaps or duplicates.
    let mut seen = HashSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            None => "/v1/events?type=invoice.expired&limit=7".to_owned(),
            Some(c) => format!("/v1/events?type=invoice.expired&limit=7&startingAfter={c}"),
        };
        let page = app.get(&m.sk_test, &q).await.ok(200).clone();
        for e in page["items"].as_array().unwrap() {
            assert!(seen.insert(e["id"].as_str().unwrap().to_owned()), "duplicate across pages");
        }
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => break,
        }
    }
    assert_eq!(seen.len(), 30);
}
