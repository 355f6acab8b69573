//! Monthly statements end to end: the operator's setting, the statement issued on the 1st of
//! the merchant's (test) clock, its two files written by the worker, one email with both links
//! received by a real SMTP server, the links answering the same CSV as the API for the month,
//! and what a link answers when it names nothing or its files were deleted.

use std::time::Duration;

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde_json::{Value, json};

use crate::emails::{Smtp, env, header};
use crate::exports::{books, sync_rows};
use crate::support::{Merchant, TestApp, fresh_db};

/// The test clock moved to one minute past the next 1st of a month; answers its new time.
async fn to_next_month(app: &TestApp, m: &Merchant) -> DateTime<Utc> {
    let clock = app.get(&m.sk_test, "/v1/test-helpers/clock").await.ok(200).clone();
    let now: DateTime<Utc> = clock["now"].as_str().unwrap().parse().unwrap();
    let (y, mo) = if now.month() == 12 { (now.year() + 1, 1) } else { (now.year(), now.month() + 1) };
    let first = NaiveDate::from_ymd_opt(y, mo, 1).unwrap().and_hms_opt(0, 1, 0).unwrap().and_utc();
    let seconds = (first - now).num_seconds() + 1;
    let moved =
        app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": seconds })).await.ok(200).clone();
    moved["now"].as_str().unwrap().parse().unwrap()
}

/// The links of a statement's email (its plain-text part, quoted-printable soft breaks undone).
fn links(message: &str, base: &str) -> Vec<String> {
    let text = message.replace("=\r\n", "").replace("=\n", "");
    let mut out: Vec<String> = Vec::new();
    for (at, _) in text.match_indices(&format!("{base}/s/")) {
        let link: String = text[at..].chars().take_while(|c| !c.is_whitespace() && *c != '"' && *c != '<').collect();
        if !out.contains(&link) {
            out.push(link);
        }
    }
    out
}

async fn rows_of(app: &TestApp, link: &str) -> (reqwest::header::HeaderMap, Vec<Vec<String>>) {
    let res = app.http.get(link).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200, "{link}");
    let headers = res.headers().clone();
    let bytes = res.bytes().await.unwrap();
    (headers, crate::exports::python_rows(&bytes).await)
}

#[tokio::test]
async fn a_months_statement_is_mailed_once_as_links_to_its_two_files() {
    let smtp = Smtp::start().await;
    let app = TestApp::spawn_with(fresh_db().await, &env(&smtp), &[]).await;
    let m = app.merchant("Books & Co");
    let id = m.id.as_str();
    // Refusals change nothing.
    for bad in ["finance", "a b@shop.example"] {
        let (ok, _) = app.cli(&["merchant", "statements", id, "--mode", "test", "--email", bad, "--json"]);
        assert!(!ok, "{bad} was accepted");
    }
    let (ok, _) = app.cli(&["merchant", "statements", "mer_unknown", "--email", "f@shop.example", "--json"]);
    assert!(!ok);
    let shown = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--json"]);
    assert_eq!(shown["statements"], Value::Null);

    let set =
        app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--email", "finance@shop.example", "--json"]);
    assert_eq!(
        (set["mode"].as_str(), set["statements"]["email"].as_str()),
        (Some("test"), Some("finance@shop.example"))
    );
    books(&app, &m).await;

    let now = to_next_month(&app, &m).await;
    let shown = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--json"]);
    let recent = shown["recent"].as_array().unwrap();
    assert_eq!(recent.len(), 1, "{shown}");
    let month = recent[0]["month"].as_str().unwrap().to_owned();
    let first = NaiveDate::parse_from_str(&format!("{month}-01"), "%Y-%m-%d").unwrap();
    assert!(first.and_hms_opt(0, 0, 0).unwrap().and_utc() < now);
    assert_eq!((first.month() % 12) + 1, now.month(), "the month before the clock's");

    let messages = smtp.wait_for_within(1, Duration::from_secs(60)).await;
    let message = &messages[0];
    assert_eq!(header(message, "To"), Some("finance@shop.example"));
    let label = first.format("%B %Y").to_string();
    let subject = header(message, "Subject").unwrap();
    assert!(subject.contains(&label) || subject.starts_with("=?utf-8?"), "{subject}");
    assert!(!message.to_lowercase().contains("application/pdf"), "a statement attaches nothing");
    let found = links(message, &app.base);
    assert_eq!(found.len(), 2, "{found:?}\n{message}");
    assert!(found[0].ends_with("/invoices.csv") && found[1].ends_with("/payments.csv"), "{found:?}");

    // Each link answers the same rows as the API's export of the month.
    let from = first.and_hms_opt(0, 0, 0).unwrap().and_utc();
    let to = now.date_naive().with_day(1).unwrap().and_hms_opt(0, 0, 0).unwrap().and_utc();
    for (link, kind) in found.iter().zip(["invoices", "payments"]) {
        let (headers, rows) = rows_of(&app, link).await;
        assert_eq!(headers["content-type"], "text/csv; charset=utf-8");
        assert_eq!(headers["cache-control"], "no-store");
        let name = format!("attachment; filename=\"{kind}-{}-{}.csv\"", from.format("%Y%m%d"), to.format("%Y%m%d"));
        assert_eq!(headers["content-disposition"], name.as_str());
        let body = json!({ "type": kind, "from": from.to_rfc3339(), "to": to.to_rfc3339() });
        let api = sync_rows(&app, &m.sk_test, &body).await;
        assert!(rows.len() > 1, "{kind}: {rows:?}");
        assert_eq!(rows, api, "{kind}");
    }
    // Both exports are the merchant's, in its list.
    let listed = app.get(&m.sk_test, "/v1/exports").await.ok(200).clone();
    let mut types: Vec<&str> =
        listed["items"].as_array().unwrap().iter().map(|e| e["type"].as_str().unwrap()).collect();
    types.sort_unstable();
    assert_eq!(types, ["invoices", "payments"]);
    let shown = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--json"]);
    assert_eq!(shown["recent"][0]["status"], "mailed", "{shown}");

    // Later in the same month nothing more is issued or sent.
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 86_400 })).await.ok(200);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(smtp.messages().len(), 1);
    let shown = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--json"]);
    assert_eq!(shown["recent"].as_array().unwrap().len(), 1);

    // Links that name nothing: a page, never a file.
    let token_at = found[0].find("/s/").unwrap() + 3;
    let token = &found[0][token_at..token_at + 43];
    for path in [
        format!("/s/{}/invoices.csv", "z".repeat(43)),
        format!("/s/{token}/refunds.csv"),
        format!("/s/{token}/invoices"),
        "/s/short/invoices.csv".to_owned(),
    ] {
        let res = app.http.get(app.url(&path)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 404, "{path}");
        assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/html"), "{path}");
    }
    // Seven days after the files were written they are gone: 410.
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 8 * 86_400 })).await.ok(200);
    let res = app.http.get(&found[0]).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 410);
    assert!(res.text().await.unwrap().contains("expired"));

    // Live mode was never asked for; turned off, no statement is issued the next month.
    let live = app.cli_ok(&["merchant", "statements", id, "--mode", "live", "--json"]);
    assert_eq!((live["statements"].clone(), live["recent"].as_array().unwrap().len()), (Value::Null, 0));
    let off = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--off", "--json"]);
    assert_eq!(off["statements"], Value::Null);
    to_next_month(&app, &m).await;
    let shown = app.cli_ok(&["merchant", "statements", id, "--mode", "test", "--json"]);
    assert_eq!(shown["recent"].as_array().unwrap().len(), 1, "{shown}");
}
