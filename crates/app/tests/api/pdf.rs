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
        "Remaining",
        "USDC on Polygon (chain 137)",
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
