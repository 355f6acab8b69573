//! Payment links end to end: the merchant's routes (fields, versions, lifecycle, filters), the
//! public routes (view, submission and every refusal), a single-use link under 100 concurrent
//! submissions and its release at expiry, completion and expiry events, the hosted link page,
//! and the link quotas.

use serde_json::{Value, json};

use crate::support::{Merchant, Response, TestApp, client_from};

fn fixed(title: &str, amount: &str) -> Value {
    json!({ "title": title, "amountType": "fixed", "amount": amount })
}

async fn create(app: &TestApp, key: &str, body: Value) -> Value {
    app.post(key, "/v1/payment-links", body).await.ok(201).clone()
}

fn public_id(link: &Value) -> String {
    link["publicId"].as_str().unwrap().to_owned()
}

/// A customer's submission, each from the next of 250 loopback addresses (the 10-a-minute quota
/// per address and link is tested on its own).
async fn submit(app: &TestApp, link: &Value, idem: &str, body: Value) -> Response {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 250 + 1;
    let client = client_from(&format!("127.0.4.{n}"));
    let path = format!("/v1/public/payment-links/{}/checkout", public_id(link));
    app.send(client.post(app.url(&path)).header("Idempotency-Key", idem).json(&body)).await
}

async fn public_view(app: &TestApp, link: &Value) -> Response {
    app.send(app.http.get(app.url(&format!("/v1/public/payment-links/{}", public_id(link))))).await
}

async fn advance(app: &TestApp, m: &Merchant, seconds: i64) {
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": seconds })).await.ok(200);
}

async fn events(app: &TestApp, m: &Merchant, kind: &str) -> Vec<Value> {
    let page = app.get(&m.sk_test, &format!("/v1/events?type={kind}")).await.ok(200).clone();
    page["items"].as_array().cloned().unwrap_or_else(|| page.as_array().cloned().unwrap_or_default())
}

async fn list(app: &TestApp, key: &str, query: &str) -> Vec<Value> {
    let page = app.get(key, &format!("/v1/payment-links{query}")).await.ok(200).clone();
    page["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn creation_checks_every_field_and_changes_nothing_when_refused() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let link = create(&app, &m.sk_test, fixed("Coffee beans", "12.50")).await;
    assert!(link["id"].as_str().unwrap().starts_with("plink_"));
    assert_eq!(link["object"], "payment_link");
    assert_eq!(link["mode"], "test");
    assert_eq!(link["status"], "active");
    assert_eq!(link["version"], 1);
    assert_eq!(link["amount"], "12.500000");
    assert_eq!(link["currencyCode"], "USDC");
    assert_eq!(link["usageType"], "reusable");
    assert_eq!(link["collect"], json!({ "email": false, "name": false, "reference": false }));
    let public = public_id(&link);
    assert_eq!(public.len(), 43);
    assert_ne!(public, link["id"].as_str().unwrap());
    assert_eq!(link["url"], format!("{}/l/{public}", app.base));
    let read = app.get(&m.sk_test, &format!("/v1/payment-links/{}", link["id"].as_str().unwrap())).await;
    assert_eq!(read.ok(200)["publicId"], public.as_str());

    // Exactly at the limits: accepted.
    let full = create(
        &app,
        &m.sk_test,
        json!({
            "title": "é".repeat(60), "description": "d".repeat(1000), "amountType": "customer_entered",
            "minimumAmount": "0.000001", "maximumAmount": "1000000", "currencyCode": "USDC", "mode": "test",
            "usageType": "single_use", "activeAt": "2020-01-01T00:00:00Z", "expiresAt": "2100-01-01T00:00:00Z",
            "collect": { "email": true, "name": true, "reference": true }, "referencePrefix": "A".repeat(50),
            "successUrl": format!("https://shop.example/{}", "a".repeat(2048 - 21)), "successMessage": "m".repeat(500),
            "metadata": { "k": "v".repeat(16 * 1024 - 10) },
        }),
    )
    .await;
    assert_eq!(full["maximumAmount"], "1000000.000000");
    assert_eq!(full["usageType"], "single_use");

    let base = fixed("Tea", "5");
    let with = |patch: Value| {
        let mut b = base.clone();
        for (k, v) in patch.as_object().unwrap() {
            if v.is_null() {
                b.as_object_mut().unwrap().remove(k);
            } else {
                b[k] = v.clone();
            }
        }
        b
    };
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (with(json!({ "title": "" })), 400, "VALIDATION_ERROR", "title"),
        (with(json!({ "title": "é".repeat(60) + "x" })), 400, "VALIDATION_ERROR", "title"),
        (with(json!({ "title": null })), 400, "VALIDATION_ERROR", "title"),
        (with(json!({ "description": "d".repeat(1001) })), 400, "VALIDATION_ERROR", "description"),
        (with(json!({ "amountType": "sliding" })), 400, "VALIDATION_ERROR", "amountType"),
        (with(json!({ "amount": null })), 400, "VALIDATION_ERROR", "amount"),
        (with(json!({ "amount": "0" })), 400, "INVALID_AMOUNT", "amount"),
        (with(json!({ "amount": "1.1234567" })), 400, "INVALID_AMOUNT", "amount"),
        (with(json!({ "minimumAmount": "1" })), 400, "VALIDATION_ERROR", "minimumAmount"),
        (json!({ "title": "T", "amountType": "customer_entered" }), 400, "VALIDATION_ERROR", "minimumAmount"),
        (
            json!({ "title": "T", "amountType": "customer_entered", "minimumAmount": "10", "maximumAmount": "5" }),
            400,
            "INVALID_AMOUNT",
            "minimumAmount",
        ),
        (
            json!({ "title": "T", "amountType": "customer_entered", "minimumAmount": "1", "maximumAmount": "1000000.000001" }),
            400,
            "INVALID_AMOUNT",
            "maximumAmount",
        ),
        (
            json!({ "title": "T", "amountType": "customer_entered", "minimumAmount": "1", "amount": "3" }),
            400,
            "VALIDATION_ERROR",
            "amount",
        ),
        (with(json!({ "currencyCode": "USDT" })), 422, "CURRENCY_MISMATCH", "currencyCode"),
        (with(json!({ "currencyCode": "EUR" })), 422, "CURRENCY_MISMATCH", "currencyCode"),
        (with(json!({ "mode": "live" })), 409, "MODE_MISMATCH", "mode"),
        (with(json!({ "usageType": "twice" })), 400, "VALIDATION_ERROR", "usageType"),
        (with(json!({ "activeAt": "tomorrow" })), 400, "VALIDATION_ERROR", "activeAt"),
        (with(json!({ "expiresAt": "2001-01-01T00:00:00Z" })), 400, "VALIDATION_ERROR", "expiresAt"),
        (
            with(json!({ "activeAt": "2100-01-02T00:00:00Z", "expiresAt": "2100-01-01T00:00:00Z" })),
            400,
            "VALIDATION_ERROR",
            "expiresAt",
        ),
        (with(json!({ "referencePrefix": "has space" })), 400, "VALIDATION_ERROR", "referencePrefix"),
        (with(json!({ "referencePrefix": "A".repeat(51) })), 400, "VALIDATION_ERROR", "referencePrefix"),
        (with(json!({ "successUrl": "not a url" })), 400, "VALIDATION_ERROR", "successUrl"),
        (
            with(json!({ "cancelUrl": format!("https://shop.example/{}", "a".repeat(2048)) })),
            400,
            "VALIDATION_ERROR",
            "cancelUrl",
        ),
        (with(json!({ "successMessage": "m".repeat(501) })), 400, "VALIDATION_ERROR", "successMessage"),
        (with(json!({ "metadata": [1] })), 400, "VALIDATION_ERROR", "metadata"),
        (with(json!({ "metadata": { "k": "v".repeat(16 * 1024) } })), 400, "VALIDATION_ERROR", "metadata"),
        (with(json!({ "collect": { "phone": true } })), 400, "VALIDATION_ERROR", "collect.phone"),
        (with(json!({ "version": 3 })), 400, "VALIDATION_ERROR", "version"),
        (with(json!({ "tip": "1" })), 400, "VALIDATION_ERROR", "tip"),
    ];
    for (body, status, code, field) in cases {
        let r = app.post(&m.sk_test, "/v1/payment-links", body.clone()).await;
        let got = r.assert_error(status, code);
        if !field.is_empty() {
            assert_eq!(got.as_deref(), Some(field), "{body}: {}", r.body);
        }
    }
    assert_eq!(list(&app, &m.sk_test, "").await.len(), 2, "a refused creation created nothing");

    // Publishable keys cannot manage links.
    app.post(&m.pk_test, "/v1/payment-links", fixed("T", "1")).await.assert_error(403, "API_KEY_FORBIDDEN");

    // Live mode needs an activated merchant, then https return URLs on its reviewed website.
    let live = app.post(&m.sk_live, "/v1/payment-links", fixed("T", "1")).await;
    live.assert_error(403, "ACTIVE_MERCHANT_REQUIRED");
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &format!("0x{}", "ab".repeat(20)), "--json"]);
    let live_with = |url: &str| json!({ "title": "T", "amountType": "fixed", "amount": "1", "successUrl": url });
    // The activation reaches the service's key cache by a notification, a moment later.
    for _ in 0..50 {
        let r = app.post(&m.sk_live, "/v1/payment-links", live_with("http://shop.example/thanks")).await;
        if r.status != 403 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    for url in ["http://shop.example/thanks", "https://elsewhere.example/thanks"] {
        let r = app.post(&m.sk_live, "/v1/payment-links", live_with(url)).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("successUrl"), "{url}");
    }
    let live_link = create(&app, &m.sk_live, live_with("https://shop.example/thanks")).await;
    assert_eq!(live_link["mode"], "live");

    // Ids of another mode or merchant.
    let test_id = link["id"].as_str().unwrap();
    app.get(&m.sk_live, &format!("/v1/payment-links/{test_id}")).await.assert_error(409, "MODE_MISMATCH");
    let other = app.merchant("Other");
    for path in [format!("/v1/payment-links/{test_id}"), "/v1/payment-links/plink_nope".to_owned()] {
        app.get(&other.sk_test, &path).await.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
    }
    let pause = format!("/v1/payment-links/{test_id}/pause");
    app.post(&other.sk_test, &pause, json!({})).await.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
    assert_eq!(app.get(&m.sk_test, &format!("/v1/payment-links/{test_id}")).await.ok(200)["status"], "active");
}

#[tokio::test]
async fn updates_need_the_current_version_and_lifecycle_changes_keep_invoices() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let mut body = fixed("Workshop seat", "40");
    body["description"] = json!("Saturday morning");
    let link = create(&app, &m.sk_test, body).await;
    let id = link["id"].as_str().unwrap().to_owned();
    let path = format!("/v1/payment-links/{id}");

    // An invoice created through version 1.
    let created = submit(&app, &link, "k1", json!({ "version": 1 })).await.ok(201).clone();
    let invoice_path = format!("/v1/invoices/{}", created["invoiceId"].as_str().unwrap());
    let invoice_before = app.get(&m.sk_test, &invoice_path).await.ok(200).clone();
    assert_eq!(invoice_before["total"], "40.000000");

    // The complete configuration at the current version; omitted optional fields are cleared.
    let mut next = fixed("Workshop seat (2 hours)", "45");
    next["version"] = json!(1);
    let updated = app.patch(&m.sk_test, &path, next.clone()).await.ok(200).clone();
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["amount"], "45.000000");
    assert_eq!(updated["description"], Value::Null);
    assert_eq!(updated["publicId"], link["publicId"]);
    let stale = app.patch(&m.sk_test, &path, next.clone()).await;
    assert_eq!(stale.assert_error(409, "PAYMENT_LINK_VERSION_CONFLICT").as_deref(), Some("version"));
    assert_eq!(stale.body["error"]["details"]["currentVersion"], 2);
    next.as_object_mut().unwrap().remove("version");
    let r = app.patch(&m.sk_test, &path, next.clone()).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("version"));
    next["version"] = json!(2);
    next["amount"] = json!("-1");
    app.patch(&m.sk_test, &path, next.clone()).await.assert_error(400, "INVALID_AMOUNT");
    assert_eq!(app.get(&m.sk_test, &path).await.ok(200)["version"], 2, "a refused update changed nothing");

    // The customer's page showed version 1: CONFIG_CHANGED with the current version.
    let r = submit(&app, &link, "k2", json!({ "version": 1 })).await;
    assert_eq!(r.assert_error(409, "CONFIG_CHANGED").as_deref(), Some("version"));
    assert_eq!(r.body["error"]["details"]["currentVersion"], 2);

    // Pause (twice: the same), refuse submissions, resume.
    for _ in 0..2 {
        assert_eq!(app.post(&m.sk_test, &format!("{path}/pause"), json!({})).await.ok(200)["status"], "paused");
    }
    submit(&app, &link, "k3", json!({ "version": 2 })).await.assert_error(409, "LINK_INACTIVE");
    assert_eq!(public_view(&app, &link).await.ok(200)["status"], "paused");
    assert_eq!(app.post(&m.sk_test, &format!("{path}/resume"), json!({})).await.ok(200)["status"], "active");
    submit(&app, &link, "k4", json!({ "version": 2 })).await.ok(201);

    // Duplicate: a new link, same configuration, new ids, version 1.
    let copy = app.post(&m.sk_test, &format!("{path}/duplicate"), json!({})).await.ok(201).clone();
    assert_ne!(copy["id"], link["id"]);
    assert_ne!(copy["publicId"], link["publicId"]);
    assert_eq!(
        (copy["title"].clone(), copy["amount"].clone(), copy["version"].clone()),
        (updated["title"].clone(), json!("45.000000"), json!(1))
    );

    // Archive (idempotent with a key, and a second archive is the same), then it is gone publicly.
    let archived = app.post_idem(&m.sk_test, &format!("{path}/archive"), "arch-1", json!({})).await;
    assert_eq!(archived.ok(200)["status"], "archived");
    let replay = app.post_idem(&m.sk_test, &format!("{path}/archive"), "arch-1", json!({})).await;
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(app.post(&m.sk_test, &format!("{path}/archive"), json!({})).await.ok(200)["status"], "archived");
    public_view(&app, &link).await.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
    submit(&app, &link, "k5", json!({ "version": 2 })).await.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
    app.post(&m.sk_test, &format!("{path}/resume"), json!({})).await.assert_error(409, "LINK_INACTIVE");
    app.post(&m.sk_test, &format!("{path}/pause"), json!({})).await.assert_error(409, "LINK_INACTIVE");
    let mut again = fixed("X", "1");
    again["version"] = json!(2);
    app.patch(&m.sk_test, &path, again).await.assert_error(409, "LINK_INACTIVE");

    // Invoices created before are untouched by every change above, and listed with the link.
    assert_eq!(app.get(&m.sk_test, &invoice_path).await.ok(200).clone(), invoice_before);
    let payments = app.get(&m.sk_test, &format!("{path}/payments")).await.ok(200).clone();
    let items = payments["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["id"], created["invoiceId"]);
    assert_eq!(items[0]["total"], "45.000000");
    let first = app.get(&m.sk_test, &format!("{path}/payments?limit=1")).await.ok(200).clone();
    assert_eq!(first["hasMore"], true);
    let cursor = first["nextCursor"].as_str().unwrap();
    let second = app.get(&m.sk_test, &format!("{path}/payments?limit=1&startingAfter={cursor}")).await.ok(200).clone();
    assert_eq!(second["items"][0]["id"], created["invoiceId"]);
    assert_eq!(second["hasMore"], false);
}

#[tokio::test]
async fn lists_filter_and_paginate() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let a = create(&app, &m.sk_test, fixed("Red mug", "10")).await;
    let mut single = fixed("Blue mug", "10");
    single["usageType"] = json!("single_use");
    let b = create(&app, &m.sk_test, single).await;
    let c = create(
        &app,
        &m.sk_test,
        json!({ "title": "Donation", "description": "Any amount helps", "amountType": "customer_entered", "minimumAmount": "1" }),
    )
    .await;
    let mut expiring = fixed("Flash sale", "3");
    expiring["expiresAt"] = json!((chrono::Utc::now() + chrono::Duration::hours(1)).to_rfc3339());
    let d = create(&app, &m.sk_test, expiring).await;
    app.post(&m.sk_test, &format!("/v1/payment-links/{}/pause", a["id"].as_str().unwrap()), json!({})).await.ok(200);
    advance(&app, &m, 2 * 3600).await;
    // Another merchant's paid invoice changes nothing here (an unreserved single-use link once
    // fell out of the active ones as soon as any invoice anywhere was paid).
    let other = app.merchant("Other");
    let cs = app.post(&other.sk_test, "/v1/checkout-sessions", json!({ "amount": "2" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&other.sk_test, &pay, json!({})).await.ok(201);

    let ids = |items: Vec<Value>| items.iter().map(|l| l["id"].as_str().unwrap().to_owned()).collect::<Vec<_>>();
    let id = |l: &Value| l["id"].as_str().unwrap().to_owned();
    assert_eq!(ids(list(&app, &m.sk_test, "").await), vec![id(&d), id(&c), id(&b), id(&a)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?status=paused").await), vec![id(&a)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?status=expired").await), vec![id(&d)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?status=active").await), vec![id(&c), id(&b)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?usage=single_use").await), vec![id(&b)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?amountType=customer_entered").await), vec![id(&c)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?amount=10.00").await), vec![id(&b), id(&a)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?token=USDC&text=MUG").await), vec![id(&b), id(&a)]);
    assert_eq!(ids(list(&app, &m.sk_test, "?text=amount%20helps").await), vec![id(&c)]);
    assert!(list(&app, &m.sk_test, "?token=USDT").await.is_empty());
    assert!(list(&app, &m.sk_test, "?createdAfter=2100-01-01T00:00:00Z").await.is_empty());
    assert_eq!(list(&app, &m.sk_test, "?createdBefore=2100-01-01T00:00:00Z").await.len(), 4);
    assert_eq!(d["status"], "active");
    let d_now = app.get(&m.sk_test, &format!("/v1/payment-links/{}", id(&d))).await.ok(200).clone();
    assert_eq!(d_now["status"], "expired");

    let page = app.get(&m.sk_test, "/v1/payment-links?limit=3").await.ok(200).clone();
    assert_eq!(page["hasMore"], true);
    let cursor = page["nextCursor"].as_str().unwrap();
    let rest = app.get(&m.sk_test, &format!("/v1/payment-links?limit=3&startingAfter={cursor}")).await.ok(200).clone();
    assert_eq!(ids(rest["items"].as_array().unwrap().clone()), vec![id(&a)]);

    for (query, field) in [
        ("?status=gone", "status"),
        ("?usage=often", "usage"),
        ("?amountType=x", "amountType"),
        ("?token=EUR", "token"),
        ("?createdAfter=yesterday", "createdAfter"),
        ("?limit=101", "limit"),
        ("?colour=red", "colour"),
    ] {
        let r = app.get(&m.sk_test, &format!("/v1/payment-links{query}")).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field), "{query}");
    }
    app.get(&m.sk_test, "/v1/payment-links?amount=abc").await.assert_error(400, "INVALID_AMOUNT");
    let r = app.get(&m.sk_test, "/v1/payment-links?startingAfter=plink_nope").await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("startingAfter"));
}

/// The settlement wallet, token contract, metadata, internal ids and counters never reach a
/// customer: the whole body of every public answer (and the hosted page) is searched.
#[tokio::test]
async fn public_answers_hold_no_settlement_data_or_metadata() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let mut body = fixed("Concert ticket", "30");
    body["metadata"] = json!({ "internal_sku": "SKU-SECRET-4711" });
    body["successMessage"] = json!("See you there");
    let link = create(&app, &m.sk_test, body).await;
    let created = submit(&app, &link, "k1", json!({ "version": 1 })).await;
    let created = created.ok(201).clone();
    let cs =
        app.get(&m.sk_test, &format!("/v1/checkout-sessions/{}", created["checkoutSessionId"].as_str().unwrap())).await;
    let cs = cs.ok(200).clone();
    let wallet = cs["settlementWalletAddress"].as_str().unwrap().to_lowercase();
    let contract = cs["tokenContract"].as_str().unwrap().to_lowercase();
    let invoice = app.get(&m.sk_test, &format!("/v1/invoices/{}", created["invoiceId"].as_str().unwrap())).await;
    assert_eq!(
        invoice.ok(200)["metadata"]["internal_sku"],
        "SKU-SECRET-4711",
        "metadata goes to the merchant's invoice"
    );

    let view = public_view(&app, &link).await;
    let data = view.ok(200).clone();
    assert_eq!(data["title"], "Concert ticket");
    assert_eq!(data["amount"], "30.000000");
    assert_eq!(data["currencyCode"], "USDC");
    assert_eq!(data["network"], json!({ "name": "polygon", "chainId": 137 }));
    assert_eq!(data["successMessage"], "See you there");
    assert_eq!(data["merchantName"], "Shop");
    assert_eq!(data["version"], 1);
    assert_eq!(data["accepting"], true);
    let page = app.http.get(link["url"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("Concert ticket"), "{page}");
    let forbidden = [
        wallet.as_str(),
        contract.as_str(),
        "sku-secret-4711",
        "metadata",
        link["id"].as_str().unwrap(),
        m.id.as_str(),
        "lockversion",
        "lock_version",
        "reservedinvoice",
    ];
    for (what, text) in
        [("public view", view.body.to_string()), ("submission", json!(created).to_string()), ("hosted page", page)]
    {
        let text = text.to_lowercase();
        for needle in forbidden {
            assert!(!text.contains(&needle.to_lowercase()), "{what} shows {needle}: {text}");
        }
    }
}

#[tokio::test]
async fn public_submissions_follow_every_rule() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let link = create(
        &app,
        &m.sk_test,
        json!({
            "title": "Donation", "amountType": "customer_entered", "minimumAmount": "5", "maximumAmount": "500",
            "collect": { "email": true, "name": true, "reference": true }, "referencePrefix": "DON-",
            "successUrl": "https://shop.example/thanks",
        }),
    )
    .await;
    let good = json!({ "version": 1, "amount": "42.5", "email": "ada@example.com", "name": "Ada", "customerReference": "table-7" });
    let without = |field: &str| {
        let mut b = good.clone();
        b.as_object_mut().unwrap().remove(field);
        b
    };
    let with = |field: &str, value: Value| {
        let mut b = good.clone();
        b[field] = value;
        b
    };
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (without("amount"), 400, "FIELD_REQUIRED", "amount"),
        (without("email"), 400, "FIELD_REQUIRED", "email"),
        (without("name"), 400, "FIELD_REQUIRED", "name"),
        (without("customerReference"), 400, "FIELD_REQUIRED", "customerReference"),
        (with("name", json!("  ")), 400, "FIELD_REQUIRED", "name"),
        (with("amount", json!("4.999999")), 400, "AMOUNT_OUT_OF_RANGE", "amount"),
        (with("amount", json!("500.000001")), 400, "AMOUNT_OUT_OF_RANGE", "amount"),
        (with("amount", json!("1.0000001")), 400, "INVALID_AMOUNT", "amount"),
        (with("email", json!("not-an-email")), 400, "VALIDATION_ERROR", "email"),
        (with("version", json!("1")), 400, "VALIDATION_ERROR", "version"),
        (without("version"), 400, "VALIDATION_ERROR", "version"),
        (with("phone", json!("123")), 400, "VALIDATION_ERROR", "phone"),
    ];
    for (i, (body, status, code, field)) in cases.into_iter().enumerate() {
        let r = submit(&app, &link, &format!("bad-{i}"), body.clone()).await;
        assert_eq!(r.assert_error(status, code).as_deref(), Some(field), "{body}: {}", r.body);
    }
    // Missing or malformed Idempotency-Key.
    let path = format!("/v1/public/payment-links/{}/checkout", public_id(&link));
    let r = app.send(app.http.post(app.url(&path)).json(&good)).await;
    assert_eq!(r.assert_error(400, "INVALID_IDEMPOTENCY_KEY").as_deref(), Some("Idempotency-Key"));
    let r = app.send(app.http.post(app.url(&path)).header("Idempotency-Key", "has space").json(&good)).await;
    r.assert_error(400, "INVALID_IDEMPOTENCY_KEY");
    let id = link["id"].as_str().unwrap();
    let payments = app.get(&m.sk_test, &format!("/v1/payment-links/{id}/payments")).await.ok(200).clone();
    assert!(payments["items"].as_array().unwrap().is_empty(), "refused submissions created nothing");

    // The bounds themselves are accepted; the answer is the spec's four fields.
    let created = submit(&app, &link, "ok-1", with("amount", json!("5"))).await.ok(201).clone();
    let keys: Vec<&str> = created.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(keys.len(), 4, "{created}");
    let cs_id = created["checkoutSessionId"].as_str().unwrap();
    assert_eq!(created["checkoutUrl"], format!("{}/checkout/{cs_id}", app.base));
    let replay = submit(&app, &link, "ok-1", with("amount", json!("5"))).await;
    assert_eq!(replay.header("idempotency-replayed"), Some("true"));
    assert_eq!(replay.ok(201).clone(), created);
    submit(&app, &link, "ok-1", good.clone()).await.assert_error(409, "IDEMPOTENCY_KEY_CONFLICT");
    submit(&app, &link, "ok-2", with("amount", json!("500"))).await.ok(201);

    // The invoice carries the amount, the customer, the prefixed reference and the return URL.
    let invoice = app.get(&m.sk_test, &format!("/v1/invoices/{}", created["invoiceId"].as_str().unwrap())).await;
    let invoice = invoice.ok(200).clone();
    assert_eq!(invoice["total"], "5.000000");
    assert_eq!(invoice["customer"]["email"], "ada@example.com");
    assert_eq!(invoice["customer"]["name"], "Ada");
    let cs = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs_id}")).await.ok(200).clone();
    assert_eq!(cs["externalReference"], "DON-table-7");
    assert_eq!(cs["amountDue"], "5.000000");
    assert_eq!(cs["expiresAt"], created["expiresAt"]);

    // A fixed link sets the amount itself and collects nothing it was not configured for.
    let plain = create(&app, &m.sk_test, fixed("Mug", "9")).await;
    let r = submit(&app, &plain, "p1", json!({ "version": 1, "amount": "9" })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("amount"));
    let r = submit(&app, &plain, "p2", json!({ "version": 1, "email": "a@example.com" })).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("email"));

    // Not active yet; expired (at the merchant's test clock, with payment_link.expired once).
    let mut later = fixed("Pre-order", "20");
    later["activeAt"] = json!((chrono::Utc::now() + chrono::Duration::days(1)).to_rfc3339());
    later["expiresAt"] = json!((chrono::Utc::now() + chrono::Duration::days(2)).to_rfc3339());
    let later = create(&app, &m.sk_test, later).await;
    submit(&app, &later, "l1", json!({ "version": 1 })).await.assert_error(409, "LINK_INACTIVE");
    assert_eq!(public_view(&app, &later).await.ok(200)["accepting"], false);
    advance(&app, &m, 36 * 3600).await;
    submit(&app, &later, "l2", json!({ "version": 1 })).await.ok(201);
    advance(&app, &m, 24 * 3600).await;
    submit(&app, &later, "l3", json!({ "version": 1 })).await.assert_error(409, "LINK_EXPIRED");
    assert_eq!(public_view(&app, &later).await.ok(200)["status"], "expired");
    let lid = later["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/payment-links/{lid}/resume"), json!({})).await.assert_error(409, "LINK_EXPIRED");
    advance(&app, &m, 60).await;
    let expired = events(&app, &m, "payment_link.expired").await;
    assert_eq!(expired.len(), 1, "{expired:?}");
    assert_eq!(expired[0]["data"]["id"], lid);
    assert_eq!(expired[0]["data"]["status"], "expired");

    // Unknown public ids.
    let r = app.send(app.http.get(app.url(&format!("/v1/public/payment-links/{}", "x".repeat(43))))).await;
    r.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
    let r = app.send(app.http.get(app.url("/v1/public/payment-links/short"))).await;
    r.assert_error(404, "PAYMENT_LINK_NOT_FOUND");
}

#[tokio::test]
async fn a_suspended_merchant_takes_no_live_link_payment() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &format!("0x{}", "cd".repeat(20)), "--json"]);
    let link = create(&app, &m.sk_live, fixed("Live thing", "3")).await;
    app.cli_ok(&["merchant", "suspend", &m.id, "--json"]);
    let r = submit(&app, &link, "s1", json!({ "version": 1 })).await;
    r.assert_error(422, "MODE_UNAVAILABLE");
    assert_eq!(public_view(&app, &link).await.ok(200)["accepting"], false);
}

/// 100 customers submit one single-use link at once (each from its own address, so no quota
/// interferes): exactly one checkout. When it expires unpaid, the link opens again; once paid,
/// it is completed, with payment_link.completed.
#[tokio::test]
async fn a_single_use_link_is_reserved_for_exactly_one_checkout() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let mut body = fixed("One-off consultation", "150");
    body["usageType"] = json!("single_use");
    let link = create(&app, &m.sk_test, body).await;
    let path = format!("{}/v1/public/payment-links/{}/checkout", app.base, public_id(&link));
    let tasks: Vec<_> = (0..100)
        .map(|i| {
            let client = client_from(&format!("127.0.1.{}", i + 1));
            let path = path.clone();
            tokio::spawn(async move {
                let r = client
                    .post(path)
                    .header("Idempotency-Key", format!("customer-{i}"))
                    .json(&json!({ "version": 1 }))
                    .send()
                    .await
                    .unwrap();
                let status = r.status().as_u16();
                (status, r.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut winners = Vec::new();
    for t in tasks {
        let (status, body) = t.await.unwrap();
        match status {
            201 => winners.push(body["data"].clone()),
            409 => assert_eq!(body["error"]["code"], "LINK_RESERVED", "{body}"),
            other => panic!("{other}: {body}\n{}", app.logs()),
        }
    }
    assert_eq!(winners.len(), 1, "{winners:?}");
    let first = &winners[0];
    let id = link["id"].as_str().unwrap();
    let payments = app.get(&m.sk_test, &format!("/v1/payment-links/{id}/payments")).await.ok(200).clone();
    assert_eq!(payments["items"].as_array().unwrap().len(), 1);
    let read = app.get(&m.sk_test, &format!("/v1/payment-links/{id}")).await.ok(200).clone();
    assert_eq!(read["reservedInvoiceId"], first["invoiceId"]);
    let view = public_view(&app, &link).await.ok(200).clone();
    assert_eq!((view["reserved"].clone(), view["accepting"].clone()), (json!(true), json!(false)));

    // The checkout expires unpaid (30 minutes at the test clock): the reservation is released.
    advance(&app, &m, 31 * 60).await;
    let view = public_view(&app, &link).await.ok(200).clone();
    assert_eq!((view["reserved"].clone(), view["accepting"].clone()), (json!(false), json!(true)));
    let second = submit(&app, &link, "customer-after", json!({ "version": 1 })).await.ok(201).clone();
    assert_ne!(second["invoiceId"], first["invoiceId"]);
    submit(&app, &link, "customer-late", json!({ "version": 1 })).await.assert_error(409, "LINK_RESERVED");

    // Paid: completed, with its event; no more submissions, no resume.
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", second["checkoutSessionId"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    let read = app.get(&m.sk_test, &format!("/v1/payment-links/{id}")).await.ok(200).clone();
    assert_eq!(read["status"], "completed");
    assert_eq!(read["reservedInvoiceId"], second["invoiceId"]);
    submit(&app, &link, "customer-next", json!({ "version": 1 })).await.assert_error(409, "LINK_ALREADY_USED");
    app.post(&m.sk_test, &format!("/v1/payment-links/{id}/resume"), json!({}))
        .await
        .assert_error(409, "LINK_ALREADY_USED");
    assert_eq!(list(&app, &m.sk_test, "?status=completed").await.len(), 1);
    let completed = events(&app, &m, "payment_link.completed").await;
    assert_eq!(completed.len(), 1, "{completed:?}");
    assert_eq!(completed[0]["data"]["id"], id);
    assert_eq!(completed[0]["data"]["invoiceId"], second["invoiceId"]);
    let payments = app.get(&m.sk_test, &format!("/v1/payment-links/{id}/payments")).await.ok(200).clone();
    let items = payments["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[0]["collectionState"], "paid");
    assert_eq!(items[0]["payments"].as_array().unwrap().len(), 1);
    assert_eq!(items[1]["collectionState"], "open");
}

/// The hosted link page works without JavaScript: it shows the link, its form posts (from the
/// page's own origin only) through the same submission, exactly once per rendered form.
#[tokio::test]
async fn the_hosted_link_page_creates_one_checkout_per_form() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let link = create(
        &app,
        &m.sk_test,
        json!({ "title": "Tip jar <3", "amountType": "customer_entered", "minimumAmount": "1", "maximumAmount": "50",
                "collect": { "email": true } }),
    )
    .await;
    let url = link["url"].as_str().unwrap().to_owned();
    let page = app.http.get(&url).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.headers()["content-security-policy"].to_str().unwrap().contains("form-action 'self'"));
    let html = page.text().await.unwrap();
    assert!(html.contains("Tip jar &lt;3"), "{html}");
    assert!(html.contains("name=\"amount\"") && html.contains("name=\"email\""), "{html}");
    let key = html.split("name=\"idempotencyKey\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();

    let no_redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let form = format!("version=1&idempotencyKey={key}&amount=12.5&email=ada%2Bshop%40example.com");
    let post = |origin: Option<&str>, body: String| {
        let mut r = no_redirect.post(&url).header("Content-Type", "application/x-www-form-urlencoded").body(body);
        if let Some(o) = origin {
            r = r.header("Origin", o);
        }
        r.send()
    };
    for origin in [Some("https://evil.example"), None] {
        assert_eq!(post(origin, form.clone()).await.unwrap().status().as_u16(), 403);
    }
    let first = post(Some(&app.base), form.clone()).await.unwrap();
    assert_eq!(first.status().as_u16(), 303);
    let location = first.headers()["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with("/checkout/cs_"), "{location}");
    let again = post(Some(&app.base), form.clone()).await.unwrap();
    assert_eq!(again.headers()["location"].to_str().unwrap(), location, "a resent form creates nothing new");
    let id = link["id"].as_str().unwrap();
    let payments = app.get(&m.sk_test, &format!("/v1/payment-links/{id}/payments")).await.ok(200).clone();
    let items = payments["items"].as_array().unwrap();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["total"], "12.500000");
    assert_eq!(items[0]["customer"]["email"], "ada+shop@example.com");
    let checkout = app.http.get(app.url(&location)).send().await.unwrap();
    assert_eq!(checkout.status().as_u16(), 200);

    // A refused submission shows the page again with the reason.
    let bad = format!("version=1&idempotencyKey={key}-2&amount=99&email=a%40example.com");
    let r = post(Some(&app.base), bad).await.unwrap();
    assert_eq!(r.status().as_u16(), 400);
    let html = r.text().await.unwrap();
    assert!(html.contains("aria-invalid=\"true\""), "{html}");
    assert!(html.contains("Enter an amount from 1.00 to 50.00."), "{html}");
    assert!(html.contains("value=\"99\""), "what the customer typed is kept: {html}");

    // Unknown links and archived ones are a plain not-found page.
    let missing = app.http.get(app.url(&format!("/l/{}", "z".repeat(43)))).send().await.unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    app.post(&m.sk_test, &format!("/v1/payment-links/{id}/archive"), json!({})).await.ok(200);
    assert_eq!(app.http.get(&url).send().await.unwrap().status().as_u16(), 404);
}

/// Public link reads share one budget per client address (120 a minute for the family);
/// submissions have 10 a minute per client address and link.
#[tokio::test]
async fn link_quotas_apply_per_client_address() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let a = create(&app, &m.sk_test, fixed("A", "1")).await;
    let b = create(&app, &m.sk_test, fixed("B", "1")).await;
    let client = client_from("127.0.2.1");
    let path = |link: &Value| app.url(&format!("/v1/public/payment-links/{}/checkout", public_id(link)));
    let mut accepted = 0;
    let refusal = loop {
        let r = app
            .send(
                client.post(path(&a)).header("Idempotency-Key", format!("k{accepted}")).json(&json!({ "version": 1 })),
            )
            .await;
        if r.status.as_u16() == 429 {
            break r;
        }
        assert_eq!(r.status.as_u16(), 201, "{}", r.body);
        assert!(r.header("ratelimit").is_some_and(|h| h.starts_with("\"public-checkout\";r=")), "{:?}", r.headers);
        accepted += 1;
        assert!(accepted <= 11, "never refused");
    };
    assert!(accepted >= 10, "{accepted}");
    refusal.assert_error(429, "RATE_LIMITED");
    assert!(refusal.header("retry-after").unwrap().parse::<u32>().unwrap() >= 1);
    assert_eq!(refusal.header("ratelimit-policy"), Some("\"public-checkout\";q=10;w=60"));
    // Another link from the same address, and the same link from another address, are not
    // affected.
    let other = app.send(client.post(path(&b)).header("Idempotency-Key", "x").json(&json!({ "version": 1 }))).await;
    other.ok(201);
    let elsewhere = client_from("127.0.2.2");
    let r = app.send(elsewhere.post(path(&a)).header("Idempotency-Key", "y").json(&json!({ "version": 1 }))).await;
    r.ok(201);

    // Reads.
    let read =
        |c: &reqwest::Client, link: &Value| c.get(app.url(&format!("/v1/public/payment-links/{}", public_id(link))));
    let reader = client_from("127.0.2.3");
    let mut reads = 0;
    let refusal = loop {
        let link = if reads % 2 == 0 { &a } else { &b };
        let r = app.send(read(&reader, link)).await;
        if r.status.as_u16() == 429 {
            break r;
        }
        assert_eq!(r.status.as_u16(), 200);
        reads += 1;
        assert!(reads <= 125, "never refused");
    };
    assert!(reads >= 120, "{reads}");
    refusal.assert_error(429, "RATE_LIMITED");
    assert_eq!(refusal.header("ratelimit-policy"), Some("\"public-read\";q=120;w=60"));
}

/// The hosted link form shares the API's submission budget, and its 429 page carries the same
/// headers as the API's 429: Retry-After, RateLimit and RateLimit-Policy (and an accepted
/// submission the RateLimit headers).
#[tokio::test]
async fn the_hosted_link_forms_429_carries_the_rate_limit_headers() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let link = create(&app, &m.sk_test, fixed("Form", "1")).await;
    let url = link["url"].as_str().unwrap().to_owned();
    let client = reqwest::Client::builder()
        .local_address("127.0.4.1".parse::<std::net::IpAddr>().unwrap())
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut accepted = 0;
    let refusal = loop {
        let r = client
            .post(&url)
            .header("Origin", &app.base)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("version=1&idempotencyKey=form-{accepted}"))
            .send()
            .await
            .unwrap();
        if r.status().as_u16() == 429 {
            break r;
        }
        assert_eq!(r.status().as_u16(), 303);
        let limit = r.headers().get("ratelimit").and_then(|v| v.to_str().ok()).unwrap_or_default();
        assert!(limit.starts_with("\"public-checkout\";r="), "{:?}", r.headers());
        accepted += 1;
        assert!(accepted <= 11, "never refused");
    };
    assert!(accepted >= 10, "{accepted}");
    let header = |name: &str| refusal.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    assert!(header("retry-after").unwrap().parse::<u32>().unwrap() >= 1);
    assert!(header("ratelimit").unwrap().starts_with("\"public-checkout\";r=0;t="), "{:?}", header("ratelimit"));
    assert_eq!(header("ratelimit-policy").as_deref(), Some("\"public-checkout\";q=10;w=60"));
    assert!(header("content-type").unwrap().starts_with("text/html"));
    assert!(refusal.text().await.unwrap().contains("Too many requests"));
}
