//! The session's side of the scheduler: what the next data packet would carry
//! (`PacketInfo`), how every path looks (`PathView`, written into one reused allocation), and
//! what the scheduler's `Decision` makes the session do — send, queue a datagram on a path,
//! send ahead (EDPF), or wait.

use super::builder::Transmit;
use super::class_limits;
use super::packing::only;
use super::path_queues::Pinned;
use super::Session;
use crate::path::sent::SentFrame;
use crate::path::{Path, PathId, PathState};
use crate::scheduler::{Decision, PacketInfo, PathView};
use crate::time::Timestamp;
use crate::wire::frame::encode;
use crate::wire::PathStatusKind;
use crate::wire::{DATA_HEADER_LEN, TAG_LEN};
use smallvec::SmallVec;
use std::time::Duration;

impl Session {
    fn has_control(&self) -> bool {
        let c = &self.streams.control;
        c.max_data
            || c.max_streams
            || !c.max_stream_data.is_empty()
            || !self.path_control.status.is_empty()
            || !self.path_control.abandon.is_empty()
            || ((self.policy.due || self.sharing.is_due()) && self.is_established())
            || self.streams.has_pending_resets_or_stops()
    }

    /// What the next data packet would carry, for the scheduler. None when there is nothing.
    /// The packet carries content of `class` only (see `build_data`).
    fn next_packet_info(&self, now: Timestamp) -> Option<PacketInfo> {
        let cfg = &self.config;
        let bytes = self.mtu();
        let backlog_bytes = self.streams.unsent_total() + self.datagrams.queued_bytes();
        let limits = &self.class_limits;
        let rank = |c: u8| limits.rank(now, c, &cfg.class(c));
        let retransmit = self.has_control() || self.streams.has_retransmit();
        let base = PacketInfo {
            class: 0,
            priority: 0,
            deadline: None,
            bytes,
            retransmit,
            datagram: false,
            ahead_packets: 0,
            backlog_bytes,
            retransmit_packets: 0,
        };
        // The stream that sends next is also the one whose unsent bytes EDPF may skip: the
        // first of its class in the queue is the first of the best rank.
        let stream = self.streams.next_sender(rank).and_then(|(id, c)| Some((rank(c)?, c, id)));
        let datagram = self.datagrams.peek(rank).and_then(|d| Some((rank(d.class)?, d)));
        let stream_info = |sp: u8, sc: u8, id: u64| {
            let room = bytes - crate::wire::DATA_OVERHEAD;
            let ahead = self.streams.unsent_packets_of(id, room).saturating_sub(1);
            // What this stream has queued for retransmission goes before its new data.
            let rtx = self.streams.retransmit_bytes_of(id).div_ceil(room.max(1) as u64);
            let retransmit_packets = rtx.min(u64::from(u32::MAX)) as u32;
            PacketInfo { class: sc, priority: sp, ahead_packets: ahead, retransmit_packets, ..base.clone() }
        };
        match (stream, datagram) {
            (Some((sp, sc, id)), Some((dp, _))) if sp < dp => Some(stream_info(sp, sc, id)),
            (_, Some((dp, d))) => Some(PacketInfo {
                class: d.class,
                priority: dp,
                deadline: d.deadline,
                bytes: (d.data.len() + crate::datagram::DATAGRAM_OVERHEAD).min(bytes),
                datagram: true,
                ..base
            }),
            (Some((sp, sc, id)), None) => Some(stream_info(sp, sc, id)),
            // Control frames alone.
            (None, None) => retransmit.then_some(base),
        }
    }

    /// Views of every path for the scheduler, written to `views` (the caller's reused
    /// allocation); a packet of `bytes` may pass a full window by `overdraft` bytes.
    pub(super) fn path_views(
        &mut self,
        now: Timestamp,
        bytes: usize,
        overdraft: u64,
        views: &mut Vec<PathView>,
    ) {
        views.clear();
        // Measured one-way delays (what EDPF places stream data by): from the legs the peer's
        // ACK timestamps give (`path::one_way`), see [`arrival_delay`]; the return leg is that
        // of the path the ACKs come back on.
        let offset = Path::clock_offset(&self.paths, now);
        let backs: SmallVec<[(PathId, Option<u64>); 8]> =
            self.paths.iter().map(|p| (p.id, offset.and_then(|o| p.one_way.back_us(o)))).collect();
        // The plain estimate, for a path whose legs are not measured yet: half the base RTT,
        // less half the carrier's floor when ACKs return on another path, plus what stands in
        // the queue beyond the pipe. The carrier's floor couples it to the route the peer
        // picks for its ACKs (docs/benchmarks.md, "EDPF from one-way delays").
        let returns: SmallVec<[(PathId, Duration); 8]> = self
            .paths
            .iter()
            .filter(|p| p.state == PathState::Active && p.rtt.has_sample())
            .map(|p| (p.id, p.rtt.floor()))
            .collect();
        let admission = self.config.path_admission;
        let engaged = self.secondary_engaged(now);
        let queues = &self.queues;
        let reports = self.config.receiver_reports;
        views.extend(self.paths.iter_mut().filter(|p| p.state != PathState::Closed).map(|p| {
            let rate = p.usable_capacity(now);
            // The base RTT: the minimum without the queue it was found behind, or what it rose
            // to (`path::base_rtt`).
            let min_rtt = p.base_rtt.get(p.rtt.floor());
            // In flight, and stranded (still queued on a slow link that went quiet).
            let outstanding = p.outstanding();
            let route = p.rtt.route().unwrap_or(p.id);
            let back = backs.iter().find(|(id, _)| *id == route).and_then(|(_, b)| *b);
            let forward = offset.and_then(|o| p.one_way.forward_us(o, rate));
            let measured_delay = forward.zip(back).map(|(f, b)| arrival_delay(f, b, outstanding, rate));
            let carrier = returns.iter().find(|(id, _)| *id == route && route != p.id);
            let base = match carrier {
                Some((_, c)) => min_rtt.saturating_sub(*c / 2).max(*c / 2),
                None => min_rtt / 2,
            };
            // What stands in the bottleneck queue: beyond the bandwidth-delay product.
            let standing = (outstanding as f64 - rate * min_rtt.as_secs_f64()).max(0.0);
            // Deadlines and loss fetching read the measured estimate once there is one.
            let one_way_delay =
                measured_delay.unwrap_or(base + Duration::from_secs_f64(standing / rate.max(1.0)));
            PathView {
                id: p.id,
                usable: p.is_usable(),
                // A secondary path is active while the session engages it.
                status: match p.status() {
                    PathStatusKind::Secondary if engaged => PathStatusKind::Active,
                    s => s,
                },
                srtt: p.rtt.smoothed(),
                min_rtt,
                rttvar: p.rtt.var(),
                cwnd: p.cc.window(),
                in_flight: outstanding,
                ready_at: p.ready_at_over(now, bytes as u64, overdraft),
                rate,
                pair: p.usable_pair(now),
                loss_rate: p.scheduler_loss(now, reports),
                mtu: p.mtu,
                admitted: p.admitted || !admission,
                one_way_delay,
                measured_delay,
                queued_bytes: queues.bytes(p.id),
                weight: p.weight,
                // The receiver's one-way view while fresh, else the sender's: the forward samples'
                // deviation, or half the RTT variation before ACK timestamps came.
                jitter: p
                    .peer
                    .fresh_jitter(now)
                    .filter(|_| reports)
                    .or_else(|| p.one_way.forward_variation())
                    .unwrap_or(p.rtt.var() / 2),
            }
        }));
    }

    pub(super) fn poll_data(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut views = self.schedulers.take_views();
        let t = self.poll_data_with(now, buf, &mut views);
        self.schedulers.put_views(views);
        t
    }

    fn poll_data_with(
        &mut self,
        now: Timestamp,
        buf: &mut Vec<u8>,
        views: &mut Vec<PathView>,
    ) -> Option<Transmit> {
        self.next_send = None;
        if let Some(t) = self.poll_fetch(now, buf) {
            return Some(t);
        }
        self.datagrams.expire(now);
        let latency = self.class_limits.latency_active(now);
        let shared = self.shared_bottleneck();
        for p in &mut self.paths {
            p.set_latency_bound(latency);
            p.set_shared_bottleneck(shared);
        }
        loop {
            let Some(info) = self.next_packet_info(now) else {
                // A class held back by its maximum rate is sent again when it may.
                let cfg = self.config.clone();
                self.next_send =
                    self.class_limits.release(now, cfg.classes.iter().map(|(c, t)| (*c, t.clone())));
                // Nothing to send although windows may have room: application-limited (a path
                // with datagrams waiting in its own queue is not).
                let queues = &self.queues;
                for p in self.paths.iter_mut().filter(|p| p.is_usable() && p.window_room() > p.mtu as u64) {
                    if queues.is_empty_for(p.id) {
                        p.delivery.on_app_limited(p.in_flight);
                    }
                }
                return None;
            };
            // A small latency-sensitive datagram passes a window filled by bulk data.
            let urgent = info.datagram && class_limits::latency_sensitive(&self.config.class(info.class));
            let overdraft = if urgent { 2 * self.mtu() as u64 } else { 0 };
            self.path_views(now, info.bytes, overdraft, views);
            let views = &*views;
            let decision = self.schedulers.for_class(info.class).select(now, views, &info);
            let ready = |id| views.iter().any(|v| v.id == id && v.ready(now));
            match decision {
                Decision::Send(id) => {
                    let idx = self.paths.iter().position(|p| p.id == id)?;
                    if ready(id) {
                        return Some(self.build_data(now, idx, info.class, buf, &[]));
                    }
                    if info.datagram {
                        // Committed to a path that cannot send yet: it waits in that path's
                        // queue.
                        if let Some(d) = self.datagrams.pop(info.class, now) {
                            self.pin(id, Pinned::Datagram(d));
                        }
                        continue;
                    }
                    let at = views.iter().find(|v| v.id == id).and_then(|v| v.ready_at);
                    return self.wait(now, views, at);
                }
                Decision::Redundant(ids) => {
                    let idxs: SmallVec<[usize; 4]> =
                        ids.iter().filter_map(|id| self.paths.iter().position(|p| p.id == *id)).collect();
                    let first = *idxs.first()?;
                    if ready(self.paths[first].id) {
                        return Some(self.build_data(now, first, info.class, buf, &idxs[1..]));
                    }
                    if info.datagram {
                        if let Some(d) = self.datagrams.pop(info.class, now) {
                            for &i in &idxs {
                                let id = self.paths[i].id;
                                self.pin(id, Pinned::Datagram(d.clone()));
                            }
                        }
                        continue;
                    }
                    let at = views.iter().filter_map(|v| v.ready_at).min();
                    return self.wait(now, views, at);
                }
                Decision::Ahead(id, skip) => {
                    let idx = self.paths.iter().position(|p| p.id == id)?;
                    if ready(id) {
                        if let Some(t) = self.build_ahead(now, idx, info.class, skip, buf) {
                            return Some(t);
                        }
                    }
                    let at = views.iter().filter(|v| !v.ready(now)).filter_map(|v| v.ready_at).min();
                    return self.wait(now, views, at);
                }
                Decision::Wait(t) => return self.wait(now, views, t),
                Decision::Drop => {
                    if !self.drop_head_datagram(now, info.class) {
                        return None;
                    }
                }
            }
        }
    }

    /// Nothing leaves now: wake at `at`. Paths that could have sent were held back by the
    /// scheduler: the monitor takes their coming delivery-rate samples as lower bounds of
    /// their capacity (congestion control is not told: for it the path is busy as usual).
    fn wait(&mut self, now: Timestamp, views: &[PathView], at: Option<Timestamp>) -> Option<Transmit> {
        self.next_send = at.filter(|t| *t > now);
        // Another path the session could have used instead (a standby one carries nothing).
        let another_path =
            views.iter().filter(|v| v.usable && v.status != PathStatusKind::Standby).count() > 1;
        for v in views.iter().filter(|v| v.ready(now)) {
            if let Some(p) = self.paths.iter_mut().find(|p| p.id == v.id) {
                if p.window_room() > p.mtu as u64 {
                    p.capacity_estimate.hold_back(p.delivery.delivered() + p.in_flight, another_path);
                }
            }
        }
        None
    }

    /// Builds a packet on `idx` carrying new stream data `skip` packets ahead of the next
    /// in-order data (EDPF, `Decision::Ahead`). None when there is no such data.
    fn build_ahead(
        &mut self,
        now: Timestamp,
        idx: usize,
        class: u8,
        skip: u32,
        buf: &mut Vec<u8>,
    ) -> Option<Transmit> {
        let room = self.paths[idx].mtu - TAG_LEN - DATA_HEADER_LEN;
        // Leave room for the frame's length field: acknowledgements follow it.
        let (id, chunk) = self.streams.next_chunk_ahead(room.saturating_sub(8), skip, only(class))?;
        let mut b = self.start(idx, buf);
        encode::stream_header(buf, id, chunk.offset, chunk.fin, Some(chunk.len));
        self.streams.copy_range(id, chunk.offset, chunk.len, buf);
        b.frames.push(SentFrame::Stream { id, offset: chunk.offset, len: chunk.len as u32, fin: chunk.fin });
        b.ack_eliciting = true;
        self.write_acks(now, &mut b, buf, true);
        self.last_data_sent = Some(now);
        let t = self.seal_and_record(now, b, buf, None);
        self.count_class(now, class, t.size);
        Some(t)
    }

    /// `bytes` of `class` left: its rate limits count them.
    pub(super) fn count_class(&mut self, now: Timestamp, class: u8, bytes: usize) {
        let c = self.config.class(class);
        let mtu = self.mtu();
        self.class_limits.on_sent(now, class, &c, bytes, mtu);
    }

    fn drop_head_datagram(&mut self, now: Timestamp, class: u8) -> bool {
        if self.datagrams.pop(class, now).is_some() {
            self.datagrams.count_expired(class);
            true
        } else {
            false
        }
    }
}

/// How long after it leaves a packet reaches the peer on a path, without its own transmission
/// (which [`PathView::arrival`] adds), from the path's measured forward and return legs
/// (`forward_us`, `back_us`: propagation, transmission taken out; `path::one_way`) and the
/// bytes it has `outstanding` at its `rate` in bytes/s:
///
/// ```text
/// max(forward, outstanding / rate − back)
/// ```
///
/// What left the bottleneck within the last forward + back is still unacknowledged, so of
/// the outstanding bytes, all but rate × (forward + back) stand in the queue ahead of the
/// packet; it arrives forward after that queue drains, or forward after it leaves when none
/// stands. The queue and its base cancel: no pipe sized from a round trip comes into it (a
/// round trip holds one transmission and, after a rise, a queue; the estimate it replaces
/// subtracted both).
pub fn arrival_delay(forward_us: u64, back_us: u64, outstanding: u64, rate: f64) -> Duration {
    let rate = rate.max(1.0);
    let queued = outstanding as f64 / rate - back_us as f64 * 1e-6;
    Duration::from_secs_f64(queued.max(forward_us as f64 * 1e-6))
}

#[cfg(test)]
mod tests {
    use super::arrival_delay;
    use std::time::Duration;

    #[test]
    fn arrival_is_the_forward_leg_until_a_queue_stands() {
        // 1 MB/s, 20 ms out, 5 ms back.
        let at = |outstanding| arrival_delay(20_000, 5_000, outstanding, 1e6);
        // Up to 25 kB in flight fills the 25 ms between a packet's leaving the bottleneck and
        // its ACK: no queue, the forward leg.
        assert_eq!(at(0), Duration::from_millis(20));
        assert_eq!(at(25_000), Duration::from_millis(20));
        // 10 kB more stand in the queue: 10 ms more.
        assert_eq!(at(35_000), Duration::from_millis(30));
        // The return leg counts: the same bytes behind a 30 ms return leave 5 ms of queue.
        assert_eq!(arrival_delay(20_000, 30_000, 55_000, 1e6), Duration::from_millis(25));
    }
}
