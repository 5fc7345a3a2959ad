//! The path monitor: what schedulers, path admission and the status API know about a path.
//!
//! | measurement | how |
//! | --- | --- |
//! | smoothed, minimum RTT, RTT variance | the path's RTT estimator (RFC 9002 §5), published here |
//! | capacity | packet pair when the path starts and while it is not saturated (seed 001 §4.1), the delivery rate while it is (draft-cheng-iccrg-delivery-rate-estimation): the monitor runs the pairs, the path's [`CapacityEstimate`] keeps the samples and gives the one estimate |
//! | loss rate | share of ack-eliciting packets declared lost: a long average (about 256 packets) and a short one (about 32); and the same for impairment losses only (no queue: the link's own loss, what reliability and admission go by) |
//! | jitter | RFC 3550 §6.4.1's estimator, J += (\|D\| − J)/16, over consecutive RTT samples |
//! | state | probing, active, standby, suspect, down ([`MonitorState`]) |
//! | loss discrimination | a loss is random when it comes with no queue and no growing trend (seeds 001, 003) |
//!
//! Bytes and packets each way are the path's counters ([`crate::path::PathStats`]).
//!
//! **Packet pair** (seed 001 §4.1): "Send two back-to-back packets … bandwidth = size/Δ". The
//! sender sends two full-size probe packets (PING + PADDING) back to back — three at a path's
//! start and on a path behind a token-bucket shaper (see [`TRAIN_MAX`]); the peer acknowledges
//! each probe packet at once,
//! and the ACK frame's delay field tells how long the peer held it, so the gap between two
//! arrivals at the peer is the gap between the ACKs' arrivals minus the difference of their
//! delays (the return trip is the same for both).

use crate::path::capacity::CapacityEstimate;
use crate::path::rtt::RttEstimator;
use crate::time::Timestamp;
use crate::timing::{PAIR_MAX_INTERVAL, PAIR_MIN_INTERVAL, PAIR_TIMEOUT, QUEUE_SLACK_MIN};
use std::time::Duration;

/// Weight of one packet in the long loss average (about the last 256 packets).
const LOSS_EWMA: f64 = 1.0 / 256.0;
/// Weight of one packet in the short loss average (about the last 32 packets).
const RECENT_LOSS_EWMA: f64 = 1.0 / 32.0;
/// RTT samples looked at for a growing trend (seed 001 §4.3; the digest's A6 reading: 8).
const TREND_SAMPLES: usize = 8;
/// A packet pair is repeated no more often than keeps its cost under this share of the path's capacity.
const PAIR_MAX_SHARE: f64 = 0.02;

/// A path's state as the monitor reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MonitorState {
    /// Being validated, or validated but not yet measured (no packet-pair or delivery-rate
    /// estimate yet).
    Probing,
    /// Carrying data.
    Active,
    /// Usable but left out: path admission judged it would lower the total, or it is marked
    /// standby.
    Standby,
    /// Silent: its data moved to other paths, it is probed (seed 003's blackout detection).
    Suspect,
    /// Closed or failed.
    Down,
}

impl MonitorState {
    /// Lower-case name for status output.
    pub fn name(self) -> &'static str {
        match self {
            MonitorState::Probing => "probing",
            MonitorState::Active => "active",
            MonitorState::Standby => "standby",
            MonitorState::Suspect => "suspect",
            MonitorState::Down => "down",
        }
    }
}

/// Most probes in one packet-pair measurement: a pair and one more, on a path behind a
/// token-bucket shaper. The sample is the widest of the gaps between consecutive arrivals.
///
/// A shaper (htb, tbf, an operator's policer) lets a full bucket through at line rate: htb's
/// default bucket of 1,600 bytes, with the one packet of overdraft it allows, passed two
/// back-to-back probes together, and a 50 kbit/s link read 90–473 Mbit/s in the lab (its
/// delivery rate said 48 kbit/s). A third probe waits for tokens, so the second gap shows the
/// shaped rate. Behind a FIFO bottleneck the gaps are the same. A path's first measurement
/// is a train; later ones are pairs, and trains for good once a train's gaps differ (see
/// [`SHAPER_GAP_RATIO`]) or a pair reads more than [`BURST_RATIO`] times anything the path
/// delivered (that pair is dropped and a train sent at once). Trains on every path, always,
/// moved EDPF's reorder on seed 004's Table III mix from 6 to 22 packets; that figure swings
/// 6–22 packets with 1 ms more or less of one link's delay, so it does not rule trains out, but
/// pairs cost less on slow links.
pub const TRAIN_MAX: usize = 3;
/// A pair above this multiple of the path's largest delivery rate is taken for a shaper's
/// burst (see [`TRAIN_MAX`]).
pub const BURST_RATIO: f64 = 100.0;
/// A train whose widest gap is more than this multiple of its narrowest went through a
/// token bucket (the first probes passed together, the last waited for tokens): the path is
/// measured with trains from then on. Behind a FIFO bottleneck the gaps of a train are equal.
/// A path's first measurement is a train, so a shaper is found before its burst becomes the
/// estimate: the lab's 50 kbit/s link read 4.5 Mbit/s from its first pair, a ratio of 55,
/// under [`BURST_RATIO`].
pub const SHAPER_GAP_RATIO: f64 = 4.0;
/// The narrowest gap a pair can tell, seconds. Probes that arrive in one receive batch carry
/// one timestamp, and a gap of zero says only that the path is faster than the receiver can
/// time: it counts as 1 µs (1452 bytes: 11.6 Gbit/s). That errs high, which a path corrects
/// as soon as it is saturated (the estimate then follows what it delivers); left unmeasured,
/// the lab's 100 Mbit/s path beside 50 kbit/s carried 1 Mbit/s for the first 8 s.
pub const GAP_FLOOR: f64 = 1e-6;

/// A packet pair in progress: the probe packet numbers and when the peer received them.
#[derive(Debug, Clone, Copy, Default)]
pub struct PairProbe {
    /// Packet numbers of the probes.
    pub pns: [u64; TRAIN_MAX],
    /// Probes in this measurement (2, or [`TRAIN_MAX`]).
    pub probes: usize,
    /// Probes sent so far.
    pub sent: usize,
    /// Size of the last probe, bytes.
    pub size: u64,
    /// Receive time of each probe at the peer, on our clock shifted by the return trip.
    pub received: [Option<Timestamp>; TRAIN_MAX],
    /// The ACK packet that placed each probe: (path, the session's count of packets received).
    pub placed_by: [Option<(u8, u64)>; TRAIN_MAX],
    /// The gap between probe i and i + 1, once both were placed by one ACK packet.
    pub gaps: [Option<f64>; TRAIN_MAX - 1],
}

/// Measurements of one path.
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    /// Fraction of ack-eliciting packets lost, all causes (about the last 256; a plain
    /// average before).
    pub loss_rate: f64,
    /// Fraction of ack-eliciting packets lost, all causes (about the last 32).
    pub recent_loss: f64,
    /// Fraction lost to the link's impairment — losses that came with no queue (see
    /// [`Monitor::judge_loss`]); congestion losses are left out, as the path's own congestion
    /// control answers them. About the last 256 packets. This is the path's reliability for
    /// schedulers and admission.
    pub impairment_loss: f64,
    /// The same over about the last 32 packets.
    pub recent_impairment: f64,
    /// Packet outcomes (acknowledged or lost) counted so far.
    pub outcomes: u64,
    /// Outcomes counted in the impairment figures.
    pub impairment_outcomes: u64,
    /// RFC 3550-style jitter of RTT samples.
    pub jitter: Duration,
    last_rtt: Option<Duration>,
    rtts: [Duration; TREND_SAMPLES],
    rtt_count: usize,
    /// Loss discrimination switched on (seeds 001, 003).
    pub discriminate_loss: bool,
    /// Loss events classed as random (no queue, no growing trend).
    pub random_losses: u64,
    /// Loss events classed as congestion.
    pub congestion_losses: u64,
    /// The pair in flight.
    pub pair: Option<PairProbe>,
    /// Probe packets still to send for the next pair ([`Monitor::train`] when one is due).
    pub pair_due: u8,
    /// When the last pair was sent.
    pub pair_sent: Option<Timestamp>,
    /// A pair read a shaper's burst: measurements are trains of [`TRAIN_MAX`] from now on.
    pub long_train: bool,
}

fn ewma(v: &mut f64, x: f64, weight: f64, n: u64) {
    // A plain average until the window is full, so early figures are not biased to zero.
    *v += (x - *v) * weight.max(1.0 / n as f64);
}

impl Monitor {
    /// A packet was acknowledged (`lost == false`) or declared lost; `random` is the loss
    /// verdict ([`Monitor::judge_loss`]) for a lost one.
    pub fn on_packet_outcome(&mut self, lost: bool, random: bool) {
        let x = if lost { 1.0 } else { 0.0 };
        self.outcomes += 1;
        ewma(&mut self.loss_rate, x, LOSS_EWMA, self.outcomes);
        ewma(&mut self.recent_loss, x, RECENT_LOSS_EWMA, self.outcomes);
        if !lost || random {
            self.impairment_outcomes += 1;
            ewma(&mut self.impairment_loss, x, LOSS_EWMA, self.impairment_outcomes);
            ewma(&mut self.recent_impairment, x, RECENT_LOSS_EWMA, self.impairment_outcomes);
        }
    }

    /// A new RTT sample.
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        if let Some(prev) = self.last_rtt {
            // RFC 3550 §6.4.1: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16
            let d = rtt.abs_diff(prev).as_secs_f64();
            let j = self.jitter.as_secs_f64();
            self.jitter = Duration::from_secs_f64((j + (d - j) / 16.0).max(0.0));
        }
        self.last_rtt = Some(rtt);
        self.rtts[self.rtt_count % TREND_SAMPLES] = rtt;
        self.rtt_count += 1;
    }

    /// Probes per measurement: two, or [`TRAIN_MAX`] behind a shaper.
    pub fn train(&self) -> usize {
        if self.long_train {
            TRAIN_MAX
        } else {
            2
        }
    }

    /// Asks for a measurement now (path start): a train of [`TRAIN_MAX`], so that the first
    /// estimate is not a shaper's burst (see [`SHAPER_GAP_RATIO`]).
    pub fn request_pair(&mut self) {
        if self.pair.is_none() {
            self.pair_due = TRAIN_MAX as u8;
        }
    }

    /// Asks for a packet pair when one is due: the path is not saturated and the last pair is
    /// older than max(2 s, the interval that keeps pairs under 2% of its capacity). `estimate`
    /// is the path's, and `capacity` its value now.
    pub fn maybe_request_pair(
        &mut self,
        now: Timestamp,
        estimate: &CapacityEstimate,
        capacity: f64,
        mtu: usize,
    ) {
        if self.pair.is_some() && self.pair_sent.is_some_and(|t| now >= t + PAIR_TIMEOUT) {
            // A probe's timing never came back (an ACK that covered it with a later packet).
            self.pair = None;
        }
        if self.pair.is_some() || self.pair_due > 0 || estimate.saturated(now) {
            return;
        }
        // Until a first pair succeeded (a probe can be lost), retry at the shortest interval.
        let cost =
            Duration::from_secs_f64(self.train() as f64 * mtu as f64 / (PAIR_MAX_SHARE * capacity.max(1.0)));
        let interval = if estimate.packet_pair().is_none() {
            PAIR_MIN_INTERVAL
        } else {
            PAIR_MIN_INTERVAL.max(cost).min(PAIR_MAX_INTERVAL)
        };
        if self.pair_sent.is_none_or(|t| now >= t + interval) {
            self.pair_due = self.train() as u8;
        }
    }

    /// Records a probe packet of the pair as sent.
    pub fn on_pair_sent(&mut self, now: Timestamp, pn: u64, size: u64) {
        match (self.pair_due as usize, self.pair.as_mut()) {
            (0, _) => {}
            (due, None) => {
                self.pair = Some(PairProbe {
                    pns: [pn; TRAIN_MAX],
                    probes: due.min(TRAIN_MAX),
                    sent: 1,
                    size,
                    received: [None; TRAIN_MAX],
                    placed_by: [None; TRAIN_MAX],
                    gaps: [None; TRAIN_MAX - 1],
                })
            }
            (1.., Some(p)) if p.sent < p.probes => {
                p.pns[p.sent] = pn;
                p.sent += 1;
                p.size = size;
            }
            _ => {}
        }
        self.pair_due = self.pair_due.saturating_sub(1);
        self.pair_sent = Some(now);
    }

    /// An ACK frame whose largest packet number is `largest` arrived at `now` on path `via` and
    /// says the peer held it for `ack_delay`: if that is a probe of the pair, its arrival at the
    /// peer is placed on our clock (shifted by the return trip, the same for both probes when
    /// the peer reports them in one packet). A gap between two probes counts only when one ACK
    /// `packet` — (the path it came on, the session's count of packets received) — placed both:
    /// ACKs in two packets may come back on different paths (with ACKs offloaded to a fast
    /// path, a 100 Mbit/s path beside a 2 Mbit/s, 5 ms one was measured at 28 Mbit/s), or the
    /// first may wait behind data on its way back. Completes a sample when every gap is
    /// known — the widest (see [`TRAIN_MAX`]). A pair above [`BURST_RATIO`] times
    /// `delivered_peak` (the path's largest delivery rate, 0 if none) is a shaper's burst: it
    /// is dropped and a train of [`TRAIN_MAX`] is due at once. Returns a completed sample,
    /// bytes/s.
    pub fn on_ack_for_pair(
        &mut self,
        now: Timestamp,
        largest: u64,
        ack_delay: Duration,
        packet: (u8, u64),
        delivered_peak: f64,
    ) -> Option<f64> {
        let p = self.pair.as_mut()?;
        if p.sent < p.probes {
            return None; // not all probes sent yet
        }
        for i in 0..p.probes {
            if largest == p.pns[i] {
                p.received[i] = Some(now - ack_delay);
                p.placed_by[i] = Some(packet);
                // A gap counts only when both probes were placed by one ACK packet: then the
                // return trip is the same for both. Placed by two, the first ACK may have
                // waited behind data on its way back (seen in the simulator: a 2.56 ms gap,
                // 567 kB/s, on paths of at most 200 kbit/s).
                if i > 0 && p.placed_by[i - 1] == Some(packet) {
                    let (a, b) = (p.received[i - 1].unwrap_or_default(), now - ack_delay);
                    p.gaps[i - 1] = Some(b.saturating_since(a).as_secs_f64());
                }
            }
        }
        let n = p.probes;
        if !p.gaps[..n - 1].iter().all(Option::is_some) {
            return None;
        }
        let gap = p.gaps[..n - 1].iter().flatten().fold(0.0, |m: f64, g| m.max(*g));
        let narrowest = p.gaps[..n - 1].iter().flatten().fold(f64::MAX, |m: f64, g| m.min(*g));
        let size = p.size;
        self.pair = None;
        if n == TRAIN_MAX && gap > SHAPER_GAP_RATIO * narrowest.max(GAP_FLOOR) {
            tracing::debug!(gap, narrowest, "a train's gaps read a shaper: trains from now on");
            self.long_train = true;
        }
        // A gap below [`GAP_FLOOR`] counts as the floor (see there).
        let rate = size as f64 / gap.max(GAP_FLOOR);
        if n < TRAIN_MAX && delivered_peak > 0.0 && rate > BURST_RATIO * delivered_peak {
            tracing::debug!(rate, delivered_peak, "packet pair read a burst: trains from now on");
            self.long_train = true;
            self.pair_due = TRAIN_MAX as u8;
            return None;
        }
        Some(rate)
    }

    /// A probe of the pair was lost: the sample is abandoned.
    pub fn on_lost_for_pair(&mut self, pn: u64) {
        if self.pair.is_some_and(|p| p.pns.contains(&pn)) {
            self.pair = None;
        }
    }

    /// Loss discrimination (seed 001 §4.3: "If a loss is accompanied by a growing trend in the
    /// interarrival times, the loss is probably a congestion loss. If not, it is probably a
    /// transmission loss"; seed 003 §3.3: random losses are left alone). Returns whether the
    /// congestion controller should treat the loss as random — only when discrimination is on
    /// — and counts the verdict.
    pub fn classify_loss(&mut self, rtt: &RttEstimator) -> bool {
        let random = self.loss_looks_random(rtt);
        self.count_verdict(random);
        random
    }

    /// Counts a loss event's verdict (whichever judge gave it).
    pub fn count_verdict(&mut self, random: bool) {
        if random {
            self.random_losses += 1;
        } else {
            self.congestion_losses += 1;
        }
    }

    /// The verdict of [`Monitor::classify_loss`] without counting it (false when loss
    /// discrimination is off).
    pub fn loss_looks_random(&self, rtt: &RttEstimator) -> bool {
        self.discriminate_loss && self.judge_loss(rtt)
    }

    /// The rule itself. At the sender a queue shows in the RTT: a loss is random when the
    /// latest RTT is within max(2 ms, min RTT / 8) plus four jitters of the minimum and the last
    /// eight samples show no growing trend (they rose by less than half that slack overall, or
    /// fewer than three of the last four steps went up — the digest's A6 reading transposed
    /// to RTT samples).
    pub fn judge_loss(&self, rtt: &RttEstimator) -> bool {
        if !rtt.has_sample() {
            return false;
        }
        let slack = (rtt.min() / 8).max(QUEUE_SLACK_MIN) + 4 * self.jitter;
        rtt.latest() <= rtt.min() + slack && !self.rtt_trend(slack / 2)
    }

    /// True when the last RTT samples grew by more than `rise` overall and mostly step by step.
    fn rtt_trend(&self, rise: Duration) -> bool {
        if self.rtt_count < TREND_SAMPLES {
            return false;
        }
        let at = |back: usize| self.rtts[(self.rtt_count - 1 - back) % TREND_SAMPLES];
        let overall = at(0).saturating_sub(at(TREND_SAMPLES - 1));
        let ups = (0..4).filter(|&i| at(i) > at(i + 1)).count();
        overall > rise && ups >= 3
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_nanos(n * 1_000_000)
    }

    #[test]
    fn loss_rate_averages_before_the_window_fills() {
        let mut m = Monitor::default();
        for i in 0..100 {
            m.on_packet_outcome(i % 10 == 0, i % 20 == 0);
        }
        assert!((m.loss_rate - 0.1).abs() < 0.02, "{}", m.loss_rate);
        // Half the losses were congestion: the impairment figure counts the other half.
        assert!((m.impairment_loss - 5.0 / 95.0).abs() < 0.01, "{}", m.impairment_loss);
        for _ in 0..200 {
            m.on_packet_outcome(false, false);
        }
        assert!(m.recent_loss < 0.01 && m.loss_rate > 0.02, "{} {}", m.recent_loss, m.loss_rate);
    }

    /// Sends the probes of one periodic measurement (a pair, or a train behind a shaper) at
    /// `t` ms, numbered from `pn`.
    fn send_probes(m: &mut Monitor, t: u64, pn: u64) {
        m.pair_due = m.train() as u8;
        for i in 0..m.train() as u64 {
            m.on_pair_sent(ms(t), pn + i, 1452);
        }
        assert_eq!(m.pair_due, 0);
    }

    fn us(n: u64) -> Timestamp {
        Timestamp::from_nanos(n * 1000)
    }

    #[test]
    fn packet_pair_from_ack_gaps() {
        let mut m = Monitor::default();
        send_probes(&mut m, 0, 7);
        // The peer received them 1.452 ms apart (1 MB/s): its first ACK placed the first probe,
        // its second reports both, each with its own delay.
        assert_eq!(m.on_ack_for_pair(ms(30), 7, Duration::ZERO, (0, 1), 0.0), None);
        assert_eq!(m.on_ack_for_pair(us(31_552), 7, Duration::from_micros(1552), (0, 2), 0.0), None);
        let r = m.on_ack_for_pair(us(31_552), 8, Duration::from_micros(100), (0, 2), 0.0).unwrap();
        assert!((r - 1e6).abs() < 1e3, "{r}");
        assert!(m.pair.is_none());
    }

    #[test]
    fn a_first_train_with_unequal_gaps_finds_a_shaper() {
        // A path starts with a train of three. Behind a 50 kbit/s token bucket the first two
        // arrive together (one receive batch: a zero gap) and the third 232 ms later.
        let mut m = Monitor::default();
        m.request_pair();
        assert_eq!(m.pair_due as usize, TRAIN_MAX, "a path's first measurement is a train");
        for pn in 0..3 {
            m.on_pair_sent(ms(0), pn, 1452);
        }
        assert_eq!(m.on_ack_for_pair(us(10_000), 0, Duration::ZERO, (0, 1), 0.0), None);
        assert_eq!(m.on_ack_for_pair(us(242_000), 0, Duration::from_millis(232), (0, 2), 0.0), None);
        assert_eq!(m.on_ack_for_pair(us(242_000), 1, Duration::from_millis(232), (0, 2), 0.0), None);
        let r = m.on_ack_for_pair(us(242_000), 2, Duration::ZERO, (0, 2), 0.0).unwrap();
        assert!((r - 6259.0).abs() < 1.0, "{r} bytes/s: the widest gap, the shaped rate");
        assert!(m.long_train, "unequal gaps: trains from now on");
        assert_eq!(m.train(), TRAIN_MAX);
    }

    #[test]
    fn equal_gaps_keep_pairs_and_a_zero_gap_reads_the_floor() {
        // Behind a FIFO line the gaps of the first train are equal: pairs afterwards.
        let mut m = Monitor::default();
        m.request_pair();
        for pn in 0..3 {
            m.on_pair_sent(ms(0), pn, 1452);
        }
        for pn in 0..3 {
            let delay = Duration::from_micros(1452 * (2 - pn));
            let r = m.on_ack_for_pair(us(20_000), pn, delay, (0, 1), 0.0);
            assert_eq!(r.is_some(), pn == 2);
        }
        assert!(!m.long_train);
        assert_eq!(m.train(), 2);
        // Probes that arrive in one receive batch have one timestamp: the path is faster than
        // the receiver can time, and the sample says so (1 µs), rather than none at all.
        send_probes(&mut m, 100, 3);
        assert_eq!(m.on_ack_for_pair(ms(120), 3, Duration::ZERO, (0, 2), 0.0), None);
        let r = m.on_ack_for_pair(ms(120), 4, Duration::ZERO, (0, 2), 0.0).unwrap();
        assert_eq!(r, 1452.0 / GAP_FLOOR);
    }

    #[test]
    fn a_gap_from_two_ack_packets_is_not_a_sample() {
        // The first probe's ACK waited behind data on its way back; the second's did not: two
        // packets place them 2.56 ms apart. No sample until one packet places both.
        let mut m = Monitor::default();
        send_probes(&mut m, 0, 7);
        assert_eq!(m.on_ack_for_pair(ms(651), 7, Duration::ZERO, (0, 1), 0.0), None);
        assert_eq!(m.on_ack_for_pair(us(653_560), 8, Duration::ZERO, (0, 2), 0.0), None);
        assert!(m.pair.is_some(), "still waiting for a report of both");
        // Nor from ACKs that came back on different paths.
        let mut m = Monitor::default();
        send_probes(&mut m, 200, 11);
        assert_eq!(m.on_ack_for_pair(ms(210), 11, Duration::ZERO, (1, 5), 0.0), None);
        assert_eq!(m.on_ack_for_pair(ms(350), 12, Duration::ZERO, (0, 6), 0.0), None);
    }

    #[test]
    fn a_token_bucket_burst_moves_the_path_to_trains_of_three() {
        // A 50 kbit/s shaper with a full bucket passes two probes together (52 µs apart)
        // though the path delivered 6 kB/s: the pair is dropped, a train of three is due.
        let mut m = Monitor::default();
        send_probes(&mut m, 0, 7);
        assert_eq!(m.on_ack_for_pair(us(10_000), 7, Duration::ZERO, (0, 1), 6000.0), None);
        assert_eq!(
            m.on_ack_for_pair(us(10_052), 8, Duration::ZERO, (0, 1), 6000.0),
            None,
            "28 MB/s is a burst"
        );
        assert!(m.long_train && m.pair.is_none());
        assert_eq!(m.pair_due as usize, TRAIN_MAX, "a train at once");
        // The train: the first two pass together again, the third waits 232 ms for tokens;
        // each report places two probes.
        for pn in 9..12 {
            m.on_pair_sent(ms(100), pn, 1452);
        }
        assert_eq!(m.on_ack_for_pair(us(110_000), 9, Duration::ZERO, (0, 2), 6000.0), None);
        assert_eq!(m.on_ack_for_pair(us(110_052), 10, Duration::ZERO, (0, 2), 6000.0), None);
        assert_eq!(m.on_ack_for_pair(us(342_052), 10, Duration::from_millis(232), (0, 3), 6000.0), None);
        let r = m.on_ack_for_pair(us(342_052), 11, Duration::ZERO, (0, 3), 6000.0).unwrap();
        assert!((r - 6259.0).abs() < 1.0, "{r} bytes/s: the shaped rate");
        // Without a delivery rate to compare with (a fresh path), a pair is taken as it reads.
        let mut m = Monitor::default();
        send_probes(&mut m, 0, 7);
        assert_eq!(m.on_ack_for_pair(us(10_000), 7, Duration::ZERO, (0, 1), 0.0), None);
        assert!(m.on_ack_for_pair(us(10_052), 8, Duration::ZERO, (0, 1), 0.0).is_some());
        assert!(!m.long_train);
    }

    #[test]
    fn a_pair_is_due_only_on_an_unsaturated_path() {
        let mut m = Monitor { pair_sent: Some(ms(0)), ..Monitor::default() };
        let mut e = CapacityEstimate::default();
        e.on_packet_pair(ms(0), 1000.0);
        e.on_delivery_rate(ms(3000), 800.0, false);
        m.maybe_request_pair(ms(3100), &e, 1e6, 1452);
        assert_eq!(m.pair_due, 0, "a saturated path is measured by its delivery rate");
        m.maybe_request_pair(ms(5100), &e, 1e6, 1452);
        assert_eq!(m.pair_due, 2, "a fresh pair is due once the path is no longer saturated");
    }

    #[test]
    fn loss_discrimination_needs_no_queue_and_no_trend() {
        let mut rtt = RttEstimator::default();
        let mut m = Monitor { discriminate_loss: true, ..Monitor::default() };
        for _ in 0..10 {
            rtt.update(Duration::from_millis(40), Duration::ZERO);
            m.on_rtt_sample(Duration::from_millis(40));
        }
        assert!(m.classify_loss(&rtt));
        // A queue building: RTT rising step by step.
        for i in 1..=8 {
            let s = Duration::from_millis(40 + i);
            rtt.update(s, Duration::ZERO);
            m.on_rtt_sample(s);
        }
        assert!(!m.classify_loss(&rtt));
        assert_eq!((m.random_losses, m.congestion_losses), (1, 1));
        m.discriminate_loss = false;
        assert!(!m.loss_looks_random(&rtt));
    }
}
