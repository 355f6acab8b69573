//! An invoice as a document a customer receives (the PDF), and the port that renders it.

use crate::invoice::model::Invoice;
use crate::merchant::model::Merchant;
use crate::url::PublicPages;

/// What an invoice document shows: the invoice, who sends it, and where it can be paid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvoiceDocument {
    /// The invoice, as stored (issued: it has a number).
    pub invoice: Invoice,
    /// The merchant's name, shown as the sender.
    pub merchant_name: String,
    /// The merchant's reviewed website, if any.
    pub merchant_website: Option<String>,
    /// The hosted invoice page (also drawn as a QR code).
    pub hosted_url: Option<String>,
}

impl InvoiceDocument {
    /// The document of `invoice` from `merchant`, its hosted page (when issued) at `pages`.
    pub fn new(invoice: Invoice, merchant: &Merchant, pages: &PublicPages) -> Self {
        let hosted_url = invoice.public_token.as_ref().map(|t| pages.invoice(t));
        Self {
            invoice,
            merchant_name: merchant.name.clone(),
            merchant_website: merchant.website_origin.clone(),
            hosted_url,
        }
    }
}
