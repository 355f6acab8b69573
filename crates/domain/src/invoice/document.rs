//! An invoice as a document a customer receives (the PDF), and the port that renders it.

use crate::invoice::model::Invoice;
use crate::invoice::payment::Payment;
use crate::merchant::logo::LogoImage;
use crate::merchant::model::{Merchant, MerchantProfile};
use crate::url::PublicPages;

/// What an invoice document shows: the invoice, who sends it, what was paid and where it can
/// be paid. A paid invoice's document is its receipt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceDocument {
    /// The invoice, as stored (issued: it has a number).
    pub invoice: Invoice,
    /// The merchant's name, shown as the sender.
    pub merchant_name: String,
    /// The merchant's reviewed website, if any.
    pub merchant_website: Option<String>,
    /// The seller block (legal name, address, tax id, support email), as set.
    pub seller: MerchantProfile,
    /// The credited payments, oldest first (with their transaction hashes).
    pub payments: Vec<Payment>,
    /// The hosted invoice page (also drawn as a QR code).
    pub hosted_url: Option<String>,
    /// The merchant's logo with its image, drawn in the header (see [`InvoiceDocument::with_logo`]).
    pub logo: Option<LogoImage>,
}

impl InvoiceDocument {
    /// The document of `invoice` from `merchant` with its `payments` (the credited ones are
    /// kept), its hosted page (when issued) at `pages`.
    pub fn new(invoice: Invoice, payments: &[Payment], merchant: &Merchant, pages: &PublicPages) -> Self {
        let hosted_url = invoice.public_token.as_ref().map(|t| pages.invoice(t));
        Self {
            invoice,
            merchant_name: merchant.name.clone(),
            merchant_website: merchant.website_origin.clone(),
            seller: merchant.profile.clone(),
            payments: payments.iter().filter(|p| p.status.is_credited()).cloned().collect(),
            hosted_url,
            logo: None,
        }
    }

    /// The document with the merchant's logo (as [`crate::ports::MerchantStore::logo_image`]
    /// answers it); [`InvoiceDocument::new`] leaves it out, as it reads no store.
    pub fn with_logo(self, logo: Option<LogoImage>) -> Self {
        Self { logo, ..self }
    }

    /// Paid in full: the document is a receipt.
    pub fn is_receipt(&self) -> bool {
        self.invoice.remaining().is_zero() && !self.invoice.customer_amount_paid.is_zero()
    }
}
