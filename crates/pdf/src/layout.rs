//! The invoice's layout: what to draw where, measured with the shipped fonts (each character in
//! the first font that has it), wrapped to its column, and split into A4 pages.

use skrifa::instance::{LocationRef, Size};
use skrifa::metrics::GlyphMetrics;
use skrifa::{FontRef, MetadataProvider};
use stablepay_domain::invoice::document::InvoiceDocument;
use stablepay_domain::invoice::totals::Discount;
use stablepay_domain::money::Decimal6;

/// A4 in points.
pub const PAGE_WIDTH: f32 = 595.28;
/// A4 in points.
pub const PAGE_HEIGHT: f32 = 841.89;

const MARGIN: f32 = 50.0;
const RIGHT: f32 = PAGE_WIDTH - MARGIN;
const BOTTOM: f32 = PAGE_HEIGHT - 60.0;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    Regular,
    Bold,
    Fallback,
}

/// One drawing operation (coordinates from the page's top left, text at its baseline).
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// `rtl`: a right-to-left run (Hebrew, Arabic), shaped and laid out right to left.
    Text {
        x: f32,
        y: f32,
        size: f32,
        face: Face,
        text: String,
        grey: bool,
        rtl: bool,
    },
    Rule {
        x: f32,
        y: f32,
        width: f32,
    },
    /// A QR code: its top left, the module size, and the dark modules' columns per row.
    Qr {
        x: f32,
        y: f32,
        module: f32,
        dark: Vec<Vec<usize>>,
    },
}

pub type Pages = Vec<Vec<Op>>;

struct Face1<'a> {
    font: FontRef<'a>,
    metrics: GlyphMetrics<'a>,
}

impl<'a> Face1<'a> {
    fn new(data: &'a [u8]) -> Option<Self> {
        let font = FontRef::new(data).ok()?;
        let metrics = font.glyph_metrics(Size::new(1.0), LocationRef::default());
        Some(Self { font, metrics })
    }

    /// The advance of `c` at size 1, if the font has it.
    fn advance(&self, c: char) -> Option<f32> {
        let glyph = self.font.charmap().map(c)?;
        Some(self.metrics.advance_width(glyph).unwrap_or(0.5))
    }
}

/// A piece of text drawn in one font and one direction.
struct Run {
    face: Face,
    rtl: bool,
    text: String,
    width: f32,
}

/// The strong direction of `c`: `Some(true)` for Hebrew and Arabic letters, `Some(false)` for
/// other letters, `None` for characters that take their neighbours' direction.
fn direction(c: char) -> Option<bool> {
    let rtl = matches!(u32::from(c), 0x0590..=0x08FF | 0xFB1D..=0xFDFF | 0xFE70..=0xFEFF);
    if rtl {
        Some(true)
    } else if c.is_alphabetic() {
        Some(false)
    } else {
        None
    }
}

/// Measures text in the shipped fonts.
pub struct Measure<'a> {
    regular: Option<Face1<'a>>,
    bold: Option<Face1<'a>>,
    fallback: Option<Face1<'a>>,
}

impl<'a> Measure<'a> {
    pub fn new(regular: &'a [u8], bold: &'a [u8], fallback: &'a [u8]) -> Self {
        Self { regular: Face1::new(regular), bold: Face1::new(bold), fallback: Face1::new(fallback) }
    }

    /// The font that draws `c`, and its advance at size 1.
    fn pick(&self, c: char, bold: bool) -> (Face, f32) {
        let primary = if bold { (&self.bold, Face::Bold) } else { (&self.regular, Face::Regular) };
        if let Some(a) = primary.0.as_ref().and_then(|f| f.advance(c)) {
            return (primary.1, a);
        }
        if let Some(a) = self.fallback.as_ref().and_then(|f| f.advance(c)) {
            return (Face::Fallback, a);
        }
        (primary.1, 0.6)
    }

    /// `text` cut into runs of one font and one direction each, with their widths at `size`.
    /// Characters without a direction of their own (spaces, digits, punctuation) stay in the
    /// run they follow.
    fn runs(&self, text: &str, size: f32, bold: bool) -> Vec<Run> {
        let mut runs: Vec<Run> = Vec::new();
        for c in text.chars() {
            let (face, advance) = self.pick(c, bold);
            let rtl = match direction(c) {
                Some(rtl) => rtl,
                None => runs.last().is_some_and(|r| r.rtl),
            };
            match runs.last_mut() {
                Some(r) if r.face == face && r.rtl == rtl => {
                    r.text.push(c);
                    r.width += advance * size;
                }
                _ => runs.push(Run { face, rtl, text: c.to_string(), width: advance * size }),
            }
        }
        // Spaces between a right-to-left run and a left-to-right one belong to the latter (so
        // they separate the words where they were typed).
        for i in 1..runs.len() {
            if runs[i - 1].rtl && !runs[i].rtl {
                let kept = runs[i - 1].text.trim_end().len();
                let moved = runs[i - 1].text.split_off(kept);
                if !moved.is_empty() {
                    let width = self.width(&moved, size, bold);
                    runs[i - 1].width -= width;
                    runs[i].text.insert_str(0, &moved);
                    runs[i].width += width;
                }
            }
        }
        runs
    }

    pub fn width(&self, text: &str, size: f32, bold: bool) -> f32 {
        text.chars().map(|c| self.pick(c, bold).1 * size).sum()
    }

    /// `text` in lines no wider than `width`: at spaces where it can, anywhere in a word (or a
    /// URL, or CJK text) that is wider than a line; its own line breaks are kept.
    pub fn wrap(&self, text: &str, width: f32, size: f32, bold: bool) -> Vec<String> {
        let mut lines = Vec::new();
        for paragraph in text.lines() {
            let mut line = String::new();
            for word in paragraph.split(' ') {
                let candidate = if line.is_empty() { word.to_owned() } else { format!("{line} {word}") };
                if self.width(&candidate, size, bold) <= width {
                    line = candidate;
                    continue;
                }
                if !line.is_empty() {
                    lines.push(std::mem::take(&mut line));
                }
                for c in word.chars() {
                    let mut next = line.clone();
                    next.push(c);
                    if !line.is_empty() && self.width(&next, size, bold) > width {
                        lines.push(std::mem::take(&mut line));
                        next = c.to_string();
                    }
                    line = next;
                }
            }
            lines.push(line);
        }
        lines
    }
}

/// Lays out ops top to bottom, starting a new page when one is full.
struct Writer<'m, 'a> {
    m: &'m Measure<'a>,
    pages: Pages,
    /// The current baseline.
    y: f32,
}

impl Writer<'_, '_> {
    fn ops(&mut self) -> &mut Vec<Op> {
        if self.pages.is_empty() {
            self.pages.push(Vec::new());
        }
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }

    /// Moves the baseline down by `by`, onto a new page if it would pass the bottom.
    fn down(&mut self, by: f32) {
        self.y += by;
        if self.y > BOTTOM {
            self.pages.push(Vec::new());
            self.y = MARGIN + 12.0;
        }
    }

    /// Room for `height` more on this page, or a new page.
    fn keep(&mut self, height: f32) {
        if self.y + height > BOTTOM {
            self.pages.push(Vec::new());
            self.y = MARGIN + 12.0;
        }
    }

    fn text(&mut self, x: f32, text: &str, size: f32, bold: bool, grey: bool) {
        let y = self.y;
        let mut x = x;
        for run in self.m.runs(text, size, bold) {
            self.ops().push(Op::Text { x, y, size, face: run.face, text: run.text, grey, rtl: run.rtl });
            x += run.width;
        }
    }

    fn right(&mut self, right: f32, text: &str, size: f32, bold: bool, grey: bool) {
        let width = self.m.width(text, size, bold);
        self.text(right - width, text, size, bold, grey);
    }

    /// Wrapped text at `x` within `width`, each line `leading` below the previous one.
    fn paragraph(&mut self, x: f32, width: f32, text: &str, size: f32, bold: bool, grey: bool) {
        let leading = size * 1.35;
        for (i, line) in self.m.wrap(text, width, size, bold).into_iter().enumerate() {
            if i > 0 {
                self.down(leading);
            }
            self.text(x, &line, size, bold, grey);
        }
    }

    fn rule(&mut self) {
        let y = self.y;
        self.ops().push(Op::Rule { x: MARGIN, y, width: RIGHT - MARGIN });
    }
}

fn money(d: &Decimal6, token: &str) -> String {
    format!("{} {token}", d.to_trimmed(2))
}

fn day(at: chrono::DateTime<chrono::Utc>) -> String {
    at.format("%-d %b %Y").to_string()
}

/// The QR code of `text`: the dark modules' columns per row.
fn qr(text: &str) -> Option<Vec<Vec<usize>>> {
    let code = qrcode::QrCode::new(text.as_bytes()).ok()?;
    let width = code.width();
    let colors = code.to_colors();
    Some(
        colors
            .chunks(width)
            .map(|row| row.iter().enumerate().filter(|(_, c)| **c == qrcode::Color::Dark).map(|(i, _)| i).collect())
            .collect(),
    )
}

/// The pages of `doc`.
pub fn lay_out(doc: &InvoiceDocument, m: &Measure<'_>) -> Pages {
    let mut w = Writer { m, pages: vec![Vec::new()], y: MARGIN + 14.0 };
    header(&mut w, doc);
    facts(&mut w, doc);
    customer(&mut w, doc);
    items(&mut w, doc);
    totals(&mut w, doc);
    notes(&mut w, doc);
    pay_online(&mut w, doc);
    w.pages
}

/// The merchant on the left, the document on the right.
fn header(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let inv = &doc.invoice;
    w.text(MARGIN, &doc.merchant_name, 18.0, true, false);
    w.right(RIGHT, "INVOICE", 20.0, true, false);
    w.down(18.0);
    if let Some(site) = &doc.merchant_website {
        w.text(MARGIN, site, 9.0, false, true);
    }
    w.right(RIGHT, inv.number.as_deref().unwrap_or(""), 11.0, false, false);
    w.down(28.0);
}

/// Dates, purchase order and terms.
fn facts(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let (inv, c) = (&doc.invoice, &doc.invoice.fields.content);
    let mut facts: Vec<(&str, String)> = Vec::new();
    if let Some(at) = inv.issued_at {
        facts.push(("Issued", day(at)));
    }
    if let Some(at) = c.due_at {
        facts.push(("Due", day(at)));
    }
    if let Some(po) = &c.purchase_order_number {
        facts.push(("Purchase order", po.clone()));
    }
    if let Some(terms) = &c.payment_terms {
        facts.push(("Payment terms", terms.clone()));
    }
    for (label, value) in &facts {
        w.text(MARGIN, label, 9.5, false, true);
        w.paragraph(MARGIN + 95.0, RIGHT - MARGIN - 95.0, value, 9.5, false, false);
        w.down(14.0);
    }
}

/// Whom the invoice is for.
fn customer(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let Some(customer) = &doc.invoice.fields.content.customer else { return };
    w.down(10.0);
    w.text(MARGIN, "Billed to", 10.0, true, false);
    w.down(14.0);
    let lines = [&customer.name, &customer.company, &customer.email, &customer.billing_address];
    for line in lines.into_iter().flatten() {
        w.paragraph(MARGIN, 300.0, line, 10.0, false, false);
        w.down(13.5);
    }
}

/// The line items with their column header.
fn items(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let c = &doc.invoice.fields.content;
    let (qty_right, unit_right) = (385.0, 465.0);
    if c.lines.is_empty() {
        return;
    }
    w.down(12.0);
    w.keep(40.0);
    w.text(MARGIN, "Description", 9.0, true, true);
    w.right(qty_right, "Qty", 9.0, true, true);
    w.right(unit_right, "Unit price", 9.0, true, true);
    w.right(RIGHT, "Amount", 9.0, true, true);
    w.down(6.0);
    w.rule();
    w.down(14.0);
    for line in &c.lines {
        let described = w.m.wrap(&line.description, 255.0, 10.0, false);
        w.keep(14.0 * described.len() as f32 + 6.0);
        w.right(qty_right, &line.quantity.to_trimmed(0), 10.0, false, false);
        w.right(unit_right, &line.unit_amount.to_trimmed(2), 10.0, false, false);
        w.right(RIGHT, &line.amount().to_trimmed(2), 10.0, false, false);
        for (i, text) in described.iter().enumerate() {
            if i > 0 {
                w.down(13.5);
            }
            w.text(MARGIN, text, 10.0, false, false);
        }
        w.down(8.0);
        w.rule();
        w.down(14.0);
    }
}

/// Subtotal, discount, taxes, total, paid and remaining.
fn totals(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let (inv, c) = (&doc.invoice, &doc.invoice.fields.content);
    let token = inv.fields.currency.symbol();
    let label_x = 320.0;
    let mut totals: Vec<(String, String, bool)> = vec![("Subtotal".into(), money(&inv.totals.subtotal, token), false)];
    if let Some(d) = &c.discount {
        let label = match d {
            Discount::Percentage(p) => format!("Discount ({} %)", p.value().to_trimmed(0)),
            Discount::Fixed(_) => "Discount".into(),
        };
        totals.push((label, format!("−{}", money(&inv.totals.discount, token)), false));
    }
    for t in &c.taxes {
        let mut label = t.label.clone();
        if let Some(j) = &t.jurisdiction {
            label.push_str(&format!(" · {j}"));
        }
        if let Some(r) = &t.registration_reference {
            label.push_str(&format!(" · {r}"));
        }
        totals.push((label, money(&t.amount, token), false));
    }
    totals.push(("Total".into(), money(&inv.totals.total, token), true));
    totals.push(("Paid".into(), money(&inv.customer_amount_paid, token), false));
    totals.push(("Remaining".into(), money(&inv.remaining(), token), true));
    w.down(6.0);
    for (label, value, strong) in &totals {
        w.keep(16.0);
        w.right(RIGHT, value, 10.0, *strong, false);
        w.paragraph(label_x, 150.0, label, 10.0, *strong, false);
        w.down(15.0);
    }
    let network = format!("Amounts in {token} on Polygon (chain {}).", stablepay_domain::merchant::POLYGON_CHAIN_ID);
    w.text(label_x, &network, 8.5, false, true);
    w.down(24.0);
}

/// The memo and the footer.
fn notes(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let c = &doc.invoice.fields.content;
    for (title, text, grey) in [("Memo", &c.memo, false), ("", &c.footer, true)] {
        if let Some(text) = text {
            w.keep(30.0);
            if !title.is_empty() {
                w.text(MARGIN, title, 10.0, true, false);
                w.down(14.0);
            }
            w.paragraph(MARGIN, RIGHT - MARGIN, text, 9.5, false, grey);
            w.down(20.0);
        }
    }
}

/// Where to pay, with its QR code.
fn pay_online(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let Some(url) = &doc.hosted_url else { return };
    let size = 96.0;
    w.keep(size + 20.0);
    let top = w.y;
    w.text(MARGIN, "Pay online", 10.0, true, false);
    w.down(14.0);
    w.paragraph(MARGIN, RIGHT - MARGIN - size - 20.0, url, 9.0, false, false);
    if let Some(dark) = qr(url) {
        let module = size / dark.len().max(1) as f32;
        w.ops().push(Op::Qr { x: RIGHT - size, y: top - 10.0, module, dark });
    }
    w.y = w.y.max(top + size);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measure() -> Measure<'static> {
        Measure::new(crate::fonts::REGULAR, crate::fonts::BOLD, crate::fonts::FALLBACK)
    }

    #[test]
    fn characters_use_the_first_font_that_has_them() {
        let m = measure();
        let runs: Vec<(Face, bool)> =
            m.runs("Café 東京 שלום עולם", 10.0, false).into_iter().map(|r| (r.face, r.rtl)).collect();
        assert_eq!(
            runs,
            vec![(Face::Regular, false), (Face::Fallback, false), (Face::Regular, false), (Face::Regular, true)]
        );
        assert!(m.width("WWW", 10.0, false) > m.width("iii", 10.0, false));
    }

    #[test]
    fn wrapping_keeps_every_character_within_the_width() {
        let m = measure();
        let text = "A rather long description of consulting work, https://pay.example/i/AbCdEfGhIjKlMnOpQrStUvWxYz0123456789abcdefgh and 東京の会議室";
        let lines = m.wrap(text, 120.0, 10.0, false);
        assert!(lines.len() > 3, "{lines:?}");
        assert!(lines.iter().all(|l| m.width(l, 10.0, false) <= 120.0), "{lines:?}");
        let joined: String = lines.concat().chars().filter(|c| !c.is_whitespace()).collect();
        assert_eq!(joined, text.chars().filter(|c| !c.is_whitespace()).collect::<String>());
    }
}
