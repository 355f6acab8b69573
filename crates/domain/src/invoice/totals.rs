//! Invoice money math: subtotal, discount, taxes, total.

use crate::error::Error;
use crate::money::{Amount, Decimal6, Percentage, Quantity};

/// One priced line: `quantity x unit_amount`, rounded half-up to six places.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PricedLine {
    /// How many units.
    pub quantity: Quantity,
    /// The price of one unit.
    pub unit_amount: Amount,
}

impl PricedLine {
    /// The line's amount: quantity times unit amount, rounded half-up to six places.
    pub fn amount(&self) -> Amount {
        self.quantity.mul_round(&self.unit_amount)
    }
}

/// A discount on the subtotal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Discount {
    /// A fixed amount off the subtotal (at most the subtotal).
    Fixed(Amount),
    /// A percentage of the subtotal.
    Percentage(Percentage),
}

impl Discount {
    /// What the discount takes off `subtotal`: never more than the subtotal.
    pub fn amount_on(&self, subtotal: &Amount) -> Amount {
        match self {
            Discount::Fixed(amount) => amount.clone(),
            Discount::Percentage(p) => p.of(subtotal),
        }
    }
}

/// The computed totals of an invoice.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Totals {
    /// The sum of the lines.
    pub subtotal: Amount,
    /// What the discount takes off.
    pub discount: Amount,
    /// The sum of the tax lines (supplied by the merchant; no rates are computed).
    pub tax: Amount,
    /// Subtotal minus discount plus tax: what the customer owes.
    pub total: Amount,
}

impl Totals {
    /// The totals of an amount-only invoice: the amount is its subtotal and its total.
    pub fn of_amount(amount: Amount) -> Self {
        Self { subtotal: amount.clone(), discount: Amount::zero(), tax: Amount::zero(), total: amount }
    }
}

/// The largest total the service accepts (exclusive): 10^15.
fn total_limit() -> Amount {
    // 15 nines and six: the largest accepted value; anything above it is refused.
    Decimal6::parse("999999999999999.999999").unwrap_or_else(|_| Decimal6::zero())
}

/// Computes the totals. Errors (all `INVALID_TOTAL`, naming the field): a discount above the
/// subtotal (`discount`), a line or total beyond the service maximum (`lines` / `total`), and a
/// total of zero (`lines`).
pub fn compute_totals(lines: &[PricedLine], discount: Option<&Discount>, taxes: &[Amount]) -> Result<Totals, Error> {
    let limit = total_limit();
    let mut subtotal = Amount::zero();
    for (i, line) in lines.iter().enumerate() {
        let amount = line.amount();
        if amount > limit {
            return Err(Error::invalid_total(
                format!("lines[{i}]"),
                "quantity x unitAmount exceeds the maximum amount",
            ));
        }
        subtotal = subtotal.add(&amount);
    }
    let discount = discount.map(|d| d.amount_on(&subtotal)).unwrap_or_else(Amount::zero);
    let after_discount = subtotal
        .checked_sub(&discount)
        .ok_or_else(|| Error::invalid_total("discount", "discount cannot exceed the subtotal"))?;
    let tax = taxes.iter().fold(Amount::zero(), |acc, t| acc.add(t));
    let total = after_discount.add(&tax);
    if total > limit {
        return Err(Error::invalid_total("lines", "the invoice total exceeds the maximum amount"));
    }
    if total.is_zero() {
        return Err(Error::invalid_total("lines", "the invoice total must be greater than zero"));
    }
    Ok(Totals { subtotal, discount, tax, total })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn d(s: &str) -> Amount {
        Decimal6::parse(s).unwrap()
    }

    fn line(q: &str, u: &str) -> PricedLine {
        PricedLine { quantity: d(q), unit_amount: d(u) }
    }

    #[test]
    fn itemized_totals() {
        let t = compute_totals(
            &[line("3", "0.333333"), line("1.5", "10.01")],
            Some(&Discount::Percentage(Percentage::parse("10").unwrap())),
            &[d("1.25"), d("0.000001")],
        )
        .unwrap();
        assert_eq!(t.subtotal.to_string(), "16.014999"); // 0.999999 + 15.015000
        assert_eq!(t.discount.to_string(), "1.601500"); // 1.6014999 rounds half-up
        assert_eq!(t.tax.to_string(), "1.250001");
        assert_eq!(t.total.to_string(), "15.663500");
    }

    #[test]
    fn invalid_totals_name_their_field() {
        let over = compute_totals(&[line("1", "5")], Some(&Discount::Fixed(d("5.000001"))), &[]);
        assert_eq!(over.unwrap_err().field(), Some("discount"));
        let zero = compute_totals(&[line("1", "0")], None, &[]);
        assert_eq!(zero.unwrap_err().field(), Some("lines"));
        let full_discount = compute_totals(&[line("1", "5")], Some(&Discount::Fixed(d("5"))), &[d("1")]);
        assert_eq!(full_discount.unwrap().total.to_string(), "1.000000");
        let huge = compute_totals(&[line("999999999", "999999999")], None, &[]);
        assert_eq!(huge.unwrap_err().field(), Some("lines[0]"));
        let sum_too_big = compute_totals(&[line("1", "999999999999999"), line("1", "1")], None, &[]);
        assert_eq!(sum_too_big.unwrap_err().field(), Some("lines"));
    }

    fn micro() -> impl Strategy<Value = u64> {
        0u64..10_000_000_000u64
    }

    fn render(m: u128) -> String {
        format!("{}.{:06}", m / 1_000_000, m % 1_000_000)
    }

    proptest! {
        #[test]
        fn totals_match_integer_reference(
            lines in proptest::collection::vec((1u64..5_000_000u64, micro()), 1..20),
            taxes in proptest::collection::vec(micro(), 0..5),
            pct in 0u64..100_000_000u64,
        ) {
            let priced: Vec<PricedLine> = lines.iter().map(|(q, u)| PricedLine {
                quantity: d(&render(u128::from(*q))), unit_amount: d(&render(u128::from(*u))),
            }).collect();
            let tax_amounts: Vec<Amount> = taxes.iter().map(|t| d(&render(u128::from(*t)))).collect();
            let discount = Discount::Percentage(Percentage::parse(&render(u128::from(pct))).unwrap());
            // Reference in integer micro-units with explicit half-up rounding.
            let subtotal: u128 = lines.iter().map(|(q, u)| (u128::from(*q) * u128::from(*u) + 500_000) / 1_000_000).sum();
            let disc = (subtotal * u128::from(pct) + 50_000_000) / 100_000_000;
            let tax: u128 = taxes.iter().map(|t| u128::from(*t)).sum();
            let total = subtotal - disc + tax;
            match compute_totals(&priced, Some(&discount), &tax_amounts) {
                Ok(t) => {
                    prop_assert_eq!(t.subtotal.to_string(), render(subtotal));
                    prop_assert_eq!(t.discount.to_string(), render(disc));
                    prop_assert_eq!(t.tax.to_string(), render(tax));
                    prop_assert_eq!(t.total.to_string(), render(total));
                }
                Err(e) => prop_assert!(total == 0, "unexpected {e:?}"),
            }
        }
    }
}
