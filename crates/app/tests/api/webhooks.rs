//! Webhooks end to end: the real binary delivers to a real receiver on loopback; signatures
//! are checked byte for byte (by the test's own HMAC, by the webhooks crate's verifiers, and by
//! the Python (`standardwebhooks` from PyPI) and Node snippets of docs/webhooks/).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::hmac;
use serde_json::{Value, json};

use crate::receiver::{Received, Receiver, Reply};
use crate::support::{Merchant, TestApp, fresh_db};

/// An app that may deliver to loopback, retries after 200 ms (five attempts), and gives an
/// attempt one second.
async fn app_with(extra: &[(&str, String)]) -> TestApp {
    let mut env = vec![
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms,200ms,200ms,200ms".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000".to_owned()),
    ];
    for (k, v) in extra {
        env.retain(|(name, _)| name != k);
        env.push((k, v.clone()));
    }
    TestApp::spawn_with(fresh_db().await, &env, &[]).await
}

/// Registers an endpoint; answers (id, signing secret).
async fn endpoint(app: &TestApp, key: &str, url: &str, types: Option<&[&str]>) -> (String, String) {
    let mut body = json!({ "url": url });
    if let Some(t) = types {
        body["eventTypes"] = json!(t);
    }
    let e = app.post(key, "/v1/webhook-endpoints", body).await.ok(201).clone();
    (e["id"].as_str().unwrap().to_owned(), e["signingSecret"].as_str().unwrap().to_owned())
}

/// A test-mode checkout of `amount` paid in full: its invoice emits invoice.paid.
async fn paid_checkout(app: &TestApp, key: &str, amount: &str) -> Value {
    let cs = app.post(key, "/v1/checkout-sessions", json!({ "amount": amount })).await.ok(201).clone();
    let path = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(key, &path, json!({})).await.ok(201);
    cs
}

fn hex_hmac(key: &[u8], message: &[u8]) -> String {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

fn b64_hmac(key: &[u8], message: &[u8]) -> String {
    STANDARD.encode(hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message).as_ref())
}

fn signed(ts: &str, body: &[u8]) -> Vec<u8> {
    [ts.as_bytes(), b".", body].concat()
}

/// Polls `path` until `check` accepts its data (at most 20 s).
async fn until(app: &TestApp, key: &str, path: &str, check: impl Fn(&Value) -> bool) -> Value {
    for _ in 0..200 {
        let r = app.get(key, path).await;
        if r.status.as_u16() == 200 && check(&r.body["data"]) {
            return r.body["data"].clone();
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never reached the expected state: {}", app.get(key, path).await.body);
}

async fn delivery_of(app: &TestApp, m: &Merchant, endpoint: &str, done: impl Fn(&Value) -> bool) -> Value {
    let list = until(app, &m.sk_test, &format!("/v1/webhook-deliveries?endpointId={endpoint}"), |d| {
        d["items"].as_array().is_some_and(|items| items.first().is_some_and(&done))
    })
    .await;
    let id = list["items"][0]["id"].as_str().unwrap().to_owned();
    app.get(&m.sk_test, &format!("/v1/webhook-deliveries/{id}")).await.ok(200).clone()
}

/// Runs a docs/webhooks snippet on a captured delivery; answers whether it accepted it.
fn snippet_accepts(program: &str, script: &str, secret: &str, r: &Received) -> bool {
    let dir =
        std::env::temp_dir().join(format!("wh-{}-{}", std::process::id(), r.header("x-stablepay-delivery").unwrap()));
    std::fs::create_dir_all(&dir).unwrap();
    let headers: serde_json::Map<String, Value> =
        r.headers.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect();
    std::fs::write(dir.join("headers.json"), Value::Object(headers).to_string()).unwrap();
    std::fs::write(dir.join("body"), &r.body).unwrap();
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let out = std::process::Command::new(program)
        .arg(root.join("docs/webhooks").join(script))
        .arg(secret)
        .arg(dir.join("headers.json"))
        .arg(dir.join("body"))
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(out.status.code().is_some(), "{script}: {}", String::from_utf8_lossy(&out.stderr));
    out.status.success()
}

fn python() -> String {
    std::env::var("STABLEPAY_PYTHON").unwrap_or_else(|_| {
        let venv = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/python");
        assert!(venv.exists(), "no Python with standardwebhooks at {}: cargo xtask ci installs it", venv.display());
        venv.display().to_string()
    })
}

#[tokio::test]
async fn a_delivery_is_signed_both_ways_byte_for_byte() {
    let app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    let (ep, secret) = endpoint(&app, &m.sk_test, &rx.url("/hooks/stablepay"), None).await;
    assert!(secret.starts_with("whsec_") && STANDARD.decode(&secret[6..]).unwrap().len() == 32, "{secret}");
    let cs = paid_checkout(&app, &m.sk_test, "12.50").await;
    let got = rx.wait_for(1, Duration::from_secs(10)).await;
    let r = got.iter().find(|r| r.header("x-stablepay-event") == Some("invoice.paid")).expect("invoice.paid delivered");

    // The request.
    assert_eq!(r.path, "/hooks/stablepay");
    assert_eq!(r.header("content-type"), Some("application/json"));
    let ts = r.header("x-stablepay-timestamp").unwrap();
    assert_eq!(r.header("webhook-timestamp"), Some(ts));
    let now = chrono::Utc::now().timestamp();
    assert!((now - ts.parse::<i64>().unwrap()).abs() < 60);
    let body = r.json();
    assert_eq!(r.header("webhook-id"), body["id"].as_str(), "the event id is the deduplication key");
    assert!(!String::from_utf8_lossy(&r.body).contains(": "), "compact JSON");

    // The spec's signature: hex HMAC keyed with the secret string, over "t.body".
    let expected = format!("t={ts},v1={}", hex_hmac(secret.as_bytes(), &signed(ts, &r.body)));
    assert_eq!(r.header("x-stablepay-signature"), Some(expected.as_str()));
    // Standard Webhooks: base64 HMAC keyed with the decoded secret, over "id.t.body".
    let id = r.header("webhook-id").unwrap();
    let key = STANDARD.decode(&secret[6..]).unwrap();
    let message = [id.as_bytes(), b".", &signed(ts, &r.body)].concat();
    assert_eq!(r.header("webhook-signature"), Some(format!("v1,{}", b64_hmac(&key, &message)).as_str()));
    // The crate's verifiers, for receivers in Rust.
    let sig = r.header("x-stablepay-signature").unwrap();
    assert_eq!(stablepay_webhooks::verify(sig, &secret, &r.body, now, 300), Ok(()));
    assert!(stablepay_webhooks::verify(sig, "whsec_other", &r.body, now, 300).is_err());
    let std_sig = r.header("webhook-signature").unwrap();
    assert_eq!(stablepay_webhooks::verify_standard(id, ts, std_sig, &secret, &r.body, now, 300), Ok(()));
    // The docs' snippets: Python with standardwebhooks from PyPI, and Node.
    assert!(snippet_accepts(&python(), "verify.py", &secret, r), "Python refused a real delivery");
    assert!(snippet_accepts("node", "verify.mjs", &secret, r), "Node refused a real delivery");
    let mut tampered = r.clone();
    tampered.body.push(b' ');
    assert!(!snippet_accepts(&python(), "verify.py", &secret, &tampered));
    assert!(!snippet_accepts("node", "verify.mjs", &secret, &tampered));

    // The body is the event as the API shows it.
    let event = app.get(&m.sk_test, &format!("/v1/events/{}", body["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(body, event);
    assert_eq!(body["data"]["id"], cs["invoiceId"]);
    // Its payment snapshot has the payment resource's fields and names.
    let latest = &body["data"]["latestPayment"];
    let payment =
        app.get(&m.sk_test, &format!("/v1/payments/{}", latest["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(latest, &payment);
    assert!(latest["confirmedAt"].as_str().unwrap() >= latest["detectedAt"].as_str().unwrap());

    // The OpenAPI document describes this payload: its webhooks section names the event's
    // schema, whose data has exactly these fields (test events add `test`).
    let doc = app.send(app.http.get(app.url("/v1/openapi.json"))).await.body;
    let schema_ref =
        doc["webhooks"]["invoice.paid"]["post"]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
            .as_str()
            .unwrap();
    let schemas = &doc["components"]["schemas"];
    let envelope = &schemas[schema_ref.rsplit('/').next().unwrap()];
    let data_ref = envelope["properties"]["data"]["$ref"].as_str().unwrap();
    let data_schema = &schemas[data_ref.rsplit('/').next().unwrap()];
    let mut documented: Vec<&String> =
        data_schema["properties"].as_object().unwrap().keys().filter(|k| *k != "test").collect();
    let mut sent: Vec<&String> = body["data"].as_object().unwrap().keys().collect();
    documented.sort();
    sent.sort();
    assert_eq!(documented, sent);
    let payment_schema: Vec<&String> = schemas["PaymentOut"]["properties"].as_object().unwrap().keys().collect();
    let mut payment_sent: Vec<&String> = latest.as_object().unwrap().keys().collect();
    let mut payment_documented = payment_schema.clone();
    payment_sent.sort();
    payment_documented.sort();
    assert_eq!(payment_documented, payment_sent);

    // The delivery record.
    let d = delivery_of(&app, &m, &ep, |d| d["status"] == "delivered").await;
    assert_eq!(d["id"].as_str(), r.header("x-stablepay-delivery"));
    assert_eq!((d["attemptCount"].as_u64(), d["latestResponseCode"].as_u64()), (Some(1), Some(200)));
    assert_eq!((d["eventType"].as_str(), d["test"].as_bool()), (Some("invoice.paid"), Some(false)));
    assert_eq!(d["responseExcerpt"], "ok");
    let attempt = &d["attempts"][0];
    assert_eq!((attempt["number"].as_u64(), attempt["statusCode"].as_u64()), (Some(1), Some(200)));
    assert_eq!(attempt["errorCategory"], Value::Null);
    let evidence = attempt["requestHeaders"].as_object().unwrap();
    assert_eq!(evidence["x-stablepay-event"], "invoice.paid");
    assert_eq!(evidence["webhook-id"], body["id"]);
    assert!(!evidence.contains_key("x-stablepay-signature") && !evidence.contains_key("webhook-signature"));
    assert!(d["deliveredAt"].is_string());

    // The secret is never shown again, nor stored in the clear.
    let e = app.get(&m.sk_test, &format!("/v1/webhook-endpoints/{ep}")).await.ok(200).clone();
    assert!(e.get("signingSecret").is_none(), "{e}");
    let rows = app.db.query("SELECT encode(secret, 'escape') FROM webhook_endpoints").await;
    let stored: String = rows[0].get(0);
    assert!(!stored.contains(&secret[6..]));
}

#[tokio::test]
async fn every_local_failure_has_its_category() {
    let app = app_with(&[("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1h".to_owned())]).await;
    let m = app.merchant("Shop");
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let receivers = [
        (Reply::Slow(Duration::from_secs(3), 200), "timeout", None::<u16>),
        (Reply::Status(404), "http_4xx", Some(404)),
        (Reply::Status(503), "http_5xx", Some(503)),
        (Reply::Redirect, "redirect", Some(302)),
        (Reply::Big(100_000), "response_too_large", Some(200)),
    ];
    let mut expected = Vec::new();
    for (reply, category, code) in receivers {
        let rx = Receiver::start().await;
        rx.answer(reply);
        let (ep, _) = endpoint(&app, &m.sk_test, &rx.url("/"), Some(&["invoice.paid"])).await;
        expected.push((ep, category, code, Some(rx)));
    }
    // A server that answers a TLS handshake with plain text.
    let plain = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let plain_port = plain.local_addr().unwrap().port();
    tokio::spawn(async move {
        use tokio::io::AsyncWriteExt;
        while let Ok((mut s, _)) = plain.accept().await {
            let _ = s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n").await;
        }
    });
    for (url, category) in
        [(format!("http://127.0.0.1:{closed}/"), "connection"), (format!("https://127.0.0.1:{plain_port}/"), "tls")]
    {
        let (ep, _) = endpoint(&app, &m.sk_test, &url, Some(&["invoice.paid"])).await;
        expected.push((ep, category, None, None));
    }
    // Link-local destinations never get as far as a delivery: registration refuses them even
    // where private ones are allowed (their delivery-time refusal is tested above).
    for url in ["http://169.254.169.254/latest/meta-data", "http://[fe80::1]/"] {
        let r = app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": url })).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("url"), "{url}");
    }
    paid_checkout(&app, &m.sk_test, "3.00").await;
    for (ep, category, code, _) in &expected {
        let d = delivery_of(&app, &m, ep, |d| d["status"] == "retry_scheduled").await;
        assert_eq!(d["errorCategory"], *category, "{d}");
        assert_eq!(d["latestResponseCode"].as_u64(), code.map(u64::from), "{d}");
        assert!(d["latestError"].as_str().is_some_and(|e| !e.is_empty()));
        // One attempt, the next an hour later (the shortened schedule's only wait).
        assert_eq!(d["attemptCount"], 1);
        let next = chrono::DateTime::parse_from_rfc3339(d["nextAttemptAt"].as_str().unwrap()).unwrap();
        assert!(next.timestamp() - chrono::Utc::now().timestamp() > 3000);
    }
    let too_large = expected.iter().find(|e| e.1 == "response_too_large").unwrap();
    let d = delivery_of(&app, &m, &too_large.0, |_| true).await;
    assert_eq!(d["responseExcerpt"].as_str().unwrap().len(), 4096, "the excerpt is kept to 4 KB");
}

/// Loopback in the spellings a WHATWG URL parser reads as 127.0.0.1 or ::1, at `port`.
fn loopback_spellings(port: u16) -> Vec<String> {
    let hosts = [
        "127.0.0.1",
        "2130706433",
        "0177.0.0.1",
        "0x7f.0.0.1",
        "127.1",
        "0x7f000001",
        "017700000001",
        "127.0.0.1.",
        "localhost",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "[0:0:0:0:0:0:0:1]",
    ];
    hosts.iter().map(|h| format!("http://{h}:{port}/")).collect()
}

#[tokio::test]
async fn private_destinations_are_refused_at_registration_unless_allowed() {
    let app = app_with(&[("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "false".to_owned())]).await;
    let m = app.merchant("Shop");
    let mut refused = loopback_spellings(8080);
    refused.extend(
        [
            "http://0:8080/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://[fe80::1]/",
            "http://10.1.2.3/",
            "http://999.1.1.1/",
        ]
        .map(String::from),
    );
    for url in &refused {
        let r = app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": url })).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("url"), "{url}");
    }
    let (ep, _) = endpoint(&app, &m.sk_test, "https://hooks.example.com/stablepay", None).await;
    for url in &refused {
        let r = app.patch(&m.sk_test, &format!("/v1/webhook-endpoints/{ep}"), json!({ "url": url })).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("url"), "{url}");
    }
    let listed = app.get(&m.sk_test, "/v1/webhook-endpoints").await.ok(200).clone();
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "nothing refused was registered");
    assert_eq!(items[0]["url"], "https://hooks.example.com/stablepay", "nothing refused was saved");
}

#[tokio::test]
async fn private_destinations_are_refused_at_delivery_unless_allowed() {
    // Registered while private destinations were allowed; delivered after the operator
    // stopped allowing them.
    let mut app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    let mut endpoints = Vec::new();
    for url in loopback_spellings(rx.port) {
        endpoints.push(endpoint(&app, &m.sk_test, &url, None).await.0);
    }
    app.kill_and_restart(&[
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "false".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms,200ms,200ms,200ms".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000".to_owned()),
    ])
    .await;
    paid_checkout(&app, &m.sk_test, "1.00").await;
    for ep in &endpoints {
        let d = delivery_of(&app, &m, ep, |d| d["errorCategory"] == "blocked_destination").await;
        assert_eq!(d["latestResponseCode"], Value::Null);
        assert_eq!(d["responseExcerpt"], Value::Null);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(rx.received().is_empty(), "nothing reached a loopback receiver");
}

#[tokio::test]
async fn failures_retry_on_schedule_open_an_incident_and_a_replay_resolves_it() {
    let app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    rx.answer(Reply::Status(500));
    let (ep, _) = endpoint(&app, &m.sk_test, &rx.url("/"), Some(&["invoice.paid"])).await;
    paid_checkout(&app, &m.sk_test, "2.00").await;
    let d = delivery_of(&app, &m, &ep, |d| d["status"] == "failed").await;
    assert_eq!(d["attemptCount"], 5);
    let attempts = d["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 5);
    for (n, a) in (1u64..).zip(attempts) {
        assert_eq!((a["number"].as_u64(), a["errorCategory"].as_str()), (Some(n), Some("http_5xx")));
    }
    // The waits between attempts follow the (shortened) schedule.
    let times: Vec<i64> = attempts
        .iter()
        .map(|a| chrono::DateTime::parse_from_rfc3339(a["startedAt"].as_str().unwrap()).unwrap().timestamp_millis())
        .collect();
    assert!(times.windows(2).all(|w| w[1] - w[0] >= 200), "{times:?}");
    assert_eq!(d["nextAttemptAt"], Value::Null);
    assert_eq!(rx.received().len(), 5);

    let incidents = app.get(&m.sk_test, &format!("/v1/webhook-endpoints/{ep}/incidents")).await.ok(200).clone();
    let items = incidents["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "one incident per run of failures");
    let incident = &items[0];
    assert_eq!((incident["status"].as_str(), incident["failedAttempts"].as_u64()), (Some("open"), Some(5)));
    assert_eq!(incident["lastErrorCategory"], "http_5xx");
    let id = incident["id"].as_str().unwrap();
    assert_eq!(app.get(&m.sk_test, &format!("/v1/webhook-incidents/{id}")).await.ok(200)["status"], "open");
    app.get(&m.sk_test, "/v1/webhook-incidents/whi_0000000000000000000000")
        .await
        .assert_error(404, "WEBHOOK_INCIDENT_NOT_FOUND");

    // Replay needs an Idempotency-Key of at least 8 characters.
    let replay = format!("/v1/webhook-deliveries/{}/replay", d["id"].as_str().unwrap());
    let field = app.post(&m.sk_test, &replay, json!({})).await.assert_error(400, "INVALID_IDEMPOTENCY_KEY");
    assert_eq!(field.as_deref(), Some("Idempotency-Key"));
    app.post_idem(&m.sk_test, &replay, "short", json!({})).await.assert_error(400, "INVALID_IDEMPOTENCY_KEY");
    rx.answer(Reply::Status(204));
    let first = app.post_idem(&m.sk_test, &replay, "replay-0001", json!({})).await;
    let new = first.ok(202).clone();
    assert_eq!((new["replayOf"].as_str(), new["status"].as_str()), (d["id"].as_str(), Some("pending")));
    let again = app.post_idem(&m.sk_test, &replay, "replay-0001", json!({})).await;
    assert_eq!(again.header("idempotency-replayed"), Some("true"));
    assert_eq!(again.ok(202)["id"], new["id"]);
    let new_id = new["id"].as_str().unwrap();
    until(&app, &m.sk_test, &format!("/v1/webhook-deliveries/{new_id}"), |d| d["status"] == "delivered").await;
    let delivered = rx.received();
    assert_eq!(delivered.last().unwrap().header("webhook-id"), Some(d["eventId"].as_str().unwrap()));
    let resolved = until(&app, &m.sk_test, &format!("/v1/webhook-incidents/{id}"), |i| i["status"] == "resolved").await;
    assert!(resolved["resolvedAt"].is_string());

    // A disabled endpoint takes no replay.
    app.patch(&m.sk_test, &format!("/v1/webhook-endpoints/{ep}"), json!({ "state": "disabled" })).await.ok(200);
    app.post_idem(&m.sk_test, &replay, "replay-0002", json!({})).await.assert_error(409, "WEBHOOK_ENDPOINT_DISABLED");
    // An archived endpoint's deliveries and incidents stay readable.
    let archived =
        app.send(app.http.delete(app.url(&format!("/v1/webhook-endpoints/{ep}"))).bearer_auth(&m.sk_test)).await;
    archived.ok(200);
    let kept = app.get(&m.sk_test, &format!("/v1/webhook-deliveries/{}", d["id"].as_str().unwrap())).await;
    assert_eq!(kept.ok(200)["attempts"].as_array().unwrap().len(), 5);
    app.get(&m.sk_test, &format!("/v1/webhook-incidents/{id}")).await.ok(200);
    app.post_idem(&m.sk_test, &replay, "replay-0003", json!({})).await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");
}

#[tokio::test]
async fn a_rotated_secret_signs_alongside_the_old_one_until_the_overlap_ends() {
    let app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    let (ep, old) = endpoint(&app, &m.sk_test, &rx.url("/"), Some(&["invoice.paid"])).await;
    let rotate = format!("/v1/webhook-endpoints/{ep}/rotate-secret");
    let end = format!("/v1/webhook-endpoints/{ep}/end-secret-overlap");
    app.post(&m.sk_test, &end, json!({})).await.assert_error(409, "SECRET_OVERLAP_EXPIRED");
    let rotated = app.post(&m.sk_test, &rotate, json!({})).await.ok(200).clone();
    let new = rotated["signingSecret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    let ends = chrono::DateTime::parse_from_rfc3339(rotated["secretOverlap"]["endsAt"].as_str().unwrap()).unwrap();
    assert!((ends.timestamp() - chrono::Utc::now().timestamp() - 24 * 3600).abs() < 60);
    app.post(&m.sk_test, &rotate, json!({})).await.assert_error(409, "SECRET_OVERLAP_ACTIVE");

    paid_checkout(&app, &m.sk_test, "1.00").await;
    let r = rx.wait_for(1, Duration::from_secs(10)).await[0].clone();
    let ts = r.header("x-stablepay-timestamp").unwrap();
    let message = signed(ts, &r.body);
    let both = format!("t={ts},v1={},v1={}", hex_hmac(new.as_bytes(), &message), hex_hmac(old.as_bytes(), &message));
    assert_eq!(r.header("x-stablepay-signature"), Some(both.as_str()));
    assert_eq!(r.header("webhook-signature").unwrap().split(' ').count(), 2);
    for secret in [&new, &old] {
        assert!(snippet_accepts(&python(), "verify.py", secret, &r));
    }

    let ended = app.post(&m.sk_test, &end, json!({})).await.ok(200).clone();
    assert_eq!(ended["secretOverlap"], Value::Null);
    assert!(ended.get("signingSecret").is_none());
    app.post(&m.sk_test, &end, json!({})).await.assert_error(409, "SECRET_OVERLAP_EXPIRED");
    paid_checkout(&app, &m.sk_test, "1.00").await;
    let r = rx.wait_for(2, Duration::from_secs(10)).await[1].clone();
    let ts = r.header("x-stablepay-timestamp").unwrap();
    let only = format!("t={ts},v1={}", hex_hmac(new.as_bytes(), &signed(ts, &r.body)));
    assert_eq!(r.header("x-stablepay-signature"), Some(only.as_str()));
    assert!(!snippet_accepts("node", "verify.mjs", &old, &r));
}

#[tokio::test]
async fn test_events_reach_endpoints_flagged_and_stay_out_of_the_event_list() {
    let app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    let (all, _) = endpoint(&app, &m.sk_test, &rx.url("/all"), None).await;
    let (only_failed, _) = endpoint(&app, &m.sk_test, &rx.url("/failed"), Some(&["payment.failed"])).await;
    let sent = app.post(&m.sk_test, "/v1/webhooks/test", json!({ "type": "invoice.paid" })).await.ok(202).clone();
    let deliveries = sent["deliveries"].as_array().unwrap();
    assert_eq!(deliveries.len(), 1);
    assert_eq!(
        (deliveries[0]["endpointId"].as_str(), deliveries[0]["test"].as_bool()),
        (Some(all.as_str()), Some(true))
    );
    let r = rx.wait_for(1, Duration::from_secs(10)).await[0].clone();
    let body = r.json();
    assert_eq!((body["type"].as_str(), body["data"]["test"].as_bool()), (Some("invoice.paid"), Some(true)));
    assert_eq!(body["id"], sent["event"]["id"]);
    assert_eq!(body["data"]["object"], "invoice");
    // Named endpoint: sent even if it does not subscribe to the type.
    let one =
        app.post(&m.sk_test, "/v1/webhooks/test", json!({ "type": "invoice.paid", "endpointId": only_failed })).await;
    assert_eq!(one.ok(202)["deliveries"][0]["endpointId"], only_failed.as_str());
    let r = rx.wait_for(2, Duration::from_secs(10)).await[1].clone();
    assert_eq!(r.path, "/failed");
    // Not an event of the API.
    let events = app.get(&m.sk_test, "/v1/events").await.ok(200).clone();
    assert!(events["items"].as_array().unwrap().is_empty(), "{events}");
    app.get(&m.sk_test, &format!("/v1/events/{}", body["id"].as_str().unwrap())).await.assert_error(404, "NOT_FOUND");
    // Refusals.
    let field = app.post(&m.sk_test, "/v1/webhooks/test", json!({ "type": "invoice.created" })).await;
    assert_eq!(field.assert_error(400, "WEBHOOK_EVENT_UNSUPPORTED").as_deref(), Some("type"));
    let unknown = json!({ "type": "invoice.paid", "endpointId": "we_0000000000000000000000" });
    app.post(&m.sk_test, "/v1/webhooks/test", unknown).await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");
    app.patch(&m.sk_test, &format!("/v1/webhook-endpoints/{all}"), json!({ "state": "disabled" })).await.ok(200);
    let disabled = json!({ "type": "invoice.paid", "endpointId": all });
    app.post(&m.sk_test, "/v1/webhooks/test", disabled).await.assert_error(409, "WEBHOOK_ENDPOINT_DISABLED");
    let none = app.post(&m.sk_test, "/v1/webhooks/test", json!({ "type": "invoice.voided" })).await.ok(202).clone();
    assert!(none["deliveries"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn endpoints_are_validated_scoped_and_archived() {
    let app = app_with(&[]).await;
    let (a, b) = (app.merchant("A"), app.merchant("B"));
    let r = app.post(&a.sk_test, "/v1/webhook-endpoints", json!({ "url": "ftp://x.example" })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("url"));
    let r = app
        .post(
            &a.sk_test,
            "/v1/webhook-endpoints",
            json!({ "url": "https://x.example", "eventTypes": ["invoice.paid", "invoice.created"] }),
        )
        .await;
    assert_eq!(r.assert_error(400, "WEBHOOK_EVENT_UNSUPPORTED").as_deref(), Some("eventTypes[1]"));
    let r =
        app.post(&a.sk_test, "/v1/webhook-endpoints", json!({ "url": "https://x.example", "eventTypes": [] })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("eventTypes"));
    let r = app.post(&a.sk_test, "/v1/webhook-endpoints", json!({ "url": "https://x.example", "extra": 1 })).await;
    r.assert_error(400, "VALIDATION_ERROR");
    app.post(&a.pk_test, "/v1/webhook-endpoints", json!({ "url": "https://x.example" }))
        .await
        .assert_error(403, "API_KEY_FORBIDDEN");
    assert_eq!(
        app.get(&a.sk_test, "/v1/webhook-endpoints").await.ok(200)["items"],
        json!([]),
        "refusals change nothing"
    );

    let created = app
        .post(&a.sk_test, "/v1/webhook-endpoints", json!({ "url": "https://hooks.example/a", "description": "orders" }))
        .await;
    let e = created.ok(201).clone();
    assert_eq!(
        (e["object"].as_str(), e["mode"].as_str(), e["state"].as_str()),
        (Some("webhook_endpoint"), Some("test"), Some("enabled"))
    );
    assert_eq!(e["allEventTypes"], true);
    assert!(e["eventTypes"].as_array().unwrap().contains(&json!("invoice.paid")));
    assert_eq!(e["alertPreferences"], json!({ "onIncidentOpened": true, "onIncidentResolved": true }));
    let id = e["id"].as_str().unwrap();
    let path = format!("/v1/webhook-endpoints/{id}");
    // Other merchants and the other mode do not see it.
    app.get(&b.sk_test, &path).await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");
    app.patch(&b.sk_test, &path, json!({ "state": "disabled" })).await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");
    app.get(&a.sk_live, &path).await.assert_error(409, "MODE_MISMATCH");
    assert_eq!(app.get(&a.sk_live, "/v1/webhook-endpoints").await.ok(200)["items"], json!([]));
    app.get(&a.sk_test, "/v1/webhook-endpoints/we_nope").await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");

    let patched = app
        .patch(&a.sk_test, &path, json!({ "eventTypes": ["payment.failed"], "alertPreferences": { "onIncidentResolved": false }, "description": null }))
        .await
        .ok(200)
        .clone();
    assert_eq!(
        (patched["eventTypes"].clone(), patched["allEventTypes"].clone()),
        (json!(["payment.failed"]), json!(false))
    );
    assert_eq!(patched["alertPreferences"], json!({ "onIncidentOpened": true, "onIncidentResolved": false }));
    assert_eq!(patched["description"], Value::Null);
    let r = app.patch(&a.sk_test, &path, json!({ "state": "paused" })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("state"));
    let back = app.patch(&a.sk_test, &path, json!({ "eventTypes": null })).await.ok(200).clone();
    assert_eq!(back["allEventTypes"], true);
    let list = app.get(&a.sk_test, "/v1/webhook-endpoints").await.ok(200).clone();
    assert_eq!(list["items"].as_array().unwrap().len(), 1);

    let deleted = app.send(app.http.delete(app.url(&path)).bearer_auth(&a.sk_test)).await;
    assert_eq!(deleted.ok(200)["archived"], true);
    app.get(&a.sk_test, &path).await.assert_error(404, "WEBHOOK_ENDPOINT_NOT_FOUND");
    assert_eq!(app.get(&a.sk_test, "/v1/webhook-endpoints").await.ok(200)["items"], json!([]));
    app.get(&a.sk_test, "/v1/webhook-deliveries/whd_nope").await.assert_error(404, "WEBHOOK_DELIVERY_NOT_FOUND");
    let r = app.get(&a.sk_test, "/v1/webhook-deliveries?eventType=invoice.created").await;
    assert_eq!(r.assert_error(400, "WEBHOOK_EVENT_UNSUPPORTED").as_deref(), Some("eventType"));
    let r = app.get(&a.sk_test, "/v1/webhook-deliveries?status=sent").await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("status"));
}

#[tokio::test]
async fn events_go_only_to_endpoints_of_their_merchant_and_mode() {
    let app = app_with(&[]).await;
    let (a, b) = (app.merchant("A"), app.merchant("B"));
    let rx_a_test = Receiver::start().await;
    let rx_a_live = Receiver::start().await;
    let rx_b = Receiver::start().await;
    endpoint(&app, &a.sk_test, &rx_a_test.url("/"), None).await;
    endpoint(&app, &a.sk_live, &rx_a_live.url("/"), None).await;
    endpoint(&app, &b.sk_test, &rx_b.url("/"), None).await;
    let (disabled, _) = endpoint(&app, &a.sk_test, &rx_b.url("/disabled"), None).await;
    app.patch(&a.sk_test, &format!("/v1/webhook-endpoints/{disabled}"), json!({ "state": "disabled" })).await.ok(200);
    paid_checkout(&app, &a.sk_test, "4.00").await;
    let got = rx_a_test.wait_for(1, Duration::from_secs(10)).await;
    assert!(got.iter().all(|r| r.json()["mode"] == "test"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(rx_a_live.received().is_empty() && rx_b.received().is_empty());
}

#[tokio::test]
async fn a_worker_killed_mid_delivery_loses_nothing() {
    let mut app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    rx.queue(Reply::Hang);
    let (ep, _) = endpoint(&app, &m.sk_test, &rx.url("/"), Some(&["invoice.paid"])).await;
    paid_checkout(&app, &m.sk_test, "5.00").await;
    let first = rx.wait_for(1, Duration::from_secs(10)).await[0].clone();
    // Killed while the receiver holds the request: nothing is recorded, nothing flushed.
    app.kill_and_restart(&[
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000".to_owned()),
    ])
    .await;
    // Another event while the first delivery is still claimed by the dead worker.
    paid_checkout(&app, &m.sk_test, "6.00").await;
    let got = rx.wait_for(3, Duration::from_secs(30)).await;
    let ids: Vec<&str> = got.iter().map(|r| r.header("webhook-id").unwrap()).collect();
    assert_eq!(
        ids.iter().filter(|id| **id == first.header("webhook-id").unwrap()).count(),
        2,
        "the lost attempt ran again"
    );
    let list = until(&app, &m.sk_test, &format!("/v1/webhook-deliveries?endpointId={ep}"), |d| {
        let items = d["items"].as_array().unwrap();
        items.len() == 2 && items.iter().all(|i| i["status"] == "delivered")
    })
    .await;
    for d in list["items"].as_array().unwrap() {
        assert_eq!(d["attemptCount"], 1, "a lost attempt is not counted twice: {d}");
    }
}

/// Attempt outcomes are counted by category in the operator's metrics (delivered, or the
/// failure's category).
#[tokio::test]
async fn attempt_outcomes_are_counted_by_category_in_the_metrics() {
    let app = app_with(&[]).await;
    let m = app.merchant("Shop");
    let rx = Receiver::start().await;
    rx.queue(Reply::Status(503));
    endpoint(&app, &m.sk_test, &rx.url("/"), Some(&["invoice.paid"])).await;
    paid_checkout(&app, &m.sk_test, "5.00").await;
    // The first attempt fails with 503, the retry 200 ms later is delivered.
    rx.wait_for(2, Duration::from_secs(20)).await;
    let want = [
        r#"stablepay_webhook_attempts_total{outcome="http_5xx"} 1"#,
        r#"stablepay_webhook_attempts_total{outcome="delivered"} 1"#,
    ];
    let mut text = String::new();
    for _ in 0..100 {
        text = reqwest::get(format!("{}/metrics", app.metrics)).await.unwrap().text().await.unwrap();
        if want.iter().all(|w| text.contains(w)) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("missing {want:?}:\n{text}");
}
