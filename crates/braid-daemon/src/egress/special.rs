//! Which destinations are not the open internet, and which IPv4 addresses an IPv6 address
//! stands for.
//!
//! An IPv6 address that embeds an IPv4 address reaches that IPv4 host — through the kernel's
//! dual stack, a NAT64 translator, a 6to4 relay or a Teredo relay — so it is judged as the
//! IPv4 address it stands for: `::ffff:127.0.0.1`, `::127.0.0.1`, `64:ff9b::7f00:1` and
//! `2002:7f00:1::` are all loopback. An address with two embedded IPv4 addresses (Teredo) is
//! private when either is.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// The IPv4 addresses `a` stands for: none for a native IPv6 address.
pub fn embedded_v4(a: Ipv6Addr) -> [Option<Ipv4Addr>; 2] {
    let s = a.segments();
    let v4 = |hi: u16, lo: u16| Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)));
    let last = v4(s[6], s[7]);
    match s {
        // IPv4-mapped ::ffff:0:0/96 (RFC 4291 §2.5.5.2).
        [0, 0, 0, 0, 0, 0xffff, _, _] => [last, None],
        // IPv4-translated ::ffff:0:0:0/96 (RFC 2765 §2.1, SIIT).
        [0, 0, 0, 0, 0xffff, 0, _, _] => [last, None],
        // :: and ::1 are themselves (unspecified, loopback), not IPv4 0.0.0.0 and 0.0.0.1.
        [0, 0, 0, 0, 0, 0, 0, 0 | 1] => [None, None],
        // IPv4-compatible ::/96 (RFC 4291 §2.5.5.1, deprecated but still routed by some stacks).
        [0, 0, 0, 0, 0, 0, _, _] => [last, None],
        // NAT64 well-known prefix 64:ff9b::/96 (RFC 6052 §2.1).
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => [last, None],
        // 6to4 2002::/16: the IPv4 address in bits 16..48 (RFC 3056 §2).
        [0x2002, hi, lo, ..] => [v4(hi, lo), None],
        // Teredo 2001::/32 (RFC 4380 §4): the server in bits 32..64, the client's address in
        // the last 32 bits with every bit inverted.
        [0x2001, 0, server_hi, server_lo, _, _, client_hi, client_lo] => {
            [v4(server_hi, server_lo), v4(!client_hi, !client_lo)]
        }
        _ => [None, None],
    }
}

/// What `ip` stands for: its embedded IPv4 addresses, or itself.
pub fn stands_for(ip: IpAddr) -> Vec<IpAddr> {
    match ip {
        IpAddr::V4(_) => vec![ip],
        IpAddr::V6(a) => {
            let v4: Vec<IpAddr> = embedded_v4(a).into_iter().flatten().map(IpAddr::V4).collect();
            if v4.is_empty() {
                vec![ip]
            } else {
                v4
            }
        }
    }
}

/// True for IPv4 destinations that are not on the open internet: loopback, RFC 1918 private,
/// link-local, shared (RFC 6598 CGNAT), "this network" 0/8, IETF protocol assignments
/// 192.0.0.0/24 (RFC 6890), documentation (RFC 5737), benchmarking 198.18.0.0/15
/// (RFC 2544), multicast, reserved 240/4 and broadcast.
///
/// Documentation ranges are denied although they are "public": no host on the internet has
/// them (RFC 5737 §4 asks that they be filtered), while networks that reuse them inside —
/// copying addresses from examples — exist, and would otherwise be reachable through braid.
pub fn is_private_v4(a: Ipv4Addr) -> bool {
    let o = a.octets();
    a.is_loopback()
        || a.is_private()
        || a.is_link_local()
        || a.is_unspecified()
        || a.is_multicast()
        || a.is_broadcast()
        || o[0] == 0
        || (o[0] == 100 && (64..128).contains(&o[1]))
        || (o[0], o[1], o[2]) == (192, 0, 0)
        || (o[0], o[1], o[2]) == (192, 0, 2)
        || (o[0], o[1], o[2]) == (198, 51, 100)
        || (o[0], o[1], o[2]) == (203, 0, 113)
        || (o[0] == 198 && (o[1] & 0xfe) == 18)
        || o[0] >= 240
}

/// True for native IPv6 destinations that are not on the open internet: loopback,
/// unspecified, multicast, unique-local fc00::/7 (RFC 4193), link-local fe80::/10,
/// site-local fec0::/10 (RFC 3879: deprecated, still routed inside some sites), discard-only
/// 100::/64 (RFC 6666), local-use NAT64 64:ff9b:1::/48 (RFC 8215), documentation
/// 2001:db8::/32 (RFC 3849) and 3fff::/20 (RFC 9637), benchmarking 2001:2::/48 (RFC 5180),
/// ORCHID 2001:10::/28 (RFC 4843) and SRv6 SIDs 5f00::/16 (RFC 9602).
///
/// The whole local-use NAT64 /48 is private: its translator is by definition inside the
/// operator's own network, and where the IPv4 address sits depends on the prefix length that
/// network chose (RFC 6052 §2.2), which the server cannot know.
pub fn is_private_v6(a: Ipv6Addr) -> bool {
    let s = a.segments();
    a.is_loopback()
        || a.is_unspecified()
        || a.is_multicast()
        || (s[0] & 0xfe00) == 0xfc00
        || (s[0] & 0xffc0) == 0xfe80
        || (s[0] & 0xffc0) == 0xfec0
        || s[..4] == [0x100, 0, 0, 0]
        || s[..3] == [0x64, 0xff9b, 1]
        || s[..2] == [0x2001, 0xdb8]
        || (s[0] & 0xfff0) == 0x3ff0
        || s[..3] == [0x2001, 2, 0]
        || (s[0] == 0x2001 && (s[1] & 0xfff0) == 0x10)
        || s[0] == 0x5f00
}

/// True when `ip`, or any IPv4 address it stands for, is not on the open internet.
pub fn is_private(ip: IpAddr) -> bool {
    stands_for(ip).into_iter().any(|m| match m {
        IpAddr::V4(a) => is_private_v4(a),
        IpAddr::V6(a) => is_private_v6(a),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(s: &str) -> Ipv6Addr {
        s.parse().unwrap()
    }

    fn v4(s: &str) -> Option<Ipv4Addr> {
        Some(s.parse().unwrap())
    }

    #[test]
    fn each_embedding_form_yields_its_ipv4_address() {
        assert_eq!(embedded_v4(v6("::ffff:10.1.2.3")), [v4("10.1.2.3"), None]);
        assert_eq!(embedded_v4(v6("::ffff:0:10.1.2.3")), [v4("10.1.2.3"), None]);
        assert_eq!(embedded_v4(v6("::127.0.0.1")), [v4("127.0.0.1"), None]);
        assert_eq!(embedded_v4(v6("::")), [None, None]);
        assert_eq!(embedded_v4(v6("::1")), [None, None]);
        assert_eq!(embedded_v4(v6("::2")), [v4("0.0.0.2"), None]);
        assert_eq!(embedded_v4(v6("64:ff9b::7f00:1")), [v4("127.0.0.1"), None]);
        assert_eq!(embedded_v4(v6("2002:c0a8:101::1")), [v4("192.168.1.1"), None]);
        // Teredo: server 93.184.216.34, client 10.0.0.1 stored inverted (0xf5fffffe).
        assert_eq!(embedded_v4(v6("2001:0:5db8:d822::f5ff:fffe")), [v4("93.184.216.34"), v4("10.0.0.1")]);
        assert_eq!(embedded_v4(v6("2606:4700::1111")), [None, None]);
        // 64:ff9b:1::/48 is not read: the whole prefix is private instead.
        assert_eq!(embedded_v4(v6("64:ff9b:1::7f00:1")), [None, None]);
        assert!(is_private(IpAddr::V6(v6("64:ff9b:1::5db8:d822"))));
    }
}
