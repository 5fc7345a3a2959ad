//! Reinjection of a stalled stream head: MPTCP's opportunistic retransmission (Raiciu et al.,
//! "How Hard Can It Be? Designing and Implementing a Deployable Multipath TCP", NSDI 2012,
//! §4.2). When a stream can send nothing more because the bytes at its head are still on their
//! way on a slow path — its send buffer is full of data sent and acknowledged beyond them, or
//! the peer's window is — those bytes are sent once more, on whichever path the scheduler
//! picks, as soon as the fastest path could have delivered them (its smoothed RTT plus four
//! variations after the stall began). The copy that arrives first counts; the other is a
//! duplicate the receiver drops.
//!
//! Why: a path's first window goes out before its rate is known. On 20 kbit/s, ten packets
//! are six seconds of queue; beside 100 Mbit/s at 150 ms the stream filled its send buffer in
//! under a second and then waited for them (`braid sim --link 20kbit/5ms --link 100mbit/150ms
//! --scheduler minrtt`: the fast path stood idle from 4 s to 11 s).
//!
//! Each head is reinjected once: if the copy is lost too, loss recovery resends it. The check
//! runs with the session's housekeeping (ten times a second) and on its own timer.

use super::Session;
use crate::path::PathState;
use crate::time::Timestamp;
use smallvec::SmallVec;
use std::time::Duration;

/// The most bytes sent again for one stalled head: its holes up to here (about 45 packets;
/// a slow path's first window is ten).
const MAX_REINJECT: u64 = 64 * 1024;

/// One stalled head being watched.
#[derive(Debug, Clone)]
struct Head {
    stream: u64,
    offset: u64,
    since: Timestamp,
    done: bool,
}

/// The stalled heads being watched. (What is sent again counts in the sending path's
/// retransmitted bytes, like any other resend.)
#[derive(Debug, Default)]
pub(super) struct StallWatch {
    heads: SmallVec<[Head; 2]>,
}

impl Session {
    /// How long a head may stall before it is sent again: the fastest path's smoothed RTT
    /// plus four variations (its retransmission timeout without the ACK delay). None with
    /// fewer than two active paths: a copy would take the same way.
    fn stall_limit(&self) -> Option<Duration> {
        let mut limits = self
            .paths
            .iter()
            .filter(|p| p.state == PathState::Active && p.is_usable())
            .map(|p| p.rtt.smoothed() + 4 * p.rtt.var());
        let first = limits.next()?;
        let second = limits.next()?;
        Some(limits.fold(first.min(second), Duration::min))
    }

    /// Updates the watched heads from the streams and reinjects those stalled long enough.
    pub(super) fn watch_stalls(&mut self, now: Timestamp) {
        let found = self.streams.stalled_heads(MAX_REINJECT);
        let heads = &mut self.stall.heads;
        heads.retain(|h| found.iter().any(|(id, r)| *id == h.stream && r.start == h.offset));
        for (id, range) in found {
            if !heads.iter().any(|h| h.stream == id) {
                heads.push(Head { stream: id, offset: range.start, since: now, done: false });
            }
        }
        self.reinject_stalled(now);
    }

    /// When the next watched head is due for reinjection.
    pub(super) fn stall_deadline(&self) -> Option<Timestamp> {
        let limit = self.stall_limit()?;
        self.stall.heads.iter().filter(|h| !h.done).map(|h| h.since + limit).min()
    }

    /// Sends again every watched head stalled for longer than the limit.
    pub(super) fn reinject_stalled(&mut self, now: Timestamp) {
        let Some(limit) = self.stall_limit() else { return };
        for h in self.stall.heads.iter_mut().filter(|h| !h.done && now >= h.since + limit) {
            h.done = true;
            self.streams.reinject(h.stream, MAX_REINJECT);
        }
    }
}
