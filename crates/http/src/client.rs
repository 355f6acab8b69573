//! Who the client is: the TCP peer, or the address a trusted proxy forwarded (the key of every
//! per-client rate limit).

use std::net::IpAddr;

use actix_web::HttpRequest;

/// Proxies whose `X-Forwarded-For` is believed (`STABLEPAY_TRUSTED_PROXIES`: CIDRs or addresses).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<(IpAddr, u8)>);

impl TrustedProxies {
    /// Parses comma-separated CIDRs (`10.0.0.0/8`, `::1/128`) or plain addresses.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut list = Vec::new();
        for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let (addr, bits) = match part.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (part, None),
            };
            let ip: IpAddr = addr.parse().map_err(|_| format!("{part} is not an address or CIDR"))?;
            let max = if ip.is_ipv4() { 32 } else { 128 };
            let bits = match bits {
                Some(b) => {
                    b.parse::<u8>().ok().filter(|b| *b <= max).ok_or_else(|| format!("{part}: bad prefix length"))?
                }
                None => max,
            };
            list.push((ip, bits));
        }
        Ok(Self(list))
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|(net, bits)| in_network(ip, *net, *bits))
    }
}

fn in_network(ip: IpAddr, net: IpAddr, bits: u8) -> bool {
    let (a, b, width) = match (ip.to_canonical(), net.to_canonical()) {
        (IpAddr::V4(a), IpAddr::V4(b)) => (u128::from(u32::from(a)), u128::from(u32::from(b)), 32u32),
        (IpAddr::V6(a), IpAddr::V6(b)) => (u128::from(a), u128::from(b), 128u32),
        _ => return false,
    };
    let bits = u32::from(bits).min(width);
    if bits == 0 {
        return true;
    }
    let shift = width - bits;
    a >> shift == b >> shift
}

/// The client's address: the TCP peer, or, when the peer is a trusted proxy, the nearest
/// address in `X-Forwarded-For` that is not one.
pub fn client_address(req: &HttpRequest, trusted: &TrustedProxies) -> Option<IpAddr> {
    let peer = req.peer_addr()?.ip().to_canonical();
    if !trusted.contains(peer) {
        return Some(peer);
    }
    let forwarded: Vec<IpAddr> = req
        .headers()
        .get_all("x-forwarded-for")
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|a| a.trim().parse::<IpAddr>().ok())
        .map(|a| a.to_canonical())
        .collect();
    Some(
        forwarded
            .iter()
            .rev()
            .copied()
            .find(|a| !trusted.contains(*a))
            .or_else(|| forwarded.first().copied())
            .unwrap_or(peer),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn networks() {
        let t = TrustedProxies::parse("10.0.0.0/8, 192.168.1.7, ::1/128").unwrap();
        for (ip, inside) in [
            ("10.2.3.4", true),
            ("11.0.0.1", false),
            ("192.168.1.7", true),
            ("192.168.1.8", false),
            ("::1", true),
            ("::2", false),
            ("::ffff:10.1.1.1", true),
        ] {
            assert_eq!(t.contains(ip.parse().unwrap()), inside, "{ip}");
        }
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err());
        assert!(TrustedProxies::parse("nope").is_err());
        assert_eq!(TrustedProxies::parse("").unwrap(), TrustedProxies::default());
        assert!(TrustedProxies::parse("0.0.0.0/0").unwrap().contains("8.8.8.8".parse().unwrap()));
    }
}
