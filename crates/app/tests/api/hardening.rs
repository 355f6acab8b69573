//! What a security and reliability probe broke, each kept broken-no-more by a test: clients that
//! hang up, slow bodies, runaway test clocks, transaction hashes across merchants, idempotency
//! namespaces, NUL characters, unbounded invoices, concurrent test payments, hosted-page
//! headers.

use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::TestApp;

/// Writes a raw HTTP/1.1 request on a new connection and returns the open stream.
async fn raw_request(app: &TestApp, head: &str, body: &[u8]) -> TcpStream {
    let addr = app.base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream
}

fn post_head(app: &TestApp, path: &str, key: &str, idem: Option<&str>, length: usize) -> String {
    let host = app.base.strip_prefix("http://").unwrap();
    let idem = idem.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n{idem}Content-Length: {length}\r\n\r\n"
    )
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    app.db.query(sql).await[0].get::<_, i64>(0)
}

/// H1: a client that hangs up mid-request must not leave its key in progress, and its retry
/// must get the replay of the one execution (never a second checkout). A lock on `invoices`
/// holds every request in flight (claimed, its insert waiting) while its client resets.
#[tokio::test]
async fn a_client_that_hangs_up_gets_the_replay_of_the_one_execution() {
    let pool = [("STABLEPAY_DB_POOL_SIZE", "40".to_string())];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &pool, &[]).await;
    let m = app.merchant("Shop");
    let locker = stablepay_test_db::connect(&app.db.url()).await;
    locker.batch_execute("BEGIN; LOCK TABLE invoices IN SHARE ROW EXCLUSIVE MODE").await.unwrap();
    let n: u32 = 12;
    let mut streams = Vec::new();
    for i in 0..n {
        let body = format!(r#"{{"amount":"10.00","externalReference":"order-{i}"}}"#);
        let head = post_head(&app, "/v1/checkout-sessions", &m.sk_test, Some(&format!("hangup-{i}")), body.len());
        streams.push(raw_request(&app, &head, body.as_bytes()).await);
    }
    let in_progress = "SELECT count(*) FROM idempotency_keys WHERE state = 'in_progress'";
    for _ in 0..100 {
        if count(&app, in_progress).await == i64::from(n) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&app, in_progress).await, i64::from(n), "every request claimed its key and is waiting");
    for stream in streams {
        stream.set_zero_linger().unwrap();
        drop(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    locker.batch_execute("COMMIT").await.unwrap();

    // The work went on without its clients: no claim is left behind (before the fix they stayed
    // in progress for 60 s, with their checkouts committed).
    let mut left = 1;
    for _ in 0..100 {
        left = count(&app, in_progress).await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "claims left in progress by clients that hung up");
    for i in 0..n {
        let body = json!({ "amount": "10.00", "externalReference": format!("order-{i}") });
        let r = app.post_idem(&m.sk_test, "/v1/checkout-sessions", &format!("hangup-{i}"), body).await;
        r.ok(201);
        assert_eq!(r.header("idempotency-replayed"), Some("true"), "the retry of order-{i} executed again");
    }
    let twice = count(
        &app,
        "SELECT count(*) FROM (SELECT external_reference FROM checkout_sessions GROUP BY 1 HAVING count(*) > 1) t",
    )
    .await;
    assert_eq!(twice, 0, "a hung-up request was executed twice");
    assert_eq!(count(&app, "SELECT count(*) FROM checkout_sessions").await, i64::from(n));
}

/// H4: a test-mode transaction hash of one merchant never touches another's payments (and so
/// tells nothing about it); within one merchant a hash is credited once.
#[tokio::test]
async fn test_mode_hashes_belong_to_their_merchant() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.merchant("A"), app.merchant("B"));
    let hash = format!("0x{}", "ab".repeat(32));
    let pay = |key: String, cs: String| {
        let app = &app;
        let hash = hash.clone();
        async move {
            let path = format!("/v1/test-helpers/checkout-sessions/{cs}/payments");
            app.post(&key, &path, json!({ "transactionHash": hash })).await
        }
    };
    let checkout = |key: String| {
        let app = &app;
        async move {
            let r = app.post(&key, "/v1/checkout-sessions", json!({ "amount": "3.00" })).await;
            r.ok(201)["id"].as_str().unwrap().to_owned()
        }
    };
    let first = pay(a.sk_test.clone(), checkout(a.sk_test.clone()).await).await;
    assert_eq!(first.ok(201)["status"], "confirmed");
    let other_merchant = pay(b.sk_test.clone(), checkout(b.sk_test.clone()).await).await;
    assert_eq!(other_merchant.ok(201)["status"], "confirmed", "merchant B's payment must not be a duplicate of A's");
    let again = pay(a.sk_test.clone(), checkout(a.sk_test.clone()).await).await;
    let again = again.ok(201);
    assert_eq!(
        (again["status"].as_str(), again["customerAmountCredited"].as_str()),
        (Some("duplicate"), Some("0.000000"))
    );
}

/// M1: a publishable key (public, in browsers) and the merchant's secret key have separate
/// idempotency namespaces: neither blocks nor reads the other's request.
#[tokio::test]
async fn publishable_and_secret_keys_have_separate_idempotency_keys() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let public = app.post_idem(&m.pk_test, "/v1/checkout-sessions", "order-2001", json!({ "amount": "5.00" })).await;
    let public_id = public.ok(201)["id"].as_str().unwrap().to_owned();
    let backend = json!({ "amount": "5.00", "customerEmail": "buyer@example.com", "metadata": { "order": 2001 } });
    let secret = app.post_idem(&m.sk_test, "/v1/checkout-sessions", "order-2001", backend.clone()).await;
    let data = secret.ok(201);
    assert_eq!(secret.header("idempotency-replayed"), None);
    assert_ne!(data["id"].as_str(), Some(public_id.as_str()));
    assert!(data["platformFee"].is_string(), "the secret-key answer carries the secret-only fields");
    let replay = app.post_idem(&m.sk_test, "/v1/checkout-sessions", "order-2001", backend).await;
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(replay.ok(201)["id"], data["id"]);
    let replay = app.post_idem(&m.pk_test, "/v1/checkout-sessions", "order-2001", json!({ "amount": "5.00" })).await;
    assert_eq!(replay.ok(201)["id"].as_str(), Some(public_id.as_str()));
}

/// M2: a NUL character (U+0000) anywhere a client can put text is a 400 naming the field, and
/// changes nothing (PostgreSQL's text cannot store it; it used to be a 500).
#[tokio::test]
async fn nul_characters_are_refused_naming_the_field() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let nul = "a\u{0}b";
    let cases = [
        ("/v1/checkout-sessions", json!({ "amount": "5.00", "externalReference": nul }), "externalReference"),
        ("/v1/checkout-sessions", json!({ "amount": "5.00", "metadata": { "note": nul } }), "metadata.note"),
        (
            "/v1/invoices",
            json!({ "lines": [{ "description": nul, "quantity": "1", "unitAmount": "1" }] }),
            "lines[0].description",
        ),
        (
            "/v1/invoices",
            json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "memo": nul }),
            "memo",
        ),
    ];
    for (path, body, field) in cases {
        let r = app.post(&m.sk_test, path, body).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field), "{path} {field}");
    }
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5.00" })).await.ok(201).clone();
    let invoice = cs["invoiceId"].as_str().unwrap();
    let r = app.post(&m.sk_test, &format!("/v1/invoices/{invoice}/void"), json!({ "reason": nul })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("reason"));
    let r = app.get(&m.sk_test, "/v1/invoices/INV%00").await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("path"));
    let r = app.get(&m.sk_test, "/v1/invoices?startingAfter=inv_%00").await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("startingAfter"));
    let r = app.get(&m.sk_test, "/v1/events?type=%00").await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("type"));
    // Nothing was written but the one good checkout, and nothing failed inside.
    assert_eq!(count(&app, "SELECT count(*) FROM invoices").await, 1);
    assert!(!app.logs().contains("ERROR"), "{}", app.logs());
}

/// H3: the test clock's total offset is capped (100 years): a test key cannot push time out of
/// range for the service. Another merchant's clock is untouched.
#[tokio::test]
async fn the_test_clock_stops_at_a_hundred_years() {
    let app = TestApp::spawn().await;
    let (a, b) = (app.merchant("A"), app.merchant("B"));
    let theirs = app.post(&b.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
    let ten_years = json!({ "seconds": 316_224_000 });
    let mut offset = 0;
    for _ in 0..9 {
        let r = app.post(&a.sk_test, "/v1/test-helpers/clock/advance", ten_years.clone()).await;
        offset = r.ok(200)["offsetSeconds"].as_i64().unwrap();
    }
    assert_eq!(offset, 9 * 316_224_000);
    let r = app.post(&a.sk_test, "/v1/test-helpers/clock/advance", ten_years).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("seconds"));
    let rest = 3_155_760_000 - offset;
    let r = app.post(&a.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": rest })).await;
    assert_eq!(r.ok(200)["offsetSeconds"], 3_155_760_000i64);
    // Time still works for A, and B's checkout is judged by B's own clock.
    let cs = app.post(&a.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await;
    assert!(cs.ok(201)["expiresAt"].as_str().unwrap().starts_with("21"), "{}", cs.body);
    let id = theirs["id"].as_str().unwrap();
    assert_eq!(app.get(&b.sk_test, &format!("/v1/checkout-sessions/{id}")).await.ok(200)["status"], "pending");
    // A reset sets A's clock back to the real time (and only A's); it can be read, and the
    // reset is idempotent. Live keys and publishable keys cannot touch it.
    let b_ahead = app.post(&b.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 60 })).await;
    assert_eq!(b_ahead.ok(200)["offsetSeconds"], 60);
    assert_eq!(app.get(&a.sk_test, "/v1/test-helpers/clock").await.ok(200)["offsetSeconds"], 3_155_760_000i64);
    for _ in 0..2 {
        let r = app.post(&a.sk_test, "/v1/test-helpers/clock/reset", json!({})).await.ok(200).clone();
        assert_eq!(r["offsetSeconds"], 0);
        assert_eq!(r["transitionsRun"], 0);
        let now = chrono::DateTime::parse_from_rfc3339(r["now"].as_str().unwrap()).unwrap();
        assert!((now.with_timezone(&chrono::Utc) - chrono::Utc::now()).num_seconds().abs() < 60, "{r}");
    }
    assert_eq!(app.get(&b.sk_test, "/v1/test-helpers/clock").await.ok(200)["offsetSeconds"], 60);
    let cs = app.post(&a.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await;
    assert!(cs.ok(201)["expiresAt"].as_str().unwrap().starts_with("20"), "{}", cs.body);
    app.post(&a.sk_live, "/v1/test-helpers/clock/reset", json!({})).await.assert_error(403, "API_KEY_FORBIDDEN");
    app.post(&a.pk_test, "/v1/test-helpers/clock/reset", json!({})).await.assert_error(403, "API_KEY_FORBIDDEN");
    assert!(!app.logs().contains("ERROR"), "{}", app.logs());
}

/// H3: an invoice whose due work fails is backed off and reported, and the worker goes on with
/// the others; readiness and metrics show it.
#[tokio::test]
async fn a_failing_invoice_does_not_stop_the_worker() {
    let env = [("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let mut sessions = Vec::new();
    for _ in 0..3 {
        let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
        sessions.push((cs["id"].as_str().unwrap().to_owned(), cs["invoiceId"].as_str().unwrap().to_owned()));
    }
    let broken = &sessions[1].1;
    app.db.query(&format!("UPDATE invoices SET fields = '\"broken\"' WHERE id = '{broken}'")).await;
    app.db.query("UPDATE checkout_sessions SET expires_at = now() - interval '1 second'").await;
    crate::support::wake_the_worker(&app.db).await;

    for (cs, invoice) in [&sessions[0], &sessions[2]] {
        let mut status = String::new();
        for _ in 0..100 {
            let r = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs}")).await;
            status = r.ok(200)["status"].as_str().unwrap().to_owned();
            if status == "expired" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status, "expired", "{invoice} was not expired while another invoice failed");
    }
    let failed = app
        .db
        .query(&format!(
            "SELECT failures, lease_until > now() + interval '20 seconds' FROM invoice_due_failures f \
             JOIN invoices i ON i.id = f.invoice_id WHERE f.invoice_id = '{broken}'"
        ))
        .await;
    assert_eq!(failed.len(), 1, "the failing invoice was not backed off");
    assert!(failed[0].get::<_, i32>(0) >= 1);
    assert!(failed[0].get::<_, bool>(1), "the backoff lease is longer than a claim's");

    // The status is written when the pass that backed the invoice off ends, a moment after
    // the backoff itself is in the database.
    let mut worker = json!(null);
    for _ in 0..100 {
        worker = app.send(app.http.get(app.url("/readyz"))).await.ok(200)["worker"].clone();
        if worker["itemsFailed"].as_u64().unwrap() >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(worker["itemsFailed"].as_u64().unwrap() >= 1, "{worker}");
    assert_eq!(worker["restarts"], 0);
    let metrics = app.http.get(format!("{}/metrics", app.metrics)).send().await.unwrap().text().await.unwrap();
    assert!(metrics.contains("stablepay_worker_up 1"), "{metrics}");
    assert!(!metrics.contains("stablepay_worker_items_failed_total 0\n"), "{metrics}");
    assert!(app.logs().contains("due work of an invoice failed"));
}

/// Reads until the server closes the connection (or `limit` passes); answers what arrived.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> String {
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(limit, stream.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

/// H2: a body that never finishes is cut at the body deadline with 408 in the envelope, and
/// the connection is closed (before the fix it stayed open for 90 s).
#[tokio::test]
async fn a_stalled_body_is_cut_at_the_deadline() {
    let env = [("STABLEPAY_BODY_TIMEOUT_MS", "1000".to_string())];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    for path in ["/v1/checkout-sessions", "/checkout/cs_0000000000000000000000/simulate"] {
        let head = post_head(&app, path, &m.sk_test, None, 100);
        let mut stream = raw_request(&app, &head, b"{\"amount\":").await;
        let start = std::time::Instant::now();
        let answer = read_until_closed(&mut stream, Duration::from_secs(10)).await;
        let took = start.elapsed();
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
        assert!(answer.contains("\"code\":\"REQUEST_TIMEOUT\""), "{answer}");
        assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(4), "{path}: closed after {took:?}");
    }
    // Ordinary requests are unaffected.
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201);
}

/// H2: many clients stalling their bodies cannot hold more connections than the cap, and
/// health checks and ordinary requests still get answered.
#[tokio::test]
async fn stalled_clients_cannot_take_the_service_down() {
    let env = [("STABLEPAY_BODY_TIMEOUT_MS", "1500".to_string()), ("STABLEPAY_MAX_CONNECTIONS", "100".to_string())];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201);
    let idle = app.open_files();
    let mut stalled = Vec::new();
    for _ in 0..250 {
        let head = post_head(&app, "/v1/checkout-sessions", &m.sk_test, None, 1000);
        stalled.push(raw_request(&app, &head, b"{\"amount\":").await);
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let held = app.open_files();
    assert!(held <= idle + 100 + 8, "the server holds {held} files with {idle} idle: the connection cap did not hold");

    let start = std::time::Instant::now();
    let health = app.send(app.http.get(app.url("/healthz"))).await;
    health.ok(200);
    let r = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "2.00" })).await;
    r.ok(201);
    assert!(start.elapsed() < Duration::from_secs(8), "answered only after {:?}", start.elapsed());
    drop(stalled);
}

/// H2: memory taken by bursts of large bodies goes back to the operating system afterwards
/// (with glibc's allocator RSS stayed hundreds of MiB higher, and climbed with each burst).
#[tokio::test]
async fn memory_returns_after_bursts_of_large_bodies() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201);
    let idle = app.rss_mib();
    let chunk = vec![b' '; 1_040_000];
    for round in 0..2 {
        let mut senders = Vec::new();
        for _ in 0..300 {
            let head = post_head(&app, "/v1/checkout-sessions", &m.sk_test, None, 1_048_000);
            senders.push(raw_request(&app, &head, &chunk).await);
        }
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let peak = app.rss_mib();
        drop(senders);
        tokio::time::sleep(Duration::from_secs(3)).await;
        let after = app.rss_mib();
        eprintln!("round {round}: RSS idle {idle} MiB, during the burst {peak} MiB, after {after} MiB");
        assert!(peak > idle + 50, "the burst did not reach the server ({idle} -> {peak} MiB)");
        assert!(after <= idle + 64, "RSS stayed at {after} MiB after burst {round} (idle {idle} MiB, peak {peak} MiB)");
    }
}

/// Low: what one invoice accumulates is bounded: a draft takes at most 200 versions, and an
/// invoice keeps at most 200 payment records (the probe left 2,001 activity entries and 500
/// payment rows). Refusals name the limit and change nothing.
#[tokio::test]
async fn an_invoice_accumulates_only_so_much() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let line = json!([{ "description": "Work", "quantity": "1", "unitAmount": "5" }]);
    let draft = app.post(&m.sk_test, "/v1/invoices", json!({ "lines": line })).await.ok(201).clone();
    let path = format!("/v1/invoices/{}", draft["id"].as_str().unwrap());
    for version in 1..200 {
        app.patch(&m.sk_test, &path, json!({ "version": version, "lines": line })).await.ok(200);
    }
    let r = app.patch(&m.sk_test, &path, json!({ "version": 200, "lines": line })).await;
    r.assert_error(409, "INVOICE_NOT_EDITABLE");
    assert_eq!(
        (r.body["error"]["details"]["reason"].as_str(), r.body["error"]["details"]["limit"].as_u64()),
        (Some("limit_reached"), Some(200))
    );
    let inv = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!(inv["version"], 200);
    assert_eq!(inv["activity"].as_array().unwrap().len(), 200);
    // Duplicating starts a fresh draft.
    app.post(&m.sk_test, &format!("{path}/duplicate"), json!({})).await.ok(201);

    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    for _ in 0..200 {
        app.post(&m.sk_test, &pay, json!({ "outcome": "failed" })).await.ok(201);
    }
    let r = app.post(&m.sk_test, &pay, json!({ "outcome": "failed" })).await;
    r.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE");
    assert_eq!(r.body["error"]["details"]["limit"], 200);
    let rows = count(
        &app,
        &format!("SELECT count(*) FROM payments WHERE invoice_id = '{}'", cs["invoiceId"].as_str().unwrap()),
    )
    .await;
    assert_eq!(rows, 200);
}

/// Low: twenty simultaneous full test payments on one 10.00 checkout credit 10.00 once; the
/// session takes no more once it is completed (the probe saw 50.00 credited).
#[tokio::test]
async fn simultaneous_test_payments_credit_a_checkout_once() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    let answers = futures_util::future::join_all((0..20).map(|_| app.post(&m.sk_test, &pay, json!({})))).await;
    let confirmed = answers.iter().filter(|r| r.status.as_u16() == 201).count();
    assert_eq!(confirmed, 1, "{:?}", answers.iter().map(|r| r.body.to_string()).collect::<Vec<_>>());
    for r in answers.iter().filter(|r| r.status.as_u16() != 201) {
        r.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE");
    }
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(inv["customerAmountPaid"], "10.000000");
    assert_eq!(inv["payments"].as_array().unwrap().len(), 1);
}

/// Low: hosted pages carry security headers; the test-mode simulate form refuses posts from
/// other sites, and an oversized form is a 413 in the envelope.
#[tokio::test]
async fn hosted_pages_are_locked_down() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10.00" })).await.ok(201).clone();
    let url = cs["checkoutUrl"].as_str().unwrap().to_owned();
    let page = app.http.get(&url).send().await.unwrap();
    let h = page.headers();
    assert!(h["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert_eq!(h["referrer-policy"], "same-origin");
    assert_eq!(h["x-frame-options"], "DENY");

    let no_redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let post = |origin: Option<&str>| {
        let mut r = no_redirect.post(format!("{url}/simulate")).body("outcome=full");
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        r.send()
    };
    for origin in [Some("https://evil.example"), None] {
        assert_eq!(post(origin).await.unwrap().status().as_u16(), 403, "{origin:?}");
    }
    // A browser's own word wins: a cross-site post is refused whatever its Origin says.
    let cross = no_redirect
        .post(format!("{url}/simulate"))
        .header("Origin", &app.base)
        .header("Sec-Fetch-Site", "cross-site")
        .body("outcome=full");
    assert_eq!(cross.send().await.unwrap().status().as_u16(), 403);
    let inv = format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap());
    assert_eq!(app.get(&m.sk_test, &inv).await.ok(200)["customerAmountPaid"], "0.000000");
    assert_eq!(post(Some(&app.base)).await.unwrap().status().as_u16(), 303);
    assert_eq!(app.get(&m.sk_test, &inv).await.ok(200)["customerAmountPaid"], "10.000000");

    // A chunked form body over 1 MiB (no Content-Length to refuse it early).
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = (0..20).map(|_| Ok(vec![b'a'; 100_000])).collect();
    let big = reqwest::Body::wrap_stream(futures_util::stream::iter(chunks));
    let r = app.send(app.http.post(format!("{url}/simulate")).header("Origin", &app.base).body(big)).await;
    r.assert_error(413, "REQUEST_TOO_LARGE");
}

/// Metadata numbers at the ends of the double range survive the database: PostgreSQL writes
/// 1.7976931348623157e308 back as a 309-digit integer, which the reader once refused as out of
/// range, so the invoice could no longer be read (500 on its reads and lists).
#[tokio::test]
async fn metadata_numbers_at_the_ends_of_the_range_read_back_exactly() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let metadata = json!({ "max": 1.7976931348623157e308, "min": -1.7976931348623157e308,
                           "tiny": -1.1125369292536007e-308, "sub": 5e-324, "big": 123456789012345678u64 });
    let body = json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "metadata": metadata });
    let inv = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let read = app.get(&m.sk_test, &format!("/v1/invoices/{}", inv["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(read["metadata"], metadata);
    app.get(&m.sk_test, "/v1/invoices").await.ok(200);
}

/// A database recreated empty under a running instance: `/readyz` answers 503 saying which
/// migrations are missing, and requests answer 503 SERVICE_UNAVAILABLE in the envelope, never
/// 500; once `stablepay migrate` has run, the instance serves again on its own.
#[tokio::test]
async fn an_unmigrated_database_is_not_ready_and_answers_503_until_migrated() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.get(&m.sk_test, "/v1/invoices").await.ok(200);
    assert_eq!(app.send(app.http.get(app.url("/readyz"))).await.status, 200);

    let db = stablepay_test_db::connect(&app.db.url()).await;
    // Every schema of the service's, as a database recreated empty would be.
    let empty = "DO $$ DECLARE s text; BEGIN
        FOR s IN SELECT nspname FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema'
        LOOP EXECUTE format('DROP SCHEMA %I CASCADE', s); END LOOP;
        CREATE SCHEMA public; END $$";
    db.batch_execute(empty).await.unwrap();
    let ready = app.send(app.http.get(app.url("/readyz"))).await;
    ready.assert_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(ready.body["error"]["details"]["reason"], "migrations_pending", "{}", ready.body);
    assert!(!ready.body["error"]["details"]["pending"].as_array().unwrap().is_empty());
    for _ in 0..3 {
        let r = app.get(&m.sk_test, "/v1/invoices").await;
        r.assert_error(503, "SERVICE_UNAVAILABLE");
        assert!(r.header("retry-after").is_some());
    }
    let r = app.send(app.http.post(app.url("/v1/dashboard/sessions")).json(&serde_json::json!({
        "email": "ada@example.com", "password": "correct horse battery staple"
    })));
    r.await.assert_error(503, "SERVICE_UNAVAILABLE");

    // A newer schema (a migration this binary does not know) is fine; a missing one is not.
    let (migrated, _, stderr) = app.cli_with_input(&["migrate"], "");
    assert!(migrated, "stablepay migrate: {stderr}");
    assert_eq!(app.send(app.http.get(app.url("/readyz"))).await.status, 200);
    db.batch_execute("INSERT INTO __diesel_schema_migrations (version) VALUES ('29991231000000')").await.unwrap();
    assert_eq!(app.send(app.http.get(app.url("/readyz"))).await.status, 200, "a newer schema serves");
    // Requests are served again (the key, cached by this instance, or refused as unknown).
    let r = app.get(&m.sk_test, "/v1/invoices").await;
    assert!(matches!(r.status.as_u16(), 200 | 401), "{}: {}", r.status, r.body);
    assert!(!app.logs().contains("INTERNAL_SERVER_ERROR"), "no 500 was answered");
}

/// Direction controls: an unpaired override or isolate is refused in every name a person types
/// (naming the field); a closed one is kept, and where a merchant's name meets the page's own
/// words it is isolated, so `gnp.exe` cannot turn the sentence or the title around it.
#[tokio::test]
async fn unpaired_direction_controls_are_refused_and_names_are_isolated() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let rlo = "\u{202E}gnp.exe";
    let lines = |d: &str| json!({ "lines": [{ "description": d, "quantity": "1", "unitAmount": "1.00" }] });
    let r = app.post(&m.sk_test, "/v1/invoices", lines(rlo)).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("lines[0].description"), "{}", r.body);
    let mut customer = lines("Consulting");
    customer["customer"] = json!({ "name": format!("Eve {rlo}"), "email": "eve@example.com" });
    let r = app.post(&m.sk_test, "/v1/invoices", customer).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("customer.name"), "{}", r.body);
    let link = json!({ "title": format!("Sale \u{2067}50%"), "amountType": "fixed", "amount": "5.00" });
    let r = app.post(&m.sk_test, "/v1/payment-links", link).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("title"), "{}", r.body);
    let r = app
        .post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00", "externalReference": "a\u{202C}" }))
        .await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("externalReference"), "{}", r.body);
    // The operator's merchant name too.
    let (ok, _) = app.cli(&["merchant", "create", "--name", rlo, "--json"]);
    assert!(!ok, "an unpaired override in a merchant's name");

    // A closed override is the merchant's own text, kept; the page isolates it.
    let spoof = app.merchant("Shop \u{202E}gnp.exe\u{202C}");
    let cs = app.post(&spoof.sk_test, "/v1/checkout-sessions", json!({ "amount": "7.00" })).await.ok(201).clone();
    let html = app.http.get(cs["checkoutUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("<title>Pay \u{2068}Shop \u{202E}gnp.exe\u{202C}\u{2069} · 7.00 USDC</title>"), "{html}");
    assert!(html.contains("<p class=\"merchant\" dir=\"auto\">Shop \u{202E}gnp.exe\u{202C}</p>"), "{html}");
    let invoice = app.post(&spoof.sk_test, "/v1/invoices", lines("Consulting \u{2067}עבודה\u{2069}")).await;
    invoice.ok(201);
}
