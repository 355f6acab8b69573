//! The invoice's layout: what to draw where, measured with the shipped fonts (each character in
//! the first font that has it), wrapped to its column, and split into A4 pages.

use skrifa::instance::{LocationRef, Size};
use skrifa::metrics::GlyphMetrics;
use skrifa::{FontRef, MetadataProvider};
use stablepay_domain::invoice::document::InvoiceDocument;
use stablepay_domain::invoice::totals::Discount;
use stablepay_domain::money::{Decimal6, NumberStyle};

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
    /// The merchant's logo: its top left and its size.
    Logo {
        x: f32,
        y: f32,
        width: f32,
        height: f32,
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

    /// `text` cut into runs of one font and one direction each, in visual order (left to
    /// right), with their widths at `size`. Directions come from the Unicode bidirectional
    /// algorithm on a left-to-right paragraph, as a browser lays out the hosted page: neutral
    /// characters (spaces, dashes, parentheses, digits) between a right-to-left and a
    /// left-to-right word belong where the algorithm puts them. A right-to-left run is drawn
    /// as one piece per font, right to left.
    fn runs(&self, text: &str, size: f32, bold: bool) -> Vec<Run> {
        use unicode_bidi::{BidiInfo, Level};
        let info = BidiInfo::new(text, Some(Level::ltr()));
        let mut runs: Vec<Run> = Vec::new();
        for para in &info.paragraphs {
            let (levels, visual) = info.visual_runs(para, para.range.clone());
            for range in visual {
                let rtl = levels.get(range.start).is_some_and(|l| l.is_rtl());
                let mut pieces: Vec<Run> = Vec::new();
                for c in text.get(range).unwrap_or("").chars() {
                    let (face, advance) = self.pick(c, bold);
                    match pieces.last_mut() {
                        Some(r) if r.face == face => {
                            r.text.push(c);
                            r.width += advance * size;
                        }
                        _ => pieces.push(Run { face, rtl, text: c.to_string(), width: advance * size }),
                    }
                }
                if rtl {
                    pieces.reverse();
                }
                runs.extend(pieces);
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

/// The columns of the line items (their right edges), sized to their content.
#[derive(Clone, Copy, Debug)]
struct Columns {
    qty_right: f32,
    unit_right: f32,
    description_width: f32,
}

/// Lays out ops top to bottom, starting a new page when one is full (repeating the items'
/// column header there while the items run).
struct Writer<'m, 'a> {
    m: &'m Measure<'a>,
    pages: Pages,
    /// The current baseline.
    y: f32,
    /// The items' columns, while the items are being laid out.
    table: Option<Columns>,
}

/// Where a continuation page's content starts (below the test-mode banner's line).
const TOP: f32 = MARGIN + 16.0;

impl Writer<'_, '_> {
    fn ops(&mut self) -> &mut Vec<Op> {
        if self.pages.is_empty() {
            self.pages.push(Vec::new());
        }
        let last = self.pages.len() - 1;
        &mut self.pages[last]
    }

    fn new_page(&mut self) {
        self.pages.push(Vec::new());
        self.y = TOP;
        if let Some(columns) = self.table {
            self.column_header(columns);
        }
    }

    /// Moves the baseline down by `by`, onto a new page if it would pass the bottom.
    fn down(&mut self, by: f32) {
        self.y += by;
        if self.y > BOTTOM {
            self.new_page();
        }
    }

    /// Room for `height` more on this page, or a new page.
    fn keep(&mut self, height: f32) {
        if self.y + height > BOTTOM {
            self.new_page();
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

    fn column_header(&mut self, c: Columns) {
        self.text(MARGIN, "Description", 9.0, true, true);
        self.right(c.qty_right, "Qty", 9.0, true, true);
        self.right(c.unit_right, "Unit price", 9.0, true, true);
        self.right(RIGHT, "Amount", 9.0, true, true);
        self.y += 6.0;
        self.rule();
        self.y += 14.0;
    }
}

/// `d` as people read it: thousands grouped, at least `min_fraction` decimals (`1,234.50`).
fn grouped(d: &Decimal6, min_fraction: usize) -> String {
    d.readable(min_fraction, NumberStyle::English)
}

fn money(d: &Decimal6, token: &str) -> String {
    format!("{} {token}", grouped(d, 2))
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

/// The pages of `doc`: every page names the document and its page ("INV-000042 · Page 2 of 3"),
/// and a test-mode document says so on every page.
/// The largest a logo is drawn, in points (it is never enlarged past one point per pixel).
const LOGO_BOX: (f32, f32) = (160.0, 44.0);

/// Lays out `doc`; `logo` is the pixel size of its logo when it is drawn (it decoded).
pub fn lay_out(doc: &InvoiceDocument, m: &Measure<'_>, logo: Option<(u32, u32)>) -> Pages {
    let mut w = Writer { m, pages: vec![Vec::new()], y: MARGIN + 14.0, table: None };
    if let Some((width, height)) = logo {
        let (width, height) = logo_size(width, height);
        let top = MARGIN - 4.0;
        w.ops().push(Op::Logo { x: MARGIN, y: top, width, height });
        w.y = top + height + 22.0;
    }
    header(&mut w, doc);
    facts(&mut w, doc);
    customer(&mut w, doc);
    items(&mut w, doc);
    closing(&mut w, doc);
    let mut pages = w.pages;
    mark_pages(&mut pages, doc, m);
    pages
}

/// A logo of `width` x `height` pixels fitted in [`LOGO_BOX`], in points.
fn logo_size(width: u32, height: u32) -> (f32, f32) {
    let (w, h) = (width.max(1) as f32, height.max(1) as f32);
    let scale = (LOGO_BOX.0 / w).min(LOGO_BOX.1 / h).min(1.0);
    (w * scale, h * scale)
}

/// The footer of every page, and the test-mode banner.
fn mark_pages(pages: &mut Pages, doc: &InvoiceDocument, m: &Measure<'_>) {
    let count = pages.len();
    let kind = if doc.is_receipt() { "Receipt" } else { "Invoice" };
    let number = doc.invoice.number.as_deref().unwrap_or("");
    let test = doc.invoice.scope.mode == stablepay_domain::Mode::Test;
    for (i, ops) in pages.iter_mut().enumerate() {
        let mut w = Writer { m, pages: vec![std::mem::take(ops)], y: PAGE_HEIGHT - 30.0, table: None };
        w.text(MARGIN, &format!("{kind} {number}"), 8.5, false, true);
        w.right(RIGHT, &format!("Page {} of {count}", i + 1), 8.5, false, true);
        if test {
            w.y = 30.0;
            w.text(MARGIN, "TEST MODE — not a real invoice: no payment is due, nothing was paid", 9.0, true, false);
        }
        *ops = w.pages.into_iter().next().unwrap_or_default();
    }
}

/// The merchant (with its seller block) on the left, the document on the right.
fn header(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let inv = &doc.invoice;
    let receipt = doc.is_receipt();
    w.text(MARGIN, &doc.merchant_name, 18.0, true, false);
    w.right(RIGHT, if receipt { "RECEIPT" } else { "INVOICE" }, 20.0, true, false);
    w.down(18.0);
    let s = &doc.seller;
    let mut seller: Vec<String> = Vec::new();
    seller.extend(s.legal_name.clone());
    if let Some(a) = &s.postal_address {
        seller.extend(a.lines().map(str::to_owned));
    }
    seller.extend(s.tax_id.as_ref().map(|t| format!("Tax ID: {t}")));
    seller.extend(s.support_email.clone());
    seller.extend(doc.merchant_website.clone());
    let right: Vec<(String, bool)> =
        [Some((inv.number.clone().unwrap_or_default(), false)), receipt.then(|| ("PAID".to_owned(), true))]
            .into_iter()
            .flatten()
            .collect();
    let rows = seller.len().max(right.len()).max(1);
    for i in 0..rows {
        if let Some(line) = seller.get(i) {
            w.text(MARGIN, line, 9.0, false, true);
        }
        if let Some((text, strong)) = right.get(i) {
            w.right(RIGHT, text, if *strong { 13.0 } else { 11.0 }, *strong, false);
        }
        w.down(12.0);
    }
    w.down(16.0);
}

/// Dates, references, purchase order and terms.
fn facts(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let (inv, c) = (&doc.invoice, &doc.invoice.fields.content);
    let mut facts: Vec<(&str, String)> = Vec::new();
    if let Some(at) = inv.issued_at {
        facts.push(("Issued", day(at)));
    }
    if doc.is_receipt() {
        if let Some(at) = inv.paid_at {
            facts.push(("Paid", day(at)));
        }
    } else if let Some(at) = c.due_at {
        facts.push(("Due", day(at)));
    }
    if let Some(r) = &c.external_reference {
        facts.push(("Reference", r.clone()));
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

/// One row of the items: its texts as printed.
struct ItemRow {
    description: String,
    sku: Option<String>,
    qty: String,
    unit: String,
    amount: String,
}

/// The rows of the items: the invoice's lines, or for an amount-only invoice one line (its
/// reference, or "Payment").
fn item_rows(doc: &InvoiceDocument) -> Vec<ItemRow> {
    let (inv, c) = (&doc.invoice, &doc.invoice.fields.content);
    if c.lines.is_empty() {
        let description = c.external_reference.clone().unwrap_or_else(|| "Payment".to_owned());
        let total = grouped(&inv.totals.total, 2);
        return vec![ItemRow { description, sku: None, qty: "1".into(), unit: total.clone(), amount: total }];
    }
    c.lines
        .iter()
        .map(|l| ItemRow {
            description: l.description.clone(),
            sku: l.sku.clone(),
            qty: grouped(&l.quantity, 0),
            unit: grouped(&l.unit_amount, 2),
            amount: grouped(&l.amount(), 2),
        })
        .collect()
}

/// The columns sized to the widest figure of each (never overlapping: the description takes
/// what is left, and wraps).
fn columns(w: &Writer<'_, '_>, rows: &[ItemRow]) -> Columns {
    let widest = |label: &str, pick: &dyn Fn(&ItemRow) -> &str| {
        rows.iter().map(|r| w.m.width(pick(r), 10.0, false)).fold(w.m.width(label, 9.0, true), f32::max)
    };
    let gap = 16.0;
    let amount = widest("Amount", &|r| &r.amount);
    let unit = widest("Unit price", &|r| &r.unit);
    let qty = widest("Qty", &|r| &r.qty);
    let unit_right = RIGHT - amount - gap;
    let qty_right = unit_right - unit - gap;
    let description_width = (qty_right - qty - gap - MARGIN).max(100.0);
    Columns { qty_right, unit_right, description_width }
}

/// The line items with their column header (repeated on continuation pages).
fn items(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let rows = item_rows(doc);
    let c = columns(w, &rows);
    w.down(12.0);
    w.keep(40.0);
    w.column_header(c);
    w.table = Some(c);
    for row in &rows {
        let described = w.m.wrap(&row.description, c.description_width, 10.0, false);
        let lines = described.len() + usize::from(row.sku.is_some());
        w.keep(14.0 * lines as f32 + 6.0);
        w.right(c.qty_right, &row.qty, 10.0, false, false);
        w.right(c.unit_right, &row.unit, 10.0, false, false);
        w.right(RIGHT, &row.amount, 10.0, false, false);
        for (i, text) in described.iter().enumerate() {
            if i > 0 {
                w.y += 13.5;
            }
            w.text(MARGIN, text, 10.0, false, false);
        }
        if let Some(sku) = &row.sku {
            w.y += 12.5;
            w.text(MARGIN, &format!("SKU {sku}"), 8.5, false, true);
        }
        w.y += 8.0;
        w.rule();
        w.down(14.0);
    }
    w.table = None;
}

/// The totals, the payments, the notes and where to pay, kept together where they fit (the
/// last page is never a QR code alone).
fn closing(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let pay_block = if doc.is_receipt() || doc.hosted_url.is_none() { 0.0 } else { 116.0 };
    let total_rows =
        4 + doc.invoice.fields.content.taxes.len() + usize::from(doc.invoice.fields.content.discount.is_some());
    let height = 15.0 * total_rows as f32 + 30.0 + 30.0 * doc.payments.len() as f32 + pay_block;
    w.keep(height.min(BOTTOM - TOP - 20.0));
    totals(w, doc);
    payments(w, doc);
    notes(w, doc);
    pay_online(w, doc);
}

/// Subtotal, discount, taxes, total, paid and the amount due.
fn totals(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let (inv, c) = (&doc.invoice, &doc.invoice.fields.content);
    let token = inv.fields.currency.symbol();
    let label_x = 320.0;
    let mut totals: Vec<(String, String, bool)> = vec![("Subtotal".into(), money(&inv.totals.subtotal, token), false)];
    if let Some(d) = &c.discount {
        let label = match d {
            Discount::Percentage(p) => format!("Discount ({}\u{a0}%)", p.value().to_trimmed(0)),
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
    totals.push(("Amount due".into(), money(&inv.remaining(), token), true));
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

/// Each credited payment: when, how much, on which network, and its transaction.
fn payments(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    if doc.payments.is_empty() {
        return;
    }
    let token = doc.invoice.fields.currency.symbol();
    w.keep(40.0);
    w.text(MARGIN, "Payments", 10.0, true, false);
    w.down(15.0);
    for p in &doc.payments {
        w.keep(30.0);
        let when = p.confirmed_at.map(day).unwrap_or_default();
        w.text(MARGIN, &when, 9.5, false, false);
        w.text(MARGIN + 95.0, &format!("Polygon (chain {})", p.chain_id), 9.5, false, false);
        w.right(RIGHT, &money(&p.customer_amount_credited, token), 9.5, false, false);
        w.down(12.0);
        w.paragraph(
            MARGIN + 95.0,
            RIGHT - MARGIN - 95.0,
            &format!("Transaction {}", p.transaction_hash.as_str()),
            8.0,
            false,
            true,
        );
        w.down(16.0);
    }
    w.down(6.0);
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

/// Where to pay, with its QR code (not on a receipt).
fn pay_online(w: &mut Writer<'_, '_>, doc: &InvoiceDocument) {
    let Some(url) = &doc.hosted_url else { return };
    if doc.is_receipt() {
        return;
    }
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

    /// The visual order of `text`: each run's characters as they appear left to right.
    fn visual(m: &Measure<'_>, text: &str) -> String {
        m.runs(text, 10.0, false)
            .into_iter()
            .map(|r| if r.rtl { r.text.chars().rev().collect::<String>() } else { r.text })
            .collect()
    }

    #[test]
    fn mixed_directions_follow_the_bidirectional_algorithm() {
        let m = measure();
        // The dash and the English words stay together after the Hebrew (an LTR paragraph).
        let hebrew = "תמיכה טכנית — Hebrew support hours";
        let runs = m.runs(hebrew, 10.0, false);
        assert!(runs[0].rtl);
        assert_eq!(runs[0].text, "תמיכה טכנית");
        assert_eq!(runs[1..].iter().map(|r| r.text.as_str()).collect::<String>(), " — Hebrew support hours");
        assert_eq!(visual(&m, hebrew), "תינכט הכימת — Hebrew support hours");
        // The parenthesis stays with its text.
        let arabic = "ترجمة (website translation to Arabic)";
        let runs = m.runs(arabic, 10.0, false);
        assert!(runs[0].rtl && runs[0].text == "ترجمة", "{:?}", runs.iter().map(|r| &r.text).collect::<Vec<_>>());
        assert_eq!(runs[1..].iter().map(|r| r.text.as_str()).collect::<String>(), " (website translation to Arabic)");
        // Right-to-left words in left-to-right text are reversed as a whole phrase.
        assert_eq!(visual(&m, "menu שלום עולם today"), "menu םלוע םולש today");
    }

    #[test]
    fn figures_get_thousands_separators() {
        let d = |s: &str| Decimal6::parse(s).unwrap();
        assert_eq!(grouped(&d("121932487.015"), 2), "121,932,487.015");
        assert_eq!(grouped(&d("999"), 2), "999.00");
        assert_eq!(grouped(&d("1000"), 0), "1,000");
        assert_eq!(grouped(&d("123456.123456"), 0), "123,456.123456");
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
