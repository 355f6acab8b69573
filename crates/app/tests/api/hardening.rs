//! What a security and reliability probe broke, each kept broken-no-more by a test: clients that
//! hang up, slow bodies, runaway test clocks, transaction hashes across merchants, idempotency
//! namespaces, NUL characters, unbounded invoices, concurrent test payments, hosted-page
//! headers.

use std::time::Duration;

use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

use crate::support::TestApp;

/// Writes a raw HTTP/1.1 request on a new connection and returns the open stream.
async fn raw_request(app: &TestApp, head: &str, body: &[u8]) -> TcpStream {
    let addr = app.base.strip_prefix("http://").unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body).await.unwrap();
    stream
}

fn post_head(app: &TestApp, path: &str, key: &str, idem: Option<&str>, length: usize) -> String {
    let host = app.base.strip_prefix("http://").unwrap();
    let idem = idem.map(|k| format!("Idempotency-Key: {k}\r\n")).unwrap_or_default();
    format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\n{idem}Content-Length: {length}\r\n\r\n"
    )
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    app.db.query(sql).await[0].get::<_, i64>(0)
}

/// H1: a client that hangs up mid-request must not leave its key in progress, and its retry
/// must get the replay of the one execution (never a second checkout). A lock on `invoices`
/// holds every request in flight (claimed, its insert waiting) while its client resets.
#[tokio::test]
async fn a_client_that_hangs_up_gets_the_replay_of_the_one_execution() {
    let pool = [("STABLEPAY_DB_POOL_SIZE", "40".to_string())];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &pool, &[]).await;
    let m = app.merchant("Shop");
    let locker = stablepay_test_db::connect(&app.db.url()).await;
    locker.batch_execute("BEGIN; LOCK TABLE invoices IN SHARE ROW EXCLUSIVE MODE").await.unwrap();
    let n: u32 = 12;
    let mut streams = Vec::new();
    for i in 0..n {
        let body = format!(r#"{{"amount":"10.00","externalReference":"order-{i}"}}"#);
        let head = post_head(&app, "/v1/checkout-sessions", &m.sk_test, Some(&format!("hangup-{i}")), body.len());
        streams.push(raw_request(&app, &head, body.as_bytes()).await);
    }
    let in_progress = "SELECT count(*) FROM idempotency_keys WHERE state = 'in_progress'";
    for _ in 0..100 {
        if count(&app, in_progress).await == i64::from(n) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(count(&app, in_progress).await, i64::from(n), "every request claimed its key and is waiting");
    for stream in streams {
        stream.set_zero_linger().unwrap();
        drop(stream);
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    locker.batch_execute("COMMIT").await.unwrap();

    // The work went on without its clients: no claim is left behind (before the fix they stayed
    // in progress for 60 s, with their checkouts committed).
    let mut left = 1;
    for _ in 0..100 {
        left = count(&app, in_progress).await;
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, 0, "claims left in progress by clients that hung up");
    for i in 0..n {
        let body = json!({ "amount": "10.00", "externalReference": format!("order-{i}") });
        let r = app.post_idem(&m.sk_test, "/v1/checkout-sessions", &format!("hangup-{i}"), body).await;
        r.ok(201);
        assert_eq!(r.header("idempotency-replayed"), Some("true"), "the retry of order-{i} executed again");
    }
    let twice = count(
        &app,
        "SELECT count(*) FROM (SELECT external_reference FROM checkout_sessions GROUP BY 1 HAVING count(*) > 1) t",
    )
    .await;
    assert_eq!(twice, 0, "a hung-up request was executed twice");
    assert_eq!(count(&app, "SELECT count(*) FROM checkout_sessions").await, i64::from(n));
}
