//! The receiving side of the two-sided channel monitor (seed 000 §III-B: "a two-sided channel
//! monitor (i.e., one side on the piconet and the other side at the proxy) … ensuring that the
//! proxy has reasonably current channel information"): what arrives on one path — packets
//! received and lost (gaps in its packet numbers), inter-arrival jitter, received rate — and,
//! for each gap, the inter-arrival loss verdict of seed 001 §4.3.
//!
//! **Loss verdict** (seed 001 §4.3, after its reference \[20\], Biaz and Vaidya): "the telltale
//! signs of congestion are an increase in the interarrival time seen by the receiver … If a
//! loss is accompanied by a growing trend in the interarrival times, the loss is probably a
//! congestion loss. If not, it is probably a transmission loss". A packet dropped by a full
//! queue leaves no hole in the arrivals (the queue goes on serving its neighbours back to
//! back); a packet lost on the wire behind the queue leaves a hole of its own transmission
//! time. So a gap of `n` packets is random when the packet after it arrived about `n + 1`
//! usual spacings after the one before it, and the spacings before it were not growing.

use crate::time::Timestamp;
use std::time::Duration;

/// Inter-arrival times kept for the trend test (seed 001 §4.2's "cumulative sum of jitters").
const TREND_SAMPLES: usize = 8;
/// Weight of one gap-free inter-arrival in the usual spacing.
const SPACING_EWMA: f64 = 1.0 / 16.0;
/// A gap of `n` is random when the hole measures at least `n + 1 - HOLE_SLACK` spacings…
const HOLE_SLACK: f64 = 0.5;
/// …and at most `n + 1 + HOLE_EXCESS` (Biaz and Vaidya's band is [n+1, n+2) minimum
/// spacings; a longer silence is the sender's or the queue's, not one packet's).
const HOLE_EXCESS: f64 = 1.5;
/// The spacings before a gap grew (a queue building) when they exceed the usual spacing by this
/// many spacings in total over the last [`TREND_SAMPLES`].
const TREND_RISE: f64 = 2.0;

/// Verdict on one gap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GapVerdict {
    /// The hole matches the missing packets and no queue was building: lost on the wire.
    Random,
    /// No hole, or a growing queue before it: dropped by congestion.
    Congestion,
}

/// Receive-side measurements of one path (cumulative since the path started, so that a lost
/// report costs nothing: the next one carries the same counters further).
#[derive(Debug, Clone, Default)]
pub struct Arrivals {
    /// Packets received.
    pub received: u64,
    /// Packets missing from the packet-number sequence (a late arrival fills its gap back).
    pub lost: u64,
    /// Missing packets in gaps judged random.
    pub random: u64,
    /// Missing packets in gaps judged congestion.
    pub congestion: u64,
    /// Bytes received.
    pub bytes: u64,
    /// Inter-arrival jitter: RFC 3550 §6.4.1's filter, J += (|D| − J)/16, over the change
    /// between consecutive inter-arrival times (braid's packets carry no send timestamp, so
    /// D is the difference of two inter-arrival times; for a steadily paced sender it is
    /// RFC 3550's D).
    pub jitter: Duration,
    first: Option<u64>,
    highest: Option<u64>,
    last_arrival: Option<Timestamp>,
    last_iat: Option<Duration>,
    /// The usual spacing of gap-free arrivals, seconds.
    spacing: f64,
    iats: [f64; TREND_SAMPLES],
    iat_count: usize,
}

impl Arrivals {
    /// An authenticated packet `pn` of `bytes` arrived at `now` (each packet number once: the
    /// replay window refuses duplicates). Returns the verdict when it closed a gap.
    pub fn on_packet(&mut self, now: Timestamp, pn: u64, bytes: u64) -> Option<GapVerdict> {
        self.received += 1;
        self.bytes += bytes;
        let first = *self.first.get_or_insert(pn);
        let Some(highest) = self.highest else {
            self.highest = Some(pn);
            self.last_arrival = Some(now);
            return None;
        };
        if pn <= highest {
            // Late: it fills a gap counted lost (packet numbers before the first are not ours).
            if pn > first {
                self.lost = self.lost.saturating_sub(1);
            }
            return None;
        }
        let missing = pn - highest - 1;
        let iat = now.saturating_since(self.last_arrival.unwrap_or(now));
        self.highest = Some(pn);
        self.last_arrival = Some(now);
        if let Some(prev) = self.last_iat {
            // RFC 3550 §6.4.1: J(i) = J(i-1) + (|D(i-1,i)| - J(i-1))/16
            let d = iat.abs_diff(prev).as_secs_f64();
            let j = self.jitter.as_secs_f64();
            self.jitter = Duration::from_secs_f64((j + (d - j) / 16.0).max(0.0));
        }
        self.last_iat = Some(iat);
        if missing == 0 {
            self.on_spacing(iat.as_secs_f64());
            return None;
        }
        self.lost += missing;
        let verdict = self.judge(missing, iat);
        match verdict {
            GapVerdict::Random => self.random += missing,
            GapVerdict::Congestion => self.congestion += missing,
        }
        Some(verdict)
    }

    fn on_spacing(&mut self, iat: f64) {
        if self.iat_count == 0 {
            self.spacing = iat;
        } else {
            self.spacing += (iat - self.spacing) * SPACING_EWMA;
        }
        self.iats[self.iat_count % TREND_SAMPLES] = iat;
        self.iat_count += 1;
    }

    /// The verdict on a gap of `missing` packets closed by a packet that came `iat` after the
    /// one before the gap (see the module docs). Without a usual spacing yet: congestion, the
    /// cautious answer.
    pub fn judge(&self, missing: u64, iat: Duration) -> GapVerdict {
        if self.iat_count < TREND_SAMPLES || self.spacing <= 0.0 {
            return GapVerdict::Congestion;
        }
        let holes = iat.as_secs_f64() / self.spacing;
        let slots = missing as f64 + 1.0;
        let hole_fits = holes >= slots - HOLE_SLACK && holes < slots + HOLE_EXCESS;
        if hole_fits && !self.growing() {
            GapVerdict::Random
        } else {
            GapVerdict::Congestion
        }
    }

    /// Seed 001 §4.2: "If a cumulative sum of jitters is maintained, it hovers around zero …
    /// If the cumulative sum does not cancel out … traffic shaping is happening at a router on
    /// the path, with the resulting queues."
    fn growing(&self) -> bool {
        let n = self.iat_count.min(TREND_SAMPLES);
        let sum: f64 = self.iats[..n].iter().map(|iat| iat - self.spacing).sum();
        sum > TREND_RISE * self.spacing
    }

    /// True once anything arrived.
    pub fn any(&self) -> bool {
        self.received > 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn us(n: u64) -> Timestamp {
        Timestamp::from_nanos(n * 1000)
    }

    /// Packets every 1 ms; `skip` packet numbers are lost on the wire (their slots stay
    /// empty), so the next arrival comes `skip + 1` spacings later: random.
    #[test]
    fn a_hole_in_steady_arrivals_is_random() {
        let mut a = Arrivals::default();
        for pn in 0..20 {
            assert_eq!(a.on_packet(us(pn * 1000), pn, 1200), None);
        }
        // Packets 20 and 21 lost on the wire: 22 arrives in its own slot.
        assert_eq!(a.on_packet(us(22_000), 22, 1200), Some(GapVerdict::Random));
        assert_eq!((a.lost, a.random, a.congestion), (2, 2, 0));
        // A late 21 fills its gap back.
        a.on_packet(us(22_500), 21, 1200);
        assert_eq!(a.lost, 1);
    }

    /// A full queue drops a packet but goes on serving the others back to back: the next one
    /// arrives one spacing later — congestion.
    #[test]
    fn a_gap_without_a_hole_is_congestion() {
        let mut a = Arrivals::default();
        for pn in 0..20 {
            a.on_packet(us(pn * 1000), pn, 1200);
        }
        assert_eq!(a.on_packet(us(20_000), 21, 1200), Some(GapVerdict::Congestion));
        assert_eq!((a.random, a.congestion), (0, 1));
    }

    /// Spacings growing before the gap (a queue building behind cross traffic): congestion,
    /// even though the hole fits.
    #[test]
    fn a_growing_trend_before_the_gap_is_congestion() {
        let mut a = Arrivals::default();
        let mut t = 0;
        for pn in 0..20 {
            a.on_packet(us(t), pn, 1200);
            t += 1000;
        }
        for pn in 20..28 {
            t += 1000 + (pn - 19) * 150;
            a.on_packet(us(t), pn, 1200);
        }
        let hole = 2 * (a.spacing * 1e6) as u64;
        assert_eq!(a.on_packet(us(t + hole), 29, 1200), Some(GapVerdict::Congestion));
    }

    #[test]
    fn jitter_follows_rfc3550_filter() {
        let mut a = Arrivals::default();
        // Alternating 1 ms / 3 ms spacings: |D| = 2 ms each time, J tends to 2 ms.
        let mut t = 0;
        for pn in 0..200 {
            t += if pn % 2 == 0 { 1000 } else { 3000 };
            a.on_packet(us(t), pn, 100);
        }
        assert!((a.jitter.as_secs_f64() - 0.002).abs() < 1e-4, "{:?}", a.jitter);
        assert_eq!(a.received, 200);
        assert_eq!(a.bytes, 20_000);
    }
}
