//! Rate limits: the spec's three quotas with their headers, per client address (requests sent
//! from distinct loopback addresses, 127.0.0.x), behind trusted proxies, shared by two server
//! processes through Redis, and open when Redis is down.

use serde_json::json;

use crate::support::{Merchant, Response, TestApp, client_from, fresh_db};

async fn send(app: &TestApp, req: reqwest::RequestBuilder) -> Response {
    app.send(req).await
}

/// The token of a new invoice's hosted page.
async fn invoice_token(app: &TestApp, m: &Merchant) -> String {
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5.00" })).await.ok(201).clone();
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200).clone();
    inv["hostedInvoiceUrl"].as_str().unwrap().rsplit('/').next().unwrap().to_owned()
}

/// Sends until a request is refused: the first `at_least` must succeed, and at most the quota
/// plus what refilled meanwhile (GCRA: one request per window/quota) may. Answers the refusal.
async fn until_refused(
    app: &TestApp,
    mut request: impl FnMut() -> reqwest::RequestBuilder,
    at_least: u32,
    quota: u32,
) -> Response {
    until_refused_with(app, &mut request, at_least, quota, 200).await
}

async fn until_refused_with(
    app: &TestApp,
    request: &mut impl FnMut() -> reqwest::RequestBuilder,
    at_least: u32,
    quota: u32,
    success: u16,
) -> Response {
    let started = std::time::Instant::now();
    let mut allowed = 0u32;
    loop {
        let r = send(app, request()).await;
        if r.status.as_u16() == 429 {
            let refill = u32::try_from(started.elapsed().as_millis()).unwrap() * quota / 60_000 + 1;
            assert!(
                allowed >= at_least && allowed <= quota + refill,
                "{allowed} allowed (quota {quota}, refill {refill})"
            );
            return r;
        }
        assert_eq!(r.status.as_u16(), success, "{}", r.body);
        allowed += 1;
        assert!(allowed < quota * 3, "never refused");
    }
}

fn assert_limited(r: &Response, code: &str, policy: &str, quota: u32) {
    r.assert_error(429, code);
    let retry: u32 = r.header("retry-after").unwrap().parse().unwrap();
    assert!(retry >= 1, "{retry}");
    assert!(r.header("ratelimit").unwrap().starts_with(&format!("\"{policy}\";r=0;t=")), "{:?}", r.header("ratelimit"));
    assert_eq!(r.header("ratelimit-policy"), Some(format!("\"{policy}\";q={quota};w=60").as_str()));
}

#[tokio::test]
async fn publishable_checkout_creation_is_limited_per_key_and_client_address() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let a = client_from("127.0.0.2");
    let create = |c: &reqwest::Client, key: &str| {
        c.post(app.url("/v1/checkout-sessions")).bearer_auth(key).json(&json!({ "amount": "1.00" }))
    };
    let first = send(&app, create(&a, &m.pk_test)).await;
    first.ok(201);
    assert_eq!(first.header("ratelimit-policy"), Some("\"publishable-checkout\";q=20;w=60"));
    assert_eq!(first.header("ratelimit"), Some("\"publishable-checkout\";r=19;t=3"));
    let refused = until_refused_with(&app, &mut || create(&a, &m.pk_test), 19, 20, 201).await;
    assert_limited(&refused, "RATE_LIMIT_EXCEEDED", "publishable-checkout", 20);
    // Another client address, and the same address with another key, have their own budgets.
    send(&app, create(&client_from("127.0.0.3"), &m.pk_test)).await.ok(201);
    let other_key = app.create_key(&m.id, "test", "publishable");
    send(&app, create(&a, &other_key)).await.ok(201);
    // Secret keys are not limited here.
    let r = send(&app, create(&a, &m.sk_test)).await;
    r.ok(201);
    assert_eq!(r.header("ratelimit"), None);
}

#[tokio::test]
async fn public_reads_and_submissions_are_limited_per_client_address() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let token = invoice_token(&app, &m).await;
    let a = client_from("127.0.0.4");
    let read = |c: &reqwest::Client| c.get(app.url(&format!("/v1/public/invoices/{token}")));
    let first = send(&app, read(&a)).await;
    let inv = first.ok(200).clone();
    assert_eq!(first.header("ratelimit-policy"), Some("\"public-read\";q=120;w=60"));
    assert_eq!(inv["amountRemaining"], "5.000000");
    assert!(inv["checkout"]["checkoutUrl"].is_string());
    // Nothing a customer should not see: no wallet, contract, metadata, fees or internal ids.
    let text = first.body.to_string();
    for hidden in ["0x", "inv_", "metadata", "platformFee", "netAmount", "settlement", "tokenContract"] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
    let refused = until_refused(&app, || read(&a), 119, 120).await;
    assert_limited(&refused, "RATE_LIMITED", "public-read", 120);
    send(&app, read(&client_from("127.0.0.5"))).await.ok(200);

    // Submissions: 10 per minute per client address and invoice; the key is required.
    let submit = |c: &reqwest::Client, key: Option<&str>| {
        let r = c.post(app.url(&format!("/v1/public/invoices/{token}/checkout")));
        match key {
            Some(k) => r.header("Idempotency-Key", k),
            None => r,
        }
    };
    let b = client_from("127.0.0.6");
    let r = send(&app, submit(&b, None)).await;
    assert_eq!(r.assert_error(400, "INVALID_IDEMPOTENCY_KEY").as_deref(), Some("Idempotency-Key"));
    let opened = send(&app, submit(&b, Some("pay-1"))).await;
    let checkout = opened.ok(201).clone();
    assert!(checkout["checkoutUrl"].as_str().unwrap().contains(checkout["checkoutSessionId"].as_str().unwrap()));
    assert_eq!(opened.header("ratelimit-policy"), Some("\"public-checkout\";q=10;w=60"));
    let replayed = send(&app, submit(&b, Some("pay-1"))).await;
    assert_eq!((replayed.header("idempotency-replayed"), replayed.ok(201)), (Some("true"), &checkout));
    // The refused key, the first submission and its replay counted: 7 more fit.
    for i in 3..=9 {
        send(&app, submit(&b, Some(&format!("pay-{i}")))).await.ok(201);
    }
    assert_limited(&send(&app, submit(&b, Some("pay-11"))).await, "RATE_LIMITED", "public-checkout", 10);
    send(&app, submit(&client_from("127.0.0.7"), Some("pay-x"))).await.ok(201);
    // The hash submission of live checkouts counts the same way (per checkout session).
    let cs = checkout["checkoutSessionId"].as_str().unwrap();
    let hash = |c: &reqwest::Client| {
        c.post(app.url(&format!("/v1/public/checkout-sessions/{cs}/payments")))
            .json(&json!({ "transactionHash": format!("0x{}", "ab".repeat(32)) }))
    };
    let c = client_from("127.0.0.8");
    for _ in 0..10 {
        send(&app, hash(&c)).await.assert_error(422, "FEATURE_UNAVAILABLE");
    }
    assert_limited(&send(&app, hash(&c)).await, "RATE_LIMITED", "public-checkout", 10);
    app.send(app.http.get(app.url("/v1/public/invoices/nope"))).await.assert_error(404, "INVOICE_NOT_FOUND");
}

#[tokio::test]
async fn forwarded_addresses_count_only_from_trusted_proxies() {
    let env = [("STABLEPAY_TRUSTED_PROXIES", "127.0.0.9/32".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    let token = invoice_token(&app, &m).await;
    let proxy = client_from("127.0.0.9");
    let read = |c: &reqwest::Client, forwarded: &str| {
        c.get(app.url(&format!("/v1/public/invoices/{token}"))).header("X-Forwarded-For", forwarded)
    };
    // Behind the trusted proxy, each forwarded client has its own budget.
    let refused = until_refused(&app, || read(&proxy, "198.51.100.1"), 120, 120).await;
    assert_limited(&refused, "RATE_LIMITED", "public-read", 120);
    // The client is the nearest address the trusted proxy did not add.
    send(&app, read(&proxy, "198.51.100.1, 198.51.100.2")).await.ok(200);
    // An untrusted peer's X-Forwarded-For is ignored: its own address counts.
    let direct = client_from("127.0.0.10");
    let mut i = 0u32;
    let refused = until_refused(
        &app,
        || {
            i += 1;
            read(&direct, &format!("203.0.113.{}", i % 250))
        },
        120,
        120,
    )
    .await;
    assert_limited(&refused, "RATE_LIMITED", "public-read", 120);
}

#[tokio::test]
async fn two_processes_share_one_budget_through_redis_and_go_on_without_it() {
    let prefix = format!("stablepay-test-{}", std::process::id());
    let env = [("REDIS_URL", "redis://127.0.0.1:6379".to_owned()), ("STABLEPAY_REDIS_PREFIX", prefix)];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let (second, _child) = app.sibling(&env).await;
    let m = app.merchant("Shop");
    let token = invoice_token(&app, &m).await;
    let c = client_from("127.0.0.11");
    let submit = |base: &str, key: &str| {
        c.post(format!("{base}/v1/public/invoices/{token}/checkout")).header("Idempotency-Key", key)
    };
    for i in 0..10 {
        let base = if i % 2 == 0 { app.base.clone() } else { second.clone() };
        let r = send(&app, submit(&base, &format!("k{i}"))).await;
        r.ok(201);
        let remaining = 9 - i;
        assert!(r.header("ratelimit").unwrap().starts_with(&format!("\"public-checkout\";r={remaining};")), "{i}");
    }
    assert_limited(&send(&app, submit(&app.base, "k10")).await, "RATE_LIMITED", "public-checkout", 10);
    assert_limited(&send(&app, submit(&second, "k11")).await, "RATE_LIMITED", "public-checkout", 10);

    // Redis down: requests go through, without rate-limit headers, never a 5xx.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let down = [("REDIS_URL", format!("redis://127.0.0.1:{closed}"))];
    let app = TestApp::spawn_with(fresh_db().await, &down, &[]).await;
    let m = app.merchant("Shop");
    for _ in 0..25 {
        let r = app.post(&m.pk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await;
        r.ok(201);
        assert_eq!(r.header("ratelimit"), None);
    }
    assert!(app.logs().contains("rate limiter unavailable"));

    // ...but secret checks stay limited, by this process's own budgets: five wrong passwords,
    // then the sixth attempt is refused, the right password included.
    let args = ["user", "create", "--email", "ada@example.com", "--merchant", &m.id, "--role", "owner"];
    assert!(app.cli_with_input(&args, "correct horse battery staple\n").0);
    let login = |password: &str| {
        let body = json!({ "email": "ada@example.com", "password": password });
        app.http.post(app.url("/v1/dashboard/sessions")).json(&body)
    };
    app.send(login("correct horse battery staple")).await.ok(201);
    for _ in 0..5 {
        app.send(login("a wrong password, long enough")).await.assert_error(401, "INVALID_CREDENTIALS");
    }
    let r = app.send(login("correct horse battery staple")).await;
    r.assert_error(429, "RATE_LIMITED");
    assert!(r.header("retry-after").is_some());
}

/// The failure-only login quota through Redis: successes on either process are given back,
/// failures on either count, and the sixth attempt is refused by both.
#[tokio::test]
async fn the_failure_only_login_quota_is_shared_through_redis() {
    let prefix = format!("stablepay-login-{}-{}", std::process::id(), chrono::Utc::now().timestamp_micros());
    let env = [("REDIS_URL", "redis://127.0.0.1:6379".to_owned()), ("STABLEPAY_REDIS_PREFIX", prefix)];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let (second, _child) = app.sibling(&env).await;
    let m = app.merchant("Shop");
    let args = ["user", "create", "--email", "ada@example.com", "--merchant", &m.id, "--role", "owner"];
    assert!(app.cli_with_input(&args, "correct horse battery staple\n").0);
    let login = |base: &str, password: &str| {
        let body = serde_json::json!({ "email": "ada@example.com", "password": password });
        app.http.post(format!("{base}/v1/dashboard/sessions")).json(&body)
    };
    for i in 0..8 {
        let base = if i % 2 == 0 { app.base.clone() } else { second.clone() };
        app.send(login(&base, "correct horse battery staple")).await.ok(201);
    }
    for i in 0..5 {
        let base = if i % 2 == 0 { app.base.clone() } else { second.clone() };
        app.send(login(&base, "a wrong password, long enough")).await.assert_error(401, "INVALID_CREDENTIALS");
    }
    for base in [&app.base, &second] {
        let r = app.send(login(base, "correct horse battery staple")).await;
        r.assert_error(429, "RATE_LIMITED");
    }
}
