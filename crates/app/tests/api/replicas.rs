//! Replicas: two `serve --no-worker` and two `worker` processes over one database, load driven
//! through both APIs. No payment is credited twice, no event or delivery is duplicated, the
//! expiry sweep runs once per checkout, and an idempotency key is shared by the replicas.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use crate::receiver::Receiver;
use crate::support::{BIN, TestApp, fresh_db};

async fn call(
    http: &reqwest::Client,
    base: &str,
    key: &str,
    path: &str,
    body: Value,
    idem: Option<&str>,
) -> (u16, Value) {
    let mut req = http.post(format!("{base}{path}")).bearer_auth(key).json(&body);
    if let Some(k) = idem {
        req = req.header("Idempotency-Key", k);
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn two_apis_and_two_workers_share_one_database_without_doing_anything_twice() {
    let env = [
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1s,1s".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &["--no-worker"]).await;
    // Another API-only process on the same database.
    let (other, _other_child) = app.sibling_with_args(&env, &["--no-worker"]).await;
    let mut workers = Vec::new();
    for _ in 0..2 {
        workers.push(
            Command::new(BIN)
                .arg("worker")
                .env("DATABASE_URL", app.db.url())
                .env("STABLEPAY_METRICS_BIND", "127.0.0.1:0")
                .env("STABLEPAY_SECRET_KEY", TestApp::SECRET_KEY)
                .env("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true")
                .env("STABLEPAY_WORKER_INTERVAL_MS", "50")
                .env("STABLEPAY_DB_POOL_SIZE", "4")
                .env("RUST_LOG", "warn")
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap(),
        );
    }
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": rx.url("/hooks") })).await.ok(201);
    let http = reqwest::Client::new();
    let bases = [app.base.clone(), other.clone()];

    // An idempotency key is shared: the same request on the other replica replays the answer.
    let body = json!({ "amount": "3.00" });
    let (s1, first) = call(&http, &bases[0], &m.sk_test, "/v1/checkout-sessions", body.clone(), Some("shared-1")).await;
    let (s2, again) = call(&http, &bases[1], &m.sk_test, "/v1/checkout-sessions", body, Some("shared-1")).await;
    assert_eq!((s1, s2), (201, 201));
    assert_eq!(first["data"]["id"], again["data"]["id"]);

    // Twenty checkouts created through both APIs, each paid by two simultaneous simulated
    // payments, one through each API: each is credited once.
    let mut paid = Vec::new();
    for i in 0..20 {
        let base = &bases[i % 2];
        let (s, cs) = call(&http, base, &m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5.00" }), None).await;
        assert_eq!(s, 201);
        paid.push((
            cs["data"]["id"].as_str().unwrap().to_owned(),
            cs["data"]["invoiceId"].as_str().unwrap().to_owned(),
        ));
    }
    let attempts = paid.iter().flat_map(|(cs, _)| {
        let path = format!("/v1/test-helpers/checkout-sessions/{cs}/payments");
        bases.iter().map(move |b| (b.clone(), path.clone()))
    });
    let results = futures_util::future::join_all(attempts.map(|(base, path)| {
        let (http, key) = (http.clone(), m.sk_test.clone());
        async move { call(&http, &base, &key, &path, json!({}), None).await.0 }
    }))
    .await;
    assert_eq!(results.iter().filter(|s| **s == 201).count(), 20, "{results:?}");
    assert!(results.iter().all(|s| *s == 201 || *s == 409), "{results:?}");
    for (_, invoice) in &paid {
        let inv = app.get(&m.sk_test, &format!("/v1/invoices/{invoice}")).await.ok(200).clone();
        assert_eq!(inv["collectionState"], "paid");
        assert_eq!(inv["customerAmountPaid"], "5.000000", "credited once");
    }

    // Ten checkouts left to expire; the test clock moves while both workers sweep.
    let mut open = Vec::new();
    for i in 0..10 {
        let (_, cs) = call(
            &http,
            &bases[i % 2],
            &m.sk_test,
            "/v1/checkout-sessions",
            json!({ "amount": "1.00", "expiresInMinutes": 5 }),
            None,
        )
        .await;
        open.push(cs["data"]["invoiceId"].as_str().unwrap().to_owned());
    }
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 600 })).await.ok(200);
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Every event once per invoice and type.
    let rows = app.db.query("SELECT type, data->>'id' AS id, count(*) AS n FROM events GROUP BY 1, 2").await;
    let mut per_type: BTreeMap<String, usize> = BTreeMap::new();
    for r in &rows {
        let (t, n): (String, i64) = (r.get("type"), r.get("n"));
        assert_eq!(n, 1, "{t} for {} emitted {n} times", r.get::<_, String>("id"));
        *per_type.entry(t).or_default() += 1;
    }
    assert_eq!(per_type.get("invoice.paid"), Some(&20), "{per_type:?}");
    // The ten (the shared checkout's 30 minutes have not passed).
    assert_eq!(per_type.get("invoice.expired"), Some(&10), "{per_type:?}");
    // One delivery per event, and each event received once.
    let events: i64 = app.db.query("SELECT count(*) AS n FROM events").await[0].get("n");
    let deliveries = app.db.query("SELECT event_id, count(*) AS n FROM webhook_deliveries GROUP BY 1").await;
    assert_eq!(i64::try_from(deliveries.len()).unwrap(), events);
    assert!(deliveries.iter().all(|r| r.get::<_, i64>("n") == 1));
    let got = rx.wait_for(usize::try_from(events).unwrap(), Duration::from_secs(30)).await;
    let ids: Vec<String> = got.iter().map(|r| r.json()["id"].as_str().unwrap().to_owned()).collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "an event was delivered twice");
    assert_eq!(ids.len(), usize::try_from(events).unwrap());

    // Key lookups are cached per process; a change on one is seen by every replica at once.
    // Both replicas have the key cached now; a test-clock move made through one is seen by
    // the other's next request.
    for base in &bases {
        let mut status = 0;
        for _ in 0..50 {
            status =
                http.get(format!("{base}/v1/events")).bearer_auth(&m.sk_test).send().await.unwrap().status().as_u16();
            if status == 200 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(status, 200, "{base} still refused an unsuspended merchant");
    }
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 86_400 })).await.ok(200);
    let (_, cs) = call(&http, &bases[1], &m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" }), None).await;
    let created = chrono::DateTime::parse_from_rfc3339(cs["data"]["createdAt"].as_str().unwrap()).unwrap();
    assert!(created.with_timezone(&chrono::Utc) > chrono::Utc::now() + chrono::Duration::hours(23), "{cs}");
    // Suspension and revocation through the CLI: each reaches both replicas as a notification
    // after it commits (a request in the moment before may still pass; within seconds none does).
    let (ok, _) = app.cli(&["merchant", "suspend", &m.id, "--json"]);
    assert!(ok);
    for base in &bases {
        let mut status = 0;
        for _ in 0..50 {
            status =
                http.get(format!("{base}/v1/events")).bearer_auth(&m.sk_test).send().await.unwrap().status().as_u16();
            if status == 403 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        assert_eq!(status, 403, "{base} still served a suspended merchant");
    }
    assert!(app.cli(&["merchant", "unsuspend", &m.id, "--json"]).0);
    let keys = app.cli(&["key", "list", "--merchant", &m.id, "--json"]).1;
    let key_id = keys["keys"].as_array().unwrap().iter().find(|k| k["prefix"] == m.sk_test[..12]).unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    for base in &bases {
        assert_eq!(http.get(format!("{base}/v1/events")).bearer_auth(&m.sk_test).send().await.unwrap().status(), 200);
    }
    assert!(app.cli(&["key", "revoke", &key_id, "--json"]).0);
    // The revocation reaches each replica as a notification after it commits: a request sent
    // in the moment before it arrives may still pass; within a second none does.
    for base in &bases {
        let mut status = 0;
        for _ in 0..40 {
            status =
                http.get(format!("{base}/v1/events")).bearer_auth(&m.sk_test).send().await.unwrap().status().as_u16();
            if status == 401 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        }
        assert_eq!(status, 401, "{base} still accepted a revoked key after a second");
    }
    drop(workers);
}
