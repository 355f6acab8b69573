//! The dashboard's account pages against the real binary, as a browser without JavaScript
//! uses them (forms, cookies, redirects not followed): sign in and out, the home, and the
//! pages the emailed links open, each through the same use cases and quotas as the API.

use std::time::Duration;

use serde_json::json;

use crate::dashboard::{PASSWORD, owner};
use crate::emails::{Smtp, env as smtp_env, header};
use crate::form_client::{Browser, encoded, hidden};
use crate::support::{TestApp, fresh_db};

fn token_in(message: &str, page: &str) -> String {
    let text = message.replace("=\r\n", "").replace("=\n", "").replace("=3D", "=");
    let marker = format!("/dashboard/{page}?token=");
    let at = text.find(&marker).unwrap() + marker.len();
    text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect()
}

#[tokio::test]
async fn signing_in_and_out_through_the_pages() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Café Lumière");
    owner(&app, &m, "ada@example.com");
    let mut b = Browser::new(&app);
    // Without a session the dashboard sends to the sign-in page.
    let home = b.get("/dashboard").await;
    assert_eq!((home.status, home.location.as_deref()), (303, Some("/dashboard/login")));
    let form = b.get("/dashboard/login").await;
    assert_eq!(form.status, 200);
    assert!(form.html.contains("action=\"/dashboard/login\""));
    // A wrong password: the form again, the API's words, no cookie.
    let wrong =
        b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", "not the password at all")]).await;
    assert_eq!(wrong.status, 401);
    assert!(wrong.html.contains("role=\"alert\"") && wrong.html.contains("ada@example.com"), "{}", wrong.html);
    assert!(wrong.set_cookie.is_none());
    // A form posted from another site is refused.
    let evil = b
        .http
        .post(format!("{}/dashboard/login", b.base))
        .header("Origin", "https://evil.example")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(encoded(&[("email", "ada@example.com"), ("password", PASSWORD)]));
    assert_eq!(b.answer(evil).await.status, 403);
    // Signed in: the cookie and the dashboard.
    let signed = b.post("/dashboard/login", &[("email", "ADA@example.com"), ("password", PASSWORD), ("otp", "")]).await;
    assert_eq!((signed.status, signed.location.as_deref()), (303, Some("/dashboard")));
    assert!(signed.set_cookie.unwrap().contains("HttpOnly; SameSite=Lax"));
    let home = b.get("/dashboard").await;
    assert_eq!(home.status, 200);
    assert!(home.html.contains("ada@example.com") && home.html.contains("Café Lumière") && home.html.contains("owner"));
    assert_eq!(b.get("/dashboard/login").await.location.as_deref(), Some("/dashboard"));
    // Sign out needs the session's CSRF token.
    assert_eq!(b.post("/dashboard/logout", &[("csrfToken", "wrong")]).await.status, 403);
    let csrf = hidden(&home.html, "csrfToken");
    let out = b.post("/dashboard/logout", &[("csrfToken", &csrf)]).await;
    assert_eq!((out.status, out.location.as_deref()), (303, Some("/dashboard/login")));
    assert!(out.set_cookie.unwrap().contains("Max-Age=0"));
    b.cookie = Some(csrf);
    assert_eq!(b.get("/dashboard").await.location.as_deref(), Some("/dashboard/login"));
}

#[tokio::test]
async fn the_pages_the_emailed_links_open_use_each_link_once() {
    let smtp = Smtp::start().await;
    let mut env = smtp_env(&smtp);
    env.push(("STABLEPAY_SIGNUP", "open".to_owned()));
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let signup = json!({ "email": "eve@example.com", "password": PASSWORD, "name": "Eve", "businessName": "Eve's" });
    app.send(app.http.post(app.url("/v1/dashboard/signup")).json(&signup)).await.ok(202);
    let mail = smtp.wait_for_within(1, Duration::from_secs(30)).await.remove(0);
    let token = token_in(&mail, "verify-email");
    let mut b = Browser::new(&app);
    // Opening the link does not use it (a mail scanner may open it first); its button does.
    for _ in 0..2 {
        let page = b.get(&format!("/dashboard/verify-email?token={token}")).await;
        assert_eq!(page.status, 200);
        assert_eq!(hidden(&page.html, "token"), token);
    }
    let done = b.post("/dashboard/verify-email", &[("token", &token)]).await;
    assert_eq!(done.status, 200, "{}", done.html);
    assert!(done.html.contains("verified"));
    let again = b.post("/dashboard/verify-email", &[("token", &token)]).await;
    assert_eq!(again.status, 404);
    assert!(again.html.contains("already used"), "{}", again.html);

    // Forgotten password: the same page either way, then the link's form.
    let unknown = b.post("/dashboard/forgot-password", &[("email", "nobody@example.com")]).await;
    let known = b.post("/dashboard/forgot-password", &[("email", "eve@example.com")]).await;
    assert_eq!((unknown.status, known.status), (200, 200));
    assert_eq!(unknown.html, known.html);
    let messages = smtp.wait_for_within(2, Duration::from_secs(30)).await;
    let reset_mail = messages.iter().find(|m| header(m, "Subject").is_some_and(|s| s.contains("Reset"))).unwrap();
    let reset = token_in(reset_mail, "reset-password");
    let short = b.post("/dashboard/reset-password", &[("token", &reset), ("password", "short")]).await;
    assert_eq!(short.status, 400);
    assert_eq!(hidden(&short.html, "token"), reset, "the form keeps its link");
    let set = b.post("/dashboard/reset-password", &[("token", &reset), ("password", "a brand new passphrase")]).await;
    assert_eq!(set.status, 200);
    let signed =
        b.post("/dashboard/login", &[("email", "eve@example.com"), ("password", "a brand new passphrase")]).await;
    assert_eq!(signed.status, 303);

    // An invitation's page: a new account joins and is signed in.
    let home = b.get("/dashboard").await;
    let csrf = hidden(&home.html, "csrfToken");
    let session = app.send(
        app.http
            .get(app.url("/v1/dashboard/session"))
            .header("Cookie", format!("stablepay_session={}", b.cookie.clone().unwrap())),
    );
    let merchant = session.await.ok(200)["memberships"][0]["merchantId"].as_str().unwrap().to_owned();
    let invite = app
        .http
        .post(app.url(&format!("/v1/dashboard/merchants/{merchant}/invitations")))
        .header("Cookie", format!("stablepay_session={}", b.cookie.clone().unwrap()))
        .header("X-CSRF-Token", csrf)
        .json(&json!({ "email": "grace@example.com", "role": "viewer" }));
    app.send(invite).await.ok(201);
    let messages = smtp.wait_for_within(3, Duration::from_secs(30)).await;
    let invitation = messages.iter().find(|m| header(m, "To") == Some("grace@example.com")).unwrap();
    let token = token_in(invitation, "accept-invitation");
    let mut grace = Browser::new(&app);
    let page = grace.get(&format!("/dashboard/accept-invitation?token={token}")).await;
    assert_eq!(hidden(&page.html, "token"), token);
    let joined = grace
        .post("/dashboard/accept-invitation", &[("token", &token), ("name", "Grace"), ("password", PASSWORD)])
        .await;
    assert_eq!((joined.status, joined.location.as_deref()), (303, Some("/dashboard")));
    let home = grace.get("/dashboard").await;
    assert!(home.html.contains("Eve&#39;s") || home.html.contains("Eve's"), "{}", home.html);
    assert!(home.html.contains("viewer"));
}

#[tokio::test]
async fn the_invoice_list_pages_filters_and_keeps_each_merchant_and_mode_apart() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let other = app.merchant("Elsewhere");
    owner(&app, &m, "ada@example.com");
    let mut ids = Vec::new();
    for amount in ["1.00", "2.00", "3.00"] {
        let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": amount })).await.ok(201).clone();
        ids.push(cs["invoiceId"].as_str().unwrap().to_owned());
    }
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "4.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    let numbers: Vec<String> = app.get(&m.sk_test, "/v1/invoices?limit=100").await.ok(200)["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["invoiceNumber"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(numbers.len(), 4);

    let mut b = Browser::new(&app);
    assert_eq!(b.get("/dashboard/invoices").await.location.as_deref(), Some("/dashboard/login"));
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let list = b.get("/dashboard/invoices").await;
    assert_eq!(list.status, 200);
    assert!(list.html.contains("Test mode"), "the test banner");
    for n in &numbers {
        assert!(list.html.contains(n.as_str()), "{n} listed");
    }
    // Paged by the API's cursor, the page size kept in the next page's URL: no overlap, no gap.
    let first = b.get(&format!("/dashboard/invoices?merchant={}&mode=test&limit=3", m.id)).await;
    let next =
        first.html.split("rel=\"next\" href=\"").nth(1).unwrap().split('"').next().unwrap().replace("&amp;", "&");
    assert!(next.contains("limit=3") && next.contains("after=inv_"), "{next}");
    let second = b.get(&next).await;
    for n in &numbers {
        let on = [&first.html, &second.html].iter().filter(|h| h.contains(n.as_str())).count();
        assert_eq!(on, 1, "{n} on exactly one page");
    }
    assert!(!second.html.contains("rel=\"next\""));
    // Filtered in the URL: the paid one only.
    let paid = b.get(&format!("/dashboard/invoices?merchant={}&mode=test&state=paid", m.id)).await;
    assert_eq!(numbers.iter().filter(|n| paid.html.contains(n.as_str())).count(), 1, "{}", paid.html);
    assert!(paid.html.contains("<option value=\"paid\" selected>"), "the filter is kept");
    // The paid invoice's page: totals, its payment's hash (not linked in test mode), activity.
    let paid_id = cs["invoiceId"].as_str().unwrap();
    let detail = b.get(&format!("/dashboard/invoices/{paid_id}?merchant={}&mode=test", m.id)).await;
    assert_eq!(detail.status, 200);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{paid_id}")).await.ok(200).clone();
    let payments = api["payments"].clone();
    assert!(detail.html.contains(api["invoiceNumber"].as_str().unwrap()));
    assert!(detail.html.contains("paid") && detail.html.contains(api["total"].as_str().unwrap()), "{}", detail.html);
    let hash = payments[0]["transactionId"].as_str().expect("the payment's hash");
    assert!(detail.html.contains(hash) && !detail.html.contains("/tx/"), "{}", detail.html);
    assert!(detail.html.contains("class=\"activity\""));
    // The same id in live mode, or from another merchant, is not found.
    assert_eq!(b.get(&format!("/dashboard/invoices/{paid_id}?merchant={}&mode=live", m.id)).await.status, 404);
    let theirs = app.post(&other.sk_test, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await.ok(201).clone();
    let their_id = theirs["invoiceId"].as_str().unwrap();
    assert_eq!(b.get(&format!("/dashboard/invoices/{their_id}?merchant={}&mode=test", m.id)).await.status, 404);
    // Live mode shows nothing of test mode; another merchant is not found; a bad mode too.
    let live = b.get(&format!("/dashboard/invoices?merchant={}&mode=live", m.id)).await;
    assert_eq!(live.status, 200);
    assert!(numbers.iter().all(|n| !live.html.contains(n.as_str())) && live.html.contains("No invoices"));
    assert_eq!(b.get(&format!("/dashboard/invoices?merchant={}&mode=test", other.id)).await.status, 404);
    assert_eq!(b.get(&format!("/dashboard/invoices?merchant={}&mode=staging", m.id)).await.status, 404);
    // A viewer reads the list too; an unverified member sees live mode refused on a page that says so.
    let args = ["user", "create", "--email", "vera@example.com", "--merchant", &m.id, "--role", "viewer"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    let mut vera = Browser::new(&app);
    vera.post("/dashboard/login", &[("email", "vera@example.com"), ("password", PASSWORD)]).await;
    assert_eq!(vera.get("/dashboard/invoices").await.status, 200);
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.batch_execute("UPDATE users SET email_verified_at = NULL WHERE email = 'vera@example.com'").await.unwrap();
    let refused = vera.get(&format!("/dashboard/invoices?merchant={}&mode=live", m.id)).await;
    assert_eq!(refused.status, 403);
    assert!(refused.html.contains("verify your email"), "{}", refused.html);
}

#[tokio::test]
async fn the_payment_link_list_shows_each_links_state_and_public_page() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let tips = json!({ "title": "Tip jar", "amountType": "fixed", "amount": "5.00" });
    let tips = app.post(&m.sk_test, "/v1/payment-links", tips).await.ok(201).clone();
    let course = json!({ "title": "Course <b>", "amountType": "fixed", "amount": "50.00" });
    let course = app.post(&m.sk_test, "/v1/payment-links", course).await.ok(201).clone();
    let pause = format!("/v1/payment-links/{}/pause", course["id"].as_str().unwrap());
    app.post(&m.sk_test, &pause, json!({})).await.ok(200);
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let all = b.get(&format!("/dashboard/payment-links?merchant={}&mode=test", m.id)).await;
    assert_eq!(all.status, 200);
    assert!(all.html.contains("Tip jar") && all.html.contains("Course &lt;b&gt;"), "escaped: {}", all.html);
    assert!(all.html.contains(tips["url"].as_str().unwrap()) && all.html.contains(course["url"].as_str().unwrap()));
    let paused = b.get(&format!("/dashboard/payment-links?merchant={}&mode=test&state=paused", m.id)).await;
    assert!(paused.html.contains("Course &lt;b&gt;") && !paused.html.contains("Tip jar"), "{}", paused.html);
    let live = b.get(&format!("/dashboard/payment-links?merchant={}&mode=live", m.id)).await;
    assert!(live.html.contains("No payment links") && !live.html.contains("Tip jar"));
}

#[tokio::test]
async fn the_delivery_log_says_why_a_webhook_fails() {
    use crate::receiver::{Receiver, Reply};
    let env = [
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000".to_owned()),
    ];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let rx = Receiver::start().await;
    rx.answer(Reply::Status(503));
    let body = json!({ "url": rx.url("/hook"), "eventTypes": ["invoice.paid"] });
    app.post(&m.sk_test, "/v1/webhook-endpoints", body).await.ok(201);
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "2.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    rx.wait_for(2, Duration::from_secs(20)).await;
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let path = format!("/dashboard/webhooks?merchant={}&mode=test&status=failed", m.id);
    let mut failed = b.get(&path).await;
    for _ in 0..100 {
        if failed.html.contains("invoice.paid") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        failed = b.get(&path).await;
    }
    assert_eq!(failed.status, 200);
    assert!(failed.html.contains("invoice.paid") && failed.html.contains("HTTP 503"), "{}", failed.html);
    assert!(failed.html.contains("http_5xx"), "{}", failed.html);
    let delivered = b.get(&format!("/dashboard/webhooks?merchant={}&mode=test&status=delivered", m.id)).await;
    assert!(delivered.html.contains("No deliveries") && !delivered.html.contains("HTTP 503"));
}

#[tokio::test]
async fn the_sign_up_page_makes_a_merchant_and_its_owner_when_sign_up_is_open() {
    // Closed by default (invitations): the page says how accounts are made.
    let closed = TestApp::spawn().await;
    let page = Browser::new(&closed).get("/dashboard/signup").await;
    assert_eq!(page.status, 404);
    assert!(page.html.contains("by invitation"), "{}", page.html);

    let smtp = Smtp::start().await;
    let mut env = smtp_env(&smtp);
    env.push(("STABLEPAY_SIGNUP", "open".to_owned()));
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let mut b = Browser::new(&app);
    assert_eq!(b.get("/dashboard/signup").await.status, 200);
    // A short password: the form again with the rule, what was typed kept (not the password).
    let short =
        [("name", "Grace"), ("businessName", "Hopper Tea"), ("email", "grace@example.com"), ("password", "short")];
    let refused = b.post("/dashboard/signup", &short).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("value=\"Hopper Tea\"") && !refused.html.contains("value=\"short\""));
    let good =
        [("name", "Grace"), ("businessName", "Hopper Tea"), ("email", "grace@example.com"), ("password", PASSWORD)];
    let done = b.post("/dashboard/signup", &good).await;
    assert_eq!(done.status, 200, "{}", done.html);
    assert!(done.html.contains("Check your email"));
    let message = smtp.wait_for_within(1, Duration::from_secs(20)).await;
    assert!(message.iter().any(|m| header(m, "To") == Some("grace@example.com")), "the verification email");
    // Signed in: the new merchant, with its owner.
    b.post("/dashboard/login", &[("email", "grace@example.com"), ("password", PASSWORD)]).await;
    let home = b.get("/dashboard").await;
    assert!(home.html.contains("Hopper Tea") && home.html.contains("owner"), "{}", home.html);
    // A form from another site is refused.
    let forged = b
        .http
        .post(format!("{}/dashboard/signup", b.base))
        .header("Origin", "https://evil.example")
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body(encoded(&good))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status().as_u16(), 403);
}
