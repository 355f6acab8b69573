//! An invoice as a document a customer receives (the PDF), and the port that renders it.

use crate::invoice::model::Invoice;

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
