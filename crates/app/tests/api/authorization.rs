//! Attribution by construction (EIP-3009) against a real chain (anvil, chain 137, a test USDC
//! with `transferWithAuthorization` and `eip712Domain()`): a wallet payment attempt of a USDC
//! checkout answers the typed data to sign, with a nonce the service derived for the checkout;
//! the transfer the signed authorization makes pays that checkout, whoever reports it where and
//! whatever amount it moves.

use serde_json::{Value, json};

use crate::anvil::Anvil;
use crate::attribution::{invoice_of, paid, same_address};
use crate::live::{ONE, World, eventually};

/// The hosted page's wallet payment attempt of `wallet` on `cs`.
pub(crate) async fn attempt(w: &World, cs: &Value, wallet: &str) -> Value {
    let path = format!("/v1/public/checkout-sessions/{}/wallet-payment-attempts", cs["id"].as_str().unwrap());
    let body = json!({ "walletAddress": wallet, "chainId": 137 });
    w.app.send(w.app.http.post(w.app.url(&path)).json(&body)).await.ok(200).clone()
}

/// The customer signs `authorization`'s typed data (with `message` changed by `edit`) and sends
/// the call itself (paying the gas); answers the transaction's hash.
pub(crate) async fn sign_and_send(w: &World, authorization: &Value, edit: impl FnOnce(&mut Value)) -> String {
    let mut authorization = authorization.clone();
    edit(&mut authorization["typedData"]["message"]);
    let signature = w.anvil.sign_typed_data(&w.customer, &authorization["typedData"]).await;
    let data = Anvil::authorized_call(&authorization, &signature);
    let to = authorization["call"]["to"].as_str().unwrap().to_owned();
    w.anvil.send(&w.customer, Some(&to), &data, None).await
}

#[tokio::test]
async fn a_usdc_attempt_offers_the_typed_data_of_the_tokens_own_domain_and_its_transfer_pays_its_checkout() {
    let w = World::with_eip3009().await;
    let cs = w.checkout("10.00").await;
    let a = attempt(&w, &cs, &w.customer).await;
    // The plain transfer stays; the authorization comes beside it.
    assert_eq!(a["transaction"]["data"].as_str().unwrap().len(), 2 + 8 + 128);
    let auth = &a["authorization"];
    let typed = &auth["typedData"];
    assert_eq!(typed["primaryType"], "TransferWithAuthorization");
    assert_eq!(
        (typed["domain"]["name"].as_str(), typed["domain"]["version"].as_str(), typed["domain"]["chainId"].as_u64()),
        (Some("USD Coin"), Some("2"), Some(137))
    );
    assert!(same_address(&typed["domain"]["verifyingContract"], &w.token));
    let m = &typed["message"];
    assert!(same_address(&m["from"], &w.customer) && same_address(&m["to"], &w.wallet), "{m}");
    assert_eq!((m["value"].as_str(), m["validAfter"].as_str()), (Some("10000000"), Some("0")));
    let expires = chrono::DateTime::parse_from_rfc3339(cs["expiresAt"].as_str().unwrap()).unwrap().timestamp();
    assert_eq!(m["validBefore"].as_str().unwrap().parse::<i64>().unwrap(), expires);
    let nonce = m["nonce"].as_str().unwrap().to_owned();
    assert_eq!(nonce.len(), 66);
    assert_eq!(auth["call"]["selector"], "0xe3ee160e");
    // Another attempt gets another nonce; nobody can derive one without the service.
    let again = attempt(&w, &cs, &w.customer).await;
    assert_ne!(again["authorization"]["typedData"]["message"]["nonce"], nonce);

    let tx = sign_and_send(&w, auth, |_| {}).await;
    assert_eq!(w.anvil.receipt(&tx).await["status"], "0x1");
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["evidence"], "authorization", "{inv}");
    assert_eq!(inv["payments"][0]["transactionId"], tx);
}

#[tokio::test]
async fn a_transfer_its_nonce_names_pays_that_checkout_whoever_reports_it_where_and_whatever_it_moves() {
    let w = World::with_eip3009().await;
    // A asks 71.00; B asks exactly 27.77 (and its holder binds the same wallet).
    let a = w.checkout("71.00").await;
    let b = w.checkout("27.77").await;
    let auth = attempt(&w, &a, &w.customer).await["authorization"].clone();
    attempt(&w, &b, &w.customer).await;
    // The customer signs A's nonce for B's amount: the nonce says A.
    let tx = sign_and_send(&w, &auth, |m| m["value"] = json!((27_770_000u128).to_string())).await;
    // B's holder reports the hash on B before it is final.
    let reported = w.submitted(&b, &tx).await;
    w.anvil.finalize().await;
    let p = w.payment_reaches(&reported, "failed").await;
    assert_eq!(p["failureReason"], "attributed_to_another_checkout", "{p}");
    let credited = eventually("A credited", || async {
        let inv = invoice_of(&w, &w.m.sk_live, &a).await;
        (inv["payments"].as_array().is_some_and(|p| !p.is_empty())).then_some(inv)
    })
    .await;
    // Recorded as detected by the follower, then verified.
    let pay = w.payment_reaches(credited["payments"][0]["id"].as_str().unwrap(), "underpaid").await;
    assert_eq!(pay["evidence"], "authorization", "{pay}");
    assert_eq!(pay["customerAmountCredited"], "27.770000");
    let b_inv = invoice_of(&w, &w.m.sk_live, &b).await;
    assert_eq!(b_inv["collectionState"], "open", "B is not paid with A's customer's money: {b_inv}");
    // The same signed authorization again: the token refuses it (the nonce is used).
    let mut again = auth.clone();
    again["typedData"]["message"]["value"] = json!("27770000");
    let signature = w.anvil.sign_typed_data(&w.customer, &again["typedData"]).await;
    let call = json!({ "from": w.customer, "to": w.token, "data": Anvil::authorized_call(&again, &signature) });
    let refused = w.anvil.rpc_error("eth_call", json!([call, "latest"])).await;
    assert!(refused.contains("authorization is used"), "{refused}");
}

#[tokio::test]
async fn a_token_without_an_eip712_domain_gets_the_plain_transfer_only() {
    // The plain test token has neither `eip712Domain()` nor a DOMAIN_SEPARATOR: nothing is
    // assumed about it.
    let w = World::new().await;
    let cs = w.checkout("5.00").await;
    let a = attempt(&w, &cs, &w.customer).await;
    assert!(a["authorization"].is_null(), "{a}");
    assert!(a["transaction"]["data"].as_str().unwrap().starts_with("0xa9059cbb"));
    let tx = w.pay(5 * ONE).await;
    w.anvil.finalize().await;
    let inv = paid(&w, &w.m.sk_live, &cs).await;
    assert_eq!(inv["payments"][0]["evidence"], "bound_wallet");
    let _ = tx;
}
