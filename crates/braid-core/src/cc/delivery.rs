//! Delivery-rate estimation (draft-cheng-iccrg-delivery-rate-estimation): every packet remembers
//! how much had been delivered when it left; when it is acknowledged, the bytes delivered since,
//! over the time they took, is a rate sample.

use crate::time::Timestamp;
use std::time::Duration;

/// The per-packet snapshot taken at send time.
#[derive(Debug, Clone, Copy, Default)]
pub struct PacketRateState {
    /// `C.delivered` when the packet was sent.
    pub delivered: u64,
    /// `C.delivered_time` when the packet was sent.
    pub delivered_time: Timestamp,
    /// `C.first_sent_time` when the packet was sent.
    pub first_sent_time: Timestamp,
    /// The sender was application-limited when the packet was sent.
    pub is_app_limited: bool,
}

/// One rate sample (what an ACK taught us about the path's delivery rate).
#[derive(Debug, Clone, Copy, Default)]
pub struct RateSample {
    /// Bytes per second, when the sample is valid.
    pub delivery_rate: Option<f64>,
    /// The sample was taken while application-limited (a lower bound only).
    pub is_app_limited: bool,
    /// `delivered` at the send of the newest acknowledged packet (BBR's round counting).
    pub prior_delivered: u64,
    /// Total bytes delivered on the path after this ACK.
    pub delivered: u64,
}

/// The path-wide counters.
#[derive(Debug, Clone, Default)]
pub struct DeliveryRate {
    delivered: u64,
    delivered_time: Timestamp,
    first_sent_time: Timestamp,
    /// Nonzero while application-limited: the `delivered` value at which the limit ends.
    app_limited_until: u64,
    // Sample under construction for the ACK being processed.
    rs_prior_delivered: u64,
    rs_prior_time: Timestamp,
    rs_send_elapsed: Duration,
    rs_ack_elapsed: Duration,
    rs_app_limited: bool,
    rs_any: bool,
}

impl DeliveryRate {
    /// Snapshot for a packet about to be sent with `in_flight` bytes already outstanding.
    pub fn on_sent(&mut self, now: Timestamp, in_flight: u64) -> PacketRateState {
        if in_flight == 0 {
            self.first_sent_time = now;
            self.delivered_time = now;
        }
        PacketRateState {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            is_app_limited: self.app_limited_until != 0,
        }
    }

    /// Marks the path application-limited: nothing to send although the window had room.
    pub fn on_app_limited(&mut self, in_flight: u64) {
        self.app_limited_until = (self.delivered + in_flight).max(1);
    }

    /// One packet of `bytes`, sent at `sent_time`, was acknowledged.
    pub fn on_packet_acked(&mut self, now: Timestamp, sent_time: Timestamp, bytes: u64, p: &PacketRateState) {
        self.delivered += bytes;
        self.delivered_time = now;
        if !self.rs_any || p.delivered >= self.rs_prior_delivered {
            self.rs_any = true;
            self.rs_prior_delivered = p.delivered;
            self.rs_prior_time = p.delivered_time;
            self.rs_app_limited = p.is_app_limited;
            self.rs_send_elapsed = sent_time - p.first_sent_time;
            self.rs_ack_elapsed = self.delivered_time - p.delivered_time;
            self.first_sent_time = sent_time;
        }
    }

    /// Finishes the sample for the ACK just processed.
    pub fn take_sample(&mut self, min_rtt: Duration) -> RateSample {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if !self.rs_any {
            return RateSample { delivered: self.delivered, ..RateSample::default() };
        }
        self.rs_any = false;
        let bytes = self.delivered - self.rs_prior_delivered;
        let interval = self.rs_send_elapsed.max(self.rs_ack_elapsed);
        // "If the interval is shorter than min_rtt the sample is not reliable": ack compression.
        let valid = !interval.is_zero() && interval >= min_rtt && bytes > 0;
        RateSample {
            delivery_rate: valid.then(|| bytes as f64 / interval.as_secs_f64()),
            is_app_limited: self.rs_app_limited,
            prior_delivered: self.rs_prior_delivered,
            delivered: self.delivered,
        }
    }

    /// Total bytes delivered on the path.
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steady_stream_measures_its_rate() {
        // 1000-byte packets every 1 ms, acknowledged 10 ms later: 1 MB/s.
        let mut d = DeliveryRate::default();
        let ms = |n: u64| Timestamp::from_nanos(n * 1_000_000);
        let mut sent = Vec::new();
        for i in 0..50u64 {
            let in_flight = if i < 10 { i * 1000 } else { 10_000 };
            sent.push((ms(i), d.on_sent(ms(i), in_flight)));
            if i >= 10 {
                let (t, p) = sent[(i - 10) as usize];
                d.on_packet_acked(ms(i), t, 1000, &p);
                let s = d.take_sample(Duration::from_millis(10));
                if i > 20 {
                    let r = s.delivery_rate.unwrap();
                    assert!((r - 1e6).abs() < 1e5, "{r}");
                }
            }
        }
    }
}
