//! Field parsers shared by the request bodies: each turns a wire value into a domain value or
//! an error naming the field.

use chrono::{DateTime, Utc};
use serde_json::Value;
use stablepay_domain::invoice::model::{MAX_METADATA_BYTES, Metadata};
use stablepay_domain::merchant::model::Token;
use stablepay_domain::money::{Amount, Decimal6, DecimalError};
use stablepay_domain::url::HttpUrl;
use stablepay_http::error::{ApiError, ErrorCode};

/// Parses a decimal string (INVALID_AMOUNT naming `field`).
pub fn amount(field: &str, text: &str, positive: bool) -> Result<Amount, ApiError> {
    let parsed = if positive { Decimal6::parse_positive(text) } else { Decimal6::parse(text) };
    parsed.map_err(|e: DecimalError| ApiError::field(ErrorCode::INVALID_AMOUNT, field, format!("{field} {e}.")))
}

pub fn url(field: &str, text: &Option<String>) -> Result<Option<HttpUrl>, ApiError> {
    text.as_deref()
        .map(|t| HttpUrl::parse(t).map_err(|e| ApiError::validation(field, format!("{field} {e}."))))
        .transpose()
}

/// A leap second (`23:59:60`, which chrono keeps as a second past :59) as the second after it,
/// so that every time the service renders is an ordinary RFC 3339 time.
fn without_leap_second(d: DateTime<Utc>) -> Option<DateTime<Utc>> {
    use chrono::Timelike;
    let nanos = d.nanosecond();
    if nanos < 1_000_000_000 {
        return Some(d);
    }
    d.with_nanosecond(nanos - 1_000_000_000)?.checked_add_signed(chrono::TimeDelta::seconds(1))
}

/// An RFC 3339 timestamp in UTC between the years 1970 and 9999 (a later one, once in UTC,
/// would not read back as RFC 3339).
pub fn date_time(field: &str, text: &Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    use chrono::Datelike;
    text.as_deref()
        .map(|t| {
            DateTime::parse_from_rfc3339(t)
                .map(|d| d.with_timezone(&Utc))
                .ok()
                .and_then(without_leap_second)
                .filter(|d| (1970..=9999).contains(&d.year()))
                .ok_or_else(|| {
                    ApiError::validation(field, format!("{field} must be an RFC 3339 timestamp between 1970 and 9999."))
                })
        })
        .transpose()
}

/// A JSON object of at most 16 KiB (compact form).
pub fn metadata(field: &str, value: &Option<Value>) -> Result<Option<Metadata>, ApiError> {
    match value {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(_)) => {
            let text = value.as_ref().map(Value::to_string).unwrap_or_default();
            if text.len() > MAX_METADATA_BYTES {
                return Err(ApiError::validation(field, "metadata must be at most 16 KiB."));
            }
            Ok(Some(Metadata::from_json_object_text(text)))
        }
        Some(_) => Err(ApiError::validation(field, "metadata must be a JSON object.")),
    }
}

pub fn currency(field: &str, text: &Option<String>) -> Result<Option<Token>, ApiError> {
    text.as_deref()
        .map(|t| {
            Token::parse(t).ok_or_else(|| {
                ApiError::field(
                    ErrorCode::CURRENCY_MISMATCH,
                    field,
                    "currencyCode must be the mode's settlement token (USDC or USDT).",
                )
            })
        })
        .transpose()
}
