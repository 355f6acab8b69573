//! Diagnostics over HTTP: why a checkout is or is not paid, transfer by transfer and check by
//! check, with the next step in words; scoped like every read.

use serde_json::{Value, json};

use crate::live::{ONE, World, eventually};
use crate::support::TestApp;

fn checks(transfer: &Value) -> Vec<(String, String)> {
    transfer["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap().to_owned(), c["outcome"].as_str().unwrap().to_owned()))
        .collect()
}

fn outcome<'a>(transfer: &'a Value, name: &str) -> &'a Value {
    transfer["checks"].as_array().unwrap().iter().find(|c| c["name"] == name).unwrap()
}

#[tokio::test]
async fn a_checkout_is_explained_transfer_by_transfer() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let other = app.merchant("Other");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10" })).await.ok(201).clone();
    let id = cs["id"].as_str().unwrap();
    let path = format!("/v1/checkout-sessions/{id}/diagnostics");

    // Nothing yet.
    let d = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!((d["object"].as_str(), d["phase"].as_str()), (Some("checkout_diagnosis"), Some("pay")));
    assert_eq!(d["transfers"].as_array().unwrap().len(), 0);
    assert_eq!((d["chain"]["simulated"].as_bool(), d["chain"]["state"].as_str()), (Some(true), Some("ok")));
    assert!(
        d["nextStep"].as_str().unwrap().starts_with("Nothing received yet. The customer can send 10.00 USDC"),
        "{d}"
    );

    // A failed transfer: the hash check failed, the later ones were not looked at.
    let pay_path = format!("/v1/test-helpers/checkout-sessions/{id}/payments");
    let pay = |body: Value| app.post(&m.sk_test, &pay_path, body);
    let failed = pay(json!({ "outcome": "failed" })).await.ok(201).clone();
    let d = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!(d["phase"], "failed");
    let t = &d["transfers"][0];
    assert_eq!(t["failureReason"], "transaction_reverted");
    let c = checks(t);
    assert_eq!(c[0], ("hash".to_owned(), "failed".to_owned()));
    assert!(c[1..].iter().all(|(_, o)| o == "skipped"), "{c:?}");
    assert!(d["nextStep"].as_str().unwrap().contains("could not be accepted (transaction_reverted)"), "{d}");

    // A short transfer: credited, the amount check says by how much, the rest is due.
    let short = pay(json!({ "amount": "6.5" })).await.ok(201).clone();
    let d = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!(d["phase"], "underpaid");
    assert_eq!(d["transfers"].as_array().unwrap().len(), 2);
    let t = &d["transfers"][1];
    let amount = outcome(t, "amount");
    assert_eq!((amount["expected"].as_str(), amount["found"].as_str()), (Some("10.000000"), Some("6.500000")));
    assert_eq!(
        (amount["outcome"].as_str(), amount["note"].as_str()),
        (Some("failed"), Some("credited, 3.50 short of what was due"))
    );
    for name in ["hash", "chain", "token", "recipient", "expiry", "duplicate"] {
        assert_eq!(outcome(t, name)["outcome"], "passed", "{name}");
    }
    assert_eq!(outcome(t, "payer")["outcome"], "skipped");
    assert_eq!(outcome(t, "recipient")["expected"], cs["settlementWalletAddress"]);
    assert_eq!(t["finality"]["state"], "final");
    assert_eq!(d["invoiceRemaining"], "3.500000");
    assert!(d["nextStep"].as_str().unwrap().contains("the remaining 3.50 USDC can be paid on a new checkout"), "{d}");

    // A payment's diagnosis is its checkout's, with that transfer alone.
    let p = app
        .get(&m.sk_test, &format!("/v1/payments/{}/diagnostics", failed["id"].as_str().unwrap()))
        .await
        .ok(200)
        .clone();
    assert_eq!(p["checkoutSessionId"], id);
    assert_eq!(p["transfers"].as_array().unwrap().len(), 1);
    assert_eq!(p["transfers"][0]["paymentId"], failed["id"]);

    // Paid in full.
    pay(json!({ "amount": "3.5" })).await.ok(201);
    let d = app.get(&m.sk_test, &path).await.ok(200).clone();
    assert_eq!((d["phase"].as_str(), d["nextStep"].as_str()), (Some("paid"), Some("Paid in full: nothing to do.")));
    assert!(checks(&d["transfers"][2]).iter().all(|(n, o)| o == "passed" || n == "payer"));

    // Scoped like every read.
    app.get(&other.sk_test, &path).await.assert_error(404, "NOT_FOUND");
    app.get(&other.sk_test, &format!("/v1/payments/{}/diagnostics", short["id"].as_str().unwrap()))
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&m.sk_live, &path).await.assert_error(409, "MODE_MISMATCH");
    app.get(&m.pk_test, &path).await.assert_error(403, "API_KEY_FORBIDDEN");
    app.get(&m.sk_test, "/v1/checkout-sessions/cs_nope/diagnostics").await.assert_error(404, "NOT_FOUND");
    app.get(&m.sk_test, "/v1/payments/inv_1/diagnostics").await.assert_error(404, "NOT_FOUND");
}

/// The merchant's readiness: every entry with its stable code and status, the worst as the
/// whole's, and each entry moving with what it watches.
#[tokio::test]
async fn the_merchants_readiness_lists_every_entry_with_its_status() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let d = app.get(&m.sk_test, "/v1/diagnostics").await.ok(200).clone();
    assert_eq!((d["object"].as_str(), d["mode"].as_str()), (Some("diagnostics"), Some("test")));
    let entry = |d: &Value, code: &str| -> Value {
        d["entries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["code"] == code)
            .unwrap_or_else(|| panic!("no {code}: {d}"))
            .clone()
    };
    let codes: Vec<&str> = d["entries"].as_array().unwrap().iter().map(|e| e["code"].as_str().unwrap()).collect();
    assert_eq!(
        codes,
        ["live_activation", "chain", "webhook_endpoints", "webhook_incidents", "emails", "api_keys", "worker"]
    );
    assert_eq!(entry(&d, "live_activation")["status"], "warning");
    assert_eq!(entry(&d, "chain")["status"], "ok");
    assert_eq!(entry(&d, "webhook_endpoints")["status"], "warning");
    assert_eq!(entry(&d, "webhook_incidents")["status"], "ok");
    assert_eq!(entry(&d, "emails")["status"], "ok");
    assert_eq!(entry(&d, "api_keys")["status"], "ok");
    assert_eq!(entry(&d, "worker")["status"], "ok");
    assert_eq!(d["status"], "warning");

    // An endpoint: the endpoints entry is ok.
    let endpoint = json!({ "url": "https://hooks.example.com/in" });
    app.post(&m.sk_test, "/v1/webhook-endpoints", endpoint).await.ok(201);
    // A key made two days ago and never used since.
    app.db
        .query(&format!(
            "UPDATE api_keys SET created_at = now() - interval '2 days' WHERE merchant_id = '{}' AND mode = 'test' AND key_type = 'publishable'",
            m.id
        ))
        .await;
    let d = app.get(&m.sk_test, "/v1/diagnostics").await.ok(200).clone();
    let hooks = entry(&d, "webhook_endpoints");
    assert_eq!((hooks["status"].as_str(), hooks["count"].as_u64()), (Some("ok"), Some(1)));
    let keys = entry(&d, "api_keys");
    assert_eq!((keys["status"].as_str(), keys["count"].as_u64()), (Some("warning"), Some(1)), "{keys}");
    assert!(keys["message"].as_str().unwrap().contains("1 keys never used"), "{keys}");

    // Live mode of a merchant not activated: errors, and the chain has no endpoint here.
    let live = app.get(&m.sk_live, "/v1/diagnostics").await.ok(200).clone();
    assert_eq!(live["mode"], "live");
    assert_eq!(entry(&live, "live_activation")["status"], "error");
    assert_eq!(entry(&live, "chain")["status"], "error");
    assert_eq!(live["status"], "error");
    app.get(&m.pk_test, "/v1/diagnostics").await.assert_error(403, "API_KEY_FORBIDDEN");
}

/// Live mode on a real chain: a reported transfer in a block not final yet is explained with how
/// many blocks it waits, the chain's final block and the checks so far; once final, the checks
/// pass with the values compared; a transfer to the wrong wallet fails the recipient check with
/// both addresses; and with the node unreachable, the chain's state says so.
#[tokio::test]
async fn a_live_checkout_is_explained_with_the_chains_state() {
    let mut w = World::new().await;
    let cs = w.checkout("10.00").await;
    let id = cs["id"].as_str().unwrap();
    let path = format!("/v1/checkout-sessions/{id}/diagnostics");
    let d = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
    assert_eq!((d["mode"].as_str(), d["chain"]["simulated"].as_bool()), (Some("live"), Some(false)));
    assert_eq!(d["chain"]["state"], "ok", "{d}");
    assert!(d["chain"]["finalBlock"].is_u64(), "{d}");

    // Sent to a stranger's wallet: not the merchant's.
    let wrong = w.anvil.transfer(&w.token, &w.customer, &w.stranger, 10 * ONE).await;
    let wrong_id = w.submitted(&cs, &wrong).await;
    // The exact amount to the merchant.
    let tx = w.pay(10 * ONE).await;
    let paid_id = w.submitted(&cs, &tx).await;
    let waiting = eventually("the transfer waiting for finality", || async {
        let d = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
        let t = d["transfers"].as_array().unwrap().iter().find(|t| t["paymentId"] == paid_id.as_str()).cloned()?;
        (t["finality"]["state"] == "waiting").then_some((d, t))
    })
    .await;
    let (d, t) = waiting;
    let blocks = t["finality"]["blocksToFinal"].as_u64().unwrap();
    assert!((1..=crate::anvil::FINALITY_DEPTH).contains(&blocks), "{t}");
    assert_eq!(t["status"], "validating");
    assert_eq!(outcome(&t, "amount")["found"], "10.000000");
    assert_eq!(d["phase"], "validating", "{d}");

    w.anvil.finalize().await;
    w.payment_reaches(&paid_id, "confirmed").await;
    let failed = w.payment_reaches(&wrong_id, "failed").await;
    assert_eq!(failed["failureReason"], "wrong_recipient");
    let d = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
    assert_eq!(d["phase"], "paid", "{d}");
    let t = d["transfers"].as_array().unwrap().iter().find(|t| t["paymentId"] == paid_id.as_str()).unwrap().clone();
    assert_eq!(t["finality"]["state"], "final");
    for name in ["hash", "chain", "token", "recipient", "amount", "expiry", "duplicate"] {
        assert_eq!(outcome(&t, name)["outcome"], "passed", "{name}: {t}");
    }
    assert_eq!(outcome(&t, "chain")["found"], "137");
    let r = outcome(&t, "recipient");
    assert_eq!(r["expected"].as_str().unwrap().to_ascii_lowercase(), w.wallet.to_ascii_lowercase());
    let bad = d["transfers"].as_array().unwrap().iter().find(|t| t["paymentId"] == wrong_id.as_str()).unwrap().clone();
    let r = outcome(&bad, "recipient");
    assert_eq!(r["outcome"], "failed", "{bad}");
    assert_eq!(r["expected"].as_str().unwrap().to_ascii_lowercase(), w.wallet.to_ascii_lowercase());
    assert!(r["found"].as_str().unwrap().to_ascii_lowercase().contains(&w.stranger.to_ascii_lowercase()[2..]), "{bad}");

    // The payment's own diagnosis, and the chain's state when the node does not answer.
    let p = w.app.get(&w.m.sk_live, &format!("/v1/payments/{paid_id}/diagnostics")).await.ok(200).clone();
    assert_eq!(p["transfers"].as_array().unwrap().len(), 1);
    w.proxy.cut();
    let down = eventually("the chain unreachable", || async {
        let d = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
        (d["chain"]["state"] == "unreachable").then_some(d)
    })
    .await;
    assert!(down["chain"]["detail"].is_string(), "{down}");
    w.proxy.restore().await;
}
