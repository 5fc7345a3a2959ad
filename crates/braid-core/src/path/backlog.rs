//! What a path's own packets keep queued at its bottleneck, as the sender sees it: seed 004's
//! A_j, "the time path j can take it" (§III-B), kept as a clock of when the bottleneck will
//! have transmitted everything sent on the path at the path's rate.
//!
//! The bytes in flight beyond a bandwidth-delay product also estimate the queue, but only to
//! within about a packet: a packet counts in flight until its acknowledgement returns, so the
//! figure steps by whole packets as acknowledgements come and go. On a path 25 times slower
//! than the others one packet of error is 25 of theirs held at the receiver. Two packets sent
//! back to back (a pacer's burst, the window reopening after a minimum-RTT probe) left the
//! second predicted 5.5 ms early on a 2 Mbit/s path beside a 50 Mbit/s one; the clock knows
//! the first still occupies the link. Left to itself the clock drifts with every error of the
//! rate estimate (0.4 % ran it 100 ms ahead in 25 s), so it is held within one packet of the
//! in-flight estimate ([`Backlog::queue`]).

use crate::time::Timestamp;
use std::time::Duration;

/// The clock of a path's bottleneck.
#[derive(Debug, Clone, Copy, Default)]
pub struct Backlog {
    /// When the bottleneck will have transmitted what was sent so far (None: nothing sent).
    free_at: Option<Timestamp>,
}

/// Seconds `bytes` take at `rate` bytes/s.
fn transmission(bytes: u64, rate: f64) -> Duration {
    Duration::from_secs_f64(bytes as f64 / rate.max(1.0))
}

impl Backlog {
    /// The queue a packet of `bytes` handed to the bottleneck at `at` waits behind: the clock's
    /// backlog, held between `standing` (the in-flight estimate of the queue) and `standing` plus
    /// the packet's own transmission time at `rate`, bytes/s.
    pub fn queue(&self, at: Timestamp, bytes: u64, rate: f64, standing: Duration) -> Duration {
        let behind = self.free_at.map_or(Duration::ZERO, |f| f.saturating_since(at));
        behind.min(standing + transmission(bytes, rate)).max(standing)
    }

    /// A packet of `bytes` left at `now`; the path's rate is `rate` bytes/s and the in-flight
    /// estimate of its queue (before this packet) `standing`.
    pub fn on_sent(&mut self, now: Timestamp, bytes: u64, rate: f64, standing: Duration) {
        let start = now + self.queue(now, bytes, rate, standing);
        self.free_at = Some(start + transmission(bytes, rate));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_millis(n))
    }

    const RATE: f64 = 250_000.0; // 2 Mbit/s: a 1500-byte packet takes 6 ms.

    #[test]
    fn a_packet_sent_back_to_back_waits_for_the_one_before() {
        let mut b = Backlog::default();
        assert_eq!(b.queue(ms(0), 1500, RATE, Duration::ZERO), Duration::ZERO);
        b.on_sent(ms(0), 1500, RATE, Duration::ZERO);
        // The in-flight estimate sees no queue yet; the clock sees the first packet on the link.
        assert_eq!(b.queue(ms(0), 1500, RATE, Duration::ZERO), Duration::from_millis(6));
        assert_eq!(b.queue(ms(2), 1500, RATE, Duration::ZERO), Duration::from_millis(4));
        // Once it is through, nothing waits.
        assert_eq!(b.queue(ms(7), 1500, RATE, Duration::ZERO), Duration::ZERO);
    }

    #[test]
    fn the_clock_stays_within_a_packet_of_the_in_flight_estimate() {
        let mut b = Backlog::default();
        for _ in 0..10 {
            b.on_sent(ms(0), 1500, RATE, Duration::ZERO);
        }
        // Ten packets at once: the clock runs 60 ms ahead, but the in-flight estimate says no
        // queue, so it counts one packet.
        assert_eq!(b.queue(ms(0), 1500, RATE, Duration::ZERO), Duration::from_millis(6));
        // A larger in-flight estimate wins.
        assert_eq!(b.queue(ms(0), 1500, RATE, Duration::from_millis(20)), Duration::from_millis(20));
    }
}
