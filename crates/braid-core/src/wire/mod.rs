//! braid's wire format: every constant, packet header and frame in one place.
//!
//! A braid datagram is one UDP payload. Its first byte is the packet type:
//!
//! ```text
//! HANDSHAKE_INIT  client -> server   [0x01][version][Noise IK message 1 ...]
//! HANDSHAKE_RESP  server -> client   [0x02][client session id: u32][Noise IK message 2 ...]
//! DATA            either way         [0x03][receiver session id: u32][path id: u8][packet number: u32]
//!                                    [AEAD ciphertext of frames ...][tag: 16]
//! ```
//!
//! The DATA header (10 bytes) is the AEAD's associated data; the nonce is built from the path id
//! and the full packet number, so a packet is bound to its path and cannot be replayed on another.
//! Frames are parsed with checked readers: a malformed packet is rejected with a reason, never a
//! panic (see `fuzz/` for the fuzz target over [`header::parse`] and [`frame::Frames`]).

pub mod frame;
pub mod header;
pub mod varint;

pub use frame::{AckFrame, Frame, Frames, PathStatusKind};
pub use header::{DataHeader, Header};

/// Protocol version carried in HANDSHAKE_INIT.
pub const VERSION: u8 = 2;

/// Packet type of the client's first handshake message.
pub const TYPE_HANDSHAKE_INIT: u8 = 0x01;
/// Packet type of the server's handshake answer.
pub const TYPE_HANDSHAKE_RESP: u8 = 0x02;
/// Packet type of every packet after the handshake.
pub const TYPE_DATA: u8 = 0x03;

/// Bytes of a DATA header: type, session id, path id, truncated packet number.
pub const DATA_HEADER_LEN: usize = 1 + 4 + 1 + 4;
/// Bytes of the AEAD tag that ends every DATA packet.
pub const TAG_LEN: usize = 16;
/// Bytes a DATA packet adds around its frames.
pub const DATA_OVERHEAD: usize = DATA_HEADER_LEN + TAG_LEN;

/// Noise IK message 1 payload: client session id + timestamp + preferred cipher.
pub const HANDSHAKE_INIT_PAYLOAD_LEN: usize = 4 + 8 + 1;
/// Full HANDSHAKE_INIT datagram length.
pub const HANDSHAKE_INIT_LEN: usize = 2 + 32 + 48 + HANDSHAKE_INIT_PAYLOAD_LEN + 16;
/// Noise IK message 2 payload: status byte + server session id + agreed cipher.
pub const HANDSHAKE_RESP_PAYLOAD_LEN: usize = 1 + 4 + 1;
/// Full HANDSHAKE_RESP datagram length (always smaller than the INIT it answers).
pub const HANDSHAKE_RESP_LEN: usize = 1 + 4 + 32 + HANDSHAKE_RESP_PAYLOAD_LEN + 16;

/// The smallest UDP payload every path must carry; path probes are padded to it.
pub const MIN_DATAGRAM: usize = 1200;

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

const _: () = assert!(HANDSHAKE_RESP_LEN < HANDSHAKE_INIT_LEN);
