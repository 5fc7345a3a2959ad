//! Selective redundancy: copies of what is small and critical, not of everything (seed 003 §5:
//! the command packets and the base-layer frames are mirrored over both interfaces, "duplicating
//! essential portions"; seed 000: the base layer on the most reliable channels). The
//! `redundant` scheduler copies every packet of a session or class; here a packet the session's
//! scheduler placed gets one copy on a second path only when it carries
//!
//! - (a) a control frame whose loss stalls the peer, or leaves it acting on stale state, until
//!   a PTO: MAX_DATA, MAX_STREAM_DATA, MAX_STREAMS, STREAM_OPEN, RESET_STREAM, STOP_SENDING,
//!   PATH_STATUS, PATH_ABANDON, POLICY, SHARING ([`Redundancy::Critical`]; CLOSE already
//!   leaves on every path, see `poll_close`);
//! - (b) stream bytes below [`SessionConfig::redundancy_first_bytes`]: a flow's first packets —
//!   its request, its TLS hello — whose loss costs a short flow a whole timeout
//!   ([`Redundancy::Critical`]);
//! - (c) a datagram of a class marked [`TrafficClass::duplicate`] (a base layer), in either
//!   mode; other classes are not copied.
//!
//! The copy waits in the queue of the usable path with the lowest smoothed RTT other than the
//! original's (so a short flow's first packets travel on the two fastest paths when the
//! scheduler picks the fastest), unless that path already has 100 ms of copies queued. The
//! receiver keeps the first copy: stream bytes by offset, datagrams by class and sequence
//! number, control frames are idempotent (credits only grow, a stream opens once, status,
//! policy and sharing carry sequence numbers).
//!
//! Budget: copies spend credit from a bucket filled at [`SessionConfig::redundancy_share`] of
//! the paths' summed usable capacity and holding at most [`BURST`] bytes; a packet whose copy
//! finds too little credit goes out alone. Over any interval T copies therefore use at most
//! share × capacity × T + BURST bytes.
//!
//! [`Redundancy::Critical`]: crate::config::Redundancy::Critical
//! [`SessionConfig::redundancy_first_bytes`]: crate::config::SessionConfig::redundancy_first_bytes
//! [`SessionConfig::redundancy_share`]: crate::config::SessionConfig::redundancy_share
//! [`TrafficClass::duplicate`]: crate::config::TrafficClass::duplicate

use super::path_queues::Pinned;
use super::Session;
use crate::config::Redundancy;
use crate::path::sent::{FrameRecords, SentFrame};
use crate::path::PathState;
use crate::scheduler::redundant::COPY_BACKLOG;
use crate::time::Timestamp;
use crate::wire::{PathStatusKind, DATA_OVERHEAD};

/// Most credit the bucket holds, bytes: about ten full packets, enough for the first packets
/// of a few flows opened at once.
pub const BURST: f64 = 16_000.0;

/// The copy budget and what it has paid for.
#[derive(Debug, Default)]
pub(super) struct CopyBudget {
    credit: f64,
    last: Option<Timestamp>,
    /// Copies made.
    pub(super) copies: u64,
    /// Bytes of those copies on the wire.
    pub(super) bytes: u64,
}

impl CopyBudget {
    /// Takes `bytes` of credit, refilled at `rate` bytes/s since the last call; false (nothing
    /// taken) when there is not enough.
    pub(super) fn take(&mut self, now: Timestamp, rate: f64, bytes: u64) -> bool {
        self.credit = match self.last {
            None => BURST,
            Some(t) if now > t => (self.credit + rate.max(0.0) * (now - t).as_secs_f64()).min(BURST),
            Some(_) => self.credit,
        };
        self.last = Some(now);
        if self.credit < bytes as f64 {
            return false;
        }
        self.credit -= bytes as f64;
        self.copies += 1;
        self.bytes += bytes;
        true
    }
}

impl Session {
    /// True when a packet carrying `frames` deserves a copy on a second path.
    pub(super) fn is_critical(&self, frames: &FrameRecords) -> bool {
        let critical = self.config.redundancy == Redundancy::Critical;
        let first = self.config.redundancy_first_bytes;
        frames.iter().any(|f| match *f {
            SentFrame::MaxData
            | SentFrame::MaxStreamData { .. }
            | SentFrame::MaxStreams
            | SentFrame::StreamOpen { .. }
            | SentFrame::ResetStream { .. }
            | SentFrame::StopSending { .. }
            | SentFrame::PathStatus { .. }
            | SentFrame::PathAbandon { .. }
            | SentFrame::Policy { .. }
            | SentFrame::Sharing { .. } => critical,
            SentFrame::Stream { offset, .. } => critical && offset < first,
            // A class the `redundant` scheduler serves is copied already.
            SentFrame::Datagram { class } => {
                let kind = self.schedulers.kind_of(class);
                self.config.class(class).duplicate && !matches!(kind, crate::scheduler::Kind::Redundant(_))
            }
            SentFrame::Ack { .. } => false,
        })
    }

    /// Queues a copy of a packet just sent on path `idx` (its plaintext frames `payload`) on
    /// the fastest other usable path, if the budget allows. `expires`: when a copy of
    /// datagrams only becomes useless.
    pub(super) fn copy_critical(
        &mut self,
        now: Timestamp,
        idx: usize,
        payload: Vec<u8>,
        frames: FrameRecords,
        expires: Option<Timestamp>,
    ) {
        let wire = (payload.len() + DATA_OVERHEAD) as u64;
        let Some(to) = self
            .paths
            .iter()
            .enumerate()
            .filter(|(i, p)| {
                *i != idx && p.state == PathState::Active && p.status() == PathStatusKind::Active
            })
            .filter(|(_, p)| p.mtu as u64 >= wire)
            .filter(|(_, p)| {
                self.queues.bytes(p.id) as f64 <= p.usable_capacity(now) * COPY_BACKLOG.as_secs_f64()
            })
            .min_by_key(|(_, p)| (p.rtt.smoothed(), p.id))
            .map(|(_, p)| p.id)
        else {
            return;
        };
        let capacity: f64 = self.paths.iter().filter(|p| p.is_usable()).map(|p| p.usable_capacity(now)).sum();
        let rate = self.config.redundancy_share * capacity;
        if !self.copy_budget.take(now, rate, wire) {
            return;
        }
        self.pin(to, Pinned::Copy { payload, frames, expires });
    }

    /// Queues a copy of a packet's plaintext frames `payload` on each path in `copies` (the
    /// `redundant` scheduler's choice); the last takes the original, the others a clone.
    pub(super) fn copy_to(
        &mut self,
        copies: &[usize],
        payload: Vec<u8>,
        frames: FrameRecords,
        expires: Option<Timestamp>,
    ) {
        let Some((&last, others)) = copies.split_last() else { return };
        for &c in others {
            let id = self.paths[c].id;
            self.pin(id, Pinned::Copy { payload: payload.clone(), frames: frames.clone(), expires });
        }
        let id = self.paths[last].id;
        self.pin(id, Pinned::Copy { payload, frames, expires });
    }

    /// Copies made by selective redundancy and their bytes on the wire.
    pub fn critical_copies(&self) -> (u64, u64) {
        (self.copy_budget.copies, self.copy_budget.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn budget_starts_with_a_burst_and_refills_at_its_rate() {
        let mut b = CopyBudget::default();
        let t0 = Timestamp::from_duration(Duration::from_secs(1));
        // 100 kB/s: the burst, then 1 kB per 10 ms.
        assert!(b.take(t0, 100_000.0, 15_000));
        assert!(!b.take(t0, 100_000.0, 1_500), "1000 bytes of credit left");
        let t1 = t0 + Duration::from_millis(10);
        assert!(b.take(t1, 100_000.0, 1_500));
        assert_eq!((b.copies, b.bytes), (2, 16_500));
        // Credit never exceeds the burst, however long the pause.
        let t2 = t1 + Duration::from_secs(60);
        assert!(b.take(t2, 100_000.0, BURST as u64));
        assert!(!b.take(t2, 100_000.0, 1));
    }
}
