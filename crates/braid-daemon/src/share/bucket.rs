//! A token bucket in bytes: the rate limit of one member, and of all members together when
//! the owner's traffic comes first. Time is passed in.

use std::time::{Duration, Instant};

/// Burst a bucket allows: this much time at its rate, and at least [`MIN_BURST`] bytes.
const BURST_TIME: Duration = Duration::from_millis(50);
/// The smallest burst: a few full-size datagrams.
const MIN_BURST: f64 = 16.0 * 1500.0;

/// Bytes a limiter lets through per second, refilled continuously.
#[derive(Debug, Clone)]
pub struct Bucket {
    /// Bytes/s; `None`: unlimited.
    rate: Option<u64>,
    tokens: f64,
    at: Option<Instant>,
}

impl Bucket {
    /// A bucket at `rate` bytes/s (`None`: unlimited), starting full.
    pub fn new(rate: Option<u64>) -> Bucket {
        Bucket { rate, tokens: Self::burst_of(rate), at: None }
    }

    fn burst_of(rate: Option<u64>) -> f64 {
        rate.map_or(f64::INFINITY, |r| (r as f64 * BURST_TIME.as_secs_f64()).max(MIN_BURST))
    }

    /// The rate in bytes/s.
    pub fn rate(&self) -> Option<u64> {
        self.rate
    }

    /// Changes the rate; the tokens held stay (up to the new burst).
    pub fn set_rate(&mut self, rate: Option<u64>) {
        self.rate = rate;
        self.tokens = self.tokens.min(Self::burst_of(rate));
    }

    fn refill(&mut self, now: Instant) {
        let Some(rate) = self.rate else { return };
        if let Some(at) = self.at {
            let dt = now.saturating_duration_since(at).as_secs_f64();
            self.tokens = (self.tokens + dt * rate as f64).min(Self::burst_of(Some(rate)));
        }
        self.at = Some(now);
    }

    /// Whether `bytes` may pass now (and takes them if so).
    pub fn take(&mut self, now: Instant, bytes: usize) -> bool {
        if self.rate.is_none() {
            return true;
        }
        self.refill(now);
        if self.tokens >= bytes as f64 {
            self.tokens -= bytes as f64;
            true
        } else {
            false
        }
    }

    /// Whether `bytes` could pass now, without taking them.
    pub fn has(&mut self, now: Instant, bytes: usize) -> bool {
        self.rate.is_none() || {
            self.refill(now);
            self.tokens >= bytes as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_its_rate_over_a_second() {
        let t0 = Instant::now();
        let mut b = Bucket::new(Some(100_000));
        let mut passed = 0usize;
        for ms in 0..=1000u64 {
            let now = t0 + Duration::from_millis(ms);
            while b.take(now, 1000) {
                passed += 1000;
            }
        }
        // One second at 100 kB/s plus the initial burst (24 kB).
        assert!((120_000..=126_000).contains(&passed), "{passed}");
        assert!(Bucket::new(None).take(t0, usize::MAX));
    }

    #[test]
    fn a_lower_rate_caps_the_held_burst() {
        let t0 = Instant::now();
        let mut b = Bucket::new(Some(10_000_000));
        b.set_rate(Some(1000));
        assert!(b.take(t0, 16_000));
        assert!(!b.take(t0, 9000));
    }
}
