//! Round-trip time estimation per path (RFC 9002 §5).

use std::time::Duration;

/// RFC 9002 §6.2.2: "When no previous RTT is available, the initial RTT SHOULD be set to 333
/// milliseconds."
pub const INITIAL_RTT: Duration = Duration::from_millis(333);
/// RFC 9002 kGranularity.
pub const GRANULARITY: Duration = Duration::from_millis(1);

/// Smoothed RTT, variance, minimum and latest sample of one path.
#[derive(Debug, Clone)]
pub struct RttEstimator {
    latest: Duration,
    smoothed: Option<Duration>,
    var: Duration,
    min: Duration,
}

impl Default for RttEstimator {
    fn default() -> Self {
        RttEstimator { latest: INITIAL_RTT, smoothed: None, var: INITIAL_RTT / 2, min: INITIAL_RTT }
    }
}

impl RttEstimator {
    /// True once a sample has been taken.
    pub fn has_sample(&self) -> bool {
        self.smoothed.is_some()
    }

    /// Smoothed RTT (the initial RTT before any sample).
    pub fn smoothed(&self) -> Duration {
        self.smoothed.unwrap_or(INITIAL_RTT)
    }

    /// RTT variation.
    pub fn var(&self) -> Duration {
        self.var
    }

    /// Smallest sample seen.
    pub fn min(&self) -> Duration {
        self.min
    }

    /// Latest sample.
    pub fn latest(&self) -> Duration {
        self.latest
    }

    /// RFC 9002 §6.2.1: PTO = smoothed_rtt + max(4*rttvar, kGranularity) + max_ack_delay.
    pub fn pto_base(&self, max_ack_delay: Duration) -> Duration {
        self.smoothed() + (4 * self.var).max(GRANULARITY) + max_ack_delay
    }

    /// Adds a sample (RFC 9002 §5.3).
    pub fn update(&mut self, latest: Duration, ack_delay: Duration) {
        self.latest = latest;
        match self.smoothed {
            None => {
                // "On the first RTT sample ... min_rtt = latest_rtt, smoothed_rtt = latest_rtt,
                //  rttvar = latest_rtt / 2"
                self.min = latest;
                self.smoothed = Some(latest);
                self.var = latest / 2;
            }
            Some(srtt) => {
                self.min = self.min.min(latest);
                // "adjusted_rtt = latest_rtt; if (latest_rtt >= min_rtt + ack_delay):
                //  adjusted_rtt = latest_rtt - ack_delay"
                let adjusted = if latest >= self.min + ack_delay { latest - ack_delay } else { latest };
                let diff = srtt.abs_diff(adjusted);
                self.var = (3 * self.var + diff) / 4;
                self.smoothed = Some((7 * srtt + adjusted) / 8);
            }
        }
    }

    /// Forgets the minimum so it can follow a path whose base delay grew (used after a path
    /// comes back from a long outage).
    pub fn reset_min(&mut self) {
        self.min = self.latest;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc9002() {
        let mut r = RttEstimator::default();
        assert!(!r.has_sample());
        assert_eq!(r.smoothed(), INITIAL_RTT);
        r.update(Duration::from_millis(100), Duration::ZERO);
        assert_eq!(
            (r.smoothed(), r.var(), r.min()),
            (Duration::from_millis(100), Duration::from_millis(50), Duration::from_millis(100))
        );
        r.update(Duration::from_millis(120), Duration::from_millis(10));
        // adjusted = 110: srtt = (700 + 110) / 8 = 101.25 ms, var = (150 + 10) / 4 = 40 ms
        assert_eq!(r.smoothed(), Duration::from_micros(101_250));
        assert_eq!(r.var(), Duration::from_millis(40));
        assert_eq!(r.min(), Duration::from_millis(100));
        assert_eq!(r.pto_base(Duration::from_millis(25)), Duration::from_micros(101_250 + 160_000 + 25_000));
    }
}
