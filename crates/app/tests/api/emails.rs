//! Emails to customers end to end: real messages received by an SMTP server on loopback
//! (`aiosmtpd` from PyPI, in `target/py-venv`, writing a Maildir), their recipients, subject,
//! both parts and the attached PDF; the invoice's activity; reminders on request (with their
//! cooldown) and on a schedule driven by the test clock; a crashed server sending nothing
//! twice; and the development default of `.eml` files.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::{Child, Command};

use crate::support::{Merchant, TestApp, fresh_db};

/// An SMTP server on loopback that keeps every message in a Maildir.
pub(crate) struct Smtp {
    port: u16,
    dir: tempdir::Dir,
    _child: Child,
}

pub(crate) mod tempdir {
    /// A folder removed when dropped.
    pub struct Dir(pub std::path::PathBuf);

    impl Dir {
        pub fn new(name: &str) -> Self {
            let path = std::env::temp_dir().join(format!("{name}-{}-{}", std::process::id(), rand()));
            std::fs::create_dir_all(&path).unwrap();
            Self(path)
        }
    }

    fn rand() -> u128 {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos()
    }

    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}

impl Smtp {
    pub(crate) async fn start() -> Self {
        let python = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/py-venv/bin/python");
        assert!(python.exists(), "target/py-venv is missing: run `cargo xtask ci` (it installs aiosmtpd)");
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let dir = tempdir::Dir::new("stablepay-maildir");
        let child = Command::new(python)
            .args(["-m", "aiosmtpd", "-n", "-l", &format!("127.0.0.1:{port}"), "-c", "aiosmtpd.handlers.Mailbox"])
            .arg(dir.0.join("box"))
            .kill_on_drop(true)
            .spawn()
            .expect("aiosmtpd");
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_ok() {
                return Self { port, dir, _child: child };
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("aiosmtpd did not start");
    }

    fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Every message received so far, as raw text.
    pub(crate) fn messages(&self) -> Vec<String> {
        let new = self.dir.0.join("box/new");
        let mut out: Vec<String> = std::fs::read_dir(&new)
            .map(|d| d.filter_map(Result::ok).map(|e| std::fs::read_to_string(e.path()).unwrap()).collect())
            .unwrap_or_default();
        out.sort();
        out
    }

    async fn wait_for(&self, n: usize) -> Vec<String> {
        self.wait_for_within(n, Duration::from_secs(20)).await
    }

    pub(crate) async fn wait_for_within(&self, n: usize, limit: Duration) -> Vec<String> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            let m = self.messages();
            if m.len() >= n {
                return m;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("expected {n} messages, got {}", self.messages().len());
    }
}

pub(crate) fn env(smtp: &Smtp) -> Vec<(&'static str, String)> {
    vec![
        ("STABLEPAY_SMTP_URL", smtp.url()),
        ("STABLEPAY_EMAIL_FROM", "billing@shop.example".to_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ]
}

fn invoice_body(due_in_days: i64) -> Value {
    json!({
        "lines": [{ "description": "Consulting", "quantity": "2", "unitAmount": "50" }],
        "customer": { "name": "Ada <Lovelace>", "email": "ada@example.com" },
        "dueAt": (chrono::Utc::now() + chrono::Duration::days(due_in_days)).to_rfc3339(),
    })
}

async fn issued(app: &TestApp, m: &Merchant, body: Value) -> Value {
    let mut body = body;
    body["issue"] = json!(true);
    app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone()
}

async fn actions(app: &TestApp, m: &Merchant, id: &str) -> Vec<String> {
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    inv["activity"].as_array().unwrap().iter().map(|a| a["action"].as_str().unwrap().to_owned()).collect()
}

async fn inv_activity_details(app: &TestApp, m: &Merchant, id: &str) -> Vec<String> {
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    inv["activity"].as_array().unwrap().iter().filter_map(|a| a["detail"].as_str().map(str::to_owned)).collect()
}

pub(crate) fn header<'a>(message: &'a str, name: &str) -> Option<&'a str> {
    message.lines().find_map(|l| l.strip_prefix(&format!("{name}: ")))
}

#[tokio::test]
async fn an_invoice_email_arrives_with_both_parts_and_its_pdf() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Café Lumière");
    let inv = issued(&app, &m, invoice_body(10)).await;
    let id = inv["id"].as_str().unwrap();
    let number = inv["invoiceNumber"].as_str().unwrap();

    let r = app.post_idem(&m.sk_test, &format!("/v1/invoices/{id}/send"), "send-1", json!({})).await;
    let queued = r.ok(202).clone();
    assert_eq!((queued["object"].as_str(), queued["status"].as_str()), (Some("invoice_email"), Some("queued")));
    assert_eq!(queued["to"], "ada@example.com");
    // The same key answers the same email: one message.
    let again = app.post_idem(&m.sk_test, &format!("/v1/invoices/{id}/send"), "send-1", json!({})).await;
    assert_eq!(again.ok(202)["id"], queued["id"]);

    let messages = smtp.wait_for(1).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(smtp.messages().len(), 1, "one request, one message");
    let msg = &messages[0];
    assert_eq!(header(msg, "To"), Some("ada@example.com"));
    let from = header(msg, "From").unwrap();
    assert!(from.contains("billing@shop.example") && (from.contains("Caf") || from.contains("=?utf-8?")), "{from}");
    // The Message-ID's domain is the host the hosted pages are served from.
    let host = app.base.trim_start_matches("http://").split(':').next().unwrap();
    assert_eq!(header(msg, "Message-ID"), Some(format!("<{}@{host}>", queued["id"].as_str().unwrap()).as_str()));
    let subject = header(msg, "Subject").unwrap();
    assert!(subject.contains(number) || subject.starts_with("=?utf-8?"), "{subject}");
    for part in ["multipart/mixed", "multipart/alternative", "text/plain", "text/html", "application/pdf"] {
        assert!(msg.to_lowercase().contains(part), "the message lacks {part}:\n{msg}");
    }
    assert!(msg.contains(&format!("filename=\"{number}.pdf\"")), "{msg}");
    assert!(msg.contains("/i/"), "the hosted invoice link: {msg}");
    assert!(msg.contains("Ada &lt;Lovelace&gt;"), "the HTML part is escaped: {msg}");

    // Each step is in the invoice's activity.
    let mut seen = Vec::new();
    for _ in 0..50 {
        seen = actions(&app, &m, id).await;
        if seen.contains(&"email_sent".to_owned()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(seen.contains(&"email_queued".to_owned()) && seen.contains(&"email_sent".to_owned()), "{seen:?}");

    // Refusals, which queue nothing.
    let draft = app.post(&m.sk_test, "/v1/invoices", invoice_body(10)).await.ok(201).clone();
    let path = format!("/v1/invoices/{}/send", draft["id"].as_str().unwrap());
    app.post(&m.sk_test, &path, json!({})).await.assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    let mut nobody = invoice_body(10);
    nobody["customer"] = json!({ "name": "No Mail" });
    let no_email = issued(&app, &m, nobody).await;
    let path = format!("/v1/invoices/{}/send", no_email["id"].as_str().unwrap());
    let r = app.post(&m.sk_test, &path, json!({})).await;
    assert_eq!(r.assert_error(422, "CUSTOMER_EMAIL_REQUIRED").as_deref(), Some("customer.email"));
    let other = app.merchant("Other");
    app.post(&other.sk_test, &format!("/v1/invoices/{id}/send"), json!({}))
        .await
        .assert_error(404, "INVOICE_NOT_FOUND");

    // Creation with send: true sends too.
    let mut body = invoice_body(5);
    body["send"] = json!(true);
    issued(&app, &m, body).await;
    smtp.wait_for(2).await;
}

#[tokio::test]
async fn reminders_keep_a_cooldown_and_follow_the_schedule_on_the_test_clock() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Shop");
    let mut body = invoice_body(10);
    body["reminderSchedule"] = json!({ "enabled": true, "daysBeforeDue": [3], "onDue": true, "daysAfterDue": [7] });
    let inv = issued(&app, &m, body).await;
    let id = inv["id"].as_str().unwrap().to_owned();
    let remind = format!("/v1/invoices/{id}/remind");

    let first = app.post(&m.sk_test, &remind, json!({})).await.ok(202).clone();
    assert_eq!(first["kind"], "reminder");
    let r = app.post(&m.sk_test, &remind, json!({})).await;
    r.assert_error(409, "INVOICE_TRANSITION_GUARD_FAILED");
    assert_eq!(r.body["error"]["details"]["reason"], "reminder_cooldown");
    assert!(r.body["error"]["details"]["availableAt"].is_string());
    assert!(r.header("retry-after").unwrap().parse::<i64>().unwrap() > 80_000);
    smtp.wait_for(1).await;

    // Day 7 of 10: the "3 days before" slot; day 10: "on due".
    let advance = |seconds: i64| app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": seconds }));
    advance(7 * 86_400 + 3600).await.ok(200);
    let messages = smtp.wait_for(2).await;
    assert!(messages.iter().filter(|msg| msg.contains("Reminder")).count() >= 2, "{messages:?}");
    advance(3 * 86_400).await.ok(200);
    smtp.wait_for(3).await;
    // The cooldown allows a requested reminder a day after the last one.
    advance(86_400).await.ok(200);
    app.post(&m.sk_test, &remind, json!({})).await.ok(202);
    smtp.wait_for(4).await;
    // Day 17: "7 days after".
    advance(6 * 86_400).await.ok(200);
    smtp.wait_for(5).await;

    // Paid: no more reminders, scheduled or requested.
    let cs = app.post(&m.sk_test, &format!("/v1/invoices/{id}/checkout-sessions"), json!({})).await;
    let cs_id = cs.ok(201)["checkoutSessionId"].as_str().unwrap().to_owned();
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs_id}/payments"), json!({})).await.ok(201);
    advance(8 * 86_400).await.ok(200);
    app.post(&m.sk_test, &remind, json!({})).await.assert_error(409, "INVOICE_NOT_PAYABLE");
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(smtp.messages().len(), 5, "nothing after payment");

    let seen = actions(&app, &m, &id).await;
    let count = |a: &str| seen.iter().filter(|s| *s == a).count();
    assert_eq!(count("email_queued"), 5, "{seen:?}");
    assert_eq!(count("email_sent"), 5, "{seen:?}");
    let details = inv_activity_details(&app, &m, &id).await;
    for slot in ["before:3", "due", "after:7"] {
        assert!(details.iter().any(|d| d.contains(&format!("scheduled reminder ({slot})"))), "{details:?}");
    }
}

#[tokio::test]
async fn a_crashed_server_sends_each_email_once() {
    // The first process talks to a mail server that accepts the connection and never answers:
    // it is killed while its attempt hangs, so the email is claimed and not sent.
    let hanging = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let stalled = vec![
        ("STABLEPAY_SMTP_URL", format!("smtp://{}", hanging.local_addr().unwrap())),
        ("STABLEPAY_SMTP_TIMEOUT_MS", "2000".to_owned()),
        ("STABLEPAY_EMAIL_FROM", "billing@shop.example".to_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ];
    let mut app = TestApp::spawn_with(fresh_db().await, &stalled, &[]).await;
    let m = app.merchant("Shop");
    let inv = issued(&app, &m, invoice_body(10)).await;
    let send = format!("/v1/invoices/{}/send", inv["id"].as_str().unwrap());
    app.post(&m.sk_test, &send, json!({})).await.ok(202);
    let (_held, _) = tokio::time::timeout(Duration::from_secs(10), hanging.accept())
        .await
        .expect("the worker attempted the email")
        .unwrap();
    let smtp = Smtp::start().await;
    let e = env(&smtp);
    app.kill_and_restart(&e).await;
    // The dead worker's lease (2 s + 4 database round trips of at most 5 s + 5 s) runs out,
    // then the email is sent once.
    let got = smtp.wait_for_within(1, Duration::from_secs(60)).await;
    assert!(got[0].contains("To: ada@example.com"), "{}", got[0]);
    let id = inv["id"].as_str().unwrap();
    // The worker records the attempt after the server took the message: wait for the record.
    let mut seen = actions(&app, &m, id).await;
    for _ in 0..100 {
        if seen.iter().any(|a| a == "email_sent") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        seen = actions(&app, &m, id).await;
    }
    assert_eq!(seen.iter().filter(|a| *a == "email_sent").count(), 1, "{seen:?}");
    assert_eq!(
        seen.iter().filter(|a| *a == "email_failed").count(),
        0,
        "the killed attempt was not recorded: {seen:?}"
    );
    // Another restart sends nothing more.
    app.kill_and_restart(&e).await;
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(smtp.messages().len(), 1);
}

#[tokio::test]
async fn without_smtp_messages_are_eml_files() {
    let dir = tempdir::Dir::new("stablepay-eml");
    let env = [
        ("STABLEPAY_EMAIL_DIR", dir.0.to_string_lossy().into_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let inv = issued(&app, &m, invoice_body(10)).await;
    let queued = app.post(&m.sk_test, &format!("/v1/invoices/{}/send", inv["id"].as_str().unwrap()), json!({})).await;
    let id = queued.ok(202)["id"].as_str().unwrap().to_owned();
    let file: PathBuf = dir.0.join(format!("{id}.eml"));
    for _ in 0..100 {
        if file.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|_| panic!("no {}", file.display()));
    assert!(text.contains("To: ada@example.com") && text.to_lowercase().contains("application/pdf"));
    let _ = Path::new(&file);
    // Start-up said so, naming the folder.
    let logs = app.logs();
    assert!(logs.contains("emails to customers are written as .eml files"), "{logs}");
    assert!(logs.contains(&dir.0.to_string_lossy().into_owned()), "{logs}");
}

/// The decoded text of a message's part of `kind` (`text/plain` or `text/html`), for checks.
pub(crate) fn part(message: &str, kind: &str) -> String {
    let at = message.find(&format!("Content-Type: {kind}")).unwrap_or_else(|| panic!("no {kind} part:\n{message}"));
    let rest = &message[at..];
    let body = rest.split_once("\r\n\r\n").or_else(|| rest.split_once("\n\n")).unwrap().1;
    let body = body.split("\n--").next().unwrap();
    if rest[..rest.find("\n\n").unwrap_or(rest.len()).min(300)].contains("quoted-printable") {
        quoted_printable(body)
    } else if rest[..300.min(rest.len())].contains("base64") {
        use base64::Engine;
        let joined: String = body.split_whitespace().collect();
        String::from_utf8(base64::engine::general_purpose::STANDARD.decode(joined).unwrap()).unwrap()
    } else {
        body.to_owned()
    }
}

fn quoted_printable(body: &str) -> String {
    let joined = body.replace("=\r\n", "").replace("=\n", "");
    let bytes = joined.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let hex = std::str::from_utf8(&bytes[(i + 1).min(bytes.len())..(i + 3).min(bytes.len())]).unwrap_or("");
        if bytes[i] == b'='
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[tokio::test]
async fn the_seller_block_reply_to_and_a_receipt_for_a_paid_invoice() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Lumière");
    let profile = app.cli_ok(&[
        "merchant",
        "profile",
        &m.id,
        "--legal-name",
        "Lumière SARL",
        "--postal-address",
        "1 rue de la Paix\\n75002 Paris",
        "--tax-id",
        "FR12345678901",
        "--support-email",
        "help@lumiere.example",
        "--reply-to",
        "accounts@lumiere.example",
        "--json",
    ]);
    assert_eq!(profile["profile"]["postalAddress"], "1 rue de la Paix\n75002 Paris");
    // A bad value names its field and changes nothing.
    let (ok, refused) = app.cli(&["merchant", "profile", &m.id, "--support-email", "not-an-email", "--json"]);
    assert!(!ok);
    assert_eq!(refused["error"]["details"]["field"], "supportEmail", "{refused}");

    let inv = issued(&app, &m, invoice_body(10)).await;
    let id = inv["id"].as_str().unwrap();
    // The PDF carries the seller block.
    let pdf = app.http.get(app.url(&format!("/v1/invoices/{id}/pdf"))).bearer_auth(&m.sk_test).send().await.unwrap();
    let file = std::env::temp_dir().join(format!("seller-{id}.pdf"));
    std::fs::write(&file, pdf.bytes().await.unwrap()).unwrap();
    let out = tokio::process::Command::new("pdftotext").arg(&file).arg("-").output().await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    for needle in ["Lumière SARL", "1 rue de la Paix", "75002 Paris", "Tax ID: FR12345678901", "help@lumiere.example"]
    {
        assert!(text.contains(needle), "the PDF lacks {needle:?}:\n{text}");
    }

    // Paid, then sent: a receipt.
    let cs = inv["checkoutSessions"][0]["id"].as_str().unwrap();
    let paid = app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await;
    let tx = paid.ok(201)["transactionId"].as_str().unwrap().to_owned();
    app.post(&m.sk_test, &format!("/v1/invoices/{id}/send"), json!({})).await.ok(202);
    let msg = smtp.wait_for(1).await.remove(0);
    assert_eq!(header(&msg, "Reply-To"), Some("accounts@lumiere.example"));
    let subject = header(&msg, "Subject").unwrap();
    assert!(subject.contains("Receipt") || subject.starts_with("=?utf-8?"), "{subject}");
    let plain = part(&msg, "text/plain");
    for needle in [
        "Thank you for your payment",
        tx.as_str(),
        "Paid: 100.00 USDC",
        "Lumière SARL",
        "Tax ID: FR12345678901",
        "Support: help@lumiere.example",
        "View the receipt",
    ] {
        assert!(plain.contains(needle), "the text part lacks {needle:?}:\n{plain}");
    }
    assert!(!plain.contains("View and pay"), "{plain}");
    let html = part(&msg, "text/html");
    for needle in
        ["<head>", "<meta charset=\"utf-8\">", "<title>", "Consulting", "Ada &lt;Lovelace&gt;", "View the receipt"]
    {
        assert!(html.contains(needle), "the HTML part lacks {needle:?}:\n{html}");
    }
    for banned in ["<script", "<link", "src=\"http"] {
        assert!(!html.contains(banned), "the HTML part holds {banned:?}");
    }
}

#[tokio::test]
async fn control_characters_in_names_are_refused_and_stored_ones_never_break_a_message() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Shop");
    // At the edge: the API and the CLI refuse them, naming the field.
    for (field, customer) in [
        ("customer.name", json!({ "name": "Ada\r\nBcc: all@example.com", "email": "ada@example.com" })),
        ("customer.company", json!({ "company": "Engines\tLtd", "email": "ada@example.com" })),
    ] {
        let mut body = invoice_body(10);
        body["customer"] = customer;
        let r = app.post(&m.sk_test, "/v1/invoices", body).await;
        assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some(field));
    }
    let (ok, refused) = app.cli(&["merchant", "create", "--name", "Evil\r\nBcc: x@example.com", "--json"]);
    assert!(!ok);
    assert_eq!(refused["error"]["details"]["field"], "name", "{refused}");

    // A name stored before the rule (written here by hand) is sent on one line, never a panic.
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.batch_execute(&format!("UPDATE merchants SET name = E'Legacy\\r\\nShop' WHERE id = '{}'", m.id)).await.unwrap();
    let inv = issued(&app, &m, invoice_body(10)).await;
    let id = inv["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/invoices/{id}/send"), json!({})).await.ok(202);
    let msg = smtp.wait_for(1).await.remove(0);
    let from = header(&msg, "From").unwrap();
    assert!(from.contains("billing@shop.example"), "{from}");
    assert!(!msg.contains("\nShop <billing"), "the name's line break reached a header:\n{msg}");
    let plain = part(&msg, "text/plain");
    assert!(plain.contains("Legacy  Shop") && !plain.contains("Legacy\r\nShop"), "{plain}");
}

#[tokio::test]
async fn failing_email_attempts_show_in_the_workers_readiness() {
    // A mail server that refuses every connection.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let env = [
        ("STABLEPAY_SMTP_URL", format!("smtp://{closed}")),
        ("STABLEPAY_SMTP_TIMEOUT_MS", "1000".to_owned()),
        ("STABLEPAY_EMAIL_FROM", "billing@shop.example".to_owned()),
        ("STABLEPAY_WORKER_INTERVAL_MS", "100".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let inv = issued(&app, &m, invoice_body(10)).await;
    let id = inv["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/invoices/{id}/send"), json!({})).await.ok(202);
    let mut worker = Value::Null;
    for _ in 0..100 {
        worker = app.send(app.http.get(app.url("/readyz"))).await.ok(200)["worker"].clone();
        if worker["state"] == "degraded" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(worker["state"], "degraded", "{worker}");
    assert!(worker["itemsFailed"].as_u64().unwrap() >= 1, "{worker}");
    assert!(actions(&app, &m, id).await.contains(&"email_failed".to_owned()));
}

/// The merchant's logo travels inside the email (an inline part the HTML names by its
/// Content-ID), never fetched from anywhere.
#[tokio::test]
async fn the_logo_is_an_inline_part_of_the_html() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Logo Shop");
    let digest = app.set_logo(&m.id, &crate::support::png_image(240, 80));
    let inv = issued(&app, &m, invoice_body(10)).await;
    app.post(&m.sk_test, &format!("/v1/invoices/{}/send", inv["id"].as_str().unwrap()), json!({})).await.ok(202);
    let msg = smtp.wait_for(1).await.remove(0);
    let cid = format!("logo.{}@stablepay", &digest[..16]);
    assert!(msg.contains("Content-Type: multipart/related"), "{msg}");
    assert!(msg.contains(&format!("Content-ID: <{cid}>")), "{msg}");
    assert!(msg.contains("Content-Type: image/png"), "{msg}");
    assert!(msg.contains("Content-Type: application/pdf"), "the PDF is still attached");
    let html = part(&msg, "text/html");
    assert!(html.contains(&format!("<img src=\"cid:{cid}\" alt=\"Logo Shop\" width=\"144\" height=\"48\"")), "{html}");
    assert!(
        !html.contains("http://127.0.0.1") || !html.contains("/logos/"),
        "the logo is not fetched from the service"
    );
    let text = part(&msg, "text/plain");
    assert!(!text.contains("cid:"), "{text}");
}
