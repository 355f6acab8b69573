//! The conventions of the foundation: envelope, request ids, authentication, errors, limits,
//! health, OpenAPI and the operator CLI.

use reqwest::Method;
use serde_json::json;

use crate::support::{TestApp, fresh_db};

#[tokio::test]
async fn success_envelope_and_request_id() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let res = app.get(&m.sk_test, "/v1/events").await;
    let data = res.ok(200);
    assert_eq!(data["items"], json!([]));
    assert_eq!(data["hasMore"], false);
    assert!(data["nextCursor"].is_null());
    let rid = res.header("x-request-id").unwrap();
    assert!(rid.starts_with("req_") && rid.len() > 20);
    // Every response gets its own id.
    let again = app.get(&m.sk_test, "/v1/events").await;
    assert_ne!(again.header("x-request-id"), Some(rid));
}

#[tokio::test]
async fn both_key_headers_are_accepted() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let bearer = app
        .request(Method::GET, "/v1/events", None, &[("Authorization", &format!("Bearer {}", m.sk_test))], None)
        .await;
    bearer.ok(200);
    let x_api_key = app.request(Method::GET, "/v1/events", None, &[("X-API-Key", &m.sk_test)], None).await;
    x_api_key.ok(200);
}

#[tokio::test]
async fn authentication_failures() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");

    let none = app.request(Method::GET, "/v1/events", None, &[], None).await;
    none.assert_error(401, "API_KEY_REQUIRED");

    for bad in [
        "sk_test_0000000000000000000000000000000000000000", // well-formed, unknown
        "sk_test_short",                                    // malformed
        "not-a-key",
        "",
    ] {
        let res = app.request(Method::GET, "/v1/events", None, &[("X-API-Key", bad)], None).await;
        res.assert_error(401, "INVALID_API_KEY");
    }
    let basic = app.request(Method::GET, "/v1/events", None, &[("Authorization", "Basic abc")], None).await;
    basic.assert_error(401, "INVALID_API_KEY");

    // A publishable key on a secret-only route.
    app.get(&m.pk_test, "/v1/events").await.assert_error(403, "API_KEY_FORBIDDEN");

    // Revoked key.
    let extra = app.cli_ok(&["key", "create", "--merchant", &m.id, "--mode", "test", "--type", "secret", "--json"]);
    let (key_id, key) = (extra["id"].as_str().unwrap(), extra["key"].as_str().unwrap());
    app.get(key, "/v1/events").await.ok(200);
    // The CLI is another process: the server learns of the change from the database's
    // notification (docs/ARCHITECTURE.md, the key cache), within moments however loaded.
    app.cli_ok(&["key", "revoke", key_id, "--json"]);
    app.get_until(key, "/v1/events", 401).await.assert_error(401, "INVALID_API_KEY");

    // Suspended merchant.
    app.cli_ok(&["merchant", "suspend", &m.id, "--json"]);
    app.get_until(&m.sk_test, "/v1/events", 403).await.assert_error(403, "ACCOUNT_SUSPENDED");

    // A key pasted into a path (by mistake, or as a probe) is redacted from the logged path.
    app.get(&m.sk_test, &format!("/v1/invoices/{}", m.sk_test)).await;
    app.get(&m.sk_test, &format!("/v1/invoices/Bearer%20{key}/x")).await;
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    // The key never appears in the logs.
    let logs = app.logs();
    assert!(!logs.contains(&m.sk_test) && !logs.contains(key), "a key leaked into the logs");
    assert!(logs.contains("/v1/invoices/[redacted]/x"), "the request is logged, redacted");
}

#[tokio::test]
async fn unknown_route_is_not_found_in_the_envelope() {
    let app = TestApp::spawn().await;
    let res = app.request(Method::GET, "/v1/nothing-here", None, &[], None).await;
    res.assert_error(404, "NOT_FOUND");
    let res = app.request(Method::DELETE, "/elsewhere", None, &[], None).await;
    res.assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn oversized_body_is_413_in_the_envelope() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let body = vec![b' '; 1024 * 1024 + 1];
    let res = app
        .request(Method::POST, "/v1/events", Some(&m.sk_test), &[("Content-Type", "application/json")], Some(body))
        .await;
    res.assert_error(413, "REQUEST_TOO_LARGE");
}

#[tokio::test]
async fn health_and_readiness() {
    let app = TestApp::spawn().await;
    app.request(Method::GET, "/healthz", None, &[], None).await.ok(200);
    let ready = app.request(Method::GET, "/readyz", None, &[], None).await;
    assert_eq!(ready.ok(200)["status"], "ready");
}

#[tokio::test]
async fn database_unavailable_is_503_and_health_stays_up() {
    // Point the service at a port where nothing listens.
    let db = fresh_db().await;
    let env = [
        ("DATABASE_URL", "postgres://postgres@127.0.0.1:9/none".to_owned()),
        ("STABLEPAY_DB_TIMEOUT_MS", "500".to_owned()),
    ];
    let app = TestApp::spawn_with(db, &env, &["--no-migrate", "--no-worker"]).await;
    app.request(Method::GET, "/healthz", None, &[], None).await.ok(200);
    let ready = app.request(Method::GET, "/readyz", None, &[], None).await;
    ready.assert_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(ready.header("retry-after"), Some("1"));
    let res = app.get("sk_test_0000000000000000000000000000000000000000", "/v1/events").await;
    res.assert_error(503, "SERVICE_UNAVAILABLE");
}

#[tokio::test]
async fn openapi_document_is_3_1_version_1_0_0() {
    let app = TestApp::spawn().await;
    let res = app.request(Method::GET, "/v1/openapi.json", None, &[], None).await;
    assert_eq!(res.status.as_u16(), 200);
    let doc = &res.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert_eq!(doc["info"]["version"], "1.0.0");
    for path in ["/v1/events", "/v1/events/{id}", "/healthz", "/readyz"] {
        assert!(doc["paths"][path].is_object(), "{path} missing from the document");
    }
    assert!(res.header("x-request-id").is_some());
}

#[tokio::test]
async fn cli_validates_wallets_and_merchants() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let (ok, out) = app.cli(&[
        "merchant",
        "activate",
        &m.id,
        "--settlement-wallet",
        "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeD",
        "--json",
    ]);
    assert!(!ok);
    assert_eq!(out["error"]["code"], "INVALID_WALLET_ADDRESS");
    let (ok, out) = app.cli(&["merchant", "activate", &m.id, "--settlement-wallet", "0x1234", "--json"]);
    assert!(!ok);
    assert_eq!(out["error"]["code"], "INVALID_WALLET_ADDRESS");
    let good = app.cli_ok(&[
        "merchant",
        "activate",
        &m.id,
        "--settlement-wallet",
        "0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed",
        "--token",
        "USDT",
        "--json",
    ]);
    assert_eq!(good["settlementWallet"], "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
    assert_eq!(good["token"], "USDT");
    let (ok, out) =
        app.cli(&["key", "create", "--merchant", "mer_doesnotexist", "--mode", "test", "--type", "secret", "--json"]);
    assert!(!ok);
    assert_eq!(out["error"]["code"], "NOT_FOUND");
    // Only digests are stored.
    let rows = app.db.query("SELECT display_prefix, length(digest) AS n FROM api_keys").await;
    assert_eq!(rows.len(), 4);
    for row in rows {
        let prefix: String = row.get("display_prefix");
        let n: i32 = row.get("n");
        assert_eq!((prefix.len(), n), (12, 32));
    }
}

#[tokio::test]
async fn bad_configuration_stops_start_up_naming_the_value() {
    let out = std::process::Command::new(crate::support::BIN)
        .arg("serve")
        .env("STABLEPAY_BIND", "not-an-address")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("STABLEPAY_BIND"));
}

#[tokio::test]
async fn the_service_recovers_when_the_database_returns() {
    use crate::support::Proxy;
    let db = fresh_db().await;
    let mut proxy = Proxy::start("127.0.0.1:5432").await;
    let via_proxy = db.url().replace("127.0.0.1:5432", &format!("127.0.0.1:{}", proxy.port));
    let env = [("DATABASE_URL", via_proxy), ("STABLEPAY_DB_TIMEOUT_MS", "1000".to_owned())];
    let app = TestApp::spawn_with(db, &env, &["--no-worker"]).await;
    let m = app.merchant("Shop"); // the CLI talks to the database directly
    app.get(&m.sk_test, "/v1/events").await.ok(200);

    proxy.cut();
    let down = app.get(&m.sk_test, "/v1/events").await;
    down.assert_error(503, "SERVICE_UNAVAILABLE");
    app.request(Method::GET, "/readyz", None, &[], None).await.assert_error(503, "SERVICE_UNAVAILABLE");
    app.request(Method::GET, "/healthz", None, &[], None).await.ok(200);

    proxy.restore().await;
    let mut recovered = false;
    for _ in 0..50 {
        if app.get(&m.sk_test, "/v1/events").await.status.as_u16() == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(recovered, "the service did not recover after the database came back");
    app.request(Method::GET, "/readyz", None, &[], None).await.ok(200);
}

/// The served OpenAPI document is the committed `docs/openapi.json` (partners diff versions of
/// it): a change to the API regenerates it with `cargo xtask openapi > docs/openapi.json`.
#[tokio::test]
async fn the_served_document_is_the_committed_one() {
    let app = TestApp::spawn().await;
    let served: serde_json::Value =
        app.http.get(app.url("/v1/openapi.json")).send().await.unwrap().json().await.unwrap();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let committed: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        served == committed,
        "docs/openapi.json is out of date: run `cargo xtask openapi > docs/openapi.json` and review the diff"
    );
}

/// Bodies are JSON objects, messages name JSON shapes (never internal types), a missing body
/// names what is missing, and a wrong method on a known path is 405 with Allow.
#[tokio::test]
async fn requests_are_held_to_the_document() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    for body in [r#"["5","from-an-array",null,null,null,null,null]"#, "[1]", "\"5\"", "5"] {
        let r = app
            .request(
                reqwest::Method::POST,
                "/v1/checkout-sessions",
                Some(&m.sk_test),
                &[("Content-Type", "application/json")],
                Some(body.as_bytes().to_vec()),
            )
            .await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("body"), "{body}");
    }
    let r = app
        .request(
            reqwest::Method::POST,
            "/v1/test-helpers/clock/advance",
            Some(&m.sk_test),
            &[("Content-Type", "application/json")],
            Some(b"[1]".to_vec()),
        )
        .await;
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(app.get(&m.sk_test, "/v1/events?type=invoice.issued").await.ok(200)["items"], serde_json::json!([]));
    let nested = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            serde_json::json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "customer": "Ada" }),
        )
        .await;
    let message = nested.body["error"]["message"].as_str().unwrap().to_owned();
    assert!(!message.contains("struct") && !message.contains("Customer"), "{message}");
    // Arrays where a nested object is expected are refused as well, naming the field, and
    // nothing is created.
    let invoices = || async { app.db.query("SELECT count(*) AS n FROM invoices").await[0].get::<_, i64>("n") };
    let before = invoices().await;
    let line = serde_json::json!({ "description": "x", "quantity": "1", "unitAmount": "1" });
    let link = serde_json::json!({ "title": "t", "amountType": "fixed", "amount": "5" });
    for (path, body, field) in [
        ("/v1/invoices", serde_json::json!({ "lines": [["x", "1", "1"]] }), "lines[0]"),
        ("/v1/invoices", serde_json::json!({ "lines": [line], "customer": ["Ada"] }), "customer"),
        ("/v1/invoices", serde_json::json!({ "lines": [line], "discount": ["fixed", "1"] }), "discount"),
        ("/v1/invoices", serde_json::json!({ "lines": [line], "taxes": [["VAT", "1"]] }), "taxes[0]"),
        ("/v1/invoices", serde_json::json!({ "lines": [line], "reminderSchedule": [true] }), "reminderSchedule"),
        (
            "/v1/payment-links",
            {
                let mut l = link.clone();
                l["collect"] = serde_json::json!([true]);
                l
            },
            "collect",
        ),
    ] {
        let r = app.post(&m.sk_test, path, body.clone()).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field), "{body}");
        let message = r.body["error"]["message"].as_str().unwrap();
        assert!(message.ends_with("must be a JSON object."), "{message}");
    }
    assert_eq!(invoices().await, before);

    // No body: the first missing field.
    let inv = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            serde_json::json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }] }),
        )
        .await
        .ok(201)
        .clone();
    let issue = format!("/v1/invoices/{}/issue", inv["id"].as_str().unwrap());
    let r = app.request(reqwest::Method::POST, &issue, Some(&m.sk_test), &[], None).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("version"));
    let r = app.request(reqwest::Method::POST, "/v1/checkout-sessions", Some(&m.sk_test), &[], None).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("amount"));

    // A leap second is the second after it, so that every rendered time is an ordinary one.
    let leap = serde_json::json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "dueAt": "2030-06-30T23:59:60Z" });
    assert_eq!(app.post(&m.sk_test, "/v1/invoices", leap).await.ok(201)["dueAt"], "2030-07-01T00:00:00.000Z");

    // A due date in the past.
    let past = serde_json::json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "dueAt": "2020-01-01T00:00:00Z" });
    let r = app.post(&m.sk_test, "/v1/invoices", past).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("dueAt"));
    // A time that would be past the year 9999 in UTC (it could not be read back).
    let far = serde_json::json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }], "dueAt": "9999-12-31T23:59:59-23:59" });
    let r = app.post(&m.sk_test, "/v1/invoices", far).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("dueAt"));
    app.get(&m.sk_test, "/v1/invoices").await.ok(200);

    // Methods.
    let r = app.request(reqwest::Method::DELETE, "/v1/checkout-sessions", Some(&m.sk_test), &[], None).await;
    r.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(r.header("allow"), Some("POST"));
    let r = app.request(reqwest::Method::PUT, "/v1/invoices/inv_x", Some(&m.sk_test), &[], None).await;
    r.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(r.header("allow"), Some("GET, PATCH"));
    app.request(reqwest::Method::GET, "/v1/nothing-here", Some(&m.sk_test), &[], None)
        .await
        .assert_error(404, "NOT_FOUND");
}

/// `STABLEPAY_LOG_FORMAT=json`: every log line is one JSON object; no key reaches the logs.
#[tokio::test]
async fn logs_can_be_json_lines_without_secrets() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_LOG_FORMAT", "json".to_owned())], &[]).await;
    let m = app.merchant("Shop");
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201);
    // An internal error is logged with its request's span (an unknown route is not an error;
    // a malformed body is not either): a request with a bad key is enough to touch the logs.
    app.get("sk_test_not_a_real_key", "/v1/events").await.assert_error(401, "INVALID_API_KEY");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let logs = app.logs();
    let lines: Vec<&str> = logs.lines().filter(|l| !l.trim().is_empty()).collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["timestamp"].is_string() && v["level"].is_string(), "{line}");
    }
    assert!(lines.iter().any(|l| l.contains("HTTP API started")), "{logs}");
    // Each request's line names its request id, merchant and mode.
    let served = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find(|v| v["fields"]["message"] == "served" && v["span"]["path"] == "/v1/checkout-sessions")
        .unwrap_or_else(|| panic!("no served line: {logs}"));
    assert_eq!(served["span"]["merchant"], m.id.as_str(), "{served}");
    assert_eq!(served["span"]["mode"], "test", "{served}");
    assert!(served["span"]["request_id"].as_str().is_some_and(|r| r.starts_with("req_")), "{served}");
    for secret in [m.sk_test.as_str(), m.pk_test.as_str(), "sk_test_not_a_real_key", TestApp::SECRET_KEY] {
        assert!(!logs.contains(secret), "a secret reached the logs");
    }
}
