//! QR codes (EIP-681 payment requests on the hosted pages, two-factor enrolment URIs in the
//! dashboard), rendered here as SVG (no outside service).

use qrcode::QrCode;
use qrcode::render::svg;

/// The QR code of `text` as an SVG element (`None` if it does not fit a QR code).
pub fn svg(text: &str) -> Option<String> {
    let code = QrCode::new(text.as_bytes()).ok()?;
    let image = code
        .render::<svg::Color<'_>>()
        .min_dimensions(220, 220)
        .dark_color(svg::Color("#111111"))
        .light_color(svg::Color("#ffffff"))
        .quiet_zone(true)
        .build();
    // The renderer starts with an XML declaration, which has no place inside HTML.
    let start = image.find("<svg")?;
    Some(image[start..].to_owned())
}

#[cfg(test)]
mod tests {
    use stablepay_domain::invoice::public::transfer_uri;

    use super::*;

    #[test]
    fn a_transfer_request_is_a_qr_code() {
        let uri = transfer_uri("0xToken", 137, "0xWallet", "84000000");
        assert_eq!(uri, "ethereum:0xToken@137/transfer?address=0xWallet&uint256=84000000");
        let svg = svg(&uri).unwrap();
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"), "{svg}");
    }
}
