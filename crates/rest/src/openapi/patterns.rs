//! The patterns of the document's strings: what the service's parsers accept, as regular
//! expressions.

use std::sync::LazyLock;

use stablepay_domain::money::{MAX_INTEGER_DIGITS, SCALE};

/// A positive amount: some digit other than zero, at most `MAX_INTEGER_DIGITS` integer digits
/// (leading zeros counted) and `SCALE` fractional ones.
pub static POSITIVE_AMOUNT_PATTERN: LazyLock<String> = LazyLock::new(|| {
    let (int, scale) = (MAX_INTEGER_DIGITS, scale());
    // A fraction that is not all zeros: `z` leading zeros, a non-zero digit, then the rest.
    let fractions: Vec<String> = (0..scale).map(|z| format!("{}[1-9]{}", "0".repeat(z), upto(scale - z - 1))).collect();
    // An integer part that is not all zeros: `z` leading zeros, a non-zero digit, then the rest.
    let integers: Vec<String> = (0..int).map(|z| format!("{}[1-9]{}", "0".repeat(z), upto(int - z - 1))).collect();
    format!(r"^(({})(\.[0-9]{{1,{scale}}})?|0{{1,{int}}}\.({}))$", integers.join("|"), fractions.join("|"))
});

/// An email address as the service accepts it: one `@`, a non-empty local part, a domain with
/// a dot that neither starts nor ends it, no white space or control characters. (Deliberately
/// not `format: email`: the service takes some addresses RFC 5322 would not, such as `a+b$@x.io`.)
pub const EMAIL_PATTERN: &str = concat!(
    r"^[^@\s\x00-\x1f\x7f-\x9f]+@[^@.\s\x00-\x1f\x7f-\x9f][^@\s\x00-\x1f\x7f-\x9f]*",
    r"\.[^@\s\x00-\x1f\x7f-\x9f]*[^@.\s\x00-\x1f\x7f-\x9f]$"
);

/// An absolute http(s) URL as the service parses it: no credentials, a host of letters,
/// digits, dots and hyphens, an optional port, no spaces or control characters.
pub const URL_PATTERN: &str = concat!(
    r"^[Hh][Tt][Tt][Pp][Ss]?://[A-Za-z0-9.-]+",
    r"(:([0-9]{1,4}|[1-5][0-9]{4}|6[0-4][0-9]{3}|65[0-4][0-9]{2}|655[0-2][0-9]|6553[0-5]))?",
    r"([/?#][^\s\x00-\x1f\x7f-\x9f]*)?$"
);

/// A non-negative amount: at most `MAX_INTEGER_DIGITS` integer digits (leading zeros counted)
/// and `SCALE` fractional ones.
pub static AMOUNT_PATTERN: LazyLock<String> =
    LazyLock::new(|| format!(r"^[0-9]{{1,{MAX_INTEGER_DIGITS}}}(\.[0-9]{{1,{}}})?$", scale()));

/// At most `n` more digits.
fn upto(n: usize) -> String {
    match n {
        0 => String::new(),
        1 => "[0-9]?".to_owned(),
        n => format!("[0-9]{{0,{n}}}"),
    }
}

fn scale() -> usize {
    usize::try_from(SCALE).unwrap_or(6)
}
