//! Onchain attribution against a real chain (anvil, chain 137): a final transfer into a watched
//! wallet ends credited to the one checkout it pays or recorded as unattributed, never lost; a
//! reported hash never takes another customer's payment. Each test is a way a real payment was
//! lost or misplaced before (see docs/api.md, "Live verification").

use std::time::Duration;

use serde_json::{Value, json};

use crate::anvil::word_of_hex;
use crate::live::{ONE, World, eventually};
use crate::support::Merchant;

/// Another merchant, activated for live mode with its own wallet.
pub(crate) fn other_merchant(w: &World, wallet: &str) -> Merchant {
    let o = w.app.merchant("Other shop");
    w.app.cli_ok(&["merchant", "activate", &o.id, "--settlement-wallet", wallet, "--token", "USDC", "--json"]);
    w.app.cli_ok(&["merchant", "unique-amounts", &o.id, "off", "--json"]);
    o
}

pub(crate) async fn checkout_of(w: &World, key: &str, amount: &str) -> Value {
    w.app.post(key, "/v1/checkout-sessions", json!({ "amount": amount })).await.ok(201).clone()
}

pub(crate) async fn invoice_of(w: &World, key: &str, cs: &Value) -> Value {
    let id = cs["invoiceId"].as_str().unwrap();
    w.app.get(key, &format!("/v1/invoices/{id}")).await.ok(200).clone()
}

/// Waits for the invoice of `cs` (of the merchant of `key`) to be paid; answers it.
pub(crate) async fn paid(w: &World, key: &str, cs: &Value) -> Value {
    eventually("the invoice paid", || async {
        let inv = invoice_of(w, key, cs).await;
        (inv["collectionState"] == "paid").then_some(inv)
    })
    .await
}

/// Waits for an unattributed transfer of `tx` (and log `log`) in the merchant's list.
pub(crate) async fn unattributed(w: &World, key: &str, tx: &str, log: u64) -> Value {
    eventually("the unattributed transfer", || async {
        let list = w.app.get(key, "/v1/unattributed-transfers?limit=100&status=all").await.ok(200).clone();
        list["items"].as_array().unwrap().iter().find(|i| i["transactionHash"] == tx && i["logIndex"] == log).cloned()
    })
    .await
}

pub(crate) fn same_address(a: &Value, b: &str) -> bool {
    a.as_str().is_some_and(|a| a.eq_ignore_ascii_case(b))
}

#[tokio::test]
async fn a_report_to_another_merchants_checkout_never_hides_the_transfer() {
    let w = World::new().await;
    let accounts = w.anvil.accounts().await;
    let o = other_merchant(&w, &accounts[4]);
    let mine = w.checkout("12.34").await;
    let theirs = checkout_of(&w, &o.sk_live, "12.34").await;
    let tx = w.pay(12_340_000).await;
    // Someone reports M's customer's transfer to a checkout of merchant O before it is final.
    let path = format!("/v1/public/checkout-sessions/{}/payments", theirs["id"].as_str().unwrap());
    let r = w.app.send(w.app.http.post(w.app.url(&path)).json(&json!({ "transactionHash": tx }))).await;
    let foreign = r.ok(202)["id"].as_str().unwrap().to_owned();
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &mine).await;
    let payments = inv["payments"].as_array().unwrap();
    assert_eq!(payments.len(), 1);
    assert_eq!(
        (payments[0]["status"].as_str(), payments[0]["transactionId"].as_str()),
        (Some("confirmed"), Some(tx.as_str()))
    );
    let p = eventually("the foreign claim failed", || async {
        let p = w.app.get(&o.sk_live, &format!("/v1/payments/{foreign}")).await.ok(200).clone();
        (p["status"] == "failed").then_some(p)
    })
    .await;
    assert_eq!(p["failureReason"], "wrong_recipient");
    assert_eq!(invoice_of(&w, &o.sk_live, &theirs).await["customerAmountPaid"], "0.000000");
}

#[tokio::test]
async fn a_hash_reported_before_it_was_mined_is_credited_once_it_is_final() {
    let w = World::new().await;
    let cs = w.checkout("7.00").await;
    w.anvil.automine(false).await;
    let tx = w.pay(7 * ONE).await;
    let id = w.submitted(&cs, &tx).await;
    // Still in the pool after the not-found wait (3 s here): the report fails as not found.
    assert_eq!(w.payment_reaches(&id, "failed").await["failureReason"], "transaction_not_found");
    w.anvil.automine(true).await;
    w.anvil.mine(1).await;
    w.anvil.finalize().await;
    // Mined and final later: the follower credits it all the same.
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    let statuses: Vec<&str> =
        inv["payments"].as_array().unwrap().iter().map(|p| p["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["failed", "confirmed"]);
    assert_eq!(inv["customerAmountPaid"], "7.000000");
}

#[tokio::test]
async fn the_not_found_wait_starts_again_when_a_reorganisation_removes_the_transaction() {
    // A wait of 10 s: long enough that re-mining the transaction after the reorganisation
    // always lands inside it, even on a loaded machine.
    let w = World::with(&[("STABLEPAY_CHAIN_NOT_FOUND_SECONDS", "10".to_owned())]).await;
    let cs = w.checkout("9.00").await;
    let before = w.anvil.snapshot().await;
    let tx = w.pay(9 * ONE).await;
    let raw = w.anvil.raw_transaction(&tx).await;
    let id = w.submitted(&cs, &tx).await;
    w.payment_reaches(&id, "validating").await;
    // Longer than the not-found wait (10 s) since the report.
    tokio::time::sleep(Duration::from_secs(11)).await;
    // The block is reorganised away, and the chain goes on past where it was final. A
    // reorganisation does not turn the clock back: the new blocks are mined now (anvil's revert
    // would restart them from the snapshot's time, before the checkout existed).
    w.anvil.revert(before).await;
    w.anvil.set_next_block_time(chrono::Utc::now().timestamp() + 1).await;
    w.anvil.finalize().await;
    w.payment_reaches(&id, "detected").await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(w.payment(&id).await["status"], "detected", "the wait counts from the reorganisation");
    // Mined again: verified and credited.
    assert_eq!(w.anvil.send_raw(&raw).await, tx);
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&id, "confirmed").await["customerAmountCredited"], "9.000000");
}

#[tokio::test]
async fn one_transaction_paying_two_merchants_credits_both() {
    let w = World::new().await;
    let accounts = w.anvil.accounts().await;
    let o = other_merchant(&w, &accounts[4]);
    let mine = w.checkout("4.00").await;
    let theirs = checkout_of(&w, &o.sk_live, "8.080808").await;
    let tx = w.anvil.transfer_many(&w.token, &w.customer, &[(&w.wallet, 4 * ONE), (&accounts[4], 8_080_808)]).await;
    assert_eq!(w.anvil.receipt(&tx).await["status"], "0x1");
    let id = w.submitted(&mine, &tx).await;
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&id, "confirmed").await["amountReceived"], "4.000000");
    let inv = paid(&w, &o.sk_live, &theirs).await;
    assert_eq!(inv["payments"][0]["amountReceived"], "8.080808");
    assert_eq!(inv["payments"][0]["transactionId"], tx.as_str());
}

#[tokio::test]
async fn each_log_of_a_transaction_is_credited_or_listed_once() {
    let w = World::new().await;
    let cs = w.checkout("6.060607").await;
    let tx = w.anvil.transfer_many(&w.token, &w.customer, &[(&w.wallet, 4_040_404), (&w.wallet, 6_060_607)]).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["customerAmountPaid"], "6.060607");
    assert_eq!(inv["payments"][0]["status"], "confirmed");
    let listed = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!((listed["amount"].as_str(), listed["reason"].as_str()), (Some("4.040404"), Some("no_matching_amount")));
    let list = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
    assert_eq!(list["items"].as_array().unwrap().len(), 1, "the credited log is not listed: {list}");
}

#[tokio::test]
async fn a_transfer_mined_before_expiry_but_final_after_it_is_credited() {
    let w = World::new().await;
    let db = stablepay_test_db::connect(&w.app.db.url()).await;
    let (reported, found) = (w.checkout("5.00").await, w.checkout("6.00").await);
    let (tx_reported, tx_found) = (w.pay(5 * ONE).await, w.pay(6 * ONE).await);
    let mined = w.anvil.block_time_of(&tx_found).await;
    // A live checkout lasts at least 5 minutes: the service's time passes by moving both
    // checkouts' expiry to just after the blocks that pay them.
    for cs in [&reported, &found] {
        let id = cs["id"].as_str().unwrap();
        let sql = format!("UPDATE checkout_sessions SET expires_at = to_timestamp({}) WHERE id = '{id}'", mined + 2);
        db.batch_execute(&sql).await.unwrap();
    }
    crate::support::wake_the_worker(&w.app.db).await;
    for cs in [&reported, &found] {
        let path = format!("/v1/checkout-sessions/{}", cs["id"].as_str().unwrap());
        eventually("the checkout expired", || async {
            (w.app.get(&w.m.sk_live, &path).await.ok(200)["status"] == "expired").then_some(())
        })
        .await;
    }
    // The customer reports after the expiry: the block's time decides, not the report's.
    let id = w.submitted(&reported, &tx_reported).await;
    w.anvil.set_next_block_time(mined + 600).await;
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&id, "confirmed").await["customerAmountCredited"], "5.000000");
    // Nobody reported the other one: the follower attributes it at its block's time.
    let inv = paid(&w, &w.m.sk_live, &found).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx_found.as_str());
    let list = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
    assert!(list["items"].as_array().unwrap().is_empty(), "{list}");
}

#[tokio::test]
async fn checkouts_on_a_wallet_the_merchant_left_are_still_watched() {
    let w = World::new().await;
    let accounts = w.anvil.accounts().await;
    let cs = w.checkout("3.33").await;
    w.app.cli_ok(&["merchant", "activate", &w.m.id, "--settlement-wallet", &accounts[6], "--token", "USDC", "--json"]);
    let newer = w.checkout("4.44").await;
    assert!(same_address(&newer["settlementWalletAddress"], &accounts[6]), "{newer}");
    // The first checkout's customer pays the wallet it was shown.
    let tx = w.pay(3_330_000).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx.as_str());
}

#[tokio::test]
async fn an_absurd_transfer_is_recorded_and_never_stalls_the_follower() {
    let w = World::new().await;
    let two_to_the_200 = word_of_hex(&format!("1{}", "0".repeat(50)));
    let two_to_the_255 = word_of_hex(&format!("8{}", "0".repeat(63)));
    for units in [&two_to_the_200, &two_to_the_255] {
        w.anvil.mint_word(&w.token, &w.customer, &w.customer, units).await;
    }
    let cs = w.checkout("5.00").await;
    let reported = w.checkout("1.00").await;
    let big = w.anvil.transfer_word(&w.token, &w.customer, &w.wallet, &two_to_the_200).await;
    let bigger = w.anvil.transfer_word(&w.token, &w.customer, &w.wallet, &two_to_the_255).await;
    let exact = w.pay(5 * ONE).await;
    let id = w.submitted(&reported, &bigger).await;
    w.anvil.finalize().await;
    // The exact payment after them is credited: the follower went on.
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], exact.as_str());
    let listed = unattributed(&w, &w.m.sk_live, &big, 0).await;
    assert_eq!(listed["reason"], "amount_out_of_range");
    assert_eq!(listed["amount"], "1606938044258990275541962092341162602522202993782792835.301376");
    // The reported one fails with its reason (never retried forever), then is listed as well.
    assert_eq!(w.payment_reaches(&id, "failed").await["failureReason"], "amount_out_of_range");
    assert_eq!(unattributed(&w, &w.m.sk_live, &bigger, 0).await["reason"], "amount_out_of_range");
    assert_eq!(invoice_of(&w, &w.m.sk_live, &reported).await["customerAmountPaid"], "0.000000");
    assert!(!w.app.logs().contains("ERROR"), "{}", w.app.logs());
}

#[tokio::test]
async fn a_transfer_mined_before_the_checkout_existed_cannot_be_claimed_by_it() {
    let w = World::new().await;
    let tx = w.pay(21 * ONE).await;
    w.anvil.finalize().await;
    assert_eq!(unattributed(&w, &w.m.sk_live, &tx, 0).await["reason"], "no_open_checkout");
    // Block times are whole seconds: the checkout comes at least a second later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let cs = w.checkout("21.00").await;
    let id = w.submitted(&cs, &tx).await;
    assert_eq!(w.payment_reaches(&id, "failed").await["failureReason"], "transfer_before_checkout");
    assert_eq!(w.invoice(&cs).await["customerAmountPaid"], "0.000000");
}

#[tokio::test]
async fn a_report_against_another_checkouts_exact_amount_is_held_not_taken() {
    // Unique amounts off: the victim's checkout asks exactly what was sent; the attacker's
    // report names his own. Neither is guessed: the transfer is held for the merchant.
    let w = World::new().await;
    let victim = w.checkout("30.00").await;
    let attacker = w.checkout("30.50").await;
    let tx = w.pay(30 * ONE).await;
    let id = w.submitted(&attacker, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "failed").await;
    let created = (&victim["createdAt"], &attacker["createdAt"]);
    assert_eq!(p["failureReason"], "disputed", "{p}, checkouts created {created:?}");
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!(record["reason"], "disputed");
    for cs in [&victim, &attacker] {
        assert_eq!(w.invoice(cs).await["customerAmountPaid"], "0.000000");
    }
}

#[tokio::test]
async fn the_payer_is_the_sender_of_the_tokens_not_of_the_transaction() {
    let w = World::new().await;
    let spender = w.anvil.accounts().await[5].clone();
    w.anvil.approve(&w.token, &w.customer, &spender, 10 * ONE).await;
    let cs = w.checkout("2.50").await;
    let tx = w.anvil.transfer_from(&w.token, &spender, &w.customer, &w.wallet, 2_500_000).await;
    assert_eq!(w.anvil.receipt(&tx).await["status"], "0x1");
    let id = w.submitted(&cs, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "confirmed").await;
    assert!(same_address(&p["payer"]["address"], &w.customer), "{p}");
}

#[tokio::test]
async fn a_payment_of_exactly_what_remained_is_confirmed() {
    let w = World::new().await;
    let cs = w.checkout("10.000001").await;
    let first = w.submitted(&cs, &w.pay(10 * ONE).await).await;
    w.anvil.finalize().await;
    w.payment_reaches(&first, "underpaid").await;
    let path = format!("/v1/invoices/{}/checkout-sessions", cs["invoiceId"].as_str().unwrap());
    let remainder = w.app.post(&w.m.sk_live, &path, json!({})).await.ok(201).clone();
    assert_eq!(remainder["amount"], "0.000001");
    let rest = json!({ "id": remainder["checkoutSessionId"], "invoiceId": cs["invoiceId"] });
    let second = w.submitted(&rest, &w.pay(1).await).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&second, "confirmed").await;
    assert_eq!(p["amountExpected"], "0.000001");
    assert_eq!(w.invoice(&cs).await["collectionState"], "paid");
    assert_eq!(w.event_types().await.iter().filter(|t| *t == "payment.underpaid").count(), 1);
}

#[tokio::test]
async fn a_follower_that_fails_every_pass_shows_how_far_behind_it_is() {
    let w = World::new().await;
    let ready = || async { w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200).clone() };
    eventually("the follower running", || async {
        (ready().await["worker"]["follower"]["state"] == "ok").then_some(())
    })
    .await;
    // A database fault the follower meets on every pass: it cannot record what it finds.
    let db = stablepay_test_db::connect(&w.app.db.url()).await;
    db.batch_execute("ALTER TABLE unattributed_transfers RENAME TO unattributed_transfers_away").await.unwrap();
    let tx = w.pay(3 * ONE).await;
    w.anvil.finalize().await;
    let follower = eventually("the follower stalled", || async {
        let f = ready().await["worker"]["follower"].clone();
        (f["state"] == "stalled").then_some(f)
    })
    .await;
    assert!(follower["consecutiveFailures"].as_u64().unwrap() >= 5, "{follower}");
    let behind = follower["lagBlocks"].as_u64().unwrap();
    assert!(behind >= 1, "{follower}");
    let lag = || async {
        let text = reqwest::get(format!("{}/metrics", w.app.metrics)).await.unwrap().text().await.unwrap();
        text.lines().find_map(|l| l.strip_prefix("stablepay_chain_follow_lag_blocks ")?.parse::<u64>().ok())
    };
    // The chain goes on: the lag grows with it, in readiness and in the metric.
    w.anvil.mine(20).await;
    eventually("the lag grown", || async {
        let f = ready().await["worker"]["follower"].clone();
        let grown = f["lagBlocks"].as_u64().unwrap() >= behind + 20 && lag().await.is_some_and(|l| l >= behind + 20);
        grown.then_some(())
    })
    .await;
    // Mended: it catches up and nothing was lost.
    db.batch_execute("ALTER TABLE unattributed_transfers_away RENAME TO unattributed_transfers").await.unwrap();
    assert_eq!(unattributed(&w, &w.m.sk_live, &tx, 0).await["reason"], "no_open_checkout");
    eventually("the follower caught up", || async {
        let f = ready().await["worker"]["follower"].clone();
        (f["state"] == "ok" && f["lagBlocks"] == 0 && lag().await == Some(0)).then_some(())
    })
    .await;
}

#[tokio::test]
async fn an_endpoint_repointed_to_another_chain_is_noticed_and_used_again_once_it_is_back() {
    let mut w = World::with(&[("STABLEPAY_CHAIN_ID_RECHECK_SECONDS", "1".to_owned())]).await;
    let ready = || async { w.app.send(w.app.http.get(w.app.url("/readyz"))).await };
    eventually("the chain ok", || async { (ready().await.ok(200)["chain"]["state"] == "ok").then_some(()) }).await;
    // The same URL now reaches a node of another chain.
    let other = crate::anvil::Anvil::start(1).await;
    w.proxy.retarget(&format!("127.0.0.1:{}", other.port)).await;
    let refused = eventually("readiness refused", || async {
        let r = ready().await;
        (r.status == 503).then_some(r)
    })
    .await;
    assert_eq!(refused.body["error"]["details"]["chain"]["state"], "wrong_chain");
    // Nothing is verified through it meanwhile: a reported payment waits, saying why.
    let cs = w.checkout("2.00").await;
    let tx = w.pay(2 * ONE).await;
    let id = w.submitted(&cs, &tx).await;
    let p = eventually("a diagnostic", || async {
        let p = w.payment(&id).await;
        p["diagnostic"].as_str().is_some_and(|d| d.contains("chain")).then_some(p)
    })
    .await;
    assert_eq!(p["status"], "detected");
    // Pointed back: used again, and the payment goes on.
    w.proxy.retarget(&format!("127.0.0.1:{}", w.anvil.port)).await;
    eventually("the chain ok again", || async {
        let r = ready().await;
        (r.status == 200 && r.body["data"]["chain"]["state"] == "ok").then_some(())
    })
    .await;
    w.anvil.finalize().await;
    // A payment that met a configuration problem is checked again after 30 s.
    for _ in 0..90 {
        if w.payment(&id).await["status"] == "confirmed" {
            return;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    panic!("the payment was not confirmed: {}, checkout created {}", w.payment(&id).await, cs["createdAt"]);
}

#[tokio::test]
async fn unique_amounts_make_every_transfer_without_a_hash_attributable() {
    let w = World::new().await;
    w.app.cli_ok(&["merchant", "unique-amounts", &w.m.id, "on", "--json"]);
    let shown = w.app.cli_ok(&["merchant", "show", &w.m.id, "--json"]);
    assert_eq!(shown["live"]["uniqueAmounts"], true);
    w.settled_on(true).await;
    let mut checkouts = Vec::new();
    for _ in 0..3 {
        checkouts.push(w.checkout("10.00").await);
    }
    let asked: Vec<&str> = checkouts.iter().map(|c| c["amountDue"].as_str().unwrap()).collect();
    for a in &asked {
        assert!(a.as_bytes() > b"10.000000".as_slice() && a.as_bytes() <= b"10.000999".as_slice(), "{asked:?}");
    }
    let distinct: std::collections::BTreeSet<&&str> = asked.iter().collect();
    assert_eq!(distinct.len(), 3, "{asked:?}");
    // The customer of the second pays exactly what it asks, without reporting the hash.
    let second = &checkouts[1];
    let units: u128 = asked[1].replace('.', "").parse().unwrap();
    // Mined after the three checkouts exist, however loaded the machine is.
    w.anvil.next_block_not_before_now().await;
    let tx = w.pay(units).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, second).await;
    assert_eq!(
        (inv["status"].as_str(), inv["customerAmountPaid"].as_str()),
        (Some("paid"), Some("10.000000")),
        "{inv}, checkout {second}"
    );
    let p = &inv["payments"][0];
    assert_eq!((p["status"].as_str(), p["transactionId"].as_str()), (Some("confirmed"), Some(tx.as_str())));
    assert_eq!(p["customerAmountCredited"], "10.000000");
    assert_eq!(p["merchantAmountSettled"].as_str(), Some(asked[1]), "the offset reaches the merchant");
    for other in [&checkouts[0], &checkouts[2]] {
        assert_eq!(w.invoice(other).await["customerAmountPaid"], "0.000000");
    }
    // Off again: a new checkout asks exactly its amount.
    w.app.cli_ok(&["merchant", "unique-amounts", &w.m.id, "off", "--json"]);
    w.settled_on(false).await;
}

#[tokio::test]
async fn a_transfer_made_before_the_chain_was_first_reached_is_still_found() {
    // The service's very first start: its chain node is down, so the follower has no position.
    let mut w = World::with_chain_down(&[]).await;
    let cs = w.checkout("3.25").await;
    tokio::time::sleep(Duration::from_millis(1100)).await;
    // The customer pays without reporting the hash, and the block is final before the service
    // first reaches the chain.
    let tx = w.pay(3_250_000).await;
    w.anvil.finalize().await;
    w.proxy.restore().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx.as_str());
    assert_eq!(inv["payments"][0]["status"], "confirmed");
}
