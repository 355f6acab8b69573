//! The hosted pages in a real browser: Debian's Chromium driven by playwright-core
//! (`tools/browser/pages.mjs`) against the real binary, with an axe-core pass on every page and
//! a 360 px screenshot of each in `target/screenshots/`. Test mode: a checkout paid half then
//! in full with the simulate buttons, an itemized invoice paid from its page, a payment link's
//! form refused for a missing field then accepted. Live mode: a checkout paid with an injected
//! EIP-1193 wallet that forwards to anvil, followed to "paid" by the page itself.

use std::path::PathBuf;
use tokio::process::Command;

use serde_json::{Value, json};

use crate::anvil::Anvil;
use crate::support::{TestApp, fresh_db};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Runs a plan of `tools/browser/pages.mjs`; panics with its output unless it succeeds. (Awaited,
/// not blocking: the runtime keeps draining the service's and anvil's output meanwhile.)
async fn drive(plan: Value) {
    drive_script("pages.mjs", plan).await;
}

/// Runs `script` of `tools/browser` with `plan`.
async fn drive_script(script: &str, plan: Value) {
    let tools = root().join("tools/browser");
    assert!(
        tools.join("node_modules/playwright-core").exists(),
        "tools/browser is not installed: run `cargo xtask ci` (or npm ci in tools/browser)"
    );
    let out = Command::new("node").arg(tools.join(script)).arg(plan.to_string()).output().await.expect("node");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "browser scenario failed:\n{text}");
    eprintln!("{text}");
}

fn shots() -> String {
    root().join("target/screenshots").to_string_lossy().into_owned()
}

#[tokio::test]
async fn test_mode_pages_work_in_a_real_browser() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Acme Coffee Roasters");
    let logo = app.set_logo(&m.id, &crate::support::png_image(240, 80));
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "84" })).await.ok(201).clone();
    let invoice = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            json!({
                "lines": [
                    { "description": "Consulting", "quantity": "2", "unitAmount": "50" },
                    { "description": "Espresso machine service", "quantity": "1", "unitAmount": "35.5" }
                ],
                "customer": { "name": "Ada Lovelace", "company": "Analytical Engines Ltd", "email": "ada@example.com",
                              "billingAddress": "12 St James's Square\nLondon" },
                "discount": { "type": "percentage", "percentage": "10" },
                "taxes": [{ "label": "VAT", "amount": "24.39", "jurisdiction": "UK", "registrationReference": "GB123456789" }],
                "dueAt": (chrono::Utc::now() + chrono::Duration::days(14)).to_rfc3339(),
                "paymentTerms": "Net 14",
                "memo": "Thanks for the order — café crème for everyone.",
                "footer": "Thank you for your business",
                "issue": true
            }),
        )
        .await
        .ok(201)
        .clone();
    let link = app
        .post(
            &m.sk_test,
            "/v1/payment-links",
            json!({ "title": "Coffee subscription", "description": "Choose what you pay.", "amountType": "customer_entered",
                    "minimumAmount": "5", "maximumAmount": "500", "collect": { "email": true } }),
        )
        .await
        .ok(201)
        .clone();
    drive(json!({
        "scenario": "test-pages",
        "checkoutUrl": cs["checkoutUrl"],
        "invoiceUrl": invoice["hostedInvoiceUrl"],
        "linkUrl": link["url"],
        "logo": format!("/logos/{logo}.png"),
        "shots": shots(),
    }))
    .await;
    // What the browser did is what the service recorded.
    let paid =
        app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(paid["collectionState"], "paid");
    assert_eq!(paid["customerAmountPaid"], "84.000000");
    let through = app.get(&m.sk_test, &format!("/v1/payment-links/{}/payments", link["id"].as_str().unwrap())).await;
    let items = through.ok(200)["items"].as_array().unwrap().clone();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0]["customer"]["email"], "ada@example.com");
}

/// A chain with the service's USDC (`eip3009`: the test USDC with transferWithAuthorization,
/// else the plain test token), a customer holding some, and a merchant activated for live mode:
/// the chain, the service, the merchant and the customer's address.
/// A live checkout of 12.5 of `m` paid in the browser by `payer`'s injected wallet on `anvil`
/// (`typed_data`: how the wallet meets the page's typed data: signed, unsupported, relayed);
/// answers its invoice as it stands after the page says paid.
async fn paid_in_the_page(
    anvil: &Anvil,
    (app, m): (&TestApp, &crate::support::Merchant),
    payer: &str,
    typed_data: &str,
) -> Value {
    let cs = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "12.5" })).await.ok(201).clone();
    drive(json!({
        "scenario": "live-wallet",
        "checkoutUrl": cs["checkoutUrl"],
        "anvilUrl": format!("http://127.0.0.1:{}", anvil.port),
        "payer": payer,
        "wallet": cs["settlementWalletAddress"],
        "typedData": typed_data,
        "shots": shots(),
    }))
    .await;
    app.get(&m.sk_live, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone()
}

async fn live_shop(eip3009: bool) -> (Anvil, TestApp, crate::support::Merchant, String) {
    live_shop_with(eip3009, false).await
}

/// [`live_shop`], with the service's gasless relayer when `relayer` (anvil's last account).
async fn live_shop_with(eip3009: bool, relayer: bool) -> (Anvil, TestApp, crate::support::Merchant, String) {
    let anvil = Anvil::start(137).await;
    let accounts = anvil.accounts().await;
    let (deployer, wallet, customer) = (accounts[0].clone(), accounts[1].clone(), accounts[2].clone());
    let token = if eip3009 { anvil.deploy_usdc(&deployer).await } else { anvil.deploy_token(&deployer).await };
    anvil.mint(&token, &deployer, &customer, 1_000 * 1_000_000).await;
    let mut env = vec![
        ("STABLEPAY_CHAIN_RPC_URLS", format!("http://127.0.0.1:{}", anvil.port)),
        ("STABLEPAY_USDC_CONTRACT", token),
        ("STABLEPAY_CHAIN_POLL_MS", "100".to_owned()),
    ];
    if relayer {
        env.push(("STABLEPAY_RELAYER_KEY", anvil.private_key(9).to_owned()));
    }
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Acme Coffee Roasters");
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &wallet, "--token", "USDC", "--json"]);
    (anvil, app, m, customer)
}

#[tokio::test]
async fn a_live_checkout_is_paid_with_a_browser_wallet() {
    let (anvil, app, m, customer) = live_shop(false).await;
    let cs = app.post(&m.sk_live, "/v1/checkout-sessions", json!({ "amount": "12.5" })).await.ok(201).clone();
    let settlement = cs["settlementWalletAddress"].as_str().unwrap().to_owned();
    drive(json!({
        "scenario": "live-wallet",
        "checkoutUrl": cs["checkoutUrl"],
        "anvilUrl": format!("http://127.0.0.1:{}", anvil.port),
        "payer": customer,
        "wallet": settlement,
        "shots": shots(),
    }))
    .await;
    let inv = app.get(&m.sk_live, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    assert_eq!(inv["collectionState"], "paid");
    assert_eq!(inv["payments"][0]["payer"]["address"].as_str().unwrap().to_lowercase(), customer.to_lowercase());
}

/// A USDC checkout paid by EIP-3009 authorization through the page: the injected wallet signs
/// the service's typed data and sends `transferWithAuthorization`, and the payment's evidence is
/// the authorization; a wallet that cannot sign typed data pays the plain transfer instead.
#[tokio::test]
async fn a_usdc_checkout_is_paid_by_authorization_or_by_the_plain_transfer_with_a_browser_wallet() {
    let (anvil, app, m, customer) = live_shop(true).await;
    app.cli_ok(&["merchant", "unique-amounts", &m.id, "off", "--json"]);
    for (typed_data, evidence) in [("signed", "authorization"), ("unsupported", "bound_wallet")] {
        let inv = paid_in_the_page(&anvil, (&app, &m), &customer, typed_data).await;
        assert_eq!(inv["collectionState"], "paid", "{typed_data}");
        assert_eq!(inv["payments"][0]["evidence"], evidence, "{typed_data}: {inv}");
    }
}

/// A customer holding USDC but no POL pays through the page with the service's relayer: the
/// injected wallet only signs the typed data, the page hands the signature to the service, and
/// the relayer's transaction (not the customer's) pays the checkout by its nonce.
#[tokio::test]
async fn a_customer_without_gas_pays_a_usdc_checkout_through_the_relayer_with_a_browser_wallet() {
    let (anvil, app, m, customer) = live_shop_with(true, true).await;
    app.cli_ok(&["merchant", "unique-amounts", &m.id, "off", "--json"]);
    anvil.rpc("anvil_setBalance", json!([customer, "0x0"])).await;
    let inv = paid_in_the_page(&anvil, (&app, &m), &customer, "relayed").await;
    assert_eq!(inv["collectionState"], "paid", "{inv}");
    assert_eq!(inv["payments"][0]["evidence"], "authorization", "{inv}");
    let tx = anvil.rpc("eth_getTransactionByHash", json!([inv["payments"][0]["transactionId"]])).await;
    assert_eq!(
        tx["from"].as_str().unwrap().to_lowercase(),
        anvil.address(9).to_lowercase(),
        "the relayer sent it: {tx}"
    );
    assert_eq!(
        anvil.rpc("eth_getBalance", json!([customer, "latest"])).await,
        json!("0x0"),
        "the customer paid no gas"
    );
}

/// The emails customers receive, rendered by Chromium: an invoice (long names, a long line) and
/// a receipt, linted and checked at 360 and 800 px.
#[tokio::test]
async fn emails_render_in_a_browser_engine_without_sideways_scroll() {
    let dir = crate::emails::tempdir::Dir::new("stablepay-email-render");
    let env = [
        ("STABLEPAY_EMAIL_DIR", dir.0.to_string_lossy().into_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Acme Coffee Roasters and Sons International Trading Company");
    app.cli_ok(&[
        "merchant",
        "profile",
        &m.id,
        "--legal-name",
        "Acme Coffee Roasters Ltd",
        "--postal-address",
        "1 Long Street\\nLondon",
        "--support-email",
        "help@acme.example",
        "--json",
    ]);
    app.set_logo(&m.id, &crate::support::png_image(1000, 100));
    let body = |issue: bool| {
        json!({
            "lines": [
                { "description": "A very long line description that goes on and on: Supercalifragilisticexpialidocious-espresso-blend-number-one", "quantity": "12", "unitAmount": "1234567.89" },
                { "description": "Milk", "quantity": "1", "unitAmount": "2" }
            ],
            "customer": { "name": "Ada Lovelace", "email": "ada@example.com" },
            "issue": issue
        })
    };
    let mut ids = Vec::new();
    for paid in [false, true] {
        let inv = app.post(&m.sk_test, "/v1/invoices", body(true)).await.ok(201).clone();
        let id = inv["id"].as_str().unwrap().to_owned();
        if paid {
            let cs = inv["checkoutSessions"][0]["id"].as_str().unwrap();
            app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await.ok(201);
        }
        let queued = app.post(&m.sk_test, &format!("/v1/invoices/{id}/send"), json!({})).await.ok(202).clone();
        ids.push(queued["id"].as_str().unwrap().to_owned());
    }
    let mut htmls = Vec::new();
    for id in &ids {
        let file = dir.0.join(format!("{id}.eml"));
        for _ in 0..100 {
            if file.exists() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let message = std::fs::read_to_string(&file).unwrap();
        htmls.push(crate::emails::part(&message, "text/html"));
    }
    assert!(htmls[1].contains("Thank you for your payment"), "the second is a receipt");
    drive(json!({ "scenario": "emails", "htmls": htmls, "shots": shots() })).await;
}

/// The dashboard in a real browser, at 360 px: someone signs up (open sign-up) and turns on
/// two-factor login, then signs in again with a recovery code; an owner signs in, makes a draft
/// with lines, a discount and a tax, issues and sends it (the email arrives through SMTP), opens
/// a checkout that the customer pays on the hosted page, sees it on the overview, adds a refund
/// reference, voids another invoice (an empty reason refused first), makes a payment link that
/// a customer pays, makes and revokes a restricted key, runs and downloads an export, adds a
/// webhook endpoint whose receiver fails (503) and replays the delivery once it answers, reads
/// a payment's diagnosis and the audit log, sees nothing of test mode in live mode, and signs
/// out; a support member and a viewer are offered only what their roles allow.
#[tokio::test]
async fn the_dashboard_works_in_a_real_browser() {
    let smtp = crate::emails::Smtp::start().await;
    let mut env = crate::emails::env(&smtp);
    env.extend([
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
        ("STABLEPAY_SIGNUP", "open".to_owned()),
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "1h".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "2000".to_owned()),
    ]);
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Acme Coffee Roasters");
    crate::dashboard::owner(&app, &m, "ada.owner@example.com");
    for (email, role) in [("vera@example.com", "viewer"), ("sam@example.com", "support")] {
        let args = ["user", "create", "--email", email, "--merchant", &m.id, "--role", role];
        assert!(app.cli_with_input(&args, &format!("{}\n", crate::dashboard::PASSWORD)).0);
    }
    // The receiver fails the first delivery, then answers 200 (the "fix").
    let receiver = crate::receiver::Receiver::start().await;
    receiver.answer(crate::receiver::Reply::Status(200));
    receiver.queue(crate::receiver::Reply::Status(503));
    let body = json!({ "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": "4" }], "issue": true });
    let to_void = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201)["id"].as_str().unwrap().to_owned();
    drive_script(
        "dashboard.mjs",
        json!({
            "base": app.base,
            "merchant": m.id,
            "owner": "ada.owner@example.com",
            "viewer": "vera@example.com",
            "support": "sam@example.com",
            "signup": "grace@example.com",
            "receiver": receiver.url("/hook"),
            "password": crate::dashboard::PASSWORD,
            "toVoid": to_void,
            "shots": shots(),
        }),
    )
    .await;
    // What the browser did is what the service recorded.
    let items = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"].as_array().unwrap().clone();
    let made = items.iter().find(|i| i["total"] == "146.340000").expect("the draft made in the browser");
    assert_eq!(made["collectionState"], "paid");
    let through_link = items.iter().find(|i| i["total"] == "9.500000").expect("the payment link's invoice");
    assert_eq!(through_link["collectionState"], "paid");
    assert_eq!(made["refundReferences"].as_array().map(Vec::len), Some(1));
    let voided = items.iter().find(|i| i["id"] == to_void.as_str()).unwrap();
    assert_eq!(
        (voided["collectionState"].as_str(), voided["closeReason"].as_str()),
        (Some("void"), Some("Ordered twice"))
    );
    let keys = app.cli_ok(&["key", "list", "--merchant", &m.id, "--json"]);
    let restricted: Vec<&Value> =
        keys["keys"].as_array().unwrap().iter().filter(|k| !k["permissions"].is_null()).collect();
    assert_eq!(restricted.len(), 1);
    assert!(restricted[0]["revokedAt"].is_string(), "the restricted key was revoked: {keys}");
    assert_eq!(receiver.received().len(), 2, "the failed delivery and its replay");
    let mail = smtp.wait_for_within(1, std::time::Duration::from_secs(20)).await;
    let number = made["invoiceNumber"].as_str().unwrap();
    assert!(mail.iter().any(|m| m.contains("ada@example.com") && m.contains(number)), "the invoice email arrived");
}
