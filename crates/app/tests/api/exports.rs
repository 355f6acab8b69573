//! Exports over HTTP against the real binary: files written by the worker and read back with
//! Python's `csv` module equal to what the API's lists say, the formula guard, the synchronous
//! export, every refusal and state code, expiry through the test clock, pagination and scoping.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Merchant, TestApp, fresh_db};

fn range() -> Value {
    let now = chrono::Utc::now();
    json!({ "from": (now - chrono::Duration::hours(1)).to_rfc3339(), "to": (now + chrono::Duration::hours(1)).to_rfc3339() })
}

fn body(kind: &str, extra: Value) -> Value {
    let mut b = range();
    b["type"] = json!(kind);
    if let (Some(b), Some(extra)) = (b.as_object_mut(), extra.as_object()) {
        for (k, v) in extra {
            b.insert(k.clone(), v.clone());
        }
    }
    b
}

/// Rows of a CSV file as Python's `csv` module reads them (header first).
pub(crate) async fn python_rows(csv: &[u8]) -> Vec<Vec<String>> {
    let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/python");
    let file = std::env::temp_dir().join(format!("export-{}-{}.csv", std::process::id(), rand_suffix()));
    std::fs::write(&file, csv).unwrap();
    let script = "import csv, json, sys\nwith open(sys.argv[1], newline='', encoding='utf-8') as f:\n    print(json.dumps(list(csv.reader(f))))";
    let out = tokio::process::Command::new(python).arg("-c").arg(script).arg(&file).output().await.expect("python");
    let _ = std::fs::remove_file(&file);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
}

/// Waits until the export is no longer queued or running; answers it.
async fn settled(app: &TestApp, key: &str, id: &str) -> Value {
    for _ in 0..200 {
        let e = app.get(key, &format!("/v1/exports/{id}")).await.ok(200).clone();
        if !matches!(e["status"].as_str(), Some("queued" | "running")) {
            return e;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("export {id} was not written");
}

async fn file(app: &TestApp, key: &str, id: &str) -> (reqwest::header::HeaderMap, Vec<u8>) {
    let res = app.http.get(app.url(&format!("/v1/exports/{id}/file"))).bearer_auth(key).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let headers = res.headers().clone();
    (headers, res.bytes().await.unwrap().to_vec())
}

/// A few invoices of every kind: drafts, issued ones, a paid one with a formula in its
/// customer's name, an amount-only checkout; answers the paid invoice's id.
pub(crate) async fn books(app: &TestApp, m: &Merchant) -> String {
    let itemized = |name: &str, issue: bool| {
        json!({
            "lines": [{ "description": "Beans, roasted", "quantity": "3", "unitAmount": "12.345678" }],
            "customer": { "name": name, "email": "ada@example.com", "company": "Engines \"Ltd\"" },
            "metadata": { "order": "A-1", "note": "line\nbreak" },
            "issue": issue
        })
    };
    app.post(&m.sk_test, "/v1/invoices", itemized("Draft Customer", false)).await.ok(201);
    let paid =
        app.post(&m.sk_test, "/v1/invoices", itemized("=HYPERLINK(\"http://evil\",\"x\")", true)).await.ok(201).clone();
    let cs = paid["checkoutSessions"][0]["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await.ok(201);
    app.post(&m.sk_test, "/v1/invoices", itemized("+Plus Customer", true)).await.ok(201);
    let checkout = app
        .post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5.5", "externalReference": "@ref" }))
        .await
        .ok(201)
        .clone();
    let half = json!({ "amount": "2.000001" });
    let cs = checkout["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), half).await.ok(201);
    paid["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_export_file_equals_the_api_lists_row_for_row() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())], &[]).await;
    let m = app.merchant("Books");
    let other = app.merchant("Other");
    let paid_id = books(&app, &m).await;
    books(&app, &other).await;

    let created = app.post(&m.sk_test, "/v1/exports", body("invoices", json!({}))).await.ok(202).clone();
    assert_eq!((created["object"].as_str(), created["status"].as_str()), (Some("export"), Some("queued")));
    assert_eq!((created["schema"].as_str(), created["mode"].as_str()), (Some("invoices.v1"), Some("test")));
    assert!(created["id"].as_str().unwrap().starts_with("exp_"));
    let id = created["id"].as_str().unwrap();
    let ready = settled(&app, &m.sk_test, id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["rowCount"], 4);
    let (headers, bytes) = file(&app, &m.sk_test, id).await;
    assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
    assert_eq!(headers["cache-control"], "no-store");
    let disposition = headers["content-disposition"].to_str().unwrap();
    assert!(
        disposition.starts_with("attachment; filename=\"invoices-") && disposition.ends_with(".csv\""),
        "{disposition}"
    );
    assert_eq!(ready["byteSize"].as_u64().unwrap(), u64::try_from(bytes.len()).unwrap());

    let rows = python_rows(&bytes).await;
    let header = &rows[0];
    assert_eq!(header[0], "id");
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    // The API lists newest first; the file is in creation order.
    let mut listed = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"].as_array().unwrap().clone();
    listed.reverse();
    assert_eq!(rows.len() - 1, listed.len());
    for (row, inv) in rows[1..].iter().zip(&listed) {
        let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_default();
        assert_eq!(row[col("id")], text(&inv["id"]));
        assert_eq!(row[col("invoice_number")], text(&inv["invoiceNumber"]));
        assert_eq!(row[col("collection_state")], text(&inv["collectionState"]));
        for (column, field) in [
            ("subtotal", "subtotal"),
            ("total", "total"),
            ("tax_amount", "taxAmount"),
            ("customer_amount_paid", "customerAmountPaid"),
            ("customer_amount_remaining", "customerAmountRemaining"),
            ("merchant_amount_settled", "merchantAmountSettled"),
            ("net_amount", "netAmount"),
            ("created_at", "createdAt"),
            ("issued_at", "issuedAt"),
            ("paid_at", "paidAt"),
        ] {
            assert_eq!(row[col(column)], text(&inv[field]), "{column} of {}", text(&inv["id"]));
        }
        let name = text(&inv["customer"]["name"]);
        let guarded = if name.starts_with(['=', '+', '-', '@']) { format!("'{name}") } else { name };
        assert_eq!(row[col("customer_name")], guarded);
        assert_eq!(row[col("customer_company")], text(&inv["customer"]["company"]));
        if inv["metadata"].is_object() {
            let meta: Value = serde_json::from_str(&row[col("metadata")]).unwrap();
            assert_eq!(meta, inv["metadata"]);
        }
    }
    // The formula guard, read back: the text is kept, a spreadsheet will not run it.
    let paid_row = rows.iter().find(|r| r[0] == paid_id).unwrap();
    assert_eq!(paid_row[col("customer_name")], "'=HYPERLINK(\"http://evil\",\"x\")");
    let checkout_row = rows.iter().find(|r| r[col("kind")] == "amount_only").unwrap();
    assert_eq!(checkout_row[col("external_reference")], "'@ref");
    assert_eq!(checkout_row[col("customer_amount_paid")], "2.000001");

    // Filtered like the list: only paid invoices.
    let paid = app
        .post(&m.sk_test, "/v1/exports", body("invoices", json!({ "filters": { "collectionState": "paid" } })))
        .await;
    let paid = settled(&app, &m.sk_test, paid.ok(202)["id"].as_str().unwrap()).await;
    let listed =
        app.get(&m.sk_test, "/v1/invoices?collectionState=paid").await.ok(200)["items"].as_array().unwrap().len();
    assert_eq!(paid["rowCount"].as_u64().unwrap(), u64::try_from(listed).unwrap());
    assert_eq!(paid["filters"]["collectionState"], "paid");

    // Payments: every payment record of the invoices, amount for amount.
    let payments = app.post(&m.sk_test, "/v1/exports", body("payments", json!({}))).await.ok(202).clone();
    let payments = settled(&app, &m.sk_test, payments["id"].as_str().unwrap()).await;
    let (_, bytes) = file(&app, &m.sk_test, payments["id"].as_str().unwrap()).await;
    let rows = python_rows(&bytes).await;
    let pcol = |name: &str| rows[0].iter().position(|h| h == name).unwrap();
    let all: Vec<Value> = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|i| i["payments"].as_array().unwrap().clone())
        .collect();
    assert_eq!(rows.len() - 1, all.len());
    for p in &all {
        let row = rows.iter().find(|r| r[0] == p["id"].as_str().unwrap()).unwrap();
        for (column, field) in [
            ("status", "status"),
            ("amount_received", "amountReceived"),
            ("customer_amount_credited", "customerAmountCredited"),
            ("transaction_id", "transactionId"),
            ("detected_at", "detectedAt"),
        ] {
            assert_eq!(row[pcol(column)], p[field].as_str().unwrap(), "{column}");
        }
        assert_eq!(row[pcol("currency_code")], "USDC");
    }

    // The synchronous export answers the same file at once.
    let res = app
        .http
        .post(app.url("/v1/exports/sync"))
        .bearer_auth(&m.sk_test)
        .json(&body("payments", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(res.bytes().await.unwrap().to_vec(), bytes);
}

#[tokio::test]
async fn every_refusal_names_its_field_or_its_code() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let now = chrono::Utc::now();
    let at = |days: i64| (now + chrono::Duration::days(days)).to_rfc3339();
    // An export of `export_type` over the last day, with `more` members.
    let day = |export_type: &str, more: Value| {
        let mut body = json!({ "type": export_type, "from": at(-1), "to": at(0) });
        body.as_object_mut().unwrap().extend(more.as_object().unwrap().clone());
        body
    };
    for (b, code, field) in [
        (json!({ "from": at(-1), "to": at(0) }), "VALIDATION_ERROR", Some("type")),
        (json!({ "type": "refunds", "from": at(-1), "to": at(0) }), "VALIDATION_ERROR", Some("type")),
        (json!({ "type": "invoices", "to": at(0) }), "VALIDATION_ERROR", Some("from")),
        (json!({ "type": "invoices", "from": at(-1) }), "VALIDATION_ERROR", Some("to")),
        (json!({ "type": "invoices", "from": "yesterday", "to": at(0) }), "VALIDATION_ERROR", Some("from")),
        (json!({ "type": "invoices", "from": at(0), "to": at(0) }), "VALIDATION_ERROR", Some("to")),
        (json!({ "type": "invoices", "from": at(-367), "to": at(0) }), "EXPORT_RANGE_TOO_LARGE", Some("to")),
        (day("invoices", json!({ "schema": "invoices.v9" })), "EXPORT_SCHEMA_UNSUPPORTED", Some("schema")),
        (day("invoices", json!({ "schema": "payments.v1" })), "EXPORT_SCHEMA_UNSUPPORTED", Some("schema")),
        (day("invoices", json!({ "filters": { "status": "confirmed" } })), "VALIDATION_ERROR", Some("filters.status")),
        (
            day("payments", json!({ "filters": { "collectionState": "paid" } })),
            "VALIDATION_ERROR",
            Some("filters.collectionState"),
        ),
        (
            day("invoices", json!({ "filters": { "collectionState": "gone" } })),
            "VALIDATION_ERROR",
            Some("filters.collectionState"),
        ),
        (
            day("invoices", json!({ "filters": { "paymentLink": "inv_1" } })),
            "VALIDATION_ERROR",
            Some("filters.paymentLink"),
        ),
        (json!({ "type": "invoices", "from": at(-1), "to": at(0), "extra": 1 }), "VALIDATION_ERROR", Some("extra")),
    ] {
        for path in ["/v1/exports", "/v1/exports/sync"] {
            let r = app.post(&m.sk_test, path, b.clone()).await;
            assert_eq!(r.body["error"]["code"], code, "{path} {b}: {}", r.body);
            if let Some(field) = field {
                assert_eq!(r.body["error"]["details"]["field"], field, "{path} {b}: {}", r.body);
            }
        }
    }
    // A full 366 days is allowed.
    app.post(&m.sk_test, "/v1/exports", json!({ "type": "invoices", "from": at(-366), "to": at(0) })).await.ok(202);
    // Nothing was created by the refusals.
    assert_eq!(app.get(&m.sk_test, "/v1/exports").await.ok(200)["items"].as_array().unwrap().len(), 1);
    app.post(&m.pk_test, "/v1/exports", body("invoices", json!({}))).await.assert_error(403, "API_KEY_FORBIDDEN");
    app.get(&m.pk_test, "/v1/exports").await.assert_error(403, "API_KEY_FORBIDDEN");
    app.get(&m.sk_test, "/v1/exports?status=done").await.assert_error(400, "VALIDATION_ERROR");
    app.get(&m.sk_test, "/v1/exports/exp_unknown").await.assert_error(404, "NOT_FOUND");
    app.get(&m.sk_test, "/v1/exports/inv_123").await.assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn states_codes_pagination_and_scoping() {
    // No worker: exports stay queued.
    let app = TestApp::spawn_with(fresh_db().await, &[], &["--no-worker"]).await;
    let m = app.merchant("Shop");
    let other = app.merchant("Other");
    let mut ids = Vec::new();
    for kind in ["invoices", "payments", "invoices", "payments", "invoices"] {
        ids.push(
            app.post(&m.sk_test, "/v1/exports", body(kind, json!({}))).await.ok(202)["id"].as_str().unwrap().to_owned(),
        );
    }
    let id = &ids[0];
    // Not ready yet.
    let r = app.get(&m.sk_test, &format!("/v1/exports/{id}/file")).await;
    r.assert_error(409, "EXPORT_NOT_READY");
    assert!(r.headers.contains_key("retry-after"));
    // Another merchant's id is not found; the other mode's is a mode mismatch.
    app.get(&other.sk_test, &format!("/v1/exports/{id}")).await.assert_error(404, "NOT_FOUND");
    app.get(&other.sk_test, &format!("/v1/exports/{id}/file")).await.assert_error(404, "NOT_FOUND");
    app.post(&other.sk_test, &format!("/v1/exports/{id}/cancel"), json!({})).await.assert_error(404, "NOT_FOUND");
    app.get(&m.sk_live, &format!("/v1/exports/{id}")).await.assert_error(409, "MODE_MISMATCH");
    assert_eq!(app.get(&other.sk_test, "/v1/exports").await.ok(200)["items"].as_array().unwrap().len(), 0);

    // Cancelled while queued: no file; cancelling again answers it again.
    let c = app.post(&m.sk_test, &format!("/v1/exports/{id}/cancel"), json!({})).await.ok(200).clone();
    assert_eq!(c["status"], "cancelled");
    app.post(&m.sk_test, &format!("/v1/exports/{id}/cancel"), json!({})).await.ok(200);
    app.get(&m.sk_test, &format!("/v1/exports/{id}/file")).await.assert_error(409, "EXPORT_CANCELLED");

    // Pages of two, newest first, and the filters.
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/v1/exports?limit=2&startingAfter={c}"),
            None => "/v1/exports?limit=2".to_owned(),
        };
        let page = app.get(&m.sk_test, &path).await.ok(200).clone();
        seen.extend(page["items"].as_array().unwrap().iter().map(|e| e["id"].as_str().unwrap().to_owned()));
        if !page["hasMore"].as_bool().unwrap() {
            break;
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
    }
    let mut newest_first = ids.clone();
    newest_first.reverse();
    assert_eq!(seen, newest_first);
    let payments = app.get(&m.sk_test, "/v1/exports?type=payments").await.ok(200)["items"].as_array().unwrap().len();
    assert_eq!(payments, 2);
    let cancelled =
        app.get(&m.sk_test, "/v1/exports?status=cancelled").await.ok(200)["items"].as_array().unwrap().len();
    assert_eq!(cancelled, 1);
    app.get(&m.sk_test, &format!("/v1/exports?startingAfter={}", "exp_nope"))
        .await
        .assert_error(400, "VALIDATION_ERROR");
}

/// A ready invoices export of `m`'s books: its id, and how long after `readyAt` it expires.
async fn ready_export(app: &TestApp, m: &Merchant) -> (String, chrono::Duration) {
    books(app, m).await;
    let id = app.post(&m.sk_test, "/v1/exports", body("invoices", json!({}))).await.ok(202)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let ready = settled(app, &m.sk_test, &id).await;
    let expires: chrono::DateTime<chrono::Utc> = ready["expiresAt"].as_str().unwrap().parse().unwrap();
    let ready_at: chrono::DateTime<chrono::Utc> = ready["readyAt"].as_str().unwrap().parse().unwrap();
    (id, expires - ready_at)
}

#[tokio::test]
async fn a_ready_file_expires_on_the_merchants_clock_and_its_bytes_are_deleted() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())], &[]).await;
    let m = app.merchant("Shop");
    let (id, kept) = ready_export(&app, &m).await;
    assert_eq!(kept, chrono::Duration::days(7));
    app.post(&m.sk_test, &format!("/v1/exports/{id}/cancel"), json!({}))
        .await
        .assert_error(409, "EXPORT_NOT_CANCELLABLE");
    file(&app, &m.sk_test, &id).await;
    let chunks = format!("SELECT 1 FROM export_chunks WHERE export_id = '{id}'");
    assert!(!app.db.query(&chunks).await.is_empty());

    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 6 * 86_400 })).await.ok(200);
    file(&app, &m.sk_test, &id).await;
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 86_400 + 60 })).await.ok(200);
    let r = app.get(&m.sk_test, &format!("/v1/exports/{id}/file")).await;
    r.assert_error(410, "EXPORT_EXPIRED");
    assert_eq!(app.get(&m.sk_test, &format!("/v1/exports/{id}")).await.ok(200)["status"], "expired");
    assert!(app.db.query(&chunks).await.is_empty(), "the expired file's bytes are still stored");
}

#[tokio::test]
async fn the_deployments_retention_setting_decides_how_long_a_file_is_kept() {
    let env = [
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string()),
        ("STABLEPAY_RETENTION_EXPORT_FILES_DAYS", "2".to_string()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let (id, kept) = ready_export(&app, &m).await;
    assert_eq!(kept, chrono::Duration::days(2));
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 86_400 })).await.ok(200);
    file(&app, &m.sk_test, &id).await;
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 86_400 + 60 })).await.ok(200);
    app.get(&m.sk_test, &format!("/v1/exports/{id}/file")).await.assert_error(410, "EXPORT_EXPIRED");
    // The bytes go in the statement that expires the export (the read's or the worker's,
    // whichever holds the row); wait out a worker's statement still committing.
    let chunks = format!("SELECT 1 FROM export_chunks WHERE export_id = '{id}'");
    crate::live::eventually("the expired file's bytes deleted", || async {
        app.db.query(&chunks).await.is_empty().then_some(())
    })
    .await;
}

/// `n` more draft invoices of `m`, copied in the database from one made through the API (the
/// API would take minutes to make this many).
async fn bulk_drafts(app: &TestApp, m: &Merchant, n: u32) {
    let draft = json!({ "lines": [{ "description": "Bulk", "quantity": "1", "unitAmount": "1.25" }],
                        "customer": { "name": "Bulk Buyer" } });
    let id = app.post(&m.sk_test, "/v1/invoices", draft).await.ok(201)["id"].as_str().unwrap().to_owned();
    app.db
        .query(&format!(
            "INSERT INTO invoices SELECT r.* FROM invoices i, generate_series(1, {n}) g, \
             LATERAL jsonb_populate_record(NULL::invoices, to_jsonb(i) || jsonb_build_object( \
               'id', 'inv_bulk' || g, 'seq', nextval(pg_get_serial_sequence('invoices', 'seq')))) r \
             WHERE i.id = '{id}'"
        ))
        .await;
}

#[tokio::test]
async fn a_sync_export_over_ten_thousand_rows_is_refused_before_a_byte() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Big");
    bulk_drafts(&app, &m, 10_000).await;
    let r = app.post(&m.sk_test, "/v1/exports/sync", body("invoices", json!({}))).await;
    r.assert_error(422, "EXPORT_TOO_LARGE_FOR_SYNC");
    assert_eq!(
        (r.body["error"]["details"]["rows"].as_u64(), r.body["error"]["details"]["limit"].as_u64()),
        (Some(10_001), Some(10_000))
    );
    assert!(r.body["error"]["message"].as_str().unwrap().contains("POST /v1/exports"));
    // A narrower filter fits.
    let narrow = body("invoices", json!({ "filters": { "collectionState": "open" } }));
    let res = app.http.post(app.url("/v1/exports/sync")).bearer_auth(&m.sk_test).json(&narrow).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(python_rows(&res.bytes().await.unwrap()).await.len(), 1, "only the header");
}

async fn wait_for_chunks(app: &TestApp, id: &str) {
    for _ in 0..400 {
        let rows = app.db.query(&format!("SELECT 1 FROM export_chunks WHERE export_id = '{id}'")).await;
        if !rows.is_empty() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("export {id} wrote no chunk");
}

/// A service started with `env` whose worker is writing an export of 20,001 invoices (its
/// first chunks are stored): the service, the merchant and the export's id.
async fn a_large_export_being_written(env: &[(&str, String)]) -> (TestApp, Merchant, String) {
    let app = TestApp::spawn_with(fresh_db().await, env, &[]).await;
    let m = app.merchant("Big");
    bulk_drafts(&app, &m, 20_000).await;
    let id = app.post(&m.sk_test, "/v1/exports", body("invoices", json!({}))).await.ok(202)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_chunks(&app, &id).await;
    (app, m, id)
}

#[tokio::test]
async fn a_worker_killed_mid_export_leaves_it_to_be_written_again_whole() {
    let env = [("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())];
    let (mut app, m, id) = a_large_export_being_written(&env).await;
    let status = app.db.query(&format!("SELECT status FROM exports WHERE id = '{id}'")).await;
    assert_eq!(status[0].get::<_, String>(0), "running", "the export finished before the kill; make it larger");
    app.kill_and_restart(&env).await;
    // Its lease would run out in a minute: end it now, as time would.
    app.db.query(&format!("UPDATE exports SET lease_until = now() - interval '1 second' WHERE id = '{id}'")).await;
    crate::support::wake_the_worker(&app.db).await;
    let ready = settled(&app, &m.sk_test, &id).await;
    assert_eq!(ready["status"], "ready", "{ready}");
    assert_eq!(ready["rowCount"], 20_001);
    let (_, bytes) = file(&app, &m.sk_test, &id).await;
    let rows = python_rows(&bytes).await;
    assert_eq!(rows.len(), 20_002);
    let mut ids: Vec<&String> = rows[1..].iter().map(|r| &r[0]).collect();
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 20_001, "a row was written twice");
}

#[tokio::test]
async fn an_export_cancelled_while_it_runs_stops_and_keeps_no_bytes() {
    let (app, m, id) = a_large_export_being_written(&[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())]).await;
    let cancelled = app.post(&m.sk_test, &format!("/v1/exports/{id}/cancel"), json!({})).await.ok(200).clone();
    assert_eq!(cancelled["status"], "cancelled");
    // The worker notices at its next chunk and stops; nothing it wrote is kept.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(app.get(&m.sk_test, &format!("/v1/exports/{id}")).await.ok(200)["status"], "cancelled");
    assert!(app.db.query(&format!("SELECT 1 FROM export_chunks WHERE export_id = '{id}'")).await.is_empty());
    app.get(&m.sk_test, &format!("/v1/exports/{id}/file")).await.assert_error(409, "EXPORT_CANCELLED");
    assert!(app.logs().contains("export cancelled while it was written"), "{}", app.logs());
}

/// The CSV of a synchronous export, read back with Python's `csv` module.
pub(crate) async fn sync_rows(app: &TestApp, key: &str, body: &Value) -> Vec<Vec<String>> {
    let res = app.http.post(app.url("/v1/exports/sync")).bearer_auth(key).json(body).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200, "{}", res.text().await.unwrap_or_default());
    python_rows(&res.bytes().await.unwrap()).await
}

/// Invoice lines, one row per line of every itemized invoice, equal to the invoices' lines;
/// refund references, one row per refund recorded in the range; the filters each type takes.
#[tokio::test]
async fn invoice_lines_and_refund_references_export_one_row_each() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())], &[]).await;
    let m = app.merchant("Lines");
    let paid_id = books(&app, &m).await;
    let two = json!({ "lines": [
        { "id": "L-1", "sku": "SKU-9", "description": "-discount applied", "quantity": "1.5", "unitAmount": "0.333333" },
        { "description": "Grinder", "quantity": "1", "unitAmount": "99" }
    ] });
    app.post(&m.sk_test, "/v1/invoices", two).await.ok(201);
    let paid = app.get(&m.sk_test, &format!("/v1/invoices/{paid_id}")).await.ok(200).clone();
    let refund = json!({ "paymentId": paid["payments"][0]["id"], "amount": "1.25", "reason": "=damaged",
        "externalTransactionHash": format!("0x{}", "cd".repeat(32)), "chainId": 137,
        "tokenContract": "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359" });
    let refunded =
        app.post(&m.sk_test, &format!("/v1/invoices/{paid_id}/refund-references"), refund).await.ok(201).clone();

    let rows = sync_rows(&app, &m.sk_test, &body("invoice_lines", json!({}))).await;
    let header = rows[0].clone();
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    // The API's lines, oldest invoice first, itemized invoices only.
    let mut listed = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"].as_array().unwrap().clone();
    listed.reverse();
    let mut expected = Vec::new();
    for inv in listed.iter().filter(|i| i["kind"] == "itemized") {
        for (n, line) in inv["lines"].as_array().unwrap().iter().enumerate() {
            expected.push((inv["id"].as_str().unwrap().to_owned(), (n + 1).to_string(), line.clone()));
        }
    }
    assert_eq!(rows.len() - 1, expected.len());
    assert_eq!(expected.len(), 5);
    for (row, (invoice, n, line)) in rows[1..].iter().zip(&expected) {
        assert_eq!((&row[col("invoice_id")], &row[col("line_number")]), (invoice, n));
        for (column, field) in [("quantity", "quantity"), ("unit_amount", "unitAmount"), ("amount", "amount")] {
            assert_eq!(row[col(column)], line[field].as_str().unwrap(), "{column}");
        }
    }
    let last = rows.last().unwrap();
    assert_eq!(rows[rows.len() - 2][col("description")], "'-discount applied", "formulas are neutralised");
    assert_eq!(
        (rows[rows.len() - 2][col("sku")].as_str(), rows[rows.len() - 2][col("line_id")].as_str()),
        ("SKU-9", "L-1")
    );
    assert_eq!((last[col("description")].as_str(), last[col("amount")].as_str()), ("Grinder", "99.000000"));
    // A collection-state filter keeps the paid invoice's line only.
    let paid_lines =
        sync_rows(&app, &m.sk_test, &body("invoice_lines", json!({ "filters": { "collectionState": "paid" } }))).await;
    assert_eq!(paid_lines.len(), 2);
    assert_eq!(paid_lines[1][col("invoice_id")], paid_id);

    let rows = sync_rows(&app, &m.sk_test, &body("refund_references", json!({}))).await;
    assert_eq!(rows.len(), 2);
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let refund = &refunded["adjustment"];
    assert_eq!(rows[1][col("id")], refund["id"].as_str().unwrap());
    assert_eq!(rows[1][col("invoice_id")], paid_id);
    assert_eq!(rows[1][col("amount")], "1.250000");
    assert_eq!(rows[1][col("reason")], "'=damaged");
    // Refunds are dated by their recording: a later range holds none.
    let later = chrono::Utc::now() + chrono::Duration::days(1);
    let empty = json!({ "type": "refund_references", "from": later.to_rfc3339(), "to": (later + chrono::Duration::days(1)).to_rfc3339() });
    assert_eq!(sync_rows(&app, &m.sk_test, &empty).await.len(), 1);
    // The same through the worker's file.
    let created = app.post(&m.sk_test, "/v1/exports", body("refund_references", json!({}))).await.ok(202).clone();
    let ready = settled(&app, &m.sk_test, created["id"].as_str().unwrap()).await;
    assert_eq!((ready["status"].as_str(), ready["rowCount"].as_u64()), (Some("ready"), Some(1)));

    // Filters of another type, and a reconciliation export without its run.
    let foreign = body("refund_references", json!({ "filters": { "collectionState": "paid" } }));
    let r = app.post(&m.sk_test, "/v1/exports", foreign).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("filters.collectionState"));
    let r = app.post(&m.sk_test, "/v1/exports", body("reconciliation", json!({}))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("filters.runId"));
    let r = app.post(&m.sk_test, "/v1/exports", body("invoices", json!({ "filters": { "runId": "rcr_1" } }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("filters.runId"));
    let r = app
        .post(&m.sk_test, "/v1/exports", body("reconciliation", json!({ "filters": { "runId": "rcr_unknown" } })))
        .await;
    r.assert_error(404, "NOT_FOUND");
    let r = app.post(&m.sk_test, "/v1/exports", body("reconciliation", json!({ "filters": { "runId": "x" } }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("filters.runId"));
}

/// A file (and a synchronous export) asked for with `Accept-Encoding: gzip` comes gzip-encoded
/// and decodes to the same bytes; asked for without, it comes as it is.
#[tokio::test]
async fn files_come_gzip_encoded_when_the_client_accepts_it() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string())], &[]).await;
    let m = app.merchant("Zip");
    books(&app, &m).await;
    let created = app.post(&m.sk_test, "/v1/exports", body("invoices", json!({}))).await.ok(202).clone();
    let id = created["id"].as_str().unwrap();
    assert_eq!(settled(&app, &m.sk_test, id).await["status"], "ready");
    let (plain_headers, plain) = file(&app, &m.sk_test, id).await;
    assert!(plain_headers.get("content-encoding").is_none());
    let gunzip = |bytes: Vec<u8>| async move {
        let mut child = tokio::process::Command::new("gzip")
            .arg("-dc")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("gzip");
        let mut stdin = child.stdin.take().unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut stdin, &bytes).await.unwrap();
        drop(stdin);
        let out = child.wait_with_output().await.unwrap();
        assert!(out.status.success());
        out.stdout
    };
    let res = app
        .http
        .get(app.url(&format!("/v1/exports/{id}/file")))
        .bearer_auth(&m.sk_test)
        .header("Accept-Encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-encoding"], "gzip");
    assert_eq!(res.headers()["content-type"], "text/csv; charset=utf-8");
    assert_eq!(res.headers()["cache-control"], "no-store");
    let zipped = res.bytes().await.unwrap().to_vec();
    assert_ne!(zipped, plain);
    assert_eq!(gunzip(zipped).await, plain);
    let res = app
        .http
        .post(app.url("/v1/exports/sync"))
        .bearer_auth(&m.sk_test)
        .header("Accept-Encoding", "gzip")
        .json(&body("invoices", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!((res.status().as_u16(), res.headers()["content-encoding"].to_str().unwrap()), (200, "gzip"));
    assert_eq!(gunzip(res.bytes().await.unwrap().to_vec()).await, plain);
}

/// Payment links and webhook deliveries, one row each, equal to what their lists answer.
#[tokio::test]
async fn payment_links_and_webhook_deliveries_export_one_row_each() {
    let env = [
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_string()),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Links");
    let fixed = json!({ "title": "=Coffee", "amountType": "fixed", "amount": "4.5", "metadata": { "sku": "C-1" } });
    app.post(&m.sk_test, "/v1/payment-links", fixed).await.ok(201);
    let open = json!({ "title": "Tip jar", "amountType": "customer_entered", "minimumAmount": "1", "maximumAmount": "50",
        "collect": { "email": true }, "usageType": "single_use" });
    app.post(&m.sk_test, "/v1/payment-links", open).await.ok(201);
    let rows = sync_rows(&app, &m.sk_test, &body("payment_links", json!({}))).await;
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    let mut listed = app.get(&m.sk_test, "/v1/payment-links").await.ok(200)["items"].as_array().unwrap().clone();
    listed.reverse();
    assert_eq!(rows.len() - 1, 2);
    for (row, link) in rows[1..].iter().zip(&listed) {
        assert_eq!(row[col("id")], link["id"].as_str().unwrap());
        assert_eq!(row[col("amount_type")], link["amountType"].as_str().unwrap());
        assert_eq!(row[col("usage_type")], link["usageType"].as_str().unwrap());
        let text = |v: &Value| v.as_str().map(str::to_owned).unwrap_or_default();
        for (column, field) in
            [("amount", "amount"), ("minimum_amount", "minimumAmount"), ("maximum_amount", "maximumAmount")]
        {
            assert_eq!(row[col(column)], text(&link[field]), "{column}");
        }
    }
    assert_eq!(rows[1][col("title")], "'=Coffee");
    assert_eq!(rows[1][col("metadata")], "{\"sku\":\"C-1\"}");
    assert_eq!((rows[2][col("collect_email")].as_str(), rows[2][col("lifecycle")].as_str()), ("true", "active"));
    // The list's filters, with the list's names and values: the same links as the list.
    for (query, filters) in [
        ("amountType=fixed", json!({ "amountType": "fixed" })),
        ("usage=single_use", json!({ "usage": "single_use" })),
        ("token=USDT", json!({ "token": "USDT" })),
        (
            "usage=reusable&amountType=customer_entered",
            json!({ "usage": "reusable", "amountType": "customer_entered" }),
        ),
    ] {
        let rows = sync_rows(&app, &m.sk_test, &body("payment_links", json!({ "filters": filters }))).await;
        let listed = app.get(&m.sk_test, &format!("/v1/payment-links?{query}")).await.ok(200)["items"].clone();
        let mut ids: Vec<&str> = listed.as_array().unwrap().iter().map(|l| l["id"].as_str().unwrap()).collect();
        ids.reverse();
        assert_eq!(rows[1..].iter().map(|r| r[0].as_str()).collect::<Vec<_>>(), ids, "{query}");
    }
    let refused = [
        (json!({ "usage": "twice" }), "filters.usage"),
        (json!({ "token": "DAI" }), "filters.token"),
        (json!({ "amountType": "free" }), "filters.amountType"),
        (json!({ "endpointId": "we_1" }), "filters.endpointId"),
    ];
    for (filters, field) in refused {
        let r = app.post(&m.sk_test, "/v1/exports/sync", body("payment_links", json!({ "filters": filters }))).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field));
    }

    let rx = crate::receiver::Receiver::start().await;
    app.post(&m.sk_test, "/v1/webhook-endpoints", json!({ "url": rx.url("/hook") })).await.ok(201);
    let sent = app.post(&m.sk_test, "/v1/webhooks/test", json!({ "type": "invoice.paid" })).await.ok(202).clone();
    rx.wait_for(1, Duration::from_secs(10)).await;
    let delivery = &sent["deliveries"][0];
    let delivered = {
        let mut found = None;
        for _ in 0..100 {
            let d = app.get(&m.sk_test, &format!("/v1/webhook-deliveries/{}", delivery["id"].as_str().unwrap())).await;
            let d = d.ok(200).clone();
            if d["status"] == "delivered" {
                found = Some(d);
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        found.expect("the delivery succeeded")
    };
    let rows = sync_rows(&app, &m.sk_test, &body("webhook_deliveries", json!({}))).await;
    let col = |name: &str| rows[0].iter().position(|h| h == name).unwrap_or_else(|| panic!("no column {name}"));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1][col("id")], delivered["id"].as_str().unwrap());
    assert_eq!(rows[1][col("event_type")], "invoice.paid");
    assert_eq!((rows[1][col("status")].as_str(), rows[1][col("test")].as_str()), ("delivered", "true"));
    assert_eq!(rows[1][col("attempt_count")], "1");
    // The deliveries list's filters.
    let endpoint = delivered["endpointId"].as_str().unwrap();
    for (filters, n) in [
        (json!({ "endpointId": endpoint, "status": "delivered", "eventType": "invoice.paid" }), 2),
        (json!({ "status": "failed" }), 1),
        (json!({ "eventType": "invoice.issued" }), 1),
        (json!({ "endpointId": "we_00000000000000000000" }), 1),
    ] {
        let rows = sync_rows(&app, &m.sk_test, &body("webhook_deliveries", json!({ "filters": filters }))).await;
        assert_eq!(rows.len(), n, "{filters}");
    }
    for (filters, field) in [
        (json!({ "status": "paid" }), "filters.status"),
        (json!({ "eventType": "invoice.eaten" }), "filters.eventType"),
        (json!({ "endpointId": "plink_1" }), "filters.endpointId"),
        (json!({ "usage": "reusable" }), "filters.usage"),
    ] {
        let r =
            app.post(&m.sk_test, "/v1/exports/sync", body("webhook_deliveries", json!({ "filters": filters }))).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field));
    }
    // A queued export keeps its filters.
    let filters = json!({ "endpointId": endpoint, "status": "delivered", "eventType": "invoice.paid" });
    let asked = body("webhook_deliveries", json!({ "filters": filters }));
    let export = app.post(&m.sk_test, "/v1/exports", asked).await.ok(202).clone();
    assert_eq!(export["filters"]["endpointId"], filters["endpointId"]);
    assert_eq!(
        (export["filters"]["status"].as_str(), export["filters"]["eventType"].as_str()),
        (Some("delivered"), Some("invoice.paid"))
    );
    let read = app.get(&m.sk_test, &format!("/v1/exports/{}", export["id"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(read["filters"], export["filters"]);
    // Another merchant's links and deliveries never show.
    let other = app.merchant("Other");
    assert_eq!(sync_rows(&app, &other.sk_test, &body("payment_links", json!({}))).await.len(), 1);
    assert_eq!(sync_rows(&app, &other.sk_test, &body("webhook_deliveries", json!({}))).await.len(), 1);
}
