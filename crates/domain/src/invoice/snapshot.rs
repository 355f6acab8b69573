//! Event data: snapshots of an invoice or a payment at emission time.

use crate::event::EventData;
use crate::invoice::model::Invoice;
use crate::payment::Payment;

fn s(v: impl ToString) -> EventData {
    EventData::string(v)
}

/// The payment facts carried in events.
pub fn payment_data(p: &Payment) -> EventData {
    EventData::map([
        ("object", s("payment")),
        ("id", s(&p.id)),
        ("invoiceId", s(&p.invoice_id)),
        ("checkoutSessionId", s(&p.checkout_session_id)),
        ("status", s(p.status.as_str())),
        ("amountExpected", s(&p.amount_expected)),
        ("amountReceived", s(&p.amount_received)),
        ("customerAmountCredited", s(&p.customer_amount_credited)),
        ("merchantAmountSettled", s(&p.merchant_amount_settled)),
        ("transactionHash", s(p.transaction_hash.as_str())),
        ("chainId", EventData::Int(i64::try_from(p.chain_id).unwrap_or(i64::MAX))),
        ("tokenContract", s(&p.token_contract)),
        ("settlementWalletAddress", s(&p.settlement_wallet)),
        ("payerAddress", EventData::opt_string(p.payer_address.as_ref())),
        ("failureReason", EventData::opt_string(p.failure_reason.map(|r| r.as_str()))),
        (
            "confirmedAt",
            EventData::opt_string(p.confirmed_at.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))),
        ),
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
