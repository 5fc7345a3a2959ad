//! Datagrams out. `poll_transmit` decides, in a fixed order, what the next packet is:
//!
//! 1. the handshake (client: message 1 and its retransmissions; server: the answer);
//! 2. path control: PATH_RESPONSE, PATH_CHALLENGE (padded to 1200 bytes), probes after a PTO,
//!    packet-pair probes (two back-to-back PING + PADDING packets, see `monitor`);
//! 3. per-path queues: datagrams a scheduler committed to a path, redundant copies;
//! 4. acknowledgements that are due, on the path chosen by the ACK policy;
//! 5. data — control frames, retransmissions, stream bytes, datagrams by class priority — on
//!    the path the scheduler of the content's traffic class picks;
//! 6. keepalive PINGs on idle paths.

use super::ack_offload;
use super::builder::Builder;
use super::class_limits;
use super::path_queues::Pinned;
use super::timing::LIVENESS_MIN;
use super::{Session, State, Transmit};
use crate::config::AckPath;
use crate::datagram::OutgoingDatagram;
use crate::path::sent::SentFrame;
use crate::path::{PathId, PathState};
use crate::scheduler::{Decision, PacketInfo, PathView};
use crate::time::Timestamp;
use crate::wire::frame::encode;
use crate::wire::PathStatusKind;
use crate::wire::{DATA_HEADER_LEN, MIN_DATAGRAM, MIN_PROBE_BUDGET, TAG_LEN};
use smallvec::SmallVec;
use std::time::Duration;

/// Room below which a packet is considered full.
const MIN_FRAME_ROOM: usize = 24;

/// A class ranking that admits `class` alone: what fills a packet its scheduler placed. (With
/// one class admitted its priority does not matter.)
fn only(class: u8) -> impl Fn(u8) -> Option<u8> + Copy {
    move |c| (c == class).then_some(0)
}

/// How often a path that only carries ACKs sends an ack-eliciting one.
fn liveness(path: &crate::path::Path) -> Duration {
    path.rtt.smoothed().max(LIVENESS_MIN)
}

/// Capacity a path needs, per packet per second that another path receives, to carry that
/// path's ACKs: an ACK-only packet of about 80 bytes on the wire per two packets received, at
/// most a quarter of the carrier. A 20 kbit/s path that carried the ACKs of a 100 Mbit/s one
/// queued them for seconds, and the fast path's sender crawled at 1.3 Mbit/s (simulator).
const ACK_CARRIER_BYTES_PER_PACKET: f64 = 160.0;

impl Session {
    /// The next datagram to send, written to `buf`; None when nothing is to be sent now
    /// (`poll_timeout` says when to ask again).
    pub fn poll_transmit(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        match &mut self.state {
            State::Closed => return None,
            State::Handshaking { initiator, next_send, tries, .. } => {
                if now < *next_send {
                    return None;
                }
                *tries += 1;
                *next_send = now + super::timing::handshake_backoff(*tries);
                buf.extend_from_slice(&initiator.init_packet);
                let p = &self.paths[0];
                return Some(Transmit { path: 0, destination: p.remote, source: p.local, size: buf.len() });
            }
            State::Closing { .. } => return self.poll_close(now, buf),
            State::Established => {}
        }
        if self.handshake_resp_due {
            self.handshake_resp_due = false;
            if let (Some(resp), Some(p)) = (&self.handshake_resp, self.path(0)) {
                buf.extend_from_slice(resp);
                return Some(Transmit { path: 0, destination: p.remote, source: p.local, size: buf.len() });
            }
        }
        self.housekeeping(now);
        self.poll_path_control(now, buf)
            .or_else(|| self.poll_pinned(now, buf))
            .or_else(|| self.poll_acks(now, buf))
            .or_else(|| self.poll_data(now, buf))
            .or_else(|| self.poll_keepalive(now, buf))
    }

    /// Starts a packet on path `idx` (see [`Builder::start`]).
    pub(super) fn start(&mut self, idx: usize, buf: &mut Vec<u8>) -> Builder {
        Builder::start(idx, &mut self.paths[idx], self.remote_id, buf)
    }

    /// Seals `b` and records it on its path (see [`Builder::seal_and_record`]).
    pub(super) fn seal_and_record(
        &mut self,
        now: Timestamp,
        b: Builder,
        buf: &mut Vec<u8>,
        destination: Option<std::net::SocketAddr>,
    ) -> Transmit {
        let grace = self.key_grace();
        let keys = self.keys.as_mut().expect("established sessions have keys");
        self.stats.packets_sent += 1;
        let path = &mut self.paths[b.idx];
        b.seal_and_record(now, keys, grace, path, buf, destination)
    }

    /// Appends ACK frames for the paths whose ACKs this packet's path carries (itself, and
    /// those it is the carrier of) that have something worth acknowledging.
    pub(super) fn write_acks(
        &mut self,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        all_pending: bool,
    ) {
        for i in 0..self.paths.len() {
            // A path's ACK rides on itself or on its carrier, never on a third path: every RTT
            // sample of a path then sees one return route, and a slow path does not carry the
            // ranges of a fast one (EDPF's in-flight bound and the monitor read the minimum RTT).
            if !self.paths[i].received.ack_wanted(now, all_pending) {
                continue;
            }
            if i != b.idx && self.offload_carrier(i, now) != Some(b.idx) {
                continue;
            }
            if !self.write_ack_of(i, now, b, buf, all_pending, false) {
                return;
            }
        }
    }

    /// Writes path `i`'s ACK when it is due (or, with `all_pending`, owed at all); false when
    /// the packet has no room left. With `copy` the ACK stays due (it goes out again, on its
    /// usual carrier).
    fn write_ack_of(
        &mut self,
        i: usize,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        all_pending: bool,
        copy: bool,
    ) -> bool {
        let room = b.room(buf);
        if room < 32 {
            return false;
        }
        if !self.paths[i].received.ack_wanted(now, all_pending) {
            return true;
        }
        let id = self.paths[i].id;
        // The ranges go from the receive record straight into the packet (no allocation).
        let Some(largest) = self.paths[i].received.ack_ranges().next().map(|r| r.end - 1) else {
            if !copy {
                self.paths[i].received.on_ack_sent();
            }
            return true;
        };
        let max_ranges = ((room - 24) / 16).max(1);
        // A completed packet pair: first an ACK as it stood when the first probe arrived,
        // with that probe's own delay (see `Received::on_probe`), then the current one.
        if let Some((pn, at)) = (!copy).then(|| self.paths[i].received.take_pair_report()).flatten() {
            let older = self.paths[i]
                .received
                .ack_ranges()
                .filter(move |r| r.start <= pn)
                .map(move |r| r.start..r.end.min(pn + 1));
            if older.clone().next().is_some() && room >= 64 {
                let max = ((room - 48) / 32).max(1);
                encode::ack(buf, id, (now - at).as_micros() as u64, older.take(max));
            }
        }
        if !copy {
            self.write_report_of(i, now, b, buf);
        }
        let room = b.room(buf);
        let max_ranges = max_ranges.min(((room.saturating_sub(24)) / 16).max(1));
        let received = &mut self.paths[i].received;
        encode::ack(buf, id, received.ack_delay(now), received.ack_ranges().take(max_ranges));
        if !copy {
            received.on_ack_sent();
        }
        b.frames.push(SentFrame::Ack { path: id, largest });
        true
    }

    /// PATH_RESPONSE / PATH_CHALLENGE / PTO probes, each on its own path.
    fn poll_path_control(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        for idx in 0..self.paths.len() {
            let p = &self.paths[idx];
            let server = self.side == super::Side::Server;
            let budget = p.amplification_budget(server);
            if budget < MIN_PROBE_BUDGET {
                continue;
            }
            let challenge_budget = p.challenge_budget(server);
            let challenge_due = challenge_budget >= MIN_PROBE_BUDGET
                && p.challenge
                    .is_some_and(|c| c.sent.is_none_or(|s| now >= s + self.challenge_timeout(idx, c.tries)));
            if !p.responses.is_empty() || challenge_due {
                let budget = if challenge_due { challenge_budget } else { budget };
                return Some(self.send_validation(now, idx, buf, challenge_due, budget));
            }
            if p.probes_due > 0 && matches!(p.state, PathState::Active | PathState::Suspect) {
                self.paths[idx].probes_due -= 1;
                let mut b = self.start(idx, buf);
                self.write_acks(now, &mut b, buf, true);
                encode::ping(buf);
                b.ack_eliciting = true;
                return Some(self.seal_and_record(now, b, buf, None));
            }
            if p.monitor.pair_due > 0 && p.state == PathState::Active {
                // Packet pair (seed 001 §4.1): two full-size probes back to back, past the pacer.
                let mut b = self.start(idx, buf);
                encode::ping(buf);
                let target = b.limit.min(budget.saturating_sub(TAG_LEN));
                if buf.len() < target {
                    encode::padding(buf, target - buf.len());
                }
                b.ack_eliciting = true;
                let pn = b.pn;
                let t = self.seal_and_record(now, b, buf, None);
                self.paths[idx].monitor.on_pair_sent(now, pn, t.size as u64);
                return Some(t);
            }
            let active = p.state == PathState::Active;
            if let Some(size) = self.paths[idx].pmtu.probe_due(now).filter(|s| *s <= budget && active) {
                // Path MTU search (see `path::mtu`): a PING padded to the size under test.
                let mut b = self.start(idx, buf);
                b.limit = size - TAG_LEN;
                b.mtu_probe = true;
                encode::ping(buf);
                encode::padding(buf, b.limit - buf.len());
                b.ack_eliciting = true;
                self.paths[idx].pmtu.on_probe_sent();
                return Some(self.seal_and_record(now, b, buf, None));
            }
        }
        None
    }

    fn send_validation(
        &mut self,
        now: Timestamp,
        idx: usize,
        buf: &mut Vec<u8>,
        challenge_due: bool,
        budget: usize,
    ) -> Transmit {
        let mut b = self.start(idx, buf);
        let path = &mut self.paths[idx];
        let mut destination = None;
        for (token, from) in path.responses.drain(..) {
            encode::path_response(buf, token);
            destination = Some(from);
        }
        if challenge_due {
            if let Some(c) = path.challenge.as_mut() {
                // A response goes where its challenge came from; a challenge to the address
                // under validation. Both usually coincide.
                if destination.is_none_or(|d| d == c.remote) {
                    encode::path_challenge(buf, c.token);
                    c.sent = Some(now);
                    c.tries += 1;
                    destination = Some(c.remote);
                }
            }
        }
        b.ack_eliciting = true;
        // Pad to the minimum datagram size: the path must carry full-size packets.
        let target = (MIN_DATAGRAM - TAG_LEN).min(budget.saturating_sub(TAG_LEN)).min(b.limit);
        if buf.len() < target {
            encode::padding(buf, target - buf.len());
        }
        let t = self.seal_and_record(now, b, buf, destination);
        if let Some(c) = self.paths[idx].challenge.as_mut().filter(|c| c.remote == t.destination) {
            c.bytes_out += t.size as u64;
        }
        t
    }

    pub(super) fn challenge_timeout(&self, idx: usize, tries: u32) -> Duration {
        let base = self.paths[idx].rtt.pto_base(self.config.max_ack_delay).max(Duration::from_millis(200));
        base * (1 << tries.saturating_sub(1).min(6))
    }

    /// The path that carries `for_idx`'s due ACK, and whether it carries that ACK alone.
    fn ack_carrier(&self, for_idx: usize, now: Timestamp) -> (usize, bool) {
        let own = &self.paths[for_idx];
        if self.config.ack_path == AckPath::SamePath && own.state != PathState::Closed {
            return (for_idx, false);
        }
        // A path whose own ACKs ride elsewhere still gets one on itself every liveness
        // interval: were the carrier to die, its ACKs would stop too and the path
        // would be suspected in sympathy (seen in the lab when the fast path was cut). That
        // packet carries a copy of this path's ACK only, which stays due for the fast carrier:
        // RTT samples and ACK clocking keep to the fast path while it lives (sending the ACK
        // itself on the slow path raised EDPF's reorder maximum from 6 to 17 packets).
        if own.state == PathState::Active && own.last_sent.is_none_or(|t| now - t >= liveness(own)) {
            return (for_idx, true);
        }
        (self.offload_carrier(for_idx, now).unwrap_or(for_idx), false)
    }

    /// Offloading-ACK (seed 003): the path that carries `for_idx`'s ACKs — the fastest path
    /// that is known to be answering, among those that carry data (a backup or metered path
    /// carries ACKs only when no other can) and whose capacity carries the ACK load with room
    /// to spare ([`ACK_CARRIER_BYTES_PER_PACKET`]); when none has, the fastest answering path
    /// all the same (never a suspect path's own dead link). None with no active path.
    fn offload_carrier(&self, for_idx: usize, now: Timestamp) -> Option<usize> {
        let open = self.paths[for_idx].state != PathState::Closed;
        if self.config.ack_path == AckPath::Secondary && open {
            // Seed 003's own rule (see `ack_offload`); a dropped ACK is never written.
            return match self.ack_route(for_idx, now) {
                ack_offload::Route::Secondary(j) => Some(j),
                _ => Some(for_idx),
            };
        }
        if self.config.ack_path == AckPath::SamePath && open {
            return Some(for_idx);
        }
        let need = self.paths[for_idx].received.packet_rate(now) * ACK_CARRIER_BYTES_PER_PACKET;
        let rank = |(_, p): &(usize, &crate::path::Path)| {
            (p.status() != PathStatusKind::Active, p.rtt.smoothed(), p.id)
        };
        let active = || self.paths.iter().enumerate().filter(|(_, p)| p.state == PathState::Active);
        let bears = |(i, p): &(usize, &crate::path::Path)| *i == for_idx || p.usable_capacity(now) >= need;
        active().filter(bears).min_by_key(rank).or_else(|| active().min_by_key(rank)).map(|(i, _)| i)
    }

    fn poll_acks(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.config.ack_path == AckPath::Secondary {
            self.drop_replaceable_acks(now);
        }
        let due = self.paths.iter().position(|p| p.received.ack_due(now))?;
        let (idx, alone) = self.ack_carrier(due, now);
        let mut b = self.start(idx, buf);
        if alone {
            self.write_ack_of(due, now, &mut b, buf, true, true);
        } else {
            self.write_acks(now, &mut b, buf, true);
        }
        let path = &self.paths[idx];
        if !alone
            && path.state == PathState::Active
            && path.last_eliciting_sent.is_none_or(|t| now - t >= liveness(path))
        {
            encode::ping(buf);
            b.ack_eliciting = true;
        }
        let t = self.seal_and_record(now, b, buf, None);
        if self.config.ack_path == AckPath::Secondary && !alone {
            self.on_ack_packet_sent(due, idx, t.size, now);
        }
        Some(t)
    }

    fn poll_keepalive(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let interval = self.config.keepalive_interval;
        let idx = self.paths.iter().position(|p| {
            p.state == PathState::Active && p.last_eliciting_sent.is_none_or(|t| now - t >= interval)
        })?;
        let mut b = self.start(idx, buf);
        self.write_acks(now, &mut b, buf, true);
        encode::ping(buf);
        b.ack_eliciting = true;
        Some(self.seal_and_record(now, b, buf, None))
    }

    fn poll_close(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (code, reason, done) = self.close_frame.as_ref()?;
        let idx = self.paths.iter().position(|p| {
            matches!(p.state, PathState::Active | PathState::Suspect) && !done.contains(&p.id)
        })?;
        let (code, reason) = (*code, reason.clone());
        let id = self.paths[idx].id;
        let mut b = self.start(idx, buf);
        encode::close(buf, code, reason.as_bytes());
        if let Some((_, _, done)) = self.close_frame.as_mut() {
            done.insert(id);
        }
        b.ack_eliciting = false;
        Some(self.seal_and_record(now, b, buf, None))
    }

    fn has_control(&self) -> bool {
        let c = &self.streams.control;
        c.max_data
            || c.max_streams
            || !c.max_stream_data.is_empty()
            || !self.path_control.status.is_empty()
            || !self.path_control.abandon.is_empty()
            || (self.policy.due && self.is_established())
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
        // One-way delays: a path's RTT includes the return trip of the path its ACKs come back
        // on (half that path's minimum RTT), or half its own when they come back on itself.
        let returns: SmallVec<[(PathId, Duration); 8]> = self
            .paths
            .iter()
            .filter(|p| p.state == PathState::Active && p.rtt.has_sample())
            .map(|p| (p.id, p.rtt.min()))
            .collect();
        let admission = self.config.path_admission;
        let engaged = self.secondary_engaged(now);
        let queues = &self.queues;
        let reports = self.config.receiver_reports;
        views.extend(self.paths.iter_mut().filter(|p| p.state != PathState::Closed).map(|p| {
            let rate = p.usable_capacity(now);
            let min_rtt = p.rtt.min();
            let carrier = p
                .rtt
                .route()
                .filter(|r| *r != p.id)
                .and_then(|r| returns.iter().find(|(id, _)| *id == r).map(|(_, rtt)| *rtt));
            let base = match carrier {
                Some(c) => min_rtt.saturating_sub(c / 2).max(c / 2),
                None => min_rtt / 2,
            };
            // What stands in the bottleneck queue: bytes in flight beyond the path's
            // bandwidth-delay product, drained at its rate.
            let pipe = rate * min_rtt.as_secs_f64();
            let standing = (p.in_flight as f64 - pipe).max(0.0);
            let one_way_delay = base + Duration::from_secs_f64(standing / rate.max(1.0));
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
                in_flight: p.in_flight,
                ready_at: p.ready_at_over(now, bytes as u64, overdraft),
                rate,
                loss_rate: p.scheduler_loss(now, reports),
                mtu: p.mtu,
                admitted: p.admitted || !admission,
                one_way_delay,
                queued_bytes: queues.bytes(p.id),
                weight: p.weight,
            }
        }));
    }

    fn poll_data(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let mut views = std::mem::take(&mut self.views);
        let t = self.poll_data_with(now, buf, &mut views);
        self.views = views;
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
        for p in &mut self.paths {
            p.set_latency_bound(latency);
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
            let decision = self.scheduler_for(info.class).select(now, views, &info);
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
        for v in views.iter().filter(|v| v.ready(now)) {
            if let Some(p) = self.paths.iter_mut().find(|p| p.id == v.id) {
                if p.window_room() > p.mtu as u64 {
                    p.monitor.unsaturated_until = p.delivery.delivered() + p.in_flight;
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
    fn count_class(&mut self, now: Timestamp, class: u8, bytes: usize) {
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

    /// Builds a data packet on `idx` with control frames, then stream data and datagrams of
    /// `class` only — the class whose scheduler chose `idx`: filling the room with another
    /// class's content would carry it where its own scheduler did not send it (past a
    /// priority scheduler's drops, or a backup path it must avoid). `copies` get the same
    /// frames (redundant scheduling).
    fn build_data(
        &mut self,
        now: Timestamp,
        idx: usize,
        class: u8,
        buf: &mut Vec<u8>,
        copies: &[usize],
    ) -> Transmit {
        let mut earliest_deadline: Option<Timestamp> = None;
        let mut only_datagrams = true;
        let mut b = self.start(idx, buf);
        // Redundant copies carry the same bytes: the packet fits the smallest MTU among them.
        for &c in copies {
            b.limit = b.limit.min(self.paths[c].mtu - TAG_LEN);
        }
        self.write_acks(now, &mut b, buf, true);
        self.write_control(&mut b, buf);
        loop {
            let room = b.room(buf);
            if room < MIN_FRAME_ROOM {
                break;
            }
            // Within a class, datagrams go first (they are the time-critical content).
            if let Some(d) = self.datagrams.pop(class, now) {
                if !self.write_datagram(now, &mut b, buf, &d) {
                    self.datagrams.push_front(d);
                    break;
                }
                earliest_deadline = crate::time::earliest(earliest_deadline, d.deadline);
                continue;
            }
            if !self.write_stream(&mut b, class, buf) {
                break;
            }
            only_datagrams = false;
        }
        if b.frames.iter().any(|f| !matches!(f, SentFrame::Datagram { .. } | SentFrame::Ack { .. })) {
            only_datagrams = false;
        }
        if !b.ack_eliciting {
            // Only ACKs fit (nothing else was ready): still a valid packet.
            encode::ping(buf);
            b.ack_eliciting = true;
        }
        if b.frames.iter().any(|f| matches!(f, SentFrame::Stream { .. } | SentFrame::Datagram { .. })) {
            self.last_data_sent = Some(now);
        }
        // Frames and payload are copied only when a redundant copy is made: for every path in
        // `copies`, or for one when the packet is critical (`critical`).
        let critical = copies.is_empty() && self.is_critical(&b.frames);
        let copy =
            (!copies.is_empty() || critical).then(|| (buf[DATA_HEADER_LEN..].to_vec(), b.frames.clone()));
        let t = self.seal_and_record(now, b, buf, None);
        self.count_class(now, class, t.size);
        if let Some((payload, frames)) = copy {
            // Copies of datagrams are useless after their deadline; other copies are kept.
            let expires = if only_datagrams { earliest_deadline } else { None };
            if critical {
                self.copy_critical(now, idx, payload, frames, expires);
                return t;
            }
            for &c in copies {
                let id = self.paths[c].id;
                self.pin(id, Pinned::Copy { payload: payload.clone(), frames: frames.clone(), expires });
            }
        }
        t
    }

    /// Appends a DATAGRAM frame carrying `d`; false (nothing written) when it does not fit.
    pub(super) fn write_datagram(
        &mut self,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        d: &OutgoingDatagram,
    ) -> bool {
        let room = b.room(buf);
        let deadline_us = d.deadline.map(|t| (t - now).as_micros() as u64);
        if encode::datagram_len(d.seq, deadline_us, d.data.len()) > room {
            return false;
        }
        encode::datagram(buf, d.class, d.seq, deadline_us, &d.data);
        b.frames.push(SentFrame::Datagram { class: d.class });
        self.datagrams.stats.entry(d.class).or_default().sent += 1;
        self.paths[b.idx].stats.datagrams_sent += 1;
        b.ack_eliciting = true;
        true
    }

    /// Appends one STREAM frame (and STREAM_OPEN if due). False when nothing fitted.
    fn write_stream(&mut self, b: &mut Builder, class: u8, buf: &mut Vec<u8>) -> bool {
        let room = b.room(buf);
        let Some((id, chunk, announce)) = self.streams.next_chunk(room, only(class)) else {
            return false;
        };
        if let Some(class) = announce {
            encode::stream_open(buf, id, class);
            b.frames.push(SentFrame::StreamOpen { id });
            b.ack_eliciting = true;
        }
        let Some(chunk) = chunk else { return true };
        let room = b.room(buf);
        let with_len = encode::stream_header_len(id, chunk.offset, Some(chunk.len)) + chunk.len;
        encode::stream_header(buf, id, chunk.offset, chunk.fin, (with_len <= room).then_some(chunk.len));
        self.streams.copy_range(id, chunk.offset, chunk.len, buf);
        b.frames.push(SentFrame::Stream { id, offset: chunk.offset, len: chunk.len as u32, fin: chunk.fin });
        b.ack_eliciting = true;
        if chunk.retransmit {
            self.paths[b.idx].stats.retransmitted_bytes += chunk.len as u64;
        }
        true
    }

    /// Appends pending control frames that fit.
    fn write_control(&mut self, b: &mut Builder, buf: &mut Vec<u8>) {
        let fits = |buf: &Vec<u8>| buf.len() + 24 <= b.limit;
        if self.streams.control.max_data && fits(buf) {
            self.streams.control.max_data = false;
            encode::max_data(buf, self.streams.local_max_data());
            b.frames.push(SentFrame::MaxData);
        }
        if self.streams.control.max_streams && fits(buf) {
            self.streams.control.max_streams = false;
            encode::max_streams(buf, self.streams.local_max_streams());
            b.frames.push(SentFrame::MaxStreams);
        }
        while fits(buf) {
            let Some(id) = self.streams.control.max_stream_data.pop() else {
                break;
            };
            if let Some(max) = self.streams.local_max_stream_data(id) {
                tracing::trace!(session = %self.local_id, stream = id, max, "sending MAX_STREAM_DATA");
                encode::max_stream_data(buf, id, max);
                b.frames.push(SentFrame::MaxStreamData { id });
            }
        }
        for (id, code, final_size) in self.streams.pending_resets() {
            if !fits(buf) {
                break;
            }
            encode::reset_stream(buf, id, code, final_size);
            b.frames.push(SentFrame::ResetStream { id });
            self.streams.on_reset_sent(id, crate::stream::FrameFate::Sent);
        }
        for (id, code) in self.streams.pending_stops() {
            if !fits(buf) {
                break;
            }
            encode::stop_sending(buf, id, code);
            b.frames.push(SentFrame::StopSending { id });
            self.streams.on_stop_sent(id, crate::stream::FrameFate::Sent);
        }
        self.streams.settle_resets_and_stops();
        while fits(buf) {
            let Some(path) = self.path_control.status.pop_first() else {
                break;
            };
            if let Some(p) = self.path(path) {
                encode::path_status(buf, path, p.status_seq, p.local_status);
                b.frames.push(SentFrame::PathStatus { path });
            }
        }
        while fits(buf) {
            let Some((path, code)) = self.path_control.abandon.pop_first() else {
                break;
            };
            encode::path_abandon(buf, path, code);
            b.frames.push(SentFrame::PathAbandon { path });
        }
        if self.policy.due && self.is_established() {
            let body = self.policy().encode();
            let seq = self.policy.seq();
            if buf.len() + encode::policy_len(seq, body.len()) <= b.limit {
                self.policy.due = false;
                encode::policy(buf, seq, &body);
                b.frames.push(SentFrame::Policy { seq });
            }
        }
        if !b.frames.iter().all(|f| matches!(f, SentFrame::Ack { .. })) {
            b.ack_eliciting = true;
        }
    }
}
