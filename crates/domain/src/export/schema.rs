//! The published export schemas: each one's columns, in order, and how a record becomes a row.
//! A schema never changes once published; a change of columns is a new schema version
//! (`invoices.v2`) beside the old one. `docs/exports.md` describes every column.

use crate::chain::model::UnattributedTransfer;
use crate::export::csv::Cell;
use crate::export::model::ExportSpec;
use crate::invoice::model::{Invoice, RefundReference};
use crate::invoice::payment::Payment;
use crate::merchant::model::Token;
use crate::payment_link::model::{AmountRule, PaymentLink};
use crate::reconciliation::run::RunItem;
use crate::webhook::model::WebhookDelivery;

/// One record of an export, as its store reads it (a record may give several rows: an
/// invoice one per line in `invoice_lines.*`, one per refund in `refund_references.*`).
#[derive(Clone, Debug)]
pub enum ExportRecord {
    /// An invoice (`invoices.*`, `invoice_lines.*`, `refund_references.*`).
    Invoice(Box<Invoice>),
    /// A payment record with its invoice's token (`payments.*`).
    Payment(Box<Payment>, Token),
    /// A payment link (`payment_links.*`).
    PaymentLink(Box<PaymentLink>),
    /// A webhook delivery (`webhook_deliveries.*`).
    Delivery(Box<WebhookDelivery>),
    /// An unattributed transfer (`unattributed_transfers.*`).
    Unattributed(Box<UnattributedTransfer>),
    /// An item of a reconciliation run (`reconciliation.*`).
    RunItem(Box<RunItem>),
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

/// The columns of `invoice_lines.v1`.
pub const INVOICE_LINES_V1: &[&str] = &[
    "invoice_id",
    "invoice_number",
    "line_number",
    "line_id",
    "sku",
    "description",
    "quantity",
    "unit_amount",
    "amount",
    "currency_code",
    "collection_state",
    "invoice_created_at",
];

/// The columns of `refund_references.v1`.
pub const REFUND_REFERENCES_V1: &[&str] = &[
    "id",
    "invoice_id",
    "invoice_number",
    "payment_id",
    "amount",
    "currency_code",
    "reason",
    "external_transaction_hash",
    "chain_id",
    "token_contract",
    "created_at",
];

/// The columns of `payment_links.v1`.
pub const PAYMENT_LINKS_V1: &[&str] = &[
    "id",
    "title",
    "lifecycle",
    "amount_type",
    "amount",
    "minimum_amount",
    "maximum_amount",
    "currency_code",
    "usage_type",
    "active_at",
    "expires_at",
    "collect_email",
    "collect_name",
    "collect_reference",
    "reference_prefix",
    "version",
    "created_at",
    "updated_at",
    "metadata",
];

/// The columns of `webhook_deliveries.v1`.
pub const WEBHOOK_DELIVERIES_V1: &[&str] = &[
    "id",
    "endpoint_id",
    "event_id",
    "event_type",
    "status",
    "attempt_count",
    "next_attempt_at",
    "test",
    "replay_of",
    "created_at",
    "delivered_at",
];

/// The columns of `unattributed_transfers.v1`.
pub const UNATTRIBUTED_TRANSFERS_V1: &[&str] = &[
    "id",
    "currency_code",
    "amount",
    "reason",
    "chain_id",
    "token_contract",
    "from_address",
    "to_address",
    "transaction_id",
    "log_index",
    "block_number",
    "block_time",
    "detected_at",
];

/// The columns of `reconciliation.v1`.
pub const RECONCILIATION_V1: &[&str] = &[
    "line",
    "outcome",
    "currency_code",
    "transaction_id",
    "log_index",
    "block_number",
    "block_time",
    "from_address",
    "to_address",
    "amount_onchain",
    "amount_credited",
    "payment_id",
    "invoice_id",
    "unattributed_transfer_id",
    "detail",
];

/// The columns of `schema`, or `None` for a schema that does not exist.
pub fn columns(schema: &str) -> Option<&'static [&'static str]> {
    match schema {
        "invoices.v1" => Some(INVOICES_V1),
        "invoice_lines.v1" => Some(INVOICE_LINES_V1),
        "payments.v1" => Some(PAYMENTS_V1),
        "refund_references.v1" => Some(REFUND_REFERENCES_V1),
        "payment_links.v1" => Some(PAYMENT_LINKS_V1),
        "webhook_deliveries.v1" => Some(WEBHOOK_DELIVERIES_V1),
        "unattributed_transfers.v1" => Some(UNATTRIBUTED_TRANSFERS_V1),
        "reconciliation.v1" => Some(RECONCILIATION_V1),
        _ => None,
    }
}

/// The rows of `record` in `spec`'s schema (each its cells in the schema's column order; an
/// invoice gives one per line, or one per refund recorded in the range); `None` when the record
/// is not of the schema's type.
pub fn rows(spec: &ExportSpec, record: &ExportRecord) -> Option<Vec<Vec<Cell>>> {
    match (spec.schema.as_str(), record) {
        ("invoices.v1", ExportRecord::Invoice(invoice)) => Some(vec![invoice_v1(invoice)]),
        ("invoice_lines.v1", ExportRecord::Invoice(invoice)) => Some(invoice_lines_v1(invoice)),
        ("refund_references.v1", ExportRecord::Invoice(invoice)) => Some(
            invoice
                .refunds
                .iter()
                .filter(|r| r.created_at >= spec.from && r.created_at < spec.to)
                .map(|r| refund_v1(invoice, r))
                .collect(),
        ),
        ("payments.v1", ExportRecord::Payment(payment, token)) => Some(vec![payment_v1(payment, *token)]),
        ("unattributed_transfers.v1", ExportRecord::Unattributed(u)) => Some(vec![unattributed_v1(u)]),
        ("payment_links.v1", ExportRecord::PaymentLink(l)) => Some(vec![link_v1(l)]),
        ("webhook_deliveries.v1", ExportRecord::Delivery(d)) => Some(vec![delivery_v1(d)]),
        ("reconciliation.v1", ExportRecord::RunItem(item)) => Some(vec![reconciliation_v1(item)]),
        _ => None,
    }
}

fn invoice_lines_v1(inv: &Invoice) -> Vec<Vec<Cell>> {
    (1u32..)
        .zip(&inv.fields.content.lines)
        .map(|(n, line)| {
            vec![
                Cell::Plain(inv.id.to_string()),
                Cell::plain(inv.number.as_deref()),
                Cell::Plain(n.to_string()),
                Cell::text(line.id.as_deref()),
                Cell::text(line.sku.as_deref()),
                Cell::Text(line.description.clone()),
                Cell::Plain(line.quantity.to_string()),
                Cell::Plain(line.unit_amount.to_string()),
                Cell::Plain(line.amount().to_string()),
                Cell::Plain(inv.fields.currency.symbol().to_owned()),
                Cell::Plain(inv.collection_state.as_str().to_owned()),
                Cell::time(Some(inv.created_at)),
            ]
        })
        .collect()
}

fn refund_v1(inv: &Invoice, recorded: &RefundReference) -> Vec<Cell> {
    let r = &recorded.refund;
    vec![
        Cell::Plain(recorded.id.to_string()),
        Cell::Plain(inv.id.to_string()),
        Cell::plain(inv.number.as_deref()),
        Cell::Plain(r.payment_id.to_string()),
        Cell::Plain(r.amount.to_string()),
        Cell::Plain(inv.fields.currency.symbol().to_owned()),
        Cell::Text(r.reason.clone()),
        Cell::Plain(r.external_transaction_hash.as_str().to_owned()),
        Cell::Plain(r.chain_id.to_string()),
        Cell::Plain(r.token_contract.to_string()),
        Cell::time(Some(recorded.created_at)),
    ]
}

fn link_v1(l: &PaymentLink) -> Vec<Cell> {
    let c = &l.config;
    let (amount, minimum, maximum) = match &c.amount {
        AmountRule::Fixed(a) => (Some(a), None, None),
        AmountRule::CustomerEntered { minimum, maximum } => (None, Some(minimum), maximum.as_ref()),
    };
    let flag = |on: bool| Cell::Plain(on.to_string());
    vec![
        Cell::Plain(l.id.to_string()),
        Cell::Text(c.title.clone()),
        Cell::Plain(l.lifecycle.as_str().to_owned()),
        Cell::Plain(c.amount.type_str().to_owned()),
        Cell::plain(amount),
        Cell::plain(minimum),
        Cell::plain(maximum),
        Cell::Plain(c.currency.symbol().to_owned()),
        Cell::Plain(c.usage.as_str().to_owned()),
        Cell::time(c.active_at),
        Cell::time(c.expires_at),
        flag(c.collect.email),
        flag(c.collect.name),
        flag(c.collect.reference),
        Cell::text(c.reference_prefix.as_deref()),
        Cell::Plain(l.version.to_string()),
        Cell::time(Some(l.created_at)),
        Cell::time(Some(l.updated_at)),
        Cell::text(c.metadata.as_ref().map(|m| m.as_str())),
    ]
}

fn delivery_v1(d: &WebhookDelivery) -> Vec<Cell> {
    vec![
        Cell::Plain(d.id.to_string()),
        Cell::Plain(d.endpoint_id.to_string()),
        Cell::Plain(d.event_id.to_string()),
        Cell::Plain(d.event_type.as_str().to_owned()),
        Cell::Plain(d.status.as_str().to_owned()),
        Cell::Plain(d.attempt_count.to_string()),
        Cell::time(d.next_attempt_at),
        Cell::Plain(d.test.to_string()),
        Cell::plain(d.replay_of.as_ref()),
        Cell::time(Some(d.created_at)),
        Cell::time(d.delivered_at),
    ]
}

fn unattributed_v1(u: &UnattributedTransfer) -> Vec<Cell> {
    let t = &u.logged.transfer;
    vec![
        Cell::Plain(u.id.to_string()),
        Cell::Plain(u.token.symbol().to_owned()),
        Cell::Plain(t.amount.to_string()),
        Cell::Plain(u.reason.as_str().to_owned()),
        Cell::Plain(u.chain_id.to_string()),
        Cell::Plain(t.token_contract.to_string()),
        Cell::Plain(t.from.to_string()),
        Cell::Plain(t.to.to_string()),
        Cell::Plain(u.logged.tx_hash.as_str().to_owned()),
        Cell::Plain(t.log_index.to_string()),
        Cell::Plain(u.logged.block.number.to_string()),
        Cell::time(Some(u.logged.block_time)),
        Cell::time(Some(u.detected_at)),
    ]
}

fn reconciliation_v1(i: &RunItem) -> Vec<Cell> {
    vec![
        Cell::Plain(i.line.to_string()),
        Cell::Plain(i.outcome.as_str().to_owned()),
        Cell::Plain(i.token.symbol().to_owned()),
        Cell::Plain(i.transaction_hash.as_str().to_owned()),
        Cell::plain(i.log_index),
        Cell::plain(i.block_number),
        Cell::time(i.block_time),
        Cell::plain(i.from_address.as_ref()),
        Cell::Plain(i.to_address.to_string()),
        Cell::plain(i.amount_onchain.as_ref()),
        Cell::plain(i.amount_credited.as_ref()),
        Cell::plain(i.payment_id.as_ref()),
        Cell::plain(i.invoice_id.as_ref()),
        Cell::plain(i.unattributed_transfer_id.as_ref()),
        Cell::Text(i.detail.clone()),
    ]
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
