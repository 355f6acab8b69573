//! The follower never skips a block (anvil, chain 137, behind a JSON-RPC endpoint that lies as
//! a load-balanced provider does near the head): an empty `eth_getLogs` answer is trusted only
//! where the block's bloom rules out a watched transfer, the next endpoint is asked where it
//! does not, a lone endpoint is asked again, and every range is read a second time later.

use std::sync::atomic::Ordering;

use serde_json::Value;

use crate::attribution::paid;
use crate::live::{ONE, World, eventually};
use crate::rpc_proxy::LyingRpc;

async fn follower(w: &World) -> Value {
    w.app.send(w.app.http.get(w.app.url("/readyz"))).await.ok(200)["worker"]["follower"].clone()
}

async fn metric(w: &World, name: &str) -> Option<i64> {
    let text = reqwest::get(format!("{}/metrics", w.app.metrics)).await.ok()?.text().await.ok()?;
    text.lines().find_map(|l| l.strip_prefix(&format!("{name} "))?.parse().ok())
}

#[tokio::test]
async fn an_endpoint_answering_nothing_for_a_range_it_has_not_indexed_never_loses_the_payment() {
    // Case 1: the first endpoint answers `eth_getLogs` with `[]` for every range; the second
    // tells the truth. The customer's exact, final payment is credited all the same.
    let liar = LyingRpc::start().await;
    liar.lies.empty_logs.store(u64::MAX, Ordering::SeqCst);
    let w = World::with_chain(&[], |anvil, proxy| {
        liar.point_to(&anvil.url);
        vec![("STABLEPAY_CHAIN_RPC_URLS", format!("{},http://127.0.0.1:{proxy}", liar.url()))]
    })
    .await;
    let cs = w.checkout("12.00").await;
    w.anvil.next_block_not_before_now().await;
    let tx = w.pay(12 * ONE).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(
        (inv["payments"][0]["transactionId"].as_str(), inv["payments"][0]["evidence"].as_str()),
        (Some(tx.as_str()), Some("amount"))
    );
    // The liar was asked, and the disagreement is counted.
    let asked = liar.lies.logs_asked.load(Ordering::SeqCst);
    assert!(asked > 0);
    let f = eventually("the disagreement shown", || async {
        let f = follower(&w).await;
        (f["disagreements"].as_u64() > Some(0)).then_some(f)
    })
    .await;
    assert_eq!(f["state"], "ok", "{f}");
    assert!(metric(&w, "stablepay_chain_follow_disagreements_total").await > Some(0));
}

#[tokio::test]
async fn a_lone_endpoint_that_answers_nothing_at_first_is_asked_again_before_the_cursor_moves() {
    let liar = LyingRpc::start().await;
    let w = World::with_chain(&[], |anvil, _| {
        liar.point_to(&anvil.url);
        vec![("STABLEPAY_CHAIN_RPC_URLS", liar.url())]
    })
    .await;
    let cs = w.checkout("7.00").await;
    // Wait for the follower to be past its first steps, then make the only endpoint lag.
    eventually("the follower running", || async { (follower(&w).await["state"] == "ok").then_some(()) }).await;
    let lies = liar.lies.clone();
    lies.empty_logs.store(4, Ordering::SeqCst);
    w.anvil.next_block_not_before_now().await;
    let tx = w.pay(7 * ONE).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx.as_str());
    assert_eq!(lies.empty_logs.load(Ordering::SeqCst), 0, "every lie was told, and the range was asked again");
}

#[tokio::test]
async fn the_second_reading_finds_what_an_endpoint_hid_from_the_first() {
    // An endpoint that hides both the logs and the blooms: the first reading cannot tell. The
    // second reading, a few seconds later, finds the payment and credits it.
    let liar = LyingRpc::start().await;
    let extra = [("STABLEPAY_CHAIN_RECHECK_SECONDS", "3".to_owned())];
    let w = World::with_chain(&extra, |anvil, _| {
        liar.point_to(&anvil.url);
        vec![("STABLEPAY_CHAIN_RPC_URLS", liar.url())]
    })
    .await;
    let cs = w.checkout("9.50").await;
    eventually("the follower running", || async { (follower(&w).await["state"] == "ok").then_some(()) }).await;
    let lies = liar.lies.clone();
    lies.hide_blooms.store(true, Ordering::SeqCst);
    lies.empty_logs.store(u64::MAX, Ordering::SeqCst);
    w.anvil.next_block_not_before_now().await;
    let tx = w.pay(9_500_000).await;
    w.anvil.finalize().await;
    // The first reading passed the block: nothing found, nothing credited.
    eventually("the first reading past the block", || async {
        let f = follower(&w).await;
        (f["lagBlocks"] == 0 && f["rechecksPending"].as_u64() > Some(0)).then_some(())
    })
    .await;
    assert_eq!(w.invoice(&cs).await["customerAmountPaid"], "0.000000");
    // The endpoint catches up; the second reading finds what the first missed.
    lies.empty_logs.store(0, Ordering::SeqCst);
    lies.hide_blooms.store(false, Ordering::SeqCst);
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["transactionId"], tx.as_str());
    let f = eventually("the finding counted", || async {
        let f = follower(&w).await;
        (f["secondPassFound"].as_u64() >= Some(1)).then_some(f)
    })
    .await;
    assert!(f["clockSkewSeconds"].is_i64(), "{f}");
    assert!(metric(&w, "stablepay_chain_second_pass_found_total").await >= Some(1));
}
