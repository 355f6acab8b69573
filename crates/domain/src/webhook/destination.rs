//! Where deliveries may go. Deliveries never reach loopback, private, link-local,
//! unique-local, multicast, unspecified, reserved or cloud-metadata addresses, unless the
//! operator allows private and loopback ones (`STABLEPAY_WEBHOOK_ALLOW_PRIVATE`, for
//! self-hosting and tests). An endpoint whose host is an IP address in a blocked range (in any
//! spelling, see [`HostAddress`]) or `localhost` is refused when it is registered; a name that
//! resolves to a blocked address is refused by the sender, which checks every address a name
//! resolves to and the address an IP-literal host names, read by the client's own parser.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::error::Error;
use crate::url::{HostAddress, HttpUrl};

/// How an address is classed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// Anywhere on the internet.
    Public,
    /// Loopback or private (RFC 1918, carrier-grade NAT, IPv6 unique-local): allowed only when
    /// the operator allows private destinations.
    Private,
    /// Never: link-local (cloud metadata lives there), multicast, unspecified, broadcast,
    /// documentation, benchmarking and reserved ranges.
    Forbidden,
}

fn class_v4(ip: Ipv4Addr) -> Class {
    let [a, b, c, _] = ip.octets();
    let special = a == 0
        || a >= 240
        || (a == 192 && b == 0 && (c == 0 || c == 2))
        || (a == 198 && (b & 0xfe) == 18)
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113);
    if ip.is_loopback() || ip.is_private() || (a == 100 && (64..128).contains(&b)) {
        Class::Private
    } else if special || ip.is_link_local() || ip.is_multicast() || ip.is_broadcast() {
        Class::Forbidden
    } else {
        Class::Public
    }
}

/// The IPv4 address in the last 32 bits of `ip`.
fn embedded_v4(ip: Ipv6Addr) -> Ipv4Addr {
    let [.., c, d] = ip.segments();
    let [c1, c2] = c.to_be_bytes();
    let [d1, d2] = d.to_be_bytes();
    Ipv4Addr::new(c1, c2, d1, d2)
}

fn class_v6(ip: Ipv6Addr) -> Class {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return class_v4(v4);
    }
    let s = ip.segments();
    // NAT64 (64:ff9b::/96) carries an IPv4 address in its last 32 bits.
    if s[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return class_v4(embedded_v4(ip));
    }
    // 6to4 (2002::/16) carries one in its second and third segments, IPv4-translated
    // addresses (::ffff:0:0/96) in their last 32 bits: public if that address is.
    let translated = match s {
        [0x2002, ab, cd, ..] => Some((ab, cd)),
        [0, 0, 0, 0, 0xffff, 0, ab, cd] => Some((ab, cd)),
        _ => None,
    };
    if let Some((ab, cd)) = translated {
        let ([a, b], [c, d]) = (ab.to_be_bytes(), cd.to_be_bytes());
        return match class_v4(Ipv4Addr::new(a, b, c, d)) {
            Class::Public => Class::Public,
            _ => Class::Forbidden,
        };
    }
    let compatible = s[..6] == [0; 6] && !ip.is_loopback();
    let discard = s[..4] == [0x100, 0, 0, 0];
    let documentation = s[0] == 0x2001 && s[1] == 0x0db8;
    if ip.is_loopback() || (s[0] & 0xfe00) == 0xfc00 {
        Class::Private
    } else if compatible || discard || documentation || ip.is_multicast() || (s[0] & 0xffc0) == 0xfe80 {
        // `::/96` holds `::` and the deprecated IPv4-compatible addresses.
        Class::Forbidden
    } else {
        Class::Public
    }
}

/// The class of `ip`.
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

/// Whether `host` (lower-cased) is `localhost` or a name under it (RFC 6761).
fn is_localhost(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    host == "localhost" || host.ends_with(".localhost")
}

/// What registration refuses of an endpoint URL. Errors: `Validation` on `url` when the host is
/// no valid host, or an IP address (in any spelling) or `localhost` that deliveries may not
/// reach under `allow_private`.
pub fn check_endpoint(url: &HttpUrl, allow_private: bool) -> Result<(), Error> {
    let refused = |why: &str| Err(Error::validation("url", why.to_owned()));
    match url.host_address() {
        HostAddress::Invalid => refused("has an invalid host"),
        HostAddress::Ip(ip) => match class(ip) {
            Class::Public => Ok(()),
            Class::Private if allow_private => Ok(()),
            Class::Private => refused(&format!(
                "must not point at a loopback or private address ({ip}): deliveries go to the public internet"
            )),
            Class::Forbidden => {
                refused(&format!("must not point at a link-local, multicast, unspecified or reserved address ({ip})"))
            }
        },
        HostAddress::Name if is_localhost(url.host()) && !allow_private => {
            refused("must not point at localhost: deliveries go to the public internet")
        }
        HostAddress::Name => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn classes() {
        let cases = [
            ("8.8.8.8", Class::Public),
            ("127.0.0.1", Class::Private),
            ("127.255.0.9", Class::Private),
            ("10.1.2.3", Class::Private),
            ("172.16.0.1", Class::Private),
            ("192.168.1.1", Class::Private),
            ("100.64.0.1", Class::Private),
            ("169.254.169.254", Class::Forbidden),
            ("0.0.0.0", Class::Forbidden),
            ("0.1.2.3", Class::Forbidden),
            ("224.0.0.1", Class::Forbidden),
            ("255.255.255.255", Class::Forbidden),
            ("240.0.0.1", Class::Forbidden),
            ("192.0.0.8", Class::Forbidden),
            ("192.0.2.1", Class::Forbidden),
            ("198.18.0.1", Class::Forbidden),
            ("198.19.255.1", Class::Forbidden),
            ("198.51.100.7", Class::Forbidden),
            ("203.0.113.9", Class::Forbidden),
            ("198.20.0.1", Class::Public),
            ("::1", Class::Private),
            ("fd00:ec2::254", Class::Private),
            ("fe80::1", Class::Forbidden),
            ("ff02::1", Class::Forbidden),
            ("::", Class::Forbidden),
            ("::127.0.0.1", Class::Forbidden),
            ("::ffff:127.0.0.1", Class::Private),
            ("::ffff:169.254.169.254", Class::Forbidden),
            ("64:ff9b::a9fe:a9fe", Class::Forbidden),
            ("64:ff9b::808:808", Class::Public),
            ("2002:7f00:1::", Class::Forbidden),
            ("2002:808:808::", Class::Public),
            ("::ffff:0:7f00:1", Class::Forbidden),
            ("::ffff:0:808:808", Class::Public),
            ("100::1", Class::Forbidden),
            ("2001:db8::1", Class::Forbidden),
            ("2606:4700::1111", Class::Public),
        ];
        for (ip, want) in cases {
            assert_eq!(class(ip.parse().unwrap()), want, "{ip}");
        }
        assert!(!allowed("127.0.0.1".parse().unwrap(), false));
        assert!(allowed("127.0.0.1".parse().unwrap(), true));
        assert!(!allowed("169.254.169.254".parse().unwrap(), true));
    }

    /// Every spelling of a blocked address is refused at registration, as the sender refuses
    /// it at delivery.
    #[test]
    fn registration_refuses_blocked_hosts_in_every_spelling() {
        let refused = [
            "http://127.0.0.1:8080/",
            "http://2130706433:8080/",
            "http://0177.0.0.1:8080/",
            "http://0x7f.0.0.1:8080/",
            "http://127.1:8080/",
            "http://0:8080/",
            "http://0x7f000001:8080/",
            "http://017700000001:8080/",
            "http://127.0.0.1.:8080/",
            "http://2852039166/",
            "http://0xa9fea9fe/",
            "http://10.0.0.1/",
            "http://[::1]:8080/",
            "http://[::ffff:127.0.0.1]/",
            "http://[::ffff:7f00:1]/",
            "http://[0:0:0:0:0:0:0:1]/",
            "http://[::ffff:a9fe:a9fe]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::]/",
            "http://localhost:8080/",
            "http://LOCALHOST./",
            "http://api.localhost/",
            "http://999.1.1.1/",
        ];
        for url in refused {
            let parsed = HttpUrl::parse(url).unwrap();
            match check_endpoint(&parsed, false) {
                Err(Error::Validation { field, .. }) => assert_eq!(field, "url", "{url}"),
                other => panic!("{url}: {other:?}"),
            }
        }
        for url in ["https://hooks.example.com/", "https://8.8.8.8/", "https://[2606:4700::1111]/", "http://0x8.8.8.8/"]
        {
            assert_eq!(check_endpoint(&HttpUrl::parse(url).unwrap(), false), Ok(()), "{url}");
        }
        // Allowing private destinations lets loopback and private through, never the rest.
        for url in ["http://127.1:8080/", "http://localhost/", "http://[::1]/", "http://10.0.0.1/"] {
            assert_eq!(check_endpoint(&HttpUrl::parse(url).unwrap(), true), Ok(()), "{url}");
        }
        for url in ["http://0xa9fea9fe/", "http://0/", "http://[fe80::1]/"] {
            assert!(check_endpoint(&HttpUrl::parse(url).unwrap(), true).is_err(), "{url}");
        }
    }
}
