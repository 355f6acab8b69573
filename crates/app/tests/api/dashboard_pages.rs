//! The dashboard's business pages against the real binary, as a browser without JavaScript
//! uses them: a draft made with the form (totals from the domain, refusals beside their field,
//! one submission per form), its actions (issue, send, open a checkout, void, refund
//! reference, duplicate, PDF), the overview, and what a viewer is offered and refused.

use serde_json::{Value, json};

use crate::dashboard::{PASSWORD, owner};
use crate::form_client::{Browser, Page, hidden};
use crate::support::TestApp;

/// The form of a page (its CSRF token and key) with `fields`.
fn filled<'a>(page: &Page, fields: &[(&'a str, &'a str)]) -> Vec<(String, String)> {
    let mut form = vec![
        ("csrfToken".to_owned(), hidden(&page.html, "csrfToken")),
        ("formKey".to_owned(), hidden(&page.html, "formKey")),
    ];
    form.extend(fields.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())));
    form
}

pub(crate) async fn post(b: &mut Browser, path: &str, form: &[(String, String)]) -> Page {
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    b.post(path, &pairs).await
}

/// The action URL of the form whose button says `button`.
fn action_of(html: &str, button: &str) -> String {
    let at = html.find(&format!(">{button}</button>")).unwrap_or_else(|| panic!("no {button} button in {html}"));
    let form = html[..at].rfind("<form method=\"post\" action=\"").unwrap();
    let rest = &html[form + 28..];
    rest[..rest.find('"').unwrap()].replace("&amp;", "&")
}

/// The CSRF token and key of the form whose button says `button`.
pub(crate) fn form_of(html: &str, button: &str) -> Vec<(String, String)> {
    let at = html.find(&format!(">{button}</button>")).unwrap();
    let start = html[..at].rfind("<form method=\"post\"").unwrap();
    let part = &html[start..at];
    vec![("csrfToken".into(), hidden(part, "csrfToken")), ("formKey".into(), hidden(part, "formKey"))]
}

const DRAFT: [(&str, &str); 12] = [
    ("customer.name", "Ada Lovelace"),
    ("customer.email", "ada@example.com"),
    ("lines[0].description", "Consulting"),
    ("lines[0].quantity", "2"),
    ("lines[0].unitAmount", "50"),
    ("lines[1].description", "Espresso machine service"),
    ("lines[1].quantity", "1"),
    ("lines[1].unitAmount", "35.5"),
    ("discount.type", "percentage"),
    ("discount.value", "10"),
    ("taxes[0].label", "VAT"),
    ("taxes[0].amount", "24.39"),
];

async fn invoices(app: &TestApp, key: &str) -> Vec<Value> {
    app.get(key, "/v1/invoices?limit=100").await.ok(200)["items"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_draft_made_with_the_form_is_issued_sent_paid_and_refunded() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let list = b.get(&format!("/dashboard/invoices?merchant={}&mode=test", m.id)).await;
    assert!(list.html.contains("New invoice"), "an owner is offered a new invoice");
    let new = format!("/dashboard/invoices/new?merchant={}&mode=test", m.id);
    let form = b.get(&new).await;
    assert_eq!(form.status, 200);

    // "Update totals": the domain's totals of what was typed (100 + 35.5, less 10 %, plus 24.39).
    let mut fields = DRAFT.to_vec();
    fields.push(("intent", "preview"));
    let preview = post(&mut b, &new, &filled(&form, &fields)).await;
    assert_eq!(preview.status, 200);
    assert!(preview.html.contains("id=\"total\">146.34<"), "{}", preview.html);
    assert!(invoices(&app, &m.sk_test).await.is_empty(), "a preview creates nothing");

    // A unit amount that is not a decimal: refused beside its field, what was typed kept.
    let mut bad = DRAFT.to_vec();
    bad[7] = ("lines[1].unitAmount", "35,5");
    bad.push(("intent", "save"));
    let refused = post(&mut b, &new, &filled(&preview, &bad)).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("id=\"lines-1--unitAmount-error\""), "{}", refused.html);
    assert!(refused.html.contains("aria-invalid=\"true\"") && refused.html.contains("value=\"35,5\""));
    assert!(refused.html.contains("value=\"Espresso machine service\""), "typed values are kept");
    assert!(invoices(&app, &m.sk_test).await.is_empty(), "a refusal changes nothing");

    // Saved: the invoice's page; the same form sent again creates nothing more.
    let mut good = DRAFT.to_vec();
    good.push(("intent", "save"));
    let sent = filled(&refused, &good);
    let saved = post(&mut b, &new, &sent).await;
    assert_eq!(saved.status, 303, "{}", saved.html);
    let location = saved.location.clone().unwrap();
    assert_eq!(post(&mut b, &new, &sent).await.location.as_deref(), Some(location.as_str()), "replayed");
    let all = invoices(&app, &m.sk_test).await;
    assert_eq!(all.len(), 1);
    let id = all[0]["id"].as_str().unwrap().to_owned();
    assert!(location.contains(&id), "{location}");
    assert_eq!((all[0]["collectionState"].as_str(), all[0]["total"].as_str()), (Some("draft"), Some("146.340000")));
    assert_eq!(all[0]["lines"].as_array().unwrap().len(), 2);

    // Edited at its version: the memo is added.
    let edit_path = format!("/dashboard/invoices/{id}/edit?merchant={}&mode=test", m.id);
    let edit = b.get(&edit_path).await;
    let other_tab = b.get(&edit_path).await;
    assert!(edit.html.contains("value=\"Consulting\""), "the draft's lines in the form");
    let mut changed = DRAFT.to_vec();
    changed.extend([("memo", "Thanks for the order"), ("version", "1"), ("intent", "save")]);
    assert_eq!(post(&mut b, &edit_path, &filled(&edit, &changed)).await.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!((api["memo"].as_str(), api["version"].as_i64()), (Some("Thanks for the order"), Some(2)));
    // The same form again replays; another tab's form of the old version is refused (the draft
    // changed meanwhile), in an alert.
    assert_eq!(post(&mut b, &edit_path, &filled(&edit, &changed)).await.status, 303);
    let stale = post(&mut b, &edit_path, &filled(&other_tab, &changed)).await;
    assert_eq!(stale.status, 409, "{}", stale.html);
    assert!(stale.html.contains("role=\"alert\""), "{}", stale.html);

    // Issue, send, open a checkout; the customer pays it; the overview counts it.
    let page = b.get(&format!("/dashboard/invoices/{id}?merchant={}&mode=test", m.id)).await;
    let mut issue = form_of(&page.html, "Issue");
    issue.push(("version".into(), "2".into()));
    let issued = post(&mut b, &action_of(&page.html, "Issue"), &issue).await;
    assert_eq!(issued.status, 303, "{}", issued.html);
    let page = b.get(issued.location.as_deref().unwrap()).await;
    assert!(page.html.contains("The invoice is issued"), "{}", page.html);
    let sent =
        post(&mut b, &action_of(&page.html, "Send to the customer"), &form_of(&page.html, "Send to the customer"))
            .await;
    assert_eq!(sent.status, 303, "{}", sent.html);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert!(api["invoiceNumber"].as_str().is_some());
    assert!(api["activity"].to_string().contains("email"), "{}", api["activity"]);
    // Who did what: the member, in the invoice's activity (the API's view and the page).
    let activity = api["activity"].as_array().unwrap();
    let issued = activity.iter().find(|a| a["action"] == "issued").expect("issued");
    assert_eq!((issued["actor"].as_str(), issued["by"].as_str()), (Some("dashboard"), Some("ada@example.com")));
    let queued = activity.iter().find(|a| a["action"] == "email_queued").expect("email queued");
    assert_eq!(queued["by"], "ada@example.com");
    let created = activity.iter().find(|a| a["action"] == "created").expect("created");
    assert_eq!(created["by"], "ada@example.com", "the draft made with the form");
    let pdf = b.get(&format!("/dashboard/invoices/{id}/pdf?merchant={}&mode=test", m.id)).await;
    assert_eq!(pdf.status, 200);
    assert!(pdf.html.starts_with("%PDF"));
    let page = b.get(&format!("/dashboard/invoices/{id}?merchant={}&mode=test", m.id)).await;
    let opened = post(&mut b, &action_of(&page.html, "Open a checkout"), &form_of(&page.html, "Open a checkout")).await;
    assert_eq!(opened.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    let cs = api["checkoutSessions"][0]["id"].as_str().unwrap();
    let paid = app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await;
    let payment = paid.ok(201)["id"].as_str().unwrap().to_owned();
    let overview = b.get(&format!("/dashboard/overview?merchant={}&mode=test", m.id)).await;
    assert_eq!(overview.status, 200, "{}", overview.html);
    assert!(overview.html.contains("146.34"), "the overview counts what came in: {}", overview.html);
    assert!(overview.html.contains("Diagnostics") && overview.html.contains("worker"));

    // A refund reference: a bad hash is refused beside its field, then recorded.
    let page = b.get(&format!("/dashboard/invoices/{id}?merchant={}&mode=test", m.id)).await;
    // Paid: sent again as its receipt, but nothing is left to remind of or to pay.
    assert!(page.html.contains(">Send to the customer</button>"), "{}", page.html);
    for gone in [">Send a reminder</button>", ">Open a checkout</button>", ">Void</button>"] {
        assert!(!page.html.contains(gone), "{gone}: {}", page.html);
    }
    let refund_url = action_of(&page.html, "Add a refund reference");
    let mut refund = form_of(&page.html, "Add a refund reference");
    refund.extend([
        ("paymentId".into(), payment.clone()),
        ("amount".into(), "10".into()),
        ("reason".into(), "Returned one service".into()),
        ("externalTransactionHash".into(), "0x12".into()),
    ]);
    let wrong = post(&mut b, &refund_url, &refund).await;
    assert_eq!(wrong.status, 400);
    assert!(wrong.html.contains("id=\"refund-externalTransactionHash-error\""), "{}", wrong.html);
    let mut refund = form_of(&wrong.html, "Add a refund reference");
    refund.extend([
        ("paymentId".into(), payment),
        ("amount".into(), "10".into()),
        ("reason".into(), "Returned one service".into()),
        ("externalTransactionHash".into(), format!("0x{}", "ab".repeat(32))),
    ]);
    assert_eq!(post(&mut b, &refund_url, &refund).await.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!(api["refundReferences"].as_array().map(Vec::len), Some(1), "{api}");
}

#[tokio::test]
async fn closing_and_duplicating_from_the_page_and_what_a_viewer_is_refused() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let inv = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            json!({ "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": "4" }], "issue": true }),
        )
        .await
        .ok(201)
        .clone();
    let id = inv["id"].as_str().unwrap();
    let path = format!("/dashboard/invoices/{id}?merchant={}&mode=test", m.id);
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let page = b.get(&path).await;

    // Without the session's CSRF token: refused, nothing changes.
    let void_url = action_of(&page.html, "Void");
    let mut forged = form_of(&page.html, "Void");
    forged[0].1 = "not-the-token".into();
    forged.push(("reason".into(), "typo".into()));
    assert_eq!(post(&mut b, &void_url, &forged).await.status, 403);
    // Without a reason: refused beside the field.
    let empty = post(&mut b, &void_url, &form_of(&page.html, "Void")).await;
    assert_eq!(empty.status, 400, "{}", empty.html);
    assert!(empty.html.contains("id=\"void-reason-error\""), "{}", empty.html);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!(api["collectionState"], "open", "nothing changed");
    let mut void = form_of(&empty.html, "Void");
    void.push(("reason".into(), "Ordered twice".into()));
    assert_eq!(post(&mut b, &void_url, &void).await.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!((api["collectionState"].as_str(), api["closeReason"].as_str()), (Some("void"), Some("Ordered twice")));

    // Duplicate: the new draft's page.
    let page = b.get(&path).await;
    let copy = post(&mut b, &action_of(&page.html, "Duplicate"), &form_of(&page.html, "Duplicate")).await;
    let location = copy.location.unwrap();
    assert!(location.contains("done=duplicated") && !location.contains(id), "{location}");
    assert_eq!(invoices(&app, &m.sk_test).await.len(), 2);

    // A viewer reads the invoice but is offered no action; a forced action is refused.
    let args = ["user", "create", "--email", "vera@example.com", "--merchant", &m.id, "--role", "viewer"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    let mut vera = Browser::new(&app);
    vera.post("/dashboard/login", &[("email", "vera@example.com"), ("password", PASSWORD)]).await;
    let seen = vera.get(&path).await;
    assert_eq!(seen.status, 200);
    assert!(!seen.html.contains("<form method=\"post\" action=\"/dashboard/invoices/"), "{}", seen.html);
    assert!(!vera.get(&format!("/dashboard/invoices?merchant={}&mode=test", m.id)).await.html.contains("New invoice"));
    let csrf = hidden(&vera.get("/dashboard").await.html, "csrfToken");
    let forced = vera
        .post(
            &format!("/dashboard/invoices/{id}/duplicate?merchant={}&mode=test", m.id),
            &[("csrfToken", &csrf), ("formKey", "k1")],
        )
        .await;
    assert_eq!(forced.status, 403);
    assert!(forced.html.contains("AUTH_FORBIDDEN"), "{}", forced.html);
    assert_eq!(vera.get(&format!("/dashboard/invoices/new?merchant={}&mode=test", m.id)).await.status, 403);
    assert_eq!(invoices(&app, &m.sk_test).await.len(), 2, "nothing was created");
}

#[tokio::test]
async fn the_page_offers_each_close_where_the_collection_rules_allow_it() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let due = (chrono::Utc::now() + chrono::Duration::hours(2)).to_rfc3339();
    let body = json!({
        "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": "9" }],
        "dueAt": due, "issue": true, "checkoutExpiresInMinutes": 1440,
    });
    let inv = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let id = inv["id"].as_str().unwrap();
    let path = format!("/dashboard/invoices/{id}?merchant={}&mode=test", m.id);
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;

    // Open, nothing paid: void and mark uncollectible, not "the remainder" of nothing.
    let page = b.get(&path).await;
    for offered in [">Void</button>", ">Mark uncollectible</button>"] {
        assert!(page.html.contains(offered), "{offered}: {}", page.html);
    }
    assert!(!page.html.contains(">Void the remainder</button>"), "{}", page.html);

    // Partly paid, then past its due date: past_due with a payment, where voiding the
    // remainder is allowed (the page used to offer it for partially_paid only).
    let checkout = inv["checkout"]["checkoutSessionId"].as_str().unwrap();
    let payment = json!({ "amount": "4" });
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{checkout}/payments"), payment).await.ok(201);
    app.post(&m.sk_test, "/v1/test-helpers/clock/advance", json!({ "seconds": 3 * 3600 })).await.ok(200);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!(
        (api["collectionState"].as_str(), api["customerAmountPaid"].as_str()),
        (Some("past_due"), Some("4.000000"))
    );
    let page = b.get(&path).await;
    let url = action_of(&page.html, "Void the remainder");
    let mut form = form_of(&page.html, "Void the remainder");
    form.push(("reason".into(), "Settled in cash".into()));
    assert_eq!(post(&mut b, &url, &form).await.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/invoices/{id}")).await.ok(200).clone();
    assert_eq!((api["collectionState"].as_str(), api["closeReason"].as_str()), (Some("void"), Some("Settled in cash")));
    assert_eq!(api["customerAmountPaid"], "4.000000", "the payment stays recorded");

    // Closed: no close is offered any more.
    let page = b.get(&path).await;
    for gone in [">Void</button>", ">Void the remainder</button>", ">Mark uncollectible</button>"] {
        assert!(!page.html.contains(gone), "{gone}: {}", page.html);
    }
}

#[tokio::test]
async fn checkouts_and_payments_are_listed_and_each_says_why_it_is_or_is_not_paid() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let other = app.merchant("Elsewhere");
    owner(&app, &m, "ada@example.com");
    let mut sessions = Vec::new();
    for amount in ["1.00", "2.00", "3.00"] {
        sessions.push(
            app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": amount })).await.ok(201)["id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", sessions[1]);
    let payment =
        app.post(&m.sk_test, &pay, json!({ "amount": "1.50" })).await.ok(201)["id"].as_str().unwrap().to_owned();
    let theirs = app.post(&other.sk_test, "/v1/checkout-sessions", json!({ "amount": "9.00" })).await.ok(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let q = format!("merchant={}&mode=test", m.id);

    // Two per page: no overlap, no gap; the filter keeps the partly paid one only.
    let first = b.get(&format!("/dashboard/checkout-sessions?{q}&limit=2")).await;
    assert_eq!(first.status, 200);
    let next =
        first.html.split("rel=\"next\" href=\"").nth(1).unwrap().split('"').next().unwrap().replace("&amp;", "&");
    let second = b.get(&next).await;
    for s in &sessions {
        assert_eq!([&first.html, &second.html].iter().filter(|h| h.contains(s.as_str())).count(), 1, "{s} on one page");
    }
    assert!(!first.html.contains(&theirs) && !second.html.contains(&theirs));
    let pending = b.get(&format!("/dashboard/checkout-sessions?{q}&status=completed")).await;
    assert!(sessions.iter().all(|s| !pending.html.contains(s.as_str())), "none is completed");

    // The partly paid checkout's page: its transfer with the amount check, and the next step.
    let page = b.get(&format!("/dashboard/checkout-sessions/{}?{q}", sessions[1])).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains(&payment) && page.html.contains("Next step"), "{}", page.html);
    let api = app.get(&m.sk_test, &format!("/v1/checkout-sessions/{}/diagnostics", sessions[1])).await.ok(200).clone();
    assert!(page.html.contains(api["nextStep"].as_str().unwrap()), "the API's next step: {}", api["nextStep"]);
    // The payment list and the payment's page.
    let payments = b.get(&format!("/dashboard/payments?{q}")).await;
    assert!(payments.html.contains(&payment) && payments.html.contains("underpaid"), "{}", payments.html);
    assert_eq!(b.get(&format!("/dashboard/payments/{payment}?{q}")).await.status, 200);
    // Another merchant's or mode's ids are not found; a bad cursor is refused on a page.
    assert_eq!(b.get(&format!("/dashboard/checkout-sessions/{theirs}?{q}")).await.status, 404);
    assert_eq!(b.get(&format!("/dashboard/payments/{payment}?merchant={}&mode=live", m.id)).await.status, 404);
    assert_eq!(b.get(&format!("/dashboard/checkout-sessions?{q}&after=cs_unknown")).await.status, 400);
}

#[tokio::test]
async fn a_restricted_key_is_made_shown_once_used_and_revoked_from_the_developers_page() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let other = app.merchant("Elsewhere");
    owner(&app, &m, "ada@example.com");
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let path = format!("/dashboard/developers?merchant={}&mode=test", m.id);
    let create = format!("/dashboard/developers/keys?merchant={}&mode=test", m.id);
    let page = b.get(&path).await;
    assert_eq!(page.status, 200);
    let listed = |html: &str| html.matches("<td><code>").count();
    let before = listed(&page.html);

    // Unknown permissions: refused beside the field, nothing made.
    let mut bad = form_of(&page.html, "Create the key");
    bad.extend([("type".into(), "secret".into()), ("permissions".into(), "invoices:delete".into())]);
    let refused = post(&mut b, &create, &bad).await;
    assert_eq!(refused.status, 400);
    assert!(refused.html.contains("id=\"permissions-error\"") && refused.html.contains("value=\"invoices:delete\""));
    assert_eq!(listed(&refused.html), before);

    // Made: its secret shown once; the same form again makes nothing and shows no secret.
    let mut good = form_of(&refused.html, "Create the key");
    good.extend([("type".into(), "secret".into()), ("permissions".into(), "invoices:read".into())]);
    let made = post(&mut b, &create, &good).await;
    assert_eq!(made.status, 201, "{}", made.html);
    let secret = made.html.split("id=\"new-key\">").nth(1).unwrap().split('<').next().unwrap().to_owned();
    assert!(secret.starts_with("sk_test_"), "{secret}");
    let again = post(&mut b, &create, &good).await;
    assert!(!again.html.contains(&secret) && again.html.contains("already made its key"), "{}", again.html);
    assert_eq!(listed(&again.html), before + 1, "one key made");
    assert!(!app.logs().contains(&secret), "the secret is never logged");
    // It reads invoices and nothing else.
    app.get(&secret, "/v1/invoices").await.ok(200);
    let denied = app.post(&secret, "/v1/checkout-sessions", json!({ "amount": "1.00" })).await;
    denied.assert_error(403, "PERMISSION_DENIED");

    // Revoked: the API refuses it. Another merchant's key cannot be revoked from here.
    let page = b.get(&path).await;
    let revoke_button = page.html.split("action=\"").filter(|a| a.starts_with("/dashboard/developers/keys/")).count();
    assert_eq!(revoke_button, before + 1);
    let ids = app.cli_ok(&["key", "list", "--merchant", &m.id, "--json"]);
    let id = ids["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["permissions"].as_str() == Some("invoices:read"))
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let theirs =
        app.cli_ok(&["key", "list", "--merchant", &other.id, "--json"])["keys"][0]["id"].as_str().unwrap().to_owned();
    let csrf = form_of(&page.html, "Revoke");
    let foreign =
        post(&mut b, &format!("/dashboard/developers/keys/{theirs}/revoke?merchant={}&mode=test", m.id), &csrf).await;
    assert_eq!(foreign.status, 404, "{}", foreign.html);
    app.get(&other.sk_test, "/v1/invoices").await.ok(200);
    let gone =
        post(&mut b, &format!("/dashboard/developers/keys/{id}/revoke?merchant={}&mode=test", m.id), &csrf).await;
    assert_eq!(gone.status, 303);
    app.get(&secret, "/v1/invoices").await.assert_error(401, "INVALID_API_KEY");

    // A support member may not manage keys: not in the navigation, refused if forced.
    let args = ["user", "create", "--email", "sam@example.com", "--merchant", &m.id, "--role", "support"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    let mut sam = Browser::new(&app);
    sam.post("/dashboard/login", &[("email", "sam@example.com"), ("password", PASSWORD)]).await;
    let invoices = sam.get(&format!("/dashboard/invoices?merchant={}&mode=test", m.id)).await;
    assert!(!invoices.html.contains("Developers"), "not offered");
    assert_eq!(sam.get(&path).await.status, 403);
}

#[tokio::test]
async fn an_export_is_asked_watched_and_downloaded_from_its_page() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "7.25" })).await.ok(201).clone();
    let number = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await.ok(200)
        ["invoiceNumber"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let path = format!("/dashboard/exports?merchant={}&mode=test", m.id);
    let page = b.get(&path).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(page.html.contains("Reconciliation") && page.html.contains("7.25"), "the month's books: {}", page.html);

    // A range over 366 days is refused beside `to`; nothing is asked.
    let mut wide = form_of(&page.html, "Export");
    wide.extend([
        ("type".into(), "invoices".into()),
        ("from".into(), "2024-01-01".into()),
        ("to".into(), "2026-01-01".into()),
    ]);
    let refused = post(&mut b, &path, &wide).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(
        refused.html.contains("id=\"to-error\"") && refused.html.contains("value=\"2024-01-01\""),
        "{}",
        refused.html
    );
    assert!(app.get(&m.sk_test, "/v1/exports").await.ok(200)["items"].as_array().unwrap().is_empty());

    // Asked once (the same form again asks nothing more), then ready, then downloaded.
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let mut ask = form_of(&refused.html, "Export");
    ask.extend([("type".into(), "invoices".into()), ("from".into(), today.clone()), ("to".into(), today)]);
    assert_eq!(post(&mut b, &path, &ask).await.status, 303);
    assert_eq!(post(&mut b, &path, &ask).await.status, 303);
    let exports = app.get(&m.sk_test, "/v1/exports").await.ok(200)["items"].as_array().unwrap().clone();
    assert_eq!(exports.len(), 1);
    let id = exports[0]["id"].as_str().unwrap().to_owned();
    let mut listed = b.get(&path).await;
    for _ in 0..100 {
        if listed.html.contains("Download ") {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        listed = b.get(&path).await;
    }
    assert!(listed.html.contains(&format!("/dashboard/exports/{id}/file")), "{}", listed.html);
    let file = b.get(&format!("/dashboard/exports/{id}/file?merchant={}&mode=test", m.id)).await;
    assert_eq!(file.status, 200);
    assert!(file.html.contains(&number), "{}", file.html);
    // The other mode does not know it.
    assert_eq!(b.get(&format!("/dashboard/exports/{id}/file?merchant={}&mode=live", m.id)).await.status, 404);
}

/// The value of the element with `id` in a page.
fn text_of(html: &str, id: &str) -> String {
    html.split(&format!("id=\"{id}\">"))
        .nth(1)
        .unwrap_or_else(|| panic!("no #{id} in {html}"))
        .split('<')
        .next()
        .unwrap()
        .to_owned()
}

#[tokio::test]
async fn the_team_and_security_pages_run_the_account_rules() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let args = ["user", "create", "--email", "dev@example.com", "--merchant", &m.id, "--role", "developer"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let q = format!("merchant={}&mode=test", m.id);
    let settings = b.get(&format!("/dashboard/settings?{q}")).await;
    assert_eq!(settings.status, 200, "{}", settings.html);
    assert!(settings.html.contains("dev@example.com") && settings.html.contains("Send the invitation"));

    // Invite: a member's email is refused beside the field; a new one is invited.
    let mut invite = form_of(&settings.html, "Send the invitation");
    invite.extend([("email".into(), "dev@example.com".into()), ("role".into(), "support".into())]);
    let refused = post(&mut b, &format!("/dashboard/settings/invitations?{q}"), &invite).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("id=\"invite-email-error\""), "{}", refused.html);
    let mut invite = form_of(&refused.html, "Send the invitation");
    invite.extend([("email".into(), "sam@example.com".into()), ("role".into(), "support".into())]);
    let sent = post(&mut b, &format!("/dashboard/settings/invitations?{q}"), &invite).await;
    assert_eq!(sent.status, 303, "{}", sent.html);
    let page = b.get(sent.location.as_deref().unwrap()).await;
    assert!(page.html.contains("invitation sent") && page.html.contains("sam@example.com"), "{}", page.html);

    // The developer becomes an admin; the last owner cannot step down.
    let db = stablepay_test_db::connect(&app.db.url()).await;
    let ids: std::collections::BTreeMap<String, String> = db
        .query("SELECT email, id FROM users", &[])
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get::<_, String>(0), r.get::<_, String>(1)))
        .collect();
    let apply = |email: &str| format!("/dashboard/settings/members/{}?{q}", ids[email]);
    let mut change = form_of(&page.html, "Apply");
    change.push(("role".into(), "admin".into()));
    assert_eq!(post(&mut b, &apply("dev@example.com"), &change).await.status, 303);
    let page = b.get(&format!("/dashboard/settings?{q}")).await;
    let mut step_down = form_of(&page.html, "Apply");
    step_down.push(("role".into(), "viewer".into()));
    let last = post(&mut b, &apply("ada@example.com"), &step_down).await;
    assert_eq!(last.status, 403, "{}", last.html);
    assert!(last.html.contains("role=\"alert\""));

    // Two-factor login: the QR code and key, a wrong code refused, the right one shows the
    // recovery codes once and renews the session.
    let security = b.get(&format!("/dashboard/settings/security?{q}")).await;
    let started = post(
        &mut b,
        &format!("/dashboard/settings/security/two-factor?{q}"),
        &form_of(&security.html, "Turn on two-factor login"),
    )
    .await;
    assert_eq!(started.status, 200, "{}", started.html);
    assert!(started.html.contains("<svg"), "a QR code");
    let secret = text_of(&started.html, "totp-secret");
    let mut wrong = form_of(&started.html, "Confirm");
    wrong.push(("otp".into(), "000000".into()));
    let refused = post(&mut b, &format!("/dashboard/settings/security/two-factor/confirm?{q}"), &wrong).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    let old_cookie = b.cookie.clone();
    let step = chrono::Utc::now().timestamp() / 30;
    let mut right = form_of(&started.html, "Confirm");
    right.push(("otp".into(), crate::accounts::totp(&secret, step)));
    let on = post(&mut b, &format!("/dashboard/settings/security/two-factor/confirm?{q}"), &right).await;
    assert_eq!(on.status, 200, "{}", on.html);
    assert_eq!(on.html.matches("<li><code>").count(), 10, "ten recovery codes");
    assert!(on.set_cookie.is_some() && b.cookie != old_cookie, "the session is renewed");
    assert!(!app.logs().contains(&secret), "the key is never logged");

    // The audit log names who did what.
    let audit = b.get(&format!("/dashboard/settings/audit-log?{q}")).await;
    assert_eq!(audit.status, 200);
    for needle in ["member invited", "role changed", "two factor enabled", "ada@example.com"] {
        assert!(audit.html.contains(needle), "{needle}: {}", audit.html);
    }
    // Signing out everywhere ends this session too.
    let security = b.get(&format!("/dashboard/settings/security?{q}")).await;
    let end = post(
        &mut b,
        &format!("/dashboard/settings/security/sessions/end?{q}"),
        &form_of(&security.html, "Sign out everywhere"),
    )
    .await;
    assert_eq!(end.location.as_deref(), Some("/dashboard/login"));
    assert_eq!(b.get(&format!("/dashboard/settings?{q}")).await.location.as_deref(), Some("/dashboard/login"));
}

#[tokio::test]
async fn a_payment_link_is_made_shared_paused_edited_and_duplicated_from_its_pages() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let q = format!("merchant={}&mode=test", m.id);
    let new = format!("/dashboard/payment-links/new?{q}");
    let form = b.get(&new).await;
    assert_eq!(form.status, 200, "{}", form.html);
    // A fixed link without its amount: refused beside the field, nothing made.
    let mut missing = form_of(&form.html, "Save the link");
    missing.extend([
        ("title".into(), "Coffee beans".into()),
        ("amountType".into(), "fixed".into()),
        ("usageType".into(), "reusable".into()),
    ]);
    let refused = post(&mut b, &new, &missing).await;
    assert_eq!(refused.status, 400, "{}", refused.html);
    assert!(refused.html.contains("id=\"amount-error\"") && refused.html.contains("value=\"Coffee beans\""));
    assert!(app.get(&m.sk_test, "/v1/payment-links").await.ok(200)["items"].as_array().unwrap().is_empty());
    let mut good = form_of(&refused.html, "Save the link");
    good.extend([
        ("title".into(), "Coffee beans".into()),
        ("amountType".into(), "fixed".into()),
        ("amount".into(), "12.50".into()),
        ("usageType".into(), "reusable".into()),
    ]);
    let made = post(&mut b, &new, &good).await;
    assert_eq!(made.status, 303, "{}", made.html);
    let page = b.get(made.location.as_deref().unwrap()).await;
    let api = app.get(&m.sk_test, "/v1/payment-links").await.ok(200)["items"][0].clone();
    let (id, url) = (api["id"].as_str().unwrap().to_owned(), api["url"].as_str().unwrap().to_owned());
    assert!(page.html.contains(&url) && page.html.contains("<svg"), "the public URL and its QR code");
    // A customer pays through it: the link's page lists the invoice.
    let public_id = url.rsplit('/').next().unwrap();
    let submitted = app
        .send(
            app.http
                .post(app.url(&format!("/v1/public/payment-links/{public_id}/checkout")))
                .header("Idempotency-Key", "k1")
                .json(&json!({ "version": 1 })),
        )
        .await;
    assert_eq!(submitted.status, 201, "{}", submitted.body);
    let invoice = submitted.ok(201)["invoiceId"].as_str().unwrap().to_owned();
    let page = b.get(&format!("/dashboard/payment-links/{id}?{q}")).await;
    assert!(page.html.contains(&invoice), "{}", page.html);
    // Paused, then edited at its version; a stale version is refused.
    let paused = post(&mut b, &action_of(&page.html, "Pause"), &form_of(&page.html, "Pause")).await;
    assert_eq!(paused.status, 303);
    assert_eq!(app.get(&m.sk_test, &format!("/v1/payment-links/{id}")).await.ok(200)["status"], "paused");
    // A paused link is offered a resume, not another pause (the domain's offers).
    let now_paused = b.get(&format!("/dashboard/payment-links/{id}?{q}")).await.html;
    assert!(now_paused.contains(">Resume</button>") && !now_paused.contains(">Pause</button>"), "{now_paused}");
    let mut edit = form_of(&page.html, "Save the link");
    edit.extend([
        ("version".into(), "1".into()),
        ("title".into(), "Coffee beans, 1 kg".into()),
        ("amountType".into(), "fixed".into()),
        ("amount".into(), "14".into()),
        ("usageType".into(), "reusable".into()),
    ]);
    let edit_url = action_of(&page.html, "Save the link");
    assert_eq!(post(&mut b, &edit_url, &edit).await.status, 303);
    let api = app.get(&m.sk_test, &format!("/v1/payment-links/{id}")).await.ok(200).clone();
    assert_eq!((api["title"].as_str(), api["version"].as_i64()), (Some("Coffee beans, 1 kg"), Some(2)));
    let mut stale = form_of(&b.get(&format!("/dashboard/payment-links/{id}?{q}")).await.html, "Save the link");
    stale.extend(edit[2..].iter().cloned());
    assert_eq!(post(&mut b, &edit_url, &stale).await.status, 409);
    // Duplicated: a new active link.
    let page = b.get(&format!("/dashboard/payment-links/{id}?{q}")).await;
    let copy = post(&mut b, &action_of(&page.html, "Duplicate"), &form_of(&page.html, "Duplicate")).await;
    assert!(!copy.location.unwrap().contains(&id));
    assert_eq!(app.get(&m.sk_test, "/v1/payment-links").await.ok(200)["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn a_broken_webhook_is_seen_failing_and_replayed_after_the_fix() {
    use crate::receiver::{Receiver, Reply};
    use std::time::Duration;
    let env = [
        ("STABLEPAY_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
        ("STABLEPAY_WEBHOOK_RETRY_SCHEDULE", "200ms".to_owned()),
        ("STABLEPAY_WEBHOOK_TIMEOUT_MS", "1000".to_owned()),
    ];
    let app = TestApp::spawn_with(crate::support::fresh_db().await, &env, &[]).await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let rx = Receiver::start().await;
    rx.answer(Reply::Status(503));
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let q = format!("merchant={}&mode=test", m.id);
    let hooks = format!("/dashboard/webhooks?{q}");
    let page = b.get(&hooks).await;
    // Added from the page: its signing secret shown once.
    let mut add = form_of(&page.html, "Add the endpoint");
    add.push(("url".into(), rx.url("/hook")));
    let added = post(&mut b, &format!("/dashboard/webhooks/endpoints?{q}"), &add).await;
    assert_eq!(added.status, 201, "{}", added.html);
    let secret = text_of(&added.html, "new-secret");
    assert!(secret.starts_with("whsec_"));
    assert!(
        !post(&mut b, &format!("/dashboard/webhooks/endpoints?{q}"), &add).await.html.contains(&secret),
        "shown once"
    );
    assert_eq!(app.get(&m.sk_test, "/v1/webhook-endpoints").await.ok(200)["items"].as_array().unwrap().len(), 1);

    // A payment's event fails at the receiver (503) and shows as failed.
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "2.00" })).await.ok(201).clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    let failed_path = format!("/dashboard/webhooks?{q}&status=failed");
    let mut failed = b.get(&failed_path).await;
    for _ in 0..200 {
        if failed.html.contains("HTTP 503") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        failed = b.get(&failed_path).await;
    }
    assert!(failed.html.contains("HTTP 503"), "{}", failed.html);
    // Fixed, then replayed from the log: the receiver gets the event, delivered.
    rx.answer(Reply::Status(200));
    let seen = rx.received().len();
    let replayed = post(&mut b, &action_of(&failed.html, "Replay"), &form_of(&failed.html, "Replay")).await;
    assert_eq!(replayed.status, 303, "{}", replayed.html);
    rx.wait_for(seen + 1, Duration::from_secs(20)).await;
    let delivered_path = format!("/dashboard/webhooks?{q}&status=delivered");
    let mut delivered = b.get(&delivered_path).await;
    for _ in 0..100 {
        if delivered.html.contains("HTTP 200") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        delivered = b.get(&delivered_path).await;
    }
    assert!(delivered.html.contains("invoice.paid") && delivered.html.contains("HTTP 200"), "{}", delivered.html);
    // Disabled from the page: a replay is refused on the page, saying why.
    let page = b.get(&hooks).await;
    assert_eq!(post(&mut b, &action_of(&page.html, "Disable"), &form_of(&page.html, "Disable")).await.status, 303);
    let page = b.get(&hooks).await;
    let refused = post(&mut b, &action_of(&page.html, "Replay"), &form_of(&page.html, "Replay")).await;
    assert_eq!(refused.status, 409, "{}", refused.html);
    assert!(refused.html.contains("role=\"alert\""));
}

#[tokio::test]
async fn the_invoice_list_narrows_by_status_number_customer_and_dates() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    owner(&app, &m, "ada@example.com");
    let mut made = Vec::new();
    for (name, email) in [
        ("Ada Lovelace", "ada@example.com"),
        ("Grace Hopper", "grace@navy.example"),
        ("Alan 100%_Turing", "alan@example.com"),
    ] {
        let unit = if name == "Grace Hopper" { "1849.99" } else { "4" };
        let body = json!({ "lines": [{ "description": "Tea", "quantity": "1", "unitAmount": unit }],
                           "customer": { "name": name, "email": email }, "issue": true });
        made.push(app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone());
    }
    // One is paid: its status is paid, the others pending.
    let cs = made[1]["checkoutSessions"][0]["id"].as_str().unwrap();
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await.ok(201);
    let number = |i: usize| made[i]["invoiceNumber"].as_str().unwrap().to_owned();
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let list = |query: &str| format!("/dashboard/invoices?merchant={}&mode=test&{query}", m.id);
    let shown = |html: &str| (0..3).filter(|i| html.contains(&number(*i))).collect::<Vec<_>>();

    assert_eq!(shown(&b.get(&list("q=GRACE")).await.html), vec![1], "a customer's name, case ignored");
    assert_eq!(shown(&b.get(&list("q=navy.example")).await.html), vec![1], "a customer's email");
    assert_eq!(shown(&b.get(&list(&format!("q={}", number(2)))).await.html), vec![2], "a number");
    // A search's wildcards are literal: "100%_" finds Alan only, "%" alone no one else.
    assert_eq!(shown(&b.get(&list("q=100%25_")).await.html), vec![2]);
    assert_eq!(shown(&b.get(&list("status=paid")).await.html), vec![1]);
    // Amounts read like money: thousands grouped, two decimals (the API keeps six).
    let paid = b.get(&list("status=paid")).await.html;
    assert!(paid.contains("1,849.99 USDC") && !paid.contains("1849.99"), "{paid}");
    let pending = b.get(&list("status=pending&q=example.com")).await;
    assert_eq!(shown(&pending.html), vec![0, 2]);
    assert!(pending.html.contains("value=\"example.com\""), "the search is kept in the form");
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(shown(&b.get(&list(&format!("from={today}&to={today}"))).await.html), vec![0, 1, 2]);
    assert!(shown(&b.get(&list("to=2020-01-01")).await.html).is_empty(), "nothing was created before 2020");
    // The filters stay in the next page's URL.
    let first = b.get(&list("q=example.com&limit=1")).await;
    let next =
        first.html.split("rel=\"next\" href=\"").nth(1).unwrap().split('"').next().unwrap().replace("&amp;", "&");
    assert!(next.contains("q=example.com") && next.contains("limit=1"), "{next}");
    // A date that does not parse, or dates the wrong way round, are refused on a page.
    let bad = b.get(&list("from=yesterday")).await;
    assert_eq!(bad.status, 400);
    assert!(bad.html.contains("from"), "{}", bad.html);
    assert_eq!(b.get(&list("from=2026-02-01&to=2026-01-01")).await.status, 400);
}

#[tokio::test]
async fn owners_turn_unique_amounts_off_and_on_in_the_settings() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &format!("0x{}", "ab".repeat(20)), "--json"]);
    owner(&app, &m, "ada@example.com");
    let args = ["user", "create", "--email", "sue@example.com", "--merchant", &m.id, "--role", "support"];
    assert!(app.cli_with_input(&args, &format!("{PASSWORD}\n")).0);
    let mut b = Browser::new(&app);
    b.post("/dashboard/login", &[("email", "ada@example.com"), ("password", PASSWORD)]).await;
    let q = format!("merchant={}&mode=live", m.id);
    let settings = b.get(&format!("/dashboard/settings?{q}")).await;
    assert_eq!(settings.status, 200, "{}", settings.html);
    let off = form_of(&settings.html, "Turn unique amounts off");
    let done = post(&mut b, &action_of(&settings.html, "Turn unique amounts off"), &off).await;
    assert_eq!(done.status, 303, "{}", done.html);
    let shown = app.cli_ok(&["merchant", "show", &m.id, "--json"]);
    assert_eq!(shown["live"]["uniqueAmounts"], false, "{shown}");
    let settings = b.get(&format!("/dashboard/settings?{q}")).await;
    assert!(settings.html.contains("Turn unique amounts on"), "{}", settings.html);
    // A support member is not offered the setting.
    let mut s = Browser::new(&app);
    s.post("/dashboard/login", &[("email", "sue@example.com"), ("password", PASSWORD)]).await;
    let page = s.get(&format!("/dashboard/settings?{q}")).await;
    assert_eq!(page.status, 200, "{}", page.html);
    assert!(!page.html.contains("unique amounts on") && !page.html.contains("unique amounts off"), "{}", page.html);
}
