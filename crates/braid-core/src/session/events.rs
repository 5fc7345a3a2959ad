//! What a session tells the application: [`Event`]s, among them path changes and the reason
//! it ended.

use crate::path::PathId;
use crate::stream::StreamEvent;
use std::fmt;

/// Why a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// No packet arrived on any path for the idle timeout.
    IdleTimeout,
    /// The server never answered the handshake.
    HandshakeTimeout,
    /// The server does not admit our key.
    Refused,
    /// The server speaks another protocol version (the newest it speaks).
    VersionMismatch {
        /// The server's newest protocol version.
        server: u8,
    },
    /// The peer closed the session.
    PeerClosed {
        /// Application code.
        code: u64,
        /// Reason text.
        reason: String,
    },
    /// We closed the session.
    LocalClosed {
        /// Application code.
        code: u64,
    },
    /// The peer broke the protocol (after authenticating, so it is a bug or an attack).
    ProtocolViolation(String),
    /// The server answered with a stateless reset: it no longer knows the session (it
    /// restarted, or ended the session).
    StatelessReset,
}

impl fmt::Display for CloseReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CloseReason::IdleTimeout => f.write_str("no path answered within the idle timeout"),
            CloseReason::HandshakeTimeout => f.write_str(
                "the server did not answer the handshake: it is down, unreachable, or holds a \
                 different key than the one configured as server key",
            ),
            CloseReason::Refused => f.write_str("the server refused our key (not in its client list)"),
            CloseReason::VersionMismatch { server } => write!(
                f,
                "the server speaks braid protocol version {server} and this client version {}: \
                 run the same braid release on both",
                crate::wire::VERSION
            ),
            CloseReason::PeerClosed { code, reason } => {
                write!(f, "closed by peer (code {code}: {reason})")
            }
            CloseReason::LocalClosed { code } => write!(f, "closed locally (code {code})"),
            CloseReason::ProtocolViolation(what) => write!(f, "protocol violation by peer: {what}"),
            CloseReason::StatelessReset => {
                f.write_str("the server no longer knows this session (it restarted or ended it)")
            }
        }
    }
}

/// What happened to a path, for the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathEvent {
    /// Validated: it carries data now.
    Validated,
    /// Silent: its data moved to other paths; it is being probed.
    Suspect,
    /// Answering again after being suspect.
    Recovered,
    /// Validation failed; the path was dropped.
    Failed,
    /// Abandoned by us or the peer.
    Closed,
    /// The peer's address changed (NAT rebinding, a new address on its link) and the new one
    /// was validated: packets go there now.
    Migrated,
}

/// Something the application should know.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The handshake finished; streams and datagrams may be used.
    Connected,
    /// A stream event.
    Stream(StreamEvent),
    /// A datagram arrived (read it with [`Session::recv_datagram`](super::Session::recv_datagram)).
    DatagramReceived,
    /// A path changed.
    Path(PathId, PathEvent),
    /// The session ended; no further events follow.
    Closed(CloseReason),
}
