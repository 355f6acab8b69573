//! Row types of invoices, checkout sessions and payments, and their conversions from and to
//! the domain's records.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use diesel::prelude::*;
use stablepay_domain::ids::{CheckoutSessionId, InvoiceId, MerchantId, PaymentId, PublicToken};
use stablepay_domain::invoice::checkout::{CheckoutSession, CheckoutStatus};
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::lifecycle::LifecycleStatus;
use stablepay_domain::invoice::model::{Invoice, InvoiceKind};
use stablepay_domain::invoice::payment::{BlockRef, Evidence, FailureReason, Payment, PaymentStatus, TxHash};
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::url::HttpUrl;
use stablepay_domain::{Error, Scope};

use crate::codec::{self, numeric};
use crate::json_bytes::JsonBytes;
use crate::rows::{corrupt, mode};
use crate::schema::{checkout_sessions, invoices, payments};

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = invoices, check_for_backend(diesel::pg::Pg), treat_none_as_null = true)]
pub(crate) struct InvoiceRow {
    pub(crate) id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) kind: String,
    pub(crate) number: Option<String>,
    pub(crate) number_prefix: String,
    pub(crate) public_token: Option<String>,
    pub(crate) collection_state: String,
    pub(crate) status: String,
    pub(crate) version: i64,
    pub(crate) currency: String,
    pub(crate) breakdown: JsonBytes,
    pub(crate) total: BigDecimal,
    pub(crate) customer_amount_paid: BigDecimal,
    pub(crate) merchant_amount_settled: BigDecimal,
    pub(crate) fee_basis_points: i32,
    pub(crate) settlement_wallet: String,
    pub(crate) due_at: Option<DateTime<Utc>>,
    pub(crate) past_due_at: Option<DateTime<Utc>>,
    pub(crate) close_reason: Option<String>,
    pub(crate) payment_count: i32,
    pub(crate) fields: JsonBytes,
    pub(crate) refunds: JsonBytes,
    pub(crate) activity: JsonBytes,
    pub(crate) issued_at: Option<DateTime<Utc>>,
    pub(crate) paid_at: Option<DateTime<Utc>>,
    pub(crate) closed_at: Option<DateTime<Utc>>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) updated_at: DateTime<Utc>,
    pub(crate) lock_version: i64,
}

impl InvoiceRow {
    pub(crate) fn from_domain(i: &Invoice, payment_count: usize) -> Result<Self, Error> {
        Ok(Self {
            id: i.id.to_string(),
            merchant_id: i.scope.merchant_id.to_string(),
            mode: i.scope.mode.as_str().to_owned(),
            kind: i.kind.as_str().to_owned(),
            number: i.number.clone(),
            number_prefix: i.number_prefix.clone(),
            public_token: i.public_token.as_ref().map(|t| t.as_str().to_owned()),
            collection_state: i.collection_state.as_str().to_owned(),
            status: i.status.as_str().to_owned(),
            version: i.version,
            currency: i.fields.currency.symbol().to_owned(),
            breakdown: codec::encode_breakdown(&i.totals)?,
            total: i.totals.total.as_bigdecimal().clone(),
            customer_amount_paid: i.customer_amount_paid.as_bigdecimal().clone(),
            merchant_amount_settled: i.merchant_amount_settled.as_bigdecimal().clone(),
            fee_basis_points: i32::try_from(i.fee_basis_points).map_err(|_| corrupt("fee"))?,
            settlement_wallet: i.settlement_wallet.to_string(),
            due_at: i.fields.content.due_at,
            past_due_at: i.past_due_at,
            close_reason: i.close_reason.clone(),
            payment_count: i32::try_from(payment_count).map_err(|_| corrupt("payment count"))?,
            fields: codec::encode_fields(&i.fields)?,
            refunds: codec::encode_refunds(&i.refunds)?,
            activity: codec::encode_activity(&i.activity)?,
            issued_at: i.issued_at,
            paid_at: i.paid_at,
            closed_at: i.closed_at,
            created_at: i.created_at,
            updated_at: i.updated_at,
            lock_version: i.lock_version,
        })
    }

    pub(crate) fn into_domain(self) -> Result<Invoice, Error> {
        Ok(Invoice {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            kind: InvoiceKind::parse(&self.kind).ok_or_else(|| corrupt("kind"))?,
            collection_state: CollectionState::parse(&self.collection_state).ok_or_else(|| corrupt("state"))?,
            status: LifecycleStatus::parse(&self.status).ok_or_else(|| corrupt("status"))?,
            totals: codec::decode_breakdown(&self.breakdown, numeric(self.total)?)?,
            customer_amount_paid: numeric(self.customer_amount_paid)?,
            merchant_amount_settled: numeric(self.merchant_amount_settled)?,
            fee_basis_points: u32::try_from(self.fee_basis_points).map_err(|_| corrupt("fee"))?,
            fields: codec::decode_fields(&self.fields)?,
            refunds: codec::decode_refunds(&self.refunds)?,
            activity: codec::decode_activity(&self.activity)?,
            id: InvoiceId::from_trusted(self.id),
            number: self.number,
            number_prefix: self.number_prefix,
            public_token: self.public_token.map(PublicToken::from_trusted),
            version: self.version,
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            close_reason: self.close_reason,
            issued_at: self.issued_at,
            paid_at: self.paid_at,
            closed_at: self.closed_at,
            past_due_at: self.past_due_at,
            created_at: self.created_at,
            updated_at: self.updated_at,
            lock_version: self.lock_version,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = checkout_sessions, check_for_backend(diesel::pg::Pg))]
pub(crate) struct SessionRow {
    pub(crate) id: String,
    pub(crate) invoice_id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) status: String,
    pub(crate) amount_due: BigDecimal,
    pub(crate) currency: String,
    pub(crate) settlement_wallet: String,
    pub(crate) external_reference: Option<String>,
    pub(crate) customer_email: Option<String>,
    pub(crate) success_url: Option<String>,
    pub(crate) cancel_url: Option<String>,
    pub(crate) expires_at: DateTime<Utc>,
    pub(crate) created_at: DateTime<Utc>,
    pub(crate) completed_at: Option<DateTime<Utc>>,
    pub(crate) chain_id: i64,
    pub(crate) token_contract: String,
    pub(crate) amount_offset: BigDecimal,
}

impl SessionRow {
    pub(crate) fn from_domain(s: &CheckoutSession) -> Result<Self, Error> {
        Ok(Self {
            id: s.id.to_string(),
            invoice_id: s.invoice_id.to_string(),
            merchant_id: s.scope.merchant_id.to_string(),
            mode: s.scope.mode.as_str().to_owned(),
            status: s.status.as_str().to_owned(),
            amount_due: s.amount_due.as_bigdecimal().clone(),
            currency: s.currency.symbol().to_owned(),
            settlement_wallet: s.settlement_wallet.to_string(),
            external_reference: s.external_reference.clone(),
            customer_email: s.customer_email.clone(),
            success_url: s.success_url.as_ref().map(|u| u.as_str().to_owned()),
            cancel_url: s.cancel_url.as_ref().map(|u| u.as_str().to_owned()),
            expires_at: s.expires_at,
            created_at: s.created_at,
            completed_at: s.completed_at,
            chain_id: i64::try_from(s.chain_id).map_err(|_| corrupt("chain id"))?,
            token_contract: s.token_contract.to_string(),
            amount_offset: s.amount_offset.as_bigdecimal().clone(),
        })
    }

    pub(crate) fn into_domain(self) -> Result<CheckoutSession, Error> {
        let url = |u: Option<String>| u.map(|u| HttpUrl::parse(&u).map_err(|_| corrupt("url"))).transpose();
        Ok(CheckoutSession {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            status: CheckoutStatus::parse(&self.status).ok_or_else(|| corrupt("session status"))?,
            amount_due: numeric(self.amount_due)?,
            currency: Token::parse(&self.currency).ok_or_else(|| corrupt("currency"))?,
            success_url: url(self.success_url)?,
            cancel_url: url(self.cancel_url)?,
            id: CheckoutSessionId::from_trusted(self.id),
            invoice_id: InvoiceId::from_trusted(self.invoice_id),
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            chain_id: u64::try_from(self.chain_id).map_err(|_| corrupt("chain id"))?,
            token_contract: WalletAddress::from_trusted(self.token_contract),
            external_reference: self.external_reference,
            customer_email: self.customer_email,
            expires_at: self.expires_at,
            created_at: self.created_at,
            completed_at: self.completed_at,
            amount_offset: numeric(self.amount_offset)?,
        })
    }
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payments, check_for_backend(diesel::pg::Pg))]
pub(crate) struct PaymentRow {
    pub(crate) id: String,
    pub(crate) invoice_id: String,
    pub(crate) checkout_session_id: String,
    pub(crate) merchant_id: String,
    pub(crate) mode: String,
    pub(crate) status: String,
    pub(crate) amount_expected: BigDecimal,
    pub(crate) amount_received: BigDecimal,
    pub(crate) customer_amount_credited: BigDecimal,
    pub(crate) merchant_amount_settled: BigDecimal,
    pub(crate) transaction_hash: String,
    pub(crate) chain_id: i64,
    pub(crate) token_contract: String,
    pub(crate) settlement_wallet: String,
    pub(crate) payer_address: Option<String>,
    pub(crate) failure_reason: Option<String>,
    pub(crate) detected_at: DateTime<Utc>,
    pub(crate) confirmed_at: Option<DateTime<Utc>>,
    pub(crate) block_number: Option<i64>,
    pub(crate) block_hash: Option<String>,
    pub(crate) diagnostic: Option<String>,
    pub(crate) claimed_log: Option<i64>,
    pub(crate) logs: Option<Vec<i64>>,
    pub(crate) missing_since: Option<DateTime<Utc>>,
    pub(crate) evidence: Option<String>,
    pub(crate) block_time: Option<DateTime<Utc>>,
}

fn log_index(n: u64) -> Result<i64, Error> {
    i64::try_from(n).map_err(|_| corrupt("log index"))
}

fn log_of(n: i64) -> Result<u64, Error> {
    u64::try_from(n).map_err(|_| corrupt("log index"))
}

impl PaymentRow {
    pub(crate) fn from_domain(p: &Payment) -> Result<Self, Error> {
        Ok(Self {
            id: p.id.to_string(),
            invoice_id: p.invoice_id.to_string(),
            checkout_session_id: p.checkout_session_id.to_string(),
            merchant_id: p.scope.merchant_id.to_string(),
            mode: p.scope.mode.as_str().to_owned(),
            status: p.status.as_str().to_owned(),
            amount_expected: p.amount_expected.as_bigdecimal().clone(),
            amount_received: p.amount_received.as_bigdecimal().clone(),
            customer_amount_credited: p.customer_amount_credited.as_bigdecimal().clone(),
            merchant_amount_settled: p.merchant_amount_settled.as_bigdecimal().clone(),
            transaction_hash: p.transaction_hash.as_str().to_owned(),
            chain_id: i64::try_from(p.chain_id).map_err(|_| corrupt("chain id"))?,
            token_contract: p.token_contract.to_string(),
            settlement_wallet: p.settlement_wallet.to_string(),
            payer_address: p.payer_address.clone(),
            failure_reason: p.failure_reason.map(|r| r.as_str().to_owned()),
            detected_at: p.detected_at,
            confirmed_at: p.confirmed_at,
            block_number: p
                .block
                .as_ref()
                .map(|b| i64::try_from(b.number))
                .transpose()
                .map_err(|_| corrupt("block"))?,
            block_hash: p.block.as_ref().map(|b| b.hash.clone()),
            diagnostic: p.diagnostic.clone(),
            claimed_log: p.claimed_log.map(log_index).transpose()?,
            // Recorded once verification counted logs; NULL before (and for payments credited
            // before logs were recorded).
            logs: if p.logs.is_empty() {
                None
            } else {
                Some(p.logs.iter().map(|&n| log_index(n)).collect::<Result<_, _>>()?)
            },
            missing_since: p.missing_since,
            evidence: p.evidence.map(|e| e.as_str().to_owned()),
            block_time: p.block_time,
        })
    }

    pub(crate) fn into_domain(self) -> Result<Payment, Error> {
        Ok(Payment {
            scope: Scope::new(MerchantId::from_trusted(self.merchant_id), mode(&self.mode)?),
            status: PaymentStatus::parse(&self.status).ok_or_else(|| corrupt("payment status"))?,
            amount_expected: numeric(self.amount_expected)?,
            amount_received: numeric(self.amount_received)?,
            customer_amount_credited: numeric(self.customer_amount_credited)?,
            merchant_amount_settled: numeric(self.merchant_amount_settled)?,
            chain_id: u64::try_from(self.chain_id).map_err(|_| corrupt("chain id"))?,
            id: PaymentId::from_trusted(self.id),
            invoice_id: InvoiceId::from_trusted(self.invoice_id),
            checkout_session_id: CheckoutSessionId::from_trusted(self.checkout_session_id),
            transaction_hash: TxHash::from_trusted(self.transaction_hash),
            token_contract: WalletAddress::from_trusted(self.token_contract),
            settlement_wallet: WalletAddress::from_trusted(self.settlement_wallet),
            payer_address: self.payer_address,
            failure_reason: self
                .failure_reason
                .map(|r| FailureReason::parse(&r).ok_or_else(|| corrupt("failure reason")))
                .transpose()?,
            detected_at: self.detected_at,
            confirmed_at: self.confirmed_at,
            block: match (self.block_number, self.block_hash) {
                (Some(n), Some(hash)) => {
                    Some(BlockRef { number: u64::try_from(n).map_err(|_| corrupt("block"))?, hash })
                }
                _ => None,
            },
            diagnostic: self.diagnostic,
            claimed_log: self.claimed_log.map(log_of).transpose()?,
            logs: self.logs.unwrap_or_default().into_iter().map(log_of).collect::<Result<_, _>>()?,
            missing_since: self.missing_since,
            evidence: self
                .evidence
                .map(|e| Evidence::parse(&e).ok_or_else(|| corrupt("payment evidence")))
                .transpose()?,
            block_time: self.block_time,
        })
    }
}
