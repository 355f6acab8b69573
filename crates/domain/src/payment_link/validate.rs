//! The configuration rules of a payment link (the spec's "Payment link" fields). Each failure
//! names its field (snake case, as every domain error).

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::invoice::model::Metadata;
use crate::invoice::validate::{check_len, check_metadata};
use crate::merchant::{Merchant, Token};
use crate::mode::{Mode, Scope};
use crate::money::{Amount, Decimal6};
use crate::payment_link::model::{
    AmountRule, Collect, LinkConfig, MAX_CUSTOMER_AMOUNT, MAX_DESCRIPTION_BYTES, MAX_REFERENCE_PREFIX_CHARS,
    MAX_SUCCESS_MESSAGE_BYTES, MAX_TITLE_BYTES, Usage,
};
use crate::url::HttpUrl;

/// A link's configuration as sent (creation, and the complete configuration of a PATCH).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkInput {
    pub title: Option<String>,
    pub description: Option<String>,
    pub amount_type: Option<String>,
    pub amount: Option<Amount>,
    pub minimum_amount: Option<Amount>,
    pub maximum_amount: Option<Amount>,
    pub currency: Option<Token>,
    pub mode: Option<Mode>,
    pub usage_type: Option<String>,
    pub active_at: Option<DateTime<Utc>>,
    pub expires_at: Option<DateTime<Utc>>,
    pub collect: Collect,
    pub reference_prefix: Option<String>,
    pub success_url: Option<HttpUrl>,
    pub cancel_url: Option<HttpUrl>,
    pub success_message: Option<String>,
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
    match input.amount_type.as_deref() {
        None => Err(Error::validation("amount_type", "is required: fixed or customer_entered")),
        Some("fixed") => {
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
        Some("customer_entered") => {
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
        Some(_) => Err(Error::validation("amount_type", "must be fixed or customer_entered")),
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
    let usage = match input.usage_type.as_deref() {
        None => Usage::Reusable,
        Some(u) => Usage::parse(u).ok_or_else(|| Error::validation("usage_type", "must be single_use or reusable"))?,
    };
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
