//! Stream ids, QUIC-style (RFC 9000 §2.1): the low bit says who opened the stream (0 the
//! client, 1 the server), the rest is a per-side index.

use crate::side::Side;
use std::fmt;

/// A stream id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The side that opened the stream.
    pub fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// The per-side index.
    pub fn index(self) -> u64 {
        self.0 >> 1
    }

    pub(super) fn new(side: Side, index: u64) -> Self {
        StreamId(index << 1 | u64::from(side == Side::Server))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
