//! The destination guard: deliveries never reach loopback, private, link-local, unique-local,
//! multicast, unspecified, reserved or cloud-metadata addresses, unless the operator allows
//! private and loopback ones (`STABLEPAY_WEBHOOK_ALLOW_PRIVATE`, for self-hosting and tests).
//! It checks every address a name resolves to (a name with one blocked address is refused
//! whole) and the address of an IP-literal host, and the client connects only to the
//! addresses it let through.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// How an address is classed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    Public,
    /// Loopback or private (RFC 1918, carrier-grade NAT, IPv6 unique-local): allowed only when
    /// the operator allows private destinations.
    Private,
    /// Never: link-local (cloud metadata lives there), multicast, unspecified, broadcast,
    /// reserved.
    Forbidden,
}

fn class_v4(ip: Ipv4Addr) -> Class {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() || ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Class::Private
    } else if ip.is_link_local() || ip.is_multicast() || ip.is_unspecified() || ip.is_broadcast() || a == 0 || a >= 240
    {
        Class::Forbidden
    } else {
        Class::Public
    }
}

fn class_v6(ip: Ipv6Addr) -> Class {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return class_v4(v4);
    }
    let first = ip.segments()[0];
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if ip.segments()[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let [.., c, d] = ip.segments();
        let [c1, c2] = c.to_be_bytes();
        let [d1, d2] = d.to_be_bytes();
        return class_v4(Ipv4Addr::new(c1, c2, d1, d2));
    }
    if ip.is_loopback() || (first & 0xfe00) == 0xfc00 {
        Class::Private
    } else if ip.is_unspecified() || ip.is_multicast() || (first & 0xffc0) == 0xfe80 {
        Class::Forbidden
    } else {
        Class::Public
    }
}

pub fn class(ip: IpAddr) -> Class {
    match ip {
        IpAddr::V4(v4) => class_v4(v4),
        IpAddr::V6(v6) => class_v6(v6),
    }
}

/// Whether a delivery may connect to `ip`.
pub fn allowed(ip: IpAddr, allow_private: bool) -> bool {
    match class(ip) {
        Class::Public => true,
        Class::Private => allow_private,
        Class::Forbidden => false,
    }
}

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

/// The HTTP client's resolver: the system's, filtered by the guard.
pub struct GuardedResolver {
    pub allow_private: bool,
}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> BoxError {
    Box::new(e)
}

impl reqwest::dns::Resolve for GuardedResolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
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
            let addrs: reqwest::dns::Addrs = Box::new(found.into_iter());
            Ok(addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        let cases = [
            ("8.8.8.8", Class::Public),
            ("127.0.0.1", Class::Private),
            ("10.1.2.3", Class::Private),
            ("172.16.0.1", Class::Private),
            ("192.168.1.1", Class::Private),
            ("100.64.0.1", Class::Private),
            ("169.254.169.254", Class::Forbidden),
            ("0.0.0.0", Class::Forbidden),
            ("224.0.0.1", Class::Forbidden),
            ("255.255.255.255", Class::Forbidden),
            ("240.0.0.1", Class::Forbidden),
            ("::1", Class::Private),
            ("fd00:ec2::254", Class::Private),
            ("fe80::1", Class::Forbidden),
            ("ff02::1", Class::Forbidden),
            ("::", Class::Forbidden),
            ("::ffff:127.0.0.1", Class::Private),
            ("::ffff:169.254.169.254", Class::Forbidden),
            ("64:ff9b::a9fe:a9fe", Class::Forbidden),
            ("2606:4700::1111", Class::Public),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip.parse().unwrap()), want, "{ip}");
        }
        assert!(!allowed("127.0.0.1".parse().unwrap(), false));
        assert!(allowed("127.0.0.1".parse().unwrap(), true));
        assert!(!allowed("169.254.169.254".parse().unwrap(), true));
    }
}
