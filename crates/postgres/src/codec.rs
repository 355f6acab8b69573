//! The store's own JSON encoding of an invoice's commercial fields, activity and refunds
//! (jsonb columns). It is a storage format, not the API's: it changes only with a migration.

use bigdecimal::BigDecimal;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stablepay_domain::Error;
use stablepay_domain::ids::{PaymentId, RefundReferenceId};
use stablepay_domain::invoice::model::{
    Activity, ActivityAction, Actor, Customer, InvoiceContent, InvoiceFields, LineItem, Metadata, Refund,
    RefundReference, ReminderSchedule, TaxLine,
};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::totals::{Discount, Totals};
use stablepay_domain::merchant::{Token, WalletAddress};
use stablepay_domain::money::{Amount, Decimal6, Percentage};
use stablepay_domain::url::HttpUrl;

use crate::json_bytes::JsonBytes;

fn corrupt(what: &str) -> Error {
    Error::Internal(format!("stored invoice is corrupt: {what}"))
}

pub(crate) fn amount(text: &str) -> Result<Amount, Error> {
    Decimal6::parse(text).map_err(|_| corrupt("amount"))
}

pub(crate) fn numeric(value: BigDecimal) -> Result<Amount, Error> {
    Decimal6::from_exact(value).ok_or_else(|| corrupt("numeric"))
}

fn url(text: &Option<String>) -> Result<Option<HttpUrl>, Error> {
    text.as_deref().map(|u| HttpUrl::parse(u).map_err(|_| corrupt("url"))).transpose()
}

#[derive(Serialize, Deserialize)]
struct StoredLine {
    id: Option<String>,
    sku: Option<String>,
    description: String,
    quantity: String,
    unit_amount: String,
}

#[derive(Serialize, Deserialize)]
struct StoredCustomer {
    name: Option<String>,
    company: Option<String>,
    email: Option<String>,
    billing_address: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredTax {
    id: Option<String>,
    label: String,
    amount: String,
    jurisdiction: Option<String>,
    registration_reference: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct StoredReminder {
    enabled: bool,
    days_before_due: Vec<u8>,
    on_due: bool,
    days_after_due: Vec<u8>,
}

#[derive(Serialize, Deserialize)]
struct StoredFields {
    lines: Vec<StoredLine>,
    amount: Option<String>,
    customer: Option<StoredCustomer>,
    discount_fixed: Option<String>,
    discount_percentage: Option<String>,
    taxes: Vec<StoredTax>,
    currency: String,
    due_at: Option<DateTime<Utc>>,
    checkout_expires_in_minutes: u32,
    payment_terms: Option<String>,
    memo: Option<String>,
    footer: Option<String>,
    purchase_order_number: Option<String>,
    external_reference: Option<String>,
    metadata: Option<Value>,
    success_url: Option<String>,
    cancel_url: Option<String>,
    reminder_schedule: Option<StoredReminder>,
    #[serde(default)]
    payment_link_id: Option<String>,
    #[serde(default)]
    payment_link_single_use: bool,
}

impl From<&LineItem> for StoredLine {
    fn from(l: &LineItem) -> Self {
        Self {
            id: l.id.clone(),
            sku: l.sku.clone(),
            description: l.description.clone(),
            quantity: l.quantity.to_string(),
            unit_amount: l.unit_amount.to_string(),
        }
    }
}

impl TryFrom<StoredLine> for LineItem {
    type Error = Error;
    fn try_from(l: StoredLine) -> Result<Self, Error> {
        Ok(LineItem {
            quantity: amount(&l.quantity)?,
            unit_amount: amount(&l.unit_amount)?,
            id: l.id,
            sku: l.sku,
            description: l.description,
        })
    }
}

impl From<&Customer> for StoredCustomer {
    fn from(c: &Customer) -> Self {
        Self {
            name: c.name.clone(),
            company: c.company.clone(),
            email: c.email.clone(),
            billing_address: c.billing_address.clone(),
        }
    }
}

impl From<StoredCustomer> for Customer {
    fn from(c: StoredCustomer) -> Self {
        Customer { name: c.name, company: c.company, email: c.email, billing_address: c.billing_address }
    }
}

impl From<&TaxLine> for StoredTax {
    fn from(t: &TaxLine) -> Self {
        Self {
            id: t.id.clone(),
            label: t.label.clone(),
            amount: t.amount.to_string(),
            jurisdiction: t.jurisdiction.clone(),
            registration_reference: t.registration_reference.clone(),
        }
    }
}

impl TryFrom<StoredTax> for TaxLine {
    type Error = Error;
    fn try_from(t: StoredTax) -> Result<Self, Error> {
        Ok(TaxLine {
            amount: amount(&t.amount)?,
            id: t.id,
            label: t.label,
            jurisdiction: t.jurisdiction,
            registration_reference: t.registration_reference,
        })
    }
}

impl From<&ReminderSchedule> for StoredReminder {
    fn from(r: &ReminderSchedule) -> Self {
        Self {
            enabled: r.enabled,
            days_before_due: r.days_before_due.clone(),
            on_due: r.on_due,
            days_after_due: r.days_after_due.clone(),
        }
    }
}

impl From<StoredReminder> for ReminderSchedule {
    fn from(r: StoredReminder) -> Self {
        ReminderSchedule {
            enabled: r.enabled,
            days_before_due: r.days_before_due,
            on_due: r.on_due,
            days_after_due: r.days_after_due,
        }
    }
}

pub(crate) fn encode_fields(f: &InvoiceFields) -> Result<JsonBytes, Error> {
    let c = &f.content;
    let (discount_fixed, discount_percentage) = match &c.discount {
        Some(Discount::Fixed(a)) => (Some(a.to_string()), None),
        Some(Discount::Percentage(p)) => (None, Some(p.value().to_string())),
        None => (None, None),
    };
    let metadata = c
        .metadata
        .as_ref()
        .map(|m| serde_json::from_str(m.as_str()).map_err(|_| Error::Internal("metadata is not JSON".into())))
        .transpose()?;
    let stored = StoredFields {
        lines: c.lines.iter().map(StoredLine::from).collect(),
        amount: f.amount.as_ref().map(ToString::to_string),
        customer: c.customer.as_ref().map(StoredCustomer::from),
        discount_fixed,
        discount_percentage,
        taxes: c.taxes.iter().map(StoredTax::from).collect(),
        currency: f.currency.symbol().to_owned(),
        due_at: c.due_at,
        checkout_expires_in_minutes: f.checkout_expires_in_minutes,
        payment_terms: c.payment_terms.clone(),
        memo: c.memo.clone(),
        footer: c.footer.clone(),
        purchase_order_number: c.purchase_order_number.clone(),
        external_reference: c.external_reference.clone(),
        metadata,
        success_url: c.success_url.as_ref().map(|u| u.as_str().to_owned()),
        cancel_url: c.cancel_url.as_ref().map(|u| u.as_str().to_owned()),
        reminder_schedule: f.reminder_schedule.as_ref().map(StoredReminder::from),
        payment_link_id: f.payment_link.as_ref().map(|l| l.id.to_string()),
        payment_link_single_use: f.payment_link.as_ref().is_some_and(|l| l.single_use),
    };
    to_bytes(&stored)
}

fn to_bytes<T: Serialize>(value: &T) -> Result<JsonBytes, Error> {
    serde_json::to_vec(value).map(JsonBytes).map_err(|e| Error::Internal(e.to_string()))
}

pub(crate) fn decode_fields(value: &JsonBytes) -> Result<InvoiceFields, Error> {
    // Where it failed, never what it read (it may be a customer's data).
    let s: StoredFields = serde_json::from_slice(&value.0).map_err(|e| {
        corrupt(&format!("fields ({:?} at byte column {} of {})", e.classify(), e.column(), value.0.len()))
    })?;
    let discount = match (s.discount_fixed, s.discount_percentage) {
        (Some(a), _) => Some(Discount::Fixed(amount(&a)?)),
        (None, Some(p)) => Some(Discount::Percentage(Percentage::parse(&p).map_err(|_| corrupt("percentage"))?)),
        _ => None,
    };
    let content = InvoiceContent {
        lines: s.lines.into_iter().map(LineItem::try_from).collect::<Result<_, Error>>()?,
        customer: s.customer.map(Customer::from),
        discount,
        taxes: s.taxes.into_iter().map(TaxLine::try_from).collect::<Result<_, Error>>()?,
        due_at: s.due_at,
        payment_terms: s.payment_terms,
        memo: s.memo,
        footer: s.footer,
        purchase_order_number: s.purchase_order_number,
        external_reference: s.external_reference,
        metadata: s.metadata.map(|m| Metadata::from_json_object_text(m.to_string())),
        success_url: url(&s.success_url)?,
        cancel_url: url(&s.cancel_url)?,
    };
    Ok(InvoiceFields {
        content,
        amount: s.amount.as_deref().map(amount).transpose()?,
        currency: Token::parse(&s.currency).ok_or_else(|| corrupt("currency"))?,
        checkout_expires_in_minutes: s.checkout_expires_in_minutes,
        reminder_schedule: s.reminder_schedule.map(ReminderSchedule::from),
        payment_link: s.payment_link_id.map(|id| stablepay_domain::invoice::model::LinkRef {
            id: stablepay_domain::ids::PaymentLinkId::from_trusted(id),
            single_use: s.payment_link_single_use,
        }),
    })
}

#[derive(Serialize, Deserialize)]
struct StoredActivity {
    #[serde(deserialize_with = "stored_time")]
    at: DateTime<Utc>,
    action: String,
    actor: String,
    detail: Option<String>,
    /// The dashboard member who acted (entries written before members existed have none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    by: Option<String>,
}

/// A timestamp as this encoding writes it (chrono's RFC 3339 in UTC,
/// `2026-12-01T22:46:13.269202Z`), read field by field; any other spelling through chrono's
/// parser (every read of an invoice reads each of its activity's times).
fn stored_time<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let text = std::borrow::Cow::<'de, str>::deserialize(d)?;
    utc_time(&text)
        .or_else(|| DateTime::parse_from_rfc3339(&text).ok().map(|t| t.with_timezone(&Utc)))
        .ok_or_else(|| serde::de::Error::custom("not an RFC 3339 time"))
}

/// `YYYY-MM-DDTHH:MM:SS[.fraction]Z`, or `None`.
fn utc_time(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    let number = |from: usize, to: usize| -> Option<u32> {
        b.get(from..to)?.iter().try_fold(0u32, |n, d| d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0')))
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if b.len() < 20 || b.last() != Some(&b'Z') || separators.iter().any(|(i, c)| b.get(*i) != Some(c)) {
        return None;
    }
    let nanos = match (b.len(), b.get(19)) {
        (20, _) => 0,
        (22..=30, Some(b'.')) => {
            let digits = b.len() - 21;
            number(20, b.len() - 1)? * 10u32.pow(u32::try_from(9 - digits).ok()?)
        }
        _ => return None,
    };
    let date = chrono::NaiveDate::from_ymd_opt(i32::try_from(number(0, 4)?).ok()?, number(5, 7)?, number(8, 10)?)?;
    Some(date.and_hms_nano_opt(number(11, 13)?, number(14, 16)?, number(17, 19)?, nanos)?.and_utc())
}

pub(crate) fn encode_activity(list: &[Activity]) -> Result<JsonBytes, Error> {
    let stored: Vec<StoredActivity> = list
        .iter()
        .map(|a| StoredActivity {
            at: a.at,
            action: a.action.as_str().to_owned(),
            actor: a.actor.as_str().to_owned(),
            detail: a.detail.clone(),
            by: a.by.clone(),
        })
        .collect();
    to_bytes(&stored)
}

pub(crate) fn decode_activity(value: &JsonBytes) -> Result<Vec<Activity>, Error> {
    let stored: Vec<StoredActivity> = serde_json::from_slice(&value.0).map_err(|_| corrupt("activity"))?;
    stored
        .into_iter()
        .map(|a| {
            Ok(Activity {
                at: a.at,
                action: ActivityAction::parse(&a.action).ok_or_else(|| corrupt("activity action"))?,
                actor: Actor::parse(&a.actor).ok_or_else(|| corrupt("activity actor"))?,
                detail: a.detail,
                by: a.by,
            })
        })
        .collect()
}

#[derive(Serialize, Deserialize)]
struct StoredRefund {
    id: String,
    payment_id: String,
    amount: String,
    reason: String,
    external_transaction_hash: String,
    chain_id: u64,
    token_contract: String,
    created_at: DateTime<Utc>,
}

pub(crate) fn encode_refunds(list: &[RefundReference]) -> Result<JsonBytes, Error> {
    let stored: Vec<StoredRefund> = list
        .iter()
        .map(|recorded| {
            let r = &recorded.refund;
            StoredRefund {
                id: recorded.id.to_string(),
                payment_id: r.payment_id.to_string(),
                amount: r.amount.to_string(),
                reason: r.reason.clone(),
                external_transaction_hash: r.external_transaction_hash.as_str().to_owned(),
                chain_id: r.chain_id,
                token_contract: r.token_contract.to_string(),
                created_at: recorded.created_at,
            }
        })
        .collect();
    to_bytes(&stored)
}

pub(crate) fn decode_refunds(value: &JsonBytes) -> Result<Vec<RefundReference>, Error> {
    let stored: Vec<StoredRefund> = serde_json::from_slice(&value.0).map_err(|_| corrupt("refunds"))?;
    stored
        .into_iter()
        .map(|r| {
            let refund = Refund {
                payment_id: PaymentId::from_trusted(r.payment_id),
                amount: amount(&r.amount)?,
                reason: r.reason,
                external_transaction_hash: TxHash::parse(&r.external_transaction_hash)
                    .ok_or_else(|| corrupt("refund hash"))?,
                chain_id: r.chain_id,
                token_contract: WalletAddress::from_trusted(r.token_contract),
            };
            Ok(RefundReference { id: RefundReferenceId::from_trusted(r.id), refund, created_at: r.created_at })
        })
        .collect()
}

#[derive(Serialize, Deserialize)]
struct StoredBreakdown {
    subtotal: String,
    discount: String,
    tax: String,
}

/// The subtotal, discount and tax of an invoice (the total has its own numeric column).
pub(crate) fn encode_breakdown(t: &Totals) -> Result<JsonBytes, Error> {
    to_bytes(&StoredBreakdown {
        subtotal: t.subtotal.to_string(),
        discount: t.discount.to_string(),
        tax: t.tax.to_string(),
    })
}

pub(crate) fn decode_breakdown(value: &JsonBytes, total: Amount) -> Result<Totals, Error> {
    let b: StoredBreakdown = serde_json::from_slice(&value.0).map_err(|_| corrupt("breakdown"))?;
    Ok(Totals { subtotal: amount(&b.subtotal)?, discount: amount(&b.discount)?, tax: amount(&b.tax)?, total })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The store's times are read as chrono reads them, whatever their fraction.
    #[test]
    fn stored_times_are_read_as_chrono_reads_them() {
        let mut at = chrono::TimeZone::with_ymd_and_hms(&Utc, 2020, 1, 1, 0, 0, 0).unwrap();
        for step in 0..50_000i64 {
            let written = serde_json::to_string(&at).unwrap();
            let text = written.trim_matches('"');
            assert_eq!(utc_time(text), Some(at), "{text}");
            let read: DateTime<Utc> = serde_json::from_str(&written).unwrap();
            assert_eq!(read, at);
            at += chrono::Duration::nanoseconds(3_600_000_000_123 + step * 7_919);
        }
        for text in ["2026-12-01T22:46:13Z", "2026-12-01T22:46:13.5Z", "2026-12-01T22:46:13.123456789Z"] {
            assert_eq!(
                utc_time(text),
                DateTime::parse_from_rfc3339(text).ok().map(|t| t.with_timezone(&Utc)),
                "{text}"
            );
        }
        for other in
            ["2026-12-01T22:46:13+00:00", "2026-12-01 22:46:13Z", "2026-13-01T22:46:13Z", "2026-12-01T22:46:13.Z", ""]
        {
            assert_eq!(utc_time(other), None, "{other}");
        }
        // Another spelling still reads, through chrono.
        let activity = r#"[{"at":"2026-12-01T22:46:13+00:00","action":"created","actor":"api","detail":null}]"#;
        let read = decode_activity(&JsonBytes(activity.as_bytes().to_vec())).unwrap();
        assert_eq!(read[0].at, utc_time("2026-12-01T22:46:13Z").unwrap());
    }
}
