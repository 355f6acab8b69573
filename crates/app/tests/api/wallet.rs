//! The hosted checkout's wallet orchestration and telemetry routes: the transfer a connected
//! wallet must sign (and every refusal: a test checkout, another chain, a malformed attempt),
//! and the steps the page reports, kept per checkout and limited per client.

use serde_json::{Value, json};

use crate::support::{Merchant, TestApp, client_from};

const WALLET: &str = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
const PAYER: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

async fn live_checkout(app: &TestApp, m: &Merchant, amount: &str) -> Value {
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", WALLET, "--token", "USDC", "--json"]);
    // The amounts asked are the amounts given (unique amounts, on since the activation, off).
    app.cli_ok(&["merchant", "unique-amounts", &m.id, "off", "--json"]);
    app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": amount })).await.ok(201).clone()
}

fn attempt_path(cs: &str) -> String {
    format!("/v1/public/checkout-sessions/{cs}/wallet-payment-attempts")
}

async fn attempt(app: &TestApp, cs: &str, body: Value) -> crate::support::Response {
    app.send(app.http.post(app.url(&attempt_path(cs))).json(&body)).await
}

#[tokio::test]
async fn a_connected_wallet_gets_the_exact_transfer_to_sign() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = live_checkout(&app, &m, "12.50").await;
    let id = cs["id"].as_str().unwrap();
    let out = attempt(&app, id, json!({ "walletAddress": PAYER, "chainId": 137 })).await.ok(200).clone();
    assert_eq!(out["object"], "wallet_payment_attempt");
    assert_eq!((out["chainId"].as_u64(), out["token"].as_str()), (Some(137), Some("USDC")));
    assert_eq!(out["recipient"], WALLET);
    assert_eq!(out["tokenContract"], "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359");
    assert_eq!((out["amount"].as_str(), out["amountBaseUnits"].as_str()), (Some("12.500000"), Some("12500000")));
    let tx = &out["transaction"];
    assert_eq!((tx["from"].as_str(), tx["to"].as_str()), (Some(PAYER), out["tokenContract"].as_str()));
    assert_eq!((tx["value"].as_str(), tx["chainId"].as_str()), (Some("0x0"), Some("0x89")));
    let want = format!("0xa9059cbb{:0>64}{:064x}", WALLET[2..].to_lowercase(), 12_500_000u64);
    assert_eq!(tx["data"], want.as_str());
    assert_eq!(out["submitUrl"], format!("/v1/public/checkout-sessions/{id}/payments").as_str());
    // The attempt is in the checkout's telemetry, with the payer's wallet.
    let rows = app
        .db
        .query(&format!("SELECT step, wallet_address, mode FROM checkout_telemetry WHERE checkout_session_id = '{id}'"))
        .await;
    assert_eq!(rows.len(), 1);
    let (step, wallet, mode): (String, Option<String>, String) = (rows[0].get(0), rows[0].get(1), rows[0].get(2));
    assert_eq!((step.as_str(), wallet.as_deref(), mode.as_str()), ("wallet_connected", Some(PAYER), "live"));
}

#[tokio::test]
async fn every_refusal_of_a_wallet_attempt_names_its_field() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = live_checkout(&app, &m, "5").await;
    let id = cs["id"].as_str().unwrap();
    for (body, code, field) in [
        (json!({ "walletAddress": PAYER, "chainId": 1 }), "INVALID_DEPOSIT_NETWORK", "chainId"),
        (json!({ "walletAddress": PAYER, "chainId": 80002 }), "INVALID_DEPOSIT_NETWORK", "chainId"),
        (json!({ "walletAddress": "0x1234", "chainId": 137 }), "INVALID_WALLET_PAYMENT_ATTEMPT", "walletAddress"),
        (
            json!({ "walletAddress": "0x52908400098527886E0F7030069857D2E4169Ee7", "chainId": 137 }),
            "INVALID_WALLET_PAYMENT_ATTEMPT",
            "walletAddress",
        ),
        (json!({ "chainId": 137 }), "INVALID_WALLET_PAYMENT_ATTEMPT", "walletAddress"),
        (json!({ "walletAddress": PAYER }), "INVALID_WALLET_PAYMENT_ATTEMPT", "chainId"),
        (json!({ "walletAddress": PAYER, "chainId": "0x89" }), "INVALID_WALLET_PAYMENT_ATTEMPT", "chainId"),
        (json!({ "walletAddress": PAYER, "chainId": -137 }), "INVALID_WALLET_PAYMENT_ATTEMPT", "chainId"),
        (json!({ "walletAddress": PAYER, "chainId": 137, "amount": "1" }), "INVALID_WALLET_PAYMENT_ATTEMPT", "amount"),
    ] {
        let r = attempt(&app, id, body.clone()).await;
        assert_eq!(r.assert_error(400, code).as_deref(), Some(field), "{body}");
    }
    // Nothing was recorded by a refused attempt.
    let rows = app.db.query("SELECT count(*) FROM checkout_telemetry").await;
    assert_eq!(rows[0].get::<_, i64>(0), 0);
    // A test checkout is simulated: no wallet payment.
    let test = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let r = attempt(&app, test["id"].as_str().unwrap(), json!({ "walletAddress": PAYER, "chainId": 137 })).await;
    r.assert_error(422, "WALLET_PAYMENTS_UNAVAILABLE");
    // An unknown checkout.
    let r = attempt(&app, "cs_0000000000000000000000", json!({ "walletAddress": PAYER, "chainId": 137 })).await;
    assert_eq!(r.status.as_u16(), 404);
}

#[tokio::test]
async fn the_page_reports_its_steps_per_checkout_within_a_limit() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let id = cs["id"].as_str().unwrap();
    let path = format!("/v1/public/checkout-sessions/{id}/telemetry");
    let client = client_from("127.0.5.1");
    let report = |body: Value| client.post(app.url(&path)).json(&body);
    let ok = app.send(report(json!({ "step": "viewed" }))).await;
    assert_eq!(ok.ok(202)["step"], "viewed");
    assert!(ok.header("ratelimit").is_some_and(|h| h.starts_with("\"checkout-telemetry\";")));
    let shown = json!({ "step": "error_shown", "detail": "Not sent: user rejected the request\u{7}" });
    app.send(report(shown)).await.ok(202);
    let r = app.send(report(json!({ "step": "paid" }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("step"));
    let r = app.send(report(json!({ "step": "viewed", "detail": "x".repeat(201) }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("detail"));
    let unknown = client.post(app.url("/v1/public/checkout-sessions/cs_0000000000000000000000/telemetry"));
    assert_eq!(app.send(unknown.json(&json!({ "step": "viewed" }))).await.status.as_u16(), 404);
    let rows = app
        .db
        .query(&format!("SELECT step, detail FROM checkout_telemetry WHERE checkout_session_id = '{id}' ORDER BY seq"))
        .await;
    let kept: Vec<(String, Option<String>)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        kept,
        [("viewed".into(), None), ("error_shown".into(), Some("Not sent: user rejected the request".into()))]
    );
    // 60 a minute per client address and checkout.
    let mut accepted = 4;
    let refusal = loop {
        let r = app.send(report(json!({ "step": "viewed" }))).await;
        if r.status.as_u16() == 429 {
            break r;
        }
        assert_eq!(r.status.as_u16(), 202);
        accepted += 1;
        assert!(accepted <= 62, "never refused");
    };
    assert!(accepted >= 60, "{accepted}");
    refusal.assert_error(429, "RATE_LIMITED");
    assert_eq!(refusal.header("ratelimit-policy"), Some("\"checkout-telemetry\";q=60;w=60"));
    assert!(refusal.header("retry-after").is_some());
}
