//! Invoice request bodies: creation (itemized or amount-only), the draft's PATCH, issue, the
//! collection actions and refund references.

use serde::Deserialize;
use serde_json::{Map, Value};
use stablepay_domain::invoice::input::AmountOnlyInput;
use stablepay_domain::invoice::model::{Customer, InvoiceContent, LineItem, TaxLine};
use stablepay_domain::invoice::payment::TxHash;
use stablepay_domain::invoice::totals::Discount;
use stablepay_domain::invoice::validate::{DraftInput, ReminderInput};
use stablepay_domain::merchant::model::WalletAddress;
use stablepay_domain::money::Percentage;
use stablepay_http::error::{ApiError, ErrorCode};
use utoipa::ToSchema;

use crate::json::from_value;
use crate::wire::fields::{amount, currency, date_time, metadata, url};

/// A line item.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LineIn {
    #[schema(max_length = 100)]
    pub id: Option<String>,
    #[schema(max_length = 100)]
    pub sku: Option<String>,
    /// 1-500 UTF-8 bytes.
    pub description: String,
    /// Positive decimal string.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$", example = "2")]
    pub quantity: String,
    /// Non-negative decimal string.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$", example = "12.50")]
    pub unit_amount: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CustomerIn {
    pub name: Option<String>,
    pub company: Option<String>,
    pub email: Option<String>,
    pub billing_address: Option<String>,
}

/// `{type: fixed, amount}` or `{type: percentage, percentage}`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DiscountIn {
    /// `fixed` or `percentage`.
    #[serde(rename = "type")]
    pub kind: String,
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: Option<String>,
    /// Decimal string 0-100.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub percentage: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TaxIn {
    pub id: Option<String>,
    /// 1-120 bytes.
    pub label: String,
    /// Non-negative decimal string.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: String,
    pub jurisdiction: Option<String>,
    pub registration_reference: Option<String>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReminderIn {
    pub enabled: Option<bool>,
    pub days_before_due: Option<Vec<i64>>,
    pub on_due: Option<bool>,
    pub days_after_due: Option<Vec<i64>>,
}

/// The itemized fields of an invoice: the one field list of creation (with `issue`, `send`)
/// and of a draft replacement (with `version`).
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ItemizedIn {
    /// 1-100 items.
    #[serde(deserialize_with = "crate::wire::strict_objects::objects")]
    pub lines: Vec<LineIn>,
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_object")]
    pub customer: Option<CustomerIn>,
    /// Null or omitted: no discount.
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_object")]
    pub discount: Option<DiscountIn>,
    /// Up to 100 tax lines.
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_objects")]
    pub taxes: Option<Vec<TaxIn>>,
    /// USDC or USDT; must be the mode's settlement token.
    pub currency_code: Option<String>,
    /// RFC 3339 collection deadline.
    pub due_at: Option<String>,
    #[schema(minimum = 5, maximum = 1440)]
    pub checkout_expires_in_minutes: Option<i64>,
    pub payment_terms: Option<String>,
    pub memo: Option<String>,
    pub footer: Option<String>,
    pub purchase_order_number: Option<String>,
    pub external_reference: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
    pub success_url: Option<String>,
    pub cancel_url: Option<String>,
    #[serde(default, deserialize_with = "crate::wire::strict_objects::opt_object")]
    pub reminder_schedule: Option<ReminderIn>,
}

/// `POST /v1/invoices` itemized form: the itemized fields, plus `issue` and `send`. (Its schema
/// is `ItemizedIn`'s object with those two properties added: one closed object.)
pub struct ItemizedCreateIn;

/// `POST /v1/invoices` legacy amount-only form.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AmountOnlyIn {
    /// Positive decimal string.
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: String,
    pub external_reference: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<Value>,
}

/// `POST /v1/invoices` body: the itemized form (`lines` plus optional fields) or the legacy
/// amount-only form (`amount`, `externalReference`, `metadata`).
#[derive(ToSchema)]
#[serde(untagged)]
#[allow(dead_code)] // documentation only: the body is parsed by `invoice_form`
pub enum InvoiceCreate {
    Itemized(ItemizedCreateIn),
    AmountOnly(AmountOnlyIn),
}

/// `PATCH /v1/invoices/{id}` body: the current version and the complete replacement of the
/// draft's editable fields (omitted fields are cleared). Its schema is `ItemizedIn`'s object
/// with `version` added.
pub struct InvoicePatch;

/// `ItemizedIn`'s schema object with `extra` properties added (required when so marked).
fn itemized_with(
    description: &str,
    extra: Vec<(&str, utoipa::openapi::RefOr<utoipa::openapi::Schema>, bool)>,
) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    use utoipa::PartialSchema;
    use utoipa::openapi::{RefOr, Schema};
    let mut schema = ItemizedIn::schema();
    if let RefOr::T(Schema::Object(object)) = &mut schema {
        object.description = Some(description.to_owned());
        for (name, property, required) in extra {
            object.properties.insert(name.to_owned(), property);
            if required {
                object.required.push(name.to_owned());
            }
        }
    }
    schema
}

fn boolean(description: &str) -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::Boolean)
        .description(Some(description))
        .into()
}

impl utoipa::PartialSchema for ItemizedCreateIn {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        itemized_with(
            "The itemized form of POST /v1/invoices: lines plus optional fields, issue and send.",
            vec![
                ("issue", boolean("Issue immediately (default false)."), false),
                ("send", boolean("Send on issue; requires issue=true and a customer email."), false),
            ],
        )
    }
}

impl ToSchema for ItemizedCreateIn {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        ItemizedIn::schemas(schemas);
    }
}

impl utoipa::PartialSchema for InvoicePatch {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::Schema> {
        let version = utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::Integer)
            .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(utoipa::openapi::KnownFormat::Int64)))
            .description(Some("The invoice's current version."));
        itemized_with(
            "PATCH /v1/invoices/{id}: the current version and the complete replacement of the draft's fields.",
            vec![("version", version.into(), true)],
        )
    }
}

impl ToSchema for InvoicePatch {
    fn schemas(schemas: &mut Vec<(String, utoipa::openapi::RefOr<utoipa::openapi::Schema>)>) {
        ItemizedIn::schemas(schemas);
    }
}

/// The two creation forms.
pub enum InvoiceForm {
    Itemized { input: Box<DraftInput>, issue: bool, send: bool },
    AmountOnly(AmountOnlyInput),
}

fn object(body: Value) -> Result<Map<String, Value>, ApiError> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::validation("body", "A JSON object body is required.")),
    }
}

/// Removes `name` from `map`: absent or null is `None`, otherwise it must be a boolean.
fn take_bool(map: &mut Map<String, Value>, name: &str) -> Result<Option<bool>, ApiError> {
    match map.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(ApiError::validation(name, format!("{name} must be a boolean."))),
    }
}

/// Parses a `POST /v1/invoices` body into its form. A body with `amount` is the amount-only
/// form; any other is itemized.
pub fn invoice_form(body: Value) -> Result<InvoiceForm, ApiError> {
    let mut map = object(body)?;
    match (map.contains_key("amount"), map.contains_key("lines")) {
        (true, true) => Err(ApiError::validation(
            "amount",
            "Send either amount (amount-only form) or lines (itemized form), not both.",
        )),
        (true, false) => {
            let input: AmountOnlyIn = from_value(Value::Object(map)).map_err(|mut e| {
                if let Some(field) = e.details().and_then(|d| d["field"].as_str()).map(str::to_owned)
                    && e.message.starts_with("Unknown field")
                {
                    e.message =
                        format!("{field} is not part of the amount-only form (amount, externalReference, metadata).");
                }
                e
            })?;
            Ok(InvoiceForm::AmountOnly(AmountOnlyInput {
                amount: Some(amount("amount", &input.amount, true)?),
                external_reference: input.external_reference,
                metadata: metadata("metadata", &input.metadata)?,
            }))
        }
        (false, _) => {
            let issue = take_bool(&mut map, "issue")?.unwrap_or(false);
            let send = take_bool(&mut map, "send")?.unwrap_or(false);
            let fields: ItemizedIn = from_value(Value::Object(map))?;
            Ok(InvoiceForm::Itemized { input: Box::new(fields.try_into()?), issue, send })
        }
    }
}

/// Parses a `PATCH /v1/invoices/{id}` body: the version and the replacement fields.
pub fn invoice_patch(body: Value) -> Result<(i64, DraftInput), ApiError> {
    let mut map = object(body)?;
    let version = match map.remove("version") {
        None => return Err(ApiError::validation("version", "version is required.")),
        Some(v) => crate::json::from_value::<i64>(v)
            .map_err(|_| ApiError::validation("version", "version must be an integer."))?,
    };
    let fields: ItemizedIn = from_value(Value::Object(map))?;
    Ok((version, fields.try_into()?))
}

impl TryFrom<ItemizedIn> for DraftInput {
    type Error = ApiError;

    fn try_from(b: ItemizedIn) -> Result<Self, ApiError> {
        let lines = b
            .lines
            .into_iter()
            .enumerate()
            .map(|(i, l)| {
                Ok(LineItem {
                    quantity: amount(&format!("lines[{i}].quantity"), &l.quantity, true)?,
                    unit_amount: amount(&format!("lines[{i}].unitAmount"), &l.unit_amount, false)?,
                    id: l.id,
                    sku: l.sku,
                    description: l.description,
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let taxes = b
            .taxes
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(i, t)| {
                Ok(TaxLine {
                    amount: amount(&format!("taxes[{i}].amount"), &t.amount, false)?,
                    id: t.id,
                    label: t.label,
                    jurisdiction: t.jurisdiction,
                    registration_reference: t.registration_reference,
                })
            })
            .collect::<Result<Vec<_>, ApiError>>()?;
        let content = InvoiceContent {
            lines,
            customer: b.customer.map(Customer::from),
            discount: b.discount.map(Discount::try_from).transpose()?,
            taxes,
            due_at: date_time("dueAt", &b.due_at)?,
            payment_terms: b.payment_terms,
            memo: b.memo,
            footer: b.footer,
            purchase_order_number: b.purchase_order_number,
            external_reference: b.external_reference,
            metadata: metadata("metadata", &b.metadata)?,
            success_url: url("successUrl", &b.success_url)?,
            cancel_url: url("cancelUrl", &b.cancel_url)?,
        };
        Ok(DraftInput {
            content,
            currency: currency("currencyCode", &b.currency_code)?,
            checkout_expires_in_minutes: b.checkout_expires_in_minutes,
            reminder_schedule: b.reminder_schedule.map(ReminderInput::from),
        })
    }
}

impl From<CustomerIn> for Customer {
    fn from(c: CustomerIn) -> Self {
        Customer { name: c.name, company: c.company, email: c.email, billing_address: c.billing_address }
    }
}

impl From<ReminderIn> for ReminderInput {
    fn from(r: ReminderIn) -> Self {
        ReminderInput {
            enabled: r.enabled,
            days_before_due: r.days_before_due,
            on_due: r.on_due,
            days_after_due: r.days_after_due,
        }
    }
}

impl TryFrom<DiscountIn> for Discount {
    type Error = ApiError;

    fn try_from(d: DiscountIn) -> Result<Self, ApiError> {
        match (d.kind.as_str(), d.amount, d.percentage) {
            ("fixed", Some(a), None) => Ok(Discount::Fixed(amount("discount.amount", &a, false)?)),
            ("percentage", None, Some(p)) => Percentage::parse(&p).map(Discount::Percentage).map_err(|e| {
                ApiError::field(ErrorCode::INVALID_AMOUNT, "discount.percentage", format!("discount.percentage {e}."))
            }),
            ("fixed", _, _) => {
                Err(ApiError::validation("discount.amount", "A fixed discount needs amount (and no percentage)."))
            }
            ("percentage", _, _) => Err(ApiError::validation(
                "discount.percentage",
                "A percentage discount needs percentage (and no amount).",
            )),
            _ => Err(ApiError::validation("discount.type", "discount.type must be fixed or percentage.")),
        }
    }
}

/// `POST /v1/invoices/{id}/issue` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct IssueIn {
    /// The invoice's current version.
    pub version: i64,
    /// Send the invoice by email on issue (needs a customer email).
    pub send: Option<bool>,
}

/// Body of void, void-remaining and mark-uncollectible.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReasonIn {
    /// Why (1-500 bytes); kept on the invoice and in its activity.
    pub reason: String,
}

/// `POST /v1/invoices/{id}/refund-references` body.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RefundIn {
    /// The payment refunded (one of the invoice's `pay_` ids).
    #[schema(example = "pay_4kQ8nX2mB7vR9sT1wY3zA5")]
    pub payment_id: String,
    #[schema(pattern = r"^[0-9]+(\.[0-9]{1,6})?$")]
    pub amount: String,
    pub reason: String,
    /// The refund transfer's hash (0x + 64 hex).
    pub external_transaction_hash: String,
    /// 137 (another chain is INVALID_DEPOSIT_NETWORK).
    #[schema(example = 137)]
    pub chain_id: i64,
    /// The token's contract: the invoice's settlement token.
    #[schema(example = "0x3c499c542cEF5E3811e1192ce70d8cC03d5c3359")]
    pub token_contract: String,
}

impl RefundIn {
    pub fn into_domain(self) -> Result<stablepay_domain::invoice::input::RefundInput, ApiError> {
        Ok(stablepay_domain::invoice::input::RefundInput {
            payment_id: stablepay_domain::ids::PaymentId::parse(&self.payment_id)
                .ok_or_else(|| ApiError::validation("paymentId", "Not a payment id."))?,
            amount: amount("amount", &self.amount, true)?,
            reason: self.reason,
            external_transaction_hash: TxHash::parse(&self.external_transaction_hash).ok_or_else(|| {
                ApiError::field(
                    ErrorCode::INVALID_TX_HASH,
                    "externalTransactionHash",
                    "Must be 0x followed by 64 hexadecimal digits.",
                )
            })?,
            chain_id: u64::try_from(self.chain_id)
                .map_err(|_| ApiError::field(ErrorCode::INVALID_DEPOSIT_NETWORK, "chainId", "chainId must be 137."))?,
            token_contract: WalletAddress::parse(&self.token_contract).map_err(|e| {
                ApiError::field(ErrorCode::INVALID_WALLET_ADDRESS, "tokenContract", format!("tokenContract {e}."))
            })?,
        })
    }
}
