//! The sending side of the two-sided channel monitor (seed 000 §III-B): what the peer reported
//! about the packets it received on one of our paths (PATH_REPORT frames, see
//! [`crate::path::arrivals`]), kept for the schedulers and for seed 001's inter-arrival loss
//! verdict.

use crate::time::Timestamp;

pub use crate::timing::REPORT_FRESH;
use crate::timing::REPORT_LOSS_WINDOW as LOSS_WINDOW;
/// Reports kept for the loss window at most.
const MAX_KEPT: usize = 64;

/// The counters of one PATH_REPORT frame (cumulative since the path started at the peer).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReportCounters {
    /// Packets received.
    pub received: u64,
    /// Packets missing from the sequence.
    pub lost: u64,
    /// Missing packets in gaps judged random (seed 001 §4.3).
    pub random: u64,
    /// Missing packets in gaps judged congestion.
    pub congestion: u64,
    /// Inter-arrival jitter, microseconds.
    pub jitter_us: u64,
    /// Received rate over the last report interval, bytes/s.
    pub rate: u64,
}

/// What the peer reported about one of our paths.
#[derive(Debug, Clone, Default)]
pub struct PeerReport {
    /// The latest report and when it arrived.
    pub latest: Option<(Timestamp, ReportCounters)>,
    /// Reported loss fraction over the last [`LOSS_WINDOW`] of reports.
    pub loss: f64,
    /// Packets the peer accounted for (received or missing) over that window.
    pub packets: u64,
    /// Recent reports: (arrival, received + lost, lost), oldest first; the first is the base
    /// of the window.
    window: std::collections::VecDeque<(Timestamp, u64, u64)>,
    /// Verdict counters already used by a loss event: (random, congestion).
    used: (u64, u64),
    /// The verdict of the last loss event that had a fresh one.
    last_verdict: Option<bool>,
    /// Reports accepted.
    pub reports: u64,
}

impl PeerReport {
    /// A PATH_REPORT arrived at `now`. Reports older than the latest (fewer packets accounted
    /// for) are ignored.
    pub fn on_report(&mut self, now: Timestamp, c: ReportCounters) {
        let total = c.received.saturating_add(c.lost);
        if self.window.back().is_some_and(|&(_, t, _)| total < t) {
            return;
        }
        self.window.push_back((now, total, c.lost));
        // Keep one report at or before the window's start as its base.
        while self.window.len() > MAX_KEPT
            || (self.window.len() > 2 && now.saturating_since(self.window[1].0) >= LOSS_WINDOW)
        {
            self.window.pop_front();
        }
        let (_, t0, l0) = self.window[0];
        self.packets = total - t0;
        if self.packets > 0 {
            let lost = c.lost.saturating_sub(l0).min(self.packets);
            self.loss = lost as f64 / self.packets as f64;
        }
        self.latest = Some((now, c));
        self.reports += 1;
    }

    /// The reported loss fraction while the latest report is fresh.
    pub fn fresh_loss(&self, now: Timestamp) -> Option<f64> {
        let (at, _) = self.latest?;
        (now.saturating_since(at) <= REPORT_FRESH && self.packets > 0).then_some(self.loss)
    }

    /// The reported received rate (bytes/s) while the latest report is fresh.
    pub fn fresh_rate(&self, now: Timestamp) -> Option<f64> {
        let (at, c) = self.latest?;
        (now.saturating_since(at) <= REPORT_FRESH).then_some(c.rate as f64)
    }

    /// The reported inter-arrival jitter while the latest report is fresh.
    pub fn fresh_jitter(&self, now: Timestamp) -> Option<std::time::Duration> {
        let (at, c) = self.latest?;
        (now.saturating_since(at) <= REPORT_FRESH).then(|| std::time::Duration::from_micros(c.jitter_us))
    }

    /// Seed 001's inter-arrival verdict for a loss event: random when most of the missing
    /// packets the peer judged since the previous event were judged random; with nothing new
    /// judged (the report is still on its way), the previous verdict; with none ever, false
    /// (congestion, the cautious answer). `consume` marks the new verdicts used.
    pub fn arrival_verdict(&mut self, consume: bool) -> bool {
        let Some((_, c)) = self.latest else { return false };
        let random = c.random.saturating_sub(self.used.0);
        let congestion = c.congestion.saturating_sub(self.used.1);
        let verdict = if random + congestion > 0 { Some(random > congestion) } else { self.last_verdict };
        if consume {
            self.used = (c.random.max(self.used.0), c.congestion.max(self.used.1));
            self.last_verdict = verdict;
        }
        verdict.unwrap_or(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn ms(n: u64) -> Timestamp {
        Timestamp::from_nanos(n * 1_000_000)
    }

    fn counters(received: u64, lost: u64, random: u64, congestion: u64) -> ReportCounters {
        ReportCounters { received, lost, random, congestion, jitter_us: 0, rate: 1000 }
    }

    #[test]
    fn loss_from_cumulative_counters_and_stale_reports_ignored() {
        let mut r = PeerReport::default();
        assert_eq!(r.fresh_loss(ms(0)), None);
        r.on_report(ms(0), counters(0, 0, 0, 0));
        r.on_report(ms(250), counters(90, 10, 10, 0));
        assert!((r.fresh_loss(ms(260)).unwrap() - 0.1).abs() < 1e-9);
        // An older report (fewer packets) arriving late changes nothing.
        r.on_report(ms(270), counters(50, 5, 5, 0));
        assert_eq!(r.latest.unwrap().0, ms(250));
        // Four of the missing arrived late: they were not lost after all.
        r.on_report(ms(500), counters(194, 6, 6, 0));
        assert!((r.loss - 0.03).abs() < 1e-9, "{}", r.loss);
        assert_eq!(r.fresh_loss(ms(500) + REPORT_FRESH + Duration::from_millis(1)), None);
        assert_eq!(r.fresh_rate(ms(600)), Some(1000.0));
        // Two seconds of loss-free reports later, the window holds no loss.
        for i in 1..=10 {
            r.on_report(ms(500 + 250 * i), counters(194 + 100 * i, 6, 6, 0));
        }
        assert_eq!(r.loss, 0.0);
    }

    #[test]
    fn hostile_counters_do_not_panic() {
        let mut r = PeerReport::default();
        r.on_report(ms(0), counters(u64::MAX, u64::MAX, u64::MAX, u64::MAX));
        r.on_report(ms(1), counters(u64::MAX, 0, 0, u64::MAX));
        assert!((0.0..=1.0).contains(&r.loss));
        let _ = r.arrival_verdict(true);
    }

    #[test]
    fn verdict_of_new_gaps_then_the_last_one() {
        let mut r = PeerReport::default();
        assert!(!r.arrival_verdict(true), "no report: congestion");
        r.on_report(ms(0), counters(100, 3, 3, 0));
        assert!(r.arrival_verdict(false));
        assert!(r.arrival_verdict(true));
        // Nothing new judged: the previous verdict stands.
        assert!(r.arrival_verdict(true));
        r.on_report(ms(5), counters(200, 5, 3, 2));
        assert!(!r.arrival_verdict(true));
    }
}
