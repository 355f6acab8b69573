//! Exact decimal money.
//!
//! Every amount in stablepay is an [`Amount`]: a non-negative decimal with at most
//! [`SCALE`] fractional digits, held in a [`BigDecimal`] from the moment it is parsed to the
//! moment it is rendered. There is no floating point anywhere on this path.
//!
//! Wire form (parsing, [`Decimal6::parse`]): ASCII digits with an optional single `.` followed
//! by 1 to 6 digits. Signs, exponents, whitespace, an empty string, a leading or trailing `.`
//! and more than 6 fractional digits are refused. The integer part may have at most
//! [`MAX_INTEGER_DIGITS`] digits as written, leading zeros counted (`"007"` is three digits;
//! `"0000000000000001"` is sixteen and refused).
//!
//! Canonical form (rendering, `Display`): the integer part without leading zeros, a `.` and
//! exactly six fractional digits, e.g. `10.500000`, `0.000001`, `0.000000`. Two equal amounts
//! always render to the same string. The API, CSV files and the store use it.
//!
//! Read by people ([`Decimal6::readable`]: dashboard, hosted pages, emails, PDFs): thousands
//! grouped and at least two decimals, more only when the amount has them (`1,849.99`,
//! `12.505`), in a [`NumberStyle`]; still exact, never rounded.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use bigdecimal::{BigDecimal, RoundingMode, Zero};

/// Fractional digits kept by every amount (the decimals of USDC and USDT).
pub const SCALE: i64 = 6;

/// At most this many integer digits are accepted from input: amounts stay below 10^15, which
/// keeps every sum of 100 lines and 100 taxes far inside PostgreSQL's `numeric(38, 6)`.
pub const MAX_INTEGER_DIGITS: usize = 15;

/// How numbers are written for people: the thousands separator and the decimal mark. One style
/// today, English (`1,234.50`); a customer's language adds its own.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NumberStyle {
    /// `1,234.50`.
    #[default]
    English,
}

impl NumberStyle {
    /// Between groups of three digits of the whole part.
    pub fn group_separator(self) -> char {
        match self {
            Self::English => ',',
        }
    }

    /// Between the whole part and the decimals.
    pub fn decimal_mark(self) -> char {
        match self {
            Self::English => '.',
        }
    }
}

/// Why a decimal string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecimalError {
    #[error("must be a decimal string")]
    /// Empty text.
    Empty,
    #[error("must contain only digits and at most one '.' (no sign, exponent or whitespace)")]
    /// Anything but digits and one `.`.
    Malformed,
    #[error("must have at most 6 fractional digits")]
    /// More than six fractional digits.
    TooPrecise,
    #[error("must have at most 15 integer digits (below 10^15; leading zeros count)")]
    /// More than 15 integer digits, leading zeros counted.
    TooLarge,
    #[error("must be greater than zero")]
    /// Zero where a positive amount is needed.
    NotPositive,
    #[error("must be between 0 and 100")]
    /// A percentage above 100.
    OutOfRange,
}

/// A non-negative decimal with at most six fractional digits, kept at scale 6.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Decimal6(BigDecimal);

impl Decimal6 {
    /// Parses the strict wire form described in the module documentation.
    pub fn parse(input: &str) -> Result<Self, DecimalError> {
        if input.is_empty() {
            return Err(DecimalError::Empty);
        }
        let (int_part, frac_part) = match input.split_once('.') {
            Some((i, f)) => (i, Some(f)),
            None => (input, None),
        };
        let all_digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
        if int_part.is_empty() || !all_digits(int_part) {
            return Err(DecimalError::Malformed);
        }
        if let Some(frac) = frac_part {
            if frac.is_empty() || !all_digits(frac) {
                return Err(DecimalError::Malformed);
            }
            if frac.len() > 6 {
                return Err(DecimalError::TooPrecise);
            }
        }
        if int_part.len() > MAX_INTEGER_DIGITS {
            return Err(DecimalError::TooLarge);
        }
        // At most 15 + 6 digits, checked above: the count of millionths fits a u128, read
        // digit by digit (no decimal parsing and rescaling of a `BigDecimal`).
        let fraction = frac_part.unwrap_or_default();
        let mut millionths: u128 = 0;
        for b in int_part.bytes().chain(fraction.bytes()) {
            millionths = millionths * 10 + u128::from(b - b'0');
        }
        for _ in fraction.len()..6 {
            millionths *= 10;
        }
        Ok(Self(BigDecimal::new(bigdecimal::num_bigint::BigInt::from(millionths), SCALE)))
    }

    /// Like [`Decimal6::parse`], and the value must be greater than zero.
    pub fn parse_positive(input: &str) -> Result<Self, DecimalError> {
        let value = Self::parse(input)?;
        if value.is_zero() {
            return Err(DecimalError::NotPositive);
        }
        Ok(value)
    }

    /// Builds a value from a decimal that already has at most six fractional digits and is not
    /// negative (for example one read back from storage). Returns `None` otherwise.
    pub fn from_exact(value: BigDecimal) -> Option<Self> {
        if value < BigDecimal::zero() {
            return None;
        }
        let scaled = value.with_scale(SCALE);
        (scaled == value).then_some(Self(scaled))
    }

    /// An amount from a token's integer count of its smallest units: USDC and USDT have six
    /// decimals, so `1500000` units are `1.500000`. `None` for anything but ASCII digits.
    pub fn from_units(digits: &str) -> Option<Self> {
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let units = bigdecimal::num_bigint::BigInt::from_str(digits).ok()?;
        Some(Self(BigDecimal::new(units, SCALE)))
    }

    /// The token's integer count of smallest units (the inverse of [`Decimal6::from_units`]):
    /// `1.500000` is `1500000`.
    pub fn to_units(&self) -> String {
        let (digits, _) = self.0.with_scale(SCALE).into_bigint_and_exponent();
        digits.to_string()
    }

    /// The exact value without trailing zeros beyond `min_fraction` decimals, for people to
    /// read (`12.500000` is `12.50` with 2, `12.5` with 0; `0.000001` stays).
    pub fn to_trimmed(&self, min_fraction: usize) -> String {
        let text = self.to_string();
        let Some((whole, fraction)) = text.split_once('.') else { return text };
        let kept = fraction.trim_end_matches('0');
        let kept = if kept.len() < min_fraction { &fraction[..min_fraction.min(fraction.len())] } else { kept };
        if kept.is_empty() { whole.to_owned() } else { format!("{whole}.{kept}") }
    }

    /// The exact value for people to read in `style`: the whole part's thousands grouped, at
    /// least `min_fraction` decimals and more only when the value has them (`1849.990000` is
    /// `1,849.99` with 2; `12.505000` is `12.505`; `1000` is `1,000` with 0). Never rounded.
    pub fn readable(&self, min_fraction: usize, style: NumberStyle) -> String {
        let plain = self.to_trimmed(min_fraction);
        let (sign, unsigned) = plain.strip_prefix('-').map_or(("", plain.as_str()), |u| ("-", u));
        let (whole, fraction) = unsigned.split_once('.').map_or((unsigned, None), |(w, f)| (w, Some(f)));
        let mut out = String::with_capacity(plain.len() + whole.len() / 3 + 1);
        out.push_str(sign);
        for (i, c) in whole.chars().enumerate() {
            if i > 0 && (whole.len() - i) % 3 == 0 {
                out.push(style.group_separator());
            }
            out.push(c);
        }
        if let Some(f) = fraction {
            out.push(style.decimal_mark());
            out.push_str(f);
        }
        out
    }

    /// Rounds any non-negative decimal half-up to six places.
    pub fn round_half_up(value: &BigDecimal) -> Option<Self> {
        if *value < BigDecimal::zero() {
            return None;
        }
        Some(Self(value.with_scale_round(SCALE, RoundingMode::HalfUp)))
    }

    /// One (`1.000000`).
    pub fn one() -> Self {
        Self(BigDecimal::from(1u32).with_scale(SCALE))
    }

    /// A whole number (`12` is `12.000000`).
    pub fn whole(n: u32) -> Self {
        Self(BigDecimal::from(n).with_scale(SCALE))
    }

    /// Zero (`0.000000`).
    pub fn zero() -> Self {
        Self(BigDecimal::zero().with_scale(SCALE))
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.0.is_zero()
    }

    /// The value as a `BigDecimal` (scale 6), for adapters that store it.
    pub fn as_bigdecimal(&self) -> &BigDecimal {
        &self.0
    }

    /// Exact sum.
    pub fn add(&self, other: &Self) -> Self {
        Self((&self.0 + &other.0).with_scale(SCALE))
    }

    /// Exact difference, or `None` when it would be negative.
    pub fn checked_sub(&self, other: &Self) -> Option<Self> {
        Self::from_exact(&self.0 - &other.0)
    }

    /// `self - other`, or zero when `other` is larger.
    pub fn saturating_sub(&self, other: &Self) -> Self {
        self.checked_sub(other).unwrap_or_else(Self::zero)
    }

    /// `self * other` rounded half-up to six places.
    pub fn mul_round(&self, other: &Self) -> Self {
        Self((&self.0 * &other.0).with_scale_round(SCALE, RoundingMode::HalfUp))
    }

    /// `self * basis_points / 10_000` rounded half-up to six places.
    pub fn basis_points(&self, basis_points: u32) -> Self {
        let bp = BigDecimal::from(basis_points);
        let value = &self.0 * bp / BigDecimal::from(10_000u32);
        Self(value.with_scale_round(SCALE, RoundingMode::HalfUp))
    }

    /// The smaller of the two.
    pub fn min(self, other: Self) -> Self {
        if self <= other { self } else { other }
    }
}

impl fmt::Display for Decimal6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The value is kept at scale 6: its digits are a count of millionths, written out
        // directly (no intermediate decimal or string; every response renders many amounts).
        let (millionths, scale) = self.0.as_bigint_and_scale();
        if scale == SCALE
            && let Some(n) = bigdecimal::ToPrimitive::to_u128(millionths.as_ref())
        {
            let mut buffer = [0u8; 48];
            return f.write_str(millionths_text(n, &mut buffer));
        }
        // Anything else (not expected: a negative or rescaled value): with_scale(6) gives
        // exactly six fractional digits and no exponent.
        write!(f, "{}", self.0.with_scale(SCALE).to_plain_string())
    }
}

/// `n` millionths as `whole.ffffff`, its digits written from the end of `buffer` (one write to
/// the formatter instead of formatting machinery per part: every answer renders many amounts).
fn millionths_text(n: u128, buffer: &mut [u8; 48]) -> &str {
    let mut at = buffer.len();
    let mut put = |d: u8| {
        at -= 1;
        buffer[at] = b'0' + d;
    };
    let mut fraction = u32::try_from(n % 1_000_000).unwrap_or(0);
    for _ in 0..6 {
        put(u8::try_from(fraction % 10).unwrap_or(0));
        fraction /= 10;
    }
    at -= 1;
    buffer[at] = b'.';
    let mut put = |d: u8| {
        at -= 1;
        buffer[at] = b'0' + d;
    };
    let whole = n / 1_000_000;
    match u64::try_from(whole) {
        // Every real amount: 64-bit divisions.
        Ok(mut w) => loop {
            put(u8::try_from(w % 10).unwrap_or(0));
            w /= 10;
            if w == 0 {
                break;
            }
        },
        Err(_) => {
            let mut w = whole;
            loop {
                put(u8::try_from(w % 10).unwrap_or(0));
                w /= 10;
                if w == 0 {
                    break;
                }
            }
        }
    }
    std::str::from_utf8(&buffer[at..]).unwrap_or_default()
}

impl fmt::Debug for Decimal6 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{self}")
    }
}

/// Money: a non-negative amount of the settlement token (USDC or USDT) at six decimals.
pub type Amount = Decimal6;

/// A line-item quantity: a positive decimal with at most six fractional digits.
pub type Quantity = Decimal6;

/// A percentage between 0 and 100 inclusive with at most six fractional digits.
#[derive(Clone, PartialEq, Eq, Debug)]
pub struct Percentage(Decimal6);

impl Percentage {
    /// Reads a decimal string (as [`Decimal6::parse`]) no greater than 100.
    pub fn parse(input: &str) -> Result<Self, DecimalError> {
        let value = Decimal6::parse(input)?;
        Self::new(value)
    }

    /// A percentage from a decimal. Errors: `OutOfRange` above 100.
    pub fn new(value: Decimal6) -> Result<Self, DecimalError> {
        let hundred = Decimal6(BigDecimal::from(100u32).with_scale(SCALE));
        match value.cmp(&hundred) {
            Ordering::Greater => Err(DecimalError::OutOfRange),
            _ => Ok(Self(value)),
        }
    }

    /// The percentage as a decimal (50% is `50.000000`).
    pub fn value(&self) -> &Decimal6 {
        &self.0
    }

    /// `percentage% of amount`, rounded half-up to six places.
    pub fn of(&self, amount: &Amount) -> Amount {
        let value = amount.as_bigdecimal() * self.0.as_bigdecimal() / BigDecimal::from(100u32);
        Decimal6(value.with_scale_round(SCALE, RoundingMode::HalfUp))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn people_read_grouped_amounts_with_their_own_decimals() {
        let d = |s: &str| Decimal6::parse(s).unwrap();
        let en = NumberStyle::English;
        assert_eq!(d("1849.99").readable(2, en), "1,849.99");
        assert_eq!(d("121932487.015").readable(2, en), "121,932,487.015");
        assert_eq!(d("999").readable(2, en), "999.00");
        assert_eq!(d("1000").readable(0, en), "1,000");
        assert_eq!(d("123456.123456").readable(0, en), "123,456.123456");
        assert_eq!(d("12.505").readable(2, en), "12.505");
        assert_eq!(d("0.000001").readable(2, en), "0.000001");
        assert_eq!(d("0").readable(2, en), "0.00");
        assert_eq!(d("100000").readable(2, en), "100,000.00");
    }

    fn d(s: &str) -> Decimal6 {
        Decimal6::parse(s).unwrap()
    }

    #[test]
    fn accepts_the_strict_wire_form() {
        for (input, canonical) in [
            ("0", "0.000000"),
            ("10", "10.000000"),
            ("10.5", "10.500000"),
            ("0.000001", "0.000001"),
            ("007.25", "7.250000"),
            ("000000000000001", "1.000000"),
            ("999999999999999.999999", "999999999999999.999999"),
        ] {
            assert_eq!(d(input).to_string(), canonical, "{input}");
        }
    }

    #[test]
    fn trimmed_for_reading() {
        for (value, two, none) in
            [("12.5", "12.50", "12.5"), ("84", "84.00", "84"), ("0.000001", "0.000001", "0.000001")]
        {
            assert_eq!((d(value).to_trimmed(2).as_str(), d(value).to_trimmed(0).as_str()), (two, none), "{value}");
        }
    }

    #[test]
    fn units_round_trip() {
        for (amount, units) in [("1.5", "1500000"), ("0", "0"), ("0.000001", "1"), ("84", "84000000")] {
            assert_eq!(d(amount).to_units(), units, "{amount}");
            assert_eq!(Decimal6::from_units(units), Some(d(amount)));
        }
    }

    #[test]
    fn refuses_everything_else() {
        use DecimalError::*;
        for (input, err) in [
            ("", Empty),
            (" 1", Malformed),
            ("1 ", Malformed),
            ("+1", Malformed),
            ("-1", Malformed),
            ("1e3", Malformed),
            ("1E3", Malformed),
            (".5", Malformed),
            ("5.", Malformed),
            ("1.2.3", Malformed),
            ("1,5", Malformed),
            ("0x10", Malformed),
            ("NaN", Malformed),
            ("١", Malformed),
            ("1.0000001", TooPrecise),
            ("1000000000000000", TooLarge),
            ("0000000000000001", TooLarge),
            ("000000000000000000000000001", TooLarge),
            ("0000000000000000.5", TooLarge),
        ] {
            assert_eq!(Decimal6::parse(input), Err(err), "{input:?}");
        }
        assert_eq!(Decimal6::parse_positive("0.000000"), Err(NotPositive));
        assert_eq!(Percentage::parse("100.000001"), Err(OutOfRange));
        assert!(Percentage::parse("100").is_ok());
    }

    #[test]
    fn amounts_from_token_units() {
        assert_eq!(Decimal6::from_units("1500000").unwrap().to_string(), "1.500000");
        let max = u128::MAX.to_string();
        assert_eq!(
            Decimal6::from_units(&max).unwrap().to_string(),
            format!("{}.{:06}", u128::MAX / 1_000_000, u128::MAX % 1_000_000)
        );
        assert_eq!(Decimal6::from_units("1").unwrap().to_string(), "0.000001");
        assert_eq!(Decimal6::from_units("0").unwrap(), Decimal6::zero());
        let big = "115792089237316195423570985008687907853269984665640564039457584007913129639935";
        assert!(Decimal6::from_units(big).is_some(), "any uint256 is representable exactly");
        assert_eq!(Decimal6::from_units("-1"), None);
        assert_eq!(Decimal6::from_units(""), None);
    }

    #[test]
    fn rounds_half_up() {
        // 0.333333 * 3 = 0.999999 exactly; 1.0000005 rounds up.
        assert_eq!(d("0.333333").mul_round(&d("3")).to_string(), "0.999999");
        assert_eq!(d("0.000001").mul_round(&d("0.5")).to_string(), "0.000001");
        assert_eq!(d("0.000001").mul_round(&d("0.4")).to_string(), "0.000000");
        let p = Percentage::parse("12.5").unwrap();
        assert_eq!(p.of(&d("0.000004")).to_string(), "0.000001");
        assert_eq!(p.of(&d("0.000003")).to_string(), "0.000000");
        assert_eq!(d("10").basis_points(250).to_string(), "0.250000");
        assert_eq!(d("0.000002").basis_points(2500).to_string(), "0.000001");
    }

    #[test]
    fn subtraction_never_goes_negative() {
        assert_eq!(d("1").checked_sub(&d("1.000001")), None);
        assert_eq!(d("1").saturating_sub(&d("2")), Decimal6::zero());
        assert_eq!(d("5.5").checked_sub(&d("0.5")), Some(d("5")));
    }

    fn amount_strategy() -> impl Strategy<Value = (u64, u32)> {
        (0u64..1_000_000_000_000u64, 0u32..1_000_000u32)
    }

    proptest! {
        #[test]
        fn rendering_is_the_integer_math_over_every_u128(n in proptest::num::u128::ANY) {
            let rendered = Decimal6::from_units(&n.to_string()).unwrap().to_string();
            prop_assert_eq!(rendered, format!("{}.{:06}", n / 1_000_000, n % 1_000_000));
        }

        #[test]
        fn parsing_reads_what_the_decimal_parser_reads_at_scale_six(
            int in 0u64..1_000_000_000_000_000u64, (frac, len) in (0u32..1_000_000u32, 0usize..=6)
        ) {
            let digits = format!("{frac:06}");
            let text = if len == 0 { int.to_string() } else { format!("{int}.{}", &digits[..len]) };
            let reference = BigDecimal::from_str(&text).unwrap().with_scale(SCALE);
            let parsed = d(&text);
            prop_assert_eq!(parsed.as_bigdecimal(), &reference);
            prop_assert_eq!(parsed.as_bigdecimal().as_bigint_and_scale().1, SCALE);
        }

        #[test]
        fn render_then_parse_is_identity((int, frac) in amount_strategy()) {
            let text = format!("{int}.{frac:06}");
            let parsed = d(&text);
            prop_assert_eq!(parsed.to_string(), text.clone());
            prop_assert_eq!(d(&parsed.to_string()), parsed);
        }

        #[test]
        fn sums_are_exact((a, af) in amount_strategy(), (b, bf) in amount_strategy()) {
            // Integer arithmetic on micro-units is the reference.
            let micro_a = u128::from(a) * 1_000_000 + u128::from(af);
            let micro_b = u128::from(b) * 1_000_000 + u128::from(bf);
            let sum = d(&format!("{a}.{af:06}")).add(&d(&format!("{b}.{bf:06}")));
            let total = micro_a + micro_b;
            prop_assert_eq!(sum.to_string(), format!("{}.{:06}", total / 1_000_000, total % 1_000_000));
        }

        #[test]
        fn multiplication_rounds_half_up_like_integer_math(
            (a, af) in amount_strategy(), (q, qf) in (0u64..10_000u64, 0u32..1_000_000u32)
        ) {
            let micro_a = u128::from(a) * 1_000_000 + u128::from(af);
            let micro_q = u128::from(q) * 1_000_000 + u128::from(qf);
            // product has 12 fractional digits; round half-up to 6.
            let product = micro_a * micro_q;
            let rounded = (product + 500_000) / 1_000_000;
            let got = d(&format!("{a}.{af:06}")).mul_round(&d(&format!("{q}.{qf:06}")));
            prop_assert_eq!(got.to_string(), format!("{}.{:06}", rounded / 1_000_000, rounded % 1_000_000));
        }

        #[test]
        fn rendering_matches_the_decimal_library((int, frac) in amount_strategy(), rescale in 0i64..3) {
            let value = d(&format!("{int}.{frac:06}"));
            let reference = value.as_bigdecimal().with_scale(SCALE).to_plain_string();
            prop_assert_eq!(value.to_string(), reference.clone());
            // A value at another scale takes the general path and renders the same.
            let other = Decimal6(value.as_bigdecimal().with_scale(SCALE + rescale));
            prop_assert_eq!(other.to_string(), reference);
        }

        #[test]
        fn arbitrary_strings_never_panic(s in "\\PC{0,24}") {
            let _ = Decimal6::parse(&s);
        }
    }
}
