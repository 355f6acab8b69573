//! The data of synthetic test events (`POST /v1/webhooks/test`): sample records of the type's
//! resource (an invoice of 10.00 USDC and its payment, a payment, an unattributed transfer, a
//! payment link), rendered by the same snapshot code as real events, with `test: true`.
//! Receivers must never fulfil on them.

use chrono::{DateTime, Utc};

use crate::chain::model::{
    LoggedTransfer, TokenTransfer, UnattributedReason, UnattributedStatus, UnattributedTransfer,
};
use crate::event::model::{EventData, EventType};
use crate::ids::{CheckoutSessionId, InvoiceId, PaymentId, PaymentLinkId, UnattributedTransferId};
use crate::invoice::collection::CollectionState;
use crate::invoice::lifecycle::LifecycleStatus;
use crate::invoice::model::{Invoice, InvoiceContent, InvoiceFields, InvoiceKind, LinkRef};
use crate::invoice::payment::{BlockRef, FailureReason, Payment, PaymentStatus, TxHash};
use crate::invoice::snapshot::{invoice_data, link_completed_data, payment_data};
use crate::invoice::totals::Totals;
use crate::merchant::model::{Token, WalletAddress};
use crate::mode::Scope;
use crate::money::{Amount, Decimal6};
use crate::payment_link::machine::LinkState;
use crate::payment_link::model::link_data;

/// USDC on Polygon, the samples' token.
const SAMPLE_TOKEN: &str = "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359";

fn zeros(hex_digits: usize) -> String {
    format!("0x{}", "0".repeat(hex_digits))
}

fn address(last: char) -> WalletAddress {
    WalletAddress::from_trusted(format!("0x{}{last}", "0".repeat(39)))
}

/// A sample payment of the sample invoice: `received` of its 10.00, in `status`.
fn payment(scope: &Scope, status: PaymentStatus, received: u32, now: DateTime<Utc>) -> Payment {
    let failed = status == PaymentStatus::Failed;
    let received = Decimal6::whole(received);
    Payment {
        id: PaymentId::from_trusted("pay_test".into()),
        scope: scope.clone(),
        invoice_id: InvoiceId::from_trusted("inv_test".into()),
        checkout_session_id: CheckoutSessionId::from_trusted("cs_test".into()),
        status,
        amount_expected: Decimal6::whole(10),
        amount_received: received.clone(),
        customer_amount_credited: received.clone(),
        merchant_amount_settled: received,
        transaction_hash: TxHash::from_trusted(zeros(64)),
        chain_id: crate::merchant::model::POLYGON_CHAIN_ID,
        token_contract: WalletAddress::from_trusted(SAMPLE_TOKEN.into()),
        settlement_wallet: address('0'),
        payer_address: Some(address('1').as_str().to_owned()),
        failure_reason: failed.then_some(FailureReason::TransactionReverted),
        block: None,
        block_time: None,
        diagnostic: None,
        detected_at: now,
        confirmed_at: (!failed).then_some(now),
        claimed_log: None,
        logs: if failed { Vec::new() } else { vec![0] },
        missing_since: None,
        evidence: None,
    }
}

/// What the sample invoice looks like for an `invoice.*` event type: its states and what was
/// paid (with the payment's status when something was).
fn invoice_facts(event_type: EventType) -> (CollectionState, LifecycleStatus, Option<(PaymentStatus, u32)>) {
    use CollectionState as C;
    use EventType as T;
    use LifecycleStatus as L;
    use PaymentStatus as P;
    match event_type {
        T::InvoicePaid => (C::Paid, L::Paid, Some((P::Confirmed, 10))),
        T::InvoicePartiallyPaid => (C::PartiallyPaid, L::Underpaid, Some((P::Underpaid, 4))),
        T::InvoiceOverpaid => (C::Paid, L::Overpaid, Some((P::Overpaid, 12))),
        T::InvoiceVoided => (C::Void, L::Cancelled, None),
        T::InvoiceUncollectible => (C::Uncollectible, L::Cancelled, None),
        T::InvoicePaymentReceivedAfterVoid => (C::Void, L::Cancelled, Some((P::Confirmed, 10))),
        T::InvoicePaymentReceivedAfterUncollectible => (C::Uncollectible, L::Cancelled, Some((P::Confirmed, 10))),
        T::InvoiceExpired => (C::Open, L::Expired, None),
        T::InvoicePastDue => (C::PastDue, L::Pending, None),
        _ => (C::Open, L::Pending, None),
    }
}

/// The sample invoice of 10.00 USDC as an event of `event_type` shows it, with its payments.
fn invoice(scope: &Scope, event_type: EventType, now: DateTime<Utc>) -> (Invoice, Vec<Payment>) {
    let (collection_state, status, paid) = invoice_facts(event_type);
    let payments: Vec<Payment> = paid.map(|(s, amount)| payment(scope, s, amount, now)).into_iter().collect();
    let amount_paid: Amount = payments.iter().fold(Amount::zero(), |sum, p| sum.add(&p.customer_amount_credited));
    let ten = Decimal6::whole(10);
    let closed = matches!(event_type, EventType::InvoiceVoided | EventType::InvoiceUncollectible);
    let content = InvoiceContent { external_reference: Some("test-order".into()), ..InvoiceContent::default() };
    let invoice = Invoice {
        id: InvoiceId::from_trusted("inv_test".into()),
        scope: scope.clone(),
        kind: InvoiceKind::AmountOnly,
        number: Some("TEST-0001".into()),
        number_prefix: "TEST".into(),
        public_token: None,
        fields: InvoiceFields {
            content,
            amount: Some(ten.clone()),
            currency: Token::Usdc,
            checkout_expires_in_minutes: crate::invoice::checkout::DEFAULT_EXPIRY_MINUTES,
            reminder_schedule: None,
            payment_link: None,
        },
        totals: Totals { subtotal: ten.clone(), discount: Amount::zero(), tax: Amount::zero(), total: ten },
        collection_state,
        status,
        version: 1,
        customer_amount_paid: amount_paid.clone(),
        merchant_amount_settled: amount_paid,
        fee_basis_points: 0,
        settlement_wallet: address('0'),
        close_reason: closed.then(|| "test".to_owned()),
        refunds: Vec::new(),
        activity: Vec::new(),
        issued_at: Some(now),
        paid_at: None,
        closed_at: None,
        past_due_at: None,
        created_at: now,
        updated_at: now,
        lock_version: 1,
    };
    (invoice, payments)
}

/// A sample transfer of 10.00 USDC that matched no open checkout.
fn unattributed(scope: &Scope, now: DateTime<Utc>) -> UnattributedTransfer {
    UnattributedTransfer {
        id: UnattributedTransferId::from_trusted("utr_test".into()),
        scope: scope.clone(),
        chain_id: crate::merchant::model::POLYGON_CHAIN_ID,
        logged: LoggedTransfer {
            tx_hash: TxHash::from_trusted(zeros(64)),
            block: BlockRef { number: 1, hash: zeros(64) },
            block_time: now,
            transfer: TokenTransfer {
                log_index: 0,
                token_contract: WalletAddress::from_trusted(SAMPLE_TOKEN.into()),
                from: address('1'),
                to: address('0'),
                amount: Decimal6::whole(10),
                authorization: None,
            },
        },
        token: Token::Usdc,
        reason: UnattributedReason::NoMatchingAmount,
        candidates: Vec::new(),
        detected_at: now,
        status: UnattributedStatus::Open,
        payment_id: None,
        attributed_at: None,
    }
}

/// The data of a synthetic event of `event_type` in `scope` at `now`, with `test: true`.
pub fn sample_data(scope: &Scope, event_type: EventType, now: DateTime<Utc>) -> EventData {
    use EventType as T;
    let link = PaymentLinkId::from_trusted("plink_test".into());
    let data = match event_type {
        T::PaymentFailed => payment_data(&payment(scope, PaymentStatus::Failed, 0, now)),
        T::PaymentUnderpaid => payment_data(&payment(scope, PaymentStatus::Underpaid, 4, now)),
        T::PaymentOverpaid => payment_data(&payment(scope, PaymentStatus::Overpaid, 12, now)),
        T::PaymentUnattributed => unattributed(scope, now).event_data(),
        T::PaymentLinkCompleted => {
            let (invoice, _) = invoice(scope, T::InvoicePaid, now);
            link_completed_data(&LinkRef { id: link, single_use: true }, &invoice)
        }
        T::PaymentLinkExpired => link_data(&link, scope, LinkState::Expired),
        _ => {
            let (invoice, payments) = invoice(scope, event_type, now);
            invoice_data(&invoice, &payments)
        }
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

    #[test]
    fn samples_have_the_fields_of_real_events() {
        let scope = Scope::new(MerchantId::from_trusted("mer_x".into()), Mode::Test);
        let now = DateTime::<Utc>::UNIX_EPOCH;
        let keys = |data: &EventData| match data {
            EventData::Map(pairs) => pairs.iter().map(|(k, _)| k.clone()).filter(|k| k != "test").collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        let (paid, payments) = invoice(&scope, EventType::InvoicePaid, now);
        assert_eq!(keys(&sample_data(&scope, EventType::InvoicePaid, now)), keys(&invoice_data(&paid, &payments)));
        let EventData::Map(pairs) = sample_data(&scope, EventType::InvoicePartiallyPaid, now) else { panic!() };
        let get = |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        assert_eq!(get("customerAmountPaid"), Some(EventData::string("4.000000")));
        assert_eq!(get("customerAmountRemaining"), Some(EventData::string("6.000000")));
        let transfer = unattributed(&scope, now);
        assert_eq!(keys(&sample_data(&scope, EventType::PaymentUnattributed, now)), keys(&transfer.event_data()));
    }
}
