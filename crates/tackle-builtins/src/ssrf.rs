//! The SSRF guard of `web_fetch`: only public addresses are reachable.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` may not be fetched, or `None` when it is a public address.
///
/// ```
/// use std::net::IpAddr;
/// let reason = |s: &str| tackle_builtins::blocked_reason(s.parse::<IpAddr>().unwrap());
/// assert!(reason("169.254.169.254").unwrap().contains("metadata"));
/// assert!(reason("10.0.0.1").is_some());
/// assert!(reason("::ffff:127.0.0.1").is_some());
/// assert_eq!(reason("93.184.215.14"), None);
/// ```
pub fn blocked_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => blocked_v4(v4),
        IpAddr::V6(v6) => blocked_v6(v6),
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u32::MAX << (32 - prefix) };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn blocked_v4(ip: Ipv4Addr) -> Option<&'static str> {
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([169, 254, 169, 254], 32, "the cloud metadata address (link-local)"),
        ([0, 0, 0, 0], 8, "an unspecified / this-network address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address (RFC 1918)"),
        ([172, 16, 0, 0], 12, "a private address (RFC 1918)"),
        ([192, 168, 0, 0], 16, "a private address (RFC 1918)"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT address (RFC 6598)"),
        ([192, 0, 0, 0], 24, "an IETF protocol address"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved address (including broadcast)"),
    ];
    RANGES.iter().find(|(net, prefix, _)| in_v4(ip, *net, *prefix)).map(|(_, _, why)| *why)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d): judge the IPv4 address.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    if seg[..6] == [0, 0, 0, 0, 0, 0] {
        return Some("a deprecated IPv4-compatible address");
    }
    // NAT64 (64:ff9b::/96) embeds an IPv4 address in the last 32 bits.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        let v4 = Ipv4Addr::new((seg[6] >> 8) as u8, seg[6] as u8, (seg[7] >> 8) as u8, seg[7] as u8);
        return blocked_v4(v4);
    }
    // 6to4 (2002::/16) embeds an IPv4 address in bits 16..48.
    if seg[0] == 0x2002 {
        let v4 = Ipv4Addr::new((seg[1] >> 8) as u8, seg[1] as u8, (seg[2] >> 8) as u8, seg[2] as u8);
        return blocked_v4(v4);
    }
    match seg[0] {
        s if s & 0xfe00 == 0xfc00 => Some("a unique local address (fc00::/7)"),
        s if s & 0xffc0 == 0xfe80 => Some("a link-local address"),
        s if s & 0xffc0 == 0xfec0 => Some("a site-local address"),
        s if s & 0xff00 == 0xff00 => Some("a multicast address"),
        0x2001 if seg[1] == 0x0db8 => Some("a documentation address"),
        0x2001 if seg[1] == 0 => Some("a Teredo tunnel address"),
        _ => None,
    }
}

/// Addresses and names exempt from the guard (tests, trusted internal services).
#[derive(Debug, Clone, Default)]
pub(crate) struct AllowList {
    nets: Vec<(IpAddr, u32)>,
    hosts: Vec<String>,
}

impl AllowList {
    /// Parses entries: `a.b.c.d/len`, `addr`, or a host name.
    pub(crate) fn parse(entries: &[String]) -> Self {
        let mut list = Self::default();
        for e in entries {
            let e = e.trim();
            let (addr, prefix) = match e.split_once('/') {
                Some((a, p)) => (a, p.parse::<u32>().ok()),
                None => (e, None),
            };
            match addr.parse::<IpAddr>() {
                Ok(ip) => {
                    let max = if ip.is_ipv4() { 32 } else { 128 };
                    list.nets.push((ip, prefix.unwrap_or(max).min(max)));
                }
                Err(_) => list.hosts.push(e.to_ascii_lowercase()),
            }
        }
        list
    }

    pub(crate) fn allows_ip(&self, ip: IpAddr) -> bool {
        self.nets.iter().any(|(net, prefix)| match (ip, net) {
            (IpAddr::V4(a), IpAddr::V4(n)) => in_v4(a, n.octets(), *prefix),
            (IpAddr::V6(a), IpAddr::V6(n)) => {
                let mask = if *prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
                (u128::from(a) & mask) == (u128::from(*n) & mask)
            }
            _ => false,
        })
    }

    pub(crate) fn allows_host(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
    }
}

/// The reason `ip` is refused under `allow`, or `None`.
pub(crate) fn check_ip(ip: IpAddr, allow: &AllowList) -> Option<&'static str> {
    if allow.allows_ip(ip) {
        return None;
    }
    blocked_reason(ip)
}

/// Whether a host name is a local name that must not be resolved at all.
pub(crate) fn is_local_name(host: &str) -> bool {
    let h = host.trim_end_matches('.').to_ascii_lowercase();
    h == "localhost"
        || h.ends_with(".localhost")
        || h.ends_with(".local")
        || h.ends_with(".internal")
        || h == "metadata.google.internal"
}
