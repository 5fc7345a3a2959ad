//! What each received frame does, and what acknowledgement or loss of a sent packet does to the
//! frames it carried.

use super::{Event, PathEvent, Session};
use crate::datagram::Datagram;
use crate::path::sent::{SentFrame, SentPacket};
use crate::path::PathState;
use crate::scheduler::Kind;
use crate::stream::FrameFate;
use crate::time::Timestamp;
use crate::wire::{AckFrame, Frame};
use bytes::Bytes;
use std::net::SocketAddr;

/// PATH_CHALLENGEs answered per path at most at once (more are dropped: a peer needs one).
const MAX_PENDING_RESPONSES: usize = 4;

impl Session {
    pub(super) fn on_frame(
        &mut self,
        now: Timestamp,
        path_id: u8,
        remote: SocketAddr,
        frame: Frame<'_>,
        payload: &Bytes,
    ) {
        let result = match frame {
            Frame::Padding(_) | Frame::Ping => Ok(()),
            Frame::Ack(ack) => {
                self.on_ack(now, &ack, path_id);
                Ok(())
            }
            Frame::Stream { id, offset, fin, data } => {
                self.sharing.on_data(now);
                self.streams.on_stream_frame(id, offset, payload.slice_ref(data), fin).map(|fresh| {
                    if let Some(p) = self.path_mut(path_id) {
                        p.stats.stream_bytes_received += fresh;
                    }
                })
            }
            Frame::ResetStream { id, code, final_size } => self.streams.on_reset(id, code, final_size),
            Frame::StopSending { id, code } => self.streams.on_stop_sending(id, code),
            Frame::MaxData(max) => {
                self.streams.on_max_data(max);
                Ok(())
            }
            Frame::MaxStreamData { id, max } => {
                tracing::trace!(session = %self.local_id, stream = id, max, "received MAX_STREAM_DATA");
                self.streams.on_max_stream_data(id, max)
            }
            Frame::MaxStreams(n) => {
                self.streams.on_max_streams(n);
                Ok(())
            }
            Frame::StreamOpen { id, class } => self.streams.on_stream_open(id, class),
            Frame::Datagram { class, seq, data, .. } => {
                self.sharing.on_data(now);
                if let Some(p) = self.path_mut(path_id) {
                    p.stats.datagrams_received += 1;
                }
                if self.datagrams.on_received(Datagram { class, seq, data: payload.slice_ref(data) }) {
                    self.events.push_back(Event::DatagramReceived);
                }
                Ok(())
            }
            Frame::PathChallenge(token) => {
                if let Some(p) = self.path_mut(path_id) {
                    if p.responses.len() < MAX_PENDING_RESPONSES {
                        p.responses.push((token, remote));
                    }
                }
                Ok(())
            }
            Frame::PathResponse(token) => {
                self.on_path_response(now, path_id, remote, token);
                Ok(())
            }
            Frame::PathStatus { path_id: target, seq, status } => {
                if let Some(p) = self.path_mut(target) {
                    if p.remote_status_seq.is_none_or(|s| seq > s) {
                        p.remote_status_seq = Some(seq);
                        p.remote_status = status;
                    }
                }
                Ok(())
            }
            Frame::PathReport { path_id: target, counters } => {
                if let Some(p) = self.path_mut(target) {
                    p.peer.on_report(now, counters);
                }
                Ok(())
            }
            Frame::PathAbandon { path_id: target, .. } => {
                self.retire_path(now, target, false);
                Ok(())
            }
            Frame::Policy { seq, body } => {
                if let Err(why) = self.on_policy(now, seq, body) {
                    self.violation(now, why);
                }
                Ok(())
            }
            Frame::Sharing { seq, shared } => {
                match self.sharing.on_frame(self.side, seq, shared) {
                    Ok(Some(shared)) => {
                        tracing::debug!(session = %self.local_id, shared, "server says whether uploads share its ingress")
                    }
                    Ok(None) => {}
                    Err(why) => self.violation(now, why.into()),
                }
                Ok(())
            }
            Frame::Close { code, reason } => {
                let reason = String::from_utf8_lossy(reason).into_owned();
                self.end(super::CloseReason::PeerClosed { code, reason });
                Ok(())
            }
        };
        if let Err(v) = result {
            self.violation(now, v.to_string());
        }
    }

    fn on_path_response(&mut self, now: Timestamp, path_id: u8, remote: SocketAddr, token: [u8; 8]) {
        let Some(p) = self.path_mut(path_id) else {
            return;
        };
        let Some(c) = p.challenge else { return };
        if c.token != token || c.remote != remote {
            return;
        }
        p.challenge = None;
        let moved = p.remote != c.remote && p.state != PathState::Validating;
        p.remote = c.remote;
        if moved {
            // Its one-way delays are another route's now.
            p.forget_one_way();
            tracing::debug!(session = %self.local_id, path = path_id, remote = %c.remote, "path moved to a validated address");
            self.events.push_back(Event::Path(path_id, PathEvent::Migrated));
        }
        let p = self.path_mut(path_id).expect("found above");
        if let Some(sent) = c.sent {
            if c.tries == 1 && !p.rtt.has_sample() {
                p.rtt.update(now - sent, std::time::Duration::ZERO);
            }
        }
        if p.state == PathState::Validating {
            p.state = PathState::Active;
            p.last_ack = Some(now);
            p.monitor.request_pair();
            p.update_pacing(now);
            tracing::debug!(session = %self.local_id, path = path_id, "path validated");
            self.events.push_back(Event::Path(path_id, PathEvent::Validated));
        }
    }

    /// An ACK frame for path `ack.path_id` that came back on path `via`.
    fn on_ack(&mut self, now: Timestamp, ack: &AckFrame, via: u8) {
        let Some(idx) = self.paths.iter().position(|p| p.id == ack.path_id) else {
            return;
        };
        if self.paths[idx].monitor.pair.is_some() && ack.largest < self.paths[idx].next_pn {
            // Packet pair: the time the peer received the probe this frame reports as largest
            // (whether or not it acknowledges anything new).
            let delay = std::time::Duration::from_micros(ack.ack_delay_us);
            let packet = self.stats.packets_received;
            let p = &mut self.paths[idx];
            let peak = p.capacity_estimate.delivered_peak();
            if let Some(rate) = p.monitor.on_ack_for_pair(now, ack.largest, delay, (via, packet), peak) {
                tracing::debug!(session = %self.local_id, path = ack.path_id, via, rate, "packet pair");
                p.capacity_estimate.on_packet_pair(now, rate);
            }
        }
        // An ACK_TS times the return leg of the path that carried it (`path::one_way`).
        if let Some((t, carrier)) = ack.timestamp_us.zip(self.paths.iter_mut().find(|p| p.id == via)) {
            carrier.one_way.on_back(now, t);
        }
        // The return leg of the route, as `path_views` takes it: half an active carrier's
        // round trip; on the path itself its forward leg (its floor less the carrier's leg)
        // as it was when its ACKs moved back to it, unknown when they never came on another.
        let rtt = &self.paths[idx].rtt;
        let leg = if via != ack.path_id {
            let carrier = self.paths.iter().find(|p| p.id == via && p.state == PathState::Active);
            carrier.filter(|p| p.rtt.has_sample()).map(|p| p.rtt.floor() / 2)
        } else if rtt.route().is_some_and(|r| r != via) {
            rtt.forward_leg()
        } else {
            rtt.leg()
        };
        self.paths[idx].rtt.next_sample_route(via, leg);
        let mut acked = std::mem::take(&mut self.acked_scratch);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        let mad = self.config.max_ack_delay;
        let was_capped = self.paths[idx].queue_capped();
        self.paths[idx].keep_queue_cap = self.schedulers.uses(Kind::Edpf);
        match self.paths[idx].on_ack_frame(now, ack, mad, &mut acked, &mut lost) {
            Err(_) => self.violation(now, format!("ACK of unsent packet on path {}", ack.path_id)),
            Ok(true) if self.paths[idx].state == PathState::Suspect => self.recover_path(now, idx),
            Ok(_) => {}
        }
        if !was_capped && self.paths[idx].queue_capped() {
            self.strand_collapsed(idx);
        }
        for p in acked.drain(..) {
            self.on_packet_acked(&p);
        }
        for p in lost.drain(..) {
            self.on_packet_lost(now, idx, &p);
        }
        self.acked_scratch = acked;
        self.lost_scratch = lost;
    }

    fn on_packet_acked(&mut self, p: &SentPacket) {
        for f in &p.frames {
            match *f {
                SentFrame::Stream { id, offset, len, fin } => {
                    self.streams.on_frame_acked(id, offset, u64::from(len), fin)
                }
                SentFrame::Ack { path, largest } => {
                    if let Some(p) = self.path_mut(path) {
                        p.received.on_ack_acked(largest);
                    }
                }
                SentFrame::ResetStream { id } => self.streams.on_reset_sent(id, FrameFate::Acked),
                SentFrame::StopSending { id } => self.streams.on_stop_sent(id, FrameFate::Acked),
                SentFrame::Datagram { class } => self.datagrams.stats.entry(class).or_default().acked += 1,
                _ => {}
            }
        }
    }

    /// Packet `p`, sent on path `idx`, was declared lost at `now`.
    pub(super) fn on_packet_lost(&mut self, now: Timestamp, idx: usize, p: &SentPacket) {
        if !p.requeued {
            self.log_lost(now, idx, p);
            self.requeue_lost(now, idx, &p.frames);
        }
    }

    /// Puts the frames of a lost (or stranded) packet back in line, for any path.
    pub(super) fn requeue_frames(&mut self, frames: &[SentFrame]) {
        for f in frames {
            match *f {
                SentFrame::Stream { id, offset, len, fin } => {
                    self.streams.on_frame_lost(id, offset, u64::from(len), fin)
                }
                SentFrame::ResetStream { id } => self.streams.on_reset_sent(id, FrameFate::Lost),
                SentFrame::StopSending { id } => self.streams.on_stop_sent(id, FrameFate::Lost),
                SentFrame::MaxData => self.streams.control.max_data = true,
                SentFrame::MaxStreamData { id } => {
                    tracing::trace!(session = %self.local_id, stream = id, "MAX_STREAM_DATA lost");
                    self.streams.control.max_stream_data.push(id)
                }
                SentFrame::MaxStreams => self.streams.control.max_streams = true,
                SentFrame::StreamOpen { id } => self.streams.on_open_lost(id),
                SentFrame::Datagram { class } => self.datagrams.stats.entry(class).or_default().lost += 1,
                SentFrame::Ack { .. } => {}
                SentFrame::PathStatus { path } => {
                    if self.path(path).is_some() {
                        self.path_control.status.insert(path);
                    }
                }
                SentFrame::PathAbandon { path } => {
                    self.path_control.abandon.entry(path).or_insert(0);
                }
                SentFrame::Policy { seq } => {
                    if seq == self.policy.seq() {
                        self.policy.due = true;
                    }
                }
                SentFrame::Sharing { seq } => self.sharing.on_lost(seq),
            }
        }
    }
}
