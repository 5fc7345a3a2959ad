//! A path's one-way delays from the peer's ACK timestamps.
//!
//! An ACK_TS frame (a path's ACKs carry one at most every [`crate::timing::ACK_STAMP`]) holds
//! the receiver's clock when it was written ([`crate::wire::AckFrame::timestamp_us`]). Less
//! the ACK delay, that is when the largest
//! packet arrived, so `arrival − send time` is the packet's forward delay plus the offset
//! between the two clocks; `our arrival − the ACK's timestamp` is the ACK's return delay less
//! that offset. Their minima, less the transmission time of the packet that gave the forward
//! one, are its forward and return legs, each up to the offset. The minima are kept as LEDBAT
//! keeps its base delay (RFC 6817 §3.4.2): one per minute for the last [`HISTORY`] minutes, so
//! the clocks' drift and a lasting change of route age out.
//!
//! Why: a round trip includes the return route the *peer* chose for the ACKs, so half a round
//! trip misjudges a path whose ACKs come back on another path, and the receiver's choice of
//! that route moves every estimate built on it (docs/benchmarks.md, "Tried and backed out
//! (stop 47)"). The offset is the same for every path between the two hosts, so differences
//! of forward legs are exact; NTP's estimate (RFC 5905 §8: offset = ((T2 − T1) + (T3 − T4)) / 2)
//! over the path with the shortest round trip fixes the offset itself, assuming that path is
//! as fast one way as the other.

use crate::time::Timestamp;
use std::time::Duration;

/// Minutes of minima a leg remembers (LEDBAT's BASE_HISTORY, RFC 6817 §3.4.2).
pub const HISTORY: usize = 10;

/// How long one of those minima collects samples.
pub const BUCKET: Duration = Duration::from_secs(60);

/// The smallest samples of the last [`HISTORY`] buckets of [`BUCKET`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct MinHistory<T> {
    buckets: [Option<T>; HISTORY],
    /// The bucket now collecting, and when it began.
    current: usize,
    since: Timestamp,
    /// The smallest of the buckets (read for every packet the scheduler places).
    min: Option<T>,
}

impl<T: Ord + Copy> Default for MinHistory<T> {
    fn default() -> Self {
        MinHistory { buckets: [None; HISTORY], current: 0, since: Timestamp::ZERO, min: None }
    }
}

impl<T: Ord + Copy> MinHistory<T> {
    fn on_sample(&mut self, now: Timestamp, sample: T) {
        let elapsed = now.saturating_since(self.since);
        let rolled = self.min.is_none() || elapsed >= BUCKET;
        if self.min.is_none() || elapsed >= BUCKET * HISTORY as u32 {
            // The first sample, or silent for the whole history: start afresh.
            *self = Self { since: now, ..Self::default() };
        }
        while now.saturating_since(self.since) >= BUCKET {
            self.current = (self.current + 1) % HISTORY;
            self.buckets[self.current] = None;
            self.since += BUCKET;
        }
        let b = &mut self.buckets[self.current];
        *b = Some(b.map_or(sample, |m| m.min(sample)));
        self.min = if rolled {
            self.buckets.iter().flatten().copied().min()
        } else {
            self.min.map(|m| m.min(sample))
        };
    }

    fn min(&self) -> Option<T> {
        self.min
    }
}

/// The smallest forward and return samples of one path, microseconds, each off by the clock
/// offset (in opposite directions).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OneWay {
    /// min(peer's arrival time − our send time) of this path's packets, forward delay +
    /// offset, and the size of the packet that gave it (whose transmission it holds).
    forward: MinHistory<(i64, u32)>,
    /// min(our arrival time − the peer's ACK timestamp) of ACKs that came back on this path:
    /// return delay − offset.
    back: MinHistory<i64>,
    /// How much the forward samples vary, without the return route's variation.
    spread: Spread,
    /// The latest forward sample (forward delay + offset), µs.
    latest_forward: Option<i64>,
}

/// RFC 6298's smoothed mean and mean deviation (gains 1/8 and 1/4), kept over a path's forward
/// samples instead of its round trips: how much the one-way delay varies. The offset is the
/// same in every sample, so the deviation holds none of it; unlike RTTVAR it holds no
/// variation of the route the ACKs return on, which the receiver picks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Spread {
    /// Smoothed sample and mean deviation, µs.
    smoothed: i64,
    deviation: i64,
    /// Samples taken (saturating).
    samples: u32,
}

/// Forward samples before the deviation is trusted: the mean's time constant (gain 1/8).
const SPREAD_SAMPLES: u32 = 8;

impl Spread {
    fn on_sample(&mut self, sample: i64) {
        if self.samples == 0 {
            self.smoothed = sample;
        } else {
            let error = sample.saturating_sub(self.smoothed);
            self.deviation += (error.saturating_abs() - self.deviation) / 4;
            self.smoothed = self.smoothed.saturating_add(error / 8);
        }
        self.samples = self.samples.saturating_add(1);
    }

    fn deviation(&self) -> Option<Duration> {
        (self.samples >= SPREAD_SAMPLES).then(|| Duration::from_micros(self.deviation.max(0) as u64))
    }
}

/// Microseconds `a − b` of two clocks' readings, saturating.
pub fn difference_us(a: u64, b: u64) -> i64 {
    (i128::from(a) - i128::from(b)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

impl OneWay {
    /// A packet of `size` bytes sent at our `sent_us` that the peer received at its
    /// `received_us`, learnt at `now`.
    pub fn on_forward(&mut self, now: Timestamp, sent_us: u64, received_us: u64, size: u32) {
        let sample = difference_us(received_us, sent_us);
        self.forward.on_sample(now, (sample, size));
        self.spread.on_sample(sample);
        self.latest_forward = Some(sample);
    }

    /// How long the latest forward sample waited beyond the fastest of the window: the queue
    /// in front of this path's bottleneck, with neither the clock offset (the same in both)
    /// nor the route the ACKs came back on. None before a sample.
    pub fn forward_queue(&self) -> Option<Duration> {
        let (min, _) = self.forward.min()?;
        let q = self.latest_forward?.saturating_sub(min).max(0);
        Some(Duration::from_micros(q as u64))
    }

    /// How much the forward delay varies from sample to sample (RFC 6298's mean deviation
    /// over forward samples); None before `SPREAD_SAMPLES` (8) samples. What deadlines are
    /// judged late by when the receiver reports no jitter: half the RTT variation assumes both
    /// directions vary alike and holds the variation of the route the ACKs return on, which
    /// the receiver picks (a steady 40 ms path whose ACKs came back on a jittery one looked
    /// jittery itself, and the deadline scheduler left it: 1364 → 159 frames on time on
    /// `2mbit/10ms/jitter=60ms` + `2mbit/40ms` at 50 ms).
    pub fn forward_variation(&self) -> Option<Duration> {
        self.spread.deviation()
    }

    /// An ACK written at the peer's `stamped_us` that arrived on this path at `now`.
    pub fn on_back(&mut self, now: Timestamp, stamped_us: u64) {
        self.back.on_sample(now, difference_us(now.as_micros(), stamped_us));
    }

    /// The clock offset (peer − us, microseconds) by NTP's estimate over the path among
    /// `paths` with the shortest measured round trip; None until one path has both legs. Each
    /// path comes with its wire rate (bytes/s), if known ([`crate::path::Path::wire_rate`]).
    ///
    /// The forward minimum holds its packet's transmission and the return one an ACK's, so
    /// the estimate is off by about half the difference (for 1000 bytes at 1 Mbit/s, 4 ms)
    /// unless the transmission is taken out at the wire rate. The error moves every forward
    /// leg one way and every return leg the other alike, so EDPF, comparing paths, does not see
    /// it; a deadline, an absolute time, does: with it in, MMTP's deadline scheduler sent 514
    /// of 8775 frames late at 2 Mb/s offered to 1.3 Mb/s of links, with it out 70. Without a
    /// wire rate (a path the application never filled, whose estimate reads far off) it stays
    /// in: taken out at such a path's rate estimate, the error grew the other way (1805 → 806
    /// frames on time on seed 001's `2mbit/20ms/jitter=60ms` + `2mbit/40ms` at 50 ms).
    pub fn offset<'a, R: FnOnce() -> Option<f64>>(
        paths: impl IntoIterator<Item = (&'a OneWay, R)>,
    ) -> Option<i64> {
        // The wire rate is asked of the chosen path only (a capacity estimate per path per
        // packet showed on loopback's CPU per byte).
        let ((f, size), b, rate) = paths
            .into_iter()
            .filter_map(|(p, rate)| Some((p.forward.min()?, p.back.min()?, rate)))
            .min_by_key(|((f, _), b, _)| f.saturating_add(*b))?;
        let on_wire = rate().map_or(0, |r| (f64::from(size) / r.max(1.0) * 1e6) as i64);
        Some(((i128::from(f.saturating_sub(on_wire)) - i128::from(b)) / 2) as i64)
    }

    /// The return leg in microseconds given the clock `offset`, None before an ACK came back
    /// on this path.
    pub fn back_us(&self, offset: i64) -> Option<u64> {
        self.back.min().map(|b| b.saturating_add(offset).max(0) as u64)
    }

    /// The forward leg in microseconds given the clock `offset`, without the transmission of
    /// its packet at `rate` bytes/s (which the scheduler counts for each packet on its own):
    /// propagation plus whatever queue the fastest packet met. None before a sample.
    pub fn forward_us(&self, offset: i64, rate: f64) -> Option<u64> {
        let (f, size) = self.forward.min()?;
        let on_wire = (f64::from(size) / rate.max(1.0) * 1e6) as i64;
        Some(f.saturating_sub(offset).saturating_sub(on_wire).max(0) as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_us(us: u64) -> Timestamp {
        Timestamp::from_nanos(us * 1_000)
    }

    /// Paths of `(forward, back)` ms one-way delays seen from a peer whose clock reads
    /// `offset_ms` ahead (may be negative); returns the forward legs the sender derives.
    fn derive(legs: &[(u64, u64)], offset_ms: i64) -> Vec<Option<u64>> {
        let base: u64 = 1_000_000_000;
        let peer = |t: u64| (t as i64 + offset_ms * 1000) as u64;
        let mut ways = vec![OneWay::default(); legs.len()];
        for (w, &(fwd, back)) in ways.iter_mut().zip(legs) {
            // A packet sent at `base` arrives `fwd` later; an ACK written then arrives `back` later.
            let arrived = base + fwd * 1000;
            let returned = at_us(arrived + back * 1000);
            w.on_forward(returned, base, peer(arrived), 1000);
            w.on_back(returned, peer(arrived));
        }
        // 1000 bytes at 1 GB/s: 1 µs on the wire.
        let offset = OneWay::offset(ways.iter().map(|w| (w, || Some(1e9)))).expect("offset");
        ways.iter().map(|w| w.forward_us(offset, 1e9).map(|us| (us + 500) / 1000)).collect()
    }

    #[test]
    fn forward_legs_do_not_depend_on_the_clock_offset() {
        // The 5 ms path is symmetric and fastest; the others' forward legs need no symmetry.
        for offset in [0, 37, -5_000, 3_600_000] {
            assert_eq!(derive(&[(150, 150), (5, 5), (40, 10)], offset), [Some(150), Some(5), Some(40)]);
        }
    }

    #[test]
    fn the_offset_comes_from_the_shortest_round_trip() {
        // The slow path is asymmetric (100 out, 20 back); the fast one (5/5) fixes the offset,
        // so the slow path's forward leg is right although half its round trip (60) is not.
        assert_eq!(derive(&[(100, 20), (5, 5)], 250), [Some(100), Some(5)]);
    }

    #[test]
    fn minima_ignore_later_queues_and_transmission_is_taken_out() {
        let mut w = OneWay::default();
        let now = at_us(60_000);
        w.on_forward(now, 1_000, 11_000, 1000);
        w.on_forward(now, 2_000, 52_000, 1000); // 50 ms behind a queue
        w.on_forward(now, 3_000, 12_500, 500); // 9.5 ms, of which 0.5 ms on the wire at 1 MB/s
        w.on_back(now, 55_000);
        assert_eq!(w.forward.min(), Some((9_500, 500)));
        // The offset comes from the minima as they are: (9.5 − 5) / 2.
        assert_eq!(OneWay::offset([(&w, || None)]), Some(2_250));
        assert_eq!(OneWay::offset([(&OneWay::default(), || None)]), None);
        assert_eq!(w.forward_us(2_000, 1e6), Some(7_000));
        assert_eq!(w.back_us(2_000), Some(7_000));
        assert_eq!(w.forward_us(2_000, 1e3), Some(0), "a low rate takes out more");
        assert_eq!(w.forward_us(i64::MAX, 1e6), Some(0), "never negative");
    }

    #[test]
    fn the_forward_deviation_holds_neither_offset_nor_return_route() {
        let mut w = OneWay::default();
        // A peer clock an hour ahead, forward delays alternating 20 and 40 ms; the ACKs come
        // back on any route (no return sample enters).
        let hour = 3_600_000_000u64;
        let sample = |w: &mut OneWay, i: u64| {
            let sent = i * 5_000;
            let delay = if i.is_multiple_of(2) { 20_000 } else { 40_000 };
            w.on_forward(at_us(sent + 100_000), sent, hour + sent + delay, 1000);
        };
        for i in 0..SPREAD_SAMPLES as u64 - 1 {
            sample(&mut w, i);
            assert_eq!(w.forward_variation(), None, "too few samples");
        }
        for i in SPREAD_SAMPLES as u64 - 1..200 {
            sample(&mut w, i);
        }
        // The mean deviation of a ±10 ms square wave around its mean: 10 ms, give or take
        // the smoothed mean's own wobble.
        let d = w.forward_variation().expect("measured").as_micros();
        assert!((9_000..=12_000).contains(&d), "{d} µs");
        // A steady path: no variation whatever the offset.
        let mut s = OneWay::default();
        for i in 0..50u64 {
            s.on_forward(at_us(i * 5_000 + 100_000), i * 5_000, hour + i * 5_000 + 40_000, 1000);
        }
        assert_eq!(s.forward_variation(), Some(Duration::ZERO));
    }

    #[test]
    fn a_wire_rate_takes_transmission_out_of_the_offset() {
        // 20 ms each way; the forward minimum came from a 1000-byte packet at 125 kB/s (8 ms on
        // the wire), the return one from an ACK (nothing on the wire); the peer's clock reads
        // 5 ms ahead.
        let mut w = OneWay::default();
        let now = at_us(1_000_000);
        w.on_forward(now, 0, 5_000 + 28_000, 1000);
        w.on_back(at_us(900_000), 900_000 - 20_000 + 5_000);
        assert_eq!(OneWay::offset([(&w, || Some(125_000.0))]), Some(5_000));
        // Without a rate, half the transmission stays in: 4 ms off, and the forward leg 4 ms short.
        let off = OneWay::offset([(&w, || None)]).expect("offset");
        assert_eq!(off, 9_000);
        assert_eq!(w.forward_us(off, 125_000.0), Some(16_000));
        assert_eq!(w.forward_us(5_000, 125_000.0), Some(20_000));
    }

    #[test]
    fn a_minimum_ages_out_after_the_history() {
        let mut w = OneWay::default();
        w.on_back(at_us(0), 0); // 0 µs
        w.on_back(at_us(30_000_000), 29_990_000); // 10 ms
        assert_eq!(w.back.min(), Some(0));
        // Nine minutes on, the first minute still counts; ten minutes on it is gone and the
        // later samples (20 ms, every minute) hold the minimum.
        for minute in 1..=10u64 {
            let now = minute * 60_000_000;
            w.on_back(at_us(now), now - 20_000);
            let expect = if minute < HISTORY as u64 { 0 } else { 20_000 };
            assert_eq!(w.back.min(), Some(expect), "minute {minute}");
        }
        // After a silence longer than the history, only the new sample counts.
        let now = 40 * 60_000_000;
        w.on_back(at_us(now), now - 30_000);
        assert_eq!(w.back.min(), Some(30_000));
    }
}
