//! NewReno as specified by RFC 9002 §7 and Appendix B.

use super::{initial_window, minimum_window, AckEvent, Controller, LossEvent};
use crate::path::rtt::RttEstimator;
use crate::time::Timestamp;

/// RFC 9002 NewReno.
#[derive(Debug, Clone)]
pub struct NewReno {
    mss: u64,
    window: u64,
    ssthresh: u64,
    recovery_start: Option<Timestamp>,
    /// Bytes acknowledged in congestion avoidance, not yet turned into window growth.
    acked_in_ca: u64,
}

impl NewReno {
    /// A controller with the initial window.
    pub fn new(mss: u64) -> Self {
        NewReno { mss, window: initial_window(mss), ssthresh: u64::MAX, recovery_start: None, acked_in_ca: 0 }
    }

    fn in_recovery(&self, sent: Timestamp) -> bool {
        self.recovery_start.is_some_and(|r| sent <= r)
    }
}

impl Controller for NewReno {
    fn on_sent(&mut self, _now: Timestamp, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, ev: &AckEvent, _rtt: &RttEstimator) {
        // "Do not increase congestion window in recovery period."
        if self.in_recovery(ev.largest_sent_time) {
            return;
        }
        if !super::window_limited(ev, self.window, self.mss) {
            return;
        }
        if self.window < self.ssthresh {
            self.window += ev.acked_bytes;
        } else {
            // "congestion_window += max_datagram_size * acked_packet.sent_bytes / congestion_window"
            self.acked_in_ca += ev.acked_bytes;
            if self.acked_in_ca >= self.window {
                self.acked_in_ca -= self.window;
                self.window += self.mss;
            }
        }
    }

    fn on_congestion(&mut self, ev: &LossEvent, _rtt: &RttEstimator) {
        if ev.random {
            return;
        }
        if ev.persistent {
            self.window = minimum_window(self.mss);
            self.recovery_start = None;
            return;
        }
        if self.in_recovery(ev.largest_sent_time) {
            return;
        }
        self.recovery_start = Some(ev.now);
        // kLossReductionFactor = 0.5
        self.ssthresh = (self.window / 2).max(minimum_window(self.mss));
        self.window = self.ssthresh;
        self.acked_in_ca = 0;
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
        "newreno"
    }
}

#[cfg(test)]
mod tests;
