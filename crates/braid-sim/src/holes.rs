//! Hole-fill time (seed 003 Fig. 7a, loss fetching): how long bytes lost on the way kept the
//! receiver waiting. The client's session records the stream bytes it declares lost
//! ([`braid_core::session::lost_log`]); a hole is filled when the receiving application has
//! read past its end in order. Measured from the loss declaration (what fetching can change)
//! and from the lost packet's first send (what the receiver waits in all).

use braid_core::session::lost_log::LostRange;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// Lost bytes not yet delivered, and the waits of those that were.
#[derive(Debug, Default)]
pub struct HoleFill {
    /// By first offset: (end, first sent, declared lost).
    pending: BTreeMap<u64, (u64, Duration, Duration)>,
    since_loss_ms: Vec<f64>,
    since_send_ms: Vec<f64>,
}

/// What the report shows.
#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct HoleFillReport {
    /// Lost stream ranges whose bytes the receiver waited for and got.
    pub holes: u64,
    /// Mean time from loss declaration to in-order delivery, ms.
    pub since_loss_mean_ms: f64,
    /// 99th percentile of the same, ms.
    pub since_loss_p99_ms: f64,
    /// Mean time from the lost packet's send to in-order delivery, ms.
    pub since_send_mean_ms: f64,
    /// 99th percentile of the same, ms.
    pub since_send_p99_ms: f64,
    /// Packets the client sent as loss fetches on the secondary path.
    pub fetched_packets: u64,
    /// Lost frames the secondary could not take within its guard time.
    pub fetch_fallbacks: u64,
}

impl HoleFill {
    /// A range declared lost; `delivered` is what the receiver has read in order so far. A
    /// range already delivered (a spurious loss) or already waited for (its resend was lost
    /// too: the first loss counts) is left out.
    pub fn on_lost(&mut self, r: &LostRange, delivered: u64) {
        let end = r.offset + r.len;
        if end <= delivered || r.len == 0 {
            return;
        }
        if self.pending.range(..end).next_back().is_some_and(|(_, (e, _, _))| *e > r.offset) {
            return;
        }
        self.pending.insert(r.offset, (end, r.sent.as_duration(), r.declared.as_duration()));
    }

    /// The receiver has read `delivered` bytes in order at `now`.
    pub fn on_delivered(&mut self, now: Duration, delivered: u64) {
        while let Some(entry) = self.pending.first_entry() {
            let (end, sent, declared) = *entry.get();
            if end > delivered {
                break;
            }
            entry.remove();
            self.since_loss_ms.push(now.saturating_sub(declared).as_secs_f64() * 1e3);
            self.since_send_ms.push(now.saturating_sub(sent).as_secs_f64() * 1e3);
        }
    }

    /// Means and 99th percentiles.
    pub fn report(&self) -> HoleFillReport {
        HoleFillReport {
            holes: self.since_loss_ms.len() as u64,
            since_loss_mean_ms: mean(&self.since_loss_ms),
            since_loss_p99_ms: p99(&self.since_loss_ms),
            since_send_mean_ms: mean(&self.since_send_ms),
            since_send_p99_ms: p99(&self.since_send_ms),
            ..Default::default()
        }
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn p99(v: &[f64]) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[((s.len() as f64 * 0.99).ceil() as usize).clamp(1, s.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_core::Timestamp;

    fn lost(offset: u64, len: u64, sent_ms: u64, declared_ms: u64) -> LostRange {
        let ts = |ms| Timestamp::from_duration(Duration::from_millis(ms));
        LostRange { stream: 0, offset, len, sent: ts(sent_ms), declared: ts(declared_ms), path: 0 }
    }

    #[test]
    fn a_hole_counts_from_its_first_loss_until_read_past() {
        let mut h = HoleFill::default();
        h.on_lost(&lost(1000, 500, 10, 40), 0);
        // Its resend is lost too: still the first loss's times.
        h.on_lost(&lost(1000, 500, 50, 90), 0);
        // Already read: a spurious loss, left out.
        h.on_lost(&lost(0, 500, 5, 45), 800);
        h.on_delivered(Duration::from_millis(100), 1200);
        assert_eq!(h.report().holes, 0);
        h.on_delivered(Duration::from_millis(140), 1500);
        let r = h.report();
        assert_eq!(r.holes, 1);
        assert!((r.since_loss_mean_ms - 100.0).abs() < 1e-9);
        assert!((r.since_send_p99_ms - 130.0).abs() < 1e-9);
    }
}
