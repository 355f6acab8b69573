//! The published export schemas: each one's columns, in order, and how a record becomes a row.
//! A schema never changes once published; a change of columns is a new schema version
//! (`invoices.v2`) beside the old one. `docs/exports.md` describes every column.

use crate::export::csv::Cell;
use crate::invoice::model::Invoice;
use crate::invoice::payment::Payment;
use crate::merchant::model::Token;

/// One record of an export, as its store reads it.
#[derive(Clone, Debug)]
pub enum ExportRecord {
    /// An invoice (`invoices.*`).
    Invoice(Box<Invoice>),
    /// A payment record with its invoice's token (`payments.*`).
    Payment(Box<Payment>, Token),
}

/// The columns of `invoices.v1`.
pub const INVOICES_V1: &[&str] = &[
    "id",
    "invoice_number",
    "kind",
    "collection_state",
    "status",
    "currency_code",
    "subtotal",
    "discount_amount",
    "tax_amount",
    "total",
    "customer_amount_paid",
    "customer_amount_remaining",
    "overpayment_amount",
    "merchant_amount_settled",
    "platform_fee",
    "net_amount",
    "due_at",
    "issued_at",
    "paid_at",
    "closed_at",
    "created_at",
    "customer_name",
    "customer_company",
    "customer_email",
    "external_reference",
    "purchase_order_number",
    "payment_link_id",
    "metadata",
];

/// The columns of `payments.v1`.
pub const PAYMENTS_V1: &[&str] = &[
    "id",
    "invoice_id",
    "checkout_session_id",
    "status",
    "currency_code",
    "amount_expected",
    "amount_received",
    "customer_amount_credited",
    "merchant_amount_settled",
    "chain_id",
    "token_contract",
    "settlement_wallet_address",
    "transaction_id",
    "payer_address",
    "failure_reason",
    "block_number",
    "detected_at",
    "confirmed_at",
];

/// The columns of `schema`, or `None` for a schema that does not exist.
pub fn columns(schema: &str) -> Option<&'static [&'static str]> {
    match schema {
        "invoices.v1" => Some(INVOICES_V1),
        "payments.v1" => Some(PAYMENTS_V1),
        _ => None,
    }
}

/// The row of `record` in `schema` (its cells in the schema's column order); `None` when the
/// record is not of the schema's type.
pub fn row(schema: &str, record: &ExportRecord) -> Option<Vec<Cell>> {
    match (schema, record) {
        ("invoices.v1", ExportRecord::Invoice(invoice)) => Some(invoice_v1(invoice)),
        ("payments.v1", ExportRecord::Payment(payment, token)) => Some(payment_v1(payment, *token)),
        _ => None,
    }
}

fn invoice_v1(inv: &Invoice) -> Vec<Cell> {
    let c = &inv.fields.content;
    let customer = c.customer.as_ref();
    let amount = |a: &crate::money::Amount| Cell::Plain(a.to_string());
    vec![
        Cell::Plain(inv.id.to_string()),
        Cell::plain(inv.number.as_deref()),
        Cell::Plain(inv.kind.as_str().to_owned()),
        Cell::Plain(inv.collection_state.as_str().to_owned()),
        Cell::Plain(inv.status.as_str().to_owned()),
        Cell::Plain(inv.fields.currency.symbol().to_owned()),
        amount(&inv.totals.subtotal),
        amount(&inv.totals.discount),
        amount(&inv.totals.tax),
        amount(&inv.totals.total),
        amount(&inv.customer_amount_paid),
        amount(&inv.remaining()),
        amount(&inv.overpayment()),
        amount(&inv.merchant_amount_settled),
        amount(&inv.platform_fee()),
        amount(&inv.net_amount()),
        Cell::time(c.due_at),
        Cell::time(inv.issued_at),
        Cell::time(inv.paid_at),
        Cell::time(inv.closed_at),
        Cell::time(Some(inv.created_at)),
        Cell::text(customer.and_then(|c| c.name.as_deref())),
        Cell::text(customer.and_then(|c| c.company.as_deref())),
        Cell::text(customer.and_then(|c| c.email.as_deref())),
        Cell::text(c.external_reference.as_deref()),
        Cell::text(c.purchase_order_number.as_deref()),
        Cell::plain(inv.fields.payment_link.as_ref().map(|l| l.id.as_str())),
        Cell::text(c.metadata.as_ref().map(|m| m.as_str())),
    ]
}

fn payment_v1(p: &Payment, token: Token) -> Vec<Cell> {
    let amount = |a: &crate::money::Amount| Cell::Plain(a.to_string());
    vec![
        Cell::Plain(p.id.to_string()),
        Cell::Plain(p.invoice_id.to_string()),
        Cell::Plain(p.checkout_session_id.to_string()),
        Cell::Plain(p.status.as_str().to_owned()),
        Cell::Plain(token.symbol().to_owned()),
        amount(&p.amount_expected),
        amount(&p.amount_received),
        amount(&p.customer_amount_credited),
        amount(&p.merchant_amount_settled),
        Cell::Plain(p.chain_id.to_string()),
        Cell::Plain(p.token_contract.to_string()),
        Cell::Plain(p.settlement_wallet.to_string()),
        Cell::Plain(p.transaction_hash.as_str().to_owned()),
        Cell::text(p.payer_address.as_deref()),
        Cell::plain(p.failure_reason.map(|r| r.as_str())),
        Cell::plain(p.block.as_ref().map(|b| b.number)),
        Cell::time(Some(p.detected_at)),
        Cell::time(p.confirmed_at),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::model::ExportType;

    #[test]
    fn every_schema_of_every_type_has_columns() {
        for t in ExportType::ALL {
            for s in t.schemas() {
                assert!(columns(s).is_some_and(|c| !c.is_empty()), "{s}");
                assert!(s.starts_with(t.as_str()), "{s}");
            }
        }
        assert_eq!(columns("invoices.v9"), None);
    }
}
