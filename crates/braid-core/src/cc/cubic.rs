//! CUBIC as specified by RFC 9438, with NewReno-style slow start and recovery periods.

use super::{initial_window, minimum_window, AckEvent, Controller, LossEvent};
use crate::path::rtt::RttEstimator;
use crate::time::Timestamp;

/// RFC 9438 §5.1: C = 0.4.
const C: f64 = 0.4;
/// RFC 9438 §4.6: β_cubic = 0.7.
const BETA: f64 = 0.7;

/// RFC 9438 CUBIC.
#[derive(Debug, Clone)]
pub struct Cubic {
    mss: u64,
    window: u64,
    ssthresh: u64,
    recovery_start: Option<Timestamp>,
    /// Start of the current congestion avoidance epoch.
    epoch_start: Option<Timestamp>,
    /// W_max in segments.
    w_max: f64,
    /// K in seconds.
    k: f64,
    /// W_est, the Reno-friendly estimate, in segments (RFC 9438 §4.3).
    w_est: f64,
    /// Window (segments) at the start of the epoch.
    cwnd_epoch: f64,
}

impl Cubic {
    /// A controller with the initial window.
    pub fn new(mss: u64) -> Self {
        Cubic {
            mss,
            window: initial_window(mss),
            ssthresh: u64::MAX,
            recovery_start: None,
            epoch_start: None,
            w_max: 0.0,
            k: 0.0,
            w_est: 0.0,
            cwnd_epoch: 0.0,
        }
    }

    fn segments(&self) -> f64 {
        self.window as f64 / self.mss as f64
    }

    fn in_recovery(&self, sent: Timestamp) -> bool {
        self.recovery_start.is_some_and(|r| sent <= r)
    }
}

impl Controller for Cubic {
    fn on_sent(&mut self, _now: Timestamp, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator) {
        if self.in_recovery(ev.largest_sent_time) {
            return;
        }
        // RFC 9438 §4.2: grow only while the window is actually used.
        if ev.prior_in_flight * 2 < self.window
            || ev.rate.is_app_limited && ev.prior_in_flight + 3 * self.mss < self.window
        {
            return;
        }
        if self.window < self.ssthresh {
            self.window += ev.acked_bytes;
            return;
        }
        let now = ev.now;
        let epoch = *self.epoch_start.get_or_insert_with(|| {
            // A new epoch without a preceding loss (after slow start): W_max = cwnd, K = 0.
            self.w_max = self.window as f64 / self.mss as f64;
            self.k = 0.0;
            self.w_est = self.w_max;
            self.cwnd_epoch = self.w_max;
            now
        });
        let t = (now - epoch).as_secs_f64();
        let srtt = rtt.smoothed().as_secs_f64();
        let cwnd = self.segments();
        // §4.3: W_est += α_cubic * segments_acked / cwnd, α = 3(1-β)/(1+β).
        let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
        self.w_est += alpha * (ev.acked_bytes as f64 / self.mss as f64) / cwnd;
        // §4.2: W_cubic(t + RTT) is the target, clamped to [cwnd, 1.5 cwnd].
        let w_cubic = |t: f64| C * (t - self.k).powi(3) + self.w_max;
        let target = w_cubic(t + srtt).clamp(cwnd, 1.5 * cwnd);
        let next = if w_cubic(t) < self.w_est {
            // Reno-friendly region.
            self.w_est.max(cwnd)
        } else {
            // "cwnd += (target - cwnd) / cwnd" per acknowledged segment.
            cwnd + (target - cwnd) / cwnd * (ev.acked_bytes as f64 / self.mss as f64)
        };
        self.window = ((next * self.mss as f64) as u64).max(minimum_window(self.mss));
    }

    fn on_congestion(&mut self, ev: &LossEvent, _rtt: &RttEstimator) {
        if ev.random {
            return;
        }
        if ev.persistent {
            self.window = minimum_window(self.mss);
            self.recovery_start = None;
            self.epoch_start = None;
            return;
        }
        if self.in_recovery(ev.largest_sent_time) {
            return;
        }
        self.recovery_start = Some(ev.now);
        let cwnd = self.segments();
        // §4.7 fast convergence.
        self.w_max = if cwnd < self.w_max { cwnd * (1.0 + BETA) / 2.0 } else { cwnd };
        let reduced = (cwnd * BETA).max(2.0);
        self.window = ((reduced * self.mss as f64) as u64).max(minimum_window(self.mss));
        self.ssthresh = self.window;
        // K = cbrt((W_max - cwnd_epoch) / C)
        self.cwnd_epoch = reduced;
        self.k = ((self.w_max - reduced).max(0.0) / C).cbrt();
        self.w_est = reduced;
        self.epoch_start = Some(ev.now);
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn pacing_rate(&self, _rtt: &RttEstimator) -> Option<f64> {
        None
    }

    fn in_slow_start(&self) -> bool {
        self.window < self.ssthresh
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn name(&self) -> &'static str {
        "cubic"
    }
}

#[cfg(test)]
mod tests;
