//! Restricted API keys: a secret key limited to some resource families, read or write (write
//! includes read), refused elsewhere with PERMISSION_DENIED naming what it lacks; unrestricted
//! keys and publishable keys as before.

use serde_json::json;

use crate::support::{Response, TestApp};

fn denied(r: &Response, permission: &str) {
    r.assert_error(403, "PERMISSION_DENIED");
    assert_eq!(r.body["error"]["details"]["permission"], permission, "{}", r.body);
}

#[tokio::test]
async fn a_restricted_key_does_only_what_its_permissions_name() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let args = ["key", "create", "--merchant", &m.id, "--mode", "test", "--type", "secret", "--json"];
    let mut restricted = args.to_vec();
    restricted.extend(["--permissions", "invoices:read,checkout_sessions:write,invoices:read"]);
    let created = app.cli_ok(&restricted);
    assert_eq!(created["permissions"], "checkout_sessions:write,invoices:read");
    let rk = created["key"].as_str().unwrap().to_owned();
    assert!(rk.starts_with("sk_test_"));

    // checkout_sessions:write: create and read checkouts, and simulate their payments.
    let cs = app.post(&rk, "/v1/checkout-sessions", json!({ "amount": "12.50" })).await.ok(201).clone();
    let cs_id = cs["id"].as_str().unwrap();
    app.get(&rk, &format!("/v1/checkout-sessions/{cs_id}")).await.ok(200);
    app.post(&rk, &format!("/v1/test-helpers/checkout-sessions/{cs_id}/payments"), json!({})).await.ok(201);
    // invoices:read: read, never change.
    let inv_id = cs["invoiceId"].as_str().unwrap();
    app.get(&rk, &format!("/v1/invoices/{inv_id}")).await.ok(200);
    app.get(&rk, "/v1/invoices").await.ok(200);
    let invoice = json!({ "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": "3" }] });
    denied(&app.post(&rk, "/v1/invoices", invoice.clone()).await, "invoices:write");
    denied(&app.post(&rk, &format!("/v1/invoices/{inv_id}/void"), json!({})).await, "invoices:write");
    denied(&app.post(&rk, "/v1/test-helpers/clock/advance", json!({ "seconds": 60 })).await, "invoices:write");
    // Families it was not given, and the readiness only an unrestricted key reads.
    denied(&app.get(&rk, "/v1/events").await, "events:read");
    denied(&app.get(&rk, &format!("/v1/payments/{}", "pay_x")).await, "payments:read");
    denied(&app.get(&rk, "/v1/payment-links").await, "payment_links:read");
    denied(&app.get(&rk, "/v1/webhook-endpoints").await, "webhooks:read");
    denied(&app.post(&rk, "/v1/exports/sync", json!({})).await, "exports:write");
    denied(&app.get(&rk, "/v1/diagnostics").await, "unrestricted");
    // The refusal comes before anything else is looked at, and changes nothing.
    let listed = app.get(&m.sk_test, "/v1/invoices").await.ok(200).clone();
    assert_eq!(listed["items"].as_array().unwrap().len(), 1);

    // The merchant's unrestricted key is as it was.
    app.post(&m.sk_test, "/v1/invoices", invoice).await.ok(201);
    app.get(&m.sk_test, "/v1/events").await.ok(200);

    // Write includes read.
    let mut writer = args.to_vec();
    writer.extend(["--permissions", "events:write"]);
    let wk = app.cli_ok(&writer)["key"].as_str().unwrap().to_owned();
    app.get(&wk, "/v1/events").await.ok(200);

    // What the operator cannot make, and what the list shows.
    for bad in ["invoices", "invoices:admin", "customers:read", ""] {
        let mut a = args.to_vec();
        a.extend(["--permissions", bad]);
        let (ok, value) = app.cli(&a);
        assert!(!ok, "{bad}");
        assert_eq!(value["error"]["details"]["field"], "permissions", "{bad}: {value}");
    }
    let publishable = [
        "key",
        "create",
        "--merchant",
        &m.id,
        "--mode",
        "test",
        "--type",
        "publishable",
        "--permissions",
        "invoices:read",
        "--json",
    ];
    let (ok, value) = app.cli(&publishable);
    assert!(!ok && value["error"]["details"]["field"] == "permissions", "{value}");
    let list = app.cli_ok(&["key", "list", "--merchant", &m.id, "--json"]);
    let restricted: Vec<_> =
        list["keys"].as_array().unwrap().iter().filter_map(|k| k["permissions"].as_str()).collect();
    assert_eq!(restricted, ["checkout_sessions:write,invoices:read", "events:write"]);
}
