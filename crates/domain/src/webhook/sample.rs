//! The data of synthetic test events (`POST /v1/webhooks/test`): the shape of a real event of
//! the type, with sample values and `test: true`. Receivers must never fulfil on them.

use chrono::{DateTime, Utc};

use crate::event::model::{EventData, EventType};
use crate::mode::Scope;

fn s(v: &str) -> EventData {
    EventData::string(v)
}

fn time(t: DateTime<Utc>) -> EventData {
    s(&t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
}

/// A sample payment snapshot (the fields of the payment resource).
fn payment(scope: &Scope, status: &str, received: &str, credited: &str, now: DateTime<Utc>) -> EventData {
    let tx = format!("0x{}", "0".repeat(64));
    let failed = status == "failed";
    EventData::map([
        ("id", s("pay_test")),
        ("paymentId", s("pay_test")),
        ("object", s("payment")),
        ("mode", s(scope.mode.as_str())),
        ("status", s(status)),
        ("invoiceId", s("inv_test")),
        ("checkoutSessionId", s("cs_test")),
        ("amountExpected", s("10.000000")),
        ("amountReceived", s(received)),
        ("customerAmountCredited", s(credited)),
        ("merchantAmountSettled", s(credited)),
        ("transactionId", s(&tx)),
        ("chainId", EventData::Int(137)),
        ("tokenContract", s("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359")),
        ("settlementWalletAddress", s("0x0000000000000000000000000000000000000000")),
        (
            "payer",
            EventData::map([("address", s("0x0000000000000000000000000000000000000001")), ("transactionHash", s(&tx))]),
        ),
        ("failureReason", if failed { s("transaction_reverted") } else { EventData::Null }),
        ("block", EventData::Null),
        ("diagnostic", EventData::Null),
        ("detectedAt", time(now)),
        ("confirmedAt", if failed { EventData::Null } else { time(now) }),
    ])
}

fn invoice(scope: &Scope, event_type: EventType, now: DateTime<Utc>) -> EventData {
    use EventType as T;
    let (state, status, paid, payment_status, received) = match event_type {
        T::InvoicePaid => ("paid", "paid", "10.000000", "confirmed", "10.000000"),
        T::InvoicePartiallyPaid => ("partially_paid", "underpaid", "4.000000", "underpaid", "4.000000"),
        T::InvoiceOverpaid => ("paid", "overpaid", "12.000000", "overpaid", "12.000000"),
        T::InvoiceVoided => ("void", "cancelled", "0.000000", "", ""),
        T::InvoiceUncollectible => ("uncollectible", "cancelled", "0.000000", "", ""),
        T::InvoicePaymentReceivedAfterVoid => ("void", "cancelled", "10.000000", "confirmed", "10.000000"),
        T::InvoicePaymentReceivedAfterUncollectible => {
            ("uncollectible", "cancelled", "10.000000", "confirmed", "10.000000")
        }
        T::InvoiceExpired => ("expired", "expired", "0.000000", "", ""),
        T::InvoicePastDue => ("past_due", "pending", "0.000000", "", ""),
        _ => ("open", "pending", "0.000000", "", ""),
    };
    let latest = if payment_status.is_empty() {
        EventData::Null
    } else {
        payment(scope, payment_status, received, received, now)
    };
    let remaining = if paid == "0.000000" {
        "10.000000"
    } else if paid == "4.000000" {
        "6.000000"
    } else {
        "0.000000"
    };
    let over = if paid == "12.000000" { "2.000000" } else { "0.000000" };
    let credited = if latest == EventData::Null { vec![] } else { vec![s("pay_test")] };
    EventData::map([
        ("object", s("invoice")),
        ("id", s("inv_test")),
        ("invoiceNumber", s("TEST-0001")),
        ("collectionState", s(state)),
        ("status", s(status)),
        ("currencyCode", s("USDC")),
        ("total", s("10.000000")),
        ("customerAmountPaid", s(paid)),
        ("customerAmountRemaining", s(remaining)),
        ("overpaymentAmount", s(over)),
        ("merchantAmountSettled", s(paid)),
        ("platformFee", s("0.000000")),
        ("netAmount", s("10.000000")),
        ("creditedPaymentIds", EventData::List(credited)),
        ("latestPayment", latest),
        ("externalReference", s("test-order")),
        (
            "reason",
            if matches!(event_type, T::InvoiceVoided | T::InvoiceUncollectible) { s("test") } else { EventData::Null },
        ),
    ])
}

/// The data of a synthetic event of `event_type` in `scope` at `now`, with `test: true`.
pub fn sample_data(scope: &Scope, event_type: EventType, now: DateTime<Utc>) -> EventData {
    use EventType as T;
    let data = match event_type {
        T::PaymentFailed => payment(scope, "failed", "0.000000", "0.000000", now),
        T::PaymentUnderpaid => payment(scope, "underpaid", "4.000000", "4.000000", now),
        T::PaymentOverpaid => payment(scope, "overpaid", "12.000000", "12.000000", now),
        T::PaymentUnattributed => EventData::map([
            ("object", s("unattributed_transfer")),
            ("id", s("utr_test")),
            ("mode", s(scope.mode.as_str())),
            ("chainId", EventData::Int(137)),
            ("transactionHash", s(&format!("0x{}", "0".repeat(64)))),
            ("logIndex", EventData::Int(0)),
            ("block", EventData::map([("number", EventData::Int(1)), ("hash", s(&format!("0x{}", "0".repeat(64))))])),
            ("currencyCode", s("USDC")),
            ("tokenContract", s("0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359")),
            ("from", s("0x0000000000000000000000000000000000000001")),
            ("to", s("0x0000000000000000000000000000000000000000")),
            ("amount", s("10.000000")),
            ("reason", s("no_matching_amount")),
            ("detectedAt", time(now)),
        ]),
        T::PaymentLinkCompleted => EventData::map([
            ("object", s("payment_link")),
            ("id", s("plink_test")),
            ("mode", s(scope.mode.as_str())),
            ("status", s("completed")),
            ("invoiceId", s("inv_test")),
        ]),
        T::PaymentLinkExpired => EventData::map([
            ("object", s("payment_link")),
            ("id", s("plink_test")),
            ("mode", s(scope.mode.as_str())),
            ("status", s("expired")),
        ]),
        _ => invoice(scope, event_type, now),
    };
    with_test_flag(data)
}

fn with_test_flag(data: EventData) -> EventData {
    match data {
        EventData::Map(mut pairs) => {
            pairs.push(("test".to_owned(), EventData::Bool(true)));
            EventData::Map(pairs)
        }
        other => EventData::map([("test", EventData::Bool(true)), ("value", other)]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::MerchantId;
    use crate::mode::Mode;

    #[test]
    fn every_type_has_sample_data_flagged_as_a_test() {
        let scope = Scope::new(MerchantId::from_trusted("mer_x".into()), Mode::Test);
        for t in EventType::ALL {
            let EventData::Map(pairs) = sample_data(&scope, t, DateTime::<Utc>::UNIX_EPOCH) else { panic!("{t:?}") };
            assert!(pairs.contains(&("test".to_owned(), EventData::Bool(true))), "{t:?}");
        }
    }
}
