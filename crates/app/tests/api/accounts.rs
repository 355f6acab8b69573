//! Accounts against the real binary, with the emails received through aiosmtpd: sign-up in each
//! mode, email verification, password reset and invitations (single use, expiry), two-factor
//! login (enrolment, codes used once, recovery codes, a merchant's requirement), members and
//! the last-owner rule, every role walked over the team's actions, the audit log, enumeration
//! (same answer and about the same time) and no secret in a log line.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::dashboard::{PASSWORD, login, owner, session, token_of};
use crate::emails::{Smtp, env as smtp_env, header};
use crate::support::{Response, TestApp, fresh_db};

/// A signed-in user as a test drives them: the cookie's token and the CSRF token.
struct Signed {
    token: String,
    csrf: String,
}

impl Signed {
    fn of(r: &Response) -> Self {
        Self { token: token_of(r), csrf: r.body["data"]["csrfToken"].as_str().unwrap().to_owned() }
    }

    async fn as_user(app: &TestApp, email: &str) -> Self {
        Self::of(&login(app, email, PASSWORD).await)
    }

    fn get(&self, app: &TestApp, path: &str) -> reqwest::RequestBuilder {
        app.http.get(app.url(path)).header("Cookie", format!("stablepay_session={}", self.token))
    }

    fn change(&self, app: &TestApp, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        app.http
            .request(method, app.url(path))
            .header("Cookie", format!("stablepay_session={}", self.token))
            .header("X-CSRF-Token", &self.csrf)
    }

    fn post(&self, app: &TestApp, path: &str, body: &Value) -> reqwest::RequestBuilder {
        self.change(app, reqwest::Method::POST, path).json(body)
    }
}

async fn spawn(signup: &str) -> (Smtp, TestApp) {
    let smtp = Smtp::start().await;
    let mut env = smtp_env(&smtp);
    env.push(("STABLEPAY_SIGNUP", signup.to_owned()));
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    (smtp, app)
}

/// The token of the link to dashboard page `page` in `message` (its text decoded from
/// quoted-printable).
fn token_in(message: &str, page: &str) -> String {
    let text = message.replace("=\r\n", "").replace("=\n", "").replace("=3D", "=");
    let marker = format!("/dashboard/{page}?token=");
    let at = text.find(&marker).unwrap_or_else(|| panic!("no {page} link in:\n{message}")) + marker.len();
    text[at..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_').collect()
}

/// The message to `to` whose `page` link is not one of `seen`, waiting for the `n`th message in
/// all (messages sent within one second carry the same Date: arrival is told by the new link).
async fn mail_to(smtp: &Smtp, n: usize, to: &str) -> String {
    new_mail_to(smtp, n, to, &[]).await
}

async fn new_mail_to(smtp: &Smtp, n: usize, to: &str, seen: &[&str]) -> String {
    let messages = smtp.wait_for_within(n, Duration::from_secs(30)).await;
    messages
        .into_iter()
        .filter(|m| header(m, "To") == Some(to))
        .find(|m| !seen.iter().any(|s| m.replace("=\r\n", "").replace("=\n", "").contains(s)))
        .unwrap_or_else(|| panic!("no new message to {to}"))
}

async fn post(app: &TestApp, path: &str, body: Value) -> Response {
    app.send(app.http.post(app.url(path)).json(&body)).await
}

async fn count(app: &TestApp, sql: &str) -> i64 {
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.query(sql, &[]).await.unwrap()[0].get::<_, i64>(0)
}

/// RFC 6238's code of `secret` (base32) at `step`, computed here independently of the service.
pub(crate) fn totp(secret: &str, step: i64) -> String {
    let mut bytes = Vec::new();
    let (mut buffer, mut bits) = (0u32, 0u32);
    for c in secret.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'2'..=b'7' => c - b'2' + 26,
            _ => panic!("not base32"),
        };
        buffer = (buffer << 5) | u32::from(v);
        bits += 5;
        if bits >= 8 {
            bits -= 8;
            bytes.push(u8::try_from((buffer >> bits) & 0xff).unwrap());
        }
    }
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, &bytes);
    let mac = ring::hmac::sign(&key, &step.to_be_bytes());
    let mac = mac.as_ref();
    let offset = usize::from(mac[19] & 0x0f);
    let n = u32::from_be_bytes([mac[offset] & 0x7f, mac[offset + 1], mac[offset + 2], mac[offset + 3]]);
    format!("{:06}", n % 1_000_000)
}

fn step_now(offset: i64) -> i64 {
    chrono::Utc::now().timestamp().div_euclid(30) + offset
}

#[tokio::test]
async fn sign_up_follows_the_operators_setting_and_never_tells_who_has_an_account() {
    // Invite (the default) and closed: no open sign-up; closed also refuses invitations.
    let (_smtp, app) = spawn("invite").await;
    let body = json!({ "email": "eve@example.com", "password": PASSWORD, "name": "Eve", "businessName": "Eve's" });
    post(&app, "/v1/dashboard/signup", body.clone()).await.assert_error(422, "FEATURE_UNAVAILABLE");
    let (_smtp2, closed) = spawn("closed").await;
    let m = closed.merchant("Shop");
    owner(&closed, &m, "ada@example.com");
    let ada = Signed::as_user(&closed, "ada@example.com").await;
    let invite = json!({ "email": "grace@example.com", "role": "viewer" });
    let r = closed.send(ada.post(&closed, &format!("/v1/dashboard/merchants/{}/invitations", m.id), &invite)).await;
    r.assert_error(422, "FEATURE_UNAVAILABLE");

    // Open: a new merchant, its owner unverified (test mode only) until the emailed link.
    let (smtp, app) = spawn("open").await;
    let refused = post(
        &app,
        "/v1/dashboard/signup",
        json!({ "email": "eve@example.com", "password": "short", "name": "Eve", "businessName": "Eve's" }),
    )
    .await;
    assert_eq!(refused.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("password"));
    let refused = post(
        &app,
        "/v1/dashboard/signup",
        json!({ "email": "eve@example.com", "password": PASSWORD, "name": "Eve", "businessName": "" }),
    )
    .await;
    assert_eq!(refused.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("businessName"));
    assert_eq!(count(&app, "SELECT count(*) FROM users").await, 0, "a refusal writes nothing");
    let new = post(&app, "/v1/dashboard/signup", body.clone()).await;
    let answer = new.ok(202).clone();
    let eve = Signed::as_user(&app, "eve@example.com").await;
    let read = app.send(eve.get(&app, "/v1/dashboard/session")).await.ok(200).clone();
    assert_eq!(read["user"]["emailVerified"], false);
    assert_eq!(read["memberships"][0]["role"], "owner");
    let merchant = read["memberships"][0]["merchantId"].as_str().unwrap().to_owned();
    // Unverified: live mode is refused, test mode is open (the team's read is modeless).
    app.send(eve.get(&app, &format!("/v1/dashboard/merchants/{merchant}/members"))).await.ok(200);

    // The same email again: the same answer, nothing created, and the address is told.
    let again = post(
        &app,
        "/v1/dashboard/signup",
        json!({ "email": "EVE@example.com", "password": "another long password", "name": "X", "businessName": "Y" }),
    )
    .await;
    assert_eq!(again.ok(202), &answer);
    assert_eq!(count(&app, "SELECT count(*) FROM merchants").await, 1);

    let both = smtp.wait_for_within(2, Duration::from_secs(30)).await;
    let subject_has = |m: &&String, text: &str| header(m, "Subject").is_some_and(|s| s.contains(text));
    let verify = both.iter().find(|m| subject_has(m, "Verify")).unwrap();
    let token = token_in(verify, "verify-email");
    assert_eq!(token.len(), 43);
    let notice = both.iter().find(|m| subject_has(m, "already have")).unwrap();
    let reset = token_in(notice, "reset-password");

    post(&app, "/v1/dashboard/email-verifications/confirm", json!({ "token": token })).await.ok(200);
    let used = post(&app, "/v1/dashboard/email-verifications/confirm", json!({ "token": token })).await;
    assert_eq!(used.assert_error(404, "NOT_FOUND").as_deref(), Some("token"));
    assert_eq!(used.body["error"]["details"]["reason"], "used");
    let read = app.send(eve.get(&app, "/v1/dashboard/session")).await.ok(200).clone();
    assert_eq!(read["user"]["emailVerified"], true);
    // The notice's link resets the password of the existing account.
    let r = post(
        &app,
        "/v1/dashboard/password-resets/confirm",
        json!({ "token": reset, "password": "a brand new passphrase" }),
    )
    .await;
    r.ok(200);
    login(&app, "eve@example.com", "a brand new passphrase").await.ok(201);

    // No token, password or link reached the logs.
    let logs = app.logs();
    for secret in [PASSWORD, token.as_str(), reset.as_str(), eve.token.as_str(), "a brand new passphrase"] {
        assert!(!logs.contains(secret), "a secret is in the logs");
    }
}

#[tokio::test]
async fn a_reset_link_works_once_within_its_hour_and_ends_every_session() {
    let (smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let before = Signed::as_user(&app, "ada@example.com").await;
    // An unknown address gets the same answer, and no email.
    let unknown = post(&app, "/v1/dashboard/password-resets", json!({ "email": "nobody@example.com" })).await;
    let known = post(&app, "/v1/dashboard/password-resets", json!({ "email": "ADA@example.com" })).await;
    assert_eq!(unknown.ok(202)["object"], known.ok(202)["object"]);
    assert_eq!(unknown.body["data"]["next"], known.body["data"]["next"]);
    let mail = mail_to(&smtp, 1, "ada@example.com").await;
    let token = token_in(&mail, "reset-password");

    // A password outside the policy: refused, and the link still works.
    let short =
        post(&app, "/v1/dashboard/password-resets/confirm", json!({ "token": token, "password": "short" })).await;
    assert_eq!(short.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("password"));
    let bad = post(
        &app,
        "/v1/dashboard/password-resets/confirm",
        json!({ "token": "x".repeat(43), "password": "a brand new passphrase" }),
    )
    .await;
    assert_eq!(bad.assert_error(404, "NOT_FOUND").as_deref(), Some("token"));
    post(
        &app,
        "/v1/dashboard/password-resets/confirm",
        json!({ "token": token, "password": "a brand new passphrase" }),
    )
    .await
    .ok(200);
    session(&app, &before.token).await.assert_error(401, "AUTH_REQUIRED");
    login(&app, "ada@example.com", PASSWORD).await.assert_error(401, "INVALID_CREDENTIALS");
    login(&app, "ada@example.com", "a brand new passphrase").await.ok(201);
    let again = post(
        &app,
        "/v1/dashboard/password-resets/confirm",
        json!({ "token": token, "password": "yet another passphrase" }),
    )
    .await;
    assert_eq!(again.assert_error(404, "NOT_FOUND").as_deref(), Some("token"));

    // A link past its hour is refused; a newer link replaces an older one.
    post(&app, "/v1/dashboard/password-resets", json!({ "email": "ada@example.com" })).await.ok(202);
    let second = token_in(&new_mail_to(&smtp, 2, "ada@example.com", &[&token]).await, "reset-password");
    let db = stablepay_test_db::connect(&app.db.url()).await;
    db.batch_execute("UPDATE account_links SET expires_at = now() - interval '1 second' WHERE used_at IS NULL")
        .await
        .unwrap();
    let late = post(
        &app,
        "/v1/dashboard/password-resets/confirm",
        json!({ "token": second, "password": "yet another passphrase" }),
    )
    .await;
    let message = late.body["error"]["message"].as_str().unwrap().to_owned();
    assert_eq!(late.assert_error(404, "NOT_FOUND").as_deref(), Some("token"));
    assert_eq!(late.body["error"]["details"]["reason"], "expired");
    assert!(message.contains("expired"), "{message}");
    // Six requests for one address within the hour: the sixth is refused.
    for _ in 0..3 {
        post(&app, "/v1/dashboard/password-resets", json!({ "email": "ada@example.com" })).await.ok(202);
    }
    let r = post(&app, "/v1/dashboard/password-resets", json!({ "email": "ada@example.com" })).await;
    r.assert_error(429, "RATE_LIMITED");
    assert_eq!(r.headers["ratelimit-policy"], "\"dashboard-email\";q=5;w=3600");
}

#[tokio::test]
async fn two_factor_login_enrols_with_a_code_accepts_each_code_once_and_can_be_required() {
    let (_smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let ada = Signed::as_user(&app, "ada@example.com").await;
    // Requiring it of everyone needs it on oneself first.
    let security = format!("/v1/dashboard/merchants/{}/security", m.id);
    let r =
        app.send(ada.change(&app, reqwest::Method::PUT, &security).json(&json!({ "requireTwoFactor": true }))).await;
    assert_eq!(r.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("requireTwoFactor"));

    let started = app.send(ada.post(&app, "/v1/dashboard/two-factor", &json!({}))).await;
    let e = started.ok(201).clone();
    let secret = e["secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 32);
    assert!(e["otpauthUri"].as_str().unwrap().starts_with("otpauth://totp/stablepay:ada@example.com?secret="));
    assert!(e["qrCodeSvg"].as_str().unwrap().starts_with("<svg"));
    let wrong = app.send(ada.post(&app, "/v1/dashboard/two-factor/confirm", &json!({ "otp": "000000" }))).await;
    assert_eq!(wrong.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("otp"));
    let step = step_now(0);
    let confirmed =
        app.send(ada.post(&app, "/v1/dashboard/two-factor/confirm", &json!({ "otp": totp(&secret, step) }))).await;
    let codes: Vec<String> =
        confirmed.ok(200)["recoveryCodes"].as_array().unwrap().iter().map(|c| c.as_str().unwrap().to_owned()).collect();
    assert_eq!(codes.len(), 10);
    // A privilege change renews the session's token: the old one no longer works.
    let renewed = token_of(&confirmed);
    assert_ne!(renewed, ada.token);
    session(&app, &ada.token).await.assert_error(401, "AUTH_REQUIRED");
    session(&app, &renewed).await.ok(200);
    let db = stablepay_test_db::connect(&app.db.url()).await;
    let stored = db.query("SELECT totp_secret FROM users", &[]).await.unwrap()[0].get::<_, Vec<u8>>(0);
    assert!(!stored.windows(10).any(|w| secret.as_bytes().windows(10).any(|s| s == w)), "sealed, not in the clear");

    // Login: the password alone asks for the code; a wrong code and a used one are refused.
    let r = login(&app, "ada@example.com", PASSWORD).await;
    assert_eq!(r.assert_error(401, "INVALID_CREDENTIALS").as_deref(), Some("otp"));
    assert_eq!(r.body["error"]["details"]["reason"], "otp_required");
    let with = |otp: String| json!({ "email": "ada@example.com", "password": PASSWORD, "otp": otp });
    let r = post(&app, "/v1/dashboard/sessions", with(totp(&secret, step))).await;
    assert_eq!(r.body["error"]["details"]["reason"], "otp_invalid", "the enrolment's code was used: {}", r.body);
    let next = post(&app, "/v1/dashboard/sessions", with(totp(&secret, step + 1))).await;
    next.ok(201);
    post(&app, "/v1/dashboard/sessions", with(totp(&secret, step + 1))).await.assert_error(401, "INVALID_CREDENTIALS");
    // A recovery code signs in once, in any case and with its dashes or not.
    let code = codes[0].to_uppercase().replace('-', "");
    post(&app, "/v1/dashboard/sessions", with(code.clone())).await.ok(201);
    post(&app, "/v1/dashboard/sessions", with(code)).await.assert_error(401, "INVALID_CREDENTIALS");
    let ada = Signed::of(&next);
    assert_eq!(app.send(ada.get(&app, "/v1/dashboard/two-factor")).await.ok(200)["recoveryCodesLeft"], 9);

    // The owner requires it of everyone: a member without it can do nothing there but enrol.
    let r =
        app.send(ada.change(&app, reqwest::Method::PUT, &security).json(&json!({ "requireTwoFactor": true }))).await;
    assert_eq!(r.ok(200)["requireTwoFactor"], true);
    owner(&app, &m, "bob@example.com");
    let bob = Signed::as_user(&app, "bob@example.com").await;
    let read = app.send(bob.get(&app, "/v1/dashboard/session")).await.ok(200).clone();
    assert_eq!(read["memberships"][0]["requiresTwoFactor"], true);
    let members = app.send(bob.get(&app, &format!("/v1/dashboard/merchants/{}/members", m.id))).await;
    members.assert_error(403, "AUTH_FORBIDDEN");
    app.send(bob.post(&app, "/v1/dashboard/two-factor", &json!({}))).await.ok(201);

    // Turning it off needs the password and a code.
    let off = json!({ "password": "not the password at all", "otp": totp(&secret, step + 1) });
    app.send(ada.post(&app, "/v1/dashboard/two-factor/disable", &off)).await.assert_error(401, "INVALID_CREDENTIALS");
    let off = json!({ "password": PASSWORD, "otp": codes[1] });
    assert_eq!(app.send(ada.post(&app, "/v1/dashboard/two-factor/disable", &off)).await.ok(200)["enabled"], false);
    login(&app, "ada@example.com", PASSWORD).await.ok(201);
    let logs = app.logs();
    for secret in [secret.as_str(), codes[2].as_str(), renewed.as_str()] {
        assert!(!logs.contains(secret), "a secret is in the logs");
    }
}

#[tokio::test]
async fn invitations_roles_and_the_last_owner() {
    let (smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    let other = app.merchant("Elsewhere");
    owner(&app, &m, "ada@example.com");
    let ada = Signed::as_user(&app, "ada@example.com").await;
    let base = format!("/v1/dashboard/merchants/{}", m.id);
    // Invite a viewer; the email names the shop and the role.
    let r = app
        .send(ada.post(
            &app,
            &format!("{base}/invitations"),
            &json!({ "email": "Grace@example.com", "role": "viewer" }),
        ))
        .await;
    let invitation = r.ok(201).clone();
    assert_eq!(
        (invitation["email"].as_str(), invitation["role"].as_str()),
        (Some("grace@example.com"), Some("viewer"))
    );
    let bad = app
        .send(ada.post(&app, &format!("{base}/invitations"), &json!({ "email": "x@example.com", "role": "king" })))
        .await;
    assert_eq!(bad.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("role"));
    let mail = mail_to(&smtp, 1, "grace@example.com").await;
    assert!(header(&mail, "Subject").unwrap().contains("Join Shop"), "{mail}");
    let token = token_in(&mail, "accept-invitation");
    // Accepting: a new account with a name and a password, signed in at once.
    let short =
        post(&app, "/v1/dashboard/invitations/accept", json!({ "token": token, "name": "Grace", "password": "short" }))
            .await;
    assert_eq!(short.assert_error(400, "VALIDATION_ERROR").as_deref(), Some("password"));
    let accepted = post(
        &app,
        "/v1/dashboard/invitations/accept",
        json!({ "token": token, "name": "Grace", "password": PASSWORD }),
    )
    .await;
    let grace = Signed::of(&accepted);
    assert_eq!(accepted.body["data"]["memberships"][0]["role"], "viewer");
    assert_eq!(accepted.body["data"]["user"]["emailVerified"], true);
    post(&app, "/v1/dashboard/invitations/accept", json!({ "token": token, "name": "Grace", "password": PASSWORD }))
        .await
        .assert_error(404, "NOT_FOUND");

    // An existing account accepts with its own password; a revoked invitation's link is dead.
    owner(&app, &other, "bob@example.com");
    app.send(ada.post(
        &app,
        &format!("{base}/invitations"),
        &json!({ "email": "bob@example.com", "role": "developer" }),
    ))
    .await
    .ok(201);
    let bob_token = token_in(&mail_to(&smtp, 2, "bob@example.com").await, "accept-invitation");
    let wrong = post(
        &app,
        "/v1/dashboard/invitations/accept",
        json!({ "token": bob_token, "password": "not the password at all" }),
    )
    .await;
    wrong.assert_error(401, "INVALID_CREDENTIALS");
    let joined =
        post(&app, "/v1/dashboard/invitations/accept", json!({ "token": bob_token, "password": PASSWORD })).await;
    assert_eq!(joined.ok(201)["memberships"].as_array().unwrap().len(), 2);
    let bob = Signed::of(&joined);
    let r = app
        .send(ada.post(
            &app,
            &format!("{base}/invitations"),
            &json!({ "email": "carl@example.com", "role": "support" }),
        ))
        .await;
    let carl_id = r.ok(201)["id"].as_str().unwrap().to_owned();
    let carl_token = token_in(&mail_to(&smtp, 3, "carl@example.com").await, "accept-invitation");
    let revoke = app.send(ada.change(&app, reqwest::Method::DELETE, &format!("{base}/invitations/{carl_id}"))).await;
    assert_eq!(revoke.ok(200)["items"], json!([]));
    post(
        &app,
        "/v1/dashboard/invitations/accept",
        json!({ "token": carl_token, "name": "Carl", "password": PASSWORD }),
    )
    .await
    .assert_error(404, "NOT_FOUND");

    // The operator's invitation: no password on the command line, the person sets it.
    let invited = app.cli_ok(&[
        "user",
        "create",
        "--invite",
        "--email",
        "Dora@example.com",
        "--merchant",
        &m.id,
        "--role",
        "support",
        "--json",
    ]);
    assert_eq!((invited["email"].as_str(), invited["role"].as_str()), (Some("dora@example.com"), Some("support")));
    let dora_mail = mail_to(&smtp, 4, "dora@example.com").await;
    assert!(dora_mail.contains("You are invited to join Shop"), "{dora_mail}");
    let dora = post(
        &app,
        "/v1/dashboard/invitations/accept",
        json!({ "token": token_in(&dora_mail, "accept-invitation"), "name": "Dora", "password": PASSWORD }),
    )
    .await;
    assert_eq!(dora.ok(201)["memberships"][0]["role"], "support");
    let dora_id = dora.body["data"]["user"]["id"].as_str().unwrap().to_owned();
    app.send(ada.change(&app, reqwest::Method::DELETE, &format!("{base}/members/{dora_id}"))).await.ok(200);

    // The viewer reads the team but changes nothing; another merchant is not found.
    let members = app.send(grace.get(&app, &format!("{base}/members"))).await.ok(200).clone();
    assert_eq!(members["items"].as_array().unwrap().len(), 3);
    let ada_id = members["items"][0]["userId"].as_str().unwrap().to_owned();
    let grace_id = members["items"][1]["userId"].as_str().unwrap().to_owned();
    let bob_id = members["items"][2]["userId"].as_str().unwrap().to_owned();
    let patch = |who: &Signed, id: &str, role: &str| {
        who.change(&app, reqwest::Method::PATCH, &format!("{base}/members/{id}")).json(&json!({ "role": role }))
    };
    app.send(patch(&grace, &bob_id, "viewer")).await.assert_error(403, "AUTH_FORBIDDEN");
    app.send(grace.get(&app, &format!("/v1/dashboard/merchants/{}/members", other.id)))
        .await
        .assert_error(404, "NOT_FOUND");
    // The last owner cannot leave or be demoted; with a second owner, they can.
    app.send(patch(&ada, &ada_id, "admin")).await.assert_error(403, "AUTH_FORBIDDEN");
    let leave = ada.change(&app, reqwest::Method::DELETE, &format!("{base}/members/{ada_id}"));
    app.send(leave).await.assert_error(403, "AUTH_FORBIDDEN");
    assert_eq!(app.send(patch(&ada, &bob_id, "admin")).await.ok(200)["role"], "admin");
    // An admin manages members but not owners.
    app.send(patch(&bob, &grace_id, "owner")).await.assert_error(403, "AUTH_FORBIDDEN");
    assert_eq!(app.send(patch(&bob, &grace_id, "support")).await.ok(200)["role"], "support");
    app.send(patch(&bob, &ada_id, "viewer")).await.assert_error(403, "AUTH_FORBIDDEN");
    app.send(patch(&ada, &bob_id, "owner")).await.ok(200);
    assert_eq!(app.send(patch(&ada, &ada_id, "admin")).await.ok(200)["role"], "admin");
    let removed = app.send(bob.change(&app, reqwest::Method::DELETE, &format!("{base}/members/{grace_id}"))).await;
    assert_eq!(removed.ok(200)["role"], Value::Null);
    app.send(grace.get(&app, &format!("{base}/members"))).await.assert_error(404, "NOT_FOUND");

    // The audit log says who did what, newest first, to owners and admins only.
    let log = app.send(bob.get(&app, &format!("{base}/audit-log?limit=100"))).await.ok(200).clone();
    let actions: Vec<&str> = log["items"].as_array().unwrap().iter().map(|e| e["action"].as_str().unwrap()).collect();
    for expected in [
        "member.invited",
        "member.joined",
        "invitation.revoked",
        "member.role_changed",
        "member.removed",
        "session.created",
    ] {
        assert!(actions.contains(&expected), "{expected} in {actions:?}");
    }
    assert_eq!(log["items"][0]["action"], "member.removed");
    assert_eq!(log["items"][0]["target"], "grace@example.com");
    assert_eq!(log["items"][0]["actorEmail"], "bob@example.com");
    let page = app.send(bob.get(&app, &format!("{base}/audit-log?limit=2"))).await.ok(200).clone();
    let next = page["nextCursor"].as_str().unwrap();
    let rest =
        app.send(bob.get(&app, &format!("{base}/audit-log?limit=100&startingAfter={next}"))).await.ok(200).clone();
    assert_eq!(rest["items"].as_array().unwrap().len() + 2, log["items"].as_array().unwrap().len());
    let other_log =
        app.send(bob.get(&app, &format!("/v1/dashboard/merchants/{}/audit-log", other.id))).await.ok(200).clone();
    assert!(
        other_log["items"].as_array().unwrap().iter().all(|e| e["target"] != "grace@example.com"),
        "each merchant its own log"
    );
}

/// Each role against each team action over HTTP: allowed, or AUTH_FORBIDDEN with nothing changed.
#[tokio::test]
async fn every_role_is_walked_over_the_team_actions() {
    let (_smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    owner(&app, &m, "owner@example.com");
    let base = format!("/v1/dashboard/merchants/{}", m.id);
    let roles = ["owner", "admin", "developer", "support", "viewer"];
    for role in roles {
        let email = format!("{role}-member@example.com");
        let args = ["user", "create", "--email", &email, "--name", role, "--merchant", &m.id, "--role", role, "--json"];
        let (ok, _, stderr) = app.cli_with_input(&args, &format!("{PASSWORD}\n"));
        assert!(ok, "{stderr}");
    }
    owner(&app, &m, "target@example.com");
    let target_id = {
        let o = Signed::as_user(&app, "owner@example.com").await;
        let members = app.send(o.get(&app, &format!("{base}/members"))).await.ok(200).clone();
        let t =
            members["items"].as_array().unwrap().iter().find(|x| x["email"] == "target@example.com").unwrap().clone();
        // The target is a viewer: any member-manager may change them.
        app.send(
            o.change(&app, reqwest::Method::PATCH, &format!("{base}/members/{}", t["userId"].as_str().unwrap()))
                .json(&json!({ "role": "viewer" })),
        )
        .await
        .ok(200);
        t["userId"].as_str().unwrap().to_owned()
    };
    // (role, read members, invite, change a viewer's role, read the audit log, security)
    let expected = [
        ("owner", [true, true, true, true, true]),
        ("admin", [true, true, true, true, false]),
        ("developer", [true, false, false, false, false]),
        ("support", [true, false, false, false, false]),
        ("viewer", [true, false, false, false, false]),
    ];
    for (role, allowed) in expected {
        let who = Signed::as_user(&app, &format!("{role}-member@example.com")).await;
        let attempts = [
            app.send(who.get(&app, &format!("{base}/members"))).await,
            app.send(who.post(
                &app,
                &format!("{base}/invitations"),
                &json!({ "email": format!("new-{role}@example.com"), "role": "viewer" }),
            ))
            .await,
            app.send(
                who.change(&app, reqwest::Method::PATCH, &format!("{base}/members/{target_id}"))
                    .json(&json!({ "role": "viewer" })),
            )
            .await,
            app.send(who.get(&app, &format!("{base}/audit-log"))).await,
            app.send(
                who.change(&app, reqwest::Method::PUT, &format!("{base}/security"))
                    .json(&json!({ "requireTwoFactor": false })),
            )
            .await,
        ];
        for (i, (r, allowed)) in attempts.iter().zip(allowed).enumerate() {
            if allowed {
                assert!(r.status.is_success(), "{role} action {i}: {}", r.body);
            } else {
                r.assert_error(403, "AUTH_FORBIDDEN");
            }
        }
    }
    let invited = count(&app, "SELECT count(*) FROM account_links WHERE purpose = 'invitation'").await;
    assert_eq!(invited, 2, "only the owner's and the admin's invitations exist");
}

/// An unknown email and a wrong password: the same answer, in about the same time (the medians
/// of 50 tries each within 20 %).
#[tokio::test]
async fn an_unknown_email_takes_as_long_as_a_wrong_password() {
    let env = [("STABLEPAY_TRUSTED_PROXIES", "127.0.0.1/32".to_owned())];
    let app = TestApp::spawn_with(fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    for n in 0..10 {
        owner(&app, &m, &format!("user{n}@example.com"));
    }
    let attempt = |n: usize, known: bool| {
        let email = if known { format!("user{}@example.com", n % 10) } else { format!("nobody{n}@example.com") };
        // Each try from its own address, and at most 5 per account: no quota answers first.
        let req = app
            .http
            .post(app.url("/v1/dashboard/sessions"))
            .header("X-Forwarded-For", format!("10.0.{}.{}", n / 200, n % 200 + 1))
            .json(&json!({ "email": email, "password": "not the password at all" }));
        app.send(req)
    };
    let (mut known, mut unknown) = (Vec::new(), Vec::new());
    for n in 0..50 {
        for is_known in [true, false] {
            let start = Instant::now();
            let r = attempt(n + if is_known { 0 } else { 1000 }, is_known).await;
            let took = start.elapsed();
            r.assert_error(401, "INVALID_CREDENTIALS");
            if is_known { known.push(took) } else { unknown.push(took) }
        }
    }
    let median = |v: &mut Vec<Duration>| {
        v.sort();
        v[v.len() / 2].as_secs_f64()
    };
    let (k, u) = (median(&mut known), median(&mut unknown));
    assert!((u - k).abs() <= 0.2 * k.max(u), "median wrong password {k:.4}s, unknown email {u:.4}s");
}

/// Ada, owner of `m`, with two-factor login on: her session and the authenticator's secret
/// (its code of the current step used by the enrolment).
async fn with_two_factor(app: &TestApp, m: &crate::support::Merchant, email: &str) -> (Signed, String) {
    owner(app, m, email);
    let me = Signed::as_user(app, email).await;
    let started = app.send(me.post(app, "/v1/dashboard/two-factor", &json!({}))).await;
    let secret = started.ok(201)["secret"].as_str().unwrap().to_owned();
    let confirm = json!({ "otp": totp(&secret, step_now(0)) });
    let confirmed = app.send(me.post(app, "/v1/dashboard/two-factor/confirm", &confirm)).await;
    confirmed.ok(200);
    let token = token_of(&confirmed);
    let csrf = session(app, &token).await.ok(200)["csrfToken"].as_str().unwrap().to_owned();
    (Signed { token, csrf }, secret)
}

/// Makes every session's last sign-in `minutes` old (what a clock would do).
async fn age_sessions(app: &TestApp, minutes: i64) {
    let db = stablepay_test_db::connect(&app.db.url()).await;
    let sql = format!("UPDATE sessions SET reauthenticated_at = now() - interval '{minutes} minutes'");
    db.execute(&sql, &[]).await.unwrap();
}

/// The operations of the API document whose success answers a session cookie.
async fn session_cookie_operations(app: &TestApp) -> Vec<String> {
    let doc = app.send(app.http.get(app.url("/v1/openapi.json"))).await.body.clone();
    let mut found = Vec::new();
    for (_, item) in doc["paths"].as_object().unwrap() {
        for (_, op) in item.as_object().unwrap() {
            let responses = op["responses"].as_object().into_iter().flatten();
            let cookie = responses
                .filter(|(status, _)| status.starts_with('2'))
                .any(|(_, r)| r["description"].as_str().unwrap_or("").to_lowercase().contains("cookie"));
            if cookie {
                found.push(op["operationId"].as_str().unwrap().to_owned());
            }
        }
    }
    found.sort();
    found
}

/// Every way to a session, in the API and in the pages, refuses an account with two-factor
/// login that gives its password without its code: login, an invitation accepted by the
/// existing account, the renewal at a password change, and the renewal at an enrolment's
/// confirmation (which needs a sign-in from the last 5 minutes).
#[tokio::test]
async fn every_way_to_a_session_demands_the_second_factor() {
    let (smtp, app) = spawn("invite").await;
    let shop = app.merchant("Shop");
    let (ada, secret) = with_two_factor(&app, &shop, "ada@example.com").await;
    // The routes that can answer a session cookie are exactly those walked here.
    assert_eq!(
        session_cookie_operations(&app).await,
        ["accept_invitation", "change_password", "confirm_two_factor", "create_session"],
        "a new route answers a session cookie: walk it here"
    );
    let other = app.merchant("Other");
    owner(&app, &other, "bob@example.com");
    let bob = Signed::as_user(&app, "bob@example.com").await;
    let invite = json!({ "email": "ada@example.com", "role": "admin" });
    let path = format!("/v1/dashboard/merchants/{}/invitations", other.id);
    app.send(bob.post(&app, &path, &invite)).await.ok(201);
    let token = token_in(&mail_to(&smtp, 1, "ada@example.com").await, "accept-invitation");

    // 1. Login, JSON and page: the password alone gets no session.
    let r = login(&app, "ada@example.com", PASSWORD).await;
    assert_eq!(r.body["error"]["details"]["reason"], "otp_required");
    assert!(r.headers.get("set-cookie").is_none());
    let mut b = crate::form_client::Browser::new(&app);
    let page = b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    assert!(page.set_cookie.is_none() && page.status != 303, "{}", page.status);

    // 2. The invitation, JSON and page: the existing account's password alone is refused, and
    // a wrong code too; the link still works.
    let accept = "/v1/dashboard/invitations/accept";
    let r = post(&app, accept, json!({ "token": token, "password": PASSWORD })).await;
    assert_eq!(r.assert_error(401, "INVALID_CREDENTIALS").as_deref(), Some("otp"));
    assert_eq!(r.body["error"]["details"]["reason"], "otp_required");
    assert!(r.headers.get("set-cookie").is_none());
    let r = post(&app, accept, json!({ "token": token, "password": PASSWORD, "otp": "000000" })).await;
    assert_eq!(r.body["error"]["details"]["reason"], "otp_invalid");
    let mut b = crate::form_client::Browser::new(&app);
    let page = b.post("/dashboard/accept-invitation", &[("token", &token), ("password", PASSWORD)]).await;
    assert!(page.set_cookie.is_none(), "a page session without the code");
    assert_eq!(page.status, 401, "{}", page.html);
    assert_eq!(count(&app, "SELECT count(*) FROM memberships WHERE merchant_id LIKE 'mer_%'").await, 2);

    // 3. The renewal at a password change: with a sign-in older than 5 minutes, the password
    // alone is refused.
    age_sessions(&app, 6).await;
    let change = json!({ "currentPassword": PASSWORD, "newPassword": "another long enough password" });
    let r = app.send(ada.post(&app, "/v1/dashboard/password", &change)).await;
    assert_eq!(r.body["error"]["details"]["reason"], "otp_required", "{}", r.body);
    assert!(r.headers.get("set-cookie").is_none());
    // 4. The renewal at an enrolment's confirmation: a sign-in older than 5 minutes is refused
    // before any code is looked at.
    owner(&app, &shop, "cy@example.com");
    let cy = Signed::as_user(&app, "cy@example.com").await;
    app.send(cy.post(&app, "/v1/dashboard/two-factor", &json!({}))).await.ok(201);
    age_sessions(&app, 6).await;
    let r = app.send(cy.post(&app, "/v1/dashboard/two-factor/confirm", &json!({ "otp": "123456" }))).await;
    r.assert_error(403, "AUTH_FORBIDDEN");
    assert_eq!(r.body["error"]["details"]["reason"], "reauthentication_required");
    assert!(r.headers.get("set-cookie").is_none());

    // 5. The same renewals through the pages: a password change without the code, and an
    // enrolment's start and confirmation, from sessions signed in over 5 minutes ago.
    let q = format!("merchant={}&mode=test", shop.id);
    let page_of = |token: &str| {
        let mut b = crate::form_client::Browser::new(&app);
        b.cookie = Some(token.to_owned());
        b
    };
    let mut b = page_of(&ada.token);
    let security = b.get(&format!("/dashboard/settings/security?{q}")).await;
    assert_eq!(security.status, 200, "{}", security.html);
    let mut change = crate::dashboard_pages::form_of(&security.html, "Change the password");
    change.extend([
        ("currentPassword".into(), PASSWORD.into()),
        ("newPassword".into(), "another long enough password".into()),
    ]);
    let r = crate::dashboard_pages::post(&mut b, &format!("/dashboard/settings/security/password?{q}"), &change).await;
    assert!(r.set_cookie.is_none() && r.status == 401, "{}: {}", r.status, r.html);
    let mut b = page_of(&cy.token);
    let security = b.get(&format!("/dashboard/settings/security?{q}")).await;
    let start = crate::dashboard_pages::form_of(&security.html, "Turn on two-factor login");
    let r = crate::dashboard_pages::post(&mut b, &format!("/dashboard/settings/security/two-factor?{q}"), &start).await;
    assert!(r.set_cookie.is_none() && r.status == 403, "{}: {}", r.status, r.html);
    let mut confirm = start.clone();
    confirm.push(("otp".into(), "123456".into()));
    let url = format!("/dashboard/settings/security/two-factor/confirm?{q}");
    let r = crate::dashboard_pages::post(&mut b, &url, &confirm).await;
    assert!(r.set_cookie.is_none() && r.status == 403, "{}: {}", r.status, r.html);

    // With the code, the invitation signs Ada in and she joins.
    let r =
        post(&app, accept, json!({ "token": token, "password": PASSWORD, "otp": totp(&secret, step_now(1)) })).await;
    assert!(r.ok(201)["memberships"].as_array().unwrap().len() == 2, "{}", r.body);
    assert!(r.headers.get("set-cookie").is_some());
}

/// The current password, a two-factor code and the wallet's confirmation behind a session count
/// in the account's failure-only quota with login: the sixth failure in 15 minutes answers 429
/// wherever it happens, the right password included.
#[tokio::test]
async fn secret_checks_behind_a_session_share_the_login_quota() {
    let (_smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    let (ada, secret) = with_two_factor(&app, &m, "ada@example.com").await;
    let wrong = "not the password at all";
    let change = json!({ "currentPassword": wrong, "newPassword": "another long enough password" });
    let off = json!({ "password": wrong, "otp": totp(&secret, step_now(1)) });
    let wallet = json!({ "wallet": "0x52908400098527886E0F7030069857D2E4169EE7", "token": "USDC", "password": wrong });
    let put = format!("/v1/dashboard/merchants/{}/settlement-wallet", m.id);
    let attempts = [
        ada.post(&app, "/v1/dashboard/password", &change),
        ada.post(&app, "/v1/dashboard/two-factor/disable", &off),
        ada.change(&app, reqwest::Method::PUT, &put).json(&wallet),
        ada.post(&app, "/v1/dashboard/sessions/current/reauthentication", &json!({ "password": wrong })),
    ];
    for (i, req) in attempts.into_iter().enumerate() {
        app.send(req).await.assert_error(401, "INVALID_CREDENTIALS");
        if i == 0 {
            // A wrong login from another address: the same account's quota.
            let r = crate::support::client_from("127.0.0.7")
                .post(app.url("/v1/dashboard/sessions"))
                .json(&json!({ "email": "ada@example.com", "password": wrong }))
                .send()
                .await
                .unwrap();
            assert_eq!(r.status(), 401);
        }
    }
    // The sixth: refused before any check, behind the session and at login alike.
    let r = app.send(ada.post(&app, "/v1/dashboard/password", &change)).await;
    r.assert_error(429, "RATE_LIMITED");
    assert!(r.header("retry-after").is_some_and(|s| s.parse::<u64>().unwrap() >= 1));
    let with = json!({ "email": "ada@example.com", "password": PASSWORD, "otp": totp(&secret, step_now(1)) });
    post(&app, "/v1/dashboard/sessions", with).await.assert_error(429, "RATE_LIMITED");
    let right = json!({ "password": PASSWORD, "otp": totp(&secret, step_now(1)) });
    let r = app.send(ada.post(&app, "/v1/dashboard/sessions/current/reauthentication", &right)).await;
    r.assert_error(429, "RATE_LIMITED");
}

/// Enrolling two-factor login and creating an API key need the password given in the last 5
/// minutes: refused with `reauthentication_required` after that, allowed again after a
/// re-authentication (JSON) or with the password typed into the page's form.
#[tokio::test]
async fn enrolment_and_new_keys_need_a_recent_sign_in() {
    let (_smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let ada = Signed::as_user(&app, "ada@example.com").await;
    let s = session(&app, &ada.token).await.ok(200).clone();
    assert!(s["reauthenticatedAt"].as_str().is_some_and(|t| t.ends_with('Z')), "{s}");
    age_sessions(&app, 6).await;
    let r = app.send(ada.post(&app, "/v1/dashboard/two-factor", &json!({}))).await;
    r.assert_error(403, "AUTH_FORBIDDEN");
    assert_eq!(r.body["error"]["details"]["reason"], "reauthentication_required");
    let reauth = "/v1/dashboard/sessions/current/reauthentication";
    let r = app.send(ada.post(&app, reauth, &json!({ "password": "not the password at all" }))).await;
    r.assert_error(401, "INVALID_CREDENTIALS");
    let r = app.send(ada.post(&app, reauth, &json!({ "password": PASSWORD }))).await;
    let at = r.ok(200)["reauthenticatedAt"].as_str().unwrap().to_owned();
    assert!(at.as_str() > s["reauthenticatedAt"].as_str().unwrap(), "{at}");
    app.send(ada.post(&app, "/v1/dashboard/two-factor", &json!({}))).await.ok(201);

    // The developers page: an old sign-in asks for the password beside the form.
    let mut b = crate::form_client::Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    age_sessions(&app, 6).await;
    let path = format!("/dashboard/developers?merchant={}&mode=test", m.id);
    let create = format!("/dashboard/developers/keys?merchant={}&mode=test", m.id);
    let page = b.get(&path).await;
    assert!(page.html.contains("Confirm it is you"), "{}", page.html);
    let keys = "SELECT count(*) FROM api_keys";
    let before = count(&app, keys).await;
    let mut form = crate::dashboard_pages::form_of(&page.html, "Create the key");
    form.push(("type".into(), "secret".into()));
    let refused = crate::dashboard_pages::post(&mut b, &create, &form).await;
    assert_eq!(refused.status, 403, "{}", refused.html);
    assert_eq!(count(&app, keys).await, before, "no key without a recent sign-in");
    let mut form = crate::dashboard_pages::form_of(&refused.html, "Create the key");
    form.extend([("type".into(), "secret".into()), ("password".into(), PASSWORD.into())]);
    let made = crate::dashboard_pages::post(&mut b, &create, &form).await;
    assert_eq!(made.status, 201, "{}", made.html);
    assert_eq!(count(&app, keys).await, before + 1);
}

/// A reset request for an address without an account does the same work as for one with an
/// account: the same statements write one queued link each; the worker sends the known one and
/// marks the unknown one done without an email.
#[tokio::test]
async fn reset_requests_do_the_same_work_for_unknown_emails() {
    let (smtp, app) = spawn("invite").await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let links = "SELECT count(*) FROM account_links WHERE purpose = 'reset_password'";
    post(&app, "/v1/dashboard/password-resets", json!({ "email": "nobody@example.com" })).await.ok(202);
    assert_eq!(count(&app, links).await, 1, "the unknown address wrote its link");
    post(&app, "/v1/dashboard/password-resets", json!({ "email": "ada@example.com" })).await.ok(202);
    assert_eq!(count(&app, links).await, 2, "the known address wrote one link too");
    mail_to(&smtp, 1, "ada@example.com").await;
    let done = "SELECT count(*) FROM account_links l JOIN emails e ON e.account_link_id = l.id \
        WHERE l.email = 'nobody@example.com' AND e.kind = 'account_link' AND e.status = 'skipped'";
    for _ in 0..100 {
        if count(&app, done).await == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(count(&app, done).await, 1, "the unknown address's job ended without an email");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let to_nobody = smtp.messages().iter().filter(|m| header(m, "To") == Some("nobody@example.com")).count();
    assert_eq!(to_nobody, 0);
}
