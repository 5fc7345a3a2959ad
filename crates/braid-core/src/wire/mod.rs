//! braid's wire format: every constant, packet header and frame in one place.
//!
//! A braid datagram is one UDP payload. Its first byte is the packet type:
//!
//! ```text
//! HANDSHAKE_INIT  client -> server   [0x01][version][Noise IK message 1 ...][mac1: 16][mac2: 16]
//! HANDSHAKE_RESP  server -> client   [0x02][client session id: u64][Noise IK message 2 ...]
//! COOKIE_REPLY    server -> client   [0x04][nonce: 24][sealed cookie: 16][tag: 16]
//! STATELESS_RESET server -> client   [0x05][reset token: 16]
//! VERSION         server -> client   [0x06][mac1 of the HANDSHAKE_INIT it answers: 16]
//!                                    [versions the server speaks: 1 to 8 bytes]
//! DATA            either way         [0x10 | key phase: 2 bits][receiver session id: u64]
//!                                    [path id: u8][packet number: u32]
//!                                    [AEAD ciphertext of frames ...][tag: 16]
//! ```
//!
//! The DATA header (10 bytes) is the AEAD's associated data; the nonce is built from the path id
//! and the full packet number, so a packet is bound to its path and cannot be replayed on another.
//! The key phase (the low two bits of the type byte, RFC 9001 §6's key phase widened to two
//! bits so that the previous, current and next keys are told apart without trial decryption)
//! says which generation of packet keys sealed it (see `crypto::keyupdate`).
//!
//! `mac1` and `mac2` are WireGuard's (whitepaper §5.4.4): `mac1` is keyed by the server's public
//! key, so the server drops junk before any public-key work; `mac2` is keyed by a cookie that
//! proves the sender's address, demanded only when the server is under load (see
//! `crypto::cookie`). A STATELESS_RESET ends a session the server no longer knows (RFC 9000
//! §10.3): its token was given to the client, sealed, in HANDSHAKE_RESP. Session ids are 64
//! bits so that nobody can collect the reset tokens of every id in advance (see
//! `crypto::reset`).
//!
//! What every version keeps, so that a server can tell a client of another version why it is
//! not admitted (QUIC's version negotiation, RFC 9000 §6, reduced to an answer): a
//! HANDSHAKE_INIT starts with its type and version bytes, is [`MIN_ANY_INIT_LEN`] to
//! [`MAX_ANY_INIT_LEN`] bytes long and ends with `mac1` and `mac2`, `mac1` keyed as here over
//! everything before it; and VERSION is as above (type 0x06, the echoed `mac1`, then 1 to
//! [`MAX_VERSIONS`] version bytes). The server answers a message of another version with
//! VERSION only when its `mac1` is valid (a scanner that does not know the server's key
//! learns nothing), and the client believes a VERSION only when it echoes the `mac1` of its
//! own message (which an off-path sender cannot know). A VERSION forged by someone who saw the
//! message ends that attempt only (see `connect`).
//!
//! Frames are parsed with checked readers: a malformed packet is rejected with a reason, never a
//! panic (see `fuzz/` for the fuzz target over [`header::parse`] and [`frame::Frames`]).

pub mod frame;
pub mod header;
pub mod varint;

pub use frame::{AckFrame, Frame, Frames, PathStatusKind};
pub use header::{DataHeader, Header};

/// Protocol version carried in HANDSHAKE_INIT: a peer of another version is refused at the
/// handshake rather than closed later on a frame it does not know (4: SHARING; 5: ACK frames
/// carry the receiver's timestamp).
pub const VERSION: u8 = 5;

/// Packet type of the client's first handshake message.
pub const TYPE_HANDSHAKE_INIT: u8 = 0x01;
/// Packet type of the server's handshake answer.
pub const TYPE_HANDSHAKE_RESP: u8 = 0x02;
/// Packet type of the server's cookie reply (under load: "prove your address first").
pub const TYPE_COOKIE_REPLY: u8 = 0x04;
/// Packet type of a stateless reset (a packet for a session the server does not know).
pub const TYPE_STATELESS_RESET: u8 = 0x05;
/// Packet type of the server's answer to a HANDSHAKE_INIT of a version it does not speak.
pub const TYPE_VERSION: u8 = 0x06;
/// Packet type of every packet after the handshake, with the key phase in its low two bits.
pub const TYPE_DATA: u8 = 0x10;
/// The bits of a DATA type byte that carry the key phase.
pub const KEY_PHASE_MASK: u8 = 0x03;

/// Bytes of a DATA header: type, session id, path id, truncated packet number.
pub const DATA_HEADER_LEN: usize = 1 + 8 + 1 + 4;
/// Where a DATA packet's session id (8 bytes, big-endian) starts: after its type byte.
pub const SESSION_ID_OFFSET: usize = 1;
/// Bytes of the AEAD tag that ends every DATA packet.
pub const TAG_LEN: usize = 16;
/// Bytes a DATA packet adds around its frames.
pub const DATA_OVERHEAD: usize = DATA_HEADER_LEN + TAG_LEN;
/// The smallest packet worth sending on a path under anti-amplification limits.
pub const MIN_PROBE_BUDGET: usize = DATA_OVERHEAD + 20;

/// Noise IK message 1 payload: client session id + timestamp + preferred cipher.
pub const HANDSHAKE_INIT_PAYLOAD_LEN: usize = 8 + 8 + 1;
/// Bytes of each of the two MACs that end HANDSHAKE_INIT.
pub const MAC_LEN: usize = 16;
/// Full HANDSHAKE_INIT datagram length.
pub const HANDSHAKE_INIT_LEN: usize = 2 + 32 + 48 + HANDSHAKE_INIT_PAYLOAD_LEN + 16 + 2 * MAC_LEN;
/// Where `mac1` starts in HANDSHAKE_INIT (it covers everything before it).
pub const MAC1_OFFSET: usize = HANDSHAKE_INIT_LEN - 2 * MAC_LEN;
/// Where `mac2` starts in HANDSHAKE_INIT (it covers everything before it, `mac1` included).
pub const MAC2_OFFSET: usize = HANDSHAKE_INIT_LEN - MAC_LEN;
/// Bytes of a stateless reset token.
pub const RESET_TOKEN_LEN: usize = 16;
/// Noise IK message 2 payload: status byte + server session id + agreed cipher + the token
/// that authenticates a stateless reset of this session.
pub const HANDSHAKE_RESP_PAYLOAD_LEN: usize = 1 + 8 + 1 + RESET_TOKEN_LEN;
/// Full HANDSHAKE_RESP datagram length (always smaller than the INIT it answers).
pub const HANDSHAKE_RESP_LEN: usize = 1 + 8 + 32 + HANDSHAKE_RESP_PAYLOAD_LEN + 16;

/// Nonce bytes of a cookie reply (XChaCha20-Poly1305).
pub const COOKIE_NONCE_LEN: usize = 24;
/// Bytes of a cookie.
pub const COOKIE_LEN: usize = 16;
/// Full COOKIE_REPLY datagram length (smaller than the HANDSHAKE_INIT it answers).
pub const COOKIE_REPLY_LEN: usize = 1 + COOKIE_NONCE_LEN + COOKIE_LEN + TAG_LEN;
/// Full STATELESS_RESET datagram length (smaller than any DATA packet that can cause it).
pub const STATELESS_RESET_LEN: usize = 1 + RESET_TOKEN_LEN;

/// The protocol versions this build speaks: what a VERSION answer lists.
pub const SUPPORTED_VERSIONS: [u8; 1] = [VERSION];
/// Versions a VERSION answer lists at most.
pub const MAX_VERSIONS: usize = 8;
/// The shortest HANDSHAKE_INIT of any version (see the module docs): a shorter one of another
/// version is junk, and the VERSION answer is always smaller than what it answers.
pub const MIN_ANY_INIT_LEN: usize = 64;
/// The longest HANDSHAKE_INIT of any version: room for a post-quantum Noise message (an
/// ML-KEM-768 key is 1,184 bytes), and a bound on the `mac1` work a message of another
/// version can cost before it is dropped.
pub const MAX_ANY_INIT_LEN: usize = 4096;
/// Shortest and longest VERSION datagram.
pub const VERSION_ANSWER_MIN: usize = 1 + MAC_LEN + 1;
/// See [`VERSION_ANSWER_MIN`].
pub const VERSION_ANSWER_MAX: usize = 1 + MAC_LEN + MAX_VERSIONS;

/// The smallest UDP payload every path must carry; path probes are padded to it.
pub const MIN_DATAGRAM: usize = 1200;

/// A session id, chosen by the side that receives the packets carrying it. The server's ids
/// carry a tag that only the server can make (see `crypto::reset`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct SessionId(pub u64);

impl std::fmt::Display for SessionId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

/// Why a packet or frame could not be parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// The datagram is shorter than its header says it must be.
    #[error("truncated")]
    Truncated,
    /// The first byte is not a known packet type.
    #[error("unknown packet type {0:#04x}")]
    UnknownPacketType(u8),
    /// The handshake speaks a version we do not.
    #[error("unsupported version {0}")]
    UnsupportedVersion(u8),
    /// A frame type we do not know.
    #[error("unknown frame type {0:#04x}")]
    UnknownFrame(u64),
    /// A frame whose fields contradict each other (e.g. an ACK range below zero).
    #[error("malformed {0} frame")]
    Malformed(&'static str),
}

// No answer to an unauthenticated packet is larger than the packet that caused it.
const _: () = assert!(HANDSHAKE_RESP_LEN < HANDSHAKE_INIT_LEN);
const _: () = assert!(COOKIE_REPLY_LEN < HANDSHAKE_INIT_LEN);
const _: () = assert!(STATELESS_RESET_LEN < DATA_OVERHEAD + 1);
const _: () = assert!(VERSION_ANSWER_MAX < MIN_ANY_INIT_LEN && MIN_ANY_INIT_LEN <= HANDSHAKE_INIT_LEN);
const _: () = assert!(MIN_ANY_INIT_LEN >= 2 + 2 * MAC_LEN && HANDSHAKE_INIT_LEN <= MAX_ANY_INIT_LEN);
