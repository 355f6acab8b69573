//! Graceful shutdown: on SIGTERM the service stops accepting connections, finishes the requests
//! in flight and the worker's current batch within STABLEPAY_SHUTDOWN_GRACE, and exits 0.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::support::{TestApp, fresh_db};

/// Whether `seen` holds a whole HTTP response (its head and a body of its Content-Length).
fn answered(seen: &[u8]) -> bool {
    let text = String::from_utf8_lossy(seen);
    let Some((head, body)) = text.split_once("\r\n\r\n") else { return false };
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().to_owned()))
        .and_then(|v| v.parse::<usize>().ok())
        .unwrap_or(0);
    body.len() >= length
}

#[tokio::test]
async fn sigterm_finishes_the_request_in_flight_and_exits_zero() {
    let env = [("STABLEPAY_SHUTDOWN_GRACE", "5".to_owned())];
    let mut app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let addr = app.base.trim_start_matches("http://").to_owned();
    // A request whose body is half sent when the signal comes.
    let body = br#"{"amount":"12.50","externalReference":"in-flight"}"#;
    let head = format!(
        "POST /v1/checkout-sessions HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        m.sk_test,
        body.len()
    );
    let mut stream = TcpStream::connect(&addr).await.unwrap();
    // The server has taken the connection (a first request on it is answered) before the slow
    // one starts: a connection still in the listen backlog when the signal comes is reset, on a
    // loaded machine as anywhere.
    let probe = format!("GET /healthz HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    stream.write_all(probe.as_bytes()).await.unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 512];
    while !answered(&seen) {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.unwrap().unwrap();
        assert!(n > 0, "the connection closed before /healthz answered");
        seen.extend_from_slice(&buf[..n]);
    }
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(&body[..10]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;

    app.terminate().await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    // No new connection is served any more.
    let refused = match TcpStream::connect(&addr).await {
        Err(_) => true,
        Ok(mut s) => {
            let _ = s.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n").await;
            let mut buf = [0u8; 64];
            matches!(tokio::time::timeout(Duration::from_secs(2), s.read(&mut buf)).await, Ok(Ok(0)) | Ok(Err(_)))
        }
    };
    assert!(refused, "a new connection was served after SIGTERM");

    // The request in flight completes.
    stream.write_all(&body[10..]).await.unwrap();
    let mut answer = String::new();
    tokio::time::timeout(Duration::from_secs(5), stream.read_to_string(&mut answer)).await.unwrap().unwrap();
    assert!(answer.starts_with("HTTP/1.1 201"), "{answer}");
    assert!(answer.contains("in-flight"), "{answer}");

    let status = app.wait_exit(Duration::from_secs(10)).await;
    assert_eq!(status.code(), Some(0), "{}", app.logs());
    let logs = app.logs();
    assert!(logs.contains("shutting down") && logs.contains("stopped"), "{logs}");
    // What it answered is stored.
    let rows = app.db.query("SELECT count(*) AS n FROM invoices").await;
    assert_eq!(rows[0].get::<_, i64>("n"), 1);
}

/// `/metrics` is served apart from the API, with the series an operator watches.
#[tokio::test]
async fn metrics_are_served_on_their_own_address_with_the_operator_series() {
    let app = TestApp::spawn().await;
    assert_ne!(app.metrics, app.base);
    let m = app.merchant("Shop");
    app.post(&m.sk_test, "/v1/checkout-sessions", serde_json::json!({ "amount": "5" })).await.ok(201);
    app.get(&m.sk_test, "/v1/invoices/inv_0000000000000000000000").await.assert_error(404, "INVOICE_NOT_FOUND");
    let body = serde_json::json!({ "amount": "5" });
    app.post_idem(&m.sk_test, "/v1/checkout-sessions", "k-1", body).await.ok(201);
    let other = serde_json::json!({ "amount": "6" });
    app.post_idem(&m.sk_test, "/v1/checkout-sessions", "k-1", other)
        .await
        .assert_error(409, "IDEMPOTENCY_KEY_CONFLICT");
    // The public API no longer answers it.
    app.get(&m.sk_test, "/metrics").await.assert_error(404, "NOT_FOUND");
    let text = reqwest::get(format!("{}/metrics", app.metrics)).await.unwrap().text().await.unwrap();
    for series in [
        r#"stablepay_http_requests_total{route="/v1/checkout-sessions",method="POST",status="201"} 2"#,
        r#"stablepay_http_requests_total{route="/v1/invoices/{id}",method="GET",status="404"} 1"#,
        r#"stablepay_http_request_duration_seconds_bucket{route="/v1/checkout-sessions",method="POST",le="+Inf"}"#,
        r#"stablepay_idempotency_conflicts_total{kind="different_request"} 1"#,
        r#"stablepay_db_pool_connections{pool="worker",state="max"}"#,
        r#"stablepay_queue_depth{queue="expiry"} 0"#,
        r#"stablepay_queue_depth{queue="deliveries"}"#,
        r#"stablepay_queue_oldest_age_seconds{queue="emails"}"#,
        "stablepay_database_up 1",
        "stablepay_worker_up 1",
    ] {
        assert!(text.contains(series), "missing {series}:\n{text}");
    }
    // Ids never become labels.
    assert!(!text.contains("inv_0000"), "{text}");
}
