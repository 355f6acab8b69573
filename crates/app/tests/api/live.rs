//! Live mode end to end: the real binary verifies real ERC-20 transfers on a real local chain
//! (anvil, chain id 137), through the HTTP API. Each test has its own chain, database and
//! service; the service reaches the chain through a proxy the test can cut.

use std::future::Future;
use std::time::Duration;

use serde_json::{Value, json};

use crate::anvil::Anvil;
use crate::support::{Merchant, Proxy, Response, TestApp, fresh_db};

/// A chain with two tokens (the service's USDC and another), a customer holding both, a
/// merchant activated for live mode with its own wallet, and the service.
pub(crate) struct World {
    pub anvil: Anvil,
    pub proxy: Proxy,
    pub app: TestApp,
    pub m: Merchant,
    pub token: String,
    pub other_token: String,
    pub wallet: String,
    pub customer: String,
    pub stranger: String,
}

pub(crate) const ONE: u128 = 1_000_000;

impl World {
    pub(crate) async fn new() -> Self {
        Self::with(&[]).await
    }

    pub(crate) async fn with(extra: &[(&str, String)]) -> Self {
        Self::build(extra, false, |_, _| Vec::new()).await
    }

    /// A world whose service's USDC implements EIP-3009 and EIP-5267 (as native USDC does).
    pub(crate) async fn with_eip3009() -> Self {
        Self::build(&[("EIP3009", String::new())], false, |_, _| Vec::new()).await
    }

    /// A world whose service starts while its chain node cannot be reached (the proxy is cut
    /// until the test restores it).
    pub(crate) async fn with_chain_down(extra: &[(&str, String)]) -> Self {
        Self::build(extra, true, |_, _| Vec::new()).await
    }

    /// A world whose service's settings also take what `more` makes of the chain (anvil's
    /// address, and the proxy's port in front of it): other endpoints, for example.
    pub(crate) async fn with_chain<F>(extra: &[(&str, String)], more: F) -> Self
    where
        F: FnOnce(&Anvil, u16) -> Vec<(&'static str, String)>,
    {
        Self::build(extra, false, more).await
    }

    async fn build<F>(extra: &[(&str, String)], chain_down: bool, more: F) -> Self
    where
        F: FnOnce(&Anvil, u16) -> Vec<(&'static str, String)>,
    {
        let anvil = Anvil::start(137).await;
        let accounts = anvil.accounts().await;
        let (deployer, wallet, customer, stranger) =
            (accounts[0].clone(), accounts[1].clone(), accounts[2].clone(), accounts[3].clone());
        let eip3009 = extra.iter().any(|(k, _)| *k == "EIP3009");
        let extra: Vec<(&str, String)> = extra.iter().filter(|(k, _)| *k != "EIP3009").cloned().collect();
        let token = if eip3009 { anvil.deploy_usdc(&deployer).await } else { anvil.deploy_token(&deployer).await };
        let other_token = anvil.deploy_token(&deployer).await;
        anvil.mint(&token, &deployer, &customer, 1_000_000 * ONE).await;
        anvil.mint(&other_token, &deployer, &customer, 1_000_000 * ONE).await;
        let mut proxy = Proxy::start(&format!("127.0.0.1:{}", anvil.port)).await;
        if chain_down {
            proxy.cut();
        }
        let mut env = vec![
            ("STABLEPAY_CHAIN_RPC_URLS", format!("http://127.0.0.1:{}", proxy.port)),
            ("STABLEPAY_USDC_CONTRACT", token.clone()),
            ("STABLEPAY_CHAIN_POLL_MS", "100".to_owned()),
            ("STABLEPAY_CHAIN_NOT_FOUND_SECONDS", "3".to_owned()),
            ("STABLEPAY_CHAIN_TIMEOUT_MS", "1000".to_owned()),
        ];
        env.extend(extra.iter().map(|(k, v)| (*k, v.clone())));
        env.extend(more(&anvil, proxy.port));
        let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
        let m = app.merchant("Shop");
        let activated =
            app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &wallet, "--token", "USDC", "--json"]);
        assert_eq!(activated["uniqueAmounts"], true, "a first activation turns unique amounts on: {activated}");
        // These tests pay the amounts they ask for: unique amounts off, as a merchant may set.
        // `unique_amounts()` turns them back on.
        app.cli_ok(&["merchant", "unique-amounts", &m.id, "off", "--json"]);
        Self { anvil, proxy, app, m, token, other_token, wallet, customer, stranger }
    }

    /// Turns unique amounts on again (a merchant's default since its first activation).
    pub(crate) fn unique_amounts(&self) {
        self.app.cli_ok(&["merchant", "unique-amounts", &self.m.id, "on", "--json"]);
    }

    /// Waits until the service's new checkouts ask a unique amount (`unique`) or their plain one
    /// (probing with checkouts of 1.00): the operator's command runs in a process of its own and
    /// the service learns of the change from the database's notification, moments later (its key
    /// cache carries the settlement). Needed once the merchant's key has been used.
    pub(crate) async fn settled_on(&self, unique: bool) {
        eventually("the unique-amount setting to reach the service", || async {
            let asked = self.checkout("1.00").await["amountDue"].as_str().map(str::to_owned);
            (asked.as_deref().map(|a| a != "1.000000") == Some(unique)).then_some(())
        })
        .await;
    }

    pub(crate) async fn checkout(&self, amount: &str) -> Value {
        let r = self.app.post(&self.m.sk_live, "/v1/checkout-sessions", json!({ "amount": amount })).await;
        r.ok(201).clone()
    }

    /// The customer pays `units` of the service's token to the merchant's wallet.
    pub(crate) async fn pay(&self, units: u128) -> String {
        self.anvil.transfer(&self.token, &self.customer, &self.wallet, units).await
    }

    pub(crate) async fn submit(&self, cs: &Value, tx: &str) -> Response {
        let path = format!("/v1/public/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
        self.app.send(self.app.http.post(self.app.url(&path)).json(&json!({ "transactionHash": tx }))).await
    }

    pub(crate) async fn submitted(&self, cs: &Value, tx: &str) -> String {
        let r = self.submit(cs, tx).await;
        let data = r.ok(202);
        assert!(["detected", "validating"].contains(&data["status"].as_str().unwrap()), "{data}");
        data["id"].as_str().unwrap().to_owned()
    }

    pub(crate) async fn payment(&self, id: &str) -> Value {
        self.app.get(&self.m.sk_live, &format!("/v1/payments/{id}")).await.ok(200).clone()
    }

    pub(crate) async fn invoice(&self, cs: &Value) -> Value {
        let id = cs["invoiceId"].as_str().unwrap();
        self.app.get(&self.m.sk_live, &format!("/v1/invoices/{id}")).await.ok(200).clone()
    }

    /// Waits for payment `id` to reach `status`; answers it.
    pub(crate) async fn payment_reaches(&self, id: &str, status: &str) -> Value {
        let last = std::sync::Mutex::new(Value::Null);
        let found = tokio::time::timeout(Duration::from_secs(60), async {
            loop {
                let p = self.payment(id).await;
                if p["status"] == status {
                    return p;
                }
                *last.lock().unwrap() = p;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
        .await;
        found.unwrap_or_else(|_| panic!("payment {id} never became {status}; last seen: {}", last.lock().unwrap()))
    }

    pub(crate) async fn event_types(&self) -> Vec<String> {
        let events = self.app.get(&self.m.sk_live, "/v1/events?limit=100").await.ok(200).clone();
        events["items"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect()
    }
}

/// Polls `check` until it answers something (at most 60 s: the whole suite runs at once on two
/// cores, each live test with its own chain and service, and a follower's pass may wait its
/// turn).
pub(crate) async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..600 {
        if let Some(found) = check().await {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn an_exact_payment_is_credited_once_its_block_is_final() {
    let w = World::new().await;
    let cs = w.checkout("10.00").await;
    assert_eq!(cs["tokenContract"].as_str().unwrap().to_ascii_lowercase(), w.token.to_ascii_lowercase());
    let tx = w.pay(10 * ONE).await;
    let id = w.submitted(&cs, &tx).await;

    // Seen in a block that is not final: validating, nothing credited.
    let p = w.payment_reaches(&id, "validating").await;
    assert_eq!(p["amountReceived"], "10.000000");
    assert_eq!(p["customerAmountCredited"], "0.000000");
    assert!(p["block"]["number"].as_u64().unwrap() > 0);
    let inv = w.invoice(&cs).await;
    assert_eq!((inv["collectionState"].as_str(), inv["customerAmountPaid"].as_str()), (Some("open"), Some("0.000000")));
    assert_eq!(inv["status"], "processing");

    // The same hash for the same checkout answers the same payment.
    assert_eq!(w.submit(&cs, &tx).await.ok(202)["id"].as_str(), Some(id.as_str()));

    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "confirmed").await;
    assert_eq!(p["customerAmountCredited"], "10.000000");
    assert_eq!(p["payer"]["address"].as_str().unwrap().to_ascii_lowercase(), w.customer.to_ascii_lowercase());
    assert!(p["confirmedAt"].is_string());
    let inv = w.invoice(&cs).await;
    assert_eq!((inv["collectionState"].as_str(), inv["status"].as_str()), (Some("paid"), Some("paid")));
    assert_eq!(inv["customerAmountPaid"], "10.000000");
    assert!(inv["invoiceNumber"].is_string());
    let session = w.app.get(&w.m.sk_live, &format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap())).await;
    assert_eq!(session.ok(200)["status"], "completed");
    assert!(w.event_types().await.contains(&"invoice.paid".to_owned()));
    // The worker follows the chain: its lag behind the final block is a metric, and it has
    // caught up with the block it just credited from.
    eventually("the chain lag metric at 0", || async {
        let text = reqwest::get(format!("{}/metrics", w.app.metrics)).await.unwrap().text().await.unwrap();
        text.lines().any(|l| l == "stablepay_chain_follow_lag_blocks 0").then_some(())
    })
    .await;
}

#[tokio::test]
async fn underpaid_then_the_remainder_and_overpaid() {
    let w = World::new().await;
    let cs = w.checkout("10.00").await;
    let first = w.submitted(&cs, &w.pay(4 * ONE).await).await;
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&first, "underpaid").await["customerAmountCredited"], "4.000000");
    let inv = w.invoice(&cs).await;
    assert_eq!(
        (inv["collectionState"].as_str(), inv["customerAmountRemaining"].as_str()),
        (Some("partially_paid"), Some("6.000000"))
    );

    let path = format!("/v1/invoices/{}/checkout-sessions", cs["invoiceId"].as_str().unwrap());
    let remainder = w.app.post(&w.m.sk_live, &path, json!({})).await.ok(201).clone();
    assert_eq!(remainder["amount"], "6.000000");
    let remainder_cs = json!({ "id": remainder["checkoutSessionId"], "invoiceId": cs["invoiceId"] });
    let second = w.submitted(&remainder_cs, &w.pay(6 * ONE).await).await;
    w.anvil.finalize().await;
    w.payment_reaches(&second, "confirmed").await;
    let inv = w.invoice(&cs).await;
    assert_eq!(
        (inv["collectionState"].as_str(), inv["customerAmountPaid"].as_str()),
        (Some("paid"), Some("10.000000"))
    );

    let over = w.checkout("10.00").await;
    let id = w.submitted(&over, &w.pay(12_500_000).await).await;
    w.anvil.finalize().await;
    w.payment_reaches(&id, "overpaid").await;
    let inv = w.invoice(&over).await;
    assert_eq!((inv["status"].as_str(), inv["overpaymentAmount"].as_str()), (Some("overpaid"), Some("2.500000")));
    let types = w.event_types().await;
    for t in ["payment.underpaid", "invoice.partially_paid", "invoice.paid", "payment.overpaid", "invoice.overpaid"] {
        assert!(types.contains(&t.to_owned()), "{t} missing from {types:?}");
    }
}

#[tokio::test]
async fn transfers_that_do_not_pay_the_checkout_fail_with_their_reason() {
    let w = World::new().await;
    let cases = [
        ("wrong_recipient", w.anvil.transfer(&w.token, &w.customer, &w.stranger, 10 * ONE).await),
        ("wrong_token_contract", w.anvil.transfer(&w.other_token, &w.customer, &w.wallet, 10 * ONE).await),
        // The stranger holds only the 10 tokens above: sending 1000 reverts (mined, status 0).
        (
            "transaction_reverted",
            w.anvil.transfer_with_gas(&w.token, &w.stranger, &w.wallet, 1000 * ONE, Some(200_000)).await,
        ),
    ];
    assert_eq!(w.anvil.receipt(&cases[2].1).await["status"], "0x0");
    // A verdict is acted on once its block is final (a reorganisation could change it).
    w.anvil.finalize().await;
    for (reason, tx) in cases {
        let cs = w.checkout("10.00").await;
        let id = w.submitted(&cs, &tx).await;
        let p = w.payment_reaches(&id, "failed").await;
        assert_eq!(p["failureReason"], reason);
        assert_eq!(p["customerAmountCredited"], "0.000000");
        assert_eq!(w.invoice(&cs).await["customerAmountPaid"], "0.000000");
    }
    // An unknown hash waits, then fails as not found.
    let cs = w.checkout("10.00").await;
    let id = w.submitted(&cs, &format!("0x{}", "ab".repeat(32))).await;
    assert_eq!(w.payment(&id).await["status"], "detected");
    assert_eq!(w.payment_reaches(&id, "failed").await["failureReason"], "transaction_not_found");
    assert_eq!(w.event_types().await.iter().filter(|t| *t == "payment.failed").count(), 4);
    // Malformed hashes and unknown checkouts.
    w.submit(&cs, "0x12").await.assert_error(400, "INVALID_TX_HASH");
    let r = w
        .app
        .send(
            w.app
                .http
                .post(w.app.url("/v1/public/checkout-sessions/cs_nothere/payments"))
                .json(&json!({ "transactionHash": format!("0x{}", "cd".repeat(32)) })),
        )
        .await;
    r.assert_error(404, "NOT_FOUND");
}

#[tokio::test]
async fn one_transfer_submitted_for_two_invoices_is_held_then_credited_once() {
    let w = World::new().await;
    let (a, b) = (w.checkout("10.00").await, w.checkout("10.00").await);
    let tx = w.pay(10 * ONE).await;
    let (ra, rb) = tokio::join!(w.submit(&a, &tx), w.submit(&b, &tx));
    let (ia, ib) = (ra.ok(202)["id"].as_str().unwrap().to_owned(), rb.ok(202)["id"].as_str().unwrap().to_owned());
    w.anvil.finalize().await;
    // Two reports of equal strength: neither is guessed.
    for id in [ia, ib] {
        let p = w.payment_reaches(&id, "failed").await;
        assert_eq!(p["failureReason"], "disputed", "{p}, checkouts created {} and {}", a["createdAt"], b["createdAt"]);
    }
    let record = eventually("the held transfer", || async {
        let list = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
        list["items"].as_array().unwrap().iter().find(|i| i["transactionHash"] == tx.as_str()).cloned()
    })
    .await;
    assert_eq!(record["reason"], "disputed");
    // The merchant decides, twice at once: credited once.
    let path = format!("/v1/unattributed-transfers/{}/attribute", record["id"].as_str().unwrap());
    let body = |cs: &Value| json!({ "checkoutSessionId": cs["id"], "reason": "support ticket" });
    let (x, y) = tokio::join!(w.app.post(&w.m.sk_live, &path, body(&a)), w.app.post(&w.m.sk_live, &path, body(&b)));
    let mut statuses = [x.status.as_u16(), y.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409]);
    let paid = [w.invoice(&a).await, w.invoice(&b).await].iter().filter(|i| i["collectionState"] == "paid").count();
    assert_eq!(paid, 1);
    assert!(!w.app.logs().contains("ERROR"), "{}", w.app.logs());
}

#[tokio::test]
async fn a_transfer_mined_after_the_checkout_expired_is_recorded_not_credited() {
    let w = World::new().await;
    let cs = w
        .app
        .post(&w.m.sk_live, "/v1/checkout-sessions", json!({ "amount": "10.00", "expiresInMinutes": 5 }))
        .await
        .ok(201)
        .clone();
    let expires = chrono::DateTime::parse_from_rfc3339(cs["expiresAt"].as_str().unwrap()).unwrap();
    w.anvil.set_next_block_time(expires.timestamp() + 60).await;
    let id = w.submitted(&cs, &w.pay(10 * ONE).await).await;
    // Seen in a block that is not final: the failure waits for finality, nothing credited.
    let p = w.payment_reaches(&id, "validating").await;
    assert_eq!((p["amountReceived"].as_str(), p["failureReason"].as_str()), (Some("0.000000"), None));
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&id, "failed").await["failureReason"], "checkout_expired");
    assert_eq!(w.invoice(&cs).await["customerAmountPaid"], "0.000000");
    assert!(w.event_types().await.contains(&"payment.failed".to_owned()));
}

#[tokio::test]
async fn a_transfer_reorganised_away_before_finality_is_never_credited() {
    let w = World::new().await;
    let cs = w.checkout("10.00").await;
    let before = w.anvil.snapshot().await;
    let id = w.submitted(&cs, &w.pay(10 * ONE).await).await;
    w.payment_reaches(&id, "validating").await;
    // The block with the transfer disappears; the chain goes on without it.
    w.anvil.revert(before).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "failed").await;
    assert_eq!(p["failureReason"], "transaction_not_found");
    let inv = w.invoice(&cs).await;
    assert_eq!((inv["customerAmountPaid"].as_str(), inv["collectionState"].as_str()), (Some("0.000000"), Some("open")));
}

#[tokio::test]
async fn verification_waits_out_an_rpc_outage() {
    let mut w = World::new().await;
    let cs = w.checkout("10.00").await;
    w.proxy.cut();
    let id = w.submitted(&cs, &w.pay(10 * ONE).await).await;
    let p = eventually("a diagnostic", || async {
        let p = w.payment(&id).await;
        p["diagnostic"].is_string().then_some(p)
    })
    .await;
    assert_eq!(p["status"], "detected");
    assert!(p["diagnostic"].as_str().unwrap().contains("do not answer"), "{p}");
    let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await;
    assert_eq!(ready.ok(200)["chain"]["state"], "unreachable");
    w.proxy.restore().await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "confirmed").await;
    assert_eq!(p["diagnostic"], Value::Null);
    assert_eq!(w.invoice(&cs).await["collectionState"], "paid");
}

#[tokio::test]
async fn a_transfer_without_a_reported_hash_is_detected_and_credited() {
    let w = World::new().await;
    let cs = w.checkout("7.25").await;
    let tx = w.pay(7_250_000).await;
    w.anvil.finalize().await;
    let inv = eventually("the invoice paid", || async {
        let inv = w.invoice(&cs).await;
        (inv["collectionState"] == "paid").then_some(inv)
    })
    .await;
    let payments = inv["payments"].as_array().unwrap();
    assert_eq!(payments.len(), 1);
    assert_eq!(
        (payments[0]["status"].as_str(), payments[0]["transactionId"].as_str()),
        (Some("confirmed"), Some(tx.as_str()))
    );
}

#[tokio::test]
async fn transfers_that_match_no_single_checkout_are_recorded_as_unattributed() {
    let w = World::new().await;
    let (a, b) = (w.checkout("5.00").await, w.checkout("5.00").await);
    // Both transfers are mined after both checkouts exist, however loaded the machine is.
    w.anvil.next_block_not_before_now().await;
    let twin = w.pay(5 * ONE).await;
    let odd = w.pay(3 * ONE).await;
    w.anvil.finalize().await;
    let list = eventually("two unattributed transfers", || async {
        let list = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
        (list["items"].as_array().unwrap().len() == 2).then_some(list)
    })
    .await;
    let items = list["items"].as_array().unwrap();
    let by_tx = |tx: &str| items.iter().find(|i| i["transactionHash"] == tx).unwrap().clone();
    assert_eq!(by_tx(&twin)["reason"], "several_matching_checkouts");
    assert_eq!(by_tx(&twin)["amount"], "5.000000");
    assert_eq!(by_tx(&odd)["reason"], "no_matching_amount");
    assert_eq!(w.event_types().await.iter().filter(|t| *t == "payment.unattributed").count(), 2);
    for cs in [&a, &b] {
        let inv = w.invoice(cs).await;
        assert_eq!(
            (inv["customerAmountPaid"].as_str(), inv["payments"].as_array().unwrap().len()),
            (Some("0.000000"), 0)
        );
    }
    // Test keys see none of it.
    let test_list = w.app.get(&w.m.sk_test, "/v1/unattributed-transfers").await.ok(200).clone();
    assert!(test_list["items"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn a_node_on_another_chain_is_never_trusted() {
    let other = Anvil::start(1).await;
    let env = [
        ("STABLEPAY_CHAIN_RPC_URLS", other.url.clone()),
        ("STABLEPAY_CHAIN_POLL_MS", "100".to_owned()),
        ("STABLEPAY_CHAIN_NOT_FOUND_SECONDS", "1".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let ready = app.send(app.http.get(app.url("/readyz"))).await;
    ready.assert_error(503, "SERVICE_UNAVAILABLE");
    assert_eq!(ready.body["error"]["details"]["chain"]["state"], "wrong_chain");
    assert!(app.logs().contains("another chain"));
    let m = app.merchant("Shop");
    let wallet = "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed";
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", wallet, "--json"]);
    let cs = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
    let path = format!("/v1/public/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    let r = app
        .send(app.http.post(app.url(&path)).json(&json!({ "transactionHash": format!("0x{}", "ef".repeat(32)) })))
        .await;
    let id = r.ok(202)["id"].as_str().unwrap().to_owned();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let p = app.get(&m.sk_live, &format!("/v1/payments/{id}")).await.ok(200).clone();
    // Nothing is guessed: the payment waits, saying why (even past the not-found wait).
    assert_eq!(p["status"], "detected");
    assert!(p["diagnostic"].as_str().unwrap().contains("chain"), "{p}");
}

#[tokio::test]
async fn without_an_rpc_endpoint_live_payments_wait_with_a_diagnostic() {
    let app = TestApp::spawn_with(fresh_db().await, &[("STABLEPAY_CHAIN_POLL_MS", "100".to_owned())], &[]).await;
    let ready = app.send(app.http.get(app.url("/readyz"))).await;
    assert_eq!(ready.ok(200)["chain"]["state"], "off");
    let m = app.merchant("Shop");
    app.activate(&m, "USDC");
    let cs = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
    let path = format!("/v1/public/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    let r = app
        .send(app.http.post(app.url(&path)).json(&json!({ "transactionHash": format!("0x{}", "01".repeat(32)) })))
        .await;
    let id = r.ok(202)["id"].as_str().unwrap().to_owned();
    let p = eventually("a diagnostic", || async {
        let p = app.get(&m.sk_live, &format!("/v1/payments/{id}")).await.ok(200).clone();
        p["diagnostic"].is_string().then_some(p)
    })
    .await;
    assert_eq!(p["status"], "detected");
    assert!(p["diagnostic"].as_str().unwrap().contains("STABLEPAY_CHAIN_RPC_URLS"), "{p}");
    // Test-mode checkouts have no chain: their transfers are simulated.
    let test_cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
    let path = format!("/v1/public/checkout-sessions/{}/payments", test_cs["id"].as_str().unwrap());
    let r = app
        .send(app.http.post(app.url(&path)).json(&json!({ "transactionHash": format!("0x{}", "01".repeat(32)) })))
        .await;
    r.assert_error(422, "FEATURE_UNAVAILABLE");
}

#[tokio::test]
async fn the_hosted_page_takes_the_hash_of_a_transfer_already_sent() {
    let w = World::new().await;
    let cs = w.checkout("3.00").await;
    let url = cs["checkoutUrl"].as_str().unwrap().to_owned();
    let html = w.app.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains(&format!("action=\"/checkout/{}/transaction\"", cs["id"].as_str().unwrap())), "{html}");
    assert!(html.contains(&w.wallet) || html.to_ascii_lowercase().contains(&w.wallet.to_ascii_lowercase()));
    assert!(!html.contains("/simulate"));

    let no_redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let post = |origin: &str, body: String| {
        no_redirect
            .post(format!("{url}/transaction"))
            .header("Origin", origin)
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
    };
    assert_eq!(post(&w.app.base, "transactionHash=0x12".into()).await.unwrap().status().as_u16(), 400);
    let tx = w.pay(3 * ONE).await;
    // Another site cannot post it.
    assert_eq!(post("https://evil.example", format!("transactionHash={tx}")).await.unwrap().status().as_u16(), 403);
    assert!(w.invoice(&cs).await["payments"].as_array().unwrap().is_empty());
    let r = post(&w.app.base, format!("transactionHash={tx}")).await.unwrap();
    assert_eq!(
        (r.status().as_u16(), r.headers()["location"].to_str().unwrap()),
        (303, format!("/checkout/{}", cs["id"].as_str().unwrap()).as_str())
    );
    let inv = w.invoice(&cs).await;
    let id = inv["payments"][0]["id"].as_str().unwrap().to_owned();
    w.anvil.finalize().await;
    w.payment_reaches(&id, "confirmed").await;
    let html = w.app.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("confirmed") && html.contains(&tx), "{html}");
    // Paid: the transaction on the explorer, and the receipt.
    assert!(html.contains(&format!("https://polygonscan.com/tx/{tx}")), "{html}");
    assert!(html.contains("Download the receipt (PDF)"), "{html}");
    assert!(!html.contains("/transaction\""), "a completed checkout takes no more hashes");

    // The API answers a completed checkout as not payable; the page just shows it.
    let other = w.pay(3 * ONE).await;
    w.submit(&cs, &other).await.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE");
    assert_eq!(post(&w.app.base, format!("transactionHash={other}")).await.unwrap().status().as_u16(), 303);
    assert_eq!(w.invoice(&cs).await["payments"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_transfer_to_a_voided_invoice_is_recorded_and_reported() {
    let w = World::new().await;
    let cs = w.checkout("8.00").await;
    let void = format!("/v1/invoices/{}/void", cs["invoiceId"].as_str().unwrap());
    w.app.post(&w.m.sk_live, &void, json!({ "reason": "order cancelled" })).await.ok(200);
    // The customer had the page open and paid anyway: the hash is still taken.
    let id = w.submitted(&cs, &w.pay(8 * ONE).await).await;
    w.anvil.finalize().await;
    let p = eventually("the late payment settled", || async {
        let p = w.payment(&id).await;
        (!["detected", "validating"].contains(&p["status"].as_str().unwrap())).then_some(p)
    })
    .await;
    assert_eq!(p["amountReceived"], "8.000000", "{p}");
    let inv = w.invoice(&cs).await;
    assert_eq!(inv["collectionState"], "void");
    assert_eq!(inv["payments"].as_array().unwrap().len(), 1);
    assert!(w.event_types().await.contains(&"invoice.payment_received_after_void".to_owned()));
}
