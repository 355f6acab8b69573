//! `stablepay contract-check --base-url URL --key sk_test_...`: a short, deterministic
//! end-to-end scenario against any deployment, with a secret test key, that prints one line
//! per check (`ok`, `FAIL` with what differed, or `skip` when an earlier check it needs
//! failed). It only creates test-mode records, and resets the merchant's test clock at the start
//! and the end. Exit status 0 when every check passed, 1 otherwise.

use std::time::Duration;

use serde_json::{Value, json};

/// One HTTP answer: status and JSON body (Null when the body was not JSON).
struct Answer {
    status: u16,
    body: Value,
}

impl Answer {
    fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    fn data(&self) -> &Value {
        &self.body["data"]
    }
    fn describe(&self) -> String {
        let text = self.body.to_string();
        let short: String = text.chars().take(300).collect();
        format!("{} {short}", self.status)
    }
}

struct Client {
    http: reqwest::Client,
    base: String,
    key: String,
    run: String,
}

impl Client {
    async fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
        idem: Option<&str>,
    ) -> Result<Answer, String> {
        let mut req = self.http.request(method, format!("{}{path}", self.base)).bearer_auth(&self.key);
        if let Some(key) = idem {
            req = req.header("Idempotency-Key", key);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.map_err(|e| format!("cannot reach {}{path}: {e}", self.base))?;
        let status = res.status().as_u16();
        let bytes = res.bytes().await.map_err(|e| format!("reading {path}: {e}"))?;
        Ok(Answer { status, body: serde_json::from_slice(&bytes).unwrap_or(Value::Null) })
    }
    async fn get(&self, path: &str) -> Result<Answer, String> {
        self.call(reqwest::Method::GET, path, None, None).await
    }
    async fn post(&self, path: &str, body: Value) -> Result<Answer, String> {
        self.call(reqwest::Method::POST, path, Some(body), None).await
    }
}

/// Checks an answer's status (and, for errors, its code), naming what differed.
fn expect(a: &Answer, status: u16, code: Option<&str>) -> Result<(), String> {
    if a.status != status || code.is_some_and(|c| a.code() != c) {
        return Err(format!(
            "wanted {status}{}, got {}",
            code.map(|c| format!(" {c}")).unwrap_or_default(),
            a.describe()
        ));
    }
    if status >= 400 && (a.body["success"] != json!(false) || !a.body["meta"]["requestId"].is_string()) {
        return Err(format!("the error is not in the envelope: {}", a.describe()));
    }
    if status < 400 && a.body["success"] != json!(true) {
        return Err(format!("the answer is not in the envelope: {}", a.describe()));
    }
    Ok(())
}

fn field(value: &Value, name: &str, want: &Value) -> Result<(), String> {
    if &value[name] == want { Ok(()) } else { Err(format!("{name} is {}, wanted {want}", value[name])) }
}

type Outcome = Result<(), String>;

/// The checks' outcomes, each told to `out` as it is known.
struct Report<'o> {
    all: bool,
    out: &'o mut dyn FnMut(&str, &Outcome),
}

impl Report<'_> {
    /// Tells the outcome of check `name`; answers whether it passed.
    fn check(&mut self, name: &str, r: Outcome) -> bool {
        if r.is_err() {
            self.all = false;
        }
        (self.out)(name, &r);
        r.is_ok()
    }
}

async fn run_checks(c: &Client, out: &mut dyn FnMut(&str, &Outcome)) -> bool {
    let mut r = Report { all: true, out };
    // Reachability and the key come first: nothing else can pass without them.
    if !preflight(c, &mut r).await {
        return false;
    }
    let Some((session, invoice)) = checkout(c, &mut r).await else { return false };
    payments(c, &mut r, &session, &invoice).await;
    invoices_and_errors(c, &mut r).await;
    expiry(c, &mut r).await;
    r.all
}

/// The service answers with its document, and the key is a secret test key.
async fn preflight(c: &Client, r: &mut Report<'_>) -> bool {
    let doc = c.get("/v1/openapi.json").await;
    let reached = doc.and_then(|a| {
        if a.status == 200 && a.body["openapi"].as_str().is_some_and(|v| v.starts_with("3.1")) {
            Ok(())
        } else {
            Err(format!("GET /v1/openapi.json is not an OpenAPI 3.1 document: {}", a.describe()))
        }
    });
    if !r.check("service answers with its OpenAPI 3.1 document", reached) {
        return false;
    }
    let clock = c.post("/v1/test-helpers/clock/reset", json!({})).await.and_then(|a| {
        expect(&a, 200, None)?;
        field(a.data(), "offsetSeconds", &json!(0))
    });
    r.check("the key is a secret test key; test clock reset", clock)
}

/// A checkout of 10.00, replayed under its key and refused under the key with another body;
/// answers its session and invoice.
async fn checkout(c: &Client, r: &mut Report<'_>) -> Option<(String, String)> {
    let reference = format!("contract-check-{}", c.run);
    let body = json!({ "amount": "10.00", "externalReference": reference });
    let idem = format!("contract-check-{}-create", c.run);
    let mut ids = None;
    let created =
        c.call(reqwest::Method::POST, "/v1/checkout-sessions", Some(body.clone()), Some(&idem)).await.and_then(|a| {
            expect(&a, 201, None)?;
            let d = a.data();
            field(d, "amountDue", &json!("10.000000"))?;
            field(d, "status", &json!("pending"))?;
            field(d, "externalReference", &json!(reference))?;
            if !d["invoiceNumber"].is_string() {
                return Err(format!("the checkout's invoice has no number: {}", a.describe()));
            }
            ids = d["id"].as_str().zip(d["invoiceId"].as_str()).map(|(s, i)| (s.to_owned(), i.to_owned()));
            Ok(())
        });
    r.check("create a checkout of 10.00 (numbered invoice)", created);
    let Some((session, invoice)) = ids else {
        for name in
            ["idempotent replay", "idempotency conflict", "partial payment", "remainder paid", "invoice.paid event"]
        {
            r.check(name, Err("skip: no checkout".into()));
        }
        return None;
    };
    let replay = c.call(reqwest::Method::POST, "/v1/checkout-sessions", Some(body), Some(&idem)).await.and_then(|a| {
        expect(&a, 201, None)?;
        field(a.data(), "id", &json!(session))
    });
    r.check("idempotent replay answers the same checkout", replay);
    let changed = json!({ "amount": "11.00" });
    let conflict = c
        .call(reqwest::Method::POST, "/v1/checkout-sessions", Some(changed), Some(&idem))
        .await
        .and_then(|a| expect(&a, 409, Some("IDEMPOTENCY_KEY_CONFLICT")));
    r.check("the same key with another body is IDEMPOTENCY_KEY_CONFLICT", conflict);
    Some((session, invoice))
}

/// 4.00 then 6.00 pay the invoice, with its `invoice.paid` event.
async fn payments(c: &Client, r: &mut Report<'_>, session: &str, invoice: &str) {
    let pay = format!("/v1/test-helpers/checkout-sessions/{session}/payments");
    let partial = async {
        expect(&c.post(&pay, json!({ "amount": "4.00" })).await?, 201, None)?;
        let inv = c.get(&format!("/v1/invoices/{invoice}")).await?;
        expect(&inv, 200, None)?;
        field(inv.data(), "collectionState", &json!("partially_paid"))?;
        field(inv.data(), "customerAmountRemaining", &json!("6.000000"))
    }
    .await;
    r.check("a partial payment of 4.00 leaves 6.00", partial);
    let rest = async {
        expect(&c.post(&pay, json!({ "amount": "6.00" })).await?, 201, None)?;
        let inv = c.get(&format!("/v1/invoices/{invoice}")).await?;
        expect(&inv, 200, None)?;
        field(inv.data(), "collectionState", &json!("paid"))?;
        field(inv.data(), "customerAmountPaid", &json!("10.000000"))
    }
    .await;
    r.check("the remainder of 6.00 pays the invoice", rest);
    let events = c.get("/v1/events?type=invoice.paid&limit=100").await.and_then(|a| {
        expect(&a, 200, None)?;
        let found = a.data()["items"].as_array().into_iter().flatten().any(|e| e["data"]["id"] == json!(invoice));
        if found { Ok(()) } else { Err("no invoice.paid event for the invoice among the latest 100".into()) }
    });
    r.check("an invoice.paid event for it", events);
}

/// An itemized invoice issued and voided; an unknown invoice and a zero amount refused.
async fn invoices_and_errors(c: &Client, r: &mut Report<'_>) {
    let itemized =
        json!({ "lines": [{ "description": "Contract check", "quantity": "2", "unitAmount": "1.50" }], "issue": true });
    let voided = async {
        let inv = c.post("/v1/invoices", itemized).await?;
        expect(&inv, 201, None)?;
        field(inv.data(), "collectionState", &json!("open"))?;
        field(inv.data(), "total", &json!("3.000000"))?;
        let id = inv.data()["id"].as_str().unwrap_or_default().to_owned();
        let void = c.post(&format!("/v1/invoices/{id}/void"), json!({ "reason": "contract check" })).await?;
        expect(&void, 200, None)?;
        field(void.data(), "collectionState", &json!("void"))
    }
    .await;
    r.check("an itemized invoice issued, then voided", voided);
    let missing =
        c.get("/v1/invoices/inv_0000000000000000000000").await.and_then(|a| expect(&a, 404, Some("INVOICE_NOT_FOUND")));
    r.check("an unknown invoice is 404 INVOICE_NOT_FOUND in the envelope", missing);
    let invalid = c.post("/v1/checkout-sessions", json!({ "amount": "0" })).await.and_then(|a| {
        expect(&a, 400, Some("INVALID_AMOUNT"))?;
        field(&a.body["error"]["details"], "field", &json!("amount"))
    });
    r.check("amount 0 is 400 INVALID_AMOUNT naming the field", invalid);
}

/// A checkout expires on the test clock, which is reset at the end.
async fn expiry(c: &Client, r: &mut Report<'_>) {
    let expiry = async {
        let cs = c.post("/v1/checkout-sessions", json!({ "amount": "1.00", "expiresInMinutes": 5 })).await?;
        expect(&cs, 201, None)?;
        let id = cs.data()["id"].as_str().unwrap_or_default().to_owned();
        expect(&c.post("/v1/test-helpers/clock/advance", json!({ "seconds": 360 })).await?, 200, None)?;
        let read = c.get(&format!("/v1/checkout-sessions/{id}")).await?;
        expect(&read, 200, None)?;
        field(read.data(), "status", &json!("expired"))
    }
    .await;
    r.check("a checkout expires on the test clock", expiry);
    let reset = c.post("/v1/test-helpers/clock/reset", json!({})).await.and_then(|a| expect(&a, 200, None));
    r.check("test clock reset at the end", reset);
}

/// One line on stdout; a closed pipe (`| head -3`) ends the output quietly.
fn say(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stdout(), "{line}");
}

/// Runs the scenario, printing one line per check; true when every check passed.
pub async fn run(base_url: &str, key: &str) -> bool {
    if !key.starts_with("sk_test_") {
        say("FAIL the key: contract-check needs a secret test key (sk_test_...); it creates test records only");
        return false;
    }
    // TLS for https deployments: rustls on ring.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let http = match reqwest::Client::builder().timeout(Duration::from_secs(30)).build() {
        Ok(h) => h,
        Err(e) => {
            say(&format!("FAIL an HTTP client: {e}"));
            return false;
        }
    };
    let run = chrono::Utc::now().format("%Y%m%d%H%M%S%f").to_string();
    let client = Client { http, base: base_url.trim_end_matches('/').to_owned(), key: key.to_owned(), run };
    let mut out = |name: &str, r: &Outcome| match r {
        Ok(()) => say(&format!("ok   {name}")),
        Err(e) if e.starts_with("skip") => say(&format!("skip {name} ({e})")),
        Err(e) => say(&format!("FAIL {name}: {e}")),
    };
    run_checks(&client, &mut out).await
}
