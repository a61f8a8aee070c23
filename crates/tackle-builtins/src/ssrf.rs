//! The SSRF guard of `web_fetch`: only public addresses are reachable.
//!
//! IPv4: every block of the IANA IPv4 Special-Purpose Address Registry that is not globally
//! reachable, plus multicast and the reserved 240/4. IPv6: only global unicast (`2000::/3`) is
//! reachable, minus the special-purpose blocks inside it; every form that embeds or translates
//! an IPv4 address (mapped, compatible, SIIT-translated, NAT64 well-known and local-use, 6to4,
//! Teredo, ISATAP interface identifiers) is judged by that IPv4 address, or refused whole where
//! the form is not globally routable.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` may not be fetched, or `None` when it is a public address.
///
/// ```
/// use std::net::IpAddr;
/// let reason = |s: &str| tackle_builtins::blocked_reason(s.parse::<IpAddr>().unwrap());
/// assert!(reason("169.254.169.254").unwrap().contains("metadata"));
/// assert!(reason("10.0.0.1").is_some());
/// assert!(reason("::ffff:127.0.0.1").is_some());
/// assert!(reason("64:ff9b:1::7f00:1").is_some());
/// assert_eq!(reason("93.184.215.14"), None);
/// assert_eq!(reason("64:ff9b::5db8:d70e"), None, "NAT64 of a public address (DNS64)");
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
    // First match wins: the more specific reasons come first.
    const RANGES: &[([u8; 4], u32, &str)] = &[
        ([169, 254, 169, 254], 32, "the cloud metadata address (link-local)"),
        ([0, 0, 0, 0], 8, "an unspecified / this-network address"),
        ([127, 0, 0, 0], 8, "a loopback address"),
        ([10, 0, 0, 0], 8, "a private address (RFC 1918)"),
        ([172, 16, 0, 0], 12, "a private address (RFC 1918)"),
        ([192, 168, 0, 0], 16, "a private address (RFC 1918)"),
        ([169, 254, 0, 0], 16, "a link-local address"),
        ([100, 64, 0, 0], 10, "a carrier-grade NAT address (RFC 6598)"),
        ([192, 0, 0, 0], 24, "an IETF protocol address (incl. DS-Lite, NAT64 discovery)"),
        ([192, 0, 2, 0], 24, "a documentation address"),
        ([198, 51, 100, 0], 24, "a documentation address"),
        ([203, 0, 113, 0], 24, "a documentation address"),
        ([192, 88, 99, 0], 24, "a deprecated 6to4 relay anycast address (RFC 7526)"),
        ([198, 18, 0, 0], 15, "a benchmarking address"),
        ([224, 0, 0, 0], 4, "a multicast address"),
        ([240, 0, 0, 0], 4, "a reserved address (including broadcast)"),
    ];
    RANGES.iter().find(|(net, prefix, _)| in_v4(ip, *net, *prefix)).map(|(_, _, why)| *why)
}

fn v4_at(seg: &[u16; 8], first: usize) -> Ipv4Addr {
    let [a, b] = seg[first].to_be_bytes();
    let [c, d] = seg[first + 1].to_be_bytes();
    Ipv4Addr::new(a, b, c, d)
}

/// The embedded IPv4 address's reason if it is refused, else `otherwise`.
fn embedded(v4: Ipv4Addr, otherwise: Option<&'static str>) -> Option<&'static str> {
    blocked_v4(v4).or(otherwise)
}

fn in_v6(ip: Ipv6Addr, net: u128, prefix: u32) -> bool {
    let mask = if prefix == 0 { 0 } else { u128::MAX << (128 - prefix) };
    (u128::from(ip) & mask) == (net & mask)
}

fn blocked_v6(ip: Ipv6Addr) -> Option<&'static str> {
    let seg = ip.segments();
    if ip.is_unspecified() {
        return Some("an unspecified address");
    }
    if ip.is_loopback() {
        return Some("a loopback address");
    }
    // IPv4-mapped (::ffff:a.b.c.d): a socket to it reaches the IPv4 address itself.
    if let Some(v4) = ip.to_ipv4_mapped() {
        return blocked_v4(v4);
    }
    // IPv4-translated, SIIT (::ffff:0:a.b.c.d, RFC 2765): not routable on the internet.
    if seg[..6] == [0, 0, 0, 0, 0xffff, 0] {
        return embedded(v4_at(&seg, 6), Some("an IPv4-translated address (::ffff:0:0:0/96)"));
    }
    // IPv4-compatible (::a.b.c.d, deprecated by RFC 4291).
    if seg[..6] == [0; 6] {
        return embedded(v4_at(&seg, 6), Some("a deprecated IPv4-compatible address (::/96)"));
    }
    // NAT64 well-known prefix (RFC 6052): DNS64 synthesizes these for public IPv4 hosts.
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return blocked_v4(v4_at(&seg, 6));
    }
    // Local-use NAT64 (RFC 8215): translated inside one network, never public.
    if seg[..3] == [0x64, 0xff9b, 1] {
        return embedded(v4_at(&seg, 6), Some("a local-use NAT64 address (64:ff9b:1::/48)"));
    }
    // 6to4 (2002::/16) carries the IPv4 address of its relay in bits 16..48.
    if seg[0] == 0x2002 {
        return blocked_v4(v4_at(&seg, 1));
    }
    // Teredo (2001::/32): server IPv4 in bits 32..64, client IPv4 inverted in the last 32 bits.
    if seg[..2] == [0x2001, 0] {
        let client = Ipv4Addr::from(!u32::from(v4_at(&seg, 6)));
        return embedded(v4_at(&seg, 2), embedded(client, Some("a Teredo tunnel address (2001::/32)")));
    }
    // ISATAP interface identifiers (::0:5efe:a.b.c.d, ::200:5efe:a.b.c.d) under any prefix.
    if (seg[4] == 0 || seg[4] == 0x200) && seg[5] == 0x5efe && blocked_v4(v4_at(&seg, 6)).is_some() {
        return embedded(v4_at(&seg, 6), None);
    }
    // Special-purpose blocks (IANA IPv6 Special-Purpose Address Registry) and everything
    // outside global unicast.
    const RANGES: &[(u128, u32, &str)] = &[
        (0x0100_0000_0000_0000_0000_0000_0000_0000, 64, "a discard-only address (100::/64)"),
        (0x0100_0000_0000_0001_0000_0000_0000_0000, 64, "a dummy-prefix address (100:0:0:1::/64)"),
        (0x2001_0db8_0000_0000_0000_0000_0000_0000, 32, "a documentation address"),
        (0x2001_0000_0000_0000_0000_0000_0000_0000, 23, "an IETF protocol address (2001::/23)"),
        (0x3fff_0000_0000_0000_0000_0000_0000_0000, 20, "a documentation address (3fff::/20)"),
        (0x5f00_0000_0000_0000_0000_0000_0000_0000, 16, "an SRv6 SID address (5f00::/16)"),
        (0xfc00_0000_0000_0000_0000_0000_0000_0000, 7, "a unique local address (fc00::/7)"),
        (0xfe80_0000_0000_0000_0000_0000_0000_0000, 10, "a link-local address"),
        (0xfec0_0000_0000_0000_0000_0000_0000_0000, 10, "a site-local address"),
        (0xff00_0000_0000_0000_0000_0000_0000_0000, 8, "a multicast address"),
    ];
    if let Some((_, _, why)) = RANGES.iter().find(|(net, prefix, _)| in_v6(ip, *net, *prefix)) {
        return Some(why);
    }
    if !in_v6(ip, 0x2000_0000_0000_0000_0000_0000_0000_0000, 3) {
        return Some("not a global unicast address (outside 2000::/3)");
    }
    None
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

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(s: &str) -> Option<&'static str> {
        blocked_reason(s.parse().unwrap())
    }

    #[test]
    fn every_ipv6_form_embedding_a_private_ipv4_is_refused() {
        let forms = [
            "::ffff:127.0.0.1",                     // IPv4-mapped
            "::ffff:0:7f00:1",                      // IPv4-translated (SIIT)
            "::ffff:0:a00:1",                       // translated 10.0.0.1
            "::127.0.0.1",                          // IPv4-compatible
            "::a9fe:a9fe",                          // compatible 169.254.169.254
            "64:ff9b::7f00:1",                      // NAT64 well-known, loopback
            "64:ff9b::a9fe:a9fe",                   // NAT64 well-known, metadata
            "64:ff9b::c0a8:101",                    // NAT64 well-known, 192.168.1.1
            "64:ff9b:1::7f00:1",                    // local-use NAT64
            "64:ff9b:1:ffff::a00:1",                // local-use NAT64, other prefix length
            "2002:7f00:1::1",                       // 6to4 of 127.0.0.1
            "2002:a00:1::",                         // 6to4 of 10.0.0.1
            "2002:a9fe:a9fe::1",                    // 6to4 of the metadata address
            "2001:0:7f00:1::1",                     // Teredo, server 127.0.0.1
            "2001:0:4136:e378:8000:63bf:f5ff:fffe", // Teredo, client 10.0.0.1 (inverted)
            "2001:db8::0:5efe:a00:1",               // ISATAP under a documentation prefix
            "2600::0:5efe:c0a8:101",                // ISATAP IID embedding 192.168.1.1 under a public prefix
            "2600::200:5efe:7f00:1",                // ISATAP (universal bit) embedding 127.0.0.1
        ];
        for form in forms {
            assert!(reason(form).is_some(), "{form} was not refused");
        }
        assert!(reason("64:ff9b::a9fe:a9fe").unwrap().contains("metadata"));
        assert!(reason("2002:a00:1::").unwrap().contains("RFC 1918"));
    }

    #[test]
    fn forms_that_are_never_public_are_refused_whatever_they_embed() {
        for form in ["::ffff:0:808:808", "::8.8.8.8", "64:ff9b:1::808:808", "2001:0:808:808::1"] {
            assert!(reason(form).is_some(), "{form}");
        }
    }

    #[test]
    fn public_addresses_and_their_public_embeddings_pass() {
        for public in [
            "93.184.215.14",
            "8.8.8.8",
            "2606:4700::1111",
            "2a00:1450:4001:80b::200e",
            "64:ff9b::808:808", // NAT64 of 8.8.8.8
            "2002:808:808::1",  // 6to4 of 8.8.8.8
            "::ffff:8.8.8.8",
            "2600::0:5efe:808:808",
        ] {
            assert_eq!(reason(public), None, "{public}");
        }
    }

    #[test]
    fn the_rest_of_the_special_registries_is_refused() {
        for special in [
            "192.88.99.1",
            "198.18.0.1",
            "255.255.255.255",
            "100::1",
            "100:0:0:1::1",
            "2001:2::1",
            "2001:10::1",
            "2001:20::1",
            "3fff::1",
            "5f00::1",
            "4000::1",
            "::2",
            "fec0::1",
            "ff02::1",
        ] {
            assert!(reason(special).is_some(), "{special}");
        }
    }
}
