//! `GET /v1/reconciliation` against the real binary: a period's figures equal what the API's
//! own records say, discrepancies listed, the range rule, scoping by merchant and mode.

use serde_json::{Value, json};

use crate::exports::sync_rows;
use crate::live::{ONE, World, eventually};
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

fn rfc3339(unix: i64) -> String {
    chrono::DateTime::from_timestamp(unix, 0).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// Waits for the run to end; answers it.
async fn run_ends(w: &World, id: &str) -> Value {
    eventually(&format!("run {id} completed"), || async {
        let run = w.app.get(&w.m.sk_live, &format!("/v1/reconciliation-runs/{id}")).await.ok(200).clone();
        (run["status"] == "completed" || run["status"] == "failed").then_some(run)
    })
    .await
}

/// Every item of a run, following the cursors (pages of 2 to exercise them).
async fn items_of(w: &World, id: &str) -> Vec<Value> {
    let mut items = Vec::new();
    let mut after = String::new();
    loop {
        let path = format!("/v1/reconciliation-runs/{id}/items?limit=2{after}");
        let page = w.app.get(&w.m.sk_live, &path).await.ok(200).clone();
        items.extend(page["items"].as_array().unwrap().iter().cloned());
        if page["hasMore"] != true {
            return items;
        }
        after = format!("&startingAfter={}", page["nextCursor"].as_str().unwrap());
    }
}

/// A period on a real chain: exact, partial and overpaid payments, a transfer nothing could be
/// credited with, a transfer before the period and one reorganised away before finality. The
/// run reads the chain again and every transfer of the period ends matched or not credited,
/// amount for amount; nothing outside the period shows.
#[tokio::test]
async fn a_run_matches_every_transfer_of_the_period_with_the_books() {
    let w = World::new().await;
    // Before the period: a transfer into the wallet.
    let before = w.pay(ONE).await;
    let t0 = w.anvil.block_time_of(&before).await;
    let from = t0 + 5;
    // A transfer reported, then reorganised away before it was final.
    let lost_cs = w.checkout("6.00").await;
    let snapshot = w.anvil.snapshot().await;
    w.anvil.set_next_block_time(t0 + 10).await;
    let lost = w.submitted(&lost_cs, &w.pay(6 * ONE).await).await;
    w.payment_reaches(&lost, "validating").await;
    w.anvil.revert(snapshot).await;
    // The period's payments.
    w.anvil.set_next_block_time(t0 + 10).await;
    let exact_cs = w.checkout("10.00").await;
    let exact_tx = w.pay(10 * ONE).await;
    let exact = w.submitted(&exact_cs, &exact_tx).await;
    let part_cs = w.checkout("8.00").await;
    let part = w.submitted(&part_cs, &w.pay(3 * ONE).await).await;
    let over_cs = w.checkout("4.00").await;
    let over = w.submitted(&over_cs, &w.pay(4_750_000).await).await;
    let stray = w.pay(2_500_000).await;
    let last = w.anvil.block_time_of(&stray).await;
    let to = last + 5;
    w.anvil.set_next_block_time(last + 10).await;
    w.anvil.finalize().await;
    w.payment_reaches(&exact, "confirmed").await;
    w.payment_reaches(&part, "underpaid").await;
    w.payment_reaches(&over, "overpaid").await;
    assert_eq!(w.payment_reaches(&lost, "failed").await["failureReason"], "transaction_not_found");
    let unattributed = eventually("the stray transfer unattributed", || async {
        let list = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200).clone();
        list["items"].as_array().unwrap().iter().find(|u| u["transactionHash"] == stray.as_str()).cloned()
    })
    .await;

    let body = json!({ "from": rfc3339(from), "to": rfc3339(to) });
    let run = w.app.post_idem(&w.m.sk_live, "/v1/reconciliation-runs", "run-1", body.clone()).await.ok(202).clone();
    assert_eq!(
        (run["object"].as_str(), run["status"].as_str(), run["mode"].as_str()),
        (Some("reconciliation_run"), Some("queued"), Some("live"))
    );
    let again = w.app.post_idem(&w.m.sk_live, "/v1/reconciliation-runs", "run-1", body).await.ok(202).clone();
    assert_eq!(again["id"], run["id"]);
    let id = run["id"].as_str().unwrap();
    let run = run_ends(&w, id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["complete"], true, "{run}");
    assert_eq!(run["creditedElsewhere"], 0);
    assert_eq!(run["wallets"].as_array().unwrap().len(), 1);
    assert!(run["fromBlock"].as_u64().unwrap() <= run["toBlock"].as_u64().unwrap());
    assert!(run["toBlock"].as_u64().unwrap() <= run["finalBlock"].as_u64().unwrap());

    let items = items_of(&w, id).await;
    let seen: Vec<(String, String, Option<String>, Option<String>)> = items
        .iter()
        .map(|i| {
            (
                i["outcome"].as_str().unwrap().to_owned(),
                i["amountOnchain"].as_str().unwrap().to_owned(),
                i["amountCredited"].as_str().map(str::to_owned),
                i["paymentId"].as_str().map(str::to_owned),
            )
        })
        .collect();
    let s = |t: &str| Some(t.to_owned());
    assert_eq!(
        seen,
        vec![
            ("matched".into(), "10.000000".into(), s("10.000000"), s(&exact)),
            ("matched".into(), "3.000000".into(), s("3.000000"), s(&part)),
            ("matched".into(), "4.750000".into(), s("4.750000"), s(&over)),
            ("onchain_not_credited".into(), "2.500000".into(), None, None),
        ]
    );
    assert_eq!(items.iter().map(|i| i["line"].as_u64().unwrap()).collect::<Vec<_>>(), [1, 2, 3, 4]);
    assert_eq!(items[0]["transactionHash"], exact_tx.as_str());
    assert_eq!(items[0]["invoiceId"], exact_cs["invoiceId"]);
    assert_eq!(items[3]["unattributedTransferId"], unattributed["id"]);
    assert!(items.iter().all(|i| i["transactionHash"] != before.as_str()));
    let usdc = run["totals"].as_array().unwrap().iter().find(|t| t["token"] == "USDC").unwrap().clone();
    assert_eq!(
        usdc,
        json!({ "token": "USDC", "matched": 3, "onchainNotCredited": 1, "creditedNotOnchain": 0,
                "onchainTotal": "20.250000", "creditedTotal": "17.750000", "outOfRange": 0 })
    );
    // The outcome filter, and the list of runs.
    let odd =
        w.app.get(&w.m.sk_live, &format!("/v1/reconciliation-runs/{id}/items?outcome=onchain_not_credited")).await;
    assert_eq!(odd.ok(200)["items"].as_array().unwrap().len(), 1);
    let runs = w.app.get(&w.m.sk_live, "/v1/reconciliation-runs?status=completed").await.ok(200).clone();
    assert_eq!(runs["items"][0]["id"], id);

    // The run's items as the reconciliation.v1 CSV, and the unattributed transfers as theirs.
    let export =
        json!({ "type": "reconciliation", "from": rfc3339(from), "to": rfc3339(to), "filters": { "runId": id } });
    let rows = sync_rows(&w.app, &w.m.sk_live, &export).await;
    assert_eq!(rows[0][..3], ["line", "outcome", "currency_code"]);
    let outcomes: Vec<&str> = rows[1..].iter().map(|r| r[1].as_str()).collect();
    assert_eq!(outcomes, ["matched", "matched", "matched", "onchain_not_credited"]);
    assert_eq!(rows[1][9..11], ["10.000000", "10.000000"]);
    let now = chrono::Utc::now();
    let range = json!({ "type": "unattributed_transfers", "from": (now - chrono::Duration::hours(1)).to_rfc3339(),
        "to": (now + chrono::Duration::hours(1)).to_rfc3339() });
    let rows = sync_rows(&w.app, &w.m.sk_live, &range).await;
    let listed = w.app.get(&w.m.sk_live, "/v1/unattributed-transfers").await.ok(200)["items"].as_array().unwrap().len();
    assert_eq!(rows.len() - 1, listed);
    let hash = rows[0].iter().position(|h| h == "transaction_id").unwrap();
    let stray_row = rows[1..].iter().find(|r| r[hash] == stray).unwrap();
    assert_eq!(stray_row[rows[0].iter().position(|h| h == "amount").unwrap()], "2.500000");
    let other_run =
        json!({ "type": "reconciliation", "from": rfc3339(from), "to": rfc3339(to), "filters": { "runId": id } });

    // Test keys have no chain to read, and see no live run; other merchants see nothing.
    let period = json!({ "from": rfc3339(from), "to": rfc3339(to) });
    w.app.post(&w.m.sk_test, "/v1/reconciliation-runs", period).await.assert_error(422, "FEATURE_UNAVAILABLE");
    w.app.get(&w.m.sk_test, &format!("/v1/reconciliation-runs/{id}")).await.assert_error(409, "MODE_MISMATCH");
    let other = w.app.merchant("Other");
    w.app.get(&other.sk_live, &format!("/v1/reconciliation-runs/{id}")).await.assert_error(404, "NOT_FOUND");
    w.app.get(&other.sk_live, &format!("/v1/reconciliation-runs/{id}/items")).await.assert_error(404, "NOT_FOUND");
    w.app.post(&other.sk_live, "/v1/exports", other_run.clone()).await.assert_error(404, "NOT_FOUND");
    w.app.post(&w.m.sk_test, "/v1/exports", other_run).await.assert_error(404, "NOT_FOUND");
    let none = w.app.get(&other.sk_live, "/v1/reconciliation-runs").await.ok(200).clone();
    assert!(none["items"].as_array().unwrap().is_empty());
    let inactive = json!({ "from": rfc3339(from), "to": rfc3339(to) });
    w.app.post(&other.sk_live, "/v1/reconciliation-runs", inactive).await.assert_error(403, "ACTIVE_MERCHANT_REQUIRED");
    let backwards = json!({ "from": rfc3339(to), "to": rfc3339(from) });
    assert_eq!(
        w.app
            .post(&w.m.sk_live, "/v1/reconciliation-runs", backwards)
            .await
            .assert_error(400, "VALIDATION_ERROR")
            .as_deref(),
        Some("to")
    );
}

/// Case 8: a period holding a transfer of 2^200 base units completes (the amount listed apart,
/// never summed), and a transfer the follower never decided (its only endpoint hid it) is
/// decided by the run: credited to the checkout it pays.
#[tokio::test]
async fn a_run_completes_whatever_a_log_claims_and_decides_what_the_follower_never_did() {
    use std::sync::atomic::Ordering;
    let liar = crate::rpc_proxy::LyingRpc::start().await;
    let extra = [("STABLEPAY_CHAIN_RECHECK_SECONDS", "86400".to_owned())];
    let w = World::with_chain(&extra, |anvil, _| {
        liar.point_to(&anvil.url);
        vec![("STABLEPAY_CHAIN_RPC_URLS", liar.url())]
    })
    .await;
    let two_to_the_200 = crate::anvil::word_of_hex(&format!("1{}", "0".repeat(50)));
    w.anvil.mint_word(&w.token, &w.customer, &w.customer, &two_to_the_200).await;
    let cs = w.checkout("6.00").await;
    let ready =
        || async { w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["worker"]["follower"].clone() };
    eventually("the follower running", || async { (ready().await["state"] == "ok").then_some(()) }).await;
    // The only endpoint hides the period's transfers from the follower.
    liar.lies.hide_blooms.store(true, Ordering::SeqCst);
    liar.lies.empty_logs.store(u64::MAX, Ordering::SeqCst);
    w.anvil.next_block_not_before_now().await;
    let huge = w.anvil.transfer_word(&w.token, &w.customer, &w.wallet, &two_to_the_200).await;
    let from = w.anvil.block_time_of(&huge).await - 1;
    let paid_tx = w.pay(6 * ONE).await;
    let to = w.anvil.block_time_of(&paid_tx).await + 2;
    w.anvil.set_next_block_time(to + 5).await;
    // The follower is past the period when a pass after the one reading it has asked for logs
    // (passes run one after another; a lag of 0 alone may be the last pass's before the period).
    let asked = || liar.lies.logs_asked.load(Ordering::SeqCst);
    for what in ["the follower reading the period", "the follower past the period"] {
        let before = asked();
        w.anvil.finalize().await;
        eventually(what, || async { (asked() > before && ready().await["lagBlocks"] == 0).then_some(()) }).await;
    }
    assert_eq!(w.invoice(&cs).await["customerAmountPaid"], "0.000000", "the follower never saw it");
    liar.lies.empty_logs.store(0, Ordering::SeqCst);
    liar.lies.hide_blooms.store(false, Ordering::SeqCst);

    let body = json!({ "from": rfc3339(from), "to": rfc3339(to) });
    let run = w.app.post(&w.m.sk_live, "/v1/reconciliation-runs", body).await.ok(202).clone();
    let run = run_ends(&w, run["id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    let usdc = run["totals"].as_array().unwrap().iter().find(|t| t["token"] == "USDC").unwrap().clone();
    assert_eq!(
        (usdc["outOfRange"].as_u64(), usdc["onchainTotal"].as_str()),
        (Some(1), Some("6.000000")),
        "{run}; the huge transfer in block {} at {}, the payment in block {} at {}, the period {from}..{to}",
        w.anvil.receipt(&huge).await["blockNumber"],
        w.anvil.block_time_of(&huge).await,
        w.anvil.receipt(&paid_tx).await["blockNumber"],
        w.anvil.block_time_of(&paid_tx).await,
    );
    let items = items_of(&w, run["id"].as_str().unwrap()).await;
    let absurd = items.iter().find(|i| i["transactionHash"] == huge.as_str()).unwrap();
    assert_eq!(absurd["amountOnchain"], "1606938044258990275541962092341162602522202993782792835.301376");
    assert!(absurd["unattributedTransferId"].is_string(), "recorded by the run's decision: {absurd}");
    // The run handed the missed payment to the follower's rules: credited to its checkout.
    let inv = crate::attribution::paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], paid_tx.as_str());
    let summary = w
        .app
        .get(
            &w.m.sk_live,
            &format!(
                "/v1/reconciliation?from={}&to={}",
                urlencode(&rfc3339(from - 60)),
                urlencode(&rfc3339(to + 3600))
            ),
        )
        .await
        .ok(200)
        .clone();
    let usdc = summary["tokens"].as_array().unwrap().iter().find(|t| t["token"] == "USDC").unwrap().clone();
    assert_eq!(
        (usdc["unattributedOutOfRange"].as_u64(), usdc["unattributedTotal"].as_str()),
        (Some(1), Some("0.000000")),
        "{usdc}"
    );
}

#[tokio::test]
async fn every_live_merchant_gets_a_run_of_yesterday_on_its_own() {
    let w = World::new().await;
    let db = stablepay_test_db::connect(&w.app.db.url()).await;
    // Live since before today: yesterday is a day of its books.
    db.batch_execute(&format!(
        "UPDATE merchants SET live_activated_at = now() - interval '2 days' WHERE id = '{}'",
        w.m.id
    ))
    .await
    .unwrap();
    let today = chrono::Utc::now().date_naive().and_time(chrono::NaiveTime::MIN).and_utc();
    let run = eventually("the daily run", || async {
        let runs = w.app.get(&w.m.sk_live, "/v1/reconciliation-runs").await.ok(200).clone();
        runs["items"].as_array().unwrap().first().cloned()
    })
    .await;
    let at = |v: &Value| chrono::DateTime::parse_from_rfc3339(v.as_str().unwrap()).unwrap().with_timezone(&chrono::Utc);
    assert_eq!((at(&run["from"]), at(&run["to"])), (today - chrono::Duration::days(1), today), "{run}");
    let run = run_ends(&w, run["id"].as_str().unwrap()).await;
    assert_eq!(run["status"], "completed", "{run}");
    // Once a day: later passes queue nothing more.
    tokio::time::sleep(std::time::Duration::from_secs(12)).await;
    let runs = w.app.get(&w.m.sk_live, "/v1/reconciliation-runs").await.ok(200).clone();
    assert_eq!(runs["items"].as_array().unwrap().len(), 1, "{runs}");
}
