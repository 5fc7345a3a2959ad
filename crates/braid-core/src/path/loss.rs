//! Acknowledgement processing and loss detection of one path (RFC 9002 §6, §7.6).
//!
//! Packet numbers are per path, so reordering *between* paths never looks like loss here.

use super::sent::SentPacket;
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
/// A suspect path is probed at least this often, so a restored link is noticed quickly: a
/// restored link waits on average half of this before carrying data again (with 1 s the
/// lab's cut scenario took 1.06–1.17 s to get back to full rate). A probe is one small
/// packet, so a dead link costs 4 packets a second.
pub const MAX_PROBE_INTERVAL: Duration = Duration::from_millis(250);

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
            if newly.iter().any(|p| p.ack_eliciting) {
                let sample = now - largest.sent_time;
                let delay = Duration::from_micros(ack.ack_delay_us).min(max_ack_delay);
                self.rtt.update(sample, delay);
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
            if p.mtu_probe {
                continue;
            }
            if p.in_flight {
                self.delivery.on_packet_acked(now, p.sent_time, u64::from(p.size), &p.rate);
                if !p.requeued {
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
            let held_back = rate.delivered <= self.monitor.unsaturated_until;
            self.monitor.on_delivery_rate(now, r, rate.is_app_limited || held_back);
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
        let random_verdict = self.monitor.judge_loss(&self.rtt);
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
            let random = self.monitor.classify_loss(&self.rtt);
            let ev = LossEvent { now, lost_bytes, largest_sent_time, persistent, random };
            self.cc.on_congestion(&ev, &self.rtt);
        }
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
mod tests {
    use super::*;
    use crate::cc::Algorithm;

    const MAD: Duration = Duration::from_millis(25);

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_millis(n))
    }

    /// A suspect path with a 30 ms RTT whose last probe left at 1000 ms, long after its PTO
    /// backoff passed the probe cap.
    fn suspect() -> Path {
        let addr = "127.0.0.1:1".parse().unwrap();
        let mut p = Path::new(0, None, addr, PathState::Suspect, Algorithm::Cubic, 1200, ms(0));
        p.rtt.update(Duration::from_millis(30), Duration::ZERO);
        p.pto_count = 6;
        p.last_eliciting_sent = Some(ms(1000));
        p
    }

    #[test]
    fn a_suspect_path_probes_at_the_capped_interval() {
        let p = suspect();
        assert_eq!(p.loss_timer(MAD), Some(ms(1000) + MAX_PROBE_INTERVAL));
    }

    #[test]
    fn a_short_spell_keeps_the_regular_probe_timer() {
        let mut p = suspect();
        p.pto_count = 1;
        p.last_received = Some(ms(1100));
        let pto = p.rtt.pto_base(MAD) * 2;
        assert_eq!(p.loss_timer(MAD), Some(ms(1000) + pto.min(MAX_PROBE_INTERVAL)));
    }

    /// A restored link: the peer's probe arrives between two of ours. Waiting for our next
    /// probe would leave the path idle for up to MAX_PROBE_INTERVAL; it probes at once.
    #[test]
    fn a_suspect_path_that_hears_from_its_peer_probes_at_once() {
        let mut p = suspect();
        p.last_received = Some(ms(1100));
        assert_eq!(p.loss_timer(MAD), Some(ms(1100)));
        let mut lost = Vec::new();
        p.on_loss_timeout(ms(1100), MAD, &mut lost);
        assert_eq!(p.probes_due, 1);
        // Once the probe is out, the next one waits for the regular interval again.
        p.last_eliciting_sent = Some(ms(1100));
        assert_eq!(p.loss_timer(MAD), Some(ms(1100) + MAX_PROBE_INTERVAL));
    }

    /// An active path with packets 0..n sent 10 ms apart, 1000 bytes each.
    fn sending(n: u64) -> Path {
        sending_every(n, 10)
    }

    /// An active path with packets 0..n sent `gap_ms` apart, 1000 bytes each.
    fn sending_every(n: u64, gap_ms: u64) -> Path {
        let addr = "127.0.0.1:1".parse().unwrap();
        let mut p = Path::new(0, None, addr, PathState::Active, Algorithm::Cubic, 1200, ms(0));
        for i in 0..n {
            let pn = p.take_pn();
            p.on_packet_sent(SentPacket {
                pn,
                sent_time: ms(gap_ms * i),
                size: 1000,
                ack_eliciting: true,
                in_flight: true,
                requeued: false,
                mtu_probe: false,
                rate: Default::default(),
                frames: Default::default(),
            });
        }
        p
    }

    fn ack(largest: u64, ranges: &[std::ops::RangeInclusive<u64>], delay_ms: u64) -> AckFrame {
        AckFrame {
            path_id: 0,
            largest,
            ack_delay_us: delay_ms * 1000,
            ranges: ranges.iter().cloned().collect(),
        }
    }

    fn pns(v: &[SentPacket]) -> Vec<u64> {
        v.iter().map(|p| p.pn).collect()
    }

    #[test]
    fn an_ack_of_a_packet_never_sent_is_refused() {
        let mut p = sending(3);
        let (mut acked, mut lost) = (Vec::new(), Vec::new());
        assert_eq!(p.on_ack_frame(ms(50), &ack(3, &[3..=3], 0), MAD, &mut acked, &mut lost), Err(InvalidAck));
        assert!(acked.is_empty() && lost.is_empty());
        assert_eq!(p.in_flight, 3000, "nothing changed");
    }

    #[test]
    fn acked_packets_leave_the_flight_once_and_give_an_rtt_sample() {
        let mut p = sending(4);
        let (mut acked, mut lost) = (Vec::new(), Vec::new());
        // Packets 0 and 1 acknowledged at 70 ms; the largest (1) left at 10 ms; 5 ms ACK delay.
        assert_eq!(p.on_ack_frame(ms(70), &ack(1, &[0..=1], 5), MAD, &mut acked, &mut lost), Ok(true));
        assert_eq!(pns(&acked), [0, 1]);
        assert_eq!(p.in_flight, 2000);
        assert_eq!(p.rtt.latest(), Duration::from_millis(60));
        assert_eq!(p.rtt.min(), Duration::from_millis(60));
        // The same ACK again acknowledges nothing new and changes nothing.
        acked.clear();
        assert_eq!(p.on_ack_frame(ms(80), &ack(1, &[0..=1], 5), MAD, &mut acked, &mut lost), Ok(false));
        assert!(acked.is_empty());
        assert_eq!(p.in_flight, 2000);
    }

    #[test]
    fn a_packet_three_below_the_largest_acked_is_lost_and_later_ones_wait_for_time() {
        // RFC 9002 §6.1: packets 1 ms apart, 4 acknowledged at 54 ms (RTT 50 ms). 0 and 1 are
        // ≥ 3 below the largest acknowledged: lost at once. 2 and 3 are not, and are lost
        // when the time threshold (9/8 RTT after they left) passes.
        let mut p = sending_every(5, 1);
        let (mut acked, mut lost) = (Vec::new(), Vec::new());
        p.on_ack_frame(ms(54), &ack(4, &[4..=4], 0), MAD, &mut acked, &mut lost).unwrap();
        assert_eq!(pns(&acked), [4]);
        assert_eq!(pns(&lost), [0, 1]);
        let timer = p.loss_time.expect("the rest waits for the time threshold");
        assert_eq!(timer, ms(2) + Duration::from_micros(56_250));
        lost.clear();
        p.on_loss_timeout(timer, MAD, &mut lost);
        assert_eq!(pns(&lost), [2]);
        assert_eq!(p.in_flight, 1000, "only packet 3 is still in flight");
        assert_eq!(p.loss_time, Some(ms(3) + Duration::from_micros(56_250)));
    }

    #[test]
    fn an_ack_delay_beyond_the_maximum_is_not_trusted() {
        // RFC 9002 §5.3: the peer's ACK delay is capped at max_ack_delay before it is taken off.
        let mut p = sending(2);
        let (mut acked, mut lost) = (Vec::new(), Vec::new());
        p.on_ack_frame(ms(40), &ack(0, &[0..=0], 0), MAD, &mut acked, &mut lost).unwrap();
        p.on_ack_frame(ms(210), &ack(1, &[1..=1], 500), MAD, &mut acked, &mut lost).unwrap();
        // Sample 200 ms, delay claimed 500 ms but capped at 25 ms: the RTT estimate rises.
        assert_eq!(p.rtt.latest(), Duration::from_millis(200));
        assert!(p.rtt.smoothed() > Duration::from_millis(40), "{:?}", p.rtt.smoothed());
    }

    /// A peer that keeps sending on a one-way broken path does not get a probe per packet.
    #[test]
    fn probes_for_a_talking_peer_stay_apart() {
        let mut p = suspect();
        p.last_received = Some(ms(1001));
        assert_eq!(p.loss_timer(MAD), Some(ms(1000) + MAX_PROBE_INTERVAL / 4));
        p.rtt.update(Duration::from_millis(300), Duration::ZERO);
        p.rtt.reset_min();
        p.rtt.update(Duration::from_millis(100), Duration::ZERO);
        assert_eq!(p.loss_timer(MAD), Some(ms(1100)), "a minimum RTT apart when that is longer");
    }
}
