//! Pacing (seed 001's rate-based transmission; RFC 9002 §7.7): a token bucket refilled at the
//! path's pacing rate, so packets leave spread over the round trip instead of in bursts.

use crate::time::Timestamp;
use std::time::Duration;

/// How much sending time one burst may cover (quinn uses the same 2 ms).
pub const BURST_INTERVAL: Duration = Duration::from_millis(2);
/// The largest burst, in packets.
pub const MAX_BURST_PACKETS: f64 = 256.0;

/// The token bucket of one path.
#[derive(Debug, Clone)]
pub struct Pacer {
    tokens: f64,
    last: Timestamp,
    rate: f64,
    burst: f64,
}

impl Pacer {
    /// A pacer that starts with a full burst allowance.
    pub fn new(mss: u64) -> Self {
        Pacer { tokens: 2.0 * mss as f64, last: Timestamp::ZERO, rate: 0.0, burst: 2.0 * mss as f64 }
    }

    /// Sets the rate in bytes per second. The burst allowance is [`BURST_INTERVAL`] of data
    /// at that rate, at least two packets and at most [`MAX_BURST_PACKETS`]: a driver whose
    /// timers fire with about a millisecond of granularity (tokio) can still send at the full
    /// rate, while a slow link never receives more than a few packets at once.
    pub fn set_rate(&mut self, now: Timestamp, rate: f64, mss: u64) {
        self.refill(now);
        self.rate = rate.max(1.0);
        let mss = mss as f64;
        self.burst = (self.rate * BURST_INTERVAL.as_secs_f64()).clamp(2.0 * mss, MAX_BURST_PACKETS * mss);
        self.tokens = self.tokens.min(self.burst);
    }

    fn refill(&mut self, now: Timestamp) {
        if now > self.last {
            let dt = (now - self.last).as_secs_f64();
            self.tokens = (self.tokens + dt * self.rate).min(self.burst);
            self.last = now;
        }
    }

    /// When a packet of `bytes` may leave: `now` or a later time.
    pub fn release_time(&mut self, now: Timestamp, bytes: u64) -> Timestamp {
        self.refill(now);
        let need = (bytes as f64).min(self.burst);
        if self.tokens >= need || self.rate <= 0.0 {
            now
        } else {
            now + Duration::from_secs_f64((need - self.tokens) / self.rate)
        }
    }

    /// A packet of `bytes` left.
    pub fn on_sent(&mut self, now: Timestamp, bytes: u64) {
        self.refill(now);
        self.tokens -= bytes as f64;
        // Never owe more than one burst: a long-blocked path does not stall for its debt.
        self.tokens = self.tokens.max(-self.burst);
    }

    /// The current rate in bytes per second.
    pub fn rate(&self) -> f64 {
        self.rate
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spaces_packets_at_the_rate() {
        let mut p = Pacer::new(1000);
        let t0 = Timestamp::from_nanos(1_000_000_000);
        p.set_rate(t0, 1_000_000.0, 1000); // 1 MB/s: one 1000-byte packet per ms
        let mut now = t0;
        let mut sent = 0;
        while now < t0 + Duration::from_millis(100) {
            let at = p.release_time(now, 1000);
            now = at.max(now);
            p.on_sent(now, 1000);
            sent += 1;
        }
        // 100 ms at 1 packet/ms plus the initial burst.
        assert!((100..=104).contains(&sent), "{sent}");
    }
}
