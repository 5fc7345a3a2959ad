//! Acknowledgement processing and loss detection of one path (RFC 9002 §6, §7.6).
//!
//! Packet numbers are per path, so reordering *between* paths never looks like loss here.

use super::sent::{SentFrame, SentPacket};
use super::{Path, PathState};
use crate::cc::{AckEvent, LossEvent};
use crate::path::rtt::GRANULARITY;
use crate::time::Timestamp;
use crate::wire::AckFrame;
use std::time::Duration;

/// RFC 9002 §6.1.1: "kPacketThreshold = 3".
const PACKET_THRESHOLD: u64 = 3;
/// RFC 9002 §7.6.1: "kPersistentCongestionThreshold = 3".
const PERSISTENT_CONGESTION_THRESHOLD: u32 = 3;
pub use crate::timing::MAX_PROBE_INTERVAL;

/// Unanswered probes after which a suspect path is taken for an outage: from then on, a
/// packet from the peer on it is answered with a probe at once (the link is back). Shorter
/// spells (a loss burst on a slow link) keep the regular probe timer.
const OUTAGE_PROBES: u32 = 2;

/// The ACK acknowledged a packet number that was never sent: the peer is broken or lying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidAck;

impl Path {
    /// Applies an ACK frame for this path. Newly acknowledged packets are appended to `acked`,
    /// packets it proves lost to `lost`. Returns whether anything was newly acknowledged. (The
    /// packet pair's timing is the caller's, which knows the path the ACK came back on.)
    pub fn on_ack_frame(
        &mut self,
        now: Timestamp,
        ack: &AckFrame,
        max_ack_delay: Duration,
        acked: &mut Vec<SentPacket>,
        lost: &mut Vec<SentPacket>,
    ) -> Result<bool, InvalidAck> {
        if ack.largest >= self.next_pn {
            return Err(InvalidAck);
        }
        let first = acked.len();
        for range in &ack.ranges {
            let pns: smallvec::SmallVec<[u64; 64]> = self.sent.pns_in(*range.start(), *range.end()).collect();
            for pn in pns {
                if let Some(p) = self.sent.remove(pn) {
                    acked.push(p);
                }
            }
        }
        if acked.len() == first {
            return Ok(false);
        }
        self.largest_acked = Some(self.largest_acked.map_or(ack.largest, |l| l.max(ack.largest)));
        let newly = &acked[first..];
        // RFC 9002 §5.1: an RTT sample when the largest acknowledged is newly acknowledged and
        // at least one newly acknowledged packet was ack-eliciting.
        if let Some(largest) = newly.iter().find(|p| p.pn == ack.largest) {
            if let Some(t) = ack.timestamp_us {
                let received_us = t.saturating_sub(ack.ack_delay_us);
                self.one_way.on_forward(now, largest.sent_time.as_micros(), received_us, largest.size);
                self.on_forward_sample(now);
            }
            if newly.iter().any(|p| p.ack_eliciting) {
                let sample = now - largest.sent_time;
                let delay = Duration::from_micros(ack.ack_delay_us).min(max_ack_delay);
                self.rtt.update(sample, delay);
                let rate = self.capacity_estimate.drain_rate();
                let adjusted = self.rtt.adjusted(sample, delay);
                self.base_rtt.on_sample(now, adjusted, self.rtt.floor(), self.in_flight, rate, self.mtu);
                self.monitor.on_rtt_sample(sample);
            }
        }
        self.last_ack = Some(now);
        self.pto_count = 0;
        let prior_in_flight = self.in_flight;
        let mut acked_bytes = 0;
        let mut largest_sent_time = Timestamp::ZERO;
        for p in newly {
            if let Some(mtu) = self.pmtu.on_acked(now, p.size as usize, p.mtu_probe) {
                self.mtu = mtu;
            }
            if p.frames.iter().any(|f| matches!(f, SentFrame::Stream { .. })) {
                self.on_stream_packet(p.size as usize);
            }
            if p.mtu_probe {
                continue;
            }
            if p.in_flight {
                self.delivery.on_packet_acked(now, p.sent_time, u64::from(p.size), &p.rate);
                if p.requeued {
                    self.stranded = self.stranded.saturating_sub(u64::from(p.size));
                } else {
                    self.in_flight -= u64::from(p.size);
                    acked_bytes += u64::from(p.size);
                }
                largest_sent_time = largest_sent_time.max(p.sent_time);
            }
            if p.ack_eliciting {
                self.monitor.on_packet_outcome(false, false);
            }
        }
        let rate = self.delivery.take_sample(self.rtt.min());
        if let Some(r) = rate.delivery_rate {
            if !rate.is_app_limited && self.capacity_estimate.held_back(rate.delivered) {
                let for_another = self.capacity_estimate.held_for_another(rate.delivered);
                self.capacity_estimate.on_held_back_rate(now, r, for_another);
            } else {
                self.capacity_estimate.on_delivery_rate(now, r, rate.is_app_limited);
            }
        }
        if self.state == PathState::Active && acked_bytes > 0 {
            let ev = AckEvent { now, acked_bytes, largest_sent_time, prior_in_flight, rate };
            self.cc.on_ack(&ev, &self.rtt);
        }
        self.detect_lost(now, max_ack_delay, lost);
        self.update_pacing(now);
        Ok(true)
    }

    /// RFC 9002 §6.1: declares lost what is `PACKET_THRESHOLD` below the largest acknowledged
    /// or older than the time threshold; arms `loss_time` for the rest.
    pub fn detect_lost(&mut self, now: Timestamp, max_ack_delay: Duration, lost: &mut Vec<SentPacket>) {
        self.loss_time = None;
        let Some(largest) = self.largest_acked else {
            return;
        };
        // "loss_delay = kTimeThreshold * max(latest_rtt, smoothed_rtt)", kTimeThreshold = 9/8.
        let loss_delay = (self.rtt.latest().max(self.rtt.smoothed()) * 9 / 8).max(GRANULARITY);
        let lost_send_time = now - loss_delay;
        let first_lost = lost.len();
        let mut doomed: smallvec::SmallVec<[u64; 16]> = smallvec::SmallVec::new();
        for p in self.sent.iter() {
            if p.pn >= largest {
                break;
            }
            if p.sent_time <= lost_send_time || largest >= p.pn + PACKET_THRESHOLD {
                doomed.push(p.pn);
            } else {
                let t = p.sent_time + loss_delay;
                self.loss_time = Some(self.loss_time.map_or(t, |l| l.min(t)));
            }
        }
        for pn in doomed {
            if let Some(p) = self.sent.remove(pn) {
                lost.push(p);
            }
        }
        if lost.len() > first_lost {
            self.on_packets_lost(now, max_ack_delay, first_lost, lost);
        }
    }

    /// Accounts for packets in `lost[first..]` and tells the controller (unless the path is
    /// suspect: blackout losses are not congestion).
    fn on_packets_lost(
        &mut self,
        now: Timestamp,
        max_ack_delay: Duration,
        first: usize,
        lost: &[SentPacket],
    ) {
        let mut lost_bytes = 0;
        let mut largest_sent_time = Timestamp::ZERO;
        // RFC 9002 §7.6: persistent congestion when consecutive lost ack-eliciting packets span
        // more than 3 × (smoothed_rtt + max(4 × rttvar, kGranularity) + max_ack_delay).
        let span = self.rtt.pto_base(max_ack_delay) * PERSISTENT_CONGESTION_THRESHOLD;
        let mut run: Option<(u64, Timestamp)> = None;
        let mut prev_pn = None;
        let mut persistent = false;
        let random_verdict = self.loss_verdict(false);
        for p in &lost[first..] {
            if let Some(mtu) = self.pmtu.on_lost(now, p.size as usize, p.mtu_probe, self.mtu) {
                tracing::debug!(
                    path = self.id,
                    from = self.mtu,
                    to = mtu,
                    "path MTU black hole: falling back"
                );
                self.mtu = mtu;
            }
            if p.mtu_probe {
                continue;
            }
            if p.ack_eliciting {
                self.stats.packets_lost += 1;
                self.monitor.on_lost_for_pair(p.pn);
                // Packets stranded by a blackout are the blackout's, not the link's loss rate.
                if !p.requeued {
                    self.monitor.on_packet_outcome(true, random_verdict);
                }
            }
            if p.in_flight && p.requeued {
                self.stranded = self.stranded.saturating_sub(u64::from(p.size));
            }
            if !p.in_flight || p.requeued {
                continue;
            }
            self.in_flight -= u64::from(p.size);
            lost_bytes += u64::from(p.size);
            largest_sent_time = largest_sent_time.max(p.sent_time);
            let contiguous = prev_pn.is_some_and(|q: u64| p.pn == q + 1);
            if !contiguous {
                run = Some((p.pn, p.sent_time));
            }
            if let Some((_, start)) = run {
                if self.rtt.has_sample() && p.sent_time - start > span {
                    persistent = true;
                }
            }
            prev_pn = Some(p.pn);
        }
        if lost_bytes > 0 && self.state == PathState::Active {
            let queued = !self.loss_verdict(false);
            let random = self.classify_loss();
            let ev = LossEvent { now, lost_bytes, largest_sent_time, persistent, random, queued };
            self.cc.on_congestion(&ev, &self.rtt);
        }
    }

    /// Strands every outstanding packet (the path went silent or closes): its frames are
    /// returned for other paths, and its bytes leave the flight for [`Path::stranded`] until
    /// a late acknowledgement (still welcome) or a loss verdict clears them.
    pub fn strand(&mut self) -> Vec<SentFrame> {
        let mut frames = Vec::new();
        for p in self.sent.iter_mut().filter(|p| !p.requeued) {
            p.requeued = true;
            if p.in_flight {
                self.in_flight -= u64::from(p.size);
                self.stranded += u64::from(p.size);
            }
            frames.extend(p.frames.iter().filter(|f| !matches!(f, SentFrame::Datagram { .. })).cloned());
        }
        self.sent.note_stranded();
        frames
    }

    /// True when an ack-eliciting packet is outstanding whose frames this path still owns.
    fn has_eliciting_in_flight(&self) -> bool {
        self.sent.iter().any(|p| p.ack_eliciting && !p.requeued)
    }

    /// The loss-detection timer: the time threshold, else the probe timeout (RFC 9002 §6.2),
    /// else — for a suspect path — the next probe: at once when the peer was heard on the path
    /// since the last probe of an outage (its packet says the link is back; probes stay a minimum RTT and a
    /// quarter of the cap apart), else after the backed-off probe timeout, at most [`MAX_PROBE_INTERVAL`].
    pub fn loss_timer(&self, max_ack_delay: Duration) -> Option<Timestamp> {
        if self.state == PathState::Closed {
            return None;
        }
        if let Some(t) = self.loss_time {
            return Some(t);
        }
        let last = self.last_eliciting_sent?;
        let backoff = 1u32 << self.pto_count.min(10);
        let pto = self.rtt.pto_base(max_ack_delay) * backoff;
        match self.state {
            PathState::Suspect => {
                let regular = last + pto.min(MAX_PROBE_INTERVAL);
                let outage = self.pto_count >= OUTAGE_PROBES;
                let heard = self.last_received.filter(|&r| outage && r > last);
                let spacing = self.rtt.min().max(MAX_PROBE_INTERVAL / 4);
                Some(heard.map_or(regular, |r| r.max(last + spacing).min(regular)))
            }
            PathState::Active if self.has_eliciting_in_flight() => Some(last + pto),
            _ => None,
        }
    }

    /// The loss-detection timer fired: detect losses or arm a probe.
    pub fn on_loss_timeout(&mut self, now: Timestamp, max_ack_delay: Duration, lost: &mut Vec<SentPacket>) {
        if self.loss_time.is_some_and(|t| t <= now) {
            self.detect_lost(now, max_ack_delay, lost);
            self.update_pacing(now);
            return;
        }
        if self.loss_timer(max_ack_delay).is_some_and(|t| t <= now) {
            // RFC 9002 §6.2.4: "send one or two ack-eliciting packets".
            self.pto_count += 1;
            self.probes_due = 1;
            // Re-arm from now so the timer does not fire again before the probe leaves.
            self.last_eliciting_sent = Some(now);
        }
    }
}

#[cfg(test)]
mod tests;
