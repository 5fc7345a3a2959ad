//! Loss fetching (seed 003 §3.3 "Mirroring", §4 Loss Hider and Fast Fetcher, §6.5 Fig. 7):
//! stream bytes lost on the primary path are fetched over the secondary path.
//!
//! Roles. The primary is the active path of the highest capacity ("the one with higher
//! capacity acts as the primary interface", §7); a backup path is never primary. The secondary
//! is, among the other active paths, the one that delivers a single packet soonest when idle:
//! half its minimum RTT plus one packet time at its capacity. The paper's Fast Fetcher is there
//! to recover lost segments fast; with two paths this is simply the other path, and with more
//! (§7: WiMAX, not 3G or Bluetooth, fetches) it prefers capacity at equal delay while still
//! counting delay. A backup path fetches only when no other path can: in the paper the 3G
//! interface carries fetches (and ACKs), not bulk data, which in braid is a backup path with
//! loss fetching on; its load is the primary's losses, at most one packet per guard time.
//!
//! Rule. A STREAM frame of a packet declared lost on the primary is not put back in its
//! stream's retransmission queue (from where the scheduler would send it, most likely on the
//! primary again, behind a window just cut by that loss); it goes to the fetch queue, and the
//! next packet built leaves on the secondary with it, ahead of any new data, when it arrives
//! sooner there than on the primary (EDPF's estimate, seed 004) and the secondary can send now.
//! Fetches are spaced at least one packet time of the secondary apart — the paper's guard
//! time, "at least one segment size divided by data rate", which makes "space for it to
//! squeeze the narrow 3G link" — so they do not queue behind each other, nor behind the
//! secondary's own data (its bottleneck queue must drain within a guard time). A fetch the
//! secondary cannot send at once (window full, queue, pacer, the previous fetch less than a
//! guard time ago) goes back to its stream's retransmission queue at once: the scheduler sends
//! it as without fetching. (Holding such fetches for the secondary for up to a guard time made
//! the mean hole-fill time 36 % longer with BBR at 200 ms RTT, 378 → 514 ms: the bytes waited
//! while the primary could have resent them.)
//!
//! What braid does not copy: the paper hides the loss from the TCP sender and fetches over a
//! second, mirrored TCP connection; braid's frames can be resent on any path of the session, so
//! the fetch is just the retransmission on the secondary, and the primary's controller still
//! sees the loss (`loss_discrimination` is the separate option that keeps its window).

use super::builder::Transmit;
use super::Session;
use crate::path::sent::SentFrame;
use crate::path::PathState;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use crate::wire::{PathStatusKind, DATA_HEADER_LEN, TAG_LEN};
use std::collections::VecDeque;
use std::time::Duration;

/// Most fetches waiting at once (they wait only until the next packet is built); more are
/// resent as without fetching.
const MAX_QUEUED: usize = 256;

/// Stream bytes lost on the primary, waiting for the secondary.
#[derive(Debug, Clone, Copy)]
struct Fetch {
    stream: u64,
    offset: u64,
    end: u64,
}

/// The fetch queue and its pacing.
#[derive(Debug, Default)]
pub(super) struct LossFetch {
    queue: VecDeque<Fetch>,
    /// The next fetch leaves no earlier than this (the last one plus a guard time).
    next_at: Option<Timestamp>,
    /// Packets sent as fetches.
    pub(super) fetched_packets: u64,
    /// Fetches handed back to the scheduler.
    pub(super) fallbacks: u64,
}

/// Counters of loss fetching, for reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FetchStats {
    /// Packets sent on the secondary as fetches of primary losses.
    pub fetched_packets: u64,
    /// Lost frames the secondary could not take within the guard time (resent as usual).
    pub fallbacks: u64,
}

impl Session {
    /// Indexes of the primary and the secondary path (see the module docs); None with fewer
    /// than two candidates.
    fn fetch_roles(&self, now: Timestamp) -> Option<(usize, usize)> {
        let open = || {
            self.paths
                .iter()
                .enumerate()
                .filter(|(_, p)| p.state == PathState::Active && p.status() != PathStatusKind::Standby)
        };
        let backup = |p: &crate::path::Path| p.status() == PathStatusKind::Backup;
        let (primary, _) = open().filter(|(_, p)| !backup(p)).max_by(|(i, a), (j, b)| {
            a.usable_capacity(now).total_cmp(&b.usable_capacity(now)).then(j.cmp(i))
        })?;
        let one_packet = |p: &crate::path::Path| {
            p.rtt.min() / 2 + Duration::from_secs_f64(p.mtu as f64 / p.usable_capacity(now))
        };
        let (secondary, _) =
            open().filter(|(i, _)| *i != primary).min_by_key(|(i, p)| (backup(p), one_packet(p), *i))?;
        Some((primary, secondary))
    }

    /// When path `idx` can send a fetch of `bytes`: its pacer and window allow, its bottleneck
    /// queue (what it has in flight beyond its bandwidth-delay product) drains within one
    /// packet time, and the previous fetch is a guard time back. None when its window is
    /// full or its queue too long (an ACK may change either).
    fn fetch_slot(&mut self, idx: usize, now: Timestamp, bytes: u64) -> Option<Timestamp> {
        let p = &mut self.paths[idx];
        let pipe = p.usable_capacity(now) * p.rtt.min().as_secs_f64();
        if p.in_flight as f64 > pipe + p.mtu as f64 {
            return None;
        }
        let at = p.ready_at_over(now, bytes, 0)?;
        Some(self.fetch.next_at.map_or(at, |n| at.max(n)))
    }

    /// The guard time of path `idx`: one packet time at its capacity.
    fn guard_time(&self, idx: usize, now: Timestamp) -> Duration {
        let p = &self.paths[idx];
        Duration::from_secs_f64(p.mtu as f64 / p.usable_capacity(now))
    }

    /// True when a fetch leaving path `sec` at `at` arrives before the same packet would on
    /// the primary `prim` (EDPF's estimate, seed 004: when the primary's window opens, behind
    /// its bottleneck queue, plus its one-way delay). "Fast fetching" is only fast when the
    /// secondary is: over a 60 ms 3G path a loss on a 25 ms Wi-Fi path is resent sooner on the
    /// Wi-Fi path itself (docs/experiments.md, seed 003 Fig. 7).
    fn fetch_is_faster(
        &mut self,
        now: Timestamp,
        prim: usize,
        sec: usize,
        at: Timestamp,
        bytes: u64,
    ) -> bool {
        let mut views = self.schedulers.take_views();
        self.path_views(now, bytes as usize, 0, &mut views);
        let view = |idx: usize| views.iter().find(|v| v.id == self.paths[idx].id);
        let faster = match (view(prim), view(sec)) {
            (Some(p), Some(s)) => {
                at.max(now) + s.one_way_delay + s.serialization(bytes) < p.arrival(now, bytes)
            }
            _ => false,
        };
        self.schedulers.put_views(views);
        faster
    }

    /// Puts the frames of a packet lost on path `idx` back in line: with loss fetching, the
    /// STREAM frames of a primary's loss go to the fetch queue, the rest as usual.
    pub(super) fn requeue_lost(&mut self, now: Timestamp, idx: usize, frames: &[SentFrame]) {
        let fetching =
            self.config.loss_fetching && self.fetch_roles(now).is_some_and(|(primary, _)| primary == idx);
        if !fetching {
            return self.requeue_frames(frames);
        }
        let rest: crate::path::sent::FrameRecords = frames
            .iter()
            .filter(|f| match **f {
                // A FIN is left to the scheduler (it also settles the stream's end).
                SentFrame::Stream { id, offset, len, fin: false }
                    if len > 0 && self.fetch.queue.len() < MAX_QUEUED =>
                {
                    let end = offset + u64::from(len);
                    self.fetch.queue.push_back(Fetch { stream: id, offset, end });
                    false
                }
                _ => true,
            })
            .cloned()
            .collect();
        self.requeue_frames(&rest);
    }

    /// Sends the next fetch on the secondary when it may leave now and arrives sooner there;
    /// fetches that cannot go back to their streams' retransmission queues at once.
    pub(super) fn poll_fetch(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.fetch.queue.is_empty() {
            return None;
        }
        let Some((prim, sec)) = self.fetch_roles(now) else {
            self.fetch_fall_back_all();
            return None;
        };
        let guard = self.guard_time(sec, now);
        while let Some(f) = self.fetch.queue.front().copied() {
            let Some(range) = self.streams.first_unacked(f.stream, f.offset, f.end) else {
                self.fetch.queue.pop_front();
                continue;
            };
            let bytes = self.paths[sec].mtu as u64;
            let slot = self.fetch_slot(sec, now, bytes).filter(|t| *t <= now);
            if slot.is_some_and(|t| self.fetch_is_faster(now, prim, sec, t, bytes)) {
                return Some(self.send_fetch(now, sec, f, range, guard, buf));
            }
            self.fetch.queue.pop_front();
            self.fetch.fallbacks += 1;
            self.streams.on_frame_lost(f.stream, range.start, f.end - range.start, false);
        }
        None
    }

    /// One packet on `sec` with ACKs and as much of `range` (of fetch `f`) as fits.
    fn send_fetch(
        &mut self,
        now: Timestamp,
        sec: usize,
        f: Fetch,
        range: std::ops::Range<u64>,
        guard: Duration,
        buf: &mut Vec<u8>,
    ) -> Transmit {
        let room = self.paths[sec].mtu - TAG_LEN - DATA_HEADER_LEN;
        // As large as the lost frame was (it may have filled a packet of the same room, its
        // length implicit): ACKs ride along only when room is left.
        let bare = encode::stream_header_len(f.stream, range.start, None);
        let len = ((range.end - range.start) as usize).min(room.saturating_sub(bare));
        let with_len = encode::stream_header_len(f.stream, range.start, Some(len)) + len <= room;
        let mut b = self.start(sec, buf);
        encode::stream_header(buf, f.stream, range.start, false, with_len.then_some(len));
        self.streams.copy_range(f.stream, range.start, len, buf);
        b.frames.push(SentFrame::Stream { id: f.stream, offset: range.start, len: len as u32, fin: false });
        b.ack_eliciting = true;
        if with_len {
            self.write_acks(now, &mut b, buf, true);
        }
        let sent_to = range.start + len as u64;
        if sent_to >= f.end {
            self.fetch.queue.pop_front();
        } else if let Some(head) = self.fetch.queue.front_mut() {
            head.offset = sent_to;
        }
        self.streams.retransmitted_bytes += len as u64;
        self.paths[sec].stats.retransmitted_bytes += len as u64;
        self.fetch.fetched_packets += 1;
        self.fetch.next_at = Some(now + guard);
        self.last_data_sent = Some(now);
        self.seal_and_record(now, b, buf, None)
    }

    /// No secondary (any more): every waiting fetch goes back to its stream.
    fn fetch_fall_back_all(&mut self) {
        while let Some(f) = self.fetch.queue.pop_front() {
            self.fetch.fallbacks += 1;
            self.streams.on_frame_lost(f.stream, f.offset, f.end - f.offset, false);
        }
    }

    /// Loss fetching counters.
    pub fn fetch_stats(&self) -> FetchStats {
        FetchStats { fetched_packets: self.fetch.fetched_packets, fallbacks: self.fetch.fallbacks }
    }
}
