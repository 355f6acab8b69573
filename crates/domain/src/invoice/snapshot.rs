//! Event data: snapshots of an invoice or a payment at emission time.

use crate::event::model::EventData;
use crate::invoice::model::Invoice;
use crate::invoice::payment::Payment;

fn s(v: impl ToString) -> EventData {
    EventData::string(v)
}

fn time(t: chrono::DateTime<chrono::Utc>) -> EventData {
    s(t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// The payment facts carried in events: exactly the fields and names of the payment resource
/// (`GET /v1/payments/{id}`).
pub fn payment_data(p: &Payment) -> EventData {
    let block = p.block.as_ref().map_or(EventData::Null, |b| {
        EventData::map([("number", EventData::Int(i64::try_from(b.number).unwrap_or(i64::MAX))), ("hash", s(&b.hash))])
    });
    EventData::map([
        ("id", s(&p.id)),
        ("paymentId", s(&p.id)),
        ("object", s("payment")),
        ("mode", s(p.scope.mode.as_str())),
        ("status", s(p.status.as_str())),
        ("invoiceId", s(&p.invoice_id)),
        ("checkoutSessionId", s(&p.checkout_session_id)),
        ("amountExpected", s(&p.amount_expected)),
        ("amountReceived", s(&p.amount_received)),
        ("customerAmountCredited", s(&p.customer_amount_credited)),
        ("merchantAmountSettled", s(&p.merchant_amount_settled)),
        ("transactionId", s(p.transaction_hash.as_str())),
        ("chainId", EventData::Int(i64::try_from(p.chain_id).unwrap_or(i64::MAX))),
        ("tokenContract", s(&p.token_contract)),
        ("settlementWalletAddress", s(&p.settlement_wallet)),
        (
            "payer",
            EventData::map([
                ("address", EventData::opt_string(p.payer_address.as_ref())),
                ("transactionHash", s(p.transaction_hash.as_str())),
            ]),
        ),
        ("failureReason", EventData::opt_string(p.failure_reason.map(|r| r.as_str()))),
        ("block", block),
        ("blockTime", p.block_time.map_or(EventData::Null, time)),
        ("evidence", EventData::opt_string(p.evidence.map(|e| e.as_str()))),
        ("diagnostic", EventData::opt_string(p.diagnostic.as_ref())),
        ("detectedAt", time(p.detected_at)),
        ("confirmedAt", p.confirmed_at.map_or(EventData::Null, time)),
    ])
}

/// The invoice facts carried in every invoice.* event: totals, cumulative credited amounts,
/// settlement, platform fee, every credited payment id and the latest payment.
pub fn invoice_data(invoice: &Invoice, payments: &[Payment]) -> EventData {
    let credited: Vec<EventData> = payments.iter().filter(|p| p.status.is_credited()).map(|p| s(&p.id)).collect();
    let latest = payments.iter().max_by_key(|p| (p.detected_at, p.id.clone())).map_or(EventData::Null, payment_data);
    EventData::map([
        ("object", s("invoice")),
        ("id", s(&invoice.id)),
        ("invoiceNumber", EventData::opt_string(invoice.number.as_ref())),
        ("collectionState", s(invoice.collection_state.as_str())),
        ("status", s(invoice.status.as_str())),
        ("currencyCode", s(invoice.fields.currency.symbol())),
        ("total", s(&invoice.totals.total)),
        ("customerAmountPaid", s(&invoice.customer_amount_paid)),
        ("customerAmountRemaining", s(invoice.remaining())),
        ("overpaymentAmount", s(invoice.overpayment())),
        ("merchantAmountSettled", s(&invoice.merchant_amount_settled)),
        ("platformFee", s(invoice.platform_fee())),
        ("netAmount", s(invoice.net_amount())),
        ("creditedPaymentIds", EventData::List(credited)),
        ("latestPayment", latest),
        ("externalReference", EventData::opt_string(invoice.fields.content.external_reference.as_ref())),
        ("reason", EventData::opt_string(invoice.close_reason.as_ref())),
    ])
}

/// The data of `payment_link.completed`: the link, used by `invoice`.
pub fn link_completed_data(link: &crate::invoice::model::LinkRef, invoice: &Invoice) -> EventData {
    EventData::map([
        ("object", s("payment_link")),
        ("id", s(&link.id)),
        ("mode", s(invoice.scope.mode.as_str())),
        ("status", s("completed")),
        ("invoiceId", s(&invoice.id)),
    ])
}
