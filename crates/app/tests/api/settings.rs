//! Self-service settings against the real binary, emails through aiosmtpd: the settlement
//! wallet's rules and codes (each refusal changes nothing), its confirmation and the owners'
//! emails, live activation by request (approved by the operator) or at once where allowed, and
//! webhook incident alerts to the members who asked for them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::dashboard::{PASSWORD, login, owner, token_of};
use crate::emails::{Smtp, env as smtp_env, header};
use crate::receiver::{Receiver, Reply};
use crate::support::{Response, TestApp, fresh_db};

const WALLET: &str = "0x52908400098527886E0F7030069857D2E4169EE7";

struct Signed {
    token: String,
    csrf: String,
}

impl Signed {
    async fn as_user(app: &TestApp, email: &str) -> Self {
        let r = login(app, email, PASSWORD).await;
        Self { token: token_of(&r), csrf: r.body["data"]["csrfToken"].as_str().unwrap().to_owned() }
    }

    async fn send(&self, app: &TestApp, method: reqwest::Method, path: &str, body: Option<Value>) -> Response {
        let mut req = app
            .http
            .request(method, app.url(path))
            .header("Cookie", format!("stablepay_session={}", self.token))
            .header("X-CSRF-Token", &self.csrf);
        if let Some(body) = body {
            req = req.json(&body);
        }
        app.send(req).await
    }
}

async fn spawn(extra: &[(&'static str, &str)]) -> (Smtp, TestApp) {
    let smtp = Smtp::start().await;
    let mut env = smtp_env(&smtp);
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    (smtp, TestApp::spawn_with(fresh_db().await, &env, &[]).await)
}

fn member(app: &TestApp, merchant: &str, email: &str, role: &str) {
    let args = ["user", "create", "--email", email, "--merchant", merchant, "--role", role, "--json"];
    let (ok, _, stderr) = app.cli_with_input(&args, &format!("{PASSWORD}\n"));
    assert!(ok, "{stderr}");
}

#[tokio::test]
async fn the_settlement_wallet_is_checked_confirmed_told_to_owners_and_activated_on_request() {
    let (smtp, app) = spawn(&[]).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    member(&app, &m.id, "bob@example.com", "owner");
    member(&app, &m.id, "carl@example.com", "admin");
    let (ada, carl) = (Signed::as_user(&app, "ada@example.com").await, Signed::as_user(&app, "carl@example.com").await);
    let base = format!("/v1/dashboard/merchants/{}", m.id);
    let settlement = format!("{base}/settlement");
    let put = |body: Value| (reqwest::Method::PUT, format!("{base}/settlement-wallet"), Some(body));

    // No wallet yet: activation needs one.
    let r = ada.send(&app, reqwest::Method::POST, &format!("{base}/live-activation"), None).await;
    r.assert_error(422, "DEFAULT_WALLET_REQUIRED");
    // An admin may not change where money goes.
    let (method, path, body) = put(json!({ "wallet": WALLET, "token": "USDC", "password": PASSWORD }));
    carl.send(&app, method, &path, body).await.assert_error(403, "AUTH_FORBIDDEN");
    // Each refusal names its field and changes nothing.
    let usdc = "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359";
    let refusals = [
        (json!({ "wallet": "0x123", "token": "USDC", "password": PASSWORD }), 400, "INVALID_WALLET_ADDRESS", "wallet"),
        (
            json!({ "wallet": WALLET.replace('E', "e").replacen('e', "E", 1), "token": "USDC", "password": PASSWORD }),
            400,
            "INVALID_WALLET_ADDRESS",
            "wallet",
        ),
        (
            json!({ "wallet": "0x0000000000000000000000000000000000000000", "token": "USDC", "password": PASSWORD }),
            422,
            "UNSUPPORTED_DEFAULT_WALLET",
            "wallet",
        ),
        (
            json!({ "wallet": "0x0000000000000000000000000000000000000004", "token": "USDC", "password": PASSWORD }),
            422,
            "UNSUPPORTED_DEFAULT_WALLET",
            "wallet",
        ),
        (json!({ "wallet": usdc, "token": "USDC", "password": PASSWORD }), 422, "UNSUPPORTED_DEFAULT_WALLET", "wallet"),
        (json!({ "wallet": WALLET, "token": "DAI", "password": PASSWORD }), 400, "VALIDATION_ERROR", "token"),
        (json!({ "wallet": WALLET, "token": "USDC" }), 400, "VALIDATION_ERROR", "password"),
    ];
    for (body, status, code, field) in refusals {
        let (method, path, body) = put(body);
        let r = ada.send(&app, method, &path, body).await;
        assert_eq!(r.assert_error(status, code).as_deref(), Some(field), "{}", r.body);
    }
    let (method, path, body) = put(json!({ "wallet": WALLET, "token": "USDC", "password": "not the password at all" }));
    ada.send(&app, method, &path, body).await.assert_error(401, "INVALID_CREDENTIALS");
    let before = ada.send(&app, reqwest::Method::GET, &settlement, None).await.ok(200).clone();
    assert_eq!((before["live"].clone(), before["requested"].clone()), (Value::Null, Value::Null));

    // Set (all-lowercase input is taken and stored checksummed); both owners are told.
    let (method, path, body) = put(json!({ "wallet": WALLET.to_lowercase(), "token": "USDT", "password": PASSWORD }));
    let set = ada.send(&app, method, &path, body).await.ok(200).clone();
    assert_eq!((set["requested"]["wallet"].as_str(), set["requested"]["token"].as_str()), (Some(WALLET), Some("USDT")));
    assert_eq!((set["requested"]["at"].clone(), set["live"].clone()), (Value::Null, Value::Null));
    let mails = smtp.wait_for_within(2, Duration::from_secs(30)).await;
    let mut to: Vec<&str> = mails.iter().filter_map(|m| header(m, "To")).collect();
    to.sort_unstable();
    assert_eq!(to, ["ada@example.com", "bob@example.com"], "every owner, not the admin");
    assert!(mails.iter().all(|m| m.contains(WALLET) && m.contains("ada@example.com")));

    // The request waits for the operator, who approves it without retyping the wallet.
    let asked = ada.send(&app, reqwest::Method::POST, &format!("{base}/live-activation"), None).await.ok(200).clone();
    assert!(asked["requested"]["at"].is_string() && asked["live"].is_null(), "{asked}");
    let approved = app.cli_ok(&["merchant", "activate", &m.id, "--json"]);
    assert_eq!((approved["settlementWallet"].as_str(), approved["token"].as_str()), (Some(WALLET), Some("USDT")));
    let after = ada.send(&app, reqwest::Method::GET, &settlement, None).await.ok(200).clone();
    assert_eq!((after["live"]["wallet"].as_str(), after["requested"].clone()), (Some(WALLET), Value::Null));
    // Live checkouts now settle there.
    let cs = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "5.00" })).await.ok(201).clone();
    assert_eq!(cs["settlementWalletAddress"].as_str(), Some(WALLET), "{cs}");
    // Once active, a change moves the live settlement itself.
    let other = "0x8617E340B3D01FA5F11F306F4090FD50E238070D";
    let (method, path, body) = put(json!({ "wallet": other, "token": "USDC", "password": PASSWORD }));
    let moved = ada.send(&app, method, &path, body).await.ok(200).clone();
    assert_eq!((moved["live"]["wallet"].as_str(), moved["live"]["token"].as_str()), (Some(other), Some("USDC")));
    let log = ada.send(&app, reqwest::Method::GET, &format!("{base}/audit-log"), None).await.ok(200).clone();
    let actions: Vec<&str> = log["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    assert!(
        actions.contains(&"settlement_wallet.changed") && actions.contains(&"live_activation.requested"),
        "{actions:?}"
    );
}

#[tokio::test]
async fn where_the_operator_allows_it_an_owners_request_activates_at_once() {
    let (_smtp, app) = spawn(&[("STABLEPAY_SELF_ACTIVATION", "true")]).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let ada = Signed::as_user(&app, "ada@example.com").await;
    let base = format!("/v1/dashboard/merchants/{}", m.id);
    let body = json!({ "wallet": WALLET, "token": "USDC", "password": PASSWORD });
    ada.send(&app, reqwest::Method::PUT, &format!("{base}/settlement-wallet"), Some(body)).await.ok(200);
    let r = ada.send(&app, reqwest::Method::POST, &format!("{base}/live-activation"), None).await.ok(200).clone();
    assert_eq!((r["live"]["wallet"].as_str(), r["selfActivation"].as_bool()), (Some(WALLET), Some(true)));
    app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "5.00" })).await.ok(201);
}

#[tokio::test]
async fn an_incident_opening_and_resolving_is_emailed_to_the_members_who_asked() {
    let env = [
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true"),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms,200ms,200ms,200ms"),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000"),
    ];
    let (smtp, app) = spawn(&env).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    member(&app, &m.id, "dev@example.com", "developer");
    let dev = Signed::as_user(&app, "dev@example.com").await;
    let path = format!("/v1/dashboard/merchants/{}/notifications", m.id);
    let r = dev.send(&app, reqwest::Method::PUT, &path, Some(json!({ "webhookAlerts": true }))).await;
    assert_eq!(r.ok(200)["webhookAlerts"], true);

    let rx = Receiver::start().await;
    rx.answer(Reply::Status(500));
    let body = json!({ "url": rx.url("/hook"), "eventTypes": ["invoice.paid"] });
    let ep = app.post(&m.sk_test, "/v1/webhook-endpoints", body).await.ok(201).clone();
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "2.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);

    let opened = smtp.wait_for_within(1, Duration::from_secs(60)).await;
    assert_eq!(header(&opened[0], "To"), Some("dev@example.com"), "only the member who asked");
    assert!(header(&opened[0], "Subject").unwrap().contains("failing"), "{}", opened[0]);
    assert!(opened[0].contains(&rx.url("/hook")));

    // The receiver recovers; a replay resolves the incident, and that is told too.
    rx.answer(Reply::Status(204));
    let deliveries =
        app.get(&m.sk_test, &format!("/v1/webhook-deliveries?endpointId={}", ep["id"].as_str().unwrap())).await;
    let id = deliveries.ok(200)["items"][0]["id"].as_str().unwrap().to_owned();
    app.post_idem(&m.sk_test, &format!("/v1/webhook-deliveries/{id}/replay"), "replay-0001", json!({})).await.ok(202);
    let both = smtp.wait_for_within(2, Duration::from_secs(60)).await;
    assert!(both.iter().any(|m| header(m, "Subject").is_some_and(|s| s.contains("recovered"))), "{both:?}");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(smtp.messages().len(), 2, "each alert once");
}
