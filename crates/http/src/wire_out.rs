//! Response bodies of checkout sessions, invoices and payments, rendered from domain values.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use stablepay_domain::chain::UnattributedTransfer;
use stablepay_domain::invoice::aggregate::InvoiceAggregate;
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::model::{
    Activity, Customer, Invoice, LineItem, Metadata, RefundReference, ReminderSchedule, TaxLine,
};
use stablepay_domain::invoice::payment::Payment;
use stablepay_domain::invoice::totals::Discount;
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::wire::{Meta, envelope, timestamp};

/// Where customers reach the hosted pages.
pub struct Links<'a> {
    pub base: &'a str,
}

impl Links<'_> {
    pub fn checkout(&self, session: &CheckoutSession) -> String {
        format!("{}/checkout/{}", self.base, session.id)
    }

    pub fn hosted_invoice(&self, invoice: &Invoice) -> Option<String> {
        invoice.public_token.as_ref().map(|t| format!("{}/i/{}", self.base, t.as_str()))
    }
}

/// A checkout session.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutSessionOut {
    pub id: String,
    /// Same value as id.
    pub checkout_id: String,
    /// The literal `checkout_session`.
    pub object: String,
    /// `test` or `live`.
    pub mode: String,
    /// `pending`, `completed`, `expired` or `cancelled`.
    pub status: String,
    /// collectionState of the linked invoice.
    pub collection_state: String,
    pub invoice_id: String,
    pub invoice_number: Option<String>,
    /// What this session collects; for a remainder checkout only the remainder.
    pub amount_due: String,
    /// Commercial invoice total.
    pub total: String,
    pub customer_amount_paid: String,
    pub customer_amount_remaining: String,
    /// USDC or USDT.
    pub currency_code: String,
    /// 137 (Polygon).
    pub chain_id: u64,
    pub token_symbol: String,
    pub token_contract: String,
    pub settlement_wallet_address: String,
    pub external_reference: Option<String>,
    pub checkout_url: String,
    pub expires_at: String,
    pub created_at: String,
    /// Retrieval only, when completed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completed_at: Option<String>,
    /// Retrieval only: the latest payment on this session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub payment_status: Option<String>,
    /// Retrieval only: hashes of the transfers seen for this session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transaction_hashes: Option<Vec<String>>,
    /// Secret-key reads only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform_fee: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net_amount: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected_merchant_settlement: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub merchant_amount_settled: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overpayment_amount: Option<String>,
}

/// What a rendering of a session includes.
#[derive(Clone, Copy)]
pub struct SessionView {
    pub retrieval: bool,
    pub secret: bool,
}

pub fn checkout_session(
    agg: &InvoiceAggregate,
    session: &CheckoutSession,
    view: SessionView,
    links: &Links<'_>,
) -> CheckoutSessionOut {
    let inv = &agg.invoice;
    let payments: Vec<&Payment> = agg.payments.iter().filter(|p| p.checkout_session_id == session.id).collect();
    let latest = payments.last();
    CheckoutSessionOut {
        id: session.id.to_string(),
        checkout_id: session.id.to_string(),
        object: "checkout_session".into(),
        mode: session.scope.mode.as_str().into(),
        status: session.status.as_str().into(),
        collection_state: inv.collection_state.as_str().into(),
        invoice_id: inv.id.to_string(),
        invoice_number: inv.number.clone(),
        amount_due: session.amount_due.to_string(),
        total: inv.totals.total.to_string(),
        customer_amount_paid: inv.customer_amount_paid.to_string(),
        customer_amount_remaining: inv.remaining().to_string(),
        currency_code: session.currency.symbol().into(),
        chain_id: session.chain_id,
        token_symbol: session.currency.symbol().into(),
        token_contract: session.token_contract.to_string(),
        settlement_wallet_address: session.settlement_wallet.to_string(),
        external_reference: session.external_reference.clone(),
        checkout_url: links.checkout(session),
        expires_at: timestamp(session.expires_at),
        created_at: timestamp(session.created_at),
        completed_at: view.retrieval.then(|| session.completed_at.map(timestamp)).flatten(),
        payment_id: view.retrieval.then(|| latest.map(|p| p.id.to_string())).flatten(),
        payment_status: view.retrieval.then(|| latest.map(|p| p.status.as_str().to_owned())).flatten(),
        transaction_hashes: (view.retrieval && !payments.is_empty())
            .then(|| payments.iter().map(|p| p.transaction_hash.as_str().to_owned()).collect()),
        platform_fee: view.secret.then(|| inv.platform_fee().to_string()),
        net_amount: view.secret.then(|| inv.net_amount().to_string()),
        expected_merchant_settlement: view.secret.then(|| inv.net_amount().to_string()),
        merchant_amount_settled: view.secret.then(|| inv.merchant_amount_settled.to_string()),
        overpayment_amount: view.secret.then(|| inv.overpayment().to_string()),
    }
}

/// A payment record.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentOut {
    pub id: String,
    /// Same value as id.
    pub payment_id: String,
    /// The literal `payment`.
    pub object: String,
    pub mode: String,
    /// duplicate, detected, validating, confirmed, failed, underpaid or overpaid.
    pub status: String,
    pub invoice_id: String,
    pub checkout_session_id: String,
    pub amount_expected: String,
    pub amount_received: String,
    pub customer_amount_credited: String,
    pub merchant_amount_settled: String,
    /// The transaction hash.
    pub transaction_id: String,
    pub chain_id: u64,
    pub token_contract: String,
    pub settlement_wallet_address: String,
    /// What the chain showed about the payer.
    pub payer: PayerOut,
    pub failure_reason: Option<String>,
    /// The block the transfer was seen in (while validating, and once credited).
    pub block: Option<BlockOut>,
    /// Why verification is waiting, when it cannot go on now (for example no chain endpoint).
    pub diagnostic: Option<String>,
    pub detected_at: String,
    pub confirmed_at: Option<String>,
}

/// A block of the chain.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BlockOut {
    pub number: u64,
    pub hash: String,
}

/// Payer evidence.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PayerOut {
    /// Sender address, when the chain reports one.
    pub address: Option<String>,
    pub transaction_hash: String,
}

pub fn payment(p: &Payment) -> PaymentOut {
    PaymentOut {
        id: p.id.to_string(),
        payment_id: p.id.to_string(),
        object: "payment".into(),
        mode: p.scope.mode.as_str().into(),
        status: p.status.as_str().into(),
        invoice_id: p.invoice_id.to_string(),
        checkout_session_id: p.checkout_session_id.to_string(),
        amount_expected: p.amount_expected.to_string(),
        amount_received: p.amount_received.to_string(),
        customer_amount_credited: p.customer_amount_credited.to_string(),
        merchant_amount_settled: p.merchant_amount_settled.to_string(),
        transaction_id: p.transaction_hash.as_str().into(),
        chain_id: p.chain_id,
        token_contract: p.token_contract.to_string(),
        settlement_wallet_address: p.settlement_wallet.to_string(),
        payer: PayerOut { address: p.payer_address.clone(), transaction_hash: p.transaction_hash.as_str().into() },
        failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
        block: p.block.as_ref().map(|b| BlockOut { number: b.number, hash: b.hash.clone() }),
        diagnostic: p.diagnostic.clone(),
        detected_at: timestamp(p.detected_at),
        confirmed_at: p.confirmed_at.map(timestamp),
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineOut {
    pub id: Option<String>,
    pub sku: Option<String>,
    pub description: String,
    pub quantity: String,
    pub unit_amount: String,
    /// quantity x unitAmount, half-up at 6 decimals.
    pub amount: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscountOut {
    /// `fixed` or `percentage`.
    #[serde(rename = "type")]
    pub kind: String,
    pub amount: Option<String>,
    pub percentage: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TaxOut {
    pub id: Option<String>,
    pub label: String,
    pub amount: String,
    pub jurisdiction: Option<String>,
    pub registration_reference: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CustomerOut {
    pub name: Option<String>,
    pub company: Option<String>,
    pub email: Option<String>,
    pub billing_address: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReminderOut {
    pub enabled: bool,
    pub days_before_due: Vec<u8>,
    pub on_due: bool,
    pub days_after_due: Vec<u8>,
}

impl From<&LineItem> for LineOut {
    fn from(l: &LineItem) -> Self {
        LineOut {
            id: l.id.clone(),
            sku: l.sku.clone(),
            description: l.description.clone(),
            quantity: l.quantity.to_string(),
            unit_amount: l.unit_amount.to_string(),
            amount: l.amount().to_string(),
        }
    }
}

impl From<&Discount> for DiscountOut {
    fn from(d: &Discount) -> Self {
        match d {
            Discount::Fixed(a) => DiscountOut { kind: "fixed".into(), amount: Some(a.to_string()), percentage: None },
            Discount::Percentage(p) => {
                DiscountOut { kind: "percentage".into(), amount: None, percentage: Some(p.value().to_string()) }
            }
        }
    }
}

impl From<&TaxLine> for TaxOut {
    fn from(t: &TaxLine) -> Self {
        TaxOut {
            id: t.id.clone(),
            label: t.label.clone(),
            amount: t.amount.to_string(),
            jurisdiction: t.jurisdiction.clone(),
            registration_reference: t.registration_reference.clone(),
        }
    }
}

impl From<&Customer> for CustomerOut {
    fn from(c: &Customer) -> Self {
        CustomerOut {
            name: c.name.clone(),
            company: c.company.clone(),
            email: c.email.clone(),
            billing_address: c.billing_address.clone(),
        }
    }
}

impl From<&ReminderSchedule> for ReminderOut {
    fn from(r: &ReminderSchedule) -> Self {
        ReminderOut {
            enabled: r.enabled,
            days_before_due: r.days_before_due.clone(),
            on_due: r.on_due,
            days_after_due: r.days_after_due.clone(),
        }
    }
}

impl From<&Activity> for ActivityOut {
    fn from(a: &Activity) -> Self {
        ActivityOut {
            at: timestamp(a.at),
            action: a.action.as_str().into(),
            actor: a.actor.as_str().into(),
            detail: a.detail.clone(),
        }
    }
}

/// A checkout session as listed on its invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceSessionOut {
    pub id: String,
    pub status: String,
    pub amount_due: String,
    pub checkout_url: String,
    pub expires_at: String,
    pub created_at: String,
    pub completed_at: Option<String>,
}

/// The active checkout of an invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CheckoutRefOut {
    pub checkout_session_id: String,
    pub checkout_url: String,
    pub amount: String,
    pub expires_at: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundOut {
    pub id: String,
    pub payment_id: String,
    pub amount: String,
    pub reason: String,
    pub external_transaction_hash: String,
    pub chain_id: u64,
    pub token_contract: String,
    pub created_at: String,
}

pub fn refund(r: &RefundReference) -> RefundOut {
    RefundOut {
        id: r.id.to_string(),
        payment_id: r.payment_id.to_string(),
        amount: r.amount.to_string(),
        reason: r.reason.clone(),
        external_transaction_hash: r.external_transaction_hash.as_str().to_owned(),
        chain_id: r.chain_id,
        token_contract: r.token_contract.to_string(),
        created_at: timestamp(r.created_at),
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityOut {
    pub at: String,
    pub action: String,
    /// `api`, `system` or `test_helper`.
    pub actor: String,
    pub detail: Option<String>,
}

/// An invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceOut {
    pub id: String,
    /// The literal `invoice`.
    pub object: String,
    pub mode: String,
    /// `itemized` or `amount_only`.
    pub kind: String,
    /// Assigned on issue.
    pub invoice_number: Option<String>,
    /// Customer-facing page, on issue.
    pub hosted_invoice_url: Option<String>,
    /// draft, open, past_due, partially_paid, paid, void or uncollectible.
    pub collection_state: String,
    /// pending, processing, paid, underpaid, overpaid, expired, failed or cancelled.
    pub status: String,
    pub version: i64,
    pub currency_code: String,
    pub lines: Vec<LineOut>,
    pub subtotal: String,
    pub discount: Option<DiscountOut>,
    pub discount_amount: String,
    pub taxes: Vec<TaxOut>,
    pub tax_amount: String,
    pub total: String,
    pub customer_amount_paid: String,
    pub customer_amount_remaining: String,
    pub overpayment_amount: String,
    pub merchant_amount_settled: String,
    pub platform_fee: String,
    pub net_amount: String,
    pub expected_merchant_settlement: String,
    pub customer: Option<CustomerOut>,
    pub due_at: Option<String>,
    pub checkout_expires_in_minutes: u32,
    pub payment_terms: Option<String>,
    pub memo: Option<String>,
    pub footer: Option<String>,
    pub purchase_order_number: Option<String>,
    pub external_reference: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Box<RawValue>>,
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    pub reminder_schedule: Option<ReminderOut>,
    /// The checkout a customer can pay now, if any.
    pub checkout: Option<CheckoutRefOut>,
    pub checkout_sessions: Vec<InvoiceSessionOut>,
    pub payments: Vec<PaymentOut>,
    pub refund_references: Vec<RefundOut>,
    pub activity: Vec<ActivityOut>,
    pub close_reason: Option<String>,
    pub issued_at: Option<String>,
    pub paid_at: Option<String>,
    pub closed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

/// The merchant's metadata object, embedded as the JSON text it was stored as.
pub fn metadata(m: &Metadata) -> Result<Box<RawValue>, ApiError> {
    RawValue::from_string(m.as_str().to_owned()).map_err(|e| {
        tracing::error!(error = %e, "stored metadata is not JSON");
        ApiError::internal()
    })
}

pub fn invoice(agg: &InvoiceAggregate, links: &Links<'_>, now: DateTime<Utc>) -> Result<InvoiceOut, ApiError> {
    let inv = &agg.invoice;
    let f = &inv.fields;
    let c = &f.content;
    let active = agg.sessions.iter().rev().find(|s| s.is_payable(now));
    Ok(InvoiceOut {
        id: inv.id.to_string(),
        object: "invoice".into(),
        mode: inv.scope.mode.as_str().into(),
        kind: inv.kind.as_str().into(),
        invoice_number: inv.number.clone(),
        hosted_invoice_url: links.hosted_invoice(inv),
        collection_state: inv.collection_state.as_str().into(),
        status: inv.status.as_str().into(),
        version: inv.version,
        currency_code: f.currency.symbol().into(),
        lines: c.lines.iter().map(LineOut::from).collect(),
        subtotal: inv.totals.subtotal.to_string(),
        discount: c.discount.as_ref().map(DiscountOut::from),
        discount_amount: inv.totals.discount.to_string(),
        taxes: c.taxes.iter().map(TaxOut::from).collect(),
        tax_amount: inv.totals.tax.to_string(),
        total: inv.totals.total.to_string(),
        customer_amount_paid: inv.customer_amount_paid.to_string(),
        customer_amount_remaining: inv.remaining().to_string(),
        overpayment_amount: inv.overpayment().to_string(),
        merchant_amount_settled: inv.merchant_amount_settled.to_string(),
        platform_fee: inv.platform_fee().to_string(),
        net_amount: inv.net_amount().to_string(),
        expected_merchant_settlement: inv.net_amount().to_string(),
        customer: c.customer.as_ref().map(CustomerOut::from),
        due_at: c.due_at.map(timestamp),
        checkout_expires_in_minutes: f.checkout_expires_in_minutes,
        payment_terms: c.payment_terms.clone(),
        memo: c.memo.clone(),
        footer: c.footer.clone(),
        purchase_order_number: c.purchase_order_number.clone(),
        external_reference: c.external_reference.clone(),
        metadata: c.metadata.as_ref().map(metadata).transpose()?,
        success_url: c.success_url.as_ref().map(|u| u.as_str().to_owned()),
        cancel_url: c.cancel_url.as_ref().map(|u| u.as_str().to_owned()),
        reminder_schedule: f.reminder_schedule.as_ref().map(ReminderOut::from),
        checkout: active.map(|s| CheckoutRefOut {
            checkout_session_id: s.id.to_string(),
            checkout_url: links.checkout(s),
            amount: s.amount_due.to_string(),
            expires_at: timestamp(s.expires_at),
        }),
        checkout_sessions: agg.sessions.iter().map(|s| InvoiceSessionOut::of(s, links)).collect(),
        payments: agg.payments.iter().map(payment).collect(),
        refund_references: inv.refunds.iter().map(refund).collect(),
        activity: inv.activity.iter().map(ActivityOut::from).collect(),
        close_reason: inv.close_reason.clone(),
        issued_at: inv.issued_at.map(timestamp),
        paid_at: inv.paid_at.map(timestamp),
        closed_at: inv.closed_at.map(timestamp),
        created_at: timestamp(inv.created_at),
        updated_at: timestamp(inv.updated_at),
    })
}

impl InvoiceSessionOut {
    fn of(s: &CheckoutSession, links: &Links<'_>) -> Self {
        InvoiceSessionOut {
            id: s.id.to_string(),
            status: s.status.as_str().into(),
            amount_due: s.amount_due.to_string(),
            checkout_url: links.checkout(s),
            expires_at: timestamp(s.expires_at),
            created_at: timestamp(s.created_at),
            completed_at: s.completed_at.map(timestamp),
        }
    }
}

/// `POST /v1/invoices/{id}/checkout-sessions` answer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RemainderCheckoutOut {
    pub invoice_id: String,
    pub checkout_session_id: String,
    pub checkout_url: String,
    /// The remainder this checkout collects.
    pub amount: String,
    /// When the checkout expires (same as expiresAt).
    pub expiry: String,
    pub expires_at: String,
    /// True when an active checkout for the same remainder was returned.
    pub reused: bool,
}

/// `POST /v1/invoices/{id}/refund-references` answer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefundRecordedOut {
    pub invoice: InvoiceOut,
    pub adjustment: RefundOut,
}

/// `POST /v1/test-helpers/clock/advance` answer.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ClockOut {
    /// Total offset of the test clock from real time.
    pub offset_seconds: i64,
    /// The test clock's time now.
    pub now: String,
    /// Invoices changed by the transitions that became due.
    pub transitions_run: u64,
}

envelope!(/// A checkout session.
    CheckoutSessionEnvelope, CheckoutSessionOut);
envelope!(/// A payment.
    PaymentEnvelope, PaymentOut);
envelope!(/// An invoice.
    InvoiceEnvelope, InvoiceOut);
envelope!(/// A page of invoices.
    InvoiceListEnvelope, crate::wire::ListOut<InvoiceOut>);
envelope!(/// A remainder checkout.
    RemainderCheckoutEnvelope, RemainderCheckoutOut);
envelope!(/// A recorded refund reference.
    RefundRecordedEnvelope, RefundRecordedOut);
envelope!(/// The test clock.
    ClockEnvelope, ClockOut);

/// A payment as the public submission route shows it: no merchant data.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmittedPaymentOut {
    pub id: String,
    /// The literal `payment`.
    pub object: String,
    /// detected, validating, confirmed, underpaid, overpaid, failed or duplicate.
    pub status: String,
    pub checkout_session_id: String,
    pub transaction_hash: String,
    pub failure_reason: Option<String>,
}

impl From<&Payment> for SubmittedPaymentOut {
    fn from(p: &Payment) -> Self {
        Self {
            id: p.id.to_string(),
            object: "payment".into(),
            status: p.status.as_str().into(),
            checkout_session_id: p.checkout_session_id.to_string(),
            transaction_hash: p.transaction_hash.as_str().into(),
            failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
        }
    }
}

/// A transfer into the merchant's live wallet that no checkout could be credited with.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnattributedTransferOut {
    pub id: String,
    /// The literal `unattributed_transfer`.
    pub object: String,
    pub mode: String,
    pub chain_id: u64,
    pub transaction_hash: String,
    pub log_index: u64,
    pub block: BlockOut,
    /// USDC or USDT.
    pub currency_code: String,
    pub token_contract: String,
    pub from: String,
    pub to: String,
    pub amount: String,
    /// no_open_checkout, no_matching_amount or several_matching_checkouts.
    pub reason: String,
    pub detected_at: String,
}

impl From<UnattributedTransfer> for UnattributedTransferOut {
    fn from(t: UnattributedTransfer) -> Self {
        let l = t.logged;
        Self {
            id: t.id.to_string(),
            object: "unattributed_transfer".into(),
            mode: t.scope.mode.as_str().into(),
            chain_id: t.chain_id,
            transaction_hash: l.tx_hash.as_str().into(),
            log_index: l.log_index,
            block: BlockOut { number: l.block.number, hash: l.block.hash },
            currency_code: t.token.symbol().into(),
            token_contract: l.transfer.token_contract.to_string(),
            from: l.transfer.from.to_string(),
            to: l.transfer.to.to_string(),
            amount: l.transfer.amount.to_string(),
            reason: t.reason.as_str().into(),
            detected_at: timestamp(t.detected_at),
        }
    }
}

envelope!(/// A reported payment.
    SubmittedPaymentEnvelope, SubmittedPaymentOut);
envelope!(/// A page of unattributed transfers.
    UnattributedListEnvelope, crate::wire::ListOut<UnattributedTransferOut>);

/// An email to an invoice's customer, as queued.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceEmailOut {
    pub id: String,
    /// The literal `invoice_email`.
    pub object: String,
    pub invoice_id: String,
    /// `invoice` (with its PDF) or `reminder`.
    pub kind: String,
    pub to: String,
    /// `queued`, `sent`, `failed` or `skipped`.
    pub status: String,
    pub attempts: u32,
    pub created_at: String,
    pub sent_at: Option<String>,
}

impl From<&stablepay_domain::email::model::OutboundEmail> for InvoiceEmailOut {
    fn from(e: &stablepay_domain::email::model::OutboundEmail) -> Self {
        Self {
            id: e.id.to_string(),
            object: "invoice_email".into(),
            invoice_id: e.invoice_id.to_string(),
            kind: e.kind.as_str().into(),
            to: e.to.clone(),
            status: e.status.as_str().into(),
            attempts: e.attempts,
            created_at: crate::wire::timestamp(e.created_at),
            sent_at: e.sent_at.map(crate::wire::timestamp),
        }
    }
}

envelope!(/// A queued email.
    InvoiceEmailEnvelope, InvoiceEmailOut);
