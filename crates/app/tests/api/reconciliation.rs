//! `GET /v1/reconciliation` against the real binary: a period's figures equal what the API's
//! own records say, discrepancies listed, the range rule, scoping by merchant and mode.

use serde_json::{Value, json};

use crate::support::{Merchant, TestApp};

/// A decimal string as micro-units (the test's own exact arithmetic).
fn micros(text: &str) -> i128 {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let frac = format!("{frac:0<6}");
    whole.parse::<i128>().unwrap() * 1_000_000 + frac[..6].parse::<i128>().unwrap()
}

fn decimal(units: i128) -> String {
    format!("{}.{:06}", units / 1_000_000, units % 1_000_000)
}

async fn pay(app: &TestApp, m: &Merchant, cs: &str, body: Value) -> Value {
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), body).await.ok(201).clone()
}

#[tokio::test]
async fn a_periods_figures_equal_the_records_and_list_what_does_not_add_up() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Books");
    let other = app.merchant("Other");
    let checkout = |amount: &str| json!({ "amount": amount });
    // Paid exactly, overpaid, partly paid, unpaid, and an itemized invoice due soon.
    let exact = app.post(&m.sk_test, "/v1/checkout-sessions", checkout("10")).await.ok(201).clone();
    pay(&app, &m, exact["id"].as_str().unwrap(), json!({})).await;
    let over = app.post(&m.sk_test, "/v1/checkout-sessions", checkout("4")).await.ok(201).clone();
    pay(&app, &m, over["id"].as_str().unwrap(), json!({ "amount": "4.75" })).await;
    let part = app.post(&m.sk_test, "/v1/checkout-sessions", checkout("8")).await.ok(201).clone();
    let partial = pay(&app, &m, part["id"].as_str().unwrap(), json!({ "amount": "3.000001" })).await;
    app.post(&m.sk_test, "/v1/checkout-sessions", checkout("2.5")).await.ok(201);
    let due = (chrono::Utc::now() + chrono::Duration::days(2)).to_rfc3339();
    let itemized = json!({ "lines": [{ "description": "Work", "quantity": "2", "unitAmount": "7.5" }], "dueAt": due, "issue": true });
    app.post(&m.sk_test, "/v1/invoices", itemized).await.ok(201);
    // A refund reference on the exact payment.
    let exact_inv =
        app.get(&m.sk_test, &format!("/v1/invoices/{}", exact["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    let refund = json!({ "paymentId": exact_inv["payments"][0]["id"], "amount": "1.25", "reason": "damaged",
        "externalTransactionHash": format!("0x{}", "ab".repeat(32)), "chainId": 137,
        "tokenContract": "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359" });
    app.post(&m.sk_test, &format!("/v1/invoices/{}/refund-references", exact_inv["id"].as_str().unwrap()), refund)
        .await
        .ok(201);
    // Another merchant's books never mix in.
    let theirs = app.post(&other.sk_test, "/v1/checkout-sessions", checkout("99")).await.ok(201).clone();
    pay(&app, &other, theirs["id"].as_str().unwrap(), json!({})).await;

    let now = chrono::Utc::now();
    let (from, to) = ((now - chrono::Duration::hours(1)).to_rfc3339(), (now + chrono::Duration::days(3)).to_rfc3339());
    let path = format!("/v1/reconciliation?from={}&to={}", urlencode(&from), urlencode(&to));
    let r = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!((r["object"].as_str(), r["mode"].as_str()), (Some("reconciliation"), Some("test")));
    let tokens = r["tokens"].as_array().unwrap();
    assert_eq!(tokens.iter().map(|t| t["token"].as_str().unwrap()).collect::<Vec<_>>(), ["USDC", "USDT"]);
    assert_eq!(tokens[1]["invoicesIssued"], 0);
    assert_eq!(tokens[1]["collected"], "0.000000");
    let usdc = &tokens[0];

    // What the API's own records say.
    let invoices = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"].as_array().unwrap().clone();
    let issued: Vec<&Value> = invoices.iter().filter(|i| i["issuedAt"].is_string()).collect();
    let sum = |values: Vec<i128>| decimal(values.into_iter().sum());
    assert_eq!(usdc["invoicesIssued"].as_u64().unwrap(), u64::try_from(issued.len()).unwrap());
    assert_eq!(usdc["invoicedTotal"], sum(issued.iter().map(|i| micros(i["total"].as_str().unwrap())).collect()));
    let payments: Vec<Value> = invoices.iter().flat_map(|i| i["payments"].as_array().unwrap().clone()).collect();
    let credited: Vec<&Value> = payments
        .iter()
        .filter(|p| ["confirmed", "underpaid", "overpaid"].contains(&p["status"].as_str().unwrap()))
        .collect();
    assert_eq!(usdc["paymentsCredited"].as_u64().unwrap(), u64::try_from(credited.len()).unwrap());
    assert_eq!(
        usdc["collected"],
        sum(credited.iter().map(|p| micros(p["customerAmountCredited"].as_str().unwrap())).collect())
    );
    assert_eq!(usdc["overpaidExcess"], "0.750000");
    assert_eq!((usdc["refundsCount"].as_u64(), usdc["refundsReferenced"].as_str()), (Some(1), Some("1.250000")));
    let collectible = ["open", "past_due", "partially_paid"];
    let open: Vec<&Value> =
        issued.iter().copied().filter(|i| collectible.contains(&i["collectionState"].as_str().unwrap())).collect();
    assert_eq!(
        usdc["outstanding"],
        sum(open.iter().map(|i| micros(i["customerAmountRemaining"].as_str().unwrap())).collect())
    );
    // At `to` (in three days) the itemized invoice is past its due date.
    assert_eq!((usdc["overdue"].as_str(), usdc["overdueCount"].as_u64()), (Some("15.000000"), Some(1)));

    // The discrepancies: the overpaid and the underpaid payment.
    let kinds: Vec<(&str, &str)> = r["discrepancies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["kind"].as_str().unwrap(), d["amount"].as_str().unwrap()))
        .collect();
    assert!(kinds.contains(&("overpaid_payment", "0.750000")), "{kinds:?}");
    assert!(kinds.contains(&("underpaid_payment", "4.999999")), "{kinds:?}");
    assert_eq!(partial["status"], "underpaid");
    assert_eq!(r["hasMoreDiscrepancies"], false);

    // A period before anything happened is all zeros; the other mode has nothing.
    let before = format!(
        "/v1/reconciliation?from={}&to={}",
        urlencode(&(now - chrono::Duration::days(10)).to_rfc3339()),
        urlencode(&(now - chrono::Duration::days(9)).to_rfc3339())
    );
    let empty = app.get(&m.sk_test, &before).await.ok(200).clone();
    assert_eq!(empty["tokens"][0]["collected"], "0.000000");
    assert_eq!(empty["discrepancies"].as_array().unwrap().len(), 0);
    let live = app.get(&m.sk_live, &path).await.ok(200).clone();
    assert_eq!(live["tokens"][0]["invoicesIssued"], 0);
    // The other merchant sees its own 99.
    let theirs = app.get(&other.sk_test, &path).await.ok(200).clone();
    assert_eq!(theirs["tokens"][0]["collected"], "99.000000");
}

fn urlencode(text: &str) -> String {
    text.replace('+', "%2B").replace(':', "%3A")
}

#[tokio::test]
async fn a_period_is_checked_like_an_exports() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let now = chrono::Utc::now();
    let at = |days: i64| urlencode(&(now + chrono::Duration::days(days)).to_rfc3339());
    app.get(&m.sk_test, &format!("/v1/reconciliation?to={}", at(0))).await.assert_error(400, "VALIDATION_ERROR");
    app.get(&m.sk_test, &format!("/v1/reconciliation?from={}", at(0))).await.assert_error(400, "VALIDATION_ERROR");
    let r = app.get(&m.sk_test, &format!("/v1/reconciliation?from={}&to={}", at(0), at(-1))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("to"));
    let r = app.get(&m.sk_test, &format!("/v1/reconciliation?from={}&to={}", at(-400), at(0))).await;
    assert_eq!(r.assert_error(400, "EXPORT_RANGE_TOO_LARGE").as_deref(), Some("to"));
    app.get(&m.sk_test, &format!("/v1/reconciliation?from={}&to={}&x=1", at(-1), at(0)))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.get(&m.pk_test, &format!("/v1/reconciliation?from={}&to={}", at(-1), at(0)))
        .await
        .assert_error(403, "API_KEY_FORBIDDEN");
}
