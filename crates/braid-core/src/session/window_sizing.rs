//! Receive windows sized from the measured delay skew (seed 004 §V, Figs. 6–10: the receiver
//! must hold what the faster routes deliver while a slower route's packet is on its way, so the
//! buffer it needs grows with the rates and with the difference of the routes' delays).
//!
//! A stream striped over paths stays in flow-control credit only if the window covers what
//! arrives between the sender sending a byte on the slowest path and the receiver's credit
//! for it getting back: the aggregate rate R × (largest delay − smallest + a round trip of the
//! fastest path). Credit is re-granted when half a window has been read, so the window granted
//! is twice that:
//!
//! ```text
//! window = 2 · R · ((max_j minRTT_j − min_j minRTT_j) + min_j sRTT_j)
//! ```
//!
//! The receiver measures all of it live: R is the largest arrival rate of new stream bytes over
//! 100 ms in the last [`RATE_MEMORY`] ticks; the skew is the spread of its own minimum RTTs
//! of the answering paths meant for data (status active), and the round trip the smallest of
//! their smoothed RTTs (the acknowledgements of its packets cross the sender's queues, so
//! queueing is included). The skew is taken from minimum RTTs because the receiver sends few
//! ack-eliciting packets on a path that does not carry its ACKs, and a smoothed RTT of a
//! handful of samples was seen to stay 300 ms off for seconds. (With ACKs on the lowest-RTT
//! path the RTT difference is the one-way delay difference; with same-path ACKs it is twice
//! that, a safe over-estimate.) Every such path counts, not only those that carried data lately: a window
//! too small for the slow path's skew keeps EDPF from sending on it at all (it has nothing
//! far enough ahead to give it), so its skew would never be measured. A window that throttles
//! the sender lowers R, but the factor two still grows it to twice what the measured rate
//! needs, so a throttled window doubles each round until it no longer throttles.
//!
//! The configured `stream_window` and `session_window` are the floor (small skews behave as
//! before) and `receive_window_cap` the ceiling (memory); a cap at or below the configured
//! windows keeps them fixed.

use super::Session;
use crate::path::PathState;
use crate::time::Timestamp;
use crate::wire::PathStatusKind;
use std::collections::VecDeque;
use std::time::Duration;

/// Rate samples (one per housekeeping tick, 100 ms) the sizing remembers: the window follows a
/// drop of rate within about two seconds (seed 004 Fig. 11's unsteady period is 0–7 s).
pub const RATE_MEMORY: usize = 20;

/// The window the receiver should grant for `rate` bytes/s over paths whose delays differ by
/// `skew` and whose fastest round trip is `rtt`: twice `rate × (skew + rtt)` (see the module
/// doc).
pub fn needed_window(rate: f64, skew: Duration, rtt: Duration) -> u64 {
    (2.0 * rate.max(0.0) * (skew + rtt).as_secs_f64()).ceil() as u64
}

/// `needed` kept between the configured window (`floor`) and `cap`; a cap below the floor
/// leaves the floor.
pub fn sized(needed: u64, floor: u64, cap: u64) -> u64 {
    needed.min(cap).max(floor)
}

/// What the receiver measures for the sizing.
#[derive(Debug, Default)]
pub(super) struct WindowSizing {
    /// When the last sample was taken, and the stream bytes received by then.
    last: Option<(Timestamp, u64)>,
    /// Arrival rates, bytes/s, newest last.
    rates: VecDeque<f64>,
}

impl WindowSizing {
    /// Records the arrival rate since the last sample.
    fn sample(&mut self, now: Timestamp, received: u64) {
        if let Some((t, bytes)) = self.last {
            let dt = (now - t).as_secs_f64();
            if dt > 0.0 {
                if self.rates.len() == RATE_MEMORY {
                    self.rates.pop_front();
                }
                self.rates.push_back(received.saturating_sub(bytes) as f64 / dt);
            }
        }
        self.last = Some((now, received));
    }

    /// The largest recent arrival rate, bytes/s.
    fn rate(&self) -> f64 {
        self.rates.iter().copied().fold(0.0, f64::max)
    }
}

impl Session {
    /// Sizes the receive windows from the measured rate and skew (housekeeping, every 100 ms).
    pub(super) fn size_receive_windows(&mut self, now: Timestamp) {
        let cap = self.config.receive_window_cap;
        let (stream_floor, session_floor) = (self.config.stream_window, self.config.session_window);
        if cap <= stream_floor && cap <= session_floor {
            return;
        }
        let received = self.streams.flow().2;
        self.window_sizing.sample(now, received);
        let data_paths = self.paths.iter().filter(|p| {
            p.state == PathState::Active && p.status() == PathStatusKind::Active && p.rtt.has_sample()
        });
        let (mut lo, mut hi, mut rtt) = (Duration::MAX, Duration::ZERO, Duration::MAX);
        for p in data_paths {
            lo = lo.min(p.rtt.min());
            hi = hi.max(p.rtt.min());
            rtt = rtt.min(p.rtt.smoothed());
        }
        if hi.is_zero() {
            return;
        }
        let needed = needed_window(self.window_sizing.rate(), hi - lo, rtt);
        self.streams.set_receive_windows(sized(needed, stream_floor, cap), sized(needed, session_floor, cap));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn window_covers_twice_rate_times_skew_plus_round_trip() {
        // 12.5 MB/s (100 Mbit/s) over paths of 10 ms and 300 ms RTT: skew 290 ms plus the fast
        // round trip, 300 ms: 3.75 MB needed, 7.5 MB granted.
        assert_eq!(needed_window(12.5e6, ms(290), ms(10)), 7_500_000);
        // No skew: one round trip.
        assert_eq!(needed_window(1e6, ms(0), ms(40)), 80_000);
        // It grows in proportion to the rate and to the skew.
        assert_eq!(needed_window(2e6, ms(0), ms(40)), 2 * needed_window(1e6, ms(0), ms(40)));
        assert_eq!(needed_window(1e6, ms(200), ms(10)), 420_000);
        assert_eq!(needed_window(1e6, ms(400), ms(10)), 820_000);
    }

    #[test]
    fn configured_window_is_the_floor_and_the_cap_the_ceiling() {
        assert_eq!(sized(1_000, 65_536, 1 << 27), 65_536);
        assert_eq!(sized(7_500_000, 65_536, 1 << 27), 7_500_000);
        assert_eq!(sized(1 << 30, 65_536, 1 << 27), 1 << 27);
        // A cap below the floor keeps the configured window.
        assert_eq!(sized(1 << 30, 65_536, 0), 65_536);
    }

    #[test]
    fn rate_is_the_recent_peak() {
        let mut w = WindowSizing::default();
        let t = |n: u64| Timestamp::ZERO + ms(100 * n);
        w.sample(t(0), 0);
        w.sample(t(1), 100_000);
        w.sample(t(2), 150_000);
        assert!((w.rate() - 1e6).abs() < 1.0);
        // The peak is forgotten after RATE_MEMORY samples.
        for n in 3..3 + RATE_MEMORY as u64 {
            w.sample(t(n), 150_000 + 10_000 * (n - 2));
        }
        assert!((w.rate() - 1e5).abs() < 1.0);
    }
}
