//! The `WebhookSender` port over HTTP: renders the envelope, signs it with both schemes, posts
//! it through the destination guard with a time limit and no redirects, and reports what
//! happened in the spec's categories.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use stablepay_domain::webhook::model::SendOutcome;
use stablepay_domain::webhook::model::{ErrorCategory, RESPONSE_EXCERPT_BYTES};
use stablepay_domain::webhook::ports::{OutgoingDelivery, WebhookSender};

use crate::body::envelope;
use crate::guard::{Blocked, GuardedResolver, Unresolved, destination};
use crate::signature::{signature_header, standard_signature_header};

/// The longest answer read: a larger one is a failure (`response_too_large`), whatever its
/// status, so a receiver cannot make the worker hold much memory.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024;
/// The spec's attempt timeout.
pub const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The headers that carry signatures: left out of the recorded evidence.
const SIGNATURE_HEADERS: [&str; 2] = ["x-stablepay-signature", "webhook-signature"];

pub struct HttpSender {
    client: reqwest::Client,
    allow_private: bool,
}

impl HttpSender {
    /// `allow_private`: deliver to loopback and private addresses too (self-hosting, tests).
    pub fn new(allow_private: bool, timeout: Duration) -> Result<Self, String> {
        // TLS for https endpoints: rustls on ring. Installing twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .timeout(timeout)
            .connect_timeout(timeout)
            .no_proxy()
            .dns_resolver(Arc::new(GuardedResolver { allow_private }))
            .pool_max_idle_per_host(64)
            .pool_idle_timeout(Duration::from_secs(30))
            .tcp_nodelay(true)
            .user_agent(concat!("stablepay-webhooks/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| format!("webhook HTTP client: {e}"))?;
        Ok(Self { client, allow_private })
    }
}

/// Text safe to show, at most [`RESPONSE_EXCERPT_BYTES`] bytes of UTF-8 after every change:
/// invalid UTF-8 and control characters (but newlines and tabs) become U+FFFD, a character cut
/// by the excerpt's end is left out, and the text stops before the character that would take
/// it past the limit (each character comes from at least one byte of the answer, so the first
/// that many bytes are enough).
fn sanitize(bytes: &[u8]) -> String {
    let cut = &bytes[..bytes.len().min(RESPONSE_EXCERPT_BYTES)];
    let truncated = cut.len() < bytes.len();
    let mut out = String::with_capacity(cut.len());
    let mut push = |c: char| {
        let c = if c.is_control() && !matches!(c, '\n' | '\r' | '\t') { '\u{fffd}' } else { c };
        let fits = out.len() + c.len_utf8() <= RESPONSE_EXCERPT_BYTES;
        if fits {
            out.push(c);
        }
        fits
    };
    let mut chunks = cut.utf8_chunks().peekable();
    while let Some(chunk) = chunks.next() {
        for c in chunk.valid().chars() {
            if !push(c) {
                return out;
            }
        }
        let cut_character = truncated && chunks.peek().is_none();
        if !chunk.invalid().is_empty() && !cut_character && !push('\u{fffd}') {
            return out;
        }
    }
    out
}

/// The category of a failed request.
fn category_of(err: &reqwest::Error) -> (ErrorCategory, String) {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = source {
        if let Some(b) = e.downcast_ref::<Blocked>() {
            return (ErrorCategory::BlockedDestination, b.to_string());
        }
        if let Some(u) = e.downcast_ref::<Unresolved>() {
            return (ErrorCategory::Dns, u.to_string());
        }
        // rustls reports through an io::Error, whose `source` skips the error it wraps.
        let wrapped = e.downcast_ref::<std::io::Error>().and_then(|io| io.get_ref());
        if e.downcast_ref::<rustls::Error>().is_some() || wrapped.is_some_and(|w| w.is::<rustls::Error>()) {
            return (ErrorCategory::Tls, format!("TLS: {e}"));
        }
        source = e.source();
    }
    if err.is_timeout() {
        return (ErrorCategory::Timeout, "no answer within the attempt's time limit".into());
    }
    let text = err.to_string();
    let mut chain = text.clone();
    let mut source = std::error::Error::source(err);
    while let Some(e) = source {
        chain.push_str(": ");
        chain.push_str(&e.to_string());
        source = e.source();
    }
    // rustls's errors arrive as text through hyper's connector.
    const TLS_WORDS: [&str; 7] =
        ["certificate", "tls", "TLS", "handshake", "corrupt message", "InvalidContentType", "alert"];
    if TLS_WORDS.iter().any(|w| chain.contains(w)) {
        return (ErrorCategory::Tls, chain);
    }
    if err.is_connect() || err.is_request() {
        return (ErrorCategory::Connection, chain);
    }
    (ErrorCategory::Internal, chain)
}

fn ms(since: Instant) -> u32 {
    u32::try_from(since.elapsed().as_millis()).unwrap_or(u32::MAX)
}

/// The delivery's headers, signed both ways, and their evidence (every header but the
/// signatures); or the outcome of a delivery that cannot be signed.
fn signed_headers(d: &OutgoingDelivery, body: &[u8]) -> Result<(HeaderMap, Vec<(String, String)>), SendOutcome> {
    let timestamp = d.sent_at.timestamp();
    let secrets: Vec<&str> = d.secrets.iter().map(|s| s.as_str()).collect();
    let event_id = d.event.id.to_string();
    let Some(standard) = standard_signature_header(&secrets, &event_id, timestamp, body) else {
        return Err(SendOutcome::failed(
            ErrorCategory::SigningSecret,
            "the signing secret is not a whsec_ secret".into(),
            vec![],
            0,
        ));
    };
    let pairs = [
        ("content-type", "application/json".to_owned()),
        ("x-stablepay-signature", signature_header(&secrets, timestamp, body)),
        ("x-stablepay-timestamp", timestamp.to_string()),
        ("x-stablepay-delivery", d.delivery_id.to_string()),
        ("x-stablepay-event", d.event.event_type.as_str().to_owned()),
        ("webhook-id", event_id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
        ("webhook-signature", standard),
    ];
    let evidence: Vec<(String, String)> = pairs
        .iter()
        .filter(|(k, _)| !SIGNATURE_HEADERS.contains(k))
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let mut headers = HeaderMap::new();
    for (k, v) in &pairs {
        let (Ok(name), Ok(value)) = (HeaderName::from_bytes(k.as_bytes()), HeaderValue::from_str(v)) else {
            return Err(SendOutcome::failed(
                ErrorCategory::Internal,
                format!("header {k} cannot be sent"),
                evidence,
                0,
            ));
        };
        headers.insert(name, value);
    }
    debug_assert!(headers.contains_key(CONTENT_TYPE));
    Ok((headers, evidence))
}

/// Reads at most [`MAX_RESPONSE_BYTES`] of the answer and concludes the attempt: delivered on
/// a 2xx, or failed with the answer's category.
async fn conclude(mut response: reqwest::Response, evidence: Vec<(String, String)>, started: Instant) -> SendOutcome {
    let status = response.status().as_u16();
    let mut read = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                read.extend_from_slice(&chunk);
                if read.len() > MAX_RESPONSE_BYTES {
                    let message = format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes");
                    let mut out = SendOutcome::failed(ErrorCategory::ResponseTooLarge, message, evidence, ms(started));
                    out.status_code = Some(status);
                    out.response_excerpt = Some(sanitize(&read));
                    return out;
                }
            }
            Ok(None) => break,
            Err(e) => {
                let (category, message) = category_of(&e);
                let mut out = SendOutcome::failed(category, message, evidence, ms(started));
                out.status_code = Some(status);
                return out;
            }
        }
    }
    let excerpt = (!read.is_empty()).then(|| sanitize(&read));
    if (200..300).contains(&status) {
        return SendOutcome {
            duration_ms: ms(started),
            status_code: Some(status),
            error_category: None,
            error_message: None,
            response_excerpt: excerpt,
            request_headers: evidence,
        };
    }
    let category = ErrorCategory::of_status(status);
    let message = match category {
        ErrorCategory::Redirect => format!("answered {status}; redirects are not followed"),
        _ => format!("answered {status}"),
    };
    let mut out = SendOutcome::failed(category, message, evidence, ms(started));
    out.status_code = Some(status);
    out.response_excerpt = excerpt;
    out
}

#[async_trait]
impl WebhookSender for HttpSender {
    async fn send(&self, d: OutgoingDelivery) -> SendOutcome {
        let body = envelope(&d.event);
        let (headers, evidence) = match signed_headers(&d, &body) {
            Ok(signed) => signed,
            Err(outcome) => return outcome,
        };
        let url = match destination(d.url.as_str(), self.allow_private) {
            Ok(url) => url,
            Err(Some(blocked)) => {
                return SendOutcome::failed(ErrorCategory::BlockedDestination, blocked.to_string(), evidence, 0);
            }
            Err(None) => {
                return SendOutcome::failed(
                    ErrorCategory::Connection,
                    "the URL has an invalid host".into(),
                    evidence,
                    0,
                );
            }
        };
        let started = Instant::now();
        match self.client.post(url).headers(headers).body(body).send().await {
            Ok(response) => conclude(response, evidence, started).await,
            Err(e) => {
                let (category, message) = category_of(&e);
                SendOutcome::failed(category, message, evidence, ms(started))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_are_bounded_and_clean() {
        let long = vec![b'a'; 10_000];
        assert_eq!(sanitize(&long).len(), RESPONSE_EXCERPT_BYTES);
        assert_eq!(sanitize(b"ok\n\x00\x1b!"), "ok\n\u{fffd}\u{fffd}!");
        assert_eq!(sanitize(b"a\xffb\xe2\x82"), "a\u{fffd}b\u{fffd}", "an invalid end of a whole answer is shown");
    }

    /// The probe's two bodies: control bytes (each becomes three bytes of U+FFFD) and a
    /// multi-byte character cut at the limit; and invalid bytes, which expand the same way.
    #[test]
    fn excerpts_stay_within_the_limit_after_every_change() {
        let mut cut_euro = vec![b'a'; RESPONSE_EXCERPT_BYTES - 1];
        cut_euro.extend("€€".as_bytes());
        let bodies =
            [vec![0u8; 12_288], vec![0x1b; 100_000], cut_euro, vec![0xff; 5000], "é".repeat(3000).into_bytes()];
        for body in bodies {
            let excerpt = sanitize(&body);
            assert!(excerpt.len() <= RESPONSE_EXCERPT_BYTES, "{} bytes", excerpt.len());
            assert!(excerpt.len() > RESPONSE_EXCERPT_BYTES - 4, "{} bytes: as much as fits", excerpt.len());
            assert!(std::str::from_utf8(excerpt.as_bytes()).is_ok());
        }
        let mut cut_euro = vec![b'a'; RESPONSE_EXCERPT_BYTES - 1];
        cut_euro.extend("€".as_bytes());
        assert_eq!(sanitize(&cut_euro), "a".repeat(RESPONSE_EXCERPT_BYTES - 1), "the cut character is left out");
    }
}
