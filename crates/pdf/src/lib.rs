//! Invoice PDFs: the domain's `InvoiceRenderer` port on krilla. An A4 layout a merchant would
//! send (merchant, number, dates, customer, items, discount, taxes, totals, paid and remaining,
//! terms, memo, footer, purchase order, the hosted invoice link and its QR code), with the
//! fonts shipped in this crate (`fonts/`: DejaVu Sans for Latin, Greek, Cyrillic, Hebrew and
//! Arabic; Droid Sans Fallback for CJK) and embedded, subset, in every PDF: no system font is
//! looked up at run time. Text is drawn with its Unicode mapping, so it extracts as written.
//! The merchant's logo (PNG) is drawn at the top left when it decodes.

// Page geometry (points, font metrics) is floating point by nature; amounts are only rendered
// here, from the domain's exact decimals, never computed.
#![allow(clippy::float_arithmetic, clippy::as_conversions, clippy::cast_precision_loss)]

mod fonts;
mod layout;

use krilla::Document;
use krilla::color::rgb;
use krilla::geom::{PathBuilder, Point, Rect, Size, Transform};
use krilla::image::Image;
use krilla::metadata::Metadata;
use krilla::num::NormalizedF32;
use krilla::page::PageSettings;
use krilla::paint::Fill;
use krilla::surface::Surface;
use krilla::text::{Font, TextDirection};
use stablepay_domain::Error;
use stablepay_domain::invoice::collection::CollectionState;
use stablepay_domain::invoice::document::InvoiceDocument;
use stablepay_domain::ports::InvoiceRenderer;

use crate::fonts::{BOLD, FALLBACK, REGULAR};
use crate::layout::{Face, Op, Pages};

pub use layout::{PAGE_HEIGHT, PAGE_WIDTH};

/// The fonts, parsed once.
struct Fonts {
    regular: Font,
    bold: Font,
    fallback: Font,
}

/// Renders invoice PDFs with krilla.
pub struct KrillaRenderer {
    fonts: Fonts,
}

impl KrillaRenderer {
    /// Errors: a shipped font does not parse (a broken build).
    pub fn new() -> Result<Self, String> {
        let font = |data: &'static [u8], name: &str| Font::new(data.into(), 0).ok_or_else(|| format!("font {name}"));
        Ok(Self {
            fonts: Fonts {
                regular: font(REGULAR, "DejaVuSans")?,
                bold: font(BOLD, "DejaVuSans-Bold")?,
                fallback: font(FALLBACK, "DroidSansFallbackFull")?,
            },
        })
    }

    fn font(&self, face: Face) -> Font {
        match face {
            Face::Regular => self.fonts.regular.clone(),
            Face::Bold => self.fonts.bold.clone(),
            Face::Fallback => self.fonts.fallback.clone(),
        }
    }

    fn draw(&self, surface: &mut Surface<'_>, op: &Op, logo: Option<&Image>) {
        match op {
            Op::Text { x, y, size, face, text, grey, rtl } => {
                let shade = if *grey { 90 } else { 20 };
                surface.set_fill(Some(fill(shade, shade, shade)));
                let direction = if *rtl { TextDirection::RightToLeft } else { TextDirection::LeftToRight };
                surface.draw_text(Point::from_xy(*x, *y), self.font(*face), *size, text, false, direction);
            }
            Op::Rule { x, y, width } => {
                surface.set_fill(Some(fill(200, 200, 200)));
                rect(surface, *x, *y, *width, 0.6);
            }
            Op::Logo { x, y, width, height } => {
                if let (Some(image), Some(size)) = (logo, Size::from_wh(*width, *height)) {
                    surface.push_transform(&Transform::from_translate(*x, *y));
                    surface.draw_image(image.clone(), size);
                    surface.pop();
                }
            }
            Op::Qr { x, y, module, dark } => {
                surface.set_fill(Some(fill(0, 0, 0)));
                let mut path = PathBuilder::new();
                for (row, columns) in dark.iter().enumerate() {
                    for &column in columns {
                        let (cx, cy) = (x + column as f32 * module, y + row as f32 * module);
                        if let Some(r) = Rect::from_xywh(cx, cy, *module, *module) {
                            path.push_rect(r);
                        }
                    }
                }
                if let Some(path) = path.finish() {
                    surface.draw_path(&path);
                }
            }
        }
    }
}

fn fill(r: u8, g: u8, b: u8) -> Fill {
    Fill { paint: rgb::Color::new(r, g, b).into(), opacity: NormalizedF32::ONE, rule: Default::default() }
}

fn rect(surface: &mut Surface<'_>, x: f32, y: f32, w: f32, h: f32) {
    let mut path = PathBuilder::new();
    if let Some(r) = Rect::from_xywh(x, y, w, h) {
        path.push_rect(r);
    }
    if let Some(path) = path.finish() {
        surface.draw_path(&path);
    }
}

impl KrillaRenderer {
    /// The document's pages drawn with `logo` (if any).
    fn render(&self, document: &InvoiceDocument, logo: Option<&Image>) -> Result<Vec<u8>, Error> {
        let measure = layout::Measure::new(REGULAR, BOLD, FALLBACK);
        let pages: Pages = layout::lay_out(document, &measure, logo.map(Image::size));
        let mut pdf = Document::new();
        let title = format!("Invoice {}", document.invoice.number.as_deref().unwrap_or(""));
        pdf.set_metadata(Metadata::new().title(title).creator("stablepay".into()));
        let settings = || PageSettings::from_wh(PAGE_WIDTH, PAGE_HEIGHT);
        for ops in &pages {
            let Some(settings) = settings() else {
                return Err(Error::InvoicePdfUnavailable("page size".into()));
            };
            let mut page = pdf.start_page_with(settings);
            let mut surface = page.surface();
            for op in ops {
                self.draw(&mut surface, op, logo);
            }
            surface.finish();
            page.finish();
        }
        pdf.finish().map_err(|e| Error::InvoicePdfUnavailable(format!("{e:?}")))
    }
}

impl InvoiceRenderer for KrillaRenderer {
    fn render_pdf(&self, document: &InvoiceDocument) -> Result<Vec<u8>, Error> {
        if document.invoice.collection_state == CollectionState::Draft || document.invoice.number.is_none() {
            return Err(Error::InvoicePdfUnavailable("a draft has no document yet; issue it first".into()));
        }
        // A logo that does not decode (its header reads, its data does not) is left out: the
        // document is drawn without it.
        let logo = document.logo.as_ref().and_then(|l| Image::from_png(l.png.clone().into(), true).ok());
        match (self.render(document, logo.as_ref()), logo.is_some()) {
            (Err(_), true) => self.render(document, None),
            (rendered, _) => rendered,
        }
    }
}
