//! The document and the validators cannot drift: for every rule the served OpenAPI document
//! states on a request body (lengths, byte limits, item counts, ranges, enums, amount patterns),
//! a request just inside it is accepted and one just outside is refused with the field named
//! and the code the error table gives for it. The rules are read from the document itself, so a
//! rule added there is tested here without a change to this file.

use regex::Regex;
use serde_json::{Value, json};

use crate::support::{Merchant, TestApp};

/// The operations walked, each with a minimal valid body (every other field is optional).
fn operations() -> Vec<(&'static str, Value)> {
    vec![
        ("/v1/checkout-sessions", json!({ "amount": "5" })),
        // Two lines, so that a first line of zero still leaves a positive total.
        (
            "/v1/invoices",
            json!({ "lines": [
                { "description": "x", "quantity": "1", "unitAmount": "1" },
                { "description": "y", "quantity": "1", "unitAmount": "1" },
            ] }),
        ),
        ("/v1/payment-links", json!({ "title": "t", "amountType": "fixed", "amount": "5" })),
        ("/v1/webhook-endpoints", json!({ "url": "https://hooks.example.com/in" })),
    ]
}

/// The status and code a refusal of `field` carries (the error table of docs/api.md).
fn code_for(field: &str) -> (u16, &'static str) {
    let last = field.rsplit('.').next().unwrap_or(field);
    if last.ends_with("mount") || last == "quantity" {
        (400, "INVALID_AMOUNT")
    } else if last.ends_with("xpiresInMinutes") {
        (400, "INVALID_EXPIRY")
    } else if last == "currencyCode" {
        // Any token but the mode's settlement token, listed or not.
        (422, "CURRENCY_MISMATCH")
    } else {
        (400, "VALIDATION_ERROR")
    }
}

fn resolve<'a>(doc: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => doc.pointer(&r.replacen('#', "", 1)).expect("a resolvable $ref"),
        None => match schema.get("oneOf").and_then(Value::as_array) {
            // `T | null`: the T.
            Some(options) => {
                options.iter().find(|o| o.get("type") != Some(&json!("null"))).map_or(schema, |o| resolve(doc, o))
            }
            None => schema,
        },
    }
}

/// One request to try: the body with `value` at `path`, and whether the document allows it.
struct Case {
    field: String,
    value: Value,
    allowed: bool,
    rule: String,
}

/// Values at the edges of each rule of `property`.
fn edges(field: &str, property: &Value, cases: &mut Vec<Case>) {
    let mut add = |value: Value, allowed: bool, rule: String| {
        cases.push(Case { field: field.to_owned(), value, allowed, rule });
    };
    // Lengths are tried with plain letters: only where no pattern or format says more.
    let free_text = property.get("format").is_none()
        && property.get("pattern").and_then(Value::as_str).is_none_or(|p| p.starts_with("^[^\\u0000]"));
    if let Some(max) = property.get("maxLength").and_then(Value::as_u64).filter(|_| free_text) {
        let max = usize::try_from(max).unwrap();
        add(json!("a".repeat(max)), true, format!("maxLength {max}"));
        add(json!("a".repeat(max + 1)), false, format!("maxLength {max}"));
        if let Some(bytes) = property.get("x-max-utf8-bytes").and_then(Value::as_u64) {
            // Two-byte characters: within maxLength, over the byte limit.
            let chars = usize::try_from(bytes).unwrap() / 2 + 1;
            add(json!("é".repeat(chars)), false, format!("x-max-utf8-bytes {bytes}"));
        }
    }
    if property.get("minLength").and_then(Value::as_u64) == Some(1) {
        add(json!(""), false, "minLength 1".into());
    }
    if let (Some(min), Some(max)) =
        (property.get("minimum").and_then(Value::as_i64), property.get("maximum").and_then(Value::as_i64))
    {
        add(json!(min), true, format!("minimum {min}"));
        add(json!(max), true, format!("maximum {max}"));
        add(json!(min - 1), false, format!("minimum {min}"));
        add(json!(max + 1), false, format!("maximum {max}"));
    }
    if let Some(values) = property.get("enum").and_then(Value::as_array) {
        add(json!("not-a-listed-value"), false, "enum".into());
        if let Some(first) = values.iter().find(|v| !v.is_null()) {
            add(first.clone(), true, "enum".into());
        }
    }
    if let Some(pattern) = property.get("pattern").and_then(Value::as_str)
        && field.rsplit('.').next().is_some_and(|f| f.ends_with("mount") || f == "quantity")
    {
        let re = Regex::new(pattern).unwrap();
        for text in [
            "0",
            "1",
            "0.000001",
            "0.0000001",
            "1.1234567",
            "000123.5",
            "999999999999999",
            "1000000000000000",
            "000000000000001",
            "0000000000000001",
            "000000000000000000000000001",
            "000000000000000.5",
            "0000000000000000.5",
            ".5",
            "-1",
            "1e3",
            "0.000000",
        ] {
            add(json!(text), re.is_match(text), format!("pattern {pattern}"));
        }
    }
    if let Some(max) = property.get("maxItems").and_then(Value::as_u64) {
        cases.push(Case { field: field.to_owned(), value: json!(max), allowed: false, rule: "maxItems".into() });
    }
}

fn set(body: &mut Value, field: &str, value: Value) {
    match field.split_once('.') {
        Some((array, inner)) => body[array][0][inner] = value,
        None => body[field] = value,
    }
}

async fn attempt(app: &TestApp, m: &Merchant, path: &str, base: &Value, case: &Case, failures: &mut Vec<String>) {
    let mut body = base.clone();
    if case.rule == "maxItems" {
        // `value` holds the limit: the first item repeated up to it, then once more.
        let max = usize::try_from(case.value.as_u64().unwrap()).unwrap();
        let item = base[&case.field].get(0).cloned().unwrap_or(json!({ "label": "t", "amount": "0" }));
        for (n, allowed) in [(max, true), (max + 1, false)] {
            body[&case.field] = Value::Array(vec![item.clone(); n]);
            let r = app.post(&m.sk_test, path, body.clone()).await;
            check(&r, path, &case.field, &format!("{} items", n), allowed, "maxItems", failures);
        }
        return;
    }
    // Amount patterns are tried on the fields the base body has (the others depend on them).
    let present = match case.field.split_once('.') {
        Some((array, inner)) => base[array][0].get(inner).is_some(),
        None => base.get(&case.field).is_some(),
    };
    if case.rule.starts_with("pattern") && !present {
        return;
    }
    set(&mut body, &case.field, case.value.clone());
    let r = app.post(&m.sk_test, path, body).await;
    check(&r, path, &case.field, &case.value.to_string(), case.allowed, &case.rule, failures);
}

fn check(
    r: &crate::support::Response,
    path: &str,
    field: &str,
    shown: &str,
    allowed: bool,
    rule: &str,
    failures: &mut Vec<String>,
) {
    let status = r.status.as_u16();
    let shown: String = shown.chars().take(40).collect();
    if allowed {
        // A line's amount within its own rule can still make the invoice's total too large:
        // 422 INVALID_TOTAL, the rule across fields that the document states in words.
        let total_rule = status == 422 && r.body["error"]["code"] == "INVALID_TOTAL" && field.starts_with("lines.");
        if !(200..300).contains(&status) && !total_rule {
            failures.push(format!("{path} {field}={shown} ({rule}) is inside the document, refused: {}", r.body));
        }
        return;
    }
    let want_field = field.replace(".", "[0].");
    let (want_status, want_code) = code_for(field);
    let got = (status, r.body["error"]["code"].as_str(), r.body["error"]["details"]["field"].as_str());
    if got != (want_status, Some(want_code), Some(want_field.as_str())) {
        failures.push(format!(
            "{path} {field}={shown} ({rule}) is outside the document: wanted {want_status} {want_code} on {want_field}, got {status} {}",
            r.body
        ));
    }
}

#[tokio::test]
async fn every_documented_body_rule_holds_at_its_edges() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let doc = app.get(&m.sk_test, "/v1/openapi.json").await.body.clone();
    let doc = if doc.get("paths").is_some() { doc } else { doc["data"].clone() };
    let mut failures = Vec::new();
    let mut tried = 0;
    for (path, base) in operations() {
        // The base body itself is accepted.
        let r = app.post(&m.sk_test, path, base.clone()).await;
        assert!(r.status.is_success(), "{path}: {}", r.body);
        let pointer = format!("/paths/{}/post/requestBody/content/application~1json/schema", path.replace('/', "~1"));
        let schema = resolve(&doc, doc.pointer(&pointer).unwrap_or_else(|| panic!("{path} has a body")));
        // The itemized form of the invoice creation (the first of its forms).
        let schema = match schema.get("oneOf").and_then(Value::as_array) {
            Some(forms) => resolve(&doc, &forms[0]),
            None => schema,
        };
        let mut cases = Vec::new();
        for (name, property) in schema["properties"].as_object().unwrap() {
            let property = resolve(&doc, property);
            edges(name, property, &mut cases);
            // One level down into arrays of objects (an invoice's lines and taxes).
            if let Some(items) = property.get("items") {
                let items = resolve(&doc, items);
                if let Some(inner) = items.get("properties").and_then(Value::as_object) {
                    if base.get(name).is_none() {
                        continue;
                    }
                    for (inner_name, inner_property) in inner {
                        edges(&format!("{name}.{inner_name}"), resolve(&doc, inner_property), &mut cases);
                    }
                }
            }
        }
        for case in &cases {
            tried += 1;
            attempt(&app, &m, path, &base, case, &mut failures).await;
        }
    }
    assert!(tried > 80, "the walk found only {tried} cases");
    assert!(failures.is_empty(), "{} of {tried} edges differ:\n{}", failures.len(), failures.join("\n"));
}

async fn contract_check(base: &str, key: &str) -> (bool, String) {
    let out = tokio::process::Command::new(crate::support::BIN)
        .args(["contract-check", "--base-url", base, "--key", key])
        .output()
        .await
        .unwrap();
    (out.status.success(), String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn the_contract_check_passes_against_the_service_and_fails_clearly_elsewhere() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Partner");
    let (ok, text) = contract_check(&app.base, &m.sk_test).await;
    assert!(ok, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.len() >= 12, "{text}");
    assert!(lines.iter().all(|l| l.starts_with("ok   ")), "{text}");
    // The clock was set back at the end, and the records are test records of that merchant.
    assert_eq!(app.get(&m.sk_test, "/v1/test-helpers/clock").await.ok(200)["offsetSeconds"], 0);
    let invoices = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200).clone();
    assert!(invoices["items"].as_array().unwrap().iter().all(|i| i["mode"] == "test"));
    // A second run passes too (its idempotency keys are its own).
    let (again, text) = contract_check(&app.base, &m.sk_test).await;
    assert!(again, "{text}");

    // Nothing listens there: one clear line, and a failure.
    let (ok, text) = contract_check("http://127.0.0.1:9", &m.sk_test).await;
    assert!(!ok);
    assert!(text.starts_with("FAIL service answers"), "{text}");
    assert!(text.contains("cannot reach http://127.0.0.1:9"), "{text}");
    assert_eq!(text.lines().count(), 1, "{text}");
    // A publishable key, a live key: refused before or at the first key check.
    let (ok, text) = contract_check(&app.base, &m.pk_test).await;
    assert!(!ok && text.contains("needs a secret test key"), "{text}");
    let (ok, text) = contract_check(&app.base, "sk_test_not_a_key").await;
    assert!(!ok && text.contains("FAIL the key is a secret test key") && text.contains("INVALID_API_KEY"), "{text}");
}
