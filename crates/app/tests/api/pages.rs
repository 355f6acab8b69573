//! The hosted pages over plain HTTP (the browser tests are in `browser.rs`): the public checkout
//! view behind the page's live status, scan-or-copy availability, paying an invoice again after
//! its first checkout expired, escaping, the served assets and the pages' headers.

use serde_json::{Value, json};

use crate::support::{TestApp, client_from};

async fn public_checkout(app: &TestApp, id: &str) -> Value {
    let r = app.send(app.http.get(app.url(&format!("/v1/public/checkout-sessions/{id}")))).await;
    r.ok(200).clone()
}

fn id(v: &Value) -> String {
    v["id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn the_public_checkout_view_follows_the_payments() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "84" })).await.ok(201).clone();
    let view = public_checkout(&app, &id(&cs)).await;
    assert_eq!(view["object"], "public_checkout_session");
    assert_eq!((view["phase"].as_str(), view["amountDue"].as_str()), (Some("pay"), Some("84.000000")));
    assert_eq!(view["amountDueUnits"], "84000000");
    assert_eq!(view["merchantName"], "Shop");
    assert!(view["secondsLeft"].as_i64().unwrap() > 1700);
    // A test checkout takes no real transfer: no address, contract or payment request.
    for field in ["settlementWalletAddress", "tokenContract", "paymentUri", "scanOrCopy", "latestPayment"] {
        assert!(view[field].is_null(), "{field}: {view}");
    }
    assert!(!view.to_string().contains("metadata"));

    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", id(&cs));
    app.post(&m.sk_test, &pay, json!({ "amount": "31" })).await.ok(201);
    let view = public_checkout(&app, &id(&cs)).await;
    assert_eq!((view["phase"].as_str(), view["amountDue"].as_str()), (Some("underpaid"), Some("53.000000")));
    assert_eq!(view["latestPayment"]["status"], "underpaid");
    let page = app.http.get(cs["checkoutUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("53.00") && !page.contains("84.00"), "the page asks for what is left: {page}");

    app.post(&m.sk_test, &pay, json!({})).await.ok(201);
    let view = public_checkout(&app, &id(&cs)).await;
    assert_eq!((view["phase"].as_str(), view["status"].as_str()), (Some("paid"), Some("completed")));

    let r = app.send(app.http.get(app.url("/v1/public/checkout-sessions/cs_nope"))).await;
    r.assert_error(404, "NOT_FOUND");
    // Polling shares the public-read quota.
    assert!(r.header("ratelimit").is_some_and(|h| h.starts_with("\"public-read\"")));
}

/// A transfer sent without its hash is matched by wallet, token and exact amount: scan and copy
/// are offered only when that match is certain (SCAN_OR_COPY_UNAVAILABLE otherwise).
#[tokio::test]
async fn scan_and_copy_are_offered_only_when_a_transfer_can_be_matched() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let wallet = format!("0x{}", "ab".repeat(20));
    app.cli_ok(&["merchant", "activate", &m.id, "--settlement-wallet", &wallet, "--json"]);
    // Twins (two checkouts asking the same amount) exist only with unique amounts off.
    app.cli_ok(&["merchant", "unique-amounts", &m.id, "off", "--json"]);
    let (app, key) = (&app, m.sk_live.clone());
    let create = |amount: &str| {
        let (body, key) = (json!({ "amount": amount }), key.clone());
        async move { app.post(&key, "/v1/checkout-sessions", body).await.ok(201).clone() }
    };
    let single = create("1849.99").await;
    let view = public_checkout(app, &id(&single)).await;
    assert_eq!(view["scanOrCopy"]["available"], true);
    let token = view["tokenContract"].as_str().unwrap();
    let to = view["settlementWalletAddress"].as_str().unwrap();
    assert_eq!(to.to_lowercase(), wallet);
    assert_eq!(view["paymentUri"], format!("ethereum:{token}@137/transfer?address={to}&uint256=1849990000"));
    let page = app.http.get(single["checkoutUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("<svg") && page.contains("pay-address"), "QR code and address: {page}");
    // People read the amount grouped; what they copy into a wallet is never grouped.
    assert!(page.contains("Pay 1,849.99 USDC with my wallet"), "{page}");
    assert!(page.contains("data-copy=\"1849.99\"") && !page.contains("data-copy=\"1,849.99\""), "{page}");

    let (a, b) = (create("10").await, create("10").await);
    for cs in [&a, &b] {
        let view = public_checkout(app, &id(cs)).await;
        assert_eq!(view["scanOrCopy"]["available"], false, "{view}");
        assert_eq!(view["scanOrCopy"]["code"], "SCAN_OR_COPY_UNAVAILABLE");
        assert!(view["paymentUri"].is_null());
        let page = app.http.get(cs["checkoutUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
        assert!(page.contains("SCAN_OR_COPY_UNAVAILABLE") && !page.contains("<svg"), "{page}");
        assert!(
            page.contains("wallet-pay") && page.contains("transactionHash"),
            "the wallet and hash routes stay: {page}"
        );
    }
    // With unique amounts (a merchant's default), no two checkouts ask the same amount.
    app.cli_ok(&["merchant", "unique-amounts", &m.id, "on", "--json"]);
    let (c, d) = (create("10").await, create("10").await);
    for cs in [&c, &d] {
        assert_eq!(public_checkout(app, &id(cs)).await["scanOrCopy"]["available"], true);
    }
}

#[tokio::test]
async fn an_invoice_stays_payable_from_its_page_after_a_checkout_expires() {
    let app = TestApp::spawn().await;
    let m =
        app.cli_ok(&["merchant", "create", "--name", "<b>Bold & Co</b>", "--json"])["id"].as_str().unwrap().to_owned();
    let key = app.create_key(&m, "test", "secret");
    let inv = app
        .post(
            &key,
            "/v1/invoices",
            json!({ "lines": [{ "description": "<script>alert(1)</script>", "quantity": "1", "unitAmount": "40" }],
                    "dueAt": (chrono::Utc::now() + chrono::Duration::days(10)).to_rfc3339(), "issue": true }),
        )
        .await
        .ok(201)
        .clone();
    let url = inv["hostedInvoiceUrl"].as_str().unwrap().to_owned();
    let html = app.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;") && !html.contains("<script>alert"), "{html}");
    assert!(html.contains("&lt;b&gt;Bold &amp; Co&lt;/b&gt;"), "{html}");
    // No settlement address on a test-mode page (an id or token may well contain "0x": only a
    // wallet the checkout names is looked for).
    if let Some(wallet) = inv["checkoutSessions"][0]["settlementWalletAddress"].as_str() {
        assert!(!html.to_lowercase().contains(&wallet.to_lowercase()), "{html}");
    }

    // The first checkout expires; the page still offers to pay, and opens a new checkout.
    app.post(&key, "/v1/test-helpers/clock/advance", json!({ "seconds": 31 * 60 })).await.ok(200);
    let html = app.http.get(&url).send().await.unwrap().text().await.unwrap();
    assert!(html.contains("Pay 40.00 USDC"), "{html}");
    let no_redirect = reqwest::Client::builder().redirect(reqwest::redirect::Policy::none()).build().unwrap();
    let pay = format!("{url}/pay");
    assert_eq!(no_redirect.post(&pay).send().await.unwrap().status().as_u16(), 403, "no origin");
    let r = no_redirect.post(&pay).header("Sec-Fetch-Site", "same-origin").send().await.unwrap();
    assert_eq!(r.status().as_u16(), 303);
    let location = r.headers()["location"].to_str().unwrap().to_owned();
    let cs = location.strip_prefix("/checkout/").unwrap();
    let view = public_checkout(&app, cs).await;
    assert_eq!((view["phase"].as_str(), view["amountDue"].as_str()), (Some("pay"), Some("40.000000")));
    let again = no_redirect.post(&pay).header("Origin", &app.base).send().await.unwrap();
    assert_eq!(again.headers()["location"], location.as_str(), "the open checkout is reused");
    // The old checkout's page says it expired and points to the invoice.
    let old = inv["checkoutSessions"][0]["id"].as_str().map(str::to_owned);
    if let Some(old) = old {
        let page = app.http.get(app.url(&format!("/checkout/{old}"))).send().await.unwrap().text().await.unwrap();
        assert!(page.contains("This checkout has expired") && page.contains("/i/"), "{page}");
    }
}

#[tokio::test]
async fn pages_load_only_their_own_assets() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let page = app.http.get(cs["checkoutUrl"].as_str().unwrap()).send().await.unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_owned();
    assert!(csp.contains("script-src 'self'") && csp.contains("style-src 'self'") && !csp.contains("unsafe"), "{csp}");
    let html = page.text().await.unwrap();
    assert!(
        html.contains("<html lang=\"en\">") && html.contains("/assets/pages.css") && html.contains("/assets/pages.js")
    );
    assert!(!html.contains("http://") && !html.contains("https://"), "no outside resource: {html}");
    assert!(html.contains("rel=\"icon\" href=\"/favicon.ico\""), "the pages name their icon");
    for (path, kind) in
        [("/assets/pages.css", "text/css"), ("/assets/pages.js", "text/javascript"), ("/favicon.ico", "image/x-icon")]
    {
        let r = app.http.get(app.url(path)).send().await.unwrap();
        assert_eq!(r.status().as_u16(), 200, "{path}");
        assert!(r.headers()["content-type"].to_str().unwrap().starts_with(kind));
        assert!(!r.bytes().await.unwrap().is_empty());
    }
    // The simulate form refuses an outcome it does not offer, and changes nothing.
    let form = client_from("127.0.0.1")
        .post(format!("{}/simulate", cs["checkoutUrl"].as_str().unwrap()))
        .header("Origin", &app.base)
        .body("outcome=jackpot")
        .send()
        .await
        .unwrap();
    assert_eq!(form.status().as_u16(), 400);
    let inv = app.get(&m.sk_test, &format!("/v1/invoices/{}", cs["invoiceId"].as_str().unwrap())).await;
    assert_eq!(inv.ok(200)["customerAmountPaid"], "0.000000");
}

#[tokio::test]
async fn the_checkout_shows_what_is_paid_for_and_the_paid_invoice_offers_its_receipt() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    app.cli_ok(&["merchant", "profile", &m.id, "--support-email", "help@shop.example", "--json"]);
    let body = json!({
        "lines": [
            { "description": "Espresso machine", "quantity": "1", "unitAmount": "300" },
            { "description": "Coffee beans <1kg>", "quantity": "3", "unitAmount": "20" }
        ],
        "customer": { "name": "Grace Hopper", "email": "grace@example.com" },
        "issue": true
    });
    let inv = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let cs = inv["checkoutSessions"][0]["id"].as_str().unwrap().to_owned();
    let page = app.http.get(app.url(&format!("/checkout/{cs}"))).send().await.unwrap().text().await.unwrap();
    for needle in [
        "What you are paying for",
        "Espresso machine",
        "Coffee beans &lt;1kg&gt;",
        "× 3",
        "360.00",
        "For Grace Hopper",
        "See the full invoice",
        "mailto:help@shop.example",
    ] {
        assert!(page.contains(needle), "the checkout page lacks {needle:?}:\n{page}");
    }
    // The hosted invoice offers its document, and the public route serves it.
    let hosted = inv["hostedInvoiceUrl"].as_str().unwrap();
    let token = hosted.rsplit('/').next().unwrap();
    let invoice_page = app.http.get(hosted).send().await.unwrap().text().await.unwrap();
    let pdf_path = format!("/v1/public/invoices/{token}/pdf");
    assert!(invoice_page.contains(&pdf_path) && invoice_page.contains("Download the invoice (PDF)"), "{invoice_page}");
    assert!(invoice_page.contains("Amount due"), "{invoice_page}");
    let res = app.http.get(app.url(&pdf_path)).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(res.headers()["content-type"], "application/pdf");
    assert_eq!(res.headers()["cache-control"], "no-store");
    assert!(res.bytes().await.unwrap().starts_with(b"%PDF-"));
    let unknown = app.send(app.http.get(app.url("/v1/public/invoices/pt_nothere000000000000000/pdf"))).await;
    unknown.assert_error(404, "INVOICE_NOT_FOUND");

    // Paid: the checkout thanks and offers the receipt; the invoice page lists the payment.
    app.post(&m.sk_test, &format!("/v1/test-helpers/checkout-sessions/{cs}/payments"), json!({})).await.ok(201);
    let paid = app.http.get(app.url(&format!("/checkout/{cs}"))).send().await.unwrap().text().await.unwrap();
    assert!(paid.contains("Download the receipt (PDF)") && paid.contains(&pdf_path), "{paid}");
    assert!(!paid.contains("polygonscan"), "test transfers are simulated: no explorer link");
    let invoice_page = app.http.get(hosted).send().await.unwrap().text().await.unwrap();
    assert!(invoice_page.contains("Payments") && invoice_page.contains("Download the receipt (PDF)"), "{invoice_page}");
    let receipt = app.http.get(app.url(&pdf_path)).send().await.unwrap().bytes().await.unwrap();
    let file = std::env::temp_dir().join(format!("public-receipt-{token}.pdf"));
    std::fs::write(&file, &receipt).unwrap();
    let out = tokio::process::Command::new("pdftotext").arg(&file).arg("-").output().await.unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("RECEIPT") && text.contains("PAID"), "{text}");
}

/// A merchant's logo: set from a PNG file by the operator (anything else refused, naming the
/// field), shown above its name on the checkout, invoice and link pages and used as their icon,
/// served at its digest's address with its exact bytes; removed, the pages go back to the
/// name and the service's icon, and the old address is gone.
#[tokio::test]
async fn the_merchants_logo_is_on_its_pages_and_served_by_digest() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let other = app.merchant("Other");
    // Refusals name their field and change nothing.
    let bad = std::env::temp_dir().join(format!("not-a-logo-{}.gif", std::process::id()));
    std::fs::write(&bad, b"GIF89a not a png").unwrap();
    for (file, field) in [(bad.to_str().unwrap(), "logo"), ("/nonexistent/logo.png", "file")] {
        let (ok, refused) = app.cli(&["merchant", "logo", &m.id, "--file", file, "--json"]);
        assert!(!ok);
        assert_eq!(refused["error"]["details"]["field"], field, "{refused}");
    }
    let (ok, _) = app.cli(&["merchant", "logo", &m.id, "--json"]);
    assert!(!ok, "neither --file nor --clear");
    let huge = crate::support::png_image(2048, 16);
    let file = std::env::temp_dir().join(format!("huge-{}.png", std::process::id()));
    std::fs::write(&file, &huge).unwrap();
    let (ok, refused) = app.cli(&["merchant", "logo", &m.id, "--file", file.to_str().unwrap(), "--json"]);
    assert!(!ok);
    assert!(refused["error"]["message"].as_str().unwrap().contains("2048 x 16"), "{refused}");
    assert_eq!(app.cli_ok(&["merchant", "show", &m.id, "--json"])["logo"], Value::Null);

    let png = crate::support::png_image(240, 80);
    let digest = app.set_logo(&m.id, &png);
    assert_eq!(app.cli_ok(&["merchant", "show", &m.id, "--json"])["logo"]["width"], 240);
    let img = format!("<img class=\"logo\" src=\"/logos/{digest}.png\" alt=\"\" width=\"144\" height=\"48\">");
    let icon = format!("<link rel=\"icon\" href=\"/logos/{digest}.png\" type=\"image/png\">");

    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let inv = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            json!({ "lines": [{ "description": "Beans", "quantity": "1", "unitAmount": "9" }], "issue": true }),
        )
        .await
        .ok(201)
        .clone();
    let link = app
        .post(&m.sk_test, "/v1/payment-links", json!({ "title": "Tip", "amountType": "fixed", "amount": "3" }))
        .await
        .ok(201)
        .clone();
    let urls = [
        format!("/checkout/{}", cs["id"].as_str().unwrap()),
        inv["hostedInvoiceUrl"].as_str().unwrap().to_owned(),
        link["url"].as_str().unwrap().to_owned(),
    ];
    let app = &app;
    let fetch = |url: String| async move {
        let url = if url.starts_with('/') { app.url(&url) } else { url };
        app.http.get(url).send().await.unwrap().text().await.unwrap()
    };
    for url in &urls {
        let page = fetch(url.clone()).await;
        assert!(page.contains(&img), "{url} lacks the logo:\n{page}");
        assert!(page.contains(&icon), "{url} lacks the icon");
        assert!(!page.contains("/favicon.ico"), "{url}");
    }
    // Another merchant's pages keep the service's icon.
    let theirs = app.post(&other.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let page = fetch(format!("/checkout/{}", theirs["id"].as_str().unwrap())).await;
    assert!(page.contains("/favicon.ico") && !page.contains("/logos/"), "{page}");

    let served = app.http.get(app.url(&format!("/logos/{digest}.png"))).send().await.unwrap();
    assert_eq!(served.status().as_u16(), 200);
    assert_eq!(served.headers()["content-type"], "image/png");
    assert_eq!(served.headers()["cache-control"], "public, max-age=31536000, immutable");
    assert_eq!(served.headers()["x-content-type-options"], "nosniff");
    assert_eq!(served.bytes().await.unwrap().to_vec(), png);
    for missing in [format!("/logos/{}.png", "0".repeat(64)), format!("/logos/{digest}"), "/logos/..%2f.png".into()] {
        let res = app.http.get(app.url(&missing)).send().await.unwrap();
        assert_eq!(res.status().as_u16(), 404, "{missing}");
    }

    let cleared = app.cli_ok(&["merchant", "logo", &m.id, "--clear", "--json"]);
    assert_eq!(cleared["logo"], Value::Null);
    for url in &urls {
        let page = fetch(url.clone()).await;
        assert!(!page.contains("/logos/") && page.contains("/favicon.ico"), "{url} still shows the logo");
    }
    let gone = app.http.get(app.url(&format!("/logos/{digest}.png"))).send().await.unwrap();
    assert_eq!(gone.status().as_u16(), 404);
}

/// The `status` events of a checkout page's push channel, as a browser's EventSource reads them.
struct Events {
    res: reqwest::Response,
    buf: String,
}

impl Events {
    /// The next event's data (comments skipped); `None` once the stream ended.
    async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                if let Some(data) = block.lines().find_map(|l| l.strip_prefix("data: ")) {
                    assert!(block.contains("event: status"), "{block}");
                    return Some(serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), self.res.chunk()).await;
            match chunk.expect("nothing pushed within 10 s").unwrap() {
                Some(bytes) => self.buf.push_str(&String::from_utf8_lossy(&bytes)),
                None => return None,
            }
        }
    }
}

#[tokio::test]
async fn the_checkout_page_is_pushed_each_change_of_its_checkout_from_any_process_then_the_stream_ends() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "10" })).await.ok(201).clone();
    let res = app.http.get(app.url(&format!("/checkout/{}/events", id(&cs)))).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-type"], "text/event-stream");
    assert_eq!(res.headers()["cache-control"], "no-store");
    let mut events = Events { res, buf: String::new() };
    assert_eq!(events.next().await, Some(json!({ "phase": "pay", "payment": "" })));
    // The page itself names its stream.
    let page = app.send(app.http.get(app.url(&format!("/checkout/{}", id(&cs))))).await;
    assert!(page.body.as_str().unwrap().contains(&format!("data-events-url=\"/checkout/{}/events\"", id(&cs))));

    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", id(&cs));
    // Credited by another process of the deployment: its signal reaches this one's page.
    let (other, _child) = app.sibling(&[]).await;
    let res = app.http.post(format!("{other}{pay}")).bearer_auth(&m.sk_test).json(&json!({ "amount": "4" }));
    let short = app.send(res).await.ok(201).clone();
    let pushed = events.next().await.unwrap();
    assert_eq!(pushed["phase"], "underpaid");
    assert_eq!(pushed["payment"], short["status"]);
    app.post(&m.sk_test, &pay, json!({ "amount": "6" })).await.ok(201);
    assert_eq!(events.next().await.unwrap()["phase"], "paid");
    // A final phase ends the stream.
    assert_eq!(events.next().await, None);

    // Paid: the stream says so at once and ends; an unknown checkout is the 404 page.
    let res = app.http.get(app.url(&format!("/checkout/{}/events", id(&cs)))).send().await.unwrap();
    let mut again = Events { res, buf: String::new() };
    assert_eq!(again.next().await.unwrap()["phase"], "paid");
    assert_eq!(again.next().await, None);
    let unknown = app.send(app.http.get(app.url("/checkout/cs_0000000000000000000000/events"))).await;
    assert_eq!(unknown.status, 404);
}
