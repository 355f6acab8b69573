//! A merchant's logo: a PNG image, checked once when it is set, then shown on its invoice PDFs
//! (drawn in the header), in its emails (an inline image) and on its hosted pages (served
//! from `/logos/{digest}.png`, content-addressed, and used as the page icon).

use tiny_keccak::{Hasher, Keccak};

use crate::error::Error;

/// Largest logo file, in bytes.
pub const MAX_LOGO_BYTES: usize = 256 * 1024;
/// Largest width or height of a logo, in pixels (bounds what a decoder unpacks).
pub const MAX_LOGO_SIDE: u32 = 1024;
/// Smallest width or height of a logo, in pixels.
pub const MIN_LOGO_SIDE: u32 = 16;

/// A merchant's logo as documents refer to it (the image itself is in the merchant store).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Logo {
    /// The keccak-256 of the PNG file, 64 lowercase hex digits: names the image wherever it is
    /// served or embedded, and changes whenever the image does.
    pub digest: String,
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
}

impl Logo {
    /// Checks `png` as a logo: a PNG file (signature, an `IHDR` chunk first, well-formed chunks
    /// up to `IEND`, nothing after it) of at most [`MAX_LOGO_BYTES`], each side between
    /// [`MIN_LOGO_SIDE`] and [`MAX_LOGO_SIDE`] pixels. Errors: `Validation` on `logo`.
    pub fn check(png: &[u8]) -> Result<Logo, Error> {
        let bad = |m: &str| Error::validation("logo", m);
        if png.len() > MAX_LOGO_BYTES {
            return Err(bad(&format!("a logo is at most {} KiB", MAX_LOGO_BYTES / 1024)));
        }
        let body =
            png.strip_prefix(b"\x89PNG\r\n\x1a\n".as_slice()).ok_or_else(|| bad("a logo must be a PNG image"))?;
        let chunks = chunks(body).ok_or_else(|| bad("the PNG file is truncated or malformed"))?;
        let Some((b"IHDR", header)) = chunks.first().copied() else {
            return Err(bad("the PNG file has no IHDR chunk first"));
        };
        if chunks.last().map(|(kind, _)| *kind) != Some(b"IEND") {
            return Err(bad("the PNG file does not end with IEND"));
        }
        if !chunks.iter().any(|(kind, _)| *kind == b"IDAT") {
            return Err(bad("the PNG file has no image data"));
        }
        let side = |at: usize| header.get(at..at + 4).and_then(|b| b.try_into().ok()).map(u32::from_be_bytes);
        let (Some(width), Some(height)) = (side(0), side(4)) else {
            return Err(bad("the PNG file's IHDR chunk is too short"));
        };
        let sides = MIN_LOGO_SIDE..=MAX_LOGO_SIDE;
        if !sides.contains(&width) || !sides.contains(&height) {
            return Err(bad(&format!(
                "a logo is {MIN_LOGO_SIDE} to {MAX_LOGO_SIDE} pixels wide and high; this one is {width} x {height}"
            )));
        }
        Ok(Logo { digest: digest(png), width, height })
    }

    /// The logo's size scaled down (never up) to fit `max_width` x `max_height`, keeping its
    /// proportions (each side at least 1).
    pub fn fit(&self, max_width: u32, max_height: u32) -> (u32, u32) {
        let (w, h) = (u64::from(self.width.max(1)), u64::from(self.height.max(1)));
        let (mw, mh) = (u64::from(max_width), u64::from(max_height));
        // The smaller of the two scales, as a fraction num/den, capped at 1.
        let (num, den) = if mw * h <= mh * w { (mw, w) } else { (mh, h) };
        let (num, den) = if num >= den { (1, 1) } else { (num, den) };
        let side = |v: u64| u32::try_from((v * num / den).max(1)).unwrap_or(u32::MAX);
        (side(w), side(h))
    }

    /// The `Content-ID` of the logo inline in an email (`cid:` in its HTML).
    pub fn content_id(&self) -> String {
        format!("logo.{}@stablepay", self.digest.get(..16).unwrap_or(&self.digest))
    }

    /// Whether `text` could be a logo's digest (64 lowercase hex digits).
    pub fn is_digest(text: &str) -> bool {
        text.len() == 64 && text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }
}

/// A logo with its image, as the documents that embed it (PDF, email) need it.
#[derive(Clone, PartialEq, Eq)]
pub struct LogoImage {
    /// What names it.
    pub logo: Logo,
    /// The PNG file.
    pub png: Vec<u8>,
}

impl std::fmt::Debug for LogoImage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogoImage").field("logo", &self.logo).field("png_bytes", &self.png.len()).finish()
    }
}

/// The chunks of a PNG file after its signature, as (type, data); `None` when a length runs
/// past the end or bytes follow `IEND`. CRCs are not checked here (decoders do).
fn chunks(mut rest: &[u8]) -> Option<Vec<(&[u8; 4], &[u8])>> {
    let mut out = Vec::new();
    while !rest.is_empty() {
        let len = usize::try_from(u32::from_be_bytes(rest.get(..4)?.try_into().ok()?)).ok()?;
        let kind: &[u8; 4] = rest.get(4..8)?.try_into().ok()?;
        let data = rest.get(8..8usize.checked_add(len)?)?;
        rest = rest.get(8 + len + 4..)?;
        out.push((kind, data));
        if kind == b"IEND" {
            return rest.is_empty().then_some(out);
        }
    }
    Some(out)
}

fn digest(bytes: &[u8]) -> String {
    let mut hash = [0u8; 32];
    let mut keccak = Keccak::v256();
    keccak.update(bytes);
    keccak.finalize(&mut hash);
    hash.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(kind: &[u8; 4], data: &[u8]) -> Vec<u8> {
        let mut out = u32::try_from(data.len()).unwrap().to_be_bytes().to_vec();
        out.extend_from_slice(kind);
        out.extend_from_slice(data);
        out.extend_from_slice(&[0, 0, 0, 0]);
        out
    }

    fn png(width: u32, height: u32) -> Vec<u8> {
        let mut header = width.to_be_bytes().to_vec();
        header.extend_from_slice(&height.to_be_bytes());
        header.extend_from_slice(&[8, 6, 0, 0, 0]);
        let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
        out.extend(chunk(b"IHDR", &header));
        out.extend(chunk(b"IDAT", &[0x78, 0x9c]));
        out.extend(chunk(b"IEND", &[]));
        out
    }

    fn refusal(bytes: &[u8]) -> String {
        match Logo::check(bytes) {
            Err(Error::Validation { field, message }) => {
                assert_eq!(field, "logo");
                message
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_png_is_named_by_its_digest_and_sized_from_its_header() {
        let logo = Logo::check(&png(120, 40)).unwrap();
        assert_eq!((logo.width, logo.height), (120, 40));
        assert!(Logo::is_digest(&logo.digest), "{}", logo.digest);
        assert_ne!(logo.digest, Logo::check(&png(121, 40)).unwrap().digest);
        assert_eq!(logo.digest, Logo::check(&png(120, 40)).unwrap().digest);
    }

    #[test]
    fn anything_but_a_sound_png_of_a_logo_size_is_refused() {
        assert!(refusal(b"GIF89a....").contains("PNG"));
        assert!(refusal(&png(2000, 40)).contains("2000 x 40"));
        assert!(refusal(&png(40, 8)).contains("40 x 8"));
        let whole = png(64, 64);
        assert!(refusal(&whole[..whole.len() - 3]).contains("truncated"));
        let mut trailing = whole.clone();
        trailing.extend_from_slice(b"<script>");
        assert!(refusal(&trailing).contains("truncated or malformed"));
        let mut huge = whole.clone();
        huge.resize(MAX_LOGO_BYTES + 1, 0);
        assert!(refusal(&huge).contains("256 KiB"));
        let mut no_data = b"\x89PNG\r\n\x1a\n".to_vec();
        no_data.extend(chunk(b"IHDR", &whole[16..29]));
        no_data.extend(chunk(b"IEND", &[]));
        assert!(refusal(&no_data).contains("no image data"));
    }

    #[test]
    fn a_logo_fits_a_box_keeping_its_proportions() {
        let logo = |width, height| Logo { digest: "d".into(), width, height };
        assert_eq!(logo(400, 100).fit(200, 48), (192, 48));
        assert_eq!(logo(1000, 100).fit(200, 48), (200, 20));
        assert_eq!(logo(32, 32).fit(200, 48), (32, 32));
        assert_eq!(logo(1024, 16).fit(40, 40), (40, 1));
    }

    #[test]
    fn digests_are_64_lowercase_hex_digits() {
        assert!(Logo::is_digest(&"a".repeat(64)));
        assert!(!Logo::is_digest(&"A".repeat(64)));
        assert!(!Logo::is_digest(&"a".repeat(63)));
        assert!(!Logo::is_digest(&format!("{}.png", "a".repeat(60))));
    }
}
