//! Faults, each a test that stops by itself: PostgreSQL stopped and restarted under load (a
//! private cluster of the test's own, never the machine's shared one), a worker killed
//! with SIGKILL in the middle of its work, and webhook receivers and a chain node that never
//! answer. (How much they cost the API's p99 is measured by `cargo xtask bench mixed`.)

use std::collections::BTreeSet;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::process::Command;

use crate::receiver::{Receiver, Reply};
use crate::support::{BIN, PrivateCluster, TestApp, fresh_db};

async fn cli_json(url: &str, args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN).args(args).env("DATABASE_URL", url).output().await.unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[tokio::test]
async fn postgres_stopped_and_restarted_under_load_loses_no_acknowledged_write() {
    let mut cluster = PrivateCluster::start().await;
    let url = cluster.url("postgres");
    let out = Command::new(BIN).arg("migrate").env("DATABASE_URL", &url).output().await.unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let merchant = cli_json(&url, &["merchant", "create", "--name", "Shop", "--json"]).await;
    let id = merchant["id"].as_str().unwrap();
    let key =
        cli_json(&url, &["key", "create", "--merchant", id, "--mode", "test", "--type", "secret", "--json"]).await;
    let key = key["key"].as_str().unwrap().to_owned();
    let env = [("DATABASE_URL", url.clone()), ("STABLEPAY_DB_TIMEOUT_MS", "500".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;

    // Eight clients create checkouts without pause; every answer is kept.
    let running = Arc::new(AtomicBool::new(true));
    let mut clients = Vec::new();
    for c in 0..8 {
        let (http, base, key, running) = (app.http.clone(), app.base.clone(), key.clone(), running.clone());
        clients.push(tokio::spawn(async move {
            let mut answers = Vec::new();
            let mut n = 0;
            while running.load(Ordering::Relaxed) {
                n += 1;
                let reference = format!("c{c}-{n}");
                let res = http
                    .post(format!("{base}/v1/checkout-sessions"))
                    .bearer_auth(&key)
                    .json(&json!({ "amount": "2.00", "externalReference": reference }))
                    .send()
                    .await;
                let (status, body) = match res {
                    Ok(r) => (r.status().as_u16(), r.json::<serde_json::Value>().await.unwrap_or_default()),
                    Err(e) => panic!("the service dropped a request: {e}"),
                };
                answers.push((status, reference, body));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            answers
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    cluster.stop().await;
    tokio::time::sleep(Duration::from_millis(2000)).await;
    // While it is down: the envelope says 503, the process stays up.
    let down = app.get(&key, "/v1/events").await;
    down.assert_error(503, "SERVICE_UNAVAILABLE");
    cluster.start_again().await;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    running.store(false, Ordering::Relaxed);
    let mut answers = Vec::new();
    for c in clients {
        answers.extend(c.await.unwrap());
    }

    let created: Vec<&(u16, String, serde_json::Value)> = answers.iter().filter(|a| a.0 == 201).collect();
    let unavailable = answers.iter().filter(|a| a.0 == 503).count();
    let other: Vec<_> = answers.iter().filter(|a| a.0 != 201 && a.0 != 503).collect();
    assert!(other.is_empty(), "answers other than 201 and 503: {:?}", &other[..other.len().min(3)]);
    for (_, _, body) in answers.iter().filter(|a| a.0 == 503) {
        assert_eq!(body["error"]["code"], "SERVICE_UNAVAILABLE", "{body}");
    }
    assert!(unavailable > 0, "the outage was not seen");
    // It recovered without a restart: creations succeeded after the database came back.
    let last_failure = answers.iter().rposition(|a| a.0 == 503).unwrap();
    assert!(answers[last_failure..].iter().any(|a| a.0 == 201), "no success after the restart");
    app.get(&key, "/v1/events").await.ok(200);

    // Every acknowledged creation is stored.
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(conn);
    let rows = client.query("SELECT external_reference FROM checkout_sessions", &[]).await.unwrap();
    let stored: BTreeSet<String> = rows.iter().filter_map(|r| r.get::<_, Option<String>>(0)).collect();
    for (_, reference, body) in &created {
        assert!(stored.contains(reference), "acknowledged {} ({reference}) is missing", body["data"]["id"]);
    }
    assert!(created.len() > 20, "too little load to say anything: {}", created.len());
}

#[tokio::test]
async fn a_worker_killed_mid_batch_leaves_its_work_to_another() {
    // API only; the background work is left to worker processes.
    let app = TestApp::spawn_with(fresh_db().await, &[], &["--no-worker"]).await;
    let m = app.merchant("Shop");
    let mut invoices = Vec::new();
    for _ in 0..200 {
        let cs =
            app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00", "expiresInMinutes": 5 })).await;
        invoices.push(cs.ok(201)["invoiceId"].as_str().unwrap().to_owned());
    }
    // Everything is due for expiry at once (the checkouts' time is set in the past directly:
    // the test clock would run the transitions itself).
    app.db.query("UPDATE checkout_sessions SET expires_at = now() - interval '1 minute'").await;
    let worker = |interval: &str| {
        Command::new(BIN)
            .arg("worker")
            .env("DATABASE_URL", app.db.url())
            .env("STABLEPAY_METRICS_BIND", "off")
            .env("STABLEPAY_WORKER_INTERVAL_MS", interval)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap()
    };
    // The first worker claims a batch and is killed at once (SIGKILL: no shutdown at all).
    let mut first = worker("10");
    tokio::time::sleep(Duration::from_millis(150)).await;
    first.kill().await.unwrap();
    let leased: i64 = app.db.query("SELECT count(*) AS n FROM invoices WHERE lease_until > now()").await[0].get("n");
    // A second worker finishes everything once the leases (30 s) run out; to keep the test
    // short, the leases are aged the way time would age them.
    app.db.query("UPDATE invoices SET lease_until = now() - interval '1 second' WHERE lease_until > now()").await;
    let _second = worker("50");
    let mut done = false;
    for _ in 0..100 {
        let open: i64 =
            app.db.query("SELECT count(*) AS n FROM checkout_sessions WHERE status = 'pending'").await[0].get("n");
        if open == 0 {
            done = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(done, "the second worker did not finish the work");
    // Nothing done twice: one invoice.expired per invoice.
    let rows = app
        .db
        .query("SELECT data->>'id' AS id, count(*) AS n FROM events WHERE type = 'invoice.expired' GROUP BY 1")
        .await;
    assert_eq!(rows.len(), invoices.len());
    assert!(rows.iter().all(|r| r.get::<_, i64>("n") == 1));
    // Typically about 50 of the first batch are still leased when it dies (any number is fine:
    // what matters is that all of it is done, once).
    let _ = leased;
}

/// Every webhook delivery slot of the worker held by a receiver that never answers, and every
/// chain call held by a node that never answers: the API answers meanwhile (test mode and live
/// mode, reads and writes), while all of them are still waiting.
#[tokio::test]
async fn hanging_receivers_and_a_stalled_chain_node_leave_the_api_answering() {
    let rx = Receiver::start().await;
    rx.answer(Reply::Hang);
    let node = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let node_url = format!("http://{}", node.local_addr().unwrap());
    let node_calls = Arc::new(AtomicUsize::new(0));
    let calls = node_calls.clone();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((stream, _)) = node.accept().await {
            calls.fetch_add(1, Ordering::SeqCst);
            held.push(stream);
        }
    });
    let env = [
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "10000".to_owned()),
        ("STABLEPAY_CHAIN_RPC_URLS", node_url),
        ("STABLEPAY_CHAIN_TIMEOUT_MS", "60000".to_owned()),
        ("STABLEPAY_CHAIN_POLL_MS", "100".to_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    app.activate(&m, "USDC");
    for i in 0..2 {
        app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": rx.url(&format!("/{i}")) })).await.ok(201);
    }
    // 130 payments, each invoice.paid to both endpoints: more deliveries than the worker's 256
    // slots, every one hanging.
    // Made 16 at a time, so they are all made well within the attempts' 10 s.
    use futures_util::StreamExt;
    futures_util::stream::iter(0..130)
        .for_each_concurrent(16, |_| async {
            let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5.00" })).await.ok(201).clone();
            let path = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
            app.post(&m.sk_test, &path, json!({})).await.ok(201);
        })
        .await;
    rx.wait_for(256, Duration::from_secs(60)).await;
    for _ in 0..200 {
        if node_calls.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(node_calls.load(Ordering::SeqCst) > 0, "the worker never called the chain node");
    // Readiness does not wait for the node either: it says so.
    let ready = app.send(app.http.get(app.url("/readyz"))).await;
    assert_eq!(ready.ok(200)["chain"]["state"], "unreachable");

    // The API meanwhile: test-mode creation, payment and reads; live-mode creation, a reported
    // transaction (queued for the stalled node) and reads.
    for _ in 0..10 {
        let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "2.00" })).await.ok(201).clone();
        let path = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
        app.post(&m.sk_test, &path, json!({})).await.ok(201);
        let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await;
        assert_eq!(inv.ok(200)["collectionState"], "paid");
        let live = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
        let path = format!("/v1/public/checkout-sessions/{}/payments", live["id"].as_str().unwrap());
        let tx = format!("0x{:064x}", rand_u64());
        let reported = app.send(app.http.post(app.url(&path)).json(&json!({ "transactionHash": tx }))).await;
        let id = reported.ok(202)["id"].as_str().unwrap().to_owned();
        assert_eq!(app.get(&m.sk_live, &format!("/v1/payments/{id}")).await.ok(200)["status"], "detected");
    }
    app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200);
    app.get(&m.sk_test, "/v1/webhook-deliveries?limit=100").await.ok(200);

    // All of that happened while the outside was still hanging: no delivery has finished its
    // attempt (each takes the full 10 s and is then recorded as timed out).
    let deliveries = app.get(&m.sk_test, "/v1/webhook-deliveries?limit=100").await.ok(200).clone();
    let items = deliveries["items"].as_array().unwrap();
    assert!(!items.is_empty());
    for d in items {
        assert!(
            d["status"] == "delivering" || (d["status"] == "pending" && d["attemptCount"] == 0),
            "an attempt ended before the API's requests did: {d}"
        );
        assert!(d["lastAttemptAt"].is_null() && d["latestError"].is_null(), "{d}");
    }
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos());
    h.finish()
}
