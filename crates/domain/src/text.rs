//! Text direction: people's text (names, titles, descriptions, references) may be written
//! right to left, and may carry Unicode's explicit direction controls. Two rules keep such text
//! from reordering what surrounds it:
//!
//! - [`check_bidi`]: an explicit embedding, override or isolate (U+202A to U+202E, U+2066 to
//!   U+2069) must be closed within the value (as compilers refuse unpaired ones in source):
//!   `"\u{202E}gnp.exe"` is refused, a closed run is kept as written;
//! - [`isolated`]: where people's text meets other text in plain text (page titles, PDFs,
//!   emails), it is wrapped in a first-strong isolate (U+2068 ... U+2069); HTML pages use
//!   `<bdi>` and `dir="auto"` instead.

use crate::error::Error;

/// First strong isolate: the text inside takes the direction of its first strong character.
pub const FSI: char = '\u{2068}';
/// Pop directional isolate: closes [`FSI`].
pub const PDI: char = '\u{2069}';

/// Refuses a value whose explicit direction controls are not paired: an embedding or override
/// (LRE, RLE, LRO, RLO) left open or closed by something else than PDF (U+202C), an isolate
/// (LRI, RLI, FSI) left open or closed by something else than PDI (U+2069). Errors:
/// `Validation` (`field`).
pub fn check_bidi(field: &str, value: &str) -> Result<(), Error> {
    #[derive(PartialEq)]
    enum Open {
        Embedding,
        Isolate,
    }
    let refuse = || {
        Error::validation(
            field,
            "must not contain unpaired direction controls (U+202A-U+202E, U+2066-U+2069): they reorder the text around it",
        )
    };
    let mut open = Vec::new();
    for c in value.chars() {
        match c {
            '\u{202A}' | '\u{202B}' | '\u{202D}' | '\u{202E}' => open.push(Open::Embedding),
            '\u{2066}'..='\u{2068}' => open.push(Open::Isolate),
            '\u{202C}' if open.last() == Some(&Open::Embedding) => {
                open.pop();
            }
            '\u{2069}' if open.last() == Some(&Open::Isolate) => {
                open.pop();
            }
            '\u{202C}' | '\u{2069}' => return Err(refuse()),
            _ => {}
        }
    }
    if open.is_empty() { Ok(()) } else { Err(refuse()) }
}

/// `text` in a first-strong isolate, for plain text where it meets other text.
pub fn isolated(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 6);
    out.push(FSI);
    out.push_str(text);
    out.push(PDI);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unpaired_controls_are_refused_and_paired_ones_kept() {
        for ok in
            ["Café", "شركة", "a\u{202E}b\u{202C}c", "\u{2067}שלום\u{2069} shop", "\u{2068}\u{202B}x\u{202C}\u{2069}"]
        {
            assert!(check_bidi("name", ok).is_ok(), "{ok:?}");
        }
        for bad in [
            "\u{202E}gnp.exe",
            "a\u{202C}",
            "\u{2066}x",
            "x\u{2069}",
            "\u{2068}\u{202B}x\u{2069}\u{202C}",
            "\u{202A}\u{202B}\u{202C}",
        ] {
            let e = check_bidi("name", bad).unwrap_err();
            assert_eq!(e.field(), Some("name"), "{bad:?}");
        }
        assert_eq!(isolated("gnp.exe"), "\u{2068}gnp.exe\u{2069}");
    }
}
