//! The receiver's reorder buffer outside loss recovery.
//!
//! The reorder maximum counts every packet held behind a gap, and a gap left by a lost packet
//! holds a round trip of arrivals whatever the scheduler does (one 100 Mbit/s, 150 ms link alone
//! shows thousands). Seed 004's claim about EDPF — packets arrive nearly in order — is about the
//! gaps scheduling makes, so this figure samples the buffer only while no packet has been
//! dropped on any link for a hold time that covers the loss's detection and retransmission.

use crate::link::LinkSpec;
use std::time::Duration;

/// How often the buffer is sampled.
const SAMPLE: Duration = Duration::from_millis(10);

/// Largest reorder buffer sampled outside loss recovery.
#[derive(Debug)]
pub struct LossFreeReorder {
    hold: Duration,
    drops_seen: u64,
    last_drop: Option<Duration>,
    next_sample: Duration,
    /// The maximum so far, packets.
    pub max: usize,
    sum: u64,
    samples: u64,
}

impl LossFreeReorder {
    /// A tracker for `links`: a drop excludes the next three of the slowest link's base round
    /// trips plus half a second.
    pub fn new(links: &[LinkSpec]) -> Self {
        let rtt = links.iter().map(|l| l.delay + l.back_delay.unwrap_or(l.delay)).max().unwrap_or_default();
        LossFreeReorder {
            hold: 3 * rtt + Duration::from_millis(500),
            drops_seen: 0,
            last_drop: None,
            next_sample: Duration::ZERO,
            max: 0,
            sum: 0,
            samples: 0,
        }
    }

    /// At `now`, with `drops` packets dropped on all links so far: samples `reorder_now` when
    /// it is time, `steady` (past the warm-up) and outside any loss's hold.
    pub fn observe(&mut self, now: Duration, drops: u64, steady: bool, reorder_now: impl FnOnce() -> usize) {
        if drops != self.drops_seen {
            self.drops_seen = drops;
            self.last_drop = Some(now);
        }
        if now < self.next_sample {
            return;
        }
        self.next_sample = now + SAMPLE;
        if steady && self.last_drop.is_none_or(|t| now >= t + self.hold) {
            let held = reorder_now();
            self.max = self.max.max(held);
            self.sum += held as u64;
            self.samples += 1;
        }
    }

    /// The mean of the samples, packets: a steady error in the schedule shows as a buffer
    /// that never empties, which the maximum alone does not tell from one spike.
    pub fn mean(&self) -> f64 {
        self.sum as f64 / self.samples.max(1) as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_drop_hides_the_buffer_for_the_hold_time() {
        let link = LinkSpec::parse("1mbit/50ms").unwrap();
        let mut r = LossFreeReorder::new(&[link]);
        assert_eq!(r.hold, Duration::from_millis(800));
        let ms = Duration::from_millis;
        r.observe(ms(0), 0, true, || 3);
        assert_eq!(r.max, 3);
        // A drop at 100 ms: nothing counts until 900 ms.
        r.observe(ms(100), 1, true, || 50);
        r.observe(ms(850), 1, true, || 40);
        assert_eq!(r.max, 3);
        r.observe(ms(900), 1, true, || 5);
        assert_eq!(r.max, 5);
        // Not steady yet: not counted.
        r.observe(ms(1000), 1, false, || 9);
        assert_eq!(r.max, 5);
        assert_eq!(r.mean(), 4.0, "the mean of the two samples counted, 3 and 5");
    }
}
