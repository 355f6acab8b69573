//! Every curl example of docs/api-reference.md is run against the real server: an example may
//! meet a state its resource is not in (an invoice already issued, an id that has nothing yet),
//! but its request must never be refused as invalid input. Ids in paths are those the examples'
//! own creations answered.

use std::collections::HashMap;

use reqwest::Method;
use serde_json::Value;

use crate::support::{Merchant, TestApp};

/// One `curl` block: method, path (with `{placeholders}`), headers and body.
struct Example {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Option<String>,
}

fn examples(reference: &str) -> Vec<Example> {
    let mut out = Vec::new();
    for block in reference.split("```sh\n").skip(1) {
        let block = block.split("```").next().unwrap_or_default();
        let Some(first) = block.lines().next().and_then(|l| l.strip_prefix("curl -X ")) else { continue };
        let (method, rest) = first.split_once(' ').unwrap();
        let path = rest.trim_end_matches(" \\").trim_matches('"').trim_start_matches("$STABLEPAY_URL").to_owned();
        let mut example = Example { method: method.to_owned(), path, headers: Vec::new(), body: None };
        for line in block.lines().skip(1) {
            let line = line.trim().trim_end_matches(" \\");
            if let Some(h) = line.strip_prefix("-H \"").and_then(|h| h.strip_suffix('"')) {
                let (k, v) = h.split_once(": ").unwrap();
                example.headers.push((k.to_owned(), v.to_owned()));
            } else if let Some(d) = line.strip_prefix("-d '").and_then(|d| d.strip_suffix('\'')) {
                example.body = Some(d.to_owned());
            }
        }
        out.push(example);
    }
    out
}

/// Codes that say the input itself was wrong: an example must never meet them.
const INPUT_ERRORS: [&str; 9] = [
    "INVALID_TOTAL",
    "CURRENCY_MISMATCH",
    "CUSTOMER_EMAIL_REQUIRED",
    "FIELD_REQUIRED",
    "API_KEY_REQUIRED",
    "INVALID_API_KEY",
    "API_KEY_FORBIDDEN",
    "PUBLIC_KEY_FIELD_NOT_ALLOWED",
    "AMOUNT_OUT_OF_RANGE",
];

/// The value of the path's placeholder after `segment`, from what the creations answered.
/// Refusals about state no example can carry, on the field that says so: an authenticator's
/// code (it depends on the secret and the time), a verification the example user (made
/// verified by the CLI) does not need. Their bodies' shape is still checked: a malformed one is
/// refused before these fields are read. (An emailed link's token, which only the email has,
/// answers 404 NOT_FOUND, which is not a refusal of the input.)
const STATEFUL: [(&str, &str); 3] = [
    ("/v1/dashboard/two-factor/confirm", "otp"),
    ("/v1/dashboard/two-factor/disable", "otp"),
    ("/v1/dashboard/email-verifications", "email"),
];

fn fill(path: &str, ids: &HashMap<&'static str, String>) -> String {
    let mut out = Vec::new();
    let mut previous = "";
    for part in path.split('/') {
        let value = if part.starts_with('{') {
            let family = match (previous, part) {
                ("invoices", "{token}") => "token",
                ("payment-links", "{publicId}") => "public",
                (p, _) => match p {
                    "checkout-sessions" => "cs",
                    "invoices" => "invoice",
                    "payment-links" => "link",
                    "webhook-endpoints" => "endpoint",
                    "webhook-deliveries" => "delivery",
                    "events" => "event",
                    "webhook-incidents" => "incident",
                    "merchants" => "merchant",
                    _ => "other",
                },
            };
            ids.get(family).cloned().unwrap_or_else(|| "xyz_0000000000000000000000".to_owned())
        } else {
            part.to_owned()
        };
        previous = part;
        out.push(value);
    }
    out.join("/")
}

/// The reference's user, and the password every run gives it.
const USER: &str = "ada@example.com";
const PASSWORD: &str = "correct horse battery staple";

/// A fresh dashboard session of `user`: its token and CSRF token.
async fn signed_in(app: &TestApp, user: &str) -> (String, String) {
    let body = serde_json::json!({ "email": user, "password": PASSWORD });
    let r = app.send(app.http.post(app.url("/v1/dashboard/sessions")).json(&body)).await;
    let csrf = r.ok(201)["csrfToken"].as_str().unwrap().to_owned();
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    let token = cookie.split(';').next().unwrap().trim_start_matches("stablepay_session=").to_owned();
    (token, csrf)
}

/// Runs one example as `user` (the reference's `ada@example.com` replaced).
async fn run(
    app: &TestApp,
    (key, user): (&str, &str),
    example: &Example,
    ids: &HashMap<&'static str, String>,
) -> (u16, Value) {
    let path = fill(&example.path, ids);
    let method = Method::from_bytes(example.method.as_bytes()).unwrap();
    let mut req = app.http.request(method, app.url(&path));
    // Each session example its own session (a logout example ends it).
    let session = if example.headers.iter().any(|(_, v)| v.contains("$STABLEPAY_SESSION")) {
        Some(signed_in(app, user).await)
    } else {
        None
    };
    for (k, v) in &example.headers {
        let v = v.replace("$STABLEPAY_KEY", key);
        let v = match &session {
            Some((token, csrf)) => v.replace("$STABLEPAY_SESSION", token).replace("$STABLEPAY_CSRF", csrf),
            None => v,
        };
        // Each example its own key, so none replays another's answer.
        let v = if k == "Idempotency-Key" { format!("{v}-{}-{}", example.method, path.replace('/', "_")) } else { v };
        req = req.header(k.as_str(), v);
    }
    if let Some(body) = &example.body {
        req = req.body(body.replace(USER, user));
    }
    let res = req.send().await.unwrap();
    let status = res.status().as_u16();
    let text = res.text().await.unwrap_or_default();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// Records the ids a creation answered.
fn learn(example: &Example, data: &Value, ids: &mut HashMap<&'static str, String>) {
    let text = |v: &Value| v.as_str().map(str::to_owned);
    match (example.method.as_str(), example.path.as_str()) {
        ("POST", "/v1/checkout-sessions") => {
            ids.extend(text(&data["id"]).map(|v| ("cs", v)));
        }
        ("POST", "/v1/invoices") => {
            ids.extend(text(&data["id"]).map(|v| ("invoice", v)));
        }
        ("POST", "/v1/payment-links") => {
            ids.extend(text(&data["id"]).map(|v| ("link", v)));
            let public = data["url"].as_str().and_then(|u| u.rsplit('/').next()).map(str::to_owned);
            ids.extend(public.map(|v| ("public", v)));
        }
        ("POST", "/v1/webhook-endpoints") => {
            ids.extend(text(&data["id"]).map(|v| ("endpoint", v)));
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_example_of_the_api_reference_is_accepted_as_input() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Reference");
    let (refused, ids) = run_every_example(&app, &m, USER).await;
    assert!(refused.is_empty(), "examples refused as input:\n{}", refused.join("\n"));
    for family in ["cs", "invoice", "link", "public", "endpoint", "token", "event"] {
        assert!(ids.contains_key(family), "no {family} id was learned from the examples");
    }
}

/// Runs every example of the reference as merchant `m`, whose dashboard user `user` (created
/// here, an owner) the session examples sign in as; answers the examples refused as input and
/// the ids learned.
pub async fn run_every_example(
    app: &TestApp,
    m: &Merchant,
    user: &str,
) -> (Vec<String>, HashMap<&'static str, String>) {
    let reference =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/api-reference.md")).unwrap();
    let all = examples(&reference);
    assert!(all.len() > 40, "only {} examples found", all.len());
    let args = ["user", "create", "--email", user, "--merchant", &m.id, "--role", "owner"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    // Live mode's settings (unique amounts) exist once the merchant is activated.
    let wallet = "0x52908400098527886E0F7030069857D2E4169EE7";
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", wallet, "--token", "USDC", "--json"]);
    let mut ids: HashMap<&'static str, String> = HashMap::new();
    ids.insert("merchant", m.id.clone());
    // Creations first (paths without placeholders), then everything on what they created.
    let (plain, placed): (Vec<&Example>, Vec<&Example>) = all.iter().partition(|e| !e.path.contains('{'));
    let mut refused = Vec::new();
    for (round, list) in [plain, placed].into_iter().enumerate() {
        for example in list {
            let (status, body) = run(app, (&m.sk_test, user), example, &ids).await;
            let code = body["error"]["code"].as_str().unwrap_or_default().to_owned();
            let field = body["error"]["details"]["field"].as_str().unwrap_or_default();
            let stateful = STATEFUL.contains(&(example.path.as_str(), field));
            if !stateful && (status == 400 || INPUT_ERRORS.contains(&code.as_str()) || status == 401 || status == 403) {
                refused.push(format!("{} {}: {status} {body}", example.method, example.path));
            }
            learn(example, &body["data"], &mut ids);
        }
        if round == 0 {
            // The hosted invoice token of the checkout's invoice, and an event and a delivery.
            if let Some(cs) = ids.get("cs").cloned() {
                let session = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{cs}")).await.ok(200).clone();
                let invoice =
                    app.get(&m.sk_test, &format!("/v1/invoices/{}", session["invoiceId"].as_str().unwrap())).await;
                let url = invoice.ok(200)["hostedInvoiceUrl"].as_str().unwrap().to_owned();
                ids.insert("token", url.rsplit('/').next().unwrap().to_owned());
                // A paid checkout: events (and deliveries to the example's endpoint) to read.
                app.post(
                    &m.sk_test,
                    &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"),
                    serde_json::json!({}),
                )
                .await
                .ok(201);
            }
            let events = app.get(&m.sk_test, "/v1/events").await.ok(200).clone();
            ids.extend(events["items"][0]["id"].as_str().map(|v| ("event", v.to_owned())));
            let deliveries = app.get(&m.sk_test, "/v1/webhook-deliveries").await.ok(200).clone();
            ids.extend(deliveries["items"][0]["id"].as_str().map(|v| ("delivery", v.to_owned())));
        }
    }
    (refused, ids)
}
