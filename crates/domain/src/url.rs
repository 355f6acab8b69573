//! Strict absolute HTTP(S) URLs (return URLs, merchant websites), and the addresses of the
//! hosted pages.

use std::fmt;

use crate::ids::{CheckoutSessionId, PublicToken};

/// Where customers reach this service's hosted pages: the one rule of their addresses
/// (`checkoutUrl`, `hostedInvoiceUrl`, a payment link's `url`, and the links in emails and
/// PDFs). The base is the operator's `STABLEPAY_PUBLIC_BASE_URL` as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublicPages {
    base: String,
}

impl PublicPages {
    /// The pages under `base` (`https://pay.example.com`).
    pub fn new(base: impl Into<String>) -> Self {
        Self { base: base.into() }
    }

    /// The base address, as configured.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The hosted checkout page of a session.
    pub fn checkout(&self, session: &CheckoutSessionId) -> String {
        format!("{}/checkout/{}", self.base, session.as_str())
    }

    /// The hosted invoice page behind an invoice's public token.
    pub fn invoice(&self, token: &PublicToken) -> String {
        format!("{}/i/{}", self.base, token.as_str())
    }

    /// The hosted page of a payment link.
    pub fn payment_link(&self, public_id: &PublicToken) -> String {
        format!("{}/l/{}", self.base, public_id.as_str())
    }
}

/// An absolute `http` or `https` URL without credentials, at most 2048 bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    https: bool,
    /// `scheme://host[:port]`, lower-cased.
    origin: String,
}

/// Why a URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("must be an absolute http or https URL")]
    /// Not an absolute `http://` or `https://` URL.
    NotAbsoluteHttp,
    #[error("must not contain credentials")]
    /// The URL carries credentials (`user:password@`).
    Credentials,
    #[error("must be at most 2048 bytes")]
    /// Longer than [`MAX_URL_BYTES`].
    TooLong,
    #[error("has an invalid host or port")]
    /// The host or port is not valid.
    BadHost,
    #[error("must not contain spaces or control characters")]
    /// The URL holds spaces or control characters.
    BadCharacters,
}

/// The longest URL accepted, in UTF-8 bytes.
pub const MAX_URL_BYTES: usize = 2048;

impl HttpUrl {
    /// Checks an absolute http(s) URL without credentials, with a valid host and port. Errors: the
    /// first [`UrlError`] that applies.
    pub fn parse(input: &str) -> Result<Self, UrlError> {
        if input.len() > MAX_URL_BYTES {
            return Err(UrlError::TooLong);
        }
        if input.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(UrlError::BadCharacters);
        }
        let (scheme, rest) = input.split_once("://").ok_or(UrlError::NotAbsoluteHttp)?;
        let https = match scheme.to_ascii_lowercase().as_str() {
            "https" => true,
            "http" => false,
            _ => return Err(UrlError::NotAbsoluteHttp),
        };
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let authority = &rest[..end];
        if authority.contains('@') {
            return Err(UrlError::Credentials);
        }
        let (host, port) = split_port(authority)?;
        let host_ok = !host.is_empty()
            && (host.starts_with('[') && host.ends_with(']')
                || host.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.'));
        if !host_ok {
            return Err(UrlError::BadHost);
        }
        let mut origin = format!("{}://{}", if https { "https" } else { "http" }, host.to_ascii_lowercase());
        if let Some(port) = port {
            origin.push(':');
            origin.push_str(port);
        }
        Ok(Self { text: input.to_owned(), https, origin })
    }

    /// Whether the scheme is https.
    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The URL's origin (scheme, lowercased host, port): what live-mode return URLs must share with
    /// the merchant's reviewed website.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The URL as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

fn split_port(authority: &str) -> Result<(&str, Option<&str>), UrlError> {
    let colon = if authority.starts_with('[') {
        authority.find(']').and_then(|i| authority[i..].find(':').map(|j| i + j))
    } else {
        authority.rfind(':')
    };
    match colon {
        None => Ok((authority, None)),
        Some(i) => {
            let port = &authority[i + 1..];
            let ok = !port.is_empty() && port.len() <= 5 && port.parse::<u16>().is_ok();
            if ok { Ok((&authority[..i], Some(port))) } else { Err(UrlError::BadHost) }
        }
    }
}

impl fmt::Display for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for HttpUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        let u = HttpUrl::parse("HTTPS://Shop.Example.com:8443/thanks?x=1").unwrap();
        assert!(u.is_https());
        assert_eq!(u.origin(), "https://shop.example.com:8443");
        assert_eq!(HttpUrl::parse("http://localhost").unwrap().origin(), "http://localhost");
        assert_eq!(HttpUrl::parse("http://[::1]:80/").unwrap().origin(), "http://[::1]:80");
    }

    #[test]
    fn refuses() {
        for (input, err) in [
            ("ftp://x.com", UrlError::NotAbsoluteHttp),
            ("/relative", UrlError::NotAbsoluteHttp),
            ("javascript:alert(1)", UrlError::NotAbsoluteHttp),
            ("https://user:pw@x.com", UrlError::Credentials),
            ("https://x.com/a b", UrlError::BadCharacters),
            ("https://", UrlError::BadHost),
            ("https://x.com:99999", UrlError::BadHost),
            ("https://x_y.com", UrlError::BadHost),
        ] {
            assert_eq!(HttpUrl::parse(input), Err(err), "{input}");
        }
        let long = format!("https://x.com/{}", "a".repeat(2048));
        assert_eq!(HttpUrl::parse(&long), Err(UrlError::TooLong));
    }
}
