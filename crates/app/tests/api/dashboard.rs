//! Dashboard accounts and sessions against the real binary: the operator's first owner (the
//! password on standard input), login without account enumeration, the session cookie's flags,
//! the session read, CSRF refusals, logout here and everywhere, idle and absolute expiry, and
//! no secret in any log line.

use serde_json::{Value, json};

use crate::support::{Merchant, Response, TestApp, fresh_db};

pub(crate) const PASSWORD: &str = "correct horse battery staple";

pub(crate) fn owner(app: &TestApp, m: &Merchant, email: &str) -> Value {
    let args = [
        "user",
        "create",
        "--email",
        email,
        "--name",
        "Ada Lovelace",
        "--merchant",
        &m.id,
        "--role",
        "owner",
        "--json",
    ];
    let (ok, value, stderr) = app.cli_with_input(&args, &format!("{PASSWORD}\n"));
    assert!(ok, "{stderr}");
    value
}

pub(crate) async fn login(app: &TestApp, email: &str, password: &str) -> Response {
    let body = json!({ "email": email, "password": password });
    app.send(app.http.post(app.url("/v1/dashboard/sessions")).json(&body)).await
}

/// The session token of a login's answer (its Set-Cookie).
pub(crate) fn token_of(r: &Response) -> String {
    let cookie = r.headers["set-cookie"].to_str().unwrap();
    cookie.split(';').next().unwrap().strip_prefix("stablepay_session=").unwrap().to_owned()
}

pub(crate) async fn session(app: &TestApp, token: &str) -> Response {
    app.send(app.http.get(app.url("/v1/dashboard/session")).header("Cookie", format!("stablepay_session={token}")))
        .await
}

async fn end(app: &TestApp, path: &str, token: &str, csrf: Option<&str>, origin: Option<&str>) -> Response {
    let mut req = app.http.delete(app.url(path)).header("Cookie", format!("other=1; stablepay_session={token}"));
    if let Some(csrf) = csrf {
        req = req.header("X-CSRF-Token", csrf);
    }
    if let Some(origin) = origin {
        req = req.header("Origin", origin);
    }
    app.send(req).await
}

#[tokio::test]
async fn the_operator_creates_an_owner_whose_password_follows_the_policy() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let created = owner(&app, &m, "Ada@Example.com");
    assert_eq!((created["email"].as_str(), created["role"].as_str()), (Some("ada@example.com"), Some("owner")));
    assert!(created["id"].as_str().unwrap().starts_with("usr_"));
    let refusals = [
        (vec!["--email", "bob@example.com", "--merchant", m.id.as_str()], "short password\n", "password"),
        (vec!["--email", "ADA@example.com", "--merchant", m.id.as_str()], "another long password\n", "email"),
        (vec!["--email", "bob", "--merchant", m.id.as_str()], "another long password\n", "email"),
        (vec!["--email", "bob@example.com", "--merchant", "mer_nobody"], "another long password\n", "NOT_FOUND"),
    ];
    for (args, input, named) in refusals {
        let mut all = vec!["user", "create", "--role", "admin"];
        all.extend(args);
        let (ok, _, stderr) = app.cli_with_input(&all, input);
        assert!(!ok && stderr.contains(named), "{all:?}: {stderr}");
    }
    // Nothing of a refused user exists: bob cannot log in with any of those passwords.
    assert_eq!(
        login(&app, "bob@example.com", "another long password").await.assert_error(401, "INVALID_CREDENTIALS"),
        None
    );
}

#[tokio::test]
async fn a_login_sets_a_strict_cookie_and_an_unknown_email_reads_like_a_wrong_password() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let wrong = login(&app, "ada@example.com", "not the password at all").await;
    let unknown = login(&app, "nobody@example.com", PASSWORD).await;
    for r in [&wrong, &unknown] {
        r.assert_error(401, "INVALID_CREDENTIALS");
        assert!(r.headers.get("set-cookie").is_none());
    }
    assert_eq!(wrong.body["error"]["message"], unknown.body["error"]["message"]);

    let r = login(&app, " ADA@example.com", PASSWORD).await;
    let data = r.ok(201).clone();
    let cookie = r.headers["set-cookie"].to_str().unwrap().to_owned();
    let token = token_of(&r);
    assert_eq!(cookie, format!("stablepay_session={token}; HttpOnly; SameSite=Lax; Path=/; Max-Age=604800"));
    assert_eq!(token.len(), 43);
    assert!(!r.body.to_string().contains(&token), "the token is only in the cookie");
    assert_eq!(
        (data["object"].as_str(), data["user"]["email"].as_str()),
        (Some("dashboard_session"), Some("ada@example.com"))
    );
    assert_eq!(data["memberships"], json!([{ "merchantId": m.id, "role": "owner", "requiresTwoFactor": false }]));
    let read = session(&app, &token).await.ok(200).clone();
    assert_eq!((read["id"].clone(), read["csrfToken"].clone()), (data["id"].clone(), data["csrfToken"].clone()));

    // Every login is a new session with a new token; a token sent along is never adopted.
    let req = app
        .http
        .post(app.url("/v1/dashboard/sessions"))
        .header("Cookie", format!("stablepay_session={}", "f".repeat(43)));
    let again = app.send(req.json(&json!({ "email": "ada@example.com", "password": PASSWORD }))).await;
    let second = token_of(&again);
    assert!(second != token && second != "f".repeat(43));
    assert_ne!(again.ok(201)["id"], data["id"]);
    session(&app, &"f".repeat(43)).await.assert_error(401, "AUTH_REQUIRED");
    // No session, a malformed one, or a session cookie on the merchant API: nothing is let in.
    app.send(app.http.get(app.url("/v1/dashboard/session"))).await.assert_error(401, "AUTH_REQUIRED");
    session(&app, "x").await.assert_error(401, "AUTH_REQUIRED");
    let api = app.http.get(app.url("/v1/invoices")).header("Cookie", format!("stablepay_session={token}"));
    app.send(api).await.assert_error(401, "API_KEY_REQUIRED");
    // Nothing secret reaches the logs.
    let logs = app.logs();
    for secret in [PASSWORD, &token, &second, data["csrfToken"].as_str().unwrap()] {
        assert!(!logs.contains(secret), "a secret is in the logs");
    }
}

#[tokio::test]
async fn logouts_need_the_csrf_token_and_end_here_or_everywhere() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let first = login(&app, "ada@example.com", PASSWORD).await;
    let (token, csrf) = (token_of(&first), first.body["data"]["csrfToken"].as_str().unwrap().to_owned());
    // Refused, and nothing changed: no token, a wrong one, another site's origin.
    end(&app, "/v1/dashboard/sessions/current", &token, None, None).await.assert_error(403, "AUTH_FORBIDDEN");
    end(&app, "/v1/dashboard/sessions/current", &token, Some("wrong"), None).await.assert_error(403, "AUTH_FORBIDDEN");
    let evil = Some("https://evil.example");
    end(&app, "/v1/dashboard/sessions/current", &token, Some(&csrf), evil).await.assert_error(403, "AUTH_FORBIDDEN");
    session(&app, &token).await.ok(200);
    // Logged out here: the cookie is cleared and the session is gone.
    let own_origin = Some(app.base.as_str());
    let r = end(&app, "/v1/dashboard/sessions/current", &token, Some(&csrf), own_origin).await;
    assert_eq!(r.ok(200)["ended"], 1);
    assert!(
        r.headers["set-cookie"]
            .to_str()
            .unwrap()
            .starts_with("stablepay_session=; HttpOnly; SameSite=Lax; Path=/; Max-Age=0")
    );
    session(&app, &token).await.assert_error(401, "AUTH_REQUIRED");

    // Three sessions, logged out everywhere from one of them.
    let mut tokens = Vec::new();
    let mut last_csrf = String::new();
    for _ in 0..3 {
        let r = login(&app, "ada@example.com", PASSWORD).await;
        last_csrf = r.body["data"]["csrfToken"].as_str().unwrap().to_owned();
        tokens.push(token_of(&r));
    }
    let r = end(&app, "/v1/dashboard/sessions", &tokens[2], Some(&last_csrf), None).await;
    assert_eq!(r.ok(200)["ended"], 3);
    for t in &tokens {
        session(&app, t).await.assert_error(401, "AUTH_REQUIRED");
    }
}

#[tokio::test]
async fn a_session_ends_when_idle_or_at_its_absolute_end_as_configured() {
    let env =
        [("STABLEPAY_SESSION_IDLE_MINUTES", "30".to_owned()), ("STABLEPAY_SESSION_ABSOLUTE_HOURS", "2".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let db = stablepay_test_db::connect(&app.db.url()).await;
    let first = login(&app, "ada@example.com", PASSWORD).await;
    assert!(first.headers["set-cookie"].to_str().unwrap().contains("; Max-Age=7200"), "two hours");
    let (idle, old) = (token_of(&first), token_of(&login(&app, "ada@example.com", PASSWORD).await));
    let idle_id = session(&app, &idle).await.ok(200)["id"].as_str().unwrap().to_owned();
    let old_id = session(&app, &old).await.ok(200)["id"].as_str().unwrap().to_owned();
    let sql = format!(
        "UPDATE sessions SET last_seen_at = now() - interval '31 minutes' WHERE id = '{idle_id}'; \
         UPDATE sessions SET created_at = now() - interval '2 hours 1 minute', last_seen_at = now() WHERE id = '{old_id}'"
    );
    db.batch_execute(&sql).await.unwrap();
    session(&app, &idle).await.assert_error(401, "AUTH_REQUIRED");
    session(&app, &old).await.assert_error(401, "AUTH_REQUIRED");
    let left = db.query("SELECT count(*) FROM sessions", &[]).await.unwrap();
    assert_eq!(left[0].get::<_, i64>(0), 0, "ended sessions are deleted");
}

#[tokio::test]
async fn five_failed_logins_close_an_account_for_a_while_and_successes_never_count() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    owner(&app, &m, "bob@example.com");
    for _ in 0..10 {
        login(&app, "ada@example.com", PASSWORD).await.ok(201);
    }
    for _ in 0..5 {
        login(&app, "ada@example.com", "not the password at all").await.assert_error(401, "INVALID_CREDENTIALS");
    }
    // The sixth attempt is refused before the password is looked at, the right one included.
    let r = login(&app, "ADA@example.com", PASSWORD).await;
    r.assert_error(429, "RATE_LIMITED");
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=180).contains(&retry), "{retry}");
    assert_eq!(r.headers["ratelimit-policy"], "\"dashboard-login-account\";q=5;w=900");
    assert!(r.headers.get("set-cookie").is_none());
    // Another account from the same address is open.
    login(&app, "bob@example.com", PASSWORD).await.ok(201);
    // An email without an account has its quota like any other: nothing tells them apart.
    for _ in 0..5 {
        login(&app, "nobody@example.com", PASSWORD).await.assert_error(401, "INVALID_CREDENTIALS");
    }
    login(&app, "nobody@example.com", PASSWORD).await.assert_error(429, "RATE_LIMITED");
}
