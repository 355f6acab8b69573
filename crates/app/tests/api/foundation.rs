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
    app.cli_ok(&["key", "revoke", key_id, "--json"]);
    app.get(key, "/v1/events").await.assert_error(401, "INVALID_API_KEY");

    // Suspended merchant.
    app.cli_ok(&["merchant", "suspend", &m.id, "--json"]);
    app.get(&m.sk_test, "/v1/events").await.assert_error(403, "ACCOUNT_SUSPENDED");

    // The key never appears in the logs.
    let logs = app.logs();
    assert!(!logs.contains(&m.sk_test) && !logs.contains(key), "a key leaked into the logs");
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
