//! Invoices: the end-to-end story, drafts and versions, issue, numbering, listing, collection
//! actions, refunds, duplication and every creation field rule.

use serde_json::{Value, json};

use crate::support::{Merchant, TestApp, count_by};

fn draft_body() -> Value {
    json!({
        "lines": [
            {"description": "Consulting", "quantity": "3", "unitAmount": "0.333333", "sku": "C-1"},
            {"description": "Hosting", "quantity": "1.5", "unitAmount": "10.01"}
        ],
        "customer": {"name": "Ada", "company": "Analytical", "email": "ada@example.com", "billingAddress": "1 Engine St"},
        "discount": {"type": "percentage", "percentage": "10"},
        "taxes": [{"label": "VAT", "amount": "1.25", "jurisdiction": "EU"}],
        "memo": "Thanks",
        "externalReference": "po-9"
    })
}

async fn create_draft(app: &TestApp, m: &Merchant) -> Value {
    app.post(&m.sk_test, "/v1/invoices", draft_body()).await.ok(201).clone()
}

fn path(inv: &Value, suffix: &str) -> String {
    format!("/v1/invoices/{}{}", inv["id"].as_str().unwrap(), suffix)
}

#[tokio::test]
async fn the_whole_story_in_test_mode() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");

    // 1. Itemized draft.
    let draft = create_draft(&app, &m).await;
    assert_eq!(draft["collectionState"], "draft");
    assert_eq!(draft["version"], 1);
    assert!(draft["invoiceNumber"].is_null());
    assert!(draft["hostedInvoiceUrl"].is_null());
    assert_eq!(draft["subtotal"], "16.014999");
    assert_eq!(draft["discountAmount"], "1.601500");
    assert_eq!(draft["taxAmount"], "1.250000");
    assert_eq!(draft["total"], "15.663499");
    assert_eq!(draft["lines"][0]["amount"], "0.999999");
    assert_eq!(draft["checkoutSessions"], json!([]));

    // 2. Update (full replacement) with the current version.
    let mut body = draft_body();
    body["version"] = json!(1);
    body["lines"] = json!([{"description": "Consulting", "quantity": "2", "unitAmount": "50"}]);
    body["discount"] = Value::Null;
    body["taxes"] = json!([]);
    body.as_object_mut().unwrap().remove("memo");
    let updated = app.patch(&m.sk_test, &path(&draft, ""), body.clone()).await.ok(200).clone();
    assert_eq!(updated["version"], 2);
    assert_eq!(updated["total"], "100.000000");
    assert!(updated["discount"].is_null());
    assert!(updated["memo"].is_null(), "a field omitted from the replacement is cleared");
    assert_eq!(updated["customer"]["name"], "Ada");
    // A stale version is refused and changes nothing.
    let stale = app.patch(&m.sk_test, &path(&draft, ""), body).await;
    assert_eq!(stale.assert_error(409, "INVOICE_VERSION_CONFLICT").as_deref(), Some("version"));
    assert_eq!(stale.body["error"]["details"]["currentVersion"], 2);

    // 3. Issue.
    app.post(&m.sk_test, &path(&draft, "/issue"), json!({"version": 1}))
        .await
        .assert_error(409, "INVOICE_VERSION_CONFLICT");
    let issued = app.post(&m.sk_test, &path(&draft, "/issue"), json!({"version": 2})).await.ok(200).clone();
    assert_eq!(issued["collectionState"], "open");
    assert_eq!(issued["invoiceNumber"], "INV-000001");
    let hosted = issued["hostedInvoiceUrl"].as_str().unwrap();
    assert!(hosted.starts_with(&format!("{}/i/", app.base)));
    let checkout = &issued["checkout"];
    assert_eq!(checkout["amount"], "100.000000");
    let cs1 = checkout["checkoutSessionId"].as_str().unwrap().to_owned();
    assert_eq!(issued["checkoutSessions"].as_array().unwrap().len(), 1);
    app.post(&m.sk_test, &path(&draft, "/issue"), json!({"version": 2}))
        .await
        .assert_error(409, "INVOICE_ALREADY_ISSUED");
    let mut edit = draft_body();
    edit["version"] = json!(2);
    app.patch(&m.sk_test, &path(&draft, ""), edit).await.assert_error(409, "INVOICE_NOT_EDITABLE");

    // 4. Partial payment.
    let p1 = app
        .post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs1}/payments"), json!({"amount": "40"}))
        .await;
    let p1 = p1.ok(201).clone();
    assert_eq!(p1["status"], "underpaid");
    assert_eq!(p1["customerAmountCredited"], "40.000000");
    let inv = app.get(&m.sk_test, &path(&draft, "")).await.ok(200).clone();
    assert_eq!(inv["collectionState"], "partially_paid");
    assert_eq!(inv["status"], "underpaid");
    assert_eq!(inv["customerAmountPaid"], "40.000000");
    assert_eq!(inv["customerAmountRemaining"], "60.000000");

    // 5. Remainder checkout (reused when asked again).
    let rem = app.post(&m.sk_test, &path(&draft, "/checkout-sessions"), json!({})).await.ok(201).clone();
    assert_eq!(rem["amount"], "60.000000");
    assert_eq!(rem["invoiceId"], draft["id"]);
    assert_eq!(rem["reused"], false);
    let cs2 = rem["checkoutSessionId"].as_str().unwrap().to_owned();
    assert_ne!(cs2, cs1);
    let again = app.post(&m.sk_test, &path(&draft, "/checkout-sessions"), json!({})).await.ok(201).clone();
    assert_eq!(again["checkoutSessionId"], cs2.as_str());
    assert_eq!(again["reused"], true);
    let session = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs2}")).await.ok(200).clone();
    assert_eq!(session["amountDue"], "60.000000");
    assert_eq!(session["total"], "100.000000");

    // 6. Final payment: paid.
    let p2 = app
        .post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs2}/payments"), json!({}))
        .await
        .ok(201)
        .clone();
    assert_eq!(p2["status"], "confirmed");
    let inv = app.get(&m.sk_test, &path(&draft, "")).await.ok(200).clone();
    assert_eq!(inv["collectionState"], "paid");
    assert_eq!(inv["status"], "paid");
    assert_eq!(inv["customerAmountRemaining"], "0.000000");
    assert_eq!(inv["merchantAmountSettled"], "100.000000");
    assert_eq!(inv["payments"].as_array().unwrap().len(), 2);
    assert!(inv["checkout"].is_null());
    let actions: Vec<&str> =
        inv["activity"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap()).collect();
    assert_eq!(actions, ["created", "updated", "issued", "payment_credited", "checkout_opened", "payment_credited"]);
    let session = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs2}")).await.ok(200).clone();
    assert_eq!(session["status"], "completed");
    assert_eq!(session["paymentId"], p2["id"]);
    assert_eq!(session["paymentStatus"], "confirmed");
    assert_eq!(session["transactionHashes"], json!([p2["transactionId"]]));
    assert!(session["completedAt"].is_string());
    app.post(&m.sk_test, &path(&draft, "/checkout-sessions"), json!({})).await.assert_error(409, "INVOICE_NOT_PAYABLE");

    // 7. Events, newest first.
    let events = app.get(&m.sk_test, "/v1/events").await.ok(200).clone();
    let types: Vec<&str> = events["items"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(types, ["invoice.paid", "payment.underpaid", "invoice.partially_paid", "invoice.issued"]);
    let paid = &events["items"][0];
    assert_eq!(paid["object"], "event");
    assert_eq!(paid["mode"], "test");
    let data = &paid["data"];
    assert_eq!(data["total"], "100.000000");
    assert_eq!(data["customerAmountPaid"], "100.000000");
    assert_eq!(data["customerAmountRemaining"], "0.000000");
    assert_eq!(data["merchantAmountSettled"], "100.000000");
    assert_eq!(data["platformFee"], "0.000000");
    assert_eq!(data["creditedPaymentIds"], json!([p1["id"], p2["id"]]));
    assert_eq!(data["latestPayment"]["id"], p2["id"]);
    let one = app.get(&m.sk_test, &format!("/v1/events/{}", paid["id"].as_str().unwrap())).await;
    assert_eq!(one.ok(200)["id"], paid["id"]);
    let filtered = app.get(&m.sk_test, "/v1/events?type=invoice.issued").await.ok(200).clone();
    assert_eq!(filtered["items"].as_array().unwrap().len(), 1);
    let nope = app.get(&m.sk_test, "/v1/events?type=nope").await;
    assert_eq!(nope.assert_error(400, "WEBHOOK_EVENT_UNSUPPORTED").as_deref(), Some("type"));

    // 8. Lookup by number, and the hosted invoice page.
    let by_number = app.get(&m.sk_test, "/v1/invoices/INV-000001").await.ok(200).clone();
    assert_eq!(by_number["id"], draft["id"]);
    let page = app.http.get(hosted).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let html = page.text().await.unwrap();
    assert!(html.contains("INV-000001") && html.contains("100.00 USDC") && html.contains("Polygon"), "{html}");
}

#[tokio::test]
async fn numbers_are_sequential_per_mode_and_skip_drafts() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let d1 = create_draft(&app, &m).await;
    let _unissued = create_draft(&app, &m).await;
    let d3 = create_draft(&app, &m).await;
    let i3 = app.post(&m.sk_test, &path(&d3, "/issue"), json!({"version": 1})).await.ok(200).clone();
    let i1 = app.post(&m.sk_test, &path(&d1, "/issue"), json!({"version": 1})).await.ok(200).clone();
    assert_eq!(i3["invoiceNumber"], "INV-000001");
    assert_eq!(i1["invoiceNumber"], "INV-000002");
    let mut body = draft_body();
    body["issue"] = json!(true);
    let direct = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    assert_eq!(direct["invoiceNumber"], "INV-000003");
    assert_eq!(direct["collectionState"], "open");
    // Amount-only invoices are payable (issued) at once, so numbered at creation.
    let unpaid = app.post(&m.sk_test, "/v1/invoices", json!({"amount": "3"})).await.ok(201).clone();
    assert_eq!(unpaid["invoiceNumber"], "INV-000004");
    let legacy =
        app.post(&m.sk_test, "/v1/invoices", json!({"amount": "7", "externalReference": "x"})).await.ok(201).clone();
    assert_eq!(legacy["invoiceNumber"], "INV-000005");
    assert_eq!(legacy["kind"], "amount_only");
    assert_eq!(legacy["collectionState"], "open");
    assert!(legacy["checkout"]["checkoutUrl"].is_string());
    let cs = legacy["checkout"]["checkoutSessionId"].as_str().unwrap();
    let pay = format!("/v1/test-helpers/checkout-sessions/{cs}/payments");
    app.post(&m.sk_test, &pay, json!({"amount": "1"})).await.ok(201);
    app.post(&m.sk_test, &pay, json!({"amount": "1"})).await.ok(201);
    let numbered = app.get(&m.sk_test, &path(&legacy, "")).await.ok(200).clone();
    assert_eq!(numbered["invoiceNumber"], "INV-000005", "paying keeps the number");
    // A checkout's invoice takes the next one.
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({"amount": "2"})).await.ok(201).clone();
    assert_eq!(cs["invoiceNumber"], "INV-000006");
    let d4 = create_draft(&app, &m).await;
    let i4 = app.post(&m.sk_test, &path(&d4, "/issue"), json!({"version": 1})).await.ok(200).clone();
    assert_eq!(i4["invoiceNumber"], "INV-000007");
}

#[tokio::test]
async fn listing_pages_without_gaps_or_duplicates() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let mut ids = Vec::new();
    for i in 0..7 {
        let inv = create_draft(&app, &m).await;
        if i % 2 == 0 {
            app.post(&m.sk_test, &path(&inv, "/issue"), json!({"version": 1})).await.ok(200);
        }
        ids.push(inv["id"].as_str().unwrap().to_owned());
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let q = match &cursor {
            None => "/v1/invoices?limit=3".to_owned(),
            Some(c) => format!("/v1/invoices?limit=3&startingAfter={c}"),
        };
        let page = app.get(&m.sk_test, &q).await.ok(200).clone();
        // A new invoice created while paging does not disturb the pages that follow.
        if cursor.is_none() {
            create_draft(&app, &m).await;
        }
        for item in page["items"].as_array().unwrap() {
            seen.push(item["id"].as_str().unwrap().to_owned());
        }
        if page["hasMore"] == false {
            assert!(page["nextCursor"].is_null());
            break;
        }
        cursor = Some(page["nextCursor"].as_str().unwrap().to_owned());
    }
    ids.reverse();
    assert_eq!(seen, ids);
    let drafts = app.get(&m.sk_test, "/v1/invoices?collectionState=draft&limit=100").await.ok(200).clone();
    let states = count_by(drafts["items"].as_array().unwrap(), "collectionState");
    assert_eq!(states.get("draft"), Some(&4));
    assert_eq!(states.len(), 1);
    let open = app.get(&m.sk_test, "/v1/invoices?collectionState=open").await.ok(200).clone();
    assert_eq!(open["items"].as_array().unwrap().len(), 4);
    for bad in ["limit=0", "limit=101", "limit=abc", "collectionState=closed", "startingAfter=inv_nope", "color=red"] {
        let res = app.get(&m.sk_test, &format!("/v1/invoices?{bad}")).await;
        let field = res.assert_error(400, "VALIDATION_ERROR").unwrap();
        assert_eq!(field, bad.split('=').next().unwrap());
    }
    // Another merchant sees none of them.
    let other = app.merchant("Other");
    let page = app.get(&other.sk_test, "/v1/invoices").await.ok(200).clone();
    assert_eq!(page["items"], json!([]));
}

#[tokio::test]
async fn creation_field_rules() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let line = json!({"description": "x", "quantity": "1", "unitAmount": "5"});
    let cases: Vec<(Value, u16, &str, &str)> = vec![
        (json!({}), 400, "VALIDATION_ERROR", "lines"),
        (json!({"lines": []}), 400, "VALIDATION_ERROR", "lines"),
        (json!({"lines": vec![line.clone(); 101]}), 400, "VALIDATION_ERROR", "lines"),
        (
            json!({"lines": [{"description": "", "quantity": "1", "unitAmount": "1"}]}),
            400,
            "VALIDATION_ERROR",
            "lines[0].description",
        ),
        (
            json!({"lines": [{"description": "é".repeat(251), "quantity": "1", "unitAmount": "1"}]}),
            400,
            "VALIDATION_ERROR",
            "lines[0].description",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "0", "unitAmount": "1"}]}),
            400,
            "INVALID_AMOUNT",
            "lines[0].quantity",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "-1"}]}),
            400,
            "INVALID_AMOUNT",
            "lines[0].unitAmount",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": 1}]}),
            400,
            "INVALID_AMOUNT",
            "lines[0].unitAmount",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "1", "sku": "s".repeat(101)}]}),
            400,
            "VALIDATION_ERROR",
            "lines[0].sku",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "1", "color": "red"}]}),
            400,
            "VALIDATION_ERROR",
            "lines[0].color",
        ),
        (json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "0"}]}), 422, "INVALID_TOTAL", "lines"),
        (
            json!({"lines": [line.clone()], "discount": {"type": "fixed", "amount": "5.000001"}}),
            422,
            "INVALID_TOTAL",
            "discount",
        ),
        (
            json!({"lines": [line.clone()], "discount": {"type": "percentage", "percentage": "100.5"}}),
            400,
            "INVALID_AMOUNT",
            "discount.percentage",
        ),
        (json!({"lines": [line.clone()], "discount": {"type": "bogus"}}), 400, "VALIDATION_ERROR", "discount.type"),
        (
            json!({"lines": [line.clone()], "taxes": [{"label": "", "amount": "1"}]}),
            400,
            "VALIDATION_ERROR",
            "taxes[0].label",
        ),
        (
            json!({"lines": [line.clone()], "taxes": vec![json!({"label": "t", "amount": "1"}); 101]}),
            400,
            "VALIDATION_ERROR",
            "taxes",
        ),
        (json!({"lines": [line.clone()], "currencyCode": "USDT"}), 422, "CURRENCY_MISMATCH", "currencyCode"),
        (json!({"lines": [line.clone()], "currencyCode": "EUR"}), 422, "CURRENCY_MISMATCH", "currencyCode"),
        (
            json!({"lines": [line.clone()], "checkoutExpiresInMinutes": 4}),
            400,
            "INVALID_EXPIRY",
            "checkoutExpiresInMinutes",
        ),
        (json!({"lines": [line.clone()], "dueAt": "tomorrow"}), 400, "VALIDATION_ERROR", "dueAt"),
        (json!({"lines": [line.clone()], "customer": {"email": "nope"}}), 400, "VALIDATION_ERROR", "customer.email"),
        (
            json!({"lines": [line.clone()], "customer": {"name": "n".repeat(201)}}),
            400,
            "VALIDATION_ERROR",
            "customer.name",
        ),
        (json!({"lines": [line.clone()], "memo": "m".repeat(2001)}), 400, "VALIDATION_ERROR", "memo"),
        (json!({"lines": [line.clone()], "paymentTerms": "p".repeat(4001)}), 400, "VALIDATION_ERROR", "paymentTerms"),
        (
            json!({"lines": [line.clone()], "purchaseOrderNumber": "p".repeat(101)}),
            400,
            "VALIDATION_ERROR",
            "purchaseOrderNumber",
        ),
        (json!({"lines": [line.clone()], "successUrl": "not a url"}), 400, "VALIDATION_ERROR", "successUrl"),
        (json!({"lines": [line.clone()], "metadata": "x"}), 400, "VALIDATION_ERROR", "metadata"),
        (
            json!({"lines": [line.clone()], "reminderSchedule": {"enabled": true}}),
            400,
            "VALIDATION_ERROR",
            "reminderSchedule.enabled",
        ),
        (
            json!({"lines": [line.clone()], "dueAt": "2030-01-01T00:00:00Z", "reminderSchedule": {"daysBeforeDue": [1,2,3,4], "daysAfterDue": [1,2,3]}}),
            400,
            "VALIDATION_ERROR",
            "reminderSchedule",
        ),
        (json!({"lines": [line.clone()], "send": true}), 400, "VALIDATION_ERROR", "send"),
        (
            json!({"lines": [line.clone()], "issue": true, "send": true}),
            422,
            "CUSTOMER_EMAIL_REQUIRED",
            "customer.email",
        ),
        (json!({"amount": "5", "lines": [line.clone()]}), 400, "VALIDATION_ERROR", "amount"),
        (json!({"amount": "5", "memo": "x"}), 400, "VALIDATION_ERROR", "memo"),
        (json!({"amount": "0"}), 400, "INVALID_AMOUNT", "amount"),
        (json!({"lines": [line.clone()], "footer": "f".repeat(2001)}), 400, "VALIDATION_ERROR", "footer"),
        (
            json!({"lines": [line.clone()], "externalReference": "r".repeat(256)}),
            400,
            "VALIDATION_ERROR",
            "externalReference",
        ),
        (
            json!({"lines": [line.clone()], "customer": {"company": "c".repeat(201)}}),
            400,
            "VALIDATION_ERROR",
            "customer.company",
        ),
        (
            json!({"lines": [line.clone()], "customer": {"billingAddress": "a".repeat(1001)}}),
            400,
            "VALIDATION_ERROR",
            "customer.billingAddress",
        ),
        (
            json!({"lines": [line.clone()], "customer": {"email": format!("{}@example.com", "e".repeat(310))}}),
            400,
            "VALIDATION_ERROR",
            "customer.email",
        ),
        (
            json!({"lines": [{"description": "x", "quantity": "1", "unitAmount": "1", "id": "i".repeat(101)}]}),
            400,
            "VALIDATION_ERROR",
            "lines[0].id",
        ),
        (
            json!({"lines": [line.clone()], "taxes": [{"label": "t", "amount": "1", "id": "i".repeat(121)}]}),
            400,
            "VALIDATION_ERROR",
            "taxes[0].id",
        ),
        (
            json!({"lines": [line.clone()], "taxes": [{"label": "t", "amount": "1", "jurisdiction": "j".repeat(121)}]}),
            400,
            "VALIDATION_ERROR",
            "taxes[0].jurisdiction",
        ),
        (
            json!({"lines": [line.clone()], "taxes": [{"label": "t", "amount": "1", "registrationReference": "r".repeat(121)}]}),
            400,
            "VALIDATION_ERROR",
            "taxes[0].registrationReference",
        ),
        (
            json!({"lines": [line.clone()], "taxes": [{"label": "l".repeat(121), "amount": "1"}]}),
            400,
            "VALIDATION_ERROR",
            "taxes[0].label",
        ),
        (
            json!({"lines": [line.clone()], "dueAt": "2030-01-01T00:00:00Z", "reminderSchedule": {"daysBeforeDue": [0]}}),
            400,
            "VALIDATION_ERROR",
            "reminderSchedule.daysBeforeDue[0]",
        ),
    ];
    for (body, status, code, field) in cases {
        let res = app.post(&m.sk_test, "/v1/invoices", body.clone()).await;
        assert_eq!(res.assert_error(status, code).as_deref(), Some(field), "{body}");
    }
    let rows = app.db.query("SELECT count(*) AS n FROM invoices").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 0, "refused requests create nothing");
    // The boundaries themselves are accepted; reminder defaults fill in.
    let ok = json!({
        "lines": [{"description": "é".repeat(250), "quantity": "1", "unitAmount": "5"}],
        "discount": {"type": "fixed", "amount": "5"},
        "taxes": [{"label": "t", "amount": "0.000001"}],
        "dueAt": "2030-01-01T00:00:00Z",
        "reminderSchedule": {},
        "checkoutExpiresInMinutes": 1440,
        "currencyCode": "USDC"
    });
    let inv = app.post(&m.sk_test, "/v1/invoices", ok).await.ok(201).clone();
    assert_eq!(inv["total"], "0.000001");
    assert_eq!(
        inv["reminderSchedule"],
        json!({"enabled": true, "daysBeforeDue": [3], "onDue": true, "daysAfterDue": [7]})
    );
}

#[tokio::test]
async fn collection_actions_and_refunds() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let pay = |cs: String, amount: &'static str| {
        let app = &app;
        let key = m.sk_test.clone();
        async move {
            app.post(&key, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({"amount": amount}))
                .await
        }
    };
    let issue = |inv: Value| {
        let app = &app;
        let key = m.sk_test.clone();
        async move { app.post(&key, &path(&inv, "/issue"), json!({"version": 1})).await.ok(200).clone() }
    };

    // Void an open invoice; a later payment leaves it void.
    let a = issue(create_draft(&app, &m).await).await;
    let cs_a = a["checkout"]["checkoutSessionId"].as_str().unwrap().to_owned();
    app.post(&m.sk_test, &path(&a, "/void"), json!({})).await.assert_error(400, "VALIDATION_ERROR");
    app.post(&m.sk_test, &path(&a, "/void"), json!({"reason": "  "})).await.assert_error(400, "VALIDATION_ERROR");
    let voided = app.post(&m.sk_test, &path(&a, "/void"), json!({"reason": "duplicate order"})).await.ok(200).clone();
    assert_eq!(voided["collectionState"], "void");
    assert_eq!(voided["status"], "cancelled");
    assert_eq!(voided["closeReason"], "duplicate order");
    app.post(&m.sk_test, &path(&a, "/void"), json!({"reason": "again"}))
        .await
        .assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    // The session was cancelled with the collection, but a late transfer is still verified and
    // recorded; the invoice stays void.
    let session = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs_a}")).await.ok(200).clone();
    assert_eq!(session["status"], "cancelled");
    let late = pay(cs_a, "1").await.ok(201).clone();
    assert_eq!(late["status"], "underpaid");
    let after = app.get(&m.sk_test, &path(&a, "")).await.ok(200).clone();
    assert_eq!(after["collectionState"], "void");
    assert_eq!(after["customerAmountPaid"], "1.000000");

    // Partial payment, then void-remaining; payments stay recorded.
    let b = issue(create_draft(&app, &m).await).await;
    let cs_b = b["checkout"]["checkoutSessionId"].as_str().unwrap().to_owned();
    app.post(&m.sk_test, &path(&b, "/void-remaining"), json!({"reason": "x"}))
        .await
        .assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    let p = pay(cs_b.clone(), "5").await.ok(201).clone();
    let closed =
        app.post(&m.sk_test, &path(&b, "/void-remaining"), json!({"reason": "settled offline"})).await.ok(200).clone();
    assert_eq!(closed["collectionState"], "void");
    assert_eq!(closed["status"], "underpaid");
    assert_eq!(closed["customerAmountPaid"], "5.000000");
    assert_eq!(closed["payments"][0]["id"], p["id"]);

    // Refund references on the partially paid one.
    let refund = |body: Value| {
        let app = &app;
        let key = m.sk_test.clone();
        let b = b.clone();
        async move { app.post(&key, &path(&b, "/refund-references"), body).await }
    };
    let good = json!({
        "paymentId": p["id"], "amount": "2", "reason": "goodwill",
        "externalTransactionHash": format!("0x{}", "ab".repeat(32)), "chainId": 137,
        "tokenContract": "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359"
    });
    let recorded = refund(good.clone()).await.ok(201).clone();
    assert_eq!(recorded["adjustment"]["amount"], "2.000000");
    assert_eq!(recorded["invoice"]["refundReferences"].as_array().unwrap().len(), 1);
    assert_eq!(recorded["invoice"]["customerAmountPaid"], "5.000000", "a refund reference moves no money");
    let mut over = good.clone();
    over["amount"] = json!("3.000001");
    assert_eq!(refund(over).await.assert_error(400, "INVALID_AMOUNT").as_deref(), Some("amount"));
    let mut bad_hash = good.clone();
    bad_hash["externalTransactionHash"] = json!("0x12");
    assert_eq!(refund(bad_hash).await.assert_error(400, "INVALID_TX_HASH").as_deref(), Some("externalTransactionHash"));
    let mut bad_chain = good.clone();
    bad_chain["chainId"] = json!(1);
    assert_eq!(
        refund(bad_chain.clone()).await.assert_error(400, "INVALID_DEPOSIT_NETWORK").as_deref(),
        Some("chainId")
    );
    bad_chain["chainId"] = json!(-137);
    assert_eq!(refund(bad_chain).await.assert_error(400, "INVALID_DEPOSIT_NETWORK").as_deref(), Some("chainId"));
    let mut bad_token = good.clone();
    bad_token["tokenContract"] = json!("0x1");
    assert_eq!(refund(bad_token).await.assert_error(400, "INVALID_WALLET_ADDRESS").as_deref(), Some("tokenContract"));
    let mut bad_payment = good.clone();
    bad_payment["paymentId"] = json!("pay_unknown");
    assert_eq!(refund(bad_payment).await.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("paymentId"));

    // Mark uncollectible; a later payment emits payment_received_after_uncollectible.
    let c = issue(create_draft(&app, &m).await).await;
    let cs_c = c["checkout"]["checkoutSessionId"].as_str().unwrap().to_owned();
    let unc = app
        .post(&m.sk_test, &path(&c, "/mark-uncollectible"), json!({"reason": "customer gone"}))
        .await
        .ok(200)
        .clone();
    assert_eq!(unc["collectionState"], "uncollectible");
    app.post(&m.sk_test, &path(&c, "/mark-uncollectible"), json!({"reason": "x"}))
        .await
        .assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    pay(cs_c, "1").await.ok(201);
    let after = app.get(&m.sk_test, &path(&c, "")).await.ok(200).clone();
    assert_eq!(after["collectionState"], "uncollectible");

    // Drafts: no collection to close, nothing to refund, nothing to pay.
    let d = create_draft(&app, &m).await;
    app.post(&m.sk_test, &path(&d, "/void"), json!({"reason": "x"}))
        .await
        .assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    app.post(&m.sk_test, &path(&d, "/mark-uncollectible"), json!({"reason": "x"}))
        .await
        .assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    app.post(&m.sk_test, &path(&d, "/checkout-sessions"), json!({})).await.assert_error(409, "INVOICE_NOT_PAYABLE");

    let events = app.get(&m.sk_test, "/v1/events?limit=100").await.ok(200).clone();
    let types = count_by(events["items"].as_array().unwrap(), "type");
    assert_eq!(types.get("invoice.voided"), Some(&2));
    assert_eq!(types.get("invoice.uncollectible"), Some(&1));
    assert_eq!(types.get("invoice.refund_recorded"), Some(&1));
    assert_eq!(types.get("invoice.payment_received_after_void"), Some(&1));
    assert_eq!(types.get("invoice.payment_received_after_uncollectible"), Some(&1));
}

#[tokio::test]
async fn duplicate_and_the_email_and_pdf_routes() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let d = create_draft(&app, &m).await;
    app.post(&m.sk_test, &path(&d, "/issue"), json!({"version": 1})).await.ok(200);
    let copy = app.post(&m.sk_test, &path(&d, "/duplicate"), json!({})).await.ok(201).clone();
    assert_ne!(copy["id"], d["id"]);
    assert_eq!(copy["collectionState"], "draft");
    assert_eq!(copy["version"], 1);
    assert_eq!(copy["lines"], d["lines"]);
    assert_eq!(copy["total"], d["total"]);
    assert_eq!(copy["customer"], d["customer"]);
    assert!(copy["invoiceNumber"].is_null());
    let legacy = app.post(&m.sk_test, "/v1/invoices", json!({"amount": "9"})).await.ok(201).clone();
    let copy = app.post(&m.sk_test, &path(&legacy, "/duplicate"), json!({})).await.ok(201).clone();
    assert_eq!(copy["kind"], "itemized");
    assert_eq!(copy["total"], "9.000000");
    // Email and PDF (their own tests are emails.rs and pdf.rs): available for an issued invoice.
    for suffix in ["/send", "/remind"] {
        assert_eq!(app.post(&m.sk_test, &path(&d, suffix), json!({})).await.ok(202)["status"], "queued");
    }
    let pdf = app.http.get(app.url(&path(&d, "/pdf"))).bearer_auth(&m.sk_test).send().await.unwrap();
    assert_eq!(pdf.status().as_u16(), 200);
    for suffix in ["/send", "/remind", "/pdf"] {
        let p = format!("/v1/invoices/inv_missing{suffix}");
        let r =
            if suffix == "/pdf" { app.get(&m.sk_test, &p).await } else { app.post(&m.sk_test, &p, json!({})).await };
        r.assert_error(404, "INVOICE_NOT_FOUND");
    }
    let mut body = draft_body();
    body["issue"] = json!(true);
    body["send"] = json!(true);
    let sent = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let activity: Vec<&str> =
        sent["activity"].as_array().unwrap().iter().filter_map(|a| a["action"].as_str()).collect();
    assert!(activity.contains(&"email_queued"), "{activity:?}");
}

#[tokio::test]
async fn hosted_invoice_tokens_never_reach_the_logs() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let mut body = draft_body();
    body["issue"] = json!(true);
    let inv = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let url = inv["hostedInvoiceUrl"].as_str().unwrap();
    let token = url.rsplit('/').next().unwrap();
    assert_eq!(app.http.get(url).send().await.unwrap().status().as_u16(), 200);
    let bad = app.http.get(format!("{}/i/{}", app.base, "x".repeat(43))).send().await.unwrap();
    assert_eq!(bad.status().as_u16(), 404);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let logs = app.logs();
    assert!(logs.contains("/i/[token]"), "the page request is logged");
    assert!(!logs.contains(token), "the token leaked into the logs");
}

#[tokio::test]
async fn deeply_nested_metadata_is_refused_and_what_is_accepted_reads_back() {
    let app = crate::support::TestApp::spawn().await;
    let m = app.merchant("Shop");
    let nested = |levels: usize| -> serde_json::Value {
        let text = format!("{{\"a\":{}1{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1));
        serde_json::from_str(&text).unwrap()
    };
    let r = app
        .post(&m.sk_test, "/v1/checkout-sessions", serde_json::json!({ "amount": "1", "metadata": nested(100) }))
        .await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("metadata"));
    let ok = app
        .post(&m.sk_test, "/v1/checkout-sessions", serde_json::json!({ "amount": "1", "metadata": nested(32) }))
        .await;
    let cs = ok.ok(201).clone();
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(inv["metadata"], nested(32));
    app.get(&m.sk_test, "/v1/invoices?collectionState=open").await.ok(200);
}
