//! The configuration rules of a payment link (the spec's "Payment link" fields). Each failure
//! names its field (snake case, as every domain error).

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::invoice::model::Metadata;
use crate::invoice::validate::{check_len, check_metadata};
use crate::merchant::model::{Merchant, Token};
use crate::mode::{Mode, Scope};
use crate::money::{Amount, Decimal6};
use crate::payment_link::model::{
    AmountRule, AmountType, Collect, LinkConfig, MAX_CUSTOMER_AMOUNT, MAX_DESCRIPTION_BYTES,
    MAX_REFERENCE_PREFIX_CHARS, MAX_SUCCESS_MESSAGE_BYTES, MAX_TITLE_BYTES, Usage,
};
use crate::url::HttpUrl;

/// A link's configuration as sent (creation, and the complete configuration of a PATCH).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkInput {
    /// 1-120 UTF-8 bytes, not blank (required).
    pub title: Option<String>,
    /// Up to 1000 UTF-8 bytes.
    pub description: Option<String>,
    /// Fixed or customer-entered (required).
    pub amount_type: Option<AmountType>,
    /// The fixed amount (fixed links only, required there).
    pub amount: Option<Amount>,
    /// The lowest amount a customer may enter (customer-entered links only, required there).
    pub minimum_amount: Option<Amount>,
    /// The highest amount a customer may enter (customer-entered links; the service's limit applies
    /// too).
    pub maximum_amount: Option<Amount>,
    /// The settlement token; must be the mode's.
    pub currency: Option<Token>,
    /// Must equal the key's mode when given.
    pub mode: Option<Mode>,
    /// Single-use or reusable (the default).
    pub usage_type: Option<Usage>,
    /// Before it the link takes no submissions.
    pub active_at: Option<DateTime<Utc>>,
    /// In the future and later than `active_at`; the link expires then.
    pub expires_at: Option<DateTime<Utc>>,
    /// Which customer fields the public page requires.
    pub collect: Collect,
    /// Up to 50 letters, digits, underscores or hyphens; starts each invoice's external reference.
    pub reference_prefix: Option<String>,
    /// Where the checkout returns after payment (live mode: https on the reviewed website).
    pub success_url: Option<HttpUrl>,
    /// Where the checkout returns when the customer cancels.
    pub cancel_url: Option<HttpUrl>,
    /// Up to 500 UTF-8 bytes, shown after payment.
    pub success_message: Option<String>,
    /// Copied to each invoice; never shown publicly.
    pub metadata: Option<Metadata>,
}

fn positive(field: &str, amount: &Amount) -> Result<(), Error> {
    if amount.is_zero() {
        return Err(Error::invalid_amount(field, "must be greater than zero"));
    }
    Ok(())
}

fn not_for(field: &str, kind: &str) -> Error {
    Error::validation(field, format!("is not used by {kind} links"))
}

fn amount_rule(input: &LinkInput) -> Result<AmountRule, Error> {
    let ceiling = Decimal6::parse(MAX_CUSTOMER_AMOUNT).map_err(|e| Error::Internal(e.to_string()))?;
    match input.amount_type {
        None => Err(Error::validation("amount_type", "is required: fixed or customer_entered")),
        Some(AmountType::Fixed) => {
            if input.minimum_amount.is_some() {
                return Err(not_for("minimum_amount", "fixed"));
            }
            if input.maximum_amount.is_some() {
                return Err(not_for("maximum_amount", "fixed"));
            }
            let amount =
                input.amount.clone().ok_or_else(|| Error::validation("amount", "is required for fixed links"))?;
            positive("amount", &amount)?;
            Ok(AmountRule::Fixed(amount))
        }
        Some(AmountType::CustomerEntered) => {
            if input.amount.is_some() {
                return Err(not_for("amount", "customer_entered"));
            }
            let minimum = input
                .minimum_amount
                .clone()
                .ok_or_else(|| Error::validation("minimum_amount", "is required for customer_entered links"))?;
            positive("minimum_amount", &minimum)?;
            if let Some(maximum) = &input.maximum_amount {
                if *maximum > ceiling {
                    return Err(Error::invalid_amount(
                        "maximum_amount",
                        format!("must be at most {MAX_CUSTOMER_AMOUNT}"),
                    ));
                }
                if minimum > *maximum {
                    return Err(Error::invalid_amount("minimum_amount", "must not exceed maximum_amount"));
                }
            } else if minimum > ceiling {
                return Err(Error::invalid_amount("minimum_amount", format!("must be at most {MAX_CUSTOMER_AMOUNT}")));
            }
            Ok(AmountRule::CustomerEntered { minimum, maximum: input.maximum_amount.clone() })
        }
    }
}

/// In live mode a return URL must be https on the merchant's reviewed website.
fn return_url(field: &str, url: &Option<HttpUrl>, merchant: &Merchant, scope: &Scope) -> Result<(), Error> {
    let Some(url) = url else { return Ok(()) };
    if scope.mode == Mode::Live {
        if !url.is_https() {
            return Err(Error::validation(field, "must be https in live mode"));
        }
        if merchant.website_origin.as_deref() != Some(url.origin()) {
            return Err(Error::validation(field, "must be on the merchant's reviewed website origin in live mode"));
        }
    }
    Ok(())
}

/// Checks `input` for a link of `merchant` in `scope` at `now`.
pub fn config(input: LinkInput, merchant: &Merchant, scope: &Scope, now: DateTime<Utc>) -> Result<LinkConfig, Error> {
    let title = input.title.clone().ok_or_else(|| Error::validation("title", "is required"))?;
    check_len("title", &title, 1, MAX_TITLE_BYTES)?;
    if title.trim().is_empty() {
        return Err(Error::validation("title", "must not be blank"));
    }
    if let Some(d) = &input.description {
        check_len("description", d, 0, MAX_DESCRIPTION_BYTES)?;
    }
    if input.mode.is_some_and(|m| m != scope.mode) {
        return Err(Error::ModeFieldMismatch { field: "mode".into() });
    }
    let amount = amount_rule(&input)?;
    let token = merchant.settlement(scope.mode)?.token;
    let currency = input.currency.unwrap_or(token);
    if currency != token {
        return Err(Error::CurrencyMismatch {
            field: "currency".into(),
            message: format!("{} links settle in {}", scope.mode.as_str(), token.symbol()),
        });
    }
    let usage = input.usage_type.unwrap_or(Usage::Reusable);
    if let Some(expires) = input.expires_at {
        if expires <= now {
            return Err(Error::validation("expires_at", "must be in the future"));
        }
        if input.active_at.is_some_and(|a| expires <= a) {
            return Err(Error::validation("expires_at", "must be later than active_at"));
        }
    }
    if let Some(prefix) = &input.reference_prefix {
        let ok = !prefix.is_empty()
            && prefix.chars().count() <= MAX_REFERENCE_PREFIX_CHARS
            && prefix.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !ok {
            return Err(Error::validation(
                "reference_prefix",
                format!("must be 1-{MAX_REFERENCE_PREFIX_CHARS} letters, digits, underscores or hyphens"),
            ));
        }
    }
    return_url("success_url", &input.success_url, merchant, scope)?;
    return_url("cancel_url", &input.cancel_url, merchant, scope)?;
    if let Some(m) = &input.success_message {
        check_len("success_message", m, 0, MAX_SUCCESS_MESSAGE_BYTES)?;
    }
    check_metadata("metadata", &input.metadata)?;
    Ok(LinkConfig {
        title,
        description: input.description,
        amount,
        currency,
        usage,
        active_at: input.active_at,
        expires_at: input.expires_at,
        collect: input.collect,
        reference_prefix: input.reference_prefix,
        success_url: input.success_url,
        cancel_url: input.cancel_url,
        success_message: input.success_message,
        metadata: input.metadata,
    })
}
