//! The path monitor: what schedulers and the status API read about a path — RTT (smoothed,
//! minimum, variance live in the path's RTT estimator), delivery rate, loss rate and jitter.

use crate::path::rtt::RttEstimator;
use std::time::Duration;

/// Weight of one packet in the exponentially weighted loss rate (about the last 256 packets).
const LOSS_EWMA: f64 = 1.0 / 256.0;

/// Measurements of one path.
#[derive(Debug, Clone, Default)]
pub struct Monitor {
    /// Fraction of ack-eliciting packets lost, smoothed.
    pub loss_rate: f64,
    /// Latest valid delivery-rate sample, bytes/s.
    pub delivery_rate: f64,
    /// Largest recent delivery-rate sample not limited by the application, bytes/s.
    pub max_delivery_rate: f64,
    /// RFC 3550-style jitter of RTT samples: J += (|D| - J) / 16.
    pub jitter: Duration,
    last_rtt: Option<Duration>,
    /// Loss discrimination switched on (seeds 001, 003).
    pub discriminate_loss: bool,
}

impl Monitor {
    /// A packet was acknowledged (`lost == false`) or declared lost.
    pub fn on_packet_outcome(&mut self, lost: bool) {
        let x = if lost { 1.0 } else { 0.0 };
        self.loss_rate += (x - self.loss_rate) * LOSS_EWMA;
    }

    /// A new RTT sample.
    pub fn on_rtt_sample(&mut self, rtt: Duration) {
        if let Some(prev) = self.last_rtt {
            let d = rtt.abs_diff(prev).as_secs_f64();
            let j = self.jitter.as_secs_f64();
            self.jitter = Duration::from_secs_f64((j + (d - j) / 16.0).max(0.0));
        }
        self.last_rtt = Some(rtt);
    }

    /// A new delivery-rate sample.
    pub fn on_delivery_rate(&mut self, rate: f64, app_limited: bool) {
        self.delivery_rate = rate;
        if !app_limited || rate > self.max_delivery_rate {
            // Decay slowly so the maximum follows a path whose capacity shrank.
            self.max_delivery_rate = rate.max(self.max_delivery_rate * 0.98);
        }
    }

    /// Loss discrimination: a loss is classed as random (not congestion) when no queue has
    /// built up, i.e. the latest RTT is within max(2 ms, min RTT / 8) plus four jitters of the
    /// path's minimum RTT.
    pub fn loss_looks_random(&self, rtt: &RttEstimator) -> bool {
        if !self.discriminate_loss || !rtt.has_sample() {
            return false;
        }
        let slack = (rtt.min() / 8).max(Duration::from_millis(2)) + 4 * self.jitter;
        rtt.latest() <= rtt.min() + slack
    }
}
