//! The fonts shipped in this crate (`fonts/`), compiled into the binary: never looked up on the
//! host.

/// DejaVu Sans: Latin, Greek, Cyrillic, Hebrew and Arabic.
pub(crate) const REGULAR: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");
/// DejaVu Sans Bold.
pub(crate) const BOLD: &[u8] = include_bytes!("../fonts/DejaVuSans-Bold.ttf");
/// Droid Sans Fallback: what DejaVu lacks (CJK).
pub(crate) const FALLBACK: &[u8] = include_bytes!("../fonts/DroidSansFallbackFull.ttf");
