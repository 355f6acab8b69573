//! Payment links: the configuration the merchant sends, the link as the merchant reads it,
//! its public view (display fields only) and what a submission takes and answers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use stablepay_domain::Error as DomainError;
use stablepay_domain::Mode;
use stablepay_domain::merchant::model::POLYGON_CHAIN_ID;
use stablepay_domain::payment_link::machine::LinkState;
use stablepay_domain::payment_link::model::AmountType;
use stablepay_domain::payment_link::model::Usage;
use stablepay_domain::payment_link::model::{AmountRule, Collect, LinkCheckout, MAX_CUSTOMER_AMOUNT, PaymentLink};
use stablepay_domain::payment_link::service::{LinkSubmission, PublicLink};
use stablepay_domain::payment_link::validate::LinkInput;
use stablepay_domain::url::PublicPages;
use stablepay_http::error::ApiError;
use stablepay_http::timestamp::timestamp;
use utoipa::ToSchema;

use crate::wire::common::{ListOut, envelope};
use crate::wire::fields;

/// Which customer fields the public page requires.
#[derive(Deserialize, Serialize, ToSchema, Default, Clone, Copy)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CollectIo {
    #[serde(default)]
    pub email: bool,
    #[serde(default)]
    pub name: bool,
    /// Asks for the customer's reference (submitted as `customerReference`).
    #[serde(default)]
    pub reference: bool,
}

impl From<CollectIo> for Collect {
    fn from(c: CollectIo) -> Self {
        Self { email: c.email, name: c.name, reference: c.reference }
    }
}

impl From<Collect> for CollectIo {
    fn from(c: Collect) -> Self {
        Self { email: c.email, name: c.name, reference: c.reference }
    }
}

/// A payment link's configuration: the body of `POST /v1/payment-links`, and (with `version`)
/// of `PATCH /v1/payment-links/{id}`, which replaces the whole configuration (an omitted
/// optional field is cleared).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PaymentLinkIn {
    /// PATCH only, required there: the link's current version.
    pub version: Option<i64>,
    /// 1-120 UTF-8 bytes.
    #[schema(min_length = 1, max_length = 120)]
    pub title: String,
    /// Up to 1000 UTF-8 bytes.
    #[schema(max_length = 1000)]
    pub description: Option<String>,
    /// `fixed` (with `amount`) or `customer_entered` (with `minimumAmount`, optional
    /// `maximumAmount`).
    #[schema(pattern = "^(fixed|customer_entered)$")]
    pub amount_type: String,
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$", example = "25.00")]
    pub amount: Option<String>,
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub minimum_amount: Option<String>,
    /// At most 1000000.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub maximum_amount: Option<String>,
    /// The mode's settlement token (USDC or USDT); omitted: that token.
    pub currency_code: Option<String>,
    /// `test` or `live`; must be the key's mode.
    pub mode: Option<String>,
    /// `single_use` or `reusable` (default).
    pub usage_type: Option<String>,
    /// RFC 3339; before it the link does not accept submissions.
    pub active_at: Option<String>,
    /// RFC 3339, in the future and later than `activeAt`.
    pub expires_at: Option<String>,
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_object")]
    pub collect: Option<CollectIo>,
    /// Up to 50 letters, digits, underscores or hyphens; starts each invoice's external
    /// reference.
    #[schema(max_length = 50, pattern = "^[A-Za-z0-9_-]+$")]
    pub reference_prefix: Option<String>,
    /// Where the checkout returns after payment (live mode: https on the reviewed website).
    #[schema(max_length = 2048)]
    pub success_url: Option<String>,
    #[schema(max_length = 2048)]
    pub cancel_url: Option<String>,
    /// Up to 500 UTF-8 bytes, shown after payment.
    #[schema(max_length = 500)]
    pub success_message: Option<String>,
    /// A JSON object up to 16 KiB; never shown publicly, copied to each invoice.
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

fn amount_field(field: &str, text: &Option<String>) -> Result<Option<stablepay_domain::money::Amount>, ApiError> {
    text.as_deref().map(|t| fields::amount(field, t, false)).transpose()
}

impl PaymentLinkIn {
    /// The domain's input (every failure names its field).
    pub fn into_input(self) -> Result<LinkInput, ApiError> {
        let mode = self
            .mode
            .as_deref()
            .map(|m| Mode::parse(m).ok_or_else(|| ApiError::validation("mode", "mode must be test or live.")))
            .transpose()?;
        Ok(LinkInput {
            title: Some(self.title),
            description: self.description,
            amount_type: Some(
                AmountType::parse(&self.amount_type)
                    .ok_or_else(|| DomainError::validation("amount_type", "must be fixed or customer_entered"))?,
            ),
            amount: amount_field("amount", &self.amount)?,
            minimum_amount: amount_field("minimumAmount", &self.minimum_amount)?,
            maximum_amount: amount_field("maximumAmount", &self.maximum_amount)?,
            currency: fields::currency("currencyCode", &self.currency_code)?,
            mode,
            usage_type: self
                .usage_type
                .as_deref()
                .map(|u| {
                    Usage::parse(u)
                        .ok_or_else(|| DomainError::validation("usage_type", "must be single_use or reusable"))
                })
                .transpose()?,
            active_at: fields::date_time("activeAt", &self.active_at)?,
            expires_at: fields::date_time("expiresAt", &self.expires_at)?,
            collect: self.collect.unwrap_or_default().into(),
            reference_prefix: self.reference_prefix,
            success_url: fields::url("successUrl", &self.success_url)?,
            cancel_url: fields::url("cancelUrl", &self.cancel_url)?,
            success_message: self.success_message,
            metadata: fields::metadata("metadata", &self.metadata)?,
        })
    }
}

/// What both a merchant and a customer see of a link (the merchant's record and the public view
/// each add their own fields around it).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkDisplayOut {
    /// The id of the public page and routes (unguessable, separate from the internal `id`).
    pub public_id: String,
    /// `test` or `live` (test links take no real payment).
    pub mode: String,
    /// `active`, `paused`, `archived` (merchants only), `completed` (a paid single-use link) or
    /// `expired`.
    pub status: String,
    /// The configuration's version: PATCH needs it, a public submission sends it back.
    pub version: i64,
    pub title: String,
    pub description: Option<String>,
    /// `fixed` or `customer_entered`.
    pub amount_type: String,
    pub amount: Option<String>,
    pub minimum_amount: Option<String>,
    /// The link's maximum (publicly: or the service maximum, 1000000).
    pub maximum_amount: Option<String>,
    pub currency_code: String,
    /// `single_use` or `reusable`.
    pub usage_type: String,
    pub active_at: Option<String>,
    pub expires_at: Option<String>,
    pub collect: CollectIo,
    pub success_message: Option<String>,
}

impl LinkDisplayOut {
    /// `public`: a customer's view (an open maximum shows the service maximum).
    fn new(link: &PaymentLink, now: DateTime<Utc>, public: bool) -> Self {
        let c = &link.config;
        let (amount, minimum_amount, maximum_amount) = match &c.amount {
            AmountRule::Fixed(a) => (Some(a.to_string()), None, None),
            AmountRule::CustomerEntered { minimum, maximum } => {
                let open = public.then(|| MAX_CUSTOMER_AMOUNT.to_owned());
                (None, Some(minimum.to_string()), maximum.as_ref().map(ToString::to_string).or(open))
            }
        };
        Self {
            public_id: link.public_id.as_str().to_owned(),
            mode: link.scope.mode.as_str().into(),
            status: link.state_at(now).as_str().into(),
            version: link.version,
            title: c.title.clone(),
            description: c.description.clone(),
            amount_type: c.amount.type_str().into(),
            amount,
            minimum_amount,
            maximum_amount,
            currency_code: c.currency.symbol().into(),
            usage_type: c.usage.as_str().into(),
            active_at: c.active_at.map(timestamp),
            expires_at: c.expires_at.map(timestamp),
            collect: c.collect.into(),
            success_message: c.success_message.clone(),
        }
    }
}

/// A payment link, for its merchant.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PaymentLinkOut {
    pub id: String,
    /// The literal `payment_link`.
    pub object: String,
    #[serde(flatten)]
    pub display: LinkDisplayOut,
    /// The hosted link page to share.
    pub url: String,
    pub reference_prefix: Option<String>,
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Box<serde_json::value::RawValue>>,
    /// A single-use link's invoice: the one being paid (checkout open or partly paid), or the
    /// one that paid it.
    pub reserved_invoice_id: Option<String>,
    pub created_at: String,
    pub updated_at: String,
}

impl PaymentLinkOut {
    pub fn new(link: &PaymentLink, pages: &PublicPages, now: DateTime<Utc>) -> Result<Self, ApiError> {
        let c = &link.config;
        Ok(Self {
            id: link.id.to_string(),
            object: "payment_link".into(),
            display: LinkDisplayOut::new(link, now, false),
            url: pages.payment_link(&link.public_id),
            reference_prefix: c.reference_prefix.clone(),
            success_url: c.success_url.as_ref().map(ToString::to_string),
            cancel_url: c.cancel_url.as_ref().map(ToString::to_string),
            metadata: c.metadata.as_ref().map(crate::wire::invoices::output::metadata).transpose()?,
            reserved_invoice_id: link.reservation.as_ref().filter(|r| r.holds(now)).map(|r| r.invoice_id.to_string()),
            created_at: timestamp(link.created_at),
            updated_at: timestamp(link.updated_at),
        })
    }
}

/// The network a link settles on.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkOut {
    /// The literal `polygon`.
    pub name: String,
    /// 137.
    pub chain_id: u64,
}

/// What a customer may see of a link: its display configuration only (no settlement wallet,
/// token contract, metadata, return URLs, internal ids or counters).
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublicPaymentLinkOut {
    /// The literal `public_payment_link`.
    pub object: String,
    #[serde(flatten)]
    pub display: LinkDisplayOut,
    /// Whether a submission is accepted now (active, past `activeAt`, not reserved, and the
    /// merchant can take payments in the link's mode).
    pub accepting: bool,
    /// A single-use link held by another customer's open checkout.
    pub reserved: bool,
    pub merchant_name: String,
    pub network: NetworkOut,
}

impl PublicPaymentLinkOut {
    pub fn new(p: &PublicLink) -> Self {
        let (link, now) = (&p.link, p.now);
        let state = link.state_at(now);
        let reserved = link.reserved_at(now) && state == LinkState::Active;
        let started = link.config.active_at.is_none_or(|a| a <= now);
        Self {
            object: "public_payment_link".into(),
            display: LinkDisplayOut::new(link, now, true),
            accepting: state == LinkState::Active && started && !reserved && p.available,
            reserved,
            merchant_name: p.merchant_name.clone(),
            network: NetworkOut { name: "polygon".into(), chain_id: POLYGON_CHAIN_ID },
        }
    }
}

/// `POST /v1/public/payment-links/{publicId}/checkout` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkCheckoutIn {
    /// The version the page showed.
    pub version: i64,
    /// customer_entered links only: between the link's minimum and maximum.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: Option<String>,
    /// When the link collects it.
    pub email: Option<String>,
    /// When the link collects it (up to 200 bytes).
    #[schema(max_length = 200)]
    pub name: Option<String>,
    /// When the link collects a reference (up to 200 bytes).
    #[schema(max_length = 200)]
    pub customer_reference: Option<String>,
}

impl LinkCheckoutIn {
    pub fn into_submission(self) -> Result<LinkSubmission, ApiError> {
        Ok(LinkSubmission {
            version: self.version,
            amount: amount_field("amount", &self.amount)?,
            email: self.email,
            name: self.name,
            customer_reference: self.customer_reference,
        })
    }
}

/// What a public submission created.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkCheckoutOut {
    pub invoice_id: String,
    pub checkout_session_id: String,
    /// The hosted checkout page to pay on.
    pub checkout_url: String,
    pub expires_at: String,
}

impl LinkCheckoutOut {
    pub fn new(created: &LinkCheckout, pages: &PublicPages) -> Self {
        Self {
            invoice_id: created.invoice_id.to_string(),
            checkout_session_id: created.checkout_session_id.to_string(),
            checkout_url: pages.checkout(&created.checkout_session_id),
            expires_at: timestamp(created.expires_at),
        }
    }
}

envelope!(/// A payment link.
    PaymentLinkEnvelope, PaymentLinkOut);
envelope!(/// A page of payment links.
    PaymentLinkListEnvelope, ListOut<PaymentLinkOut>);
envelope!(/// A payment link's public view.
    PublicPaymentLinkEnvelope, PublicPaymentLinkOut);
envelope!(/// The checkout a submission created.
    LinkCheckoutEnvelope, LinkCheckoutOut);
