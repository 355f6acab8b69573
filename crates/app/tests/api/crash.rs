//! The probe's crash scenario, for every keyed mutation family: 8 clients send keyed requests
//! as fast as they can, the server is killed with SIGKILL while they are in flight, restarted,
//! and every key sent is retried until it answers. No key may have produced two results: the
//! results that exist are exactly those the keys' answers name, one per key, and a key
//! answered before the kill answers the same after it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::support::{Merchant, TestApp, fresh_db};

const CLIENTS: usize = 8;
const ROUNDS: usize = 2;

/// Path and body of a family's request for a key.
type Request = Box<dyn Fn(&str) -> (String, Value) + Send + Sync>;

/// One family: how its keyed request is made, which id its answer names, and which results
/// exist.
struct Family {
    name: &'static str,
    /// Path and body of the request for `key` (the body may name the key).
    request: Request,
    /// Whether the route is public (no merchant key).
    public: bool,
    /// The id of the result a successful answer names.
    answer_id: fn(&Value) -> Option<String>,
}

fn env() -> Vec<(&'static str, String)> {
    vec![("STABLEPAY_IDEMPOTENCY_LEASE_SECONDS", "5".to_owned())]
}

/// The client a key's requests come from: public routes are limited per client address, so
/// each key of a public family has an address of its own on 127.0.0.0/8.
fn client_for(family: &Family, key: &str, shared: &reqwest::Client) -> reqwest::Client {
    if !family.public {
        return shared.clone();
    }
    let h = fxhash(key).to_be_bytes();
    let ip = std::net::Ipv4Addr::new(127, h[0] | 1, h[1], h[2] | 1);
    reqwest::Client::builder().local_address(std::net::IpAddr::V4(ip)).build().unwrap()
}

async fn send(app: &TestApp, m: &Merchant, family: &Family, key: &str) -> Option<(u16, Value)> {
    let (path, body) = (family.request)(key);
    let client = client_for(family, key, &app.http);
    let mut req = client.post(app.url(&path)).header("Idempotency-Key", key).json(&body);
    if !family.public {
        req = req.bearer_auth(&m.sk_test);
    }
    let res = req.timeout(Duration::from_secs(10)).send().await.ok()?;
    let status = res.status().as_u16();
    let body: Value = res.json().await.ok()?;
    Some((status, body))
}

/// Sends keyed requests from [`CLIENTS`] clients until the server dies; answers every key sent
/// and, for those answered, the id their answer named.
async fn load_then_kill(
    app: &mut TestApp,
    m: &Merchant,
    family: &Arc<Family>,
    round: usize,
) -> Vec<(String, Option<String>)> {
    let sent = Arc::new(Mutex::new(Vec::<(String, Option<String>)>::new()));
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut clients = Vec::new();
    for client in 0..CLIENTS {
        let (family, sent, stop) = (family.clone(), sent.clone(), stop.clone());
        let (base, http, merchant) = (app.base.clone(), app.http.clone(), m.clone());
        clients.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let key = format!("{}-r{round}-c{client}-{i}", family.name);
                i += 1;
                let (path, body) = (family.request)(&key);
                let client = client_for(&family, &key, &http);
                let mut req = client.post(format!("{base}{path}")).header("Idempotency-Key", &key).json(&body);
                if !family.public {
                    req = req.bearer_auth(&merchant.sk_test);
                }
                let answered = match req.timeout(Duration::from_secs(10)).send().await {
                    Ok(res) if res.status().is_success() => {
                        res.json::<Value>().await.ok().and_then(|b| (family.answer_id)(&b["data"]))
                    }
                    // Eight clients changing one invoice: a retryable conflict, left to `settle`.
                    Ok(res) if res.status().as_u16() == 409 => {
                        let body = res.text().await.unwrap_or_default();
                        assert!(body.contains("INVOICE_STATE_MISMATCH"), "{key}: {body}");
                        sent.lock().unwrap().push((key, None));
                        continue;
                    }
                    Ok(res) => panic!("{key}: {} {}", res.status(), res.text().await.unwrap_or_default()),
                    Err(_) => None,
                };
                let dead = answered.is_none();
                sent.lock().unwrap().push((key, answered));
                if dead {
                    return;
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(1200)).await;
    app.kill_and_restart(&env()).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for c in clients {
        c.await.unwrap();
    }
    Arc::try_unwrap(sent).unwrap().into_inner().unwrap()
}

/// Retries `key` until it has an answer (waiting out the lease of a claim its dead process held,
/// and, on a public route, its client's rate limit, as a client does).
async fn settle(app: &TestApp, m: &Merchant, family: &Family, key: &str) -> String {
    let give_up = std::time::Instant::now() + Duration::from_secs(120);
    while std::time::Instant::now() < give_up {
        let pause = match send(app, m, family, key).await {
            Some((status, body)) if (200..300).contains(&status) => {
                return (family.answer_id)(&body["data"]).unwrap_or_else(|| panic!("{key}: no id in {body}"));
            }
            Some((409, body))
                if body["error"]["details"]["reason"] == "in_progress"
                    || body["error"]["code"] == "INVOICE_STATE_MISMATCH" =>
            {
                200
            }
            Some((429, _)) if family.public => 2000,
            Some((status, body)) => panic!("{key}: {status} {body}"),
            None => 200,
        };
        tokio::time::sleep(Duration::from_millis(pause)).await;
    }
    panic!("{key} never answered")
}

/// Every id of a list, following its cursors.
async fn every_id(app: &TestApp, key: &str, path: &str, id_of: fn(&Value) -> Option<String>) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    let mut cursor: Option<String> = None;
    loop {
        let sep = if path.contains('?') { '&' } else { '?' };
        let mut url = format!("{path}{sep}limit=100");
        if let Some(c) = &cursor {
            url.push_str(&format!("&startingAfter={c}"));
        }
        let page = app.get(key, &url).await.ok(200).clone();
        for item in page["items"].as_array().unwrap() {
            ids.extend(id_of(item));
        }
        match page["nextCursor"].as_str() {
            Some(c) if page["hasMore"] == true => cursor = Some(c.to_owned()),
            _ => return ids,
        }
    }
}

/// Where the results of a family are listed.
enum Results {
    /// Every item of a list.
    List(String),
    /// The refund references of an invoice.
    Refunds(String),
}

async fn existing(app: &TestApp, m: &Merchant, results: &Results) -> BTreeSet<String> {
    match results {
        Results::List(path) => every_id(app, &m.sk_test, path, id).await,
        Results::Refunds(invoice) => {
            let inv = app.get(&m.sk_test, &format!("/v1/invoices/{invoice}")).await.ok(200).clone();
            inv["refundReferences"].as_array().unwrap().iter().filter_map(id).collect()
        }
    }
}

/// Runs the scenario for `family`, whose results are listed at `results`.
async fn no_key_twice(app: &mut TestApp, m: &Merchant, family: Family, results: Results) {
    let family = Arc::new(family);
    let before = existing(app, m, &results).await;
    let mut answers: BTreeMap<String, String> = BTreeMap::new();
    for round in 0..ROUNDS {
        let sent = load_then_kill(app, m, &family, round).await;
        assert!(sent.len() >= CLIENTS, "{}: only {} requests before the kill", family.name, sent.len());
        let unanswered = sent.iter().filter(|(_, id)| id.is_none()).count();
        assert!(unanswered > 0, "{}: the kill caught no request in flight", family.name);
        for (key, answered) in sent {
            let settled = settle(app, m, &family, &key).await;
            if let Some(first) = answered {
                assert_eq!(settled, first, "{}: {key} answered differently after the restart", family.name);
            }
            assert!(answers.insert(key.clone(), settled).is_none(), "{key} sent twice by the test");
        }
    }
    let named: BTreeSet<String> = answers.values().cloned().collect();
    assert_eq!(named.len(), answers.len(), "{}: two keys answered the same result", family.name);
    let now: BTreeSet<String> = existing(app, m, &results).await.difference(&before).cloned().collect();
    let extra: Vec<&String> = now.difference(&named).collect();
    let missing: Vec<&String> = named.difference(&now).collect();
    assert!(extra.is_empty(), "{}: {} results no answer names (duplicates): {extra:?}", family.name, extra.len());
    assert!(missing.is_empty(), "{}: answered results that do not exist: {missing:?}", family.name);
}

fn id(v: &Value) -> Option<String> {
    v["id"].as_str().map(str::to_owned)
}

fn invoice_id(v: &Value) -> Option<String> {
    v["invoiceId"].as_str().map(str::to_owned)
}

async fn app() -> (TestApp, Merchant) {
    let app = TestApp::spawn_with(fresh_db().await, &env(), &[]).await;
    let m = app.merchant("Crash");
    (app, m)
}

#[tokio::test]
async fn checkout_sessions_are_created_once_per_key_across_a_crash() {
    let (mut app, m) = app().await;
    let family = Family {
        name: "checkout",
        request: Box::new(|key| {
            ("/v1/checkout-sessions".into(), json!({ "amount": "1.00", "externalReference": key }))
        }),
        public: false,
        answer_id: invoice_id,
    };
    no_key_twice(&mut app, &m, family, Results::List("/v1/invoices".into())).await;
}

#[tokio::test]
async fn invoices_are_created_once_per_key_across_a_crash() {
    let (mut app, m) = app().await;
    let family = Family {
        name: "invoice",
        request: Box::new(|key| ("/v1/invoices".into(), json!({ "amount": "2.00", "externalReference": key }))),
        public: false,
        answer_id: id,
    };
    no_key_twice(&mut app, &m, family, Results::List("/v1/invoices".into())).await;
}

#[tokio::test]
async fn invoice_actions_run_once_per_key_across_a_crash() {
    let (mut app, m) = app().await;
    // A paid invoice: each keyed request records one refund reference of it.
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "100000.00" })).await.ok(201).clone();
    let cs_id = cs["id"].as_str().unwrap().to_owned();
    let paid = app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs_id}/payments"), json!({})).await;
    let payment = paid.ok(201)["id"].as_str().unwrap().to_owned();
    let invoice = cs["invoiceId"].as_str().unwrap().to_owned();
    let token = app.get(&m.sk_test, &format!("/v1/invoices/{invoice}")).await.ok(200)["currencyCode"].clone();
    let contract = match token.as_str() {
        Some("USDT") => "0xc2132D05D31c914a87C6611C10748AEb04B58e8F",
        _ => "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359",
    };
    let path = format!("/v1/invoices/{invoice}/refund-references");
    let family = Family {
        name: "refund",
        request: Box::new(move |key| {
            let hash = format!("0x{:064x}", u128::from_str_radix(&format!("{:x}", fxhash(key)), 16).unwrap_or(1));
            let body = json!({ "paymentId": payment, "amount": "0.01", "reason": key,
                "externalTransactionHash": hash, "chainId": 137, "tokenContract": contract });
            (path.clone(), body)
        }),
        public: false,
        answer_id: |v| v["adjustment"]["id"].as_str().map(str::to_owned),
    };
    no_key_twice(&mut app, &m, family, Results::Refunds(invoice)).await;
}

/// A stable 64-bit hash of a key (a distinct transaction hash per refund).
fn fxhash(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

#[tokio::test]
async fn payment_links_are_created_once_per_key_across_a_crash() {
    let (mut app, m) = app().await;
    let family = Family {
        name: "link",
        request: Box::new(|key| {
            ("/v1/payment-links".into(), json!({ "title": key, "amountType": "fixed", "amount": "3.00" }))
        }),
        public: false,
        answer_id: id,
    };
    no_key_twice(&mut app, &m, family, Results::List("/v1/payment-links".into())).await;
}

#[tokio::test]
async fn link_submissions_create_one_checkout_per_key_across_a_crash() {
    let (mut app, m) = app().await;
    let link = app
        .post(&m.sk_test, "/v1/payment-links", json!({ "title": "Tips", "amountType": "fixed", "amount": "4.00" }))
        .await
        .ok(201)
        .clone();
    let public = link["url"].as_str().unwrap().rsplit('/').next().unwrap().to_owned();
    let link_id = link["id"].as_str().unwrap().to_owned();
    let family = Family {
        name: "submission",
        request: Box::new(move |_| (format!("/v1/public/payment-links/{public}/checkout"), json!({ "version": 1 }))),
        public: true,
        answer_id: invoice_id,
    };
    no_key_twice(&mut app, &m, family, Results::List(format!("/v1/payment-links/{link_id}/payments"))).await;
}
