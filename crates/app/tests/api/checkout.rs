//! Checkout sessions and payments: creation rules, key capabilities, retrieval fields, scoping,
//! and the body conventions (malformed JSON, content type, unknown fields).

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::TestApp;

#[tokio::test]
async fn create_with_secret_key_returns_every_field() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let res = app
        .post(
            &m.sk_test,
            "/v1/checkout-sessions",
            json!({
                "amount": "10.5",
                "externalReference": "order-1",
                "customerEmail": "buyer@example.com",
                "successUrl": "https://shop.example/thanks",
                "cancelUrl": "https://shop.example/cart",
                "metadata": {"cart": 42},
                "expiresInMinutes": 60
            }),
        )
        .await;
    let cs = res.ok(201);
    assert_eq!(cs["object"], "checkout_session");
    assert_eq!(cs["id"], cs["checkoutId"]);
    assert!(cs["id"].as_str().unwrap().starts_with("cs_"));
    assert_eq!(cs["mode"], "test");
    assert_eq!(cs["status"], "pending");
    assert_eq!(cs["collectionState"], "open");
    assert_eq!(cs["amountDue"], "10.500000");
    assert_eq!(cs["total"], "10.500000");
    assert_eq!(cs["customerAmountPaid"], "0.000000");
    assert_eq!(cs["customerAmountRemaining"], "10.500000");
    assert_eq!(cs["currencyCode"], "USDC");
    assert_eq!(cs["tokenSymbol"], "USDC");
    assert_eq!(cs["chainId"], 137);
    assert_eq!(cs["tokenContract"], "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");
    assert!(cs["settlementWalletAddress"].as_str().unwrap().starts_with("0x"));
    assert_eq!(cs["externalReference"], "order-1");
    // The linked invoice is numbered at creation.
    assert_eq!(cs["invoiceNumber"], "INV-000001");
    let url = cs["checkoutUrl"].as_str().unwrap();
    assert_eq!(url, format!("{}/checkout/{}", app.base, cs["id"].as_str().unwrap()));
    let created = chrono::DateTime::parse_from_rfc3339(cs["createdAt"].as_str().unwrap()).unwrap();
    let expires = chrono::DateTime::parse_from_rfc3339(cs["expiresAt"].as_str().unwrap()).unwrap();
    assert_eq!((expires - created).num_minutes(), 60);
    // Secret-key reads carry the money semantics.
    for f in ["platformFee", "netAmount", "expectedMerchantSettlement", "merchantAmountSettled", "overpaymentAmount"] {
        assert!(cs[f].is_string(), "{f} missing");
    }
    // The linked invoice got the metadata.
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await;
    let inv = inv.ok(200);
    assert_eq!(inv["metadata"], json!({"cart": 42}));
    assert_eq!(inv["kind"], "amount_only");
    assert_eq!(inv["customer"]["email"], "buyer@example.com");
}

#[tokio::test]
async fn publishable_keys_send_only_amount_and_reference() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let res = app.post(&m.pk_test, "/v1/checkout-sessions", json!({"amount": "5", "externalReference": "r"})).await;
    let cs = res.ok(201).clone();
    assert!(cs.get("platformFee").is_none(), "publishable reads carry no secret fields");
    for (field, value) in [
        ("customerEmail", json!("a@b.co")),
        ("successUrl", json!("https://x.example")),
        ("cancelUrl", json!("https://x.example")),
        ("metadata", json!({})),
        ("expiresInMinutes", json!(30)),
        // Any other member, known to no form, is refused the same way (not a 400).
        ("lines", json!([])),
        ("notAField", json!(1)),
    ] {
        let mut body = json!({"amount": "5"});
        body[field] = value;
        let res = app.post(&m.pk_test, "/v1/checkout-sessions", body).await;
        assert_eq!(res.assert_error(403, "PUBLIC_KEY_FIELD_NOT_ALLOWED").as_deref(), Some(field));
    }
    // A secret-only field sent as null is sent: refused the same way (the spec refuses any
    // other field), naming it; externalReference may be null.
    for field in ["metadata", "customerEmail", "successUrl", "expiresInMinutes"] {
        let mut body = json!({"amount": "5", "externalReference": null});
        body[field] = Value::Null;
        let res = app.post(&m.pk_test, "/v1/checkout-sessions", body).await;
        assert_eq!(res.assert_error(403, "PUBLIC_KEY_FIELD_NOT_ALLOWED").as_deref(), Some(field));
    }
    app.post(&m.pk_test, "/v1/checkout-sessions", json!({"amount": "5", "externalReference": null})).await.ok(201);
    // A secret key sending an unknown member gets the validation error that names it.
    let r = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "5", "notAField": 1})).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("notAField"));
    // A body that is not an object is refused as such.
    let r = app.post(&m.sk_test, "/v1/checkout-sessions", json!(null)).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("body"));
    // A publishable key reads the session back, without secret fields.
    let got = app.get(&m.pk_test, &format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap())).await;
    assert!(got.ok(200).get("netAmount").is_none());
    // ...but is refused on secret routes.
    app.get(&m.pk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap()))
        .await
        .assert_error(403, "API_KEY_FORBIDDEN");
    // Nothing was created by the refused requests (the two accepted ones only).
    let rows = app.db.query("SELECT count(*) AS n FROM invoices").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 2);
}

#[tokio::test]
async fn amount_and_expiry_rules() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    for bad in [
        json!(10),
        json!("-1"),
        json!("+1"),
        json!("0"),
        json!("1.0000001"),
        json!("1e3"),
        json!(" 1"),
        json!(""),
        json!(".5"),
        json!("abc"),
        json!(null),
    ] {
        let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": bad})).await;
        assert_eq!(res.assert_error(400, "INVALID_AMOUNT").as_deref(), Some("amount"), "{bad}");
    }
    app.post(&m.sk_test, "/v1/checkout-sessions", json!({})).await.assert_error(400, "VALIDATION_ERROR");
    for bad in [json!(4), json!(1441), json!(0), json!(-5), json!(30.5), json!("30")] {
        let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "expiresInMinutes": bad})).await;
        assert_eq!(res.assert_error(400, "INVALID_EXPIRY").as_deref(), Some("expiresInMinutes"), "{bad}");
    }
    for ok in [5, 1440] {
        app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "expiresInMinutes": ok})).await.ok(201);
    }
    let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "successUrl": "ftp://x"})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("successUrl"));
    let res = app
        .post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "cancelUrl": "https://u:p@x.example"}))
        .await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("cancelUrl"));
    let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "metadata": [1]})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("metadata"));
    let big = "x".repeat(16 * 1024);
    let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "metadata": {"k": big}})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("metadata"));
    let res = app
        .post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "externalReference": "é".repeat(128)}))
        .await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("externalReference"));
    let res =
        app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "customerEmail": "not-an-email"})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("customerEmail"));
    // Only the successful creations exist.
    let rows = app.db.query("SELECT count(*) AS n FROM checkout_sessions").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 2);
}

#[tokio::test]
async fn body_conventions() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let json_ct = [("Content-Type", "application/json")];
    let res = app
        .request(Method::POST, "/v1/checkout-sessions", Some(&m.sk_test), &json_ct, Some(b"{\"amount\": ".to_vec()))
        .await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("body"));
    let res = app
        .request(
            Method::POST,
            "/v1/checkout-sessions",
            Some(&m.sk_test),
            &[("Content-Type", "text/plain")],
            Some(b"{\"amount\":\"1\"}".to_vec()),
        )
        .await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("Content-Type"));
    let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "currency": "EUR"})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("currency"));
    let res = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "1", "externalReference": 5})).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("externalReference"));
    // Exactly 1 MiB of JSON is parsed (and refused as JSON), one byte more is 413.
    let mut body = b"{\"amount\":\"1\",\"externalReference\":\"".to_vec();
    body.resize(1024 * 1024 - 2, b'a');
    body.extend_from_slice(b"\"}");
    let res = app.request(Method::POST, "/v1/checkout-sessions", Some(&m.sk_test), &json_ct, Some(body.clone())).await;
    assert_eq!(res.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("externalReference"));
    body.insert(body.len() - 2, b'a');
    let res = app.request(Method::POST, "/v1/checkout-sessions", Some(&m.sk_test), &json_ct, Some(body)).await;
    res.assert_error(413, "REQUEST_TOO_LARGE");
}

#[tokio::test]
async fn ids_of_other_merchants_and_modes() {
    let app = TestApp::spawn().await;
    let a = app.merchant("A");
    let b = app.merchant("B");
    let cs = app.post(&a.sk_test, "/v1/checkout-sessions", json!({"amount": "3"})).await.ok(201).clone();
    let (cs_id, inv_id) = (cs["id"].as_str().unwrap(), cs["invoiceId"].as_str().unwrap());
    let pay = app
        .post(&a.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs_id}/payments"), json!({}))
        .await
        .ok(201)
        .clone();
    let pay_id = pay["id"].as_str().unwrap();
    // Another merchant: NOT_FOUND (never a hint that the id exists).
    app.get(&b.sk_test, &format!("/v1/checkout-sessions/{cs_id}")).await.assert_error(404, "NOT_FOUND");
    app.get(&b.sk_test, &format!("/v1/invoices/{inv_id}")).await.assert_error(404, "INVOICE_NOT_FOUND");
    app.get(&b.sk_test, &format!("/v1/payments/{pay_id}")).await.assert_error(404, "NOT_FOUND");
    app.post(&b.sk_test, &format!("/v1/invoices/{inv_id}/void"), json!({"reason": "x"}))
        .await
        .assert_error(404, "INVOICE_NOT_FOUND");
    // Same merchant, other mode: MODE_MISMATCH.
    app.get(&a.sk_live, &format!("/v1/checkout-sessions/{cs_id}")).await.assert_error(409, "MODE_MISMATCH");
    app.get(&a.sk_live, &format!("/v1/invoices/{inv_id}")).await.assert_error(409, "MODE_MISMATCH");
    app.get(&a.sk_live, &format!("/v1/payments/{pay_id}")).await.assert_error(409, "MODE_MISMATCH");
    // Garbage ids.
    app.get(&a.sk_test, "/v1/checkout-sessions/nope").await.assert_error(404, "NOT_FOUND");
    app.get(&a.sk_test, "/v1/payments/pay_doesnotexist").await.assert_error(404, "NOT_FOUND");
    // The owner reads all of them.
    let got = app.get(&a.sk_test, &format!("/v1/payments/{pay_id}")).await;
    let p = got.ok(200);
    assert_eq!(p["status"], "confirmed");
    assert_eq!(p["amountReceived"], "3.000000");
    assert_eq!(p["invoiceId"], inv_id);
}

#[tokio::test]
async fn live_mode_needs_activation() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.post(&m.sk_live, "/v1/checkout-sessions", json!({"amount": "1"}))
        .await
        .assert_error(403, "ACTIVE_MERCHANT_REQUIRED");
    app.activate(&m, "USDT");
    let cs = app.post(&m.pk_live, "/v1/checkout-sessions", json!({"amount": "1"})).await.ok(201).clone();
    assert_eq!(cs["mode"], "live");
    assert_eq!(cs["currencyCode"], "USDT");
    assert_eq!(cs["settlementWalletAddress"], "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed");
    assert_eq!(cs["tokenContract"], "0xc2132D05D31c914a87C6611C10748AEb04B58e8F");
    assert_eq!(cs["invoiceNumber"], "INV-000001", "live numbers are their own sequence");
    // Test helpers refuse live keys.
    let res = app
        .post(
            &m.sk_live,
            &format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap()),
            json!({}),
        )
        .await;
    res.assert_error(403, "API_KEY_FORBIDDEN");
    app.post(&m.pk_test, "/v1/test-helpers/clock/advance", json!({"seconds": 1}))
        .await
        .assert_error(403, "API_KEY_FORBIDDEN");
}

#[tokio::test]
async fn platform_fee_and_invoice_prefix_come_from_the_merchant() {
    let app = TestApp::spawn().await;
    let created =
        app.cli_ok(&["merchant", "create", "--name", "Acme", "--invoice-prefix", "ACME", "--fee-bps", "250", "--json"]);
    let id = created["id"].as_str().unwrap();
    let key = app.create_key(id, "test", "secret");
    let cs = app.post(&key, "/v1/checkout-sessions", json!({"amount": "10"})).await.ok(201).clone();
    let cs_id = cs["id"].as_str().unwrap();
    app.post(&key, &format!("/v1/test-helpers/checkout-sessions/{cs_id}/payments"), json!({"amount": "1"}))
        .await
        .ok(201);
    let paid = app.get(&key, &format!("/v1/checkout-sessions/{cs_id}")).await.ok(200).clone();
    assert_eq!(paid["invoiceNumber"], "ACME-000001");
    assert_eq!(cs["platformFee"], "0.250000");
    assert_eq!(cs["netAmount"], "9.750000");
    assert_eq!(cs["expectedMerchantSettlement"], "9.750000");
    let (ok, out) = app.cli(&["merchant", "create", "--name", "Bad", "--fee-bps", "10001", "--json"]);
    assert!(!ok);
    assert_eq!(out["error"]["details"]["field"], "feeBasisPoints");
    let (ok, out) = app.cli(&["merchant", "create", "--name", "Bad", "--invoice-prefix", "inv x", "--json"]);
    assert!(!ok);
    assert_eq!(out["error"]["details"]["field"], "invoicePrefix");
}
