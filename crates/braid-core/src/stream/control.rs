//! Control frames the stream layer owes the peer: session-level credits, and per stream
//! RESET_STREAM and STOP_SENDING.

use std::collections::BTreeSet;

/// Session-level control frames the stream layer owes the peer.
#[derive(Debug, Default)]
pub struct StreamControl {
    /// MAX_DATA must be sent.
    pub max_data: bool,
    /// MAX_STREAMS must be sent.
    pub max_streams: bool,
    /// MAX_STREAM_DATA for these streams.
    pub max_stream_data: Vec<u64>,
}

/// The streams owing RESET_STREAM or STOP_SENDING, in id order, kept as their flags change:
/// the sender asks before every packet, and a scan of every stream was O(streams) each time.
#[derive(Debug, Default)]
pub(super) struct OwedResets {
    resets: BTreeSet<u64>,
    stops: BTreeSet<u64>,
}

impl OwedResets {
    /// Stream `id` owes RESET_STREAM (`reset`) and STOP_SENDING (`stop`) now.
    pub(super) fn sync(&mut self, id: u64, reset: bool, stop: bool) {
        for (set, owed) in [(&mut self.resets, reset), (&mut self.stops, stop)] {
            if owed {
                set.insert(id);
            } else {
                set.remove(&id);
            }
        }
    }

    /// True when some stream owes one or the other.
    pub(super) fn any(&self) -> bool {
        !self.resets.is_empty() || !self.stops.is_empty()
    }

    /// Streams owing RESET_STREAM, in id order.
    pub(super) fn resets(&self) -> impl Iterator<Item = u64> + '_ {
        self.resets.iter().copied()
    }

    /// Streams owing STOP_SENDING, in id order.
    pub(super) fn stops(&self) -> impl Iterator<Item = u64> + '_ {
        self.stops.iter().copied()
    }
}
