//! What travels inside braid streams and datagrams between the client's front ends and the
//! server's egress.
//!
//! ```text
//! stream request  (client -> server, first bytes of a stream)
//!     [0xB1][cmd: 1 = CONNECT][addr][port: u16]
//!     [0xB1][cmd: 2 = UDP_OPEN][association: u32]
//!     [0xB1][cmd: 3 = UDP_OPEN_ORDERED][association: u32]
//!     [0xB1][cmd: 4 = PING_OPEN][association: u32]
//! stream reply    (server -> client, first bytes back)
//!     [0xB1][status]          status: 0 ok, 1 denied, 2 refused, 3 unreachable, 4 timeout,
//!                                     5 name not found, 6 limit, 7 bad request
//! CONNECT: then the bytes of the TCP connection, both ways; FIN and reset map to the stream's.
//! UDP_OPEN: no bytes follow either way; the association lives as long as the stream: when
//! either side finishes or resets it (or the session ends), the association is gone.
//!
//! UDP datagram    (both ways)  [association: u32][addr][port: u16][payload]
//!     client -> server: addr is the destination; server -> client: the source. The server
//!     takes datagrams only for associations opened by a UDP_OPEN stream that it answered Ok.
//!     UDP_OPEN_ORDERED (one flow of the TUN front end): the payload starts with a sequence
//!     number [seq: u32] counted per direction, by which the receiver restores the sender's
//!     order in a short time-bounded window ([`crate::reorder`]).
//!     PING_OPEN: the payload is an ICMP or ICMPv6 echo message (RFC 792, RFC 4443 §4) and the
//!     port is 0; the server sends it from an ICMP datagram socket and returns the replies.
//!
//! addr: [1][4 bytes IPv4] | [4][16 bytes IPv6] | [3][len][name]
//! ```

use bytes::{BufMut, Bytes, BytesMut};
use std::fmt;
use std::net::{IpAddr, SocketAddr};

const MAGIC: u8 = 0xB1;
const CMD_CONNECT: u8 = 1;
const CMD_UDP_OPEN: u8 = 2;
const CMD_UDP_OPEN_ORDERED: u8 = 3;
const CMD_PING_OPEN: u8 = 4;

/// Traffic class of TCP streams.
pub const CLASS_STREAM: u8 = 0;
/// Traffic class of UDP datagrams.
pub const CLASS_UDP: u8 = 1;

/// A destination (or source) as the application named it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Target {
    /// An address.
    Addr(SocketAddr),
    /// A name the server resolves.
    Name(String, u16),
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Addr(a) => write!(f, "{a}"),
            Target::Name(n, p) => write!(f, "{n}:{p}"),
        }
    }
}

/// Splits `host:port` / `[v6]:port`; the host is not resolved.
pub fn split_host_port(s: &str) -> Result<(String, u16), String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok((a.ip().to_string(), a.port()));
    }
    let (h, p) = s.rsplit_once(':').ok_or_else(|| format!("'{s}' is not HOST:PORT"))?;
    let port: u16 = p.parse().map_err(|_| format!("'{p}' is not a port number"))?;
    if h.is_empty() || h.len() > 253 || h.contains(char::is_whitespace) {
        return Err(format!("'{h}' is not a host name"));
    }
    Ok((h.trim_matches(|c| c == '[' || c == ']').to_string(), port))
}

impl Target {
    /// Parses `host:port`.
    pub fn parse(s: &str) -> Result<Target, String> {
        let (h, port) = split_host_port(s)?;
        Ok(match h.parse::<IpAddr>() {
            Ok(ip) => Target::Addr(SocketAddr::new(ip, port)),
            Err(_) => Target::Name(h, port),
        })
    }

    fn encode(&self, out: &mut BytesMut) {
        match self {
            Target::Addr(SocketAddr::V4(a)) => {
                out.put_u8(1);
                out.put_slice(&a.ip().octets());
                out.put_u16(a.port());
            }
            Target::Addr(SocketAddr::V6(a)) => {
                out.put_u8(4);
                out.put_slice(&a.ip().octets());
                out.put_u16(a.port());
            }
            Target::Name(n, p) => {
                let n = &n.as_bytes()[..n.len().min(255)];
                out.put_u8(3);
                out.put_u8(n.len() as u8);
                out.put_slice(n);
                out.put_u16(*p);
            }
        }
    }

    /// Decodes a target; `Ok(None)` when more bytes are needed.
    fn decode(b: &[u8]) -> Result<Option<(Target, usize)>, String> {
        let Some(&ty) = b.first() else { return Ok(None) };
        let need = match ty {
            1 => 1 + 4 + 2,
            4 => 1 + 16 + 2,
            3 => match b.get(1) {
                Some(&n) => 2 + n as usize + 2,
                None => return Ok(None),
            },
            other => return Err(format!("unknown address type {other}")),
        };
        if b.len() < need {
            return Ok(None);
        }
        let port = u16::from_be_bytes([b[need - 2], b[need - 1]]);
        let t = match ty {
            1 => Target::Addr(SocketAddr::new(IpAddr::from(<[u8; 4]>::try_from(&b[1..5]).expect("4")), port)),
            4 => Target::Addr(SocketAddr::new(
                IpAddr::from(<[u8; 16]>::try_from(&b[1..17]).expect("16")),
                port,
            )),
            _ => {
                let name =
                    std::str::from_utf8(&b[2..need - 2]).map_err(|_| "host name is not UTF-8".to_string())?;
                if name.is_empty() {
                    return Err("empty host name".into());
                }
                Target::Name(name.to_string(), port)
            }
        };
        Ok(Some((t, need)))
    }
}

/// What a stream asks of the server (its first bytes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// A TCP connection to the target, carried by this stream.
    Connect(Target),
    /// A UDP association with this id, alive as long as this stream.
    UdpOpen(u32),
    /// A UDP association whose payloads carry a sequence number (one TUN flow).
    UdpOpenOrdered(u32),
    /// An ICMP echo association (ping through the TUN).
    PingOpen(u32),
}

/// The CONNECT request that opens a stream.
pub fn encode_connect(target: &Target) -> Bytes {
    let mut b = BytesMut::with_capacity(64);
    b.put_u8(MAGIC);
    b.put_u8(CMD_CONNECT);
    target.encode(&mut b);
    b.freeze()
}

/// The UDP_OPEN request that opens association `id`.
pub fn encode_udp_open(id: u32) -> Bytes {
    encode_open(CMD_UDP_OPEN, id)
}

/// The request that opens association `id` of the kind `request` names (its id is ignored).
pub fn encode_association_open(request: &Request, id: u32) -> Bytes {
    match request {
        Request::UdpOpenOrdered(_) => encode_open(CMD_UDP_OPEN_ORDERED, id),
        Request::PingOpen(_) => encode_open(CMD_PING_OPEN, id),
        _ => encode_open(CMD_UDP_OPEN, id),
    }
}

fn encode_open(cmd: u8, id: u32) -> Bytes {
    let mut b = BytesMut::with_capacity(6);
    b.put_u8(MAGIC);
    b.put_u8(cmd);
    b.put_u32(id);
    b.freeze()
}

/// Decodes a stream request: the request and the bytes it took, `Ok(None)` if incomplete.
pub fn decode_request(b: &[u8]) -> Result<Option<(Request, usize)>, String> {
    if b.len() < 2 {
        return Ok(None);
    }
    if b[0] != MAGIC {
        return Err("not a braid stream request".into());
    }
    match b[1] {
        CMD_CONNECT => Ok(Target::decode(&b[2..])?.map(|(t, n)| (Request::Connect(t), n + 2))),
        cmd @ (CMD_UDP_OPEN | CMD_UDP_OPEN_ORDERED | CMD_PING_OPEN) => Ok(b.get(2..6).map(|id| {
            let id = u32::from_be_bytes(id.try_into().expect("4 bytes"));
            let r = match cmd {
                CMD_UDP_OPEN => Request::UdpOpen(id),
                CMD_UDP_OPEN_ORDERED => Request::UdpOpenOrdered(id),
                _ => Request::PingOpen(id),
            };
            (r, 6)
        })),
        other => Err(format!("unknown command {other}")),
    }
}

/// The server's answer to a stream request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Connected.
    Ok = 0,
    /// Refused by the egress policy.
    Denied = 1,
    /// The destination refused the connection.
    Refused = 2,
    /// No route to the destination.
    Unreachable = 3,
    /// The connection attempt timed out.
    Timeout = 4,
    /// The name did not resolve.
    NotFound = 5,
    /// The client's limits were reached.
    Limit = 6,
    /// The request could not be read.
    BadRequest = 7,
}

impl Status {
    fn from_u8(b: u8) -> Option<Status> {
        Some(match b {
            0 => Status::Ok,
            1 => Status::Denied,
            2 => Status::Refused,
            3 => Status::Unreachable,
            4 => Status::Timeout,
            5 => Status::NotFound,
            6 => Status::Limit,
            7 => Status::BadRequest,
            _ => return None,
        })
    }
}

/// The two-byte reply.
pub fn encode_reply(s: Status) -> Bytes {
    Bytes::copy_from_slice(&[MAGIC, s as u8])
}

/// Decodes the reply: `Ok(None)` if incomplete.
pub fn decode_reply(b: &[u8]) -> Result<Option<Status>, String> {
    match b {
        [] | [_] => Ok(None),
        [MAGIC, s, ..] => Status::from_u8(*s).map(Some).ok_or_else(|| format!("unknown status {s}")),
        _ => Err("not a braid stream reply".into()),
    }
}

/// A UDP datagram of an association.
pub fn encode_udp(association: u32, target: &Target, payload: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(payload.len() + 32);
    b.put_u32(association);
    target.encode(&mut b);
    b.put_slice(payload);
    b.freeze()
}

/// Decodes a UDP datagram: association, address, payload.
pub fn decode_udp(b: &Bytes) -> Result<(u32, Target, Bytes), String> {
    if b.len() < 4 {
        return Err("datagram too short".into());
    }
    let assoc = u32::from_be_bytes(b[..4].try_into().expect("4"));
    let (t, n) = Target::decode(&b[4..])?.ok_or("datagram truncated")?;
    Ok((assoc, t, b.slice(4 + n..)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects() {
        for t in [
            Target::parse("10.0.0.1:80").unwrap(),
            Target::parse("[2001:db8::1]:443").unwrap(),
            Target::parse("example.com:22").unwrap(),
        ] {
            let b = encode_connect(&t);
            assert_eq!(decode_request(&b).unwrap(), Some((Request::Connect(t.clone()), b.len())));
            assert_eq!(decode_request(&b[..b.len() - 1]).unwrap(), None);
            let d = encode_udp(7, &t, b"payload");
            let (a, t2, p) = decode_udp(&d).unwrap();
            assert_eq!((a, t2, &p[..]), (7, t, &b"payload"[..]));
        }
        let open = encode_udp_open(0xDEAD_BEEF);
        assert_eq!(decode_request(&open).unwrap(), Some((Request::UdpOpen(0xDEAD_BEEF), 6)));
        assert_eq!(decode_request(&open[..5]).unwrap(), None);
        for r in [Request::UdpOpenOrdered(7), Request::PingOpen(7), Request::UdpOpen(7)] {
            assert_eq!(decode_request(&encode_association_open(&r, 7)).unwrap(), Some((r, 6)));
        }
        assert!(decode_request(&[0xB1, 9]).is_err());
        assert!(decode_request(&[0x00, 1]).is_err());
        assert!(decode_request(&[0xB1, 1, 9]).is_err());
        assert_eq!(decode_reply(&encode_reply(Status::Denied)).unwrap(), Some(Status::Denied));
        assert!(decode_reply(&[0xB1, 99]).is_err());
        assert!(decode_udp(&Bytes::from_static(&[0, 0])).is_err());
        assert!(split_host_port("nope").is_err());
        assert_eq!(split_host_port("[::1]:5").unwrap(), ("::1".into(), 5));
    }
}
