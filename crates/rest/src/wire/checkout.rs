//! Checkout sessions and payments: the creation body and the answers.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use stablepay_domain::api_key::model::CheckoutMember;
use stablepay_domain::invoice::aggregate::InvoiceAggregate;
use stablepay_domain::invoice::checkout::CheckoutSession;
use stablepay_domain::invoice::input::CheckoutInput;
use stablepay_domain::invoice::payment::Payment;
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{Links, envelope};
use crate::wire::fields::{amount, metadata, url};

/// `POST /v1/checkout-sessions` body.
#[derive(Deserialize, ToSchema, Default)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CheckoutCreate {
    /// Positive decimal string, at most 6 fractional digits.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$", example = "25.50")]
    pub amount: String,
    /// The merchant's own reference (up to 255 bytes).
    #[schema(max_length = 255)]
    pub external_reference: Option<String>,
    /// Secret key only.
    pub customer_email: Option<String>,
    /// Secret key only: absolute http(s) URL.
    pub success_url: Option<String>,
    /// Secret key only: absolute http(s) URL.
    pub cancel_url: Option<String>,
    /// Secret key only: JSON object (up to 16 KiB) copied to the invoice.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    /// Secret key only: 5-1440, default 30.
    #[schema(minimum = 5, maximum = 1440)]
    pub expires_in_minutes: Option<i64>,
}

impl CheckoutCreate {
    /// What a member of the body is, for the key's check of what it may send.
    pub fn member(name: &str) -> CheckoutMember {
        match name {
            "amount" => CheckoutMember::Amount,
            "externalReference" => CheckoutMember::ExternalReference,
            _ => CheckoutMember::Other,
        }
    }

    pub fn into_domain(self) -> Result<CheckoutInput, ApiError> {
        Ok(CheckoutInput {
            amount: Some(amount("amount", &self.amount, true)?),
            external_reference: self.external_reference,
            customer_email: self.customer_email,
            success_url: url("successUrl", &self.success_url)?,
            cancel_url: url("cancelUrl", &self.cancel_url)?,
            metadata: metadata("metadata", &self.metadata)?,
            expires_in_minutes: self.expires_in_minutes,
        })
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
    /// What the customer sends to this session: what it collects (for a remainder checkout
    /// only the remainder), plus up to 0.000999 when the merchant has unique amounts on.
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
    /// A retrieval (it adds the completed session's payment facts), not a creation.
    pub retrieval: bool,
    /// The merchant's side (fees, net and settled amounts) is shown: the key's type says so.
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
    /// The block the transfer was seen in (while validating, and once settled).
    pub block: Option<BlockOut>,
    /// That block's time (the chain's clock): what the checkout's creation and expiry are
    /// compared with.
    pub block_time: Option<String>,
    /// What named this payment's checkout as the one its transfer pays (live mode):
    /// `authorization`, `bound_wallet`, `unique_amount`, `reported_hash`, `amount` or `manual` (a person
    /// attributed it); null for simulated transfers and before verification weighed it.
    pub evidence: Option<String>,
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
        block_time: p.block_time.map(timestamp),
        evidence: p.evidence.map(|e| e.as_str().to_owned()),
        diagnostic: p.diagnostic.clone(),
        detected_at: timestamp(p.detected_at),
        confirmed_at: p.confirmed_at.map(timestamp),
    }
}

envelope!(/// A checkout session.
    CheckoutSessionEnvelope, CheckoutSessionOut);
envelope!(/// A payment.
    PaymentEnvelope, PaymentOut);
