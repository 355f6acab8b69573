//! Strict absolute HTTP(S) URLs (return URLs, merchant websites), and the addresses of the
//! hosted pages.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::ids::{CheckoutSessionId, PublicToken};

/// Where customers reach this service's hosted pages: the one rule of their addresses
/// (`checkoutUrl`, `hostedInvoiceUrl`, a payment link's `url`, and the links in emails and
/// PDFs). The base is the operator's `STABLEPAY_PUBLIC_BASE_URL` as configured.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PublicPages {
    base: String,
    explorer: String,
}

/// The block explorer transactions link to by default (Polygon's).
pub const DEFAULT_EXPLORER: &str = "https://polygonscan.com";

impl PublicPages {
    /// The pages under `base` (`https://pay.example.com`), linking transactions to Polygonscan.
    pub fn new(base: impl Into<String>) -> Self {
        Self { base: base.into(), explorer: DEFAULT_EXPLORER.to_owned() }
    }

    /// The same pages, linking transactions to the explorer at `explorer` (its `/tx/{hash}`).
    pub fn with_explorer(self, explorer: impl Into<String>) -> Self {
        Self { explorer: explorer.into().trim_end_matches('/').to_owned(), ..self }
    }

    /// A live transaction on the block explorer.
    pub fn transaction(&self, hash: &str) -> String {
        format!("{}/tx/{hash}", self.explorer)
    }

    /// The document (invoice or receipt) behind a hosted invoice link, to download.
    pub fn invoice_pdf(&self, token: &PublicToken) -> String {
        format!("{}/v1/public/invoices/{}/pdf", self.base, token.as_str())
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

    /// A file of a monthly statement behind its token (`file`: `invoices` or `payments`), to
    /// download.
    pub fn statement_file(&self, token: &PublicToken, file: &str) -> String {
        format!("{}/s/{}/{file}.csv", self.base, token.as_str())
    }

    /// A dashboard page an emailed account link opens (`page`: `verify-email`,
    /// `reset-password`, `accept-invitation`), with its token.
    pub fn account_link(&self, page: &str, token: &PublicToken) -> String {
        format!("{}/dashboard/{page}?token={}", self.base, token.as_str())
    }
}

/// An absolute `http` or `https` URL without credentials, at most 2048 bytes.
#[derive(Clone, PartialEq, Eq)]
pub struct HttpUrl {
    text: String,
    https: bool,
    /// `scheme://host[:port]`, lower-cased.
    origin: String,
    /// The host, lower-cased (an IPv6 literal with its brackets).
    host: String,
}

/// What a URL's host names, read the way a WHATWG URL parser reads it (browsers, and the
/// `url` crate behind the webhook client): `http://2130706433/`, `http://0x7f.1/` and
/// `http://127.0.0.1./` all name 127.0.0.1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostAddress {
    /// A name, to be resolved.
    Name,
    /// An IP address, in whichever spelling: it is connected to as it is.
    Ip(IpAddr),
    /// A host a WHATWG parser refuses: one that ends in a number but is no IPv4 address
    /// (`999.1.1.1`, `1.2.3.4.5`, `08`), or brackets around no IPv6 address.
    Invalid,
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
        let host = host.to_ascii_lowercase();
        let mut origin = format!("{}://{host}", if https { "https" } else { "http" });
        if let Some(port) = port {
            origin.push(':');
            origin.push_str(port);
        }
        Ok(Self { text: input.to_owned(), https, origin, host })
    }

    /// The host, lower-cased (an IPv6 literal with its brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// What the host names: a name, or an IP address in any spelling a WHATWG parser reads
    /// as one.
    pub fn host_address(&self) -> HostAddress {
        host_address(&self.host)
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

/// What `host` (lower-cased, as in a URL) names. The WHATWG URL standard's host parser for
/// the special schemes, on the ASCII hosts [`HttpUrl`] lets through.
pub fn host_address(host: &str) -> HostAddress {
    if let Some(inner) = host.strip_prefix('[') {
        return match inner.strip_suffix(']').and_then(|v6| v6.parse::<Ipv6Addr>().ok()) {
            Some(v6) => HostAddress::Ip(IpAddr::V6(v6)),
            None => HostAddress::Invalid,
        };
    }
    if !ends_in_number(host) {
        return HostAddress::Name;
    }
    match ipv4(host) {
        Some(v4) => HostAddress::Ip(IpAddr::V4(v4)),
        None => HostAddress::Invalid,
    }
}

/// The host's dot-separated parts, without one empty part after a final dot.
fn ipv4_parts(host: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = host.split('.').collect();
    if parts.len() > 1 && parts.last() == Some(&"") {
        parts.pop();
    }
    parts
}

/// The standard's "ends in a number": the host is parsed as an IPv4 address (and refused if
/// it is not one) when its last part is all digits or a number in any base.
fn ends_in_number(host: &str) -> bool {
    let parts = ipv4_parts(host);
    let Some(last) = parts.last() else { return false };
    (!last.is_empty() && last.bytes().all(|b| b.is_ascii_digit())) || ipv4_number(last).is_some()
}

/// One part: decimal, octal after a leading `0`, hexadecimal after `0x` (an empty rest is 0).
fn ipv4_number(part: &str) -> Option<u64> {
    if part.is_empty() {
        return None;
    }
    let (radix, digits) = if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
        (16, hex)
    } else if part.len() > 1 && part.starts_with('0') {
        (8, &part[1..])
    } else {
        (10, part)
    };
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    // More digits than any valid part has: the address is out of range whatever they are.
    u64::from_str_radix(digits, radix).ok()
}

/// The standard's IPv4 parser: one to four parts, the last filling the bytes the others leave.
fn ipv4(host: &str) -> Option<Ipv4Addr> {
    let parts = ipv4_parts(host);
    if parts.len() > 4 {
        return None;
    }
    let numbers = parts.iter().map(|p| ipv4_number(p)).collect::<Option<Vec<u64>>>()?;
    let (last, leading) = numbers.split_last()?;
    if leading.iter().any(|n| *n > 255) || *last >= 1u64 << (8 * (5 - numbers.len())) {
        return None;
    }
    let mut address = *last;
    for (i, n) in leading.iter().enumerate() {
        address += n << (8 * (3 - i));
    }
    u32::try_from(address).ok().map(Ipv4Addr::from)
}

/// What [`masked`] hides besides credentials.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// User info, and the values of query parameters named like secrets (`password`,
    /// `token`, `key`, `secret`): database, Redis and SMTP URLs.
    Credentials,
    /// Also the whole path and query: JSON-RPC providers put their API key there.
    PathAndQuery,
}

/// Query parameter names whose values are hidden (matched inside the name, case-insensitively).
const SECRET_PARAMETERS: [&str; 5] = ["pass", "secret", "token", "key", "auth"];

/// `text` (a URL, or whatever was given where one was expected) as it may be printed or
/// logged: `postgres://app:hunter2@db/x` is `postgres://***@db/x`, and with
/// [`Mask::PathAndQuery`] `https://rpc.example/v2/KEY` is `https://rpc.example/***`. Text that is no URL
/// at all keeps nothing after an `@` (it may be user info without a scheme).
pub fn masked(text: &str, mask: Mask) -> String {
    let (scheme, rest) = match text.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        // A libpq key/value string (`host=db user=app password=hunter2`).
        None if key_values(text) => return masked_key_values(text),
        None => (String::new(), text),
    };
    // Everything up to the last `@` is hidden, wherever it is: a password may hold an
    // unencoded `/`, `?` or `#`, and hiding too much is harmless.
    let (hidden, rest) = match rest.rfind('@') {
        Some(at) => ("***@", &rest[at + 1..]),
        None => ("", rest),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let host = format!("{hidden}{authority}");
    let tail = match mask {
        Mask::PathAndQuery if !tail.is_empty() && tail != "/" => "/***".to_owned(),
        Mask::PathAndQuery => tail.to_owned(),
        Mask::Credentials => masked_query(tail),
    };
    format!("{scheme}{host}{tail}")
}

/// Whether a parameter name (percent-decoded first: `p%61ssword` is `password`, as drivers
/// read it) names a secret.
fn secret_name(name: &str) -> bool {
    let decoded = percent_decoded(name).to_ascii_lowercase();
    SECRET_PARAMETERS.iter().any(|s| decoded.contains(s))
}

/// `text` with its `%XX` escapes decoded (invalid escapes kept as they are; `+` is a space).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| char::from(b).to_digit(16);
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(u8::try_from(h * 16 + l).unwrap_or(b'?'));
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether `text` reads as a libpq key/value string: it starts with a keyword and `=`.
fn key_values(text: &str) -> bool {
    let text = text.trim_start();
    let word = text.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(text.len());
    word > 0 && text[word..].trim_start().starts_with('=')
}

/// A libpq key/value connection string with the values of secret-like keywords hidden
/// (`password`, `sslpassword`, a quoted value with spaces and escaped quotes included).
fn masked_key_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let (before, after) = rest.split_at(eq);
        let name = before.trim_end().rsplit(char::is_whitespace).next().unwrap_or("");
        out.push_str(before);
        out.push('=');
        let after = &after[1..];
        let lead = after.len() - after.trim_start().len();
        let value_text = &after[lead..];
        let end = value_end(value_text);
        out.push_str(&after[..lead]);
        if secret_name(name) {
            out.push_str("***");
        } else {
            out.push_str(&value_text[..end]);
        }
        rest = &value_text[end..];
    }
    out.push_str(rest);
    out
}

/// Where a libpq value that starts `text` ends: a single-quoted value at its closing quote
/// (backslash escapes skipped), else at the first whitespace.
fn value_end(text: &str) -> usize {
    if let Some(quoted) = text.strip_prefix('\'') {
        let mut escaped = false;
        for (i, c) in quoted.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '\'' => return i + 2,
                _ => {}
            }
        }
        return text.len();
    }
    text.find(char::is_whitespace).unwrap_or(text.len())
}

/// `tail` (path, query, fragment) with the values of secret-like query parameters hidden.
fn masked_query(tail: &str) -> String {
    let Some((path, query)) = tail.split_once('?') else { return tail.to_owned() };
    let (query, fragment) = query.split_once('#').map_or((query, None), |(q, f)| (q, Some(f)));
    let pairs: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((name, _)) if secret_name(name) => {
                format!("{name}=***")
            }
            _ => pair.to_owned(),
        })
        .collect();
    let mut out = format!("{path}?{}", pairs.join("&"));
    if let Some(fragment) = fragment {
        out.push('#');
        out.push_str(fragment);
    }
    out
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
    fn hosts_are_read_as_a_whatwg_parser_reads_them() {
        let ip = |s: &str| HostAddress::Ip(s.parse().unwrap());
        for (url, want) in [
            ("http://example.com/", HostAddress::Name),
            ("http://localhost:8080/", HostAddress::Name),
            ("http://1.example/", HostAddress::Name),
            ("http://0x.example/", HostAddress::Name),
            ("http://127.0.0.1/", ip("127.0.0.1")),
            ("http://2130706433:80/", ip("127.0.0.1")),
            ("http://0177.0.0.1/", ip("127.0.0.1")),
            ("http://0x7f.0.0.1/", ip("127.0.0.1")),
            ("http://0X7F.0.0.1/", ip("127.0.0.1")),
            ("http://127.1/", ip("127.0.0.1")),
            ("http://127.0.1/", ip("127.0.0.1")),
            ("http://0/", ip("0.0.0.0")),
            ("http://0x/", ip("0.0.0.0")),
            ("http://0x7f000001/", ip("127.0.0.1")),
            ("http://017700000001/", ip("127.0.0.1")),
            ("http://127.0.0.1./", ip("127.0.0.1")),
            ("http://2852039166/", ip("169.254.169.254")),
            ("http://0xa9fea9fe/", ip("169.254.169.254")),
            ("http://0xA9.0376.43518/", ip("169.254.169.254")),
            ("http://[::1]:80/", ip("::1")),
            ("http://[::ffff:127.0.0.1]/", ip("::ffff:127.0.0.1")),
            ("http://[0:0:0:0:0:0:0:1]/", ip("::1")),
            ("http://999.1.1.1/", HostAddress::Invalid),
            ("http://1.2.3.4.5/", HostAddress::Invalid),
            ("http://256.256.256.256/", HostAddress::Invalid),
            ("http://4294967296/", HostAddress::Invalid),
            ("http://0x1g/", HostAddress::Name),
            ("http://08/", HostAddress::Invalid),
            ("http://1..1/", HostAddress::Invalid),
            ("http://99999999999999999999999/", HostAddress::Invalid),
            ("http://[fe80::1%25eth0]/", HostAddress::Invalid),
        ] {
            let parsed = HttpUrl::parse(url);
            let got = parsed.as_ref().map(HttpUrl::host_address);
            assert_eq!(got, Ok(want), "{url}");
        }
    }

    #[test]
    fn credentials_are_masked() {
        for (text, mask, want) in [
            ("postgres://app:hunter2@db.internal:5432/shop", Mask::Credentials, "postgres://***@db.internal:5432/shop"),
            (
                "postgres://db/shop?sslmode=require&password=hunter2",
                Mask::Credentials,
                "postgres://db/shop?sslmode=require&password=***",
            ),
            ("redis://:hunter2@cache:6379/0", Mask::Credentials, "redis://***@cache:6379/0"),
            ("smtps://mail%40shop:hunter2@smtp.example:465", Mask::Credentials, "smtps://***@smtp.example:465"),
            ("postgres://db/shop", Mask::Credentials, "postgres://db/shop"),
            ("https://polygon-mainnet.example/v2/hunter2", Mask::PathAndQuery, "https://polygon-mainnet.example/***"),
            ("https://rpc.example/?apikey=hunter2", Mask::PathAndQuery, "https://rpc.example/***"),
            ("https://u:hunter2@rpc.example/", Mask::PathAndQuery, "https://***@rpc.example/"),
            ("http://127.0.0.1:8545", Mask::PathAndQuery, "http://127.0.0.1:8545"),
            ("mysql:hunter2@x", Mask::Credentials, "***@x"),
            ("postgres://app:hun/ter?2@db/shop", Mask::Credentials, "postgres://***@db/shop"),
            ("not a url", Mask::Credentials, "not a url"),
            // libpq key/value strings, as DATABASE_URL may be given.
            (
                "host=db user=app password=hunter2 dbname=shop",
                Mask::Credentials,
                "host=db user=app password=*** dbname=shop",
            ),
            ("host=db password = hunter2", Mask::Credentials, "host=db password = ***"),
            ("host=db password='hunter2 x\\'y' dbname=shop", Mask::Credentials, "host=db password=*** dbname=shop"),
            ("PASSWORD=hunter2", Mask::Credentials, "PASSWORD=***"),
            (
                "host=db sslpassword=hunter2 sslmode=verify-full",
                Mask::Credentials,
                "host=db sslpassword=*** sslmode=verify-full",
            ),
            // Query parameter names are compared decoded, as drivers read them.
            ("postgres://db/shop?p%61ssword=hunter2", Mask::Credentials, "postgres://db/shop?p%61ssword=***"),
            (
                "postgres://db/shop?%70%61%73%73%77%6F%72%64=hunter2",
                Mask::Credentials,
                "postgres://db/shop?%70%61%73%73%77%6F%72%64=***",
            ),
            ("postgres://db/shop?PassWord=hunter2#x", Mask::Credentials, "postgres://db/shop?PassWord=***#x"),
            ("redis://cache:6379/0?password=hunter2", Mask::Credentials, "redis://cache:6379/0?password=***"),
            ("rediss://default:hunter2@cache:6380", Mask::Credentials, "rediss://***@cache:6380"),
            ("smtp://mail.example:587?auth_token=hunter2", Mask::Credentials, "smtp://mail.example:587?auth_token=***"),
            ("wss://rpc.example/ws/hunter2", Mask::PathAndQuery, "wss://rpc.example/***"),
            ("https://rpc.example?x-api-key=hunter2", Mask::PathAndQuery, "https://rpc.example/***"),
            ("user:hunter2@db:5432/shop?sslmode=require", Mask::Credentials, "***@db:5432/shop?sslmode=require"),
        ] {
            assert_eq!(masked(text, mask), want, "{text}");
            assert!(!masked(text, mask).contains("hunter2"));
        }
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
