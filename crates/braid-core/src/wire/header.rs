//! Packet headers: parsed with checked reads, emitted into caller buffers.

use super::{
    ParseError, SessionId, COOKIE_LEN, COOKIE_NONCE_LEN, COOKIE_REPLY_LEN, DATA_HEADER_LEN,
    HANDSHAKE_INIT_LEN, HANDSHAKE_RESP_LEN, KEY_PHASE_MASK, RESET_TOKEN_LEN, SESSION_ID_OFFSET,
    STATELESS_RESET_LEN, TAG_LEN, TYPE_COOKIE_REPLY, TYPE_DATA, TYPE_HANDSHAKE_INIT, TYPE_HANDSHAKE_RESP,
    TYPE_STATELESS_RESET, TYPE_VERSION, VERSION, VERSION_ANSWER_MAX, VERSION_ANSWER_MIN,
};
use super::{MAC_LEN, MAX_VERSIONS};

/// The clear-text header of a DATA packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    /// The session id chosen by the receiver of this packet.
    pub session_id: SessionId,
    /// Which path of the session the packet travels on.
    pub path_id: u8,
    /// The low 32 bits of the packet number.
    pub truncated_pn: u32,
    /// The low two bits of the key generation that sealed the packet.
    pub key_phase: u8,
}

/// A parsed packet header. Handshake messages are returned whole; their Noise content is opened
/// by the handshake code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Header<'a> {
    /// Noise IK message 1 (after the type and version bytes), then `mac1` and `mac2`.
    HandshakeInit {
        /// The Noise message.
        noise: &'a [u8],
    },
    /// The server's cookie, sealed to the client's last `mac1`.
    CookieReply {
        /// XChaCha20-Poly1305 nonce.
        nonce: &'a [u8; COOKIE_NONCE_LEN],
        /// The sealed cookie and its tag.
        sealed: &'a [u8; COOKIE_LEN + TAG_LEN],
    },
    /// A stateless reset.
    StatelessReset {
        /// The token that proves the server sent it.
        token: &'a [u8; RESET_TOKEN_LEN],
    },
    /// Noise IK message 2, addressed to the client's session id.
    HandshakeResp {
        /// The client's session id.
        session_id: SessionId,
        /// The Noise message.
        noise: &'a [u8],
    },
    /// The server does not speak our version: the versions it does, for the HANDSHAKE_INIT
    /// whose `mac1` it echoes.
    Version {
        /// `mac1` of the HANDSHAKE_INIT answered.
        echo: &'a [u8; MAC_LEN],
        /// The versions the server speaks (1 to [`MAX_VERSIONS`]).
        versions: &'a [u8],
    },
    /// A sealed DATA packet.
    Data(DataHeader),
}

/// Parses the header of `datagram`. Handshake packets must have their exact length (the
/// WireGuard habit: a packet is accepted only at its expected size).
pub fn parse(datagram: &[u8]) -> Result<Header<'_>, ParseError> {
    let ty = *datagram.first().ok_or(ParseError::Truncated)?;
    match ty {
        TYPE_HANDSHAKE_INIT => {
            // The version first: another version's message may have another length (the
            // endpoint answers it; see the module docs of `wire`).
            let version = *datagram.get(1).ok_or(ParseError::Truncated)?;
            if version != VERSION {
                return Err(ParseError::UnsupportedVersion(version));
            }
            if datagram.len() != HANDSHAKE_INIT_LEN {
                return Err(ParseError::Truncated);
            }
            Ok(Header::HandshakeInit { noise: &datagram[2..super::MAC1_OFFSET] })
        }
        TYPE_HANDSHAKE_RESP => {
            if datagram.len() != HANDSHAKE_RESP_LEN {
                return Err(ParseError::Truncated);
            }
            let session_id = SessionId(u64::from_be_bytes(datagram[1..9].try_into().expect("8 bytes")));
            Ok(Header::HandshakeResp { session_id, noise: &datagram[9..] })
        }
        TYPE_COOKIE_REPLY => {
            if datagram.len() != COOKIE_REPLY_LEN {
                return Err(ParseError::Truncated);
            }
            let (nonce, sealed) = datagram[1..].split_at(COOKIE_NONCE_LEN);
            Ok(Header::CookieReply {
                nonce: nonce.try_into().expect("exact length checked"),
                sealed: sealed.try_into().expect("exact length checked"),
            })
        }
        TYPE_STATELESS_RESET => {
            if datagram.len() != STATELESS_RESET_LEN {
                return Err(ParseError::Truncated);
            }
            Ok(Header::StatelessReset { token: datagram[1..].try_into().expect("exact length checked") })
        }
        TYPE_VERSION => {
            if !(VERSION_ANSWER_MIN..=VERSION_ANSWER_MAX).contains(&datagram.len()) {
                return Err(ParseError::Truncated);
            }
            let (echo, versions) = datagram[1..].split_at(MAC_LEN);
            Ok(Header::Version { echo: echo.try_into().expect("exact length checked"), versions })
        }
        ty if ty & !KEY_PHASE_MASK == TYPE_DATA => {
            // At least one byte of frames, plus the tag.
            if datagram.len() < DATA_HEADER_LEN + 1 + TAG_LEN {
                return Err(ParseError::Truncated);
            }
            Ok(Header::Data(DataHeader {
                session_id: SessionId(u64::from_be_bytes(datagram[1..9].try_into().expect("8 bytes"))),
                path_id: datagram[9],
                truncated_pn: u32::from_be_bytes(datagram[10..14].try_into().expect("4 bytes")),
                key_phase: ty & KEY_PHASE_MASK,
            }))
        }
        other => Err(ParseError::UnknownPacketType(other)),
    }
}

impl DataHeader {
    /// Writes the header into the first [`DATA_HEADER_LEN`] bytes of `buf`.
    pub fn write(&self, buf: &mut [u8]) {
        buf[0] = TYPE_DATA | (self.key_phase & KEY_PHASE_MASK);
        buf[SESSION_ID_OFFSET..SESSION_ID_OFFSET + 8].copy_from_slice(&self.session_id.0.to_be_bytes());
        buf[9] = self.path_id;
        buf[10..14].copy_from_slice(&self.truncated_pn.to_be_bytes());
    }
}

/// The VERSION answer to a HANDSHAKE_INIT of another version whose `mac1` is `echo`, listing
/// `versions` (at most [`MAX_VERSIONS`] of them are sent).
pub fn version_answer(echo: &[u8; MAC_LEN], versions: &[u8]) -> Vec<u8> {
    let versions = &versions[..versions.len().min(MAX_VERSIONS)];
    let mut out = Vec::with_capacity(1 + MAC_LEN + versions.len());
    out.push(TYPE_VERSION);
    out.extend_from_slice(echo);
    out.extend_from_slice(versions);
    out
}

/// Recovers a full packet number from its low 32 bits, given the largest number received so far
/// on the path (RFC 9000 Appendix A.3 with a 32-bit window).
pub fn decode_packet_number(largest: Option<u64>, truncated: u32) -> u64 {
    const WIN: u64 = 1 << 32;
    const HWIN: u64 = WIN / 2;
    const MASK: u64 = WIN - 1;
    let expected = largest.map_or(0, |l| l + 1);
    let candidate = (expected & !MASK) | u64::from(truncated);
    if candidate + HWIN <= expected && candidate < (1 << 62) - WIN {
        candidate + WIN
    } else if candidate > expected + HWIN && candidate >= WIN {
        candidate - WIN
    } else {
        candidate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_header_round_trip() {
        for key_phase in 0..4 {
            let h = DataHeader {
                session_id: SessionId(0xdead_beef_0bad_f00d),
                path_id: 7,
                truncated_pn: 42,
                key_phase,
            };
            let mut buf = vec![0u8; DATA_HEADER_LEN + 1 + TAG_LEN];
            h.write(&mut buf);
            assert_eq!(parse(&buf), Ok(Header::Data(h)));
        }
        let h = DataHeader { session_id: SessionId(1), path_id: 7, truncated_pn: 42, key_phase: 0 };
        let mut buf = vec![0u8; DATA_HEADER_LEN + 1 + TAG_LEN];
        h.write(&mut buf);
        assert_eq!(parse(&buf[..DATA_HEADER_LEN + TAG_LEN]), Err(ParseError::Truncated));
    }

    #[test]
    fn handshake_lengths_are_exact() {
        let mut init = vec![0u8; HANDSHAKE_INIT_LEN];
        init[0] = TYPE_HANDSHAKE_INIT;
        init[1] = VERSION;
        assert!(matches!(parse(&init), Ok(Header::HandshakeInit { .. })));
        init.push(0);
        assert_eq!(parse(&init), Err(ParseError::Truncated));
        init.pop();
        init[1] = 9;
        assert_eq!(parse(&init), Err(ParseError::UnsupportedVersion(9)));
        // Another version's message may be longer or shorter: still told apart by its version.
        init.push(0);
        assert_eq!(parse(&init), Err(ParseError::UnsupportedVersion(9)));
        assert_eq!(parse(&init[..2]), Err(ParseError::UnsupportedVersion(9)));
        assert_eq!(parse(&init[..1]), Err(ParseError::Truncated));
        assert_eq!(parse(&[0x77]), Err(ParseError::UnknownPacketType(0x77)));
        let mut reset = vec![TYPE_STATELESS_RESET; STATELESS_RESET_LEN];
        assert!(matches!(parse(&reset), Ok(Header::StatelessReset { .. })));
        reset.push(0);
        assert_eq!(parse(&reset), Err(ParseError::Truncated));
        let mut cookie = vec![TYPE_COOKIE_REPLY; COOKIE_REPLY_LEN];
        assert!(matches!(parse(&cookie), Ok(Header::CookieReply { .. })));
        cookie.pop();
        assert_eq!(parse(&cookie), Err(ParseError::Truncated));
        assert_eq!(parse(&[]), Err(ParseError::Truncated));
    }

    #[test]
    fn version_answer_round_trip() {
        let echo = [7u8; MAC_LEN];
        let answer = version_answer(&echo, &[4, 5]);
        assert_eq!(parse(&answer), Ok(Header::Version { echo: &echo, versions: &[4, 5] }));
        // At most MAX_VERSIONS are listed, and a datagram longer than that is refused.
        let many: Vec<u8> = (1..=20).collect();
        let answer = version_answer(&echo, &many);
        assert_eq!(answer.len(), VERSION_ANSWER_MAX);
        assert!(
            matches!(parse(&answer), Ok(Header::Version { versions, .. }) if versions.len() == MAX_VERSIONS)
        );
        let mut long = answer.clone();
        long.push(9);
        assert_eq!(parse(&long), Err(ParseError::Truncated));
        // No version listed: refused.
        assert_eq!(parse(&answer[..1 + MAC_LEN]), Err(ParseError::Truncated));
    }

    #[test]
    fn packet_number_reconstruction() {
        assert_eq!(decode_packet_number(None, 0), 0);
        assert_eq!(decode_packet_number(Some(10), 11), 11);
        assert_eq!(decode_packet_number(Some(10), 5), 5);
        let big = (1u64 << 32) + 5;
        assert_eq!(decode_packet_number(Some(big - 10), 5), big);
        assert_eq!(decode_packet_number(Some(big), u32::MAX), (1u64 << 32) - 1);
        assert_eq!(decode_packet_number(Some(u32::MAX as u64), 2), (1 << 32) + 2);
    }
}
