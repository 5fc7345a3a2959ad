//! NewReno against RFC 9002 §7 / RFC 5681 §3.1 (slow start, one MSS per window in congestion
//! avoidance, halving) and RFC 6582 (one reduction per window of data: the recovery period).

use super::*;
use crate::cc::{minimum_window, RateSample};
use std::time::Duration;

const MSS: u64 = 1200;

fn t(ms: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(ms))
}

/// An ACK at `now` of `bytes` whose newest packet left at `sent`, with `in_flight` before it.
fn ack(now: u64, sent: u64, bytes: u64, in_flight: u64) -> AckEvent {
    AckEvent {
        now: t(now),
        acked_bytes: bytes,
        largest_sent_time: t(sent),
        prior_in_flight: in_flight,
        rate: RateSample::default(),
    }
}

fn loss(now: u64, sent: u64) -> LossEvent {
    LossEvent::congestion(t(now), MSS, t(sent))
}

fn rtt() -> RttEstimator {
    RttEstimator::default()
}

#[test]
fn slow_start_grows_by_the_bytes_acknowledged() {
    let mut cc = NewReno::new(MSS);
    let w = cc.window();
    assert_eq!(w, 10 * MSS, "RFC 9002 §7.2 initial window for a 1200-byte datagram");
    cc.on_ack(&ack(10, 0, 3 * MSS, w), &rtt());
    assert_eq!(cc.window(), w + 3 * MSS);
    assert!(cc.in_slow_start());
}

#[test]
fn a_loss_halves_the_window_and_ends_slow_start() {
    let mut cc = NewReno::new(MSS);
    cc.window = 40 * MSS;
    cc.on_congestion(&loss(100, 50), &rtt());
    assert_eq!(cc.window(), 20 * MSS, "kLossReductionFactor 0.5");
    assert_eq!(cc.ssthresh, 20 * MSS);
    assert!(!cc.in_slow_start());
}

#[test]
fn the_window_never_halves_below_the_minimum() {
    let mut cc = NewReno::new(MSS);
    cc.window = 3 * MSS;
    cc.on_congestion(&loss(100, 50), &rtt());
    assert_eq!(cc.window(), minimum_window(MSS));
}

#[test]
fn one_reduction_per_window_of_data() {
    let mut cc = NewReno::new(MSS);
    cc.window = 40 * MSS;
    cc.on_congestion(&loss(100, 50), &rtt());
    // More losses of packets sent before recovery began belong to the same event.
    cc.on_congestion(&loss(110, 60), &rtt());
    cc.on_congestion(&loss(120, 100), &rtt());
    assert_eq!(cc.window(), 20 * MSS);
    // A packet sent after recovery began is a new congestion event.
    cc.on_congestion(&loss(200, 101), &rtt());
    assert_eq!(cc.window(), 10 * MSS);
}

#[test]
fn no_growth_in_recovery_then_growth_after_it() {
    let mut cc = NewReno::new(MSS);
    cc.window = 40 * MSS;
    cc.on_congestion(&loss(100, 50), &rtt());
    let w = cc.window();
    cc.on_ack(&ack(110, 90, w, w), &rtt());
    assert_eq!(cc.window(), w, "acks of packets sent before recovery do not grow the window");
    cc.on_ack(&ack(200, 150, w, w), &rtt());
    assert_eq!(cc.window(), w + MSS, "a window's worth acknowledged after recovery: one MSS");
}

#[test]
fn congestion_avoidance_adds_one_mss_per_window_acknowledged() {
    let mut cc = NewReno::new(MSS);
    cc.window = 20 * MSS;
    cc.ssthresh = 20 * MSS;
    // One packet short of a window: no growth yet.
    for i in 0..19 {
        cc.on_ack(&ack(100 + i, 50 + i, MSS, 20 * MSS), &rtt());
    }
    assert_eq!(cc.window(), 20 * MSS);
    cc.on_ack(&ack(120, 70, MSS, 20 * MSS), &rtt());
    assert_eq!(cc.window(), 21 * MSS);
}

#[test]
fn an_unused_window_does_not_grow() {
    // RFC 9002 §7.8: under-utilised, the window stays.
    let mut cc = NewReno::new(MSS);
    let w = cc.window();
    cc.on_ack(&ack(10, 0, MSS, w / 2 - 1), &rtt());
    assert_eq!(cc.window(), w);
}

#[test]
fn random_loss_is_ignored_and_persistent_congestion_collapses_the_window() {
    let mut cc = NewReno::new(MSS);
    cc.window = 40 * MSS;
    cc.on_congestion(&LossEvent { random: true, ..loss(100, 50) }, &rtt());
    assert_eq!(cc.window(), 40 * MSS);
    cc.on_congestion(&LossEvent { persistent: true, ..loss(200, 150) }, &rtt());
    assert_eq!(cc.window(), minimum_window(MSS), "RFC 9002 §7.6.2");
}
