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
//! Under EDPF, a head is also sent again while the stream can still send, once the receiver
//! holds [`HOLD_BUDGET`] acknowledged bytes behind it (waiting at least 200 ms, see
//! [`Head::wait`]): only its own hole goes, not the holes beyond. Why: with a receive window
//! larger than what a slow path's first window delays, the send buffer never fills. On
//! 20 kbit/s at 150 ms beside 5 Mbit/s at 5 ms the receiver held up to 2,584 packets (3.7 MB)
//! for six seconds behind the slow path's first window, and delivered nothing in between
//! (`braid sim --scheduler edpf --seed 13 --link 20kbit/150ms --link 200kbit/150ms --link
//! 5mbit/5ms`). With this rule it holds 2, for 9,828 bytes sent twice.
//! The budget counts acknowledged bytes, not the distance to the highest one: EDPF sends a
//! slow path's packets ahead of the fast path's (seed 004), so bytes acknowledged far beyond
//! the head are the normal case, and one such packet is all the receiver holds.
//!
//! Only under EDPF, because it plans arrival in order (seed 004): a hold is its plan failing.
//! The other schedulers do not plan the order, and their holds are what seed 000 measures them
//! by. With the rule for every scheduler, RR over 128/64/32/16 kb/s fell from 59 to 52 kb/s
//! (its copies go to the next path in turn, the slow one as often as not), and MinRTT took
//! seed 001's transfer at 30 % loss (Figs. 6–7) from 9.5 s to 9.9–10.8 s.
//!
//! Each head is reinjected once: if the copy is lost too, loss recovery resends it. The check
//! runs with the session's housekeeping (ten times a second) and on its own timer, so a
//! stream sends at most ten held heads again a second.

use super::Session;
use crate::path::PathState;
use crate::scheduler::Kind;
use crate::stream::StreamId;
use crate::time::Timestamp;
use crate::timing::SILENCE_MIN;
use smallvec::SmallVec;
use std::time::Duration;

/// The most bytes sent again for one stalled head: its holes up to here (about 45 packets;
/// a slow path's first window is ten).
const MAX_REINJECT: u64 = 64 * 1024;

/// The acknowledged bytes the receiver may hold behind a head before the head is sent again
/// although the stream can still send: about eleven full packets, the reorder issue 14's EDPF
/// property allows (10 packets). Less than this is what EDPF's schedule leaves in steady state.
const HOLD_BUDGET: u64 = 16 * 1024;

/// One stalled head being watched.
#[derive(Debug, Clone)]
struct Head {
    stream: u64,
    offset: u64,
    /// How many bytes from the head on to send again: the holes up to [`MAX_REINJECT`] for a
    /// stream that can send nothing more, the head's own hole for a held one.
    len: u64,
    /// Held only: the stream can still send (see [`Head::wait`]).
    held: bool,
    since: Timestamp,
    done: bool,
}

impl Head {
    /// How long this head waits: the stall limit, and for a held head at least
    /// [`SILENCE_MIN`]. A hole behind a path that went silent is the failure detector's: it
    /// suspects the path after three of its smoothed RTTs, never before [`SILENCE_MIN`], and
    /// resends all it carried. With the stall limit alone, `braid demo` took 0.36 s on average
    /// to recover from the cut of its fastest link (12 runs) against 0.25 s without the rule;
    /// with this wait 0.25 against 0.3 (4 runs each, alternated).
    fn wait(&self, limit: Duration) -> Duration {
        if self.held {
            limit.max(SILENCE_MIN)
        } else {
            limit
        }
    }
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

    /// Updates the watched heads from the streams (stalled or held) and reinjects those
    /// waiting long enough.
    pub(super) fn watch_stalls(&mut self, now: Timestamp) {
        let mut found: SmallVec<[(u64, u64, u64, bool); 4]> = self
            .streams
            .stalled_heads(MAX_REINJECT)
            .into_iter()
            .map(|(id, r)| (id, r.start, MAX_REINJECT, false))
            .collect();
        for (id, r) in self.streams.held_heads(HOLD_BUDGET, MAX_REINJECT) {
            let class = self.streams.class(StreamId(id)).unwrap_or_default();
            if self.schedulers.kind_of(class) == Kind::Edpf && !found.iter().any(|f| f.0 == id) {
                found.push((id, r.start, r.end - r.start, true));
            }
        }
        let heads = &mut self.stall.heads;
        heads.retain(|h| found.iter().any(|&(id, offset, ..)| id == h.stream && offset == h.offset));
        for (id, offset, len, held) in found {
            match heads.iter_mut().find(|h| h.stream == id) {
                // A held head whose stream then runs out of room is stalled too: its wider
                // reinjection goes (a held head's copy had marked it done).
                Some(h) if len > h.len => {
                    h.len = len;
                    h.held = false;
                    h.done = false;
                }
                Some(_) => {}
                None => heads.push(Head { stream: id, offset, len, held, since: now, done: false }),
            }
        }
        self.reinject_stalled(now);
    }

    /// When the next watched head is due for reinjection.
    pub(super) fn stall_deadline(&self) -> Option<Timestamp> {
        let limit = self.stall_limit()?;
        self.stall.heads.iter().filter(|h| !h.done).map(|h| h.since + h.wait(limit)).min()
    }

    /// Sends again every watched head stalled for longer than the limit.
    pub(super) fn reinject_stalled(&mut self, now: Timestamp) {
        let Some(limit) = self.stall_limit() else { return };
        for h in self.stall.heads.iter_mut().filter(|h| !h.done && now >= h.since + h.wait(limit)) {
            h.done = true;
            self.streams.reinject(h.stream, h.offset, h.len);
        }
    }
}
