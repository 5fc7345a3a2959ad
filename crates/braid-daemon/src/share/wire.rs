//! The allocation exchange between a member and a sharer, byte by byte.
//!
//! ```text
//! ALLOC_INIT (member -> sharer), exactly INIT_LEN bytes:
//!   [0]  type 0xB1   [1] version 1   [2] admission mode (0: listed key, 1: community key)
//!   [3 .. 3+NOISE1_LEN]  Noise IKpsk1 message 1: e, es, s, ss, psk; payload (26 bytes) =
//!                        server address (16-byte IPv6 or IPv4-mapped, 2-byte port)
//!                        || timestamp (u64, strictly increasing per member key)
//!   [INIT_LEN-16 ..]     mac1 = BLAKE2s-MAC(HASH("braid share mac1" || sharer key), bytes before)
//! ALLOC_RESP (sharer -> member), exactly RESP_LEN bytes:
//!   [0]  type 0xB2   [1] version 1
//!   [2 ..]  Noise IKpsk1 message 2: e, ee, se; payload (19 bytes) = status (u8)
//!           || rate limit (u64 bytes/s, 0: none) || bytes left under the cap (u64, MAX: none)
//!           || lease (u16 seconds of silence after which the relay forgets the member)
//! ```
//! The type bytes are outside every type braid's own packets use (0x01..0x06, 0x10..0x13), so
//! the sharer tells an allocation from a relayed path packet by its first byte. A message is
//! accepted only at its exact size (the WireGuard habit); the answer is shorter than the
//! request, so a forged source address gets no amplification.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

/// Type byte of ALLOC_INIT.
pub const TYPE_ALLOC_INIT: u8 = 0xB1;
/// Type byte of ALLOC_RESP.
pub const TYPE_ALLOC_RESP: u8 = 0xB2;
/// Version of the exchange.
pub const SHARE_VERSION: u8 = 1;
/// Bytes of the MAC that ends ALLOC_INIT.
pub const MAC_LEN: usize = 16;
/// Bytes of ALLOC_INIT's Noise payload.
pub const INIT_PAYLOAD_LEN: usize = 18 + 8;
/// Bytes of Noise message 1 (ephemeral 32, sealed static 32+16, sealed payload).
pub const NOISE1_LEN: usize = 32 + 48 + INIT_PAYLOAD_LEN + 16;
/// Bytes of ALLOC_INIT.
pub const INIT_LEN: usize = 3 + NOISE1_LEN + MAC_LEN;
/// Where mac1 starts.
pub const MAC_OFFSET: usize = INIT_LEN - MAC_LEN;
/// Bytes of ALLOC_RESP's Noise payload.
pub const RESP_PAYLOAD_LEN: usize = 1 + 8 + 8 + 2;
/// Bytes of Noise message 2 (ephemeral 32, sealed payload).
pub const NOISE2_LEN: usize = 32 + RESP_PAYLOAD_LEN + 16;
/// Bytes of ALLOC_RESP.
pub const RESP_LEN: usize = 2 + NOISE2_LEN;

// The answer is shorter than the request: no amplification towards a forged source.
const _: () = assert!(RESP_LEN < INIT_LEN);

/// How a member asks to be admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Its static key is on the sharer's member list.
    Listed,
    /// It holds the community key (the Noise psk).
    Community,
}

/// Why a datagram is not a well-formed allocation message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// Not the expected type byte.
    #[error("not an allocation message (type byte {0:#04x})")]
    Type(u8),
    /// Wrong size.
    #[error("allocation message of {got} bytes, expected exactly {want}")]
    Length { got: usize, want: usize },
    /// Another version.
    #[error("allocation version {0}, this sharer speaks {SHARE_VERSION}")]
    Version(u8),
    /// Unknown admission mode.
    #[error("unknown admission mode {0}")]
    Mode(u8),
}

/// A checked view of ALLOC_INIT: every accessor is in bounds once constructed.
#[derive(Debug, Clone, Copy)]
pub struct InitView<'a> {
    buf: &'a [u8],
    mode: Mode,
}

impl<'a> InitView<'a> {
    /// Checks type, size, version and mode.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        let ty = *buf.first().ok_or(WireError::Length { got: 0, want: INIT_LEN })?;
        if ty != TYPE_ALLOC_INIT {
            return Err(WireError::Type(ty));
        }
        if buf.len() != INIT_LEN {
            return Err(WireError::Length { got: buf.len(), want: INIT_LEN });
        }
        if buf[1] != SHARE_VERSION {
            return Err(WireError::Version(buf[1]));
        }
        let mode = match buf[2] {
            0 => Mode::Listed,
            1 => Mode::Community,
            m => return Err(WireError::Mode(m)),
        };
        Ok(InitView { buf, mode })
    }

    /// The admission mode.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// Noise message 1.
    pub fn noise(&self) -> &'a [u8] {
        &self.buf[3..MAC_OFFSET]
    }

    /// What mac1 covers.
    pub fn mac_covered(&self) -> &'a [u8] {
        &self.buf[..MAC_OFFSET]
    }

    /// mac1 as sent.
    pub fn mac(&self) -> &'a [u8] {
        &self.buf[MAC_OFFSET..]
    }
}

/// A checked view of ALLOC_RESP.
#[derive(Debug, Clone, Copy)]
pub struct RespView<'a> {
    buf: &'a [u8],
}

impl<'a> RespView<'a> {
    /// Checks type, size and version.
    pub fn new_checked(buf: &'a [u8]) -> Result<Self, WireError> {
        let ty = *buf.first().ok_or(WireError::Length { got: 0, want: RESP_LEN })?;
        if ty != TYPE_ALLOC_RESP {
            return Err(WireError::Type(ty));
        }
        if buf.len() != RESP_LEN {
            return Err(WireError::Length { got: buf.len(), want: RESP_LEN });
        }
        if buf[1] != SHARE_VERSION {
            return Err(WireError::Version(buf[1]));
        }
        Ok(RespView { buf })
    }

    /// Noise message 2.
    pub fn noise(&self) -> &'a [u8] {
        &self.buf[2..]
    }
}

/// What a member asks for (ALLOC_INIT's payload).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// The aggregation server the member's path packets go to.
    pub server: SocketAddr,
    /// Strictly increasing per member key: a replayed request is refused.
    pub timestamp: u64,
}

impl Request {
    /// The payload bytes.
    pub fn encode(&self) -> [u8; INIT_PAYLOAD_LEN] {
        let mut b = [0u8; INIT_PAYLOAD_LEN];
        let ip = match self.server.ip() {
            IpAddr::V4(v4) => v4.to_ipv6_mapped(),
            IpAddr::V6(v6) => v6,
        };
        b[..16].copy_from_slice(&ip.octets());
        b[16..18].copy_from_slice(&self.server.port().to_be_bytes());
        b[18..].copy_from_slice(&self.timestamp.to_be_bytes());
        b
    }

    /// From payload bytes (any 26 bytes decode; the sharer then checks the server).
    pub fn decode(b: &[u8; INIT_PAYLOAD_LEN]) -> Request {
        let mut ip = [0u8; 16];
        ip.copy_from_slice(&b[..16]);
        let v6 = Ipv6Addr::from(ip);
        let ip = match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => IpAddr::V6(v6),
        };
        let port = u16::from_be_bytes([b[16], b[17]]);
        let mut ts = [0u8; 8];
        ts.copy_from_slice(&b[18..]);
        Request { server: SocketAddr::new(ip, port), timestamp: u64::from_be_bytes(ts) }
    }
}

/// The sharer's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// Relaying from the member's address to the server.
    Granted,
    /// The member's key is not admitted.
    KeyNotAdmitted,
    /// The server is not on the sharer's allow list.
    ServerNotAllowed,
    /// The member reached its byte cap and the cap stops it.
    OverCap,
    /// The sharer relays for as many members as it will.
    Full,
    /// A request with this timestamp or an older one was seen (a replay, or a clock gone back).
    Stale,
}

impl Status {
    fn code(self) -> u8 {
        match self {
            Status::Granted => 0,
            Status::KeyNotAdmitted => 1,
            Status::ServerNotAllowed => 2,
            Status::OverCap => 3,
            Status::Full => 4,
            Status::Stale => 5,
        }
    }

    fn from_code(c: u8) -> Option<Status> {
        Some(match c {
            0 => Status::Granted,
            1 => Status::KeyNotAdmitted,
            2 => Status::ServerNotAllowed,
            3 => Status::OverCap,
            4 => Status::Full,
            5 => Status::Stale,
            _ => return None,
        })
    }

    /// For logs and errors.
    pub fn describe(self) -> &'static str {
        match self {
            Status::Granted => "granted",
            Status::KeyNotAdmitted => "this member's key is not admitted by the sharer",
            Status::ServerNotAllowed => "the sharer does not relay to this server",
            Status::OverCap => "this member reached its byte cap at the sharer",
            Status::Full => "the sharer relays for as many members as it will",
            Status::Stale => "replayed or out-of-order request (timestamp not newer than the last)",
        }
    }
}

/// ALLOC_RESP's payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Granted or why not.
    pub status: Status,
    /// Rate limit in bytes/s (0: none).
    pub rate: u64,
    /// Bytes left under the member's nearest cap (`u64::MAX`: no cap).
    pub cap_left: u64,
    /// Seconds of silence after which the relay forgets the member.
    pub lease_secs: u16,
}

impl Grant {
    /// A refusal.
    pub fn refused(status: Status) -> Grant {
        Grant { status, rate: 0, cap_left: 0, lease_secs: 0 }
    }

    /// The payload bytes.
    pub fn encode(&self) -> [u8; RESP_PAYLOAD_LEN] {
        let mut b = [0u8; RESP_PAYLOAD_LEN];
        b[0] = self.status.code();
        b[1..9].copy_from_slice(&self.rate.to_be_bytes());
        b[9..17].copy_from_slice(&self.cap_left.to_be_bytes());
        b[17..].copy_from_slice(&self.lease_secs.to_be_bytes());
        b
    }

    /// From payload bytes; `None` for an unknown status.
    pub fn decode(b: &[u8; RESP_PAYLOAD_LEN]) -> Option<Grant> {
        let status = Status::from_code(b[0])?;
        let mut r = [0u8; 8];
        r.copy_from_slice(&b[1..9]);
        let mut c = [0u8; 8];
        c.copy_from_slice(&b[9..17]);
        Some(Grant {
            status,
            rate: u64::from_be_bytes(r),
            cap_left: u64::from_be_bytes(c),
            lease_secs: u16::from_be_bytes([b[17], b[18]]),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lengths_and_no_amplification() {
        assert_eq!(INIT_LEN, 141);
        assert_eq!(RESP_LEN, 69);
    }

    #[test]
    fn each_rejection_says_why() {
        assert_eq!(InitView::new_checked(&[]).unwrap_err(), WireError::Length { got: 0, want: INIT_LEN });
        assert_eq!(InitView::new_checked(&[0x10; INIT_LEN]).unwrap_err(), WireError::Type(0x10));
        let mut b = [0u8; INIT_LEN];
        b[0] = TYPE_ALLOC_INIT;
        assert_eq!(
            InitView::new_checked(&b[..40]).unwrap_err(),
            WireError::Length { got: 40, want: INIT_LEN }
        );
        assert_eq!(InitView::new_checked(&b).unwrap_err(), WireError::Version(0));
        b[1] = SHARE_VERSION;
        b[2] = 7;
        assert_eq!(InitView::new_checked(&b).unwrap_err(), WireError::Mode(7));
        b[2] = 1;
        assert_eq!(InitView::new_checked(&b).unwrap().mode(), Mode::Community);
    }

    proptest! {
        #[test]
        fn parsers_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            if let Ok(v) = InitView::new_checked(&data) {
                prop_assert_eq!(v.noise().len(), NOISE1_LEN);
                prop_assert_eq!(v.mac().len(), MAC_LEN);
            }
            if let Ok(v) = RespView::new_checked(&data) {
                prop_assert_eq!(v.noise().len(), NOISE2_LEN);
            }
            if data.len() >= RESP_PAYLOAD_LEN {
                let mut p = [0u8; RESP_PAYLOAD_LEN];
                p.copy_from_slice(&data[..RESP_PAYLOAD_LEN]);
                if let Some(g) = Grant::decode(&p) {
                    prop_assert_eq!(g.encode(), p);
                }
            }
        }

        #[test]
        fn request_round_trips(a in any::<[u8; 16]>(), port in any::<u16>(), ts in any::<u64>(), v4 in any::<[u8; 4]>()) {
            for ip in [IpAddr::V6(Ipv6Addr::from(a)), IpAddr::V4(v4.into())] {
                let r = Request { server: SocketAddr::new(ip, port), timestamp: ts };
                let back = Request::decode(&r.encode());
                prop_assert_eq!(back.server.port(), port);
                prop_assert_eq!(back.timestamp, ts);
                // An IPv4-mapped IPv6 address comes back as IPv4, the same destination.
                prop_assert_eq!(crate::udp::canonical(back.server), crate::udp::canonical(r.server));
            }
        }
    }
}
