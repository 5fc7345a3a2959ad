//! A record of stream bytes declared lost, kept only when asked for: the simulator matches it
//! against what the receiver delivers in order to measure how long lost bytes kept the
//! receiver waiting (seed 003 Fig. 7a, loss fetching).

use super::Session;
use crate::path::sent::{SentFrame, SentPacket};
use crate::path::PathId;
use crate::time::Timestamp;

/// Entries kept at most; older ones are dropped first when nobody drains the log.
const MAX_ENTRIES: usize = 4096;

/// One lost STREAM frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostRange {
    /// Stream id.
    pub stream: u64,
    /// First byte.
    pub offset: u64,
    /// Length in bytes.
    pub len: u64,
    /// When the lost packet left.
    pub sent: Timestamp,
    /// When it was declared lost.
    pub declared: Timestamp,
    /// The path it was lost on.
    pub path: PathId,
}

impl Session {
    /// Starts (or stops) recording lost stream bytes for [`Session::drain_lost_ranges`].
    pub fn record_losses(&mut self, on: bool) {
        self.lost_log = on.then(Default::default);
    }

    /// The lost stream bytes recorded since the last call (oldest first).
    pub fn drain_lost_ranges(&mut self) -> impl Iterator<Item = LostRange> + '_ {
        self.lost_log.iter_mut().flat_map(|log| log.drain(..))
    }

    /// Records the STREAM frames of `p`, lost on path `idx` at `now`, when recording.
    pub(super) fn log_lost(&mut self, now: Timestamp, idx: usize, p: &SentPacket) {
        let path = self.paths[idx].id;
        let Some(log) = self.lost_log.as_mut() else { return };
        for f in &p.frames {
            if let SentFrame::Stream { id, offset, len, .. } = *f {
                if log.len() == MAX_ENTRIES {
                    log.pop_front();
                }
                let len = u64::from(len);
                log.push_back(LostRange { stream: id, offset, len, sent: p.sent_time, declared: now, path });
            }
        }
    }
}
