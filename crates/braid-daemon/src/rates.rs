//! Per-path rates for the status document, from byte counters over a window of
//! [`RATE_WINDOW`], not from the last publication alone.
//!
//! The driver publishes its status every 500 ms and also at once on events (a path validated,
//! a scheduler switch). A rate over "since the last publication" was a 0.5 s window at best and
//! a few milliseconds at worst: readers sampling once a second saw 0 while megabytes arrived
//! between samples, and a publication right after an event turned one burst into a rate far
//! above the link's. Here every publication records the counters, and a rate is the change
//! over the samples of the last [`RATE_WINDOW`] (at least [`MIN_SPAN`] of them).

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

/// The span rates are averaged over.
pub const RATE_WINDOW: Duration = Duration::from_secs(2);
/// A shorter span gives no rate yet (the first publications of a path).
pub const MIN_SPAN: Duration = Duration::from_millis(200);

/// One path's counters at a publication.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Counters {
    /// UDP payload bytes sent.
    pub sent: u64,
    /// UDP payload bytes received.
    pub received: u64,
    /// New stream bytes received (goodput).
    pub stream_received: u64,
}

/// Rates of one path, bit/s.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Rates {
    /// Sending (UDP payload).
    pub send_bps: f64,
    /// Receiving (UDP payload).
    pub recv_bps: f64,
    /// New stream bytes received.
    pub goodput_bps: f64,
}

/// Recent counter samples of every path of a session.
#[derive(Debug, Default)]
pub struct RateMemory {
    samples: BTreeMap<u8, VecDeque<(Instant, Counters)>>,
}

impl RateMemory {
    /// Records path `id`'s counters at `now` and returns its rates over the window.
    pub fn record(&mut self, id: u8, now: Instant, c: Counters) -> Rates {
        let q = self.samples.entry(id).or_default();
        q.push_back((now, c));
        // Keep the newest sample at least a window old as the base; drop older ones.
        while q.len() > 2 && now.duration_since(q[1].0) >= RATE_WINDOW {
            q.pop_front();
        }
        let (t0, base) = q[0];
        let span = now.duration_since(t0);
        if span < MIN_SPAN {
            return Rates::default();
        }
        let rate = |now: u64, before: u64| now.saturating_sub(before) as f64 * 8.0 / span.as_secs_f64();
        Rates {
            send_bps: rate(c.sent, base.sent),
            recv_bps: rate(c.received, base.received),
            goodput_bps: rate(c.stream_received, base.stream_received),
        }
    }

    /// Forgets paths that are gone.
    pub fn retain(&mut self, alive: impl Fn(u8) -> bool) {
        self.samples.retain(|id, _| alive(*id));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(n: u64) -> Counters {
        Counters { sent: n, received: 2 * n, stream_received: n / 2 }
    }

    #[test]
    fn a_publication_right_after_another_does_not_spike() {
        let mut m = RateMemory::default();
        let t = Instant::now();
        // 1 MB/s steadily, published every 500 ms.
        for k in 0..=4u64 {
            m.record(0, t + Duration::from_millis(500 * k), bytes(500_000 * k));
        }
        // An event publishes 5 ms later, after a 50 kB burst: 80 Mbit/s over those 5 ms, but
        // the window says what the path carried.
        let r = m.record(0, t + Duration::from_millis(2005), bytes(2_050_000));
        assert!((r.send_bps - 8.2e6).abs() < 0.2e6, "{r:?}");
        assert!((r.recv_bps - 2.0 * r.send_bps).abs() < 1.0, "{r:?}");
        assert!((r.goodput_bps - r.send_bps / 2.0).abs() < 1.0, "{r:?}");
    }

    #[test]
    fn bursts_between_samples_are_not_lost() {
        let mut m = RateMemory::default();
        let t = Instant::now();
        m.record(0, t, bytes(0));
        // 8.5 MB arrive in a burst, then nothing for a second.
        m.record(0, t + Duration::from_millis(500), bytes(8_500_000));
        let r = m.record(0, t + Duration::from_millis(1500), bytes(8_500_000));
        assert!((r.send_bps - 8_500_000.0 * 8.0 / 1.5).abs() < 1.0, "{r:?}");
        // Two windows later the burst has left the average.
        m.record(0, t + Duration::from_millis(3600), bytes(8_500_000));
        let r = m.record(0, t + Duration::from_millis(4000), bytes(8_500_000));
        assert_eq!(r.send_bps, 0.0);
    }

    #[test]
    fn no_rate_before_a_span_and_gone_paths_forgotten() {
        let mut m = RateMemory::default();
        let t = Instant::now();
        assert_eq!(m.record(3, t, bytes(10)), Rates::default());
        assert_eq!(m.record(3, t + Duration::from_millis(10), bytes(1_000_000)), Rates::default());
        m.retain(|id| id != 3);
        assert!(m.samples.is_empty());
        // Counters that went backwards (a new path under an old id) give 0, not a wrap.
        m.record(1, t, bytes(1_000));
        let r = m.record(1, t + Duration::from_secs(1), bytes(10));
        assert_eq!(r.send_bps, 0.0);
    }
}
