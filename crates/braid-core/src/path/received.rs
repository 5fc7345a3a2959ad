//! What a path has received: packet numbers to acknowledge, when an ACK is due, and the
//! anti-replay window.

use crate::crypto::replay::{ReplayError, ReplayWindow};
use crate::monitor::TRAIN_MAX;
use crate::ranges::RangeSet;
use crate::time::Timestamp;
use std::time::Duration;

/// ACK ranges kept per path; older ranges are dropped (their packets were long since acked).
const MAX_RANGES: usize = 32;
/// RFC 9000 §13.2.2: "an ACK frame SHOULD be sent after receiving at least two ack-eliciting
/// packets".
const ACK_ELICITING_THRESHOLD: u32 = 2;
use crate::timing::{ACK_STAMP, RATE_INTERVAL, RATE_STALE};

/// Receive state of one path.
#[derive(Debug, Default)]
pub struct Received {
    ranges: RangeSet,
    largest_time: Option<Timestamp>,
    eliciting_since_ack: u32,
    /// There are packet numbers not yet reported in an ACK.
    pending: bool,
    /// Send an ACK right away (reordering, or an ack-eliciting threshold was reached).
    immediate: bool,
    /// When the delayed ACK must leave.
    deadline: Option<Timestamp>,
    /// The latest run of packet-pair probes received back to back (consecutive packet
    /// numbers), the last [`TRAIN_MAX`] of them.
    probe_run: ProbeRun,
    /// A run of two or more probes whose ACK has not left yet: each probe is reported with its
    /// own delay.
    pair_report: Option<ProbeRun>,
    replay: ReplayWindow,
    /// Start of the current arrival-rate interval and packets counted in it.
    interval: Option<(Timestamp, u32)>,
    /// Packets per second over the last full interval.
    packet_rate: f64,
    /// A packet arrived out of order since the last ACK: the next one carries news beyond the
    /// cumulative point (seed 003's ACK Marker: not replaceable).
    reordered: bool,
    /// When an ACK of this path last carried a timestamp (ACK_TS).
    last_stamp: Option<Timestamp>,
}

/// Probes received back to back, oldest first: at most [`TRAIN_MAX`], the latest ones.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ProbeRun {
    probes: [(u64, Timestamp); TRAIN_MAX],
    len: usize,
}

impl ProbeRun {
    /// Probe `pn` arrived at `now`: it extends the run when it follows the last probe, and
    /// starts a new run otherwise.
    fn push(&mut self, pn: u64, now: Timestamp) {
        let follows = self.len > 0 && self.probes[self.len - 1].0 + 1 == pn;
        if !follows {
            self.len = 0;
        } else if self.len == TRAIN_MAX {
            self.probes.rotate_left(1);
            self.len -= 1;
        }
        self.probes[self.len] = (pn, now);
        self.len += 1;
    }

    /// The probes, oldest first: (packet number, arrival).
    pub fn probes(&self) -> &[(u64, Timestamp)] {
        &self.probes[..self.len]
    }
}

impl Received {
    /// The largest packet number authenticated so far.
    pub fn largest(&self) -> Option<u64> {
        self.replay.highest()
    }

    /// Anti-replay check before decryption.
    pub fn check(&self, pn: u64) -> Result<(), ReplayError> {
        self.replay.check(pn)
    }

    /// The anti-replay window.
    pub fn replay(&self) -> &ReplayWindow {
        &self.replay
    }

    /// Carries on the replay window of a closed path with the same id, so that its recorded
    /// packets stay refused.
    pub fn resume(&mut self, replay: ReplayWindow) {
        self.replay = replay;
    }

    /// Records an authenticated packet.
    pub fn on_packet(&mut self, now: Timestamp, pn: u64, ack_eliciting: bool, max_ack_delay: Duration) {
        let in_order = self.replay.highest().is_none_or(|h| pn == h + 1);
        self.replay.commit(pn);
        self.ranges.insert_one(pn);
        self.ranges.keep_highest(MAX_RANGES);
        if self.ranges.max() == Some(pn) {
            self.largest_time = Some(now);
        }
        self.pending = true;
        self.count_arrival(now);
        if ack_eliciting {
            self.eliciting_since_ack += 1;
            // RFC 9000 §13.2.1: acknowledge out-of-order packets immediately.
            if !in_order || self.eliciting_since_ack >= ACK_ELICITING_THRESHOLD {
                self.immediate = true;
            }
            self.reordered |= !in_order;
            self.deadline.get_or_insert(now + max_ack_delay);
        }
    }

    fn count_arrival(&mut self, now: Timestamp) {
        let (start, n) = self.interval.get_or_insert((now, 0));
        let elapsed = now.saturating_since(*start);
        if elapsed >= RATE_INTERVAL {
            self.packet_rate = f64::from(*n) / elapsed.as_secs_f64();
            self.interval = Some((now, 1));
        } else {
            *n += 1;
        }
    }

    /// Packets per second arriving on the path (over the last 200 ms interval; zero once it
    /// has been silent for a second): what its ACKs cost the path that carries them.
    pub fn packet_rate(&self, now: Timestamp) -> f64 {
        match self.interval {
            Some((start, _)) if now.saturating_since(start) < RATE_STALE => self.packet_rate,
            _ => 0.0,
        }
    }

    /// A packet-pair probe (PING and PADDING only) arrived: it is acknowledged right away, and
    /// when it extends a run (the previous packet was a probe too), the next ACK reports every
    /// probe of the run, each with its own delay, so that the sender reads the gaps between
    /// the arrivals from one packet, untouched by the return trip. Every probe and not only
    /// the earlier ones: data that arrives right behind the last probe, before the ACK leaves,
    /// becomes the ACK's largest, and then a pair on a busy path never completed (the lab's
    /// 100 Mbit/s path beside 50 kbit/s had no pair in 20 s, both directions, and EDPF held it
    /// at its first delivery rate, 3 kbit/s).
    pub fn on_probe(&mut self, now: Timestamp, pn: u64) {
        if self.pending {
            self.immediate = true;
        }
        self.probe_run.push(pn, now);
        if self.probe_run.len >= 2 {
            self.pair_report = Some(self.probe_run);
        }
    }

    /// The run of probes to report, oldest first: (packet number, arrival) each.
    pub fn take_pair_report(&mut self) -> Option<ProbeRun> {
        self.pair_report.take()
    }

    /// True when an ACK should be sent now.
    pub fn ack_due(&self, now: Timestamp) -> bool {
        self.pending && (self.immediate || self.deadline.is_some_and(|d| d <= now))
    }

    /// True when there is something an ACK could report.
    pub fn has_pending(&self) -> bool {
        self.pending
    }

    /// True when ack-eliciting packets arrived since the last ACK (worth piggybacking).
    pub fn has_pending_eliciting(&self) -> bool {
        self.pending && self.eliciting_since_ack > 0
    }

    /// True when an ACK should be written now: it is due, or (with `all_pending`) an
    /// ack-eliciting packet is still unacknowledged.
    pub fn ack_wanted(&self, now: Timestamp, all_pending: bool) -> bool {
        self.ack_due(now) || (all_pending && self.has_pending_eliciting())
    }

    /// When a delayed ACK must leave, if one is waiting.
    pub fn ack_deadline(&self) -> Option<Timestamp> {
        if self.pending {
            self.deadline
        } else {
            None
        }
    }

    /// Ranges to report (descending) and the ACK delay, marking them reported.
    pub fn take_ack(&mut self, now: Timestamp) -> Option<(Vec<std::ops::Range<u64>>, u64)> {
        self.on_ack_sent();
        self.peek_ack(now)
    }

    /// The ranges an ACK reports, highest first, without allocating (the sender writes them
    /// straight into the packet); empty when nothing was received.
    pub fn ack_ranges(&self) -> impl Iterator<Item = std::ops::Range<u64>> + Clone + '_ {
        self.ranges.iter().rev()
    }

    /// The ACK delay to report at `now`.
    pub fn ack_delay(&self, now: Timestamp) -> u64 {
        self.largest_time.map_or(0, |t| (now - t).as_micros() as u64)
    }

    /// True when the ACK written at `now` should carry the receiver's clock (ACK_TS): the
    /// first, then one per [`ACK_STAMP`]. The sender keeps minima of the one-way samples they
    /// give (`path::one_way`), which need no more.
    pub fn stamp_due(&self, now: Timestamp) -> bool {
        self.last_stamp.is_none_or(|t| now.saturating_since(t) >= ACK_STAMP)
    }

    /// An ACK left at `now`, with a timestamp when `stamped`: nothing is due until the next
    /// packet arrives.
    pub fn on_ack_sent_at(&mut self, now: Timestamp, stamped: bool) {
        if stamped {
            self.last_stamp = Some(now);
        }
        self.on_ack_sent();
    }

    /// An ACK left: nothing is due until the next packet arrives.
    pub fn on_ack_sent(&mut self) {
        self.pending = false;
        self.immediate = false;
        self.deadline = None;
        self.eliciting_since_ack = 0;
        self.reordered = false;
    }

    /// True when the due ACK only moves the cumulative point and a newer one will supersede
    /// it (seed 003 §4.2, the ACK Marker's "replaceable"): it is due by the ack-eliciting
    /// threshold, its packets arrived in order, no packet-pair report waits, and its delay
    /// deadline has not passed.
    pub fn replaceable(&self, now: Timestamp) -> bool {
        self.pending
            && self.immediate
            && !self.reordered
            && self.pair_report.is_none()
            && self.deadline.is_some_and(|d| d > now)
    }

    /// A replaceable ACK was dropped (seed 003's Offloader, short of capacity on the
    /// secondary): the next ACK supersedes it — after the next ack-eliciting threshold, or at
    /// the latest at the unchanged delay deadline, so an ACK is never later than
    /// `max_ack_delay`.
    pub fn on_ack_replaced(&mut self) {
        self.immediate = false;
        self.eliciting_since_ack = 0;
    }

    /// The ACK as it stands, leaving it due: a copy sent on a second path.
    pub fn peek_ack(&self, now: Timestamp) -> Option<(Vec<std::ops::Range<u64>>, u64)> {
        if self.ranges.is_empty() {
            return None;
        }
        let delay = self.largest_time.map_or(0, |t| (now - t).as_micros() as u64);
        Some((self.ranges.iter().rev().collect(), delay))
    }

    /// An ACK we sent that covered up to `largest` was itself acknowledged: older ranges need
    /// not be repeated (RFC 9000 §13.2.4).
    pub fn on_ack_acked(&mut self, largest: u64) {
        self.ranges.remove_below(largest.saturating_sub(1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_replaceable_ack_leaves_by_its_deadline() {
        let t0 = Timestamp::from_duration(Duration::from_secs(1));
        let ms = |m: u64| t0 + Duration::from_millis(m);
        let delay = Duration::from_millis(25);
        let mut r = Received::default();
        r.on_packet(t0, 0, true, delay);
        r.on_packet(ms(1), 1, true, delay);
        assert!(r.ack_due(ms(1)) && r.replaceable(ms(1)));
        r.on_ack_replaced();
        assert!(!r.ack_due(ms(2)) && r.has_pending());
        // The next threshold makes a newer ACK due.
        r.on_packet(ms(3), 2, true, delay);
        r.on_packet(ms(4), 3, true, delay);
        assert!(r.ack_due(ms(4)));
        r.on_ack_replaced();
        // Without newer packets the ACK still leaves at the first packet's deadline, and is
        // no longer replaceable then.
        assert!(!r.ack_due(ms(24)) && r.ack_due(ms(25)) && !r.replaceable(ms(25)));
        r.on_ack_sent();
        // A gap makes the next ACK carry more than the cumulative point.
        r.on_packet(ms(30), 5, true, delay);
        assert!(r.ack_due(ms(30)) && !r.replaceable(ms(30)));
    }

    #[test]
    fn delayed_and_immediate_acks() {
        let mad = Duration::from_millis(25);
        let t = |ms: u64| Timestamp::from_nanos(ms * 1_000_000);
        let mut r = Received::default();
        r.on_packet(t(0), 0, true, mad);
        assert!(!r.ack_due(t(10)));
        assert!(r.ack_due(t(25)));
        r.on_packet(t(1), 1, true, mad);
        assert!(r.ack_due(t(1)));
        let (ranges, _) = r.take_ack(t(2)).unwrap();
        assert_eq!(ranges, vec![0..2]);
        assert!(!r.ack_due(t(100)));
        r.on_packet(t(3), 5, true, mad); // gap: immediate
        assert!(r.ack_due(t(3)));
        assert_eq!(r.take_ack(t(3)).unwrap().0, vec![5..6, 0..2]);
        r.on_ack_acked(5);
        assert_eq!(r.take_ack(t(4)).unwrap().0, vec![5..6]);
        assert!(r.check(5).is_err());
    }

    fn us(n: u64) -> Timestamp {
        Timestamp::from_nanos(n * 1000)
    }

    #[test]
    fn a_pair_reports_both_probes_even_with_data_behind_them() {
        let (mut r, mad, t) = (Received::default(), Duration::from_millis(25), us);
        r.on_packet(t(0), 7, true, mad);
        r.on_probe(t(0), 7);
        assert_eq!(r.take_pair_report(), None, "one probe is not a pair");
        r.on_packet(t(116), 8, true, mad);
        r.on_probe(t(116), 8);
        // Data arrives right behind the second probe, before the ACK leaves: the ACK's
        // largest is 9, so the second probe must be reported on its own too.
        r.on_packet(t(230), 9, true, mad);
        let run = r.take_pair_report().expect("a pair");
        assert_eq!(run.probes(), &[(7, t(0)), (8, t(116))]);
        assert_eq!(r.take_pair_report(), None, "reported once");
    }

    #[test]
    fn a_train_reports_its_latest_probes_and_a_gap_starts_a_new_run() {
        let (mut r, mad, t) = (Received::default(), Duration::from_millis(25), us);
        for pn in 1..=4 {
            r.on_packet(t(pn * 100), pn, true, mad);
            r.on_probe(t(pn * 100), pn);
        }
        let run = r.take_pair_report().expect("a train");
        assert_eq!(run.probes(), &[(2, t(200)), (3, t(300)), (4, t(400))], "the last three");
        // Probe 6 does not follow probe 4 (packet 5 was data): a run of one, no report.
        r.on_packet(t(500), 5, true, mad);
        r.on_packet(t(600), 6, true, mad);
        r.on_probe(t(600), 6);
        assert_eq!(r.take_pair_report(), None);
        r.on_packet(t(700), 7, true, mad);
        r.on_probe(t(700), 7);
        assert_eq!(r.take_pair_report().expect("a pair").probes(), &[(6, t(600)), (7, t(700))]);
    }
}
