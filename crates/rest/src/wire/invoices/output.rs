//! Invoice answers: the invoice with its lines, totals, sessions, payments and activity, and
//! what the collection actions answer.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::value::RawValue;
use stablepay_domain::invoice::aggregate::InvoiceAggregate;
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::model::{
    Activity, Customer, LineItem, Metadata, RefundReference, ReminderSchedule, TaxLine,
};
use stablepay_domain::invoice::totals::Discount;
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::checkout::{PaymentOut, payment};
use crate::wire::common::{Links, envelope};

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
            by: a.by.clone(),
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

pub fn refund(recorded: &RefundReference) -> RefundOut {
    let r = &recorded.refund;
    RefundOut {
        id: recorded.id.to_string(),
        payment_id: r.payment_id.to_string(),
        amount: r.amount.to_string(),
        reason: r.reason.clone(),
        external_transaction_hash: r.external_transaction_hash.as_str().to_owned(),
        chain_id: r.chain_id,
        token_contract: r.token_contract.to_string(),
        created_at: timestamp(recorded.created_at),
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityOut {
    pub at: String,
    pub action: String,
    /// `api`, `dashboard` (a member of the merchant, in the dashboard), `system` or `test_helper`.
    pub actor: String,
    pub detail: Option<String>,
    /// The dashboard member who acted (their email) when `actor` is `dashboard`; otherwise null.
    pub by: Option<String>,
}

/// An invoice.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InvoiceOut {
    pub id: String,
    /// The literal `invoice`.
    pub object: &'static str,
    pub mode: &'static str,
    /// `itemized` or `amount_only`.
    pub kind: &'static str,
    /// Assigned on issue.
    pub invoice_number: Option<String>,
    /// Customer-facing page, on issue.
    pub hosted_invoice_url: Option<String>,
    /// draft, open, past_due, partially_paid, paid, void or uncollectible.
    pub collection_state: &'static str,
    /// pending, processing, paid, underpaid, overpaid, expired, failed or cancelled.
    pub status: &'static str,
    pub version: i64,
    pub currency_code: &'static str,
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
        object: "invoice",
        mode: inv.scope.mode.as_str(),
        kind: inv.kind.as_str(),
        invoice_number: inv.number.clone(),
        hosted_invoice_url: links.hosted_invoice(inv),
        collection_state: inv.collection_state.as_str(),
        status: inv.status.as_str(),
        version: inv.version,
        currency_code: f.currency.symbol(),
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
envelope!(/// An invoice.
    InvoiceEnvelope, InvoiceOut);
envelope!(/// A page of invoices.
    InvoiceListEnvelope, crate::wire::common::ListOut<InvoiceOut>);
envelope!(/// A remainder checkout.
    RemainderCheckoutEnvelope, RemainderCheckoutOut);
envelope!(/// A recorded refund reference.
    RefundRecordedEnvelope, RefundRecordedOut);

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
            // An invoice's emails are listed only under it: every one has its invoice.
            invoice_id: e.invoice_id().map(ToString::to_string).unwrap_or_default(),
            kind: e.kind.as_str().into(),
            to: e.to.clone(),
            status: e.status.as_str().into(),
            attempts: e.attempts,
            created_at: stablepay_http::timestamp::timestamp(e.created_at),
            sent_at: e.sent_at.map(stablepay_http::timestamp::timestamp),
        }
    }
}

envelope!(/// A queued email.
    InvoiceEmailEnvelope, InvoiceEmailOut);
