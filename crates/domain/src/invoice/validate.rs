//! The creation and draft-replacement rules of the spec's invoice table. The HTTP adapter
//! parses types (decimal strings, URLs, timestamps); these rules decide the rest, so admin
//! tooling gets the same answers.

use chrono::{DateTime, Utc};

use crate::error::Error;
use crate::invoice::checkout::{DEFAULT_EXPIRY_MINUTES, MAX_EXPIRY_MINUTES, MIN_EXPIRY_MINUTES};
use crate::invoice::model::{
    InvoiceContent, InvoiceFields, MAX_METADATA_BYTES, MAX_METADATA_DEPTH, Metadata, ReminderSchedule,
};
use crate::invoice::totals::{PricedLine, Totals, compute_totals};
use crate::merchant::model::Token;
use crate::money::Amount;

/// A reminder schedule as given.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReminderInput {
    /// Whether reminders are sent (requires a due date when true).
    pub enabled: Option<bool>,
    /// Days before the due date to remind (each 1-30).
    pub days_before_due: Option<Vec<i64>>,
    /// Whether to remind on the due date.
    pub on_due: Option<bool>,
    /// Days after the due date to remind (each 1-30).
    pub days_after_due: Option<Vec<i64>>,
}

/// An itemized invoice as given: its content (types parsed, rules not yet checked) and the
/// settings the service settles (token, checkout expiry, reminder schedule).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DraftInput {
    /// The commercial content: lines, customer, discount, taxes, texts, references.
    pub content: InvoiceContent,
    /// The settlement token; omitted: the mode's token.
    pub currency: Option<Token>,
    /// How long each checkout of the invoice stays open (5-1440 minutes, default 30).
    pub checkout_expires_in_minutes: Option<i64>,
    /// The reminder schedule, if any.
    pub reminder_schedule: Option<ReminderInput>,
}

/// The most line items an invoice has.
pub const MAX_LINES: usize = 100;
/// The most tax lines an invoice has.
pub const MAX_TAX_LINES: usize = 100;
/// The longest external reference, in UTF-8 bytes.
pub const MAX_EXTERNAL_REFERENCE_BYTES: usize = 255;
/// The longest line description, in UTF-8 bytes.
pub const MAX_LINE_DESCRIPTION_BYTES: usize = 500;
/// The longest line id, in UTF-8 bytes.
pub const MAX_LINE_ID_BYTES: usize = 100;
/// The longest SKU, in UTF-8 bytes.
pub const MAX_SKU_BYTES: usize = 100;
/// The longest customer name (and company), in UTF-8 bytes.
pub const MAX_CUSTOMER_NAME_BYTES: usize = 200;
/// The longest email address, in UTF-8 bytes.
pub const MAX_EMAIL_BYTES: usize = 320;
/// The longest billing address, in UTF-8 bytes.
pub const MAX_BILLING_ADDRESS_BYTES: usize = 1000;
/// The longest tax label (and tax id, jurisdiction and registration reference), in UTF-8 bytes.
pub const MAX_TAX_FIELD_BYTES: usize = 120;
/// The longest payment terms, in UTF-8 bytes.
pub const MAX_PAYMENT_TERMS_BYTES: usize = 4000;
/// The longest memo (and footer), in UTF-8 bytes.
pub const MAX_MEMO_BYTES: usize = 2000;
/// The longest purchase order number, in UTF-8 bytes.
pub const MAX_PURCHASE_ORDER_BYTES: usize = 100;
/// The furthest reminder offset, in days before or after the due date (the nearest is 1).
pub const MAX_REMINDER_DAYS: u8 = 30;
/// The most reminder offsets of a schedule, before and after the due date together.
pub const MAX_REMINDER_OFFSETS: usize = 6;

/// Refuses a string over `max` UTF-8 bytes (or empty, when `min` is 1), or one whose direction
/// controls are unpaired ([`crate::text::check_bidi`]).
pub fn check_len(field: &str, value: &str, min: usize, max: usize) -> Result<(), Error> {
    if value.len() < min || value.len() > max {
        let rule = if min > 0 {
            format!("must be {min}-{max} UTF-8 bytes")
        } else {
            format!("must be at most {max} UTF-8 bytes")
        };
        return Err(Error::validation(field, rule));
    }
    crate::text::check_bidi(field, value)
}

fn check_opt(field: &str, value: &Option<String>, max: usize) -> Result<(), Error> {
    value.as_deref().map_or(Ok(()), |v| check_len(field, v, 0, max))
}

/// A name or other one-line value: no control characters (a line break in a name would end up
/// in an email header or a fake line of a message).
pub fn check_one_line(field: &str, value: &str) -> Result<(), Error> {
    if value.chars().any(char::is_control) {
        return Err(Error::validation(field, "must not contain control characters (line breaks, tabs)"));
    }
    crate::text::check_bidi(field, value)
}

fn check_opt_name(field: &str, value: &Option<String>, max: usize) -> Result<(), Error> {
    check_opt(field, value, max)?;
    value.as_deref().map_or(Ok(()), |v| check_one_line(field, v))
}

/// A plausible email: one `@`, a non-empty local part, a dotted domain, no spaces.
pub fn is_valid_email(value: &str) -> bool {
    let Some((local, domain)) = value.split_once('@') else {
        return false;
    };
    !local.is_empty()
        && !domain.contains('@')
        && domain.contains('.')
        && !domain.starts_with('.')
        && !domain.ends_with('.')
        && !value.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// Refuses an email address over 320 bytes or not plausible ([`is_valid_email`]).
pub fn check_email(field: &str, value: &str) -> Result<(), Error> {
    check_len(field, value, 1, MAX_EMAIL_BYTES)?;
    if !is_valid_email(value) {
        return Err(Error::validation(field, "must be a valid email address"));
    }
    Ok(())
}

/// The checkout expiry in minutes: 5-1440, default 30 (INVALID_EXPIRY otherwise).
pub fn expiry_minutes(field: &str, value: Option<i64>) -> Result<u32, Error> {
    match value {
        None => Ok(DEFAULT_EXPIRY_MINUTES),
        Some(v) => {
            u32::try_from(v).ok().filter(|m| (MIN_EXPIRY_MINUTES..=MAX_EXPIRY_MINUTES).contains(m)).ok_or_else(|| {
                Error::InvalidExpiry { field: field.into(), message: "must be an integer from 5 to 1440".into() }
            })
        }
    }
}

/// Refuses metadata over 16 KiB.
pub fn check_metadata(field: &str, metadata: &Option<Metadata>) -> Result<(), Error> {
    match metadata {
        Some(m) if m.as_str().len() > MAX_METADATA_BYTES => Err(Error::validation(field, "must be at most 16 KiB")),
        Some(m) if json_depth(m.as_str()) > MAX_METADATA_DEPTH => Err(Error::validation(
            field,
            format!("must nest objects and arrays at most {MAX_METADATA_DEPTH} levels deep"),
        )),
        _ => Ok(()),
    }
}

/// The deepest nesting of objects and arrays in JSON text (brackets inside strings do not
/// count).
fn json_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => in_string = true,
            '{' | '[' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            '}' | ']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// The settlement token must match the mode's (CURRENCY_MISMATCH).
pub fn check_currency(field: &str, given: Option<Token>, settlement: Token) -> Result<Token, Error> {
    match given {
        Some(t) if t != settlement => Err(Error::CurrencyMismatch {
            field: field.into(),
            message: format!("this mode settles in {}", settlement.symbol()),
        }),
        _ => Ok(settlement),
    }
}

fn reminder(input: &ReminderInput, due_at: Option<DateTime<Utc>>) -> Result<ReminderSchedule, Error> {
    let offsets = |field: &str, values: &Option<Vec<i64>>| -> Result<Vec<u8>, Error> {
        values
            .iter()
            .flatten()
            .enumerate()
            .map(|(i, v)| {
                u8::try_from(*v).ok().filter(|d| (1..=MAX_REMINDER_DAYS).contains(d)).ok_or_else(|| {
                    Error::validation(format!("reminder_schedule.{field}[{i}]"), "must be an integer from 1 to 30")
                })
            })
            .collect()
    };
    let mut before = offsets("days_before_due", &input.days_before_due)?;
    let mut after = offsets("days_after_due", &input.days_after_due)?;
    if before.len() + after.len() > MAX_REMINDER_OFFSETS {
        return Err(Error::validation(
            "reminder_schedule",
            "at most six offsets in daysBeforeDue and daysAfterDue combined",
        ));
    }
    let enabled = input.enabled.unwrap_or(true);
    if enabled && due_at.is_none() {
        return Err(Error::validation("reminder_schedule.enabled", "an enabled reminder schedule requires dueAt"));
    }
    let no_timings = input.days_before_due.is_none() && input.days_after_due.is_none() && input.on_due.is_none();
    let on_due = if no_timings {
        before = vec![3];
        after = vec![7];
        true
    } else {
        input.on_due.unwrap_or(false)
    };
    before.sort_unstable();
    before.dedup();
    after.sort_unstable();
    after.dedup();
    Ok(ReminderSchedule { enabled, days_before_due: before, on_due, days_after_due: after })
}

/// Checks the rules of an invoice's content (byte limits, line and tax counts, email).
pub fn check_content(c: &InvoiceContent) -> Result<(), Error> {
    if c.lines.is_empty() || c.lines.len() > MAX_LINES {
        return Err(Error::validation("lines", "must hold 1-100 items"));
    }
    for (i, line) in c.lines.iter().enumerate() {
        check_len(&format!("lines[{i}].description"), &line.description, 1, MAX_LINE_DESCRIPTION_BYTES)?;
        check_opt(&format!("lines[{i}].id"), &line.id, MAX_LINE_ID_BYTES)?;
        check_opt(&format!("lines[{i}].sku"), &line.sku, MAX_SKU_BYTES)?;
        if line.quantity.is_zero() {
            return Err(Error::invalid_amount(format!("lines[{i}].quantity"), "must be greater than zero"));
        }
    }
    if let Some(customer) = &c.customer {
        check_opt_name("customer.name", &customer.name, MAX_CUSTOMER_NAME_BYTES)?;
        check_opt_name("customer.company", &customer.company, MAX_CUSTOMER_NAME_BYTES)?;
        check_opt("customer.billing_address", &customer.billing_address, MAX_BILLING_ADDRESS_BYTES)?;
        if let Some(email) = &customer.email {
            check_email("customer.email", email)?;
        }
    }
    if c.taxes.len() > MAX_TAX_LINES {
        return Err(Error::validation("taxes", "at most 100 tax lines"));
    }
    for (i, tax) in c.taxes.iter().enumerate() {
        check_len(&format!("taxes[{i}].label"), &tax.label, 1, MAX_TAX_FIELD_BYTES)?;
        check_opt(&format!("taxes[{i}].id"), &tax.id, MAX_TAX_FIELD_BYTES)?;
        check_opt(&format!("taxes[{i}].jurisdiction"), &tax.jurisdiction, MAX_TAX_FIELD_BYTES)?;
        check_opt(&format!("taxes[{i}].registration_reference"), &tax.registration_reference, MAX_TAX_FIELD_BYTES)?;
    }
    check_opt("payment_terms", &c.payment_terms, MAX_PAYMENT_TERMS_BYTES)?;
    check_opt("memo", &c.memo, MAX_MEMO_BYTES)?;
    check_opt("footer", &c.footer, MAX_MEMO_BYTES)?;
    check_opt("purchase_order_number", &c.purchase_order_number, MAX_PURCHASE_ORDER_BYTES)?;
    check_opt("external_reference", &c.external_reference, MAX_EXTERNAL_REFERENCE_BYTES)?;
    check_metadata("metadata", &c.metadata)
}

/// Checks every rule of an itemized invoice and computes its totals.
pub fn build_fields(input: DraftInput, settlement: Token) -> Result<(InvoiceFields, Totals), Error> {
    let DraftInput { content, currency, checkout_expires_in_minutes, reminder_schedule } = input;
    check_content(&content)?;
    let currency = check_currency("currency", currency, settlement)?;
    let checkout_expires_in_minutes = expiry_minutes("checkout_expires_in_minutes", checkout_expires_in_minutes)?;
    let reminder_schedule = reminder_schedule.as_ref().map(|r| reminder(r, content.due_at)).transpose()?;
    let priced: Vec<PricedLine> = content
        .lines
        .iter()
        .map(|l| PricedLine { quantity: l.quantity.clone(), unit_amount: l.unit_amount.clone() })
        .collect();
    let taxes: Vec<Amount> = content.taxes.iter().map(|t| t.amount.clone()).collect();
    let totals = compute_totals(&priced, content.discount.as_ref(), &taxes)?;
    let fields = InvoiceFields {
        content,
        amount: None,
        currency,
        checkout_expires_in_minutes,
        reminder_schedule,
        payment_link: None,
    };
    Ok((fields, totals))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invoice::model::{Customer, LineItem};
    use crate::money::Decimal6;

    #[test]
    fn metadata_nests_at_most_32_levels() {
        let nested = |levels: usize| {
            let text = format!("{{\"a\":{}1{}}}", "[".repeat(levels - 1), "]".repeat(levels - 1));
            Some(Metadata::from_json_object_text(text))
        };
        assert_eq!(check_metadata("metadata", &nested(32)), Ok(()));
        let refused = check_metadata("metadata", &nested(33)).unwrap_err();
        assert_eq!(refused.field(), Some("metadata"));
        // Brackets inside strings are text.
        let text = format!("{{\"a\":\"{}\\\"{}\"}}", "[".repeat(100), "{".repeat(100));
        assert_eq!(check_metadata("metadata", &Some(Metadata::from_json_object_text(text))), Ok(()));
    }

    fn line(desc: &str) -> LineItem {
        LineItem {
            id: None,
            sku: None,
            description: desc.into(),
            quantity: Decimal6::parse("1").unwrap(),
            unit_amount: Decimal6::parse("5").unwrap(),
        }
    }

    fn with_lines(lines: Vec<LineItem>) -> DraftInput {
        DraftInput { content: InvoiceContent { lines, ..Default::default() }, ..Default::default() }
    }

    fn input() -> DraftInput {
        with_lines(vec![line("Widget")])
    }

    fn field(r: Result<(InvoiceFields, Totals), Error>) -> String {
        r.unwrap_err().field().unwrap().to_owned()
    }

    #[test]
    fn rules() {
        assert!(build_fields(input(), Token::Usdc).is_ok());
        assert_eq!(field(build_fields(DraftInput::default(), Token::Usdc)), "lines");
        let many = with_lines(vec![line("x"); 101]);
        assert_eq!(field(build_fields(many, Token::Usdc)), "lines");
        // 500 bytes of a 2-byte character is 1000 bytes: too long.
        let long = with_lines(vec![line(&"é".repeat(251))]);
        assert_eq!(field(build_fields(long, Token::Usdc)), "lines[0].description");
        let ok = with_lines(vec![line(&"é".repeat(250))]);
        assert!(build_fields(ok, Token::Usdc).is_ok());
        let cur = DraftInput { currency: Some(Token::Usdt), ..input() };
        assert!(matches!(build_fields(cur, Token::Usdc), Err(Error::CurrencyMismatch { .. })));
        let exp = DraftInput { checkout_expires_in_minutes: Some(4), ..input() };
        assert!(matches!(build_fields(exp, Token::Usdc), Err(Error::InvalidExpiry { .. })));
        let mut email = input();
        email.content.customer = Some(Customer { email: Some("nope".into()), ..Default::default() });
        assert_eq!(field(build_fields(email, Token::Usdc)), "customer.email");
        let rem = DraftInput { reminder_schedule: Some(ReminderInput::default()), ..input() };
        assert_eq!(field(build_fields(rem, Token::Usdc)), "reminder_schedule.enabled");
        let due = |reminder: ReminderInput| {
            let mut d = input();
            d.content.due_at = Some(Utc::now());
            d.reminder_schedule = Some(reminder);
            d
        };
        let rem = due(ReminderInput {
            days_before_due: Some(vec![1, 2, 3, 4]),
            days_after_due: Some(vec![1, 2, 3]),
            ..Default::default()
        });
        assert_eq!(field(build_fields(rem, Token::Usdc)), "reminder_schedule");
        let rem = due(ReminderInput { days_after_due: Some(vec![31]), ..Default::default() });
        assert_eq!(field(build_fields(rem, Token::Usdc)), "reminder_schedule.days_after_due[0]");
        let defaults = due(ReminderInput::default());
        let (f, _) = build_fields(defaults, Token::Usdc).unwrap();
        let r = f.reminder_schedule.unwrap();
        assert_eq!((r.days_before_due, r.on_due, r.days_after_due), (vec![3], true, vec![7]));
    }
}
