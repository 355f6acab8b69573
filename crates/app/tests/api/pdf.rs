//! Invoice PDFs: the document's bytes and headers, every field read back from it with
//! `pdftotext` (poppler-utils), page 1 rendered with `pdftoppm` into `target/screenshots/` for
//! review, and the refusals in the envelope.

use std::path::PathBuf;

use serde_json::json;
use tokio::process::Command;

use crate::support::TestApp;

fn shots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/screenshots")
}

#[tokio::test]
async fn an_issued_invoice_is_a_pdf_with_every_field() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Café Lumière");
    let inv = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            json!({
                "lines": [
                    { "description": "Consulting — crème brûlée recipes", "quantity": "2", "unitAmount": "50" },
                    { "description": "東京 office visit", "quantity": "1.5", "unitAmount": "20.25" },
                    { "description": "Hebrew menu שלום and Arabic مرحبا", "quantity": "1", "unitAmount": "10" }
                ],
                "customer": { "name": "Zoë Ångström", "company": "Analytical Engines Ltd", "email": "zoe@example.com",
                              "billingAddress": "12 St James's Square\nLondon SW1Y 4JH" },
                "discount": { "type": "percentage", "percentage": "10" },
                "taxes": [{ "label": "VAT", "amount": "12.73", "jurisdiction": "UK", "registrationReference": "GB123456789" }],
                "dueAt": "2030-01-15T12:00:00Z",
                "paymentTerms": "Net 30",
                "purchaseOrderNumber": "PO-7781",
                "memo": "Thank you for choosing us.",
                "footer": "Café Lumière SARL · 1 rue de la Paix, Paris",
                "issue": true
            }),
        )
        .await
        .ok(201)
        .clone();
    let id = inv["id"].as_str().unwrap();
    let number = inv["invoiceNumber"].as_str().unwrap().to_owned();
    let res = app.http.get(app.url(&format!("/v1/invoices/{id}/pdf"))).bearer_auth(&m.sk_test).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    let h = res.headers().clone();
    assert_eq!(h["content-type"], "application/pdf");
    assert_eq!(h["content-disposition"].to_str().unwrap(), format!("attachment; filename=\"{number}.pdf\""));
    assert_eq!(h["cache-control"], "no-store");
    let bytes = res.bytes().await.unwrap();
    assert!(bytes.starts_with(b"%PDF-"), "not a PDF");
    assert!(bytes.len() < 400_000, "fonts are subset: {} bytes", bytes.len());
    // The number works like the id, as on the other reads.
    let by_number =
        app.http.get(app.url(&format!("/v1/invoices/{number}/pdf"))).bearer_auth(&m.sk_test).send().await.unwrap();
    assert_eq!(by_number.status().as_u16(), 200);
    assert!(by_number.bytes().await.unwrap().starts_with(b"%PDF-"));

    std::fs::create_dir_all(shots()).unwrap();
    let file = shots().join("invoice.pdf");
    std::fs::write(&file, &bytes).unwrap();
    let out = Command::new("pdftotext").arg(&file).arg("-").output().await.expect("pdftotext (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    let hosted = inv["hostedInvoiceUrl"].as_str().unwrap();
    for needle in [
        "Café Lumière",
        "https://shop.example",
        "INVOICE",
        number.as_str(),
        "Issued",
        "15 Jan 2030",
        "PO-7781",
        "Net 30",
        "Zoë Ångström",
        "Analytical Engines Ltd",
        "zoe@example.com",
        "London SW1Y 4JH",
        "Consulting — crème brûlée recipes",
        "東京 office visit",
        "1.5",
        "20.25",
        "30.375",
        "Subtotal",
        "140.375 USDC",
        "Discount (10 %)",
        "−14.0375 USDC",
        "VAT · UK · GB123456789",
        "12.73 USDC",
        "Total",
        "139.0675 USDC",
        "Paid",
        "0.00 USDC",
        "Amount due",
        "USDC on Polygon (chain 137)",
        "TEST MODE",
        "Page 1 of 1",
        "Thank you for choosing us.",
        "1 rue de la Paix, Paris",
        hosted,
    ] {
        assert!(text.contains(needle), "the PDF text lacks {needle:?}:\n{text}");
    }
    for rtl in ["שלום", "مرحبا"] {
        let reversed: String = rtl.chars().rev().collect();
        assert!(text.contains(rtl) || text.contains(&reversed), "right-to-left text is lost: {rtl}\n{text}");
    }
    let out = Command::new("pdftoppm")
        .args(["-png", "-r", "80", "-f", "1", "-l", "1", "-singlefile"])
        .arg(&file)
        .arg(shots().join("invoice-pdf-page1"))
        .output()
        .await
        .expect("pdftoppm (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(shots().join("invoice-pdf-page1.png").exists());
}

#[tokio::test]
async fn drafts_and_foreign_invoices_have_no_pdf() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let draft = app
        .post(
            &m.sk_test,
            "/v1/invoices",
            json!({ "lines": [{ "description": "x", "quantity": "1", "unitAmount": "1" }] }),
        )
        .await
        .ok(201)
        .clone();
    let path = format!("/v1/invoices/{}/pdf", draft["id"].as_str().unwrap());
    app.get(&m.sk_test, &path).await.assert_error(422, "INVOICE_PDF_UNAVAILABLE");
    let other = app.merchant("Other");
    app.get(&other.sk_test, &path).await.assert_error(404, "INVOICE_NOT_FOUND");
    app.get(&m.pk_test, &path).await.assert_error(403, "API_KEY_FORBIDDEN");
    // An amount-only invoice is numbered at creation: it has its document at once, and after
    // its payment.
    let cs = app.post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "5" })).await.ok(201).clone();
    let path = format!("/v1/invoices/{}/pdf", cs["invoiceId"].as_str().unwrap());
    let res = app.http.get(app.url(&path)).bearer_auth(&m.sk_test).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    app.post(
        &m.sk_test,
        &format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap()),
        json!({}),
    )
    .await
    .ok(201);
    let res = app.http.get(app.url(&path)).bearer_auth(&m.sk_test).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
}

/// The text of a PDF, as pdftotext reads it (`bbox`: each word with its box, as HTML).
async fn pdf_text(bytes: &[u8], name: &str, bbox: bool) -> String {
    std::fs::create_dir_all(shots()).unwrap();
    let file = shots().join(format!("{name}.pdf"));
    std::fs::write(&file, bytes).unwrap();
    let mut cmd = Command::new("pdftotext");
    if bbox {
        cmd.arg("-bbox");
    }
    let out = cmd.arg(&file).arg("-").output().await.expect("pdftotext (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

async fn pdf_of(app: &TestApp, key: &str, invoice: &str) -> Vec<u8> {
    let res = app.http.get(app.url(&format!("/v1/invoices/{invoice}/pdf"))).bearer_auth(key).send().await.unwrap();
    assert_eq!(res.status().as_u16(), 200);
    res.bytes().await.unwrap().to_vec()
}

#[tokio::test]
async fn a_paid_invoice_is_a_receipt_and_a_partly_paid_one_shows_its_payments() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let cs = app
        .post(&m.sk_test, "/v1/checkout-sessions", json!({ "amount": "25", "externalReference": "order-9913" }))
        .await
        .ok(201)
        .clone();
    let pay = format!("/v1/test-helpers/checkout-sessions/{}/payments", cs["id"].as_str().unwrap());
    let first = app.post(&m.sk_test, &pay, json!({ "amount": "10" })).await.ok(201).clone();
    let invoice = cs["invoiceId"].as_str().unwrap();
    let partly = pdf_text(&pdf_of(&app, &m.sk_test, invoice).await, "partly-paid", false).await;
    for needle in
        ["INVOICE", "order-9913", "Reference", "Payments", "10.00 USDC", "Amount due", "15.00 USDC", "Pay online"]
    {
        assert!(partly.contains(needle), "the partly paid PDF lacks {needle:?}:\n{partly}");
    }
    assert!(partly.contains(first["transactionId"].as_str().unwrap()), "{partly}");
    assert!(!partly.contains("RECEIPT") && !partly.contains("PAID"), "{partly}");

    let path = format!("/v1/invoices/{invoice}/checkout-sessions");
    let rest = app.post(&m.sk_test, &path, json!({})).await.ok(201).clone();
    let pay_rest =
        format!("/v1/test-helpers/checkout-sessions/{}/payments", rest["checkoutSessionId"].as_str().unwrap());
    let second = app.post(&m.sk_test, &pay_rest, json!({})).await.ok(201).clone();
    let receipt = pdf_text(&pdf_of(&app, &m.sk_test, invoice).await, "receipt", false).await;
    for needle in ["RECEIPT", "PAID", "Paid", "Payments", "Polygon (chain 137)", "Amount due", "0.00 USDC", "Receipt "]
    {
        assert!(receipt.contains(needle), "the receipt lacks {needle:?}:\n{receipt}");
    }
    for tx in [&first, &second] {
        assert!(receipt.contains(tx["transactionId"].as_str().unwrap()), "{receipt}");
    }
    assert!(!receipt.contains("Pay online"), "a receipt asks for nothing: {receipt}");
}

#[tokio::test]
async fn a_long_invoice_repeats_its_header_and_numbers_its_pages() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let lines: Vec<_> = (1..=100)
        .map(|i| json!({ "description": format!("Item number {i}"), "quantity": "1", "unitAmount": "1.5", "sku": format!("SKU-{i:03}") }))
        .collect();
    let inv = app.post(&m.sk_test, "/v1/invoices", json!({ "lines": lines, "issue": true })).await.ok(201).clone();
    let number = inv["invoiceNumber"].as_str().unwrap();
    let text = pdf_text(&pdf_of(&app, &m.sk_test, inv["id"].as_str().unwrap()).await, "long", false).await;
    let pages: Vec<&str> = text.split('\u{c}').filter(|p| !p.trim().is_empty()).collect();
    assert!(pages.len() >= 3, "{} pages", pages.len());
    let n = pages.len();
    for (i, page) in pages.iter().enumerate() {
        for needle in ["TEST MODE", "Description", "Amount", number, &format!("Page {} of {n}", i + 1)] {
            assert!(page.contains(needle), "page {} lacks {needle:?}:\n{page}", i + 1);
        }
    }
    assert!(text.contains("SKU SKU-042"), "SKUs print");
    let last = pages[n - 1];
    assert!(
        last.contains("Total") && last.contains("Item number 100"),
        "the last page is not a QR code alone:\n{last}"
    );
}

/// The words pdftotext -bbox reports on the line holding `marker`: (xMin, xMax, text).
fn words_on_line(bbox: &str, marker: &str) -> Vec<(f32, f32, String)> {
    let words: Vec<(f32, f32, i64, String)> = bbox
        .lines()
        .filter(|l| l.trim_start().starts_with("<word"))
        .map(|l| {
            let attr = |name: &str| -> &str {
                let at = l.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
                l[at..].split('"').next().unwrap()
            };
            let whole = |v: &str| -> i64 { v.split('.').next().unwrap().parse().unwrap() };
            let text = l.split('>').nth(1).unwrap().split('<').next().unwrap().to_owned();
            (attr("xMin").parse().unwrap(), attr("xMax").parse().unwrap(), whole(attr("yMin")), text)
        })
        .collect();
    let y = words.iter().find(|w| w.3.contains(marker)).unwrap_or_else(|| panic!("no {marker}:\n{bbox}")).2;
    words.into_iter().filter(|w| (w.2 - y).abs() <= 1).map(|w| (w.0, w.1, w.3)).collect()
}

#[tokio::test]
async fn large_figures_never_overlap_and_get_thousands_separators() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Shop");
    let body = json!({ "lines": [{ "description": "Bulk order of widgets", "quantity": "123456.123456", "unitAmount": "987654.123456" }], "issue": true });
    let inv = app.post(&m.sk_test, "/v1/invoices", body).await.ok(201).clone();
    let bytes = pdf_of(&app, &m.sk_test, inv["id"].as_str().unwrap()).await;
    let text = pdf_text(&bytes, "large", false).await;
    for needle in ["123,456.123456", "987,654.123456", "121,931,949,397.211401"] {
        assert!(text.contains(needle), "the PDF lacks {needle:?}:\n{text}");
    }
    let mut row = words_on_line(&pdf_text(&bytes, "large-bbox", true).await, "123,456.123456");
    row.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert!(row.len() >= 4, "{row:?}");
    for pair in row.windows(2) {
        assert!(pair[0].1 <= pair[1].0, "{:?} overlaps {:?}", pair[0], pair[1]);
    }
}

/// The images of a PDF as `pdfimages -list` reads them: (width, height) in pixels.
async fn pdf_images(bytes: &[u8], name: &str) -> Vec<(u32, u32)> {
    std::fs::create_dir_all(shots()).unwrap();
    let file = shots().join(format!("{name}.pdf"));
    std::fs::write(&file, bytes).unwrap();
    let out = Command::new("pdfimages").arg("-list").arg(&file).output().await.expect("pdfimages (poppler-utils)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .skip(2)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(2) == Some(&"image")).then(|| (f[3].parse().unwrap(), f[4].parse().unwrap()))
        })
        .collect()
}

/// The merchant's logo is drawn at the top of its PDFs (the API's and the customer's
/// download), above the merchant's name and clear of it; a logo that does not decode is left
/// out and the document is drawn all the same.
#[tokio::test]
async fn the_logo_heads_the_pdf_and_one_that_does_not_decode_is_left_out() {
    let app = TestApp::spawn().await;
    let m = app.merchant("Logo Shop");
    let png = crate::support::png_image(240, 80);
    app.set_logo(&m.id, &png);
    let body = json!({ "lines": [{ "description": "Beans", "quantity": "1", "unitAmount": "9" }], "issue": true });
    let inv = app.post(&m.sk_test, "/v1/invoices", body.clone()).await.ok(201).clone();
    let id = inv["id"].as_str().unwrap();
    let pdf = pdf_of(&app, &m.sk_test, id).await;
    assert_eq!(pdf_images(&pdf, "logo").await, vec![(240, 80)]);
    // Drawn 132 x 44 pt from 46 pt down: the name's box starts below it.
    let bbox = pdf_text(&pdf, "logo", true).await;
    let name = bbox.lines().find(|l| l.contains(">Logo<")).unwrap_or_else(|| panic!("{bbox}"));
    let y_min: f32 = name.split("yMin=\"").nth(1).unwrap().split('"').next().unwrap().parse().unwrap();
    assert!(y_min > 90.0, "the merchant's name overlaps the logo: {name}");
    let token = inv["hostedInvoiceUrl"].as_str().unwrap().rsplit('/').next().unwrap();
    let public = app.http.get(app.url(&format!("/v1/public/invoices/{token}/pdf"))).send().await.unwrap();
    assert_eq!(public.status().as_u16(), 200);
    assert_eq!(pdf_images(&public.bytes().await.unwrap(), "logo-public").await, vec![(240, 80)]);

    // A PNG whose image data is damaged passes the upload check but does not decode.
    let mut damaged = png.clone();
    let at = damaged.windows(4).position(|w| w == b"IDAT").unwrap() + 4;
    for b in &mut damaged[at..at + 12] {
        *b = 0xff;
    }
    app.set_logo(&m.id, &damaged);
    let pdf = pdf_of(&app, &m.sk_test, id).await;
    assert_eq!(pdf_images(&pdf, "logo-damaged").await, vec![]);
    assert!(pdf_text(&pdf, "logo-damaged", false).await.contains("Logo Shop"));
}
