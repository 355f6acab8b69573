//! Attribution by evidence against a real chain (anvil, chain 137): a transfer into a shared
//! wallet goes to the one checkout its strongest evidence names (a bound wallet, a unique
//! amount, a reported hash, an amount), equal evidence naming several checkouts is held for a
//! person, and a person's decision credits it once. Each test is a way money was credited to
//! the wrong checkout, or lost, before (the cases of docs/api.md, "Attribution by evidence").

use serde_json::{Value, json};

use crate::attribution::{invoice_of, paid, same_address, unattributed};
use crate::live::{ONE, World, eventually};

/// Units of a decimal amount with six decimals (`"10.000347"` is 10000347).
fn units(amount: &str) -> u128 {
    let (whole, frac) = amount.split_once('.').unwrap_or((amount, ""));
    format!("{whole}{frac:0<6}").parse().unwrap()
}

/// The customer's wallet is bound to `cs` by the hosted page's wallet payment attempt.
/// Twins A and B of 10.00, A having bound the customer's wallet; the customer pays 10.00, the
/// transfer is reported on B, and its block is final. Answers A, B, the transfer and B's
/// payment.
async fn bound_twin_reported_on_the_other(w: &World) -> (Value, Value, String, String) {
    let a = w.checkout("10.00").await;
    let b = w.checkout("10.00").await;
    bind(w, &a, &w.customer).await;
    let tx = w.pay(10 * ONE).await;
    let on_b = w.submitted(&b, &tx).await;
    w.anvil.finalize().await;
    (a, b, tx, on_b)
}

async fn bind(w: &World, cs: &Value, wallet: &str) {
    let path = format!("/v1/public/checkout-sessions/{}/wallet-payment-attempts", cs["id"].as_str().unwrap());
    let body = json!({ "walletAddress": wallet, "chainId": 137 });
    w.app.send(w.app.http.post(w.app.url(&path)).json(&body)).await.ok(200);
}

async fn attribute(w: &World, record: &str, cs: &Value, reason: &str) -> crate::support::Response {
    let path = format!("/v1/unattributed-transfers/{record}/attribute");
    w.app.post(&w.m.sk_live, &path, json!({ "checkoutSessionId": cs["id"], "reason": reason })).await
}

fn candidates(record: &Value) -> Vec<String> {
    let mut c: Vec<String> =
        record["candidates"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect();
    c.sort();
    c
}

fn ids(checkouts: &[&Value]) -> Vec<String> {
    let mut c: Vec<String> = checkouts.iter().map(|cs| cs["id"].as_str().unwrap().to_owned()).collect();
    c.sort();
    c
}

async fn public_phase(w: &World, cs: &Value) -> String {
    let path = format!("/v1/public/checkout-sessions/{}", cs["id"].as_str().unwrap());
    let r = w.app.send(w.app.http.get(w.app.url(&path))).await;
    r.ok(200)["phase"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn an_underpayment_reported_on_its_checkout_is_never_credited_to_a_stranger_asking_its_amount() {
    // Case 2, unique amounts off: X asks 71.00, Y exactly 27.77. X's customer sends 27.77 and
    // reports it on X. The report and Y's amount disagree: held, nobody is credited.
    let w = World::new().await;
    let x = w.checkout("71.00").await;
    let y = w.checkout("27.77").await;
    let tx = w.pay(27_770_000).await;
    let reported = w.submitted(&x, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&reported, "failed").await;
    assert_eq!(p["failureReason"], "disputed");
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!((record["reason"].as_str(), record["status"].as_str()), (Some("disputed"), Some("open")));
    assert_eq!(candidates(&record), ids(&[&x, &y]));
    for cs in [&x, &y] {
        let inv = w.invoice(cs).await;
        assert_eq!(inv["customerAmountPaid"], "0.000000");
        assert_eq!(inv["status"], "pending", "a held report changes nothing of the invoice: {inv}");
    }
    // X's page says the transfer is being reviewed, not "pay again".
    assert_eq!(public_phase(&w, &x).await, "held");
    assert!(w.event_types().await.contains(&"payment.unattributed".to_owned()));

    // The merchant decides: X. Credited once, with the ordinary events and the author.
    let id = record["id"].as_str().unwrap();
    let decided = attribute(&w, id, &x, "the customer of order 1001 wrote in").await.ok(200).clone();
    assert_eq!(decided["status"], "attributed");
    let payment = w.payment(decided["paymentId"].as_str().unwrap()).await;
    assert_eq!((payment["status"].as_str(), payment["evidence"].as_str()), (Some("underpaid"), Some("manual")));
    let inv = w.invoice(&x).await;
    assert_eq!(
        (inv["collectionState"].as_str(), inv["customerAmountPaid"].as_str()),
        (Some("partially_paid"), Some("27.770000"))
    );
    let activity = inv["activity"].as_array().unwrap();
    let entry = activity.iter().find(|a| a["action"] == "transfer_attributed").unwrap();
    assert!(entry["detail"].as_str().unwrap().contains("order 1001"), "{entry}");
    assert!(w.event_types().await.contains(&"invoice.partially_paid".to_owned()));
    // Once: again, or to Y, is refused and changes nothing.
    attribute(&w, id, &y, "second thoughts").await.assert_error(409, "TRANSFER_ALREADY_ATTRIBUTED");
    assert_eq!(w.invoice(&y).await["customerAmountPaid"], "0.000000");
    // It left the open list.
    let open = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
    assert!(open["items"].as_array().unwrap().iter().all(|i| i["id"] != record["id"]), "{open}");
}

#[tokio::test]
async fn with_unique_amounts_an_underpayment_reported_on_its_checkout_is_credited_to_it() {
    // Case 2 with the default: Y asks 27.77 plus its offset, so 27.77 names only X's report.
    let w = World::new().await;
    w.unique_amounts();
    let x = w.checkout("71.00").await;
    let y = w.checkout("27.77").await;
    assert_ne!(y["amountDue"], "27.770000");
    let tx = w.pay(27_770_000).await;
    let reported = w.submitted(&x, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&reported, "underpaid").await;
    assert_eq!(
        (p["customerAmountCredited"].as_str(), p["evidence"].as_str()),
        (Some("27.770000"), Some("reported_hash"))
    );
    assert_eq!(w.invoice(&y).await["customerAmountPaid"], "0.000000");
}

#[tokio::test]
async fn a_bound_wallet_goes_to_its_checkout_before_an_unbound_twin_whatever_is_reported() {
    // Case 3: A bound its customer's wallet; twin B (same amount) did not. Anyone reports the
    // transfer on B: A is credited, B's report fails and leaves B's invoice as it was.
    let w = World::new().await;
    let (a, b, tx, on_b) = bound_twin_reported_on_the_other(&w).await;
    let inv = paid(&w, &w.m.sk_live, &a).await;
    assert_eq!(inv["payments"][0]["evidence"], "bound_wallet");
    let p = w.payment_reaches(&on_b, "failed").await;
    let created = (&a["createdAt"], &b["createdAt"]);
    assert_eq!(p["failureReason"], "attributed_to_another_checkout", "{p}, checkouts created {created:?}");
    let b_inv = w.invoice(&b).await;
    assert_eq!((b_inv["status"].as_str(), b_inv["customerAmountPaid"].as_str()), (Some("pending"), Some("0.000000")));
    assert_eq!(public_phase(&w, &b).await, "failed");
    // The public answer names nothing of the checkout that took it.
    let again = w.submit(&b, &tx).await.ok(202).clone();
    assert_eq!(again["failureReason"], "attributed_to_another_checkout");
    assert!(!again.to_string().contains(a["id"].as_str().unwrap()), "{again}");
}

#[tokio::test]
async fn a_third_partys_binding_never_turns_the_customers_transfer_away() {
    // Case 5: the customer binds W; someone binds another wallet to the same checkout after.
    let w = World::new().await;
    let cs = w.checkout("15.00").await;
    bind(&w, &cs, &w.customer).await;
    bind(&w, &cs, &w.stranger).await;
    let tx = w.pay(15 * ONE).await;
    let id = w.submitted(&cs, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&id, "confirmed").await;
    assert!(same_address(&p["payer"]["address"], &w.customer), "{p}");
    assert_eq!(p["evidence"], "bound_wallet");
    // Both stay bound, for the merchant to see.
    let path = format!("/v1/checkout-sessions/{}/diagnostics", cs["id"].as_str().unwrap());
    let d = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
    let bound: Vec<&str> =
        d["boundWallets"].as_array().unwrap().iter().map(|b| b["address"].as_str().unwrap()).collect();
    assert_eq!(bound.len(), 2, "{d}");
    // A transfer from an unbound wallet still pays a bound checkout by its amount.
    let other = w.checkout("3.00").await;
    bind(&w, &other, &w.stranger).await;
    let tx = w.pay(3 * ONE).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &other).await;
    assert_eq!(
        (inv["payments"][0]["transactionId"].as_str(), inv["payments"][0]["evidence"].as_str()),
        (Some(tx.as_str()), Some("amount"))
    );
}

/// A live checkout of a reusable fixed-price link, as a customer's submission makes it.
async fn link_checkout(w: &World, link: &Value, n: u32) -> Value {
    let path = format!("/v1/public/payment-links/{}/checkout", link["publicId"].as_str().unwrap());
    let body = json!({ "version": link["version"] });
    let req = w.app.http.post(w.app.url(&path)).header("Idempotency-Key", format!("link-checkout-{n}")).json(&body);
    let made = w.app.send(req).await.ok(201).clone();
    let path = format!("/v1/checkout-sessions/{}", made["checkoutSessionId"].as_str().unwrap());
    w.app.get(&w.m.sk_live, &path).await.ok(200).clone()
}

/// A live merchant asking unique amounts, and its fixed-price payment link of `amount`.
async fn unique_amounts_and_a_fixed_link(title: &str, amount: &str) -> (World, Value) {
    let w = World::new().await;
    w.unique_amounts();
    let body = json!({ "title": title, "amountType": "fixed", "amount": amount });
    let link = w.app.post(&w.m.sk_live, "/v1/payment-links", body).await.ok(201).clone();
    (w, link)
}

#[tokio::test]
async fn twins_of_a_link_and_wrong_amounts_are_never_taken_by_a_report() {
    // Case 4 with the default (unique amounts on): a victim pays a fixed-price link's checkout
    // exactly without reporting; the attacker reports the hash on his own checkout of the link
    // first. The unique amount names the victim's.
    let (w, link) = unique_amounts_and_a_fixed_link("Coffee", "30.00").await;
    let victim = link_checkout(&w, &link, 1).await;
    let attacker = link_checkout(&w, &link, 2).await;
    assert_ne!(victim["amountDue"], attacker["amountDue"]);
    w.anvil.next_block_not_before_now().await;
    let tx = w.pay(units(victim["amountDue"].as_str().unwrap())).await;
    let stolen = w.submitted(&attacker, &tx).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &victim).await;
    assert_eq!(inv["payments"][0]["evidence"], "unique_amount");
    let p = w.payment_reaches(&stolen, "failed").await;
    assert_eq!(p["failureReason"], "attributed_to_another_checkout");
    assert_eq!(w.invoice(&attacker).await["customerAmountPaid"], "0.000000");

    // A victim overpays 30.50 on a 30.00 checkout and reports it; the attacker's 31.00
    // checkout reports it too. Two reports, no stronger evidence: held, nobody credited.
    let v = w.checkout("30.00").await;
    let a = w.checkout("31.00").await;
    let tx = w.pay(30_500_000).await;
    let theirs = w.submitted(&a, &tx).await;
    let mine = w.submitted(&v, &tx).await;
    w.anvil.finalize().await;
    for id in [&theirs, &mine] {
        assert_eq!(w.payment_reaches(id, "failed").await["failureReason"], "disputed");
    }
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!((record["reason"].as_str(), candidates(&record)), (Some("disputed"), ids(&[&v, &a])));
    for cs in [&v, &a] {
        assert_eq!(w.invoice(cs).await["customerAmountPaid"], "0.000000");
    }
}

#[tokio::test]
async fn an_unreported_top_up_of_the_remainder_is_found() {
    // Case 6: 30.01 of 73.00 paid and reported; the page then asks the remaining 42.99, which
    // the customer sends without reporting it.
    let w = World::new().await;
    w.unique_amounts();
    let cs = w.checkout("73.00").await;
    let first = w.submitted(&cs, &w.pay(30_010_000).await).await;
    w.anvil.finalize().await;
    w.payment_reaches(&first, "underpaid").await;
    let path = format!("/v1/public/checkout-sessions/{}", cs["id"].as_str().unwrap());
    let page = w.app.send(w.app.http.get(w.app.url(&path))).await.ok(200).clone();
    assert_eq!(page["amountDue"], "42.990000", "{page}");
    let top_up = w.pay(42_990_000).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    let found = inv["payments"].as_array().unwrap().iter().find(|p| p["transactionId"] == top_up.as_str()).unwrap();
    assert_eq!((found["status"].as_str(), found["evidence"].as_str()), (Some("confirmed"), Some("amount")));
    assert_eq!(inv["customerAmountPaid"], "73.000000");
}

#[tokio::test]
async fn a_transfer_recorded_then_credited_through_a_report_counts_once() {
    // Case 7: the follower records 150.50 as unattributed (the checkout asks 150.00); the
    // customer then reports it, and it is credited. Reconciliation counts it once.
    let w = World::new().await;
    let cs = w.checkout("150.00").await;
    let from = chrono::Utc::now() - chrono::Duration::minutes(5);
    let tx = w.pay(150_500_000).await;
    w.anvil.finalize().await;
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!(record["reason"], "no_matching_amount");
    let id = w.submitted(&cs, &tx).await;
    w.anvil.mine(1).await;
    let p = w.payment_reaches(&id, "overpaid").await;
    assert_eq!(p["amountReceived"], "150.500000");
    let path = format!("/v1/unattributed-transfers/{}", record["id"].as_str().unwrap());
    let now = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
    assert_eq!((now["status"].as_str(), now["paymentId"].as_str()), (Some("attributed"), Some(id.as_str())));
    let open = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
    assert!(open["items"].as_array().unwrap().is_empty(), "{open}");
    let to = chrono::Utc::now() + chrono::Duration::minutes(5);
    let enc =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true).replace('+', "%2B");
    let summary = w.app.get(&w.m.sk_live, &format!("/v1/reconciliation?from={}&to={}", enc(from), enc(to))).await;
    let usdc = summary.ok(200)["tokens"].as_array().unwrap().iter().find(|t| t["token"] == "USDC").unwrap().clone();
    assert_eq!(
        (usdc["collected"].as_str(), usdc["unattributedCount"].as_u64()),
        (Some("150.500000"), Some(0)),
        "{usdc}"
    );
    assert_eq!(usdc["unattributedTotal"], "0.000000");
}

#[tokio::test]
async fn a_link_holder_reporting_every_hash_disputes_nothing_a_binding_or_a_unique_amount_names() {
    let (w, link) = unique_amounts_and_a_fixed_link("Tea", "12.00").await;
    let bound = link_checkout(&w, &link, 1).await;
    let scanned = link_checkout(&w, &link, 2).await;
    let attacker = link_checkout(&w, &link, 3).await;
    bind(&w, &bound, &w.customer).await;
    w.anvil.next_block_not_before_now().await;
    let by_wallet = w.pay(units(bound["amountDue"].as_str().unwrap())).await;
    let by_scan =
        w.anvil.transfer(&w.token, &w.customer, &w.wallet, units(scanned["amountDue"].as_str().unwrap())).await;
    let mut claims = Vec::new();
    for tx in [&by_wallet, &by_scan] {
        claims.push(w.submitted(&attacker, tx).await);
    }
    w.anvil.finalize().await;
    assert_eq!(paid(&w, &w.m.sk_live, &bound).await["payments"][0]["evidence"], "bound_wallet");
    assert_eq!(paid(&w, &w.m.sk_live, &scanned).await["payments"][0]["evidence"], "unique_amount");
    for id in &claims {
        assert_eq!(w.payment_reaches(id, "failed").await["failureReason"], "attributed_to_another_checkout");
    }
    let all = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers?status=all").await.ok(200).clone();
    assert!(all["items"].as_array().unwrap().is_empty(), "nothing disputed or recorded: {all}");
    assert_eq!(invoice_of(&w, &w.m.sk_live, &attacker).await["status"], "pending");
}

#[tokio::test]
async fn a_person_attributes_a_recorded_transfer_only_where_it_can_pay() {
    let w = World::new().await;
    let twin_a = w.checkout("10.00").await;
    let twin_b = w.checkout("10.00").await;
    let tx = w.pay(10 * ONE).await;
    w.anvil.finalize().await;
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    assert_eq!(
        (record["reason"].as_str(), candidates(&record)),
        (Some("several_matching_checkouts"), ids(&[&twin_a, &twin_b]))
    );
    let id = record["id"].as_str().unwrap().to_owned();
    // Refusals change nothing: a reason is needed, the checkout must exist in this scope and
    // have been open at the transfer's block time.
    let path = format!("/v1/unattributed-transfers/{id}/attribute");
    let no_reason = w.app.post(&w.m.sk_live, &path, json!({ "checkoutSessionId": twin_a["id"] })).await;
    no_reason.assert_error(400, "VALIDATION_ERROR");
    let empty = w.app.post(&w.m.sk_live, &path, json!({ "checkoutSessionId": twin_a["id"], "reason": " " })).await;
    assert_eq!(empty.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("reason"));
    attribute(&w, &id, &json!({ "id": "cs_nothere" }), "x").await.assert_error(404, "NOT_FOUND");
    // Block times are whole seconds: a checkout made a second later came after the transfer.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let later = w.checkout("10.00").await;
    let refused = attribute(&w, &id, &later, "the wrong one").await;
    assert_eq!(refused.assert_error(409, "CHECKOUT_SESSION_NOT_PAYABLE").as_deref(), Some("checkoutSessionId"));
    assert_eq!(refused.body["error"]["details"]["reason"], "transfer_before_checkout");
    let test_cs = w.app.post(&w.m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10.00" })).await.ok(201).clone();
    attribute(&w, &id, &test_cs, "test").await.assert_error(409, "MODE_MISMATCH");
    w.app
        .post(&w.m.sk_test, &path, json!({ "checkoutSessionId": test_cs["id"], "reason": "x" }))
        .await
        .assert_error(404, "NOT_FOUND");
    // A restricted key needs payments:write.
    let reader = w.app.restricted_key(&w.m.id, "live", "payments:read");
    let r = w.app.post(&reader, &path, json!({ "checkoutSessionId": twin_a["id"], "reason": "x" })).await;
    r.assert_error(403, "PERMISSION_DENIED");
    let writer = w.app.restricted_key(&w.m.id, "live", "payments:write");
    for cs in [&twin_a, &twin_b] {
        assert_eq!(w.invoice(cs).await["customerAmountPaid"], "0.000000");
    }
    // Two people decide at once: one wins, the other is told.
    let (first, second) = tokio::join!(
        w.app.post(&writer, &path, json!({ "checkoutSessionId": twin_a["id"], "reason": "ticket 7" })),
        w.app.post(&w.m.sk_live, &path, json!({ "checkoutSessionId": twin_b["id"], "reason": "ticket 8" })),
    );
    let mut statuses = [first.status.as_u16(), second.status.as_u16()];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{:?} {:?}", first.body, second.body);
    let paid_count =
        [w.invoice(&twin_a).await, w.invoice(&twin_b).await].iter().filter(|i| i["collectionState"] == "paid").count();
    assert_eq!(paid_count, 1);
    let done = w.app.get(&w.m.sk_live, &format!("/v1/unattributed-transfers/{id}")).await.ok(200).clone();
    assert_eq!(done["status"], "attributed");
    assert!(!w.app.logs().contains("ERROR"), "{}", w.app.logs());
}

#[tokio::test]
async fn checkouts_of_one_invoice_asking_its_remainder_are_no_twins() {
    let w = World::new().await;
    let cs = w.checkout("20.00").await;
    let first = w.submitted(&cs, &w.pay(5 * ONE).await).await;
    w.anvil.finalize().await;
    w.payment_reaches(&first, "underpaid").await;
    let path = format!("/v1/invoices/{}/checkout-sessions", cs["invoiceId"].as_str().unwrap());
    let rest = w.app.post(&w.m.sk_live, &path, json!({})).await.ok(201).clone();
    assert_eq!(rest["amount"], "15.000000");
    // Both the first checkout and the remainder's ask 15.00 now: one invoice, so no dispute.
    let tx = w.pay(15 * ONE).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    let credited = inv["payments"].as_array().unwrap().iter().find(|p| p["transactionId"] == tx.as_str()).unwrap();
    assert_eq!(credited["checkoutSessionId"], rest["checkoutSessionId"]);
    eventually("no record", || async {
        let all = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers?status=all").await.ok(200).clone();
        all["items"].as_array().unwrap().is_empty().then_some(())
    })
    .await;
}

async fn diagnosis(w: &World, cs: &Value) -> Value {
    let path = format!("/v1/checkout-sessions/{}/diagnostics", cs["id"].as_str().unwrap());
    w.app.get(&w.m.sk_live, &path).await.ok(200).clone()
}

#[tokio::test]
async fn diagnostics_tell_where_the_money_went() {
    // Case 9: the merchant is told which checkout took a reported transfer, and which transfer
    // is held with which candidates; the expiry check shows the block's time.
    let w = World::new().await;
    let (a, b, _, on_b) = bound_twin_reported_on_the_other(&w).await;
    w.payment_reaches(&on_b, "failed").await;
    let credited = paid(&w, &w.m.sk_live, &a).await["payments"][0]["id"].as_str().unwrap().to_owned();
    let d = diagnosis(&w, &b).await;
    let step = d["nextStep"].as_str().unwrap();
    assert!(step.contains(a["id"].as_str().unwrap()) && step.contains(&credited), "{step}");
    assert!(step.contains("bound_wallet"), "{step}");
    let expiry =
        d["transfers"][0]["checks"].as_array().unwrap().iter().find(|c| c["name"] == "expiry").unwrap().clone();
    let mined = w.payment(&on_b).await["blockTime"].as_str().unwrap().to_owned();
    assert!(expiry["found"].as_str().unwrap().starts_with("mined "), "{expiry}");
    assert!(expiry["found"].as_str().unwrap().contains(&mined[..19]), "{expiry} {mined}");

    // Held: both checkouts' diagnoses name the transfer, and the other candidate.
    let x = w.checkout("40.00").await;
    let y = w.checkout("25.50").await;
    let tx = w.pay(25_500_000).await;
    let on_x = w.submitted(&x, &tx).await;
    w.anvil.finalize().await;
    w.payment_reaches(&on_x, "failed").await;
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    for (cs, other) in [(&x, &y), (&y, &x)] {
        let d = diagnosis(&w, cs).await;
        let step = d["nextStep"].as_str().unwrap();
        assert!(
            step.contains(record["id"].as_str().unwrap()) && step.contains(other["id"].as_str().unwrap()),
            "{step}"
        );
        assert!(step.contains("disputed") && step.contains(tx.as_str()), "{step}");
    }
    assert_eq!(diagnosis(&w, &x).await["phase"], "held");
    // Public routes never name another checkout.
    let path = format!("/v1/public/checkout-sessions/{}", x["id"].as_str().unwrap());
    let page = w.app.send(w.app.http.get(w.app.url(&path))).await.ok(200).clone();
    assert!(!page.to_string().contains(y["id"].as_str().unwrap()), "{page}");
}

#[tokio::test]
async fn a_payment_found_on_a_voided_invoice_is_reported_like_a_reported_one() {
    let w = World::new().await;
    let cs = w.checkout("8.00").await;
    let void = format!("/v1/invoices/{}/void", cs["invoiceId"].as_str().unwrap());
    w.app.post(&w.m.sk_live, &void, json!({ "reason": "order cancelled" })).await.ok(200);
    // Nobody reports it: the follower finds it.
    let tx = w.pay(8 * ONE).await;
    w.anvil.finalize().await;
    let p = eventually("the late payment recorded", || async {
        let inv = w.invoice(&cs).await;
        inv["payments"].as_array().unwrap().first().filter(|p| p["status"] == "confirmed").cloned()
    })
    .await;
    assert_eq!(p["transactionId"], tx.as_str());
    assert_eq!(w.invoice(&cs).await["collectionState"], "void");
    assert!(w.event_types().await.contains(&"invoice.payment_received_after_void".to_owned()));
}

#[tokio::test]
async fn a_transfer_a_little_older_than_its_checkout_pays_it_only_on_evidence_it_carries() {
    // The chain's clock runs behind the service's: a transfer mined 5 s before the checkout's
    // creation (by the service's clock) pays it on its unique amount, never on a bare report.
    let w = World::new().await;
    let latest = w.anvil.latest_block_time().await;
    while chrono::Utc::now().timestamp() < latest + 9 {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    w.unique_amounts();
    let unique = w.checkout("11.00").await;
    w.app.cli_ok(&["merchant", "unique-amounts", &w.m.id, "off", "--json"]);
    w.settled_on(false).await;
    let plain = w.checkout("13.00").await;
    let created = chrono::DateTime::parse_from_rfc3339(plain["createdAt"].as_str().unwrap()).unwrap().timestamp();
    w.anvil.set_next_block_time(created - 5).await;
    let by_amount = w.pay(units(unique["amountDue"].as_str().unwrap())).await;
    w.anvil.set_next_block_time(created - 4).await;
    let reported = w.pay(13 * ONE).await;
    assert!(w.anvil.block_time_of(&reported).await < created, "mined before the checkouts existed");
    let claim = w.submitted(&plain, &reported).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &unique).await;
    assert_eq!(
        (inv["payments"][0]["transactionId"].as_str(), inv["payments"][0]["evidence"].as_str()),
        (Some(by_amount.as_str()), Some("unique_amount"))
    );
    assert_eq!(w.payment_reaches(&claim, "failed").await["failureReason"], "transfer_before_checkout");
    // The service measures the difference and says it.
    let d = w.app.get(&w.m.sk_live, "/v1/diagnostics").await.ok(200).clone();
    let chain = d["entries"].as_array().unwrap().iter().find(|e| e["code"] == "chain").unwrap().clone();
    assert!(chain["message"].as_str().unwrap().contains("ahead of the chain"), "{chain}");
}

#[tokio::test]
async fn a_payment_waiting_for_finality_says_so_during_an_rpc_outage() {
    let mut w = World::new().await;
    let cs = w.checkout("4.00").await;
    let id = w.submitted(&cs, &w.pay(4 * ONE).await).await;
    w.payment_reaches(&id, "validating").await;
    w.proxy.cut();
    let p = eventually("a diagnostic", || async {
        let p = w.payment(&id).await;
        p["diagnostic"].is_string().then_some(p)
    })
    .await;
    assert_eq!(p["status"], "validating");
    assert!(p["diagnostic"].as_str().unwrap().contains("do not answer"), "{p}");
    w.proxy.restore().await;
    w.anvil.finalize().await;
    assert_eq!(w.payment_reaches(&id, "confirmed").await["diagnostic"], Value::Null);
}

/// A dashboard member's session on `w`'s service.
struct Member {
    token: String,
    csrf: String,
}

impl Member {
    async fn signed_in(w: &World, email: &str, role: &str) -> Self {
        let args = ["user", "create", "--email", email, "--merchant", &w.m.id, "--role", role, "--json"];
        let (ok, _, stderr) = w.app.cli_with_input(&args, &format!("{}\n", crate::dashboard::PASSWORD));
        assert!(ok, "{stderr}");
        let r = crate::dashboard::login(&w.app, email, crate::dashboard::PASSWORD).await;
        Self { token: crate::dashboard::token_of(&r), csrf: r.body["data"]["csrfToken"].as_str().unwrap().to_owned() }
    }

    async fn send(
        &self,
        w: &World,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> crate::support::Response {
        let mut req = w
            .app
            .http
            .request(method, w.app.url(path))
            .header("Cookie", format!("stablepay_session={}", self.token))
            .header("X-CSRF-Token", &self.csrf);
        if let Some(body) = body {
            req = req.json(&body);
        }
        w.app.send(req).await
    }
}

#[tokio::test]
async fn owners_and_admins_decide_in_the_dashboard_confirmed_with_their_password() {
    use reqwest::Method;
    let w = World::new().await;
    let owner = Member::signed_in(&w, "ada@example.com", "owner").await;
    let admin = Member::signed_in(&w, "carl@example.com", "admin").await;
    let support = Member::signed_in(&w, "sue@example.com", "support").await;
    let base = format!("/v1/dashboard/merchants/{}", w.m.id);

    // Unique amounts: admins and owners, never support.
    let setting = format!("{base}/unique-amounts");
    let r = support.send(&w, Method::PUT, &setting, Some(json!({ "enabled": true }))).await;
    r.assert_error(403, "AUTH_FORBIDDEN");
    let r = admin.send(&w, Method::PUT, &setting, Some(json!({ "enabled": true }))).await;
    assert_eq!(r.ok(200)["enabled"], true);
    let settlement = owner.send(&w, Method::GET, &format!("{base}/settlement"), None).await;
    assert_eq!(settlement.ok(200)["uniqueAmounts"], true);
    // A key's lookup (its merchant's live settlement) is cached per process and dropped when
    // the change's notification arrives: within moments (docs/ARCHITECTURE.md, the key cache).
    let asked_within_moments = |unique: bool| {
        let w = &w;
        async move {
            let mut due = String::new();
            for _ in 0..50 {
                due = w.checkout("5.00").await["amountDue"].as_str().unwrap_or_default().to_owned();
                if (due != "5.000000") == unique {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            }
            due
        }
    };
    assert_ne!(asked_within_moments(true).await, "5.000000");
    admin.send(&w, Method::PUT, &setting, Some(json!({ "enabled": false }))).await.ok(200);
    assert_eq!(asked_within_moments(false).await, "5.000000");
    let r = admin.send(&w, Method::PUT, &setting, Some(json!({ "enabled": "yes" }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("enabled"));

    // A held transfer, decided by the owner.
    let x = w.checkout("20.00").await;
    let y = w.checkout("20.00").await;
    let tx = w.pay(20 * ONE).await;
    w.anvil.finalize().await;
    let record = unattributed(&w, &w.m.sk_live, &tx, 0).await;
    let listed = support.send(&w, Method::GET, &format!("{base}/unattributed-transfers"), None).await;
    assert_eq!(listed.ok(200)["items"][0]["id"], record["id"]);
    let path = format!("{base}/unattributed-transfers/{}/attribute", record["id"].as_str().unwrap());
    let body = |password: &str| json!({ "checkoutSessionId": x["id"], "reason": "order 77", "password": password });
    support
        .send(&w, Method::POST, &path, Some(body(crate::dashboard::PASSWORD)))
        .await
        .assert_error(403, "AUTH_FORBIDDEN");
    owner.send(&w, Method::POST, &path, Some(body("wrong password"))).await.assert_error(401, "INVALID_CREDENTIALS");
    for cs in [&x, &y] {
        assert_eq!(w.invoice(cs).await["customerAmountPaid"], "0.000000");
    }
    let decided = owner.send(&w, Method::POST, &path, Some(body(crate::dashboard::PASSWORD))).await.ok(200).clone();
    assert_eq!(decided["status"], "attributed");
    let inv = paid(&w, &w.m.sk_live, &x).await;
    let entry =
        inv["activity"].as_array().unwrap().iter().find(|a| a["action"] == "transfer_attributed").unwrap().clone();
    assert_eq!(
        (entry["actor"].as_str(), entry["by"].as_str()),
        (Some("dashboard"), Some("ada@example.com")),
        "{entry}"
    );
    let log = owner.send(&w, Method::GET, &format!("{base}/audit-log"), None).await.ok(200).clone();
    let logged =
        log["items"].as_array().unwrap().iter().find(|e| e["action"] == "transfer.attributed").unwrap().clone();
    assert_eq!(logged["actorEmail"], "ada@example.com", "{logged}");
    assert_eq!(logged["target"], record["id"]);
}
