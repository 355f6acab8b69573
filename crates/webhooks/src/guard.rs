//! The destination guard, on the domain's rule of where deliveries may go
//! ([`stablepay_domain::webhook::destination`]). It decides on exactly the address the client
//! connects to: the URL is parsed once, by the client's own (WHATWG) parser, and that parsed
//! URL is what is sent; an IP-literal host (in whichever spelling it was written) is checked
//! as the parser read it, and a name is resolved by [`GuardedResolver`], which checks every
//! address it resolves to (a name with one blocked address is refused whole) and hands the
//! client only the addresses it let through.

use std::net::{IpAddr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use stablepay_domain::webhook::destination::allowed;

/// A refusal of the guard (carried through the HTTP client's errors).
#[derive(Debug)]
pub struct Blocked(pub String);

impl std::fmt::Display for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "destination {} is not allowed", self.0)
    }
}

impl std::error::Error for Blocked {}

/// A name that did not resolve.
#[derive(Debug)]
pub struct Unresolved(pub String);

impl std::fmt::Display for Unresolved {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} does not resolve", self.0)
    }
}

impl std::error::Error for Unresolved {}

/// The delivery URL as the client reads it, or why it may not be sent to: `Err(Some(..))` for
/// a blocked address, `Err(None)` for a URL the client cannot parse.
pub fn destination(url: &str, allow_private: bool) -> Result<Url, Option<Blocked>> {
    let parsed = Url::parse(url).map_err(|_| None)?;
    let ip = match parsed.host() {
        Some(url::Host::Ipv4(v4)) => Some(IpAddr::V4(v4)),
        Some(url::Host::Ipv6(v6)) => Some(IpAddr::V6(v6)),
        Some(url::Host::Domain(_)) | None => None,
    };
    match ip {
        Some(ip) if !allowed(ip, allow_private) => Err(Some(Blocked(ip.to_string()))),
        _ => Ok(parsed),
    }
}

/// The HTTP client's resolver: the system's, filtered by the guard.
pub struct GuardedResolver {
    pub allow_private: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> BoxError {
    Box::new(e)
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let allow_private = self.allow_private;
        let host = name.as_str().to_owned();
        Box::pin(async move {
            let found: Vec<SocketAddr> = match tokio::net::lookup_host((host.clone(), 0)).await {
                Ok(addrs) => addrs.collect(),
                Err(_) => return Err(boxed(Unresolved(host))),
            };
            if found.is_empty() {
                return Err(boxed(Unresolved(host)));
            }
            if let Some(bad) = found.iter().find(|a| !allowed(a.ip(), allow_private)) {
                return Err(boxed(Blocked(format!("{host} ({})", bad.ip()))));
            }
            let addrs: Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}
