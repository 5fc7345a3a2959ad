//! IP packets of the TUN device that braid handles itself (TCP goes to the user-space stack
//! whole): parsing of UDP datagrams and ICMP echo requests, and building of the UDP datagrams
//! and echo replies that go back in. Every read is checked against the buffer and the header's
//! own lengths; a packet that does not add up is a [`Refusal`], never a panic.
//!
//! IPv4: RFC 791 (header, checksum), RFC 768 (UDP), RFC 792 (echo). IPv6: RFC 8200 (no
//! extension headers are followed: such packets are refused and counted), RFC 4443 (ICMPv6
//! echo, checksum with the pseudo-header).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// IP protocol numbers.
const TCP: u8 = 6;
const UDP: u8 = 17;
const ICMP: u8 = 1;
const ICMPV6: u8 = 58;
/// ICMP echo request and reply types (RFC 792; RFC 4443 §4.1, §4.2).
const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;
/// Hop limit of the packets braid writes into the TUN.
const HOP_LIMIT: u8 = 64;

/// What a packet from the TUN is.
#[derive(Debug, PartialEq, Eq)]
pub enum Packet<'a> {
    /// A TCP segment: for the user-space stack.
    Tcp,
    /// A UDP datagram.
    Udp {
        /// The application's address.
        src: SocketAddr,
        /// Where it goes.
        dst: SocketAddr,
        /// Its payload.
        payload: &'a [u8],
    },
    /// An ICMP or ICMPv6 echo request.
    Echo {
        /// The application's address.
        src: IpAddr,
        /// Where it goes.
        dst: IpAddr,
        /// Its identifier (the reply is given it back).
        ident: u16,
        /// The whole ICMP message (header and data).
        message: &'a [u8],
    },
}

/// Why a packet from the TUN is dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its headers do not add up.
    Malformed(&'static str),
    /// A fragment (braid takes whole datagrams only).
    Fragment,
    /// A protocol braid does not carry (or an IPv6 extension header).
    Protocol(u8),
    /// ICMP other than echo request (router solicitations, MLD, errors).
    OtherIcmp(u8),
}

/// Classifies a packet read from the TUN.
pub fn parse(p: &[u8]) -> Result<Packet<'_>, Refusal> {
    match p.first().map(|b| b >> 4) {
        Some(4) => parse_v4(p),
        Some(6) => parse_v6(p),
        Some(_) => Err(Refusal::Malformed("not IPv4 or IPv6")),
        None => Err(Refusal::Malformed("empty packet")),
    }
}

fn be16(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_be_bytes([*b.get(at)?, *b.get(at + 1)?]))
}

fn parse_v4(p: &[u8]) -> Result<Packet<'_>, Refusal> {
    let ihl = usize::from(p[0] & 0x0f) * 4;
    let total = usize::from(be16(p, 2).ok_or(Refusal::Malformed("IPv4 header truncated"))?);
    if ihl < 20 || total < ihl || p.len() < total {
        return Err(Refusal::Malformed("IPv4 lengths do not add up"));
    }
    let flags_frag = be16(p, 6).unwrap_or(0);
    if flags_frag & 0x3fff != 0 {
        return Err(Refusal::Fragment);
    }
    let src = Ipv4Addr::new(p[12], p[13], p[14], p[15]);
    let dst = Ipv4Addr::new(p[16], p[17], p[18], p[19]);
    transport(p[9], src.into(), dst.into(), &p[ihl..total])
}

fn parse_v6(p: &[u8]) -> Result<Packet<'_>, Refusal> {
    if p.len() < 40 {
        return Err(Refusal::Malformed("IPv6 header truncated"));
    }
    let len = usize::from(be16(p, 4).unwrap_or(0));
    if p.len() < 40 + len {
        return Err(Refusal::Malformed("IPv6 payload length exceeds the packet"));
    }
    let src = Ipv6Addr::from(<[u8; 16]>::try_from(&p[8..24]).expect("16 bytes"));
    let dst = Ipv6Addr::from(<[u8; 16]>::try_from(&p[24..40]).expect("16 bytes"));
    transport(p[6], src.into(), dst.into(), &p[40..40 + len])
}

fn transport(proto: u8, src: IpAddr, dst: IpAddr, body: &[u8]) -> Result<Packet<'_>, Refusal> {
    match proto {
        TCP => Ok(Packet::Tcp),
        UDP => {
            let (sp, dp) = (be16(body, 0), be16(body, 2));
            let len = be16(body, 4).map(usize::from);
            match (sp, dp, len) {
                (Some(sp), Some(dp), Some(len)) if len >= 8 && len <= body.len() => Ok(Packet::Udp {
                    src: SocketAddr::new(src, sp),
                    dst: SocketAddr::new(dst, dp),
                    payload: &body[8..len],
                }),
                _ => Err(Refusal::Malformed("UDP length does not add up")),
            }
        }
        ICMP | ICMPV6 => {
            let want = if proto == ICMP { ECHO_REQUEST_V4 } else { ECHO_REQUEST_V6 };
            match body.first() {
                Some(&t) if t == want && body.len() >= 8 => {
                    Ok(Packet::Echo { src, dst, ident: be16(body, 4).unwrap_or(0), message: body })
                }
                Some(&t) => Err(Refusal::OtherIcmp(t)),
                None => Err(Refusal::Malformed("ICMP message truncated")),
            }
        }
        other => Err(Refusal::Protocol(other)),
    }
}

/// The one's-complement sum of RFC 1071 over `data`, added to `sum`.
fn sum16(mut sum: u32, data: &[u8]) -> u32 {
    let mut chunks = data.chunks_exact(2);
    for c in &mut chunks {
        sum += u32::from(u16::from_be_bytes([c[0], c[1]]));
    }
    if let [last] = chunks.remainder() {
        sum += u32::from(*last) << 8;
    }
    sum
}

fn fold(mut sum: u32) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The pseudo-header sum of a transport checksum (RFC 768, RFC 8200 §8.1).
fn pseudo(src: IpAddr, dst: IpAddr, proto: u8, len: usize) -> u32 {
    let sum = match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => sum16(sum16(0, &s.octets()), &d.octets()),
        (s, d) => sum16(sum16(0, &v6(s).octets()), &v6(d).octets()),
    };
    sum + u32::from(proto) + len as u32
}

fn v6(ip: IpAddr) -> Ipv6Addr {
    match ip {
        IpAddr::V4(a) => a.to_ipv6_mapped(),
        IpAddr::V6(a) => a,
    }
}

/// An IP header for `len` bytes of `proto` from `src` to `dst` (both of one family: `src`'s).
fn ip_header(src: IpAddr, dst: IpAddr, proto: u8, len: usize, out: &mut Vec<u8>) {
    match (src, dst) {
        (IpAddr::V4(s), IpAddr::V4(d)) => {
            let total = (20 + len) as u16;
            let start = out.len();
            out.extend_from_slice(&[0x45, 0]);
            out.extend_from_slice(&total.to_be_bytes());
            out.extend_from_slice(&[0, 0, 0x40, 0, HOP_LIMIT, proto, 0, 0]);
            out.extend_from_slice(&s.octets());
            out.extend_from_slice(&d.octets());
            let c = fold(sum16(0, &out[start..start + 20]));
            out[start + 10..start + 12].copy_from_slice(&c.to_be_bytes());
        }
        (s, d) => {
            out.extend_from_slice(&[0x60, 0, 0, 0]);
            out.extend_from_slice(&(len as u16).to_be_bytes());
            out.extend_from_slice(&[proto, HOP_LIMIT]);
            out.extend_from_slice(&v6(s).octets());
            out.extend_from_slice(&v6(d).octets());
        }
    }
}

/// A UDP datagram from `src` to `dst` (the same family) carrying `payload`; None when it
/// cannot be an IP packet (over 65535 bytes, or mixed families).
pub fn udp_packet(src: SocketAddr, dst: SocketAddr, payload: &[u8]) -> Option<Vec<u8>> {
    let len = 8 + payload.len();
    if len > 65_000 || src.is_ipv4() != dst.is_ipv4() {
        return None;
    }
    let mut out = Vec::with_capacity(40 + len);
    ip_header(src.ip(), dst.ip(), UDP, len, &mut out);
    let at = out.len();
    out.extend_from_slice(&src.port().to_be_bytes());
    out.extend_from_slice(&dst.port().to_be_bytes());
    out.extend_from_slice(&(len as u16).to_be_bytes());
    out.extend_from_slice(&[0, 0]);
    out.extend_from_slice(payload);
    let mut c = fold(sum16(pseudo(src.ip(), dst.ip(), UDP, len), &out[at..]));
    if c == 0 {
        c = 0xffff; // RFC 768: zero means "no checksum"
    }
    out[at + 6..at + 8].copy_from_slice(&c.to_be_bytes());
    Some(out)
}

/// An echo reply from `src` to `dst` made of the reply `message` the server received (the
/// kernel's ping socket gave it its own identifier): the application's `ident` is put back
/// and the checksum recomputed. None when `message` is no echo reply of `src`'s family.
pub fn echo_reply_packet(src: IpAddr, dst: IpAddr, ident: u16, message: &[u8]) -> Option<Vec<u8>> {
    let (proto, reply) = if src.is_ipv4() { (ICMP, ECHO_REPLY_V4) } else { (ICMPV6, ECHO_REPLY_V6) };
    if message.len() < 8 || message.len() > 65_000 || message[0] != reply || src.is_ipv4() != dst.is_ipv4() {
        return None;
    }
    let mut out = Vec::with_capacity(40 + message.len());
    ip_header(src, dst, proto, message.len(), &mut out);
    let at = out.len();
    out.extend_from_slice(message);
    out[at + 2..at + 4].copy_from_slice(&[0, 0]);
    out[at + 4..at + 6].copy_from_slice(&ident.to_be_bytes());
    let base = if proto == ICMPV6 { pseudo(src, dst, ICMPV6, message.len()) } else { 0 };
    let c = fold(sum16(base, &out[at..]));
    out[at + 2..at + 4].copy_from_slice(&c.to_be_bytes());
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn udp_round_trips_in_both_families_with_valid_checksums() {
        for (src, dst) in
            [(sa("10.0.0.1:5000"), sa("10.9.0.2:53")), (sa("[fd00::1]:5000"), sa("[2001:db8::2]:443"))]
        {
            let p = udp_packet(src, dst, b"hello").unwrap();
            assert_eq!(parse(&p).unwrap(), Packet::Udp { src, dst, payload: b"hello" });
            let ip_len = if src.is_ipv4() { 20 } else { 40 };
            // The transport checksum over the pseudo-header verifies to zero.
            let l4 = &p[ip_len..];
            assert_eq!(fold(sum16(pseudo(src.ip(), dst.ip(), UDP, l4.len()), l4)), 0);
            if src.is_ipv4() {
                assert_eq!(fold(sum16(0, &p[..20])), 0);
            }
        }
        assert!(udp_packet(sa("10.0.0.1:1"), sa("[::1]:1"), b"").is_none());
    }

    #[test]
    fn echo_requests_are_recognised_and_replies_rebuilt() {
        let src: IpAddr = "10.0.0.1".parse().unwrap();
        let dst: IpAddr = "10.9.0.2".parse().unwrap();
        // A request as ping sends it, built as a reply then retyped.
        let reply = [ECHO_REPLY_V4, 0, 0, 0, 0x12, 0x34, 0, 1, b'x', b'y'];
        let mut p = echo_reply_packet(dst, src, 0x1234, &reply).unwrap();
        assert_eq!(fold(sum16(0, &p[20..])), 0);
        p[20] = ECHO_REQUEST_V4;
        match parse(&p).unwrap() {
            Packet::Echo { ident, message, .. } => assert_eq!((ident, message.len()), (0x1234, 10)),
            other => panic!("{other:?}"),
        }
        let s6: IpAddr = "fd00::1".parse().unwrap();
        let d6: IpAddr = "fd00::2".parse().unwrap();
        let r6 = [ECHO_REPLY_V6, 0, 0, 0, 0, 9, 0, 1];
        let p6 = echo_reply_packet(d6, s6, 7, &r6).unwrap();
        assert_eq!(fold(sum16(pseudo(d6, s6, ICMPV6, 8), &p6[40..])), 0);
        assert_eq!(be16(&p6, 44), Some(7));
        assert!(echo_reply_packet(src, dst, 1, &[ECHO_REQUEST_V4, 0, 0, 0, 0, 0, 0, 0]).is_none());
    }

    #[test]
    fn hostile_packets_are_refused_not_panicked_on() {
        assert_eq!(parse(&[]), Err(Refusal::Malformed("empty packet")));
        assert!(matches!(parse(&[0x45]), Err(Refusal::Malformed(_))));
        assert!(matches!(parse(&[0x60; 39]), Err(Refusal::Malformed(_))));
        let mut p = udp_packet(sa("10.0.0.1:1"), sa("10.0.0.2:2"), b"abc").unwrap();
        p[6] = 0x20; // more fragments
        assert_eq!(parse(&p), Err(Refusal::Fragment));
        let mut p = udp_packet(sa("10.0.0.1:1"), sa("10.0.0.2:2"), b"abc").unwrap();
        p[9] = 47; // GRE
        assert_eq!(parse(&p), Err(Refusal::Protocol(47)));
        let mut p = udp_packet(sa("10.0.0.1:1"), sa("10.0.0.2:2"), b"abc").unwrap();
        p[25] = 200; // UDP length beyond the packet
        assert!(matches!(parse(&p), Err(Refusal::Malformed(_))));
        p[2] = 0xff; // IPv4 total length beyond the buffer
        assert!(matches!(parse(&p), Err(Refusal::Malformed(_))));
        // Every truncation of a valid packet parses or is refused.
        let v6 = udp_packet(sa("[fd00::1]:1"), sa("[fd00::2]:2"), b"abcdef").unwrap();
        for n in 0..v6.len() {
            let _ = parse(&v6[..n]);
        }
        let mut mld = v6.clone();
        mld[6] = ICMPV6;
        mld[40] = 143;
        assert_eq!(parse(&mld), Err(Refusal::OtherIcmp(143)));
    }
}
