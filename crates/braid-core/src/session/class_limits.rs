//! Per-class rates at the sender: seed 001's per-application parameters ("maximum rate",
//! "minimum rate") for traffic classes.
//!
//! * **Maximum rate**: a token bucket per class (burst: 20 ms of the rate, at least two
//!   full packets). A class whose bucket is empty is left out of the next packet; streams of
//!   it wait, datagrams of it wait in their queue until their deadline.
//! * **Minimum rate**: the class's send rate, averaged over about a second; while it is below
//!   the minimum, the class goes ahead of every priority, so a low-priority class is never
//!   starved by a busy high-priority one.
//! * **Latency-sensitive activity**: a class that asks for copies (`redundant`) or has a
//!   deadline is one that queueing delay hurts (calls, games, DNS). While one has sent in the
//!   last [`LATENCY_HOLD`], the session bounds every path's queue (issue 11's bufferbloat).

use crate::config::TrafficClass;
use crate::time::Timestamp;
use crate::timing::{CLASS_BURST_TIME as BURST_TIME, CLASS_RATE_AVERAGE as AVERAGE, LATENCY_HOLD};
use std::collections::BTreeMap;
use std::time::Duration;

#[derive(Debug, Clone, Copy)]
struct Meter {
    /// Max-rate tokens, bytes (may go below zero by one packet).
    tokens: f64,
    /// Served rate, bytes/s (exponential average).
    served: f64,
    at: Timestamp,
}

/// Rates of every class that has limits.
#[derive(Debug, Default)]
pub(super) struct ClassLimits {
    meters: BTreeMap<u8, Meter>,
    /// Until when a latency-sensitive class counts as active.
    latency_until: Option<Timestamp>,
}

/// True for a class whose packets queueing delay hurts: it asks for copies or has a deadline.
pub(super) fn latency_sensitive(c: &TrafficClass) -> bool {
    c.deadline.is_some() || matches!(c.scheduler, Some(crate::scheduler::Kind::Redundant(_)))
}

fn burst(max_rate: u64, mtu: usize) -> f64 {
    (max_rate as f64 * BURST_TIME.as_secs_f64()).max(2.0 * mtu as f64)
}

impl ClassLimits {
    fn meter(&mut self, now: Timestamp, class: u8, c: &TrafficClass, mtu: usize) -> &mut Meter {
        let full = c.max_rate.map_or(0.0, |r| burst(r, mtu));
        let m = self.meters.entry(class).or_insert(Meter { tokens: full, served: 0.0, at: now });
        let dt = now.saturating_since(m.at).as_secs_f64();
        if let Some(r) = c.max_rate {
            m.tokens = (m.tokens + dt * r as f64).min(full);
        }
        m.served *= (-dt / AVERAGE.as_secs_f64()).exp();
        m.at = now;
        m
    }

    /// How the sender ranks `class` now: None while its maximum rate is spent, 0 (ahead of
    /// everything) while it is below its minimum rate, its priority otherwise.
    pub(super) fn rank(&self, now: Timestamp, class: u8, c: &TrafficClass) -> Option<u8> {
        if c.max_rate.is_none() && c.min_rate.is_none() {
            return Some(c.priority);
        }
        let Some(m) = self.meters.get(&class) else { return Some(c.priority) };
        let dt = now.saturating_since(m.at).as_secs_f64();
        if let Some(r) = c.max_rate {
            if m.tokens + dt * r as f64 <= 0.0 {
                return None;
            }
        }
        let served = m.served * (-dt / AVERAGE.as_secs_f64()).exp();
        if c.min_rate.is_some_and(|min| served < min as f64) {
            return Some(0);
        }
        Some(c.priority)
    }

    /// `bytes` of `class` left.
    pub(super) fn on_sent(&mut self, now: Timestamp, class: u8, c: &TrafficClass, bytes: usize, mtu: usize) {
        if latency_sensitive(c) {
            self.latency_until = Some(now + LATENCY_HOLD);
        }
        if c.max_rate.is_none() && c.min_rate.is_none() {
            return;
        }
        let m = self.meter(now, class, c, mtu);
        m.tokens -= bytes as f64;
        m.served += bytes as f64 / AVERAGE.as_secs_f64();
    }

    /// True while a latency-sensitive class has sent within [`LATENCY_HOLD`].
    pub(super) fn latency_active(&self, now: Timestamp) -> bool {
        self.latency_until.is_some_and(|t| now < t)
    }

    /// When the first of `classes` whose maximum rate is spent may send again.
    pub(super) fn release(
        &self,
        now: Timestamp,
        classes: impl Iterator<Item = (u8, TrafficClass)>,
    ) -> Option<Timestamp> {
        classes
            .filter_map(|(class, c)| {
                let r = c.max_rate? as f64;
                let m = self.meters.get(&class)?;
                let deficit = -(m.tokens + now.saturating_since(m.at).as_secs_f64() * r);
                (deficit >= 0.0).then(|| now + Duration::from_secs_f64((deficit + 1.0) / r))
            })
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn max_rate_holds_a_class_to_its_rate() {
        let c = TrafficClass { max_rate: Some(100_000), ..TrafficClass::default() };
        let mut l = ClassLimits::default();
        let mut sent = 0;
        for ms in 0..1000 {
            while l.rank(at(ms), 3, &c).is_some() {
                l.on_sent(at(ms), 3, &c, 1000, 1000);
                sent += 1000;
            }
            if ms == 10 {
                let r = l.release(at(ms), [(3, c.clone())].into_iter()).expect("spent");
                assert!(r > at(ms) && r <= at(ms + 11), "{r:?}");
            }
        }
        // 100 kB/s for a second, plus the first burst.
        assert!((100_000..=103_000).contains(&sent), "{sent}");
    }

    #[test]
    fn min_rate_puts_a_starved_class_first_until_it_is_served() {
        let c = TrafficClass { priority: 5, min_rate: Some(50_000), ..TrafficClass::default() };
        let mut l = ClassLimits::default();
        assert_eq!(l.rank(at(0), 1, &c), Some(5), "unknown: its priority");
        l.on_sent(at(0), 1, &c, 100, 1000);
        assert_eq!(l.rank(at(1), 1, &c), Some(0), "below its minimum");
        for ms in 1..200 {
            l.on_sent(at(ms), 1, &c, 1000, 1000);
        }
        assert_eq!(l.rank(at(200), 1, &c), Some(5), "served: back to its priority");
        let plain = TrafficClass { priority: 2, ..TrafficClass::default() };
        assert_eq!(l.rank(at(0), 9, &plain), Some(2));
    }
}
