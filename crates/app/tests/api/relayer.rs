//! The gasless relayer against a real chain (anvil, chain 137, the test USDC with EIP-3009): a
//! customer who holds USDC but no POL signs a wallet payment attempt's authorization, the page
//! (here, the test) posts the signature, and the service's relayer (anvil's account 9) sends
//! `transferWithAuthorization`, paying the gas. What it refuses it refuses before sending; a
//! front-run submission still pays its checkout once (the nonce names it); a transaction that
//! waits is replaced with higher fees under the same nonce; it stops at its daily gas limit;
//! and two replicas never send two transactions with one relayer nonce.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::anvil::Anvil;
use crate::attribution::{invoice_of, paid, same_address};
use crate::authorization::attempt;
use crate::live::{ONE, World, eventually};
use crate::support::Response;

/// The relayer's development account.
const RELAYER: usize = 9;

/// A world whose USDC has EIP-3009 and whose service relays (anvil's account 9), with `extra`
/// settings.
async fn relayer_world(extra: &[(&str, String)]) -> World {
    let mut settings = vec![("EIP3009", String::new())];
    settings.extend(extra.iter().cloned());
    World::with_chain(&settings, |anvil, _| vec![("STABLEPAY_RELAYER_KEY", anvil.private_key(RELAYER).to_owned())])
        .await
}

/// Development account `i` holding `usdc` whole USDC and no POL at all.
async fn gasless_payer(w: &World, i: usize, usdc: u128) -> String {
    let payer = w.anvil.address(i).to_owned();
    if usdc > 0 {
        w.anvil.mint(&w.token, w.anvil.address(0), &payer, usdc * ONE).await;
    }
    w.anvil.rpc("anvil_setBalance", json!([payer, "0x0"])).await;
    payer
}

/// `payer`'s signature of the attempt's typed data (with its message changed by `edit`).
async fn sign(w: &World, payer: &str, authorization: &Value, edit: impl FnOnce(&mut Value)) -> String {
    let mut typed = authorization["typedData"].clone();
    edit(&mut typed["message"]);
    w.anvil.sign_typed_data(payer, &typed).await
}

/// Posts `body` to checkout `cs`'s relayer route (through `base`, the app's by default).
async fn post_to(w: &World, base: Option<&str>, cs: &Value, body: &Value) -> Response {
    let path = format!("/v1/public/checkout-sessions/{}/authorizations", cs["id"].as_str().unwrap());
    let url = format!("{}{path}", base.unwrap_or(&w.app.base));
    w.app.send(w.app.http.post(url).json(body)).await
}

async fn relay(w: &World, cs: &Value, body: &Value) -> Response {
    post_to(w, None, cs, body).await
}

/// The attempt's authorization, signed by `payer`, as the page posts it.
async fn signed_body(w: &World, cs: &Value, payer: &str) -> (Value, Value) {
    let a = attempt(w, cs, payer).await;
    let auth = a["authorization"].clone();
    let signature = sign(w, payer, &auth, |_| {}).await;
    (json!({ "nonce": auth["typedData"]["message"]["nonce"], "signature": signature }), auth)
}

/// The submission at `url` as it stands, read as the page does: within the `public-read`
/// quota (waiting out a 429).
async fn relay_now(w: &World, url: &str) -> Value {
    loop {
        let r = w.app.send(w.app.http.get(w.app.url(url))).await;
        if r.status.as_u16() == 429 {
            let wait = r.header("retry-after").and_then(|s| s.parse().ok()).unwrap_or(1);
            tokio::time::sleep(std::time::Duration::from_secs(wait)).await;
            continue;
        }
        return r.ok(200).clone();
    }
}

/// Waits for the submission at `url` to reach `status` (polled every 600 ms, as often as the
/// quota lets a page); answers it.
async fn relay_reaches(w: &World, url: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        last = relay_now(w, url).await;
        if last["status"] == status {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    }
    panic!("the submission never became {status}; last seen: {last}");
}

/// How many transactions the relayer's account has sent (mined).
async fn relayer_nonce(anvil: &Anvil) -> u64 {
    let n = anvil.rpc("eth_getTransactionCount", json!([anvil.address(RELAYER), "latest"])).await;
    u64::from_str_radix(n.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

fn hex_number(v: &Value) -> u64 {
    u64::from_str_radix(v.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[tokio::test]
async fn a_customer_without_pol_signs_and_the_relayer_pays_the_gas_of_its_payment() {
    let w = relayer_world(&[]).await;
    let payer = gasless_payer(&w, 4, 100).await;
    let cs = w.checkout("10.00").await;
    let (body, auth) = signed_body(&w, &cs, &payer).await;
    let id = cs["id"].as_str().unwrap();
    assert_eq!(auth["relayUrl"], format!("/v1/public/checkout-sessions/{id}/authorizations"), "{auth}");

    let accepted = relay(&w, &cs, &body).await.ok(202).clone();
    assert_eq!(
        (accepted["object"].as_str(), accepted["status"].as_str()),
        (Some("relayed_authorization"), Some("queued"))
    );
    assert_eq!((accepted["amount"].as_str(), accepted["nonce"].as_str()), (Some("10.000000"), body["nonce"].as_str()));
    assert!(same_address(&accepted["payer"], &payer), "{accepted}");
    let url = accepted["url"].as_str().unwrap().to_owned();
    let done = relay_reaches(&w, &url, "confirmed").await;
    let hash = done["transactionHash"].as_str().unwrap().to_owned();
    let tx = w.anvil.rpc("eth_getTransactionByHash", json!([hash])).await;
    assert!(same_address(&tx["from"], w.anvil.address(RELAYER)), "the relayer sent it: {tx}");
    assert!(same_address(&tx["to"], &w.token), "to the token contract: {tx}");
    assert_eq!((tx["value"].as_str(), hex_number(&tx["nonce"])), (Some("0x0"), 0));

    // The same attempt posted again is the same submission: nothing is sent twice.
    let again = relay(&w, &cs, &body).await.ok(202).clone();
    assert_eq!((&again["id"], again["status"].as_str()), (&accepted["id"], Some("confirmed")));

    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"].as_array().unwrap().len(), 1, "{inv}");
    assert_eq!(
        (inv["payments"][0]["evidence"].as_str(), inv["payments"][0]["transactionId"].as_str()),
        (Some("authorization"), Some(hash.as_str()))
    );
    assert_eq!(w.anvil.rpc("eth_getBalance", json!([payer, "latest"])).await, json!("0x0"), "the customer paid no gas");
    assert_eq!(relayer_nonce(&w.anvil).await, 1);

    // What the operator watches: readiness and the metrics.
    let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["relayer"].clone();
    assert!(["ok", "low_balance"].contains(&ready["state"].as_str().unwrap()), "{ready}");
    assert!(same_address(&ready["address"], w.anvil.address(RELAYER)), "{ready}");
    assert_eq!((ready["confirmedToday"].as_u64(), ready["inFlight"].as_u64()), (Some(1), Some(0)), "{ready}");
    let gas = ready["gasUsedToday"].as_u64().unwrap();
    assert!(gas > 21_000 && gas < 250_000, "{ready}");
    assert_ne!(ready["spentToday"], "0", "{ready}");
    // The balance is read again a few seconds after it was last read: the gas is paid from it.
    eventually("the relayer's balance less the gas", || async {
        let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["relayer"].clone();
        ready["balance"].as_str().unwrap().starts_with("9999.").then_some(())
    })
    .await;
    let metrics = w.app.http.get(format!("{}/metrics", w.app.metrics)).send().await.unwrap().text().await.unwrap();
    for line in [
        "stablepay_relayer_outcomes_total{outcome=\"confirmed\"} 1",
        "stablepay_relayer_balance_pol ",
        "stablepay_relayer_gas_used_today ",
    ] {
        assert!(metrics.contains(line), "no {line:?} in the metrics:\n{metrics}");
    }
}

#[tokio::test]
async fn what_the_relayer_refuses_it_refuses_before_sending_anything() {
    let w = relayer_world(&[]).await;
    let cs = w.checkout("10.00").await;

    // An empty payer: the wallet holds no USDC.
    let empty = gasless_payer(&w, 5, 0).await;
    let (body, _) = signed_body(&w, &cs, &empty).await;
    let r = relay(&w, &cs, &body).await;
    r.assert_error(422, "PAYER_BALANCE_INSUFFICIENT");
    assert_eq!(
        (r.body["error"]["details"]["balance"].as_str(), r.body["error"]["details"]["required"].as_str()),
        (Some("0.000000"), Some("10.000000"))
    );

    // A signature of another message (a smaller value) is not the payer's signature of this
    // authorization.
    let a = attempt(&w, &cs, &w.customer).await["authorization"].clone();
    let forged = sign(&w, &w.customer, &a, |m| m["value"] = json!("1")).await;
    let r = relay(&w, &cs, &json!({ "nonce": a["typedData"]["message"]["nonce"], "signature": forged })).await;
    assert_eq!(r.assert_error(400, "INVALID_WALLET_PAYMENT_ATTEMPT").as_deref(), Some("signature"));
    // Bodies that are not a signed authorization name their field.
    let nonce = a["typedData"]["message"]["nonce"].clone();
    for (bad, field) in [
        (json!({ "nonce": "0x12", "signature": forged }), "nonce"),
        (json!({ "nonce": nonce, "signature": "0x00" }), "signature"),
        (json!({ "nonce": nonce }), "signature"),
        (json!({ "nonce": nonce, "signature": forged, "to": w.stranger }), "to"),
    ] {
        assert_eq!(
            relay(&w, &cs, &bad).await.assert_error(400, "INVALID_WALLET_PAYMENT_ATTEMPT").as_deref(),
            Some(field),
            "{bad}"
        );
    }
    // Another checkout's attempt is no attempt of this one.
    let other = w.checkout("3.00").await;
    let (theirs, _) = signed_body(&w, &other, &w.customer).await;
    assert_eq!(
        relay(&w, &cs, &theirs).await.assert_error(400, "INVALID_WALLET_PAYMENT_ATTEMPT").as_deref(),
        Some("nonce")
    );

    // A replayed authorization: the customer sent it already; the relayer sends nothing.
    let (body, auth) = signed_body(&w, &cs, &w.customer).await;
    let call = Anvil::authorized_call(&auth, body["signature"].as_str().unwrap());
    let sent = w.anvil.send(&w.customer, Some(&w.token), &call, None).await;
    assert_eq!(w.anvil.receipt(&sent).await["status"], "0x1");
    relay(&w, &cs, &body).await.assert_error(409, "AUTHORIZATION_USED");

    // An expired authorization, by the chain's clock (its validBefore passed on the chain while
    // the service's own clock still has the checkout open).
    let later = w.checkout("4.00").await;
    let (body, auth) = signed_body(&w, &later, &w.customer).await;
    let valid_before: i64 = auth["typedData"]["message"]["validBefore"].as_str().unwrap().parse().unwrap();
    w.anvil.set_next_block_time(valid_before + 1).await;
    w.anvil.mine(1).await;
    relay(&w, &later, &body).await.assert_error(422, "AUTHORIZATION_EXPIRED");

    // A test checkout is simulated; an unknown submission is not found.
    let test = w.app.post(&w.m.sk_test, "/v1/checkout-sessions", json!({ "amount": "1" })).await.ok(201).clone();
    relay(&w, &test, &body).await.assert_error(422, "WALLET_PAYMENTS_UNAVAILABLE");
    let unknown = format!("/v1/public/checkout-sessions/{}/authorizations/rel_nothing", cs["id"].as_str().unwrap());
    w.app.send(w.app.http.get(w.app.url(&unknown))).await.assert_error(404, "NOT_FOUND");

    // The relayer sent nothing at all.
    assert_eq!(relayer_nonce(&w.anvil).await, 0);
    let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["relayer"].clone();
    assert_eq!((ready["gasUsedToday"].as_u64(), ready["inFlight"].as_u64()), (Some(0), Some(0)), "{ready}");
}

#[tokio::test]
async fn a_front_run_submission_still_pays_its_checkout_once() {
    let w = relayer_world(&[]).await;
    let cs = w.checkout("7.00").await;
    let (body, auth) = signed_body(&w, &cs, &w.customer).await;
    // Blocks wait: the relayer's transaction sits in the pool when someone copies the signed
    // call and sends it with a far higher tip.
    w.anvil.automine(false).await;
    let accepted = relay(&w, &cs, &body).await.ok(202).clone();
    let url = accepted["url"].as_str().unwrap().to_owned();
    let sent = relay_reaches(&w, &url, "sent").await;
    let ours = sent["transactionHash"].as_str().unwrap().to_owned();
    let call = Anvil::authorized_call(&auth, body["signature"].as_str().unwrap());
    let tip = format!("0x{:x}", 500_000_000_000u128);
    let front = w
        .anvil
        .rpc(
            "eth_sendTransaction",
            json!([{ "from": w.stranger, "to": w.token, "data": call, "maxPriorityFeePerGas": tip, "maxFeePerGas": format!("0x{:x}", 1_000_000_000_000u128) }]),
        )
        .await
        .as_str()
        .unwrap()
        .to_owned();
    w.anvil.mine(1).await;
    w.anvil.automine(true).await;
    assert_eq!(w.anvil.receipt(&front).await["status"], "0x1", "the copy went first");

    let settled = relay_reaches(&w, &url, "front_run").await;
    assert!(settled["detail"].as_str().unwrap().contains("pays the checkout"), "{settled}");
    let mined = w.anvil.receipt(&ours).await;
    assert_eq!(mined["status"], "0x0", "the relayer's own transaction reverted: the nonce was used");

    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    let payments = inv["payments"].as_array().unwrap();
    assert_eq!(payments.len(), 1, "paid once: {inv}");
    assert_eq!(
        (payments[0]["evidence"].as_str(), payments[0]["transactionId"].as_str()),
        (Some("authorization"), Some(front.as_str()))
    );
    assert_eq!(inv["customerAmountPaid"], "7.000000");
}

#[tokio::test]
async fn a_waiting_transaction_is_replaced_with_higher_fees_under_its_nonce_and_one_version_pays() {
    let w = relayer_world(&[("STABLEPAY_RELAYER_BUMP_SECONDS", "1".to_owned())]).await;
    let cs = w.checkout("6.00").await;
    let (body, _) = signed_body(&w, &cs, &w.customer).await;
    w.anvil.automine(false).await;
    let accepted = relay(&w, &cs, &body).await.ok(202).clone();
    let url = accepted["url"].as_str().unwrap().to_owned();
    let first = relay_reaches(&w, &url, "sent").await["transactionHash"].as_str().unwrap().to_owned();
    let first_tx = w.anvil.rpc("eth_getTransactionByHash", json!([first])).await;
    let replaced = eventually("a replacement", || async {
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
        let r = relay_now(&w, &url).await;
        (r["transactionHash"].as_str() != Some(first.as_str())).then_some(r)
    })
    .await;
    let second = replaced["transactionHash"].as_str().unwrap().to_owned();
    let second_tx = w.anvil.rpc("eth_getTransactionByHash", json!([second])).await;
    assert_eq!(first_tx["nonce"], second_tx["nonce"], "a replacement keeps its nonce");
    assert!(hex_number(&second_tx["maxFeePerGas"]) > hex_number(&first_tx["maxFeePerGas"]));
    assert!(hex_number(&second_tx["maxPriorityFeePerGas"]) > hex_number(&first_tx["maxPriorityFeePerGas"]));

    w.anvil.mine(1).await;
    w.anvil.automine(true).await;
    let done = relay_reaches(&w, &url, "confirmed").await;
    let mined = done["transactionHash"].as_str().unwrap().to_owned();
    assert_ne!(mined, first, "the first version was replaced");
    assert_eq!(relayer_nonce(&w.anvil).await, 1, "one nonce, one mined version");
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"].as_array().unwrap().len(), 1, "{inv}");
    assert_eq!(inv["payments"][0]["transactionId"], mined);
}

#[tokio::test]
async fn the_relayer_stops_at_its_daily_gas_limit_and_the_wallet_can_still_pay() {
    let w = relayer_world(&[("STABLEPAY_RELAYER_DAILY_GAS_LIMIT", "150000".to_owned())]).await;
    let mut accepted = Vec::new();
    let mut refused = None;
    for n in 0..6 {
        let cs = w.checkout(&format!("{}.00", 2 + n)).await;
        let (body, auth) = signed_body(&w, &cs, &w.customer).await;
        let r = relay(&w, &cs, &body).await;
        if r.status.as_u16() == 202 {
            accepted.push((cs, r.body["data"]["url"].as_str().unwrap().to_owned()));
            continue;
        }
        r.assert_error(422, "FEATURE_UNAVAILABLE");
        assert_eq!(r.body["error"]["details"]["reason"], "relayer_daily_gas_limit", "{}", r.body);
        refused = Some((cs, body, auth));
        break;
    }
    assert!(!accepted.is_empty(), "the first submission fits the budget");
    let (cs, body, auth) = refused.expect("the relayer never stopped at its daily limit");
    for (_, url) in &accepted {
        relay_reaches(&w, url, "confirmed").await;
    }
    assert_eq!(relayer_nonce(&w.anvil).await, u64::try_from(accepted.len()).unwrap());
    let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["relayer"].clone();
    assert_eq!(ready["state"], "at_daily_limit", "{ready}");
    assert!(ready["gasUsedToday"].as_u64().unwrap() <= 150_000, "{ready}");
    // The customer's wallet sends the refused authorization itself: it pays its checkout.
    let call = Anvil::authorized_call(&auth, body["signature"].as_str().unwrap());
    let tx = w.anvil.send(&w.customer, Some(&w.token), &call, None).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx);
}

#[tokio::test]
async fn two_replicas_never_send_two_transactions_with_one_relayer_nonce() {
    let w = relayer_world(&[]).await;
    let env = vec![
        ("STABLEPAY_CHAIN_RPC_URLS", format!("http://127.0.0.1:{}", w.proxy.port)),
        ("STABLEPAY_USDC_CONTRACT", w.token.clone()),
        ("STABLEPAY_CHAIN_POLL_MS", "100".to_owned()),
        ("STABLEPAY_CHAIN_TIMEOUT_MS", "1000".to_owned()),
        ("STABLEPAY_RELAYER_KEY", w.anvil.private_key(RELAYER).to_owned()),
    ];
    let (other, _child) = w.app.sibling(&env).await;
    let payers = [w.customer.clone(), gasless_payer(&w, 4, 100).await, gasless_payer(&w, 5, 100).await];
    let mut submissions = Vec::new();
    for n in 0..8u32 {
        let cs = w.checkout(&format!("{}.25", 1 + n)).await;
        let payer = &payers[usize::try_from(n).unwrap() % payers.len()];
        let (body, _) = signed_body(&w, &cs, payer).await;
        let base = if n % 2 == 0 { None } else { Some(other.as_str()) };
        let r = post_to(&w, base, &cs, &body).await;
        submissions.push((cs, r.ok(202)["url"].as_str().unwrap().to_owned()));
    }
    let mut nonces = BTreeSet::new();
    for (_, url) in &submissions {
        let done = relay_reaches(&w, url, "confirmed").await;
        let tx = w.anvil.rpc("eth_getTransactionByHash", json!([done["transactionHash"]])).await;
        assert!(same_address(&tx["from"], w.anvil.address(RELAYER)), "{tx}");
        assert!(nonces.insert(hex_number(&tx["nonce"])), "two transactions with nonce {}", tx["nonce"]);
    }
    assert_eq!(nonces, (0..8).collect::<BTreeSet<u64>>(), "the relayer's nonces, each once, no gap");
    assert_eq!(relayer_nonce(&w.anvil).await, 8);
    w.anvil.finalize().await;
    for (cs, _) in &submissions {
        let inv = paid(&w, &w.m.sk_live, cs).await;
        assert_eq!(inv["payments"].as_array().unwrap().len(), 1, "{inv}");
        assert_eq!(invoice_of(&w, &w.m.sk_live, cs).await["customerAmountPaid"], inv["total"]);
    }
}

#[tokio::test]
async fn a_transaction_still_waiting_when_its_authorization_expires_ends_expired_and_pays_nothing() {
    let w = relayer_world(&[]).await;
    let cs = w.checkout("8.00").await;
    let (body, auth) = signed_body(&w, &cs, &w.customer).await;
    w.anvil.automine(false).await;
    let accepted = relay(&w, &cs, &body).await.ok(202).clone();
    let url = accepted["url"].as_str().unwrap().to_owned();
    let hash = relay_reaches(&w, &url, "sent").await["transactionHash"].as_str().unwrap().to_owned();
    // The chain's next block comes after validBefore: the waiting transaction is mined too late.
    let valid_before: i64 = auth["typedData"]["message"]["validBefore"].as_str().unwrap().parse().unwrap();
    w.anvil.set_next_block_time(valid_before + 5).await;
    w.anvil.mine(1).await;
    w.anvil.automine(true).await;
    let ended = relay_reaches(&w, &url, "expired").await;
    assert!(ended["detail"].as_str().unwrap().contains("validBefore"), "{ended}");
    assert_eq!(w.anvil.receipt(&hash).await["status"], "0x0", "the token refused it: the authorization expired");
    assert_eq!(relayer_nonce(&w.anvil).await, 1, "its nonce was used, so nothing waits behind it");
    w.anvil.finalize().await;
    let inv = invoice_of(&w, &w.m.sk_live, &cs).await;
    assert_eq!(
        (inv["customerAmountPaid"].as_str(), inv["payments"].as_array().map(Vec::len)),
        (Some("0.000000"), Some(0)),
        "{inv}"
    );
    let ready = w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["relayer"].clone();
    assert_eq!((ready["failedToday"].as_u64(), ready["inFlight"].as_u64()), (Some(1), Some(0)), "{ready}");
}
