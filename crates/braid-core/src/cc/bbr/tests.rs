//! BBR against draft-cardwell-iccrg-bbr-congestion-control-00: the startup gain 2/ln 2
//! (§4.3.1.1), leaving startup after three rounds without 25 % growth (§4.3.2.2), the drain
//! gain 1/high_gain (§4.3.3), the ten-round bottleneck-rate window (§4.1.1.4), the ProbeBW
//! gain cycle (§4.3.4.3) and no reaction to isolated loss.

use super::*;
use crate::cc::RateSample;

const MSS: u64 = 1000;
const RTT_MS: u64 = 20;

/// Feeds one ACK per round trip, each starting a new round, with a delivery rate.
struct Driver {
    bbr: Bbr,
    rtt: RttEstimator,
    now: Timestamp,
    delivered: u64,
}

impl Driver {
    fn new() -> Self {
        Driver::with_mss(MSS)
    }

    fn with_mss(mss: u64) -> Self {
        let mut rtt = RttEstimator::default();
        rtt.update(Duration::from_millis(RTT_MS), Duration::ZERO);
        Driver { bbr: Bbr::new(mss), rtt, now: Timestamp::ZERO, delivered: 0 }
    }

    /// One round whose delivery-rate sample is `rate` bytes/s, with `in_flight` bytes before
    /// the ACK.
    fn round_with(&mut self, rate: f64, in_flight: u64) {
        self.ack_round(rate, in_flight, false);
    }

    /// One application-limited round at `rate` (with a large flight).
    fn app_limited_round(&mut self, rate: f64) {
        self.ack_round(rate, 10_000_000, true);
    }

    fn ack_round(&mut self, rate: f64, in_flight: u64, is_app_limited: bool) {
        self.now += Duration::from_millis(RTT_MS);
        let prior = self.delivered;
        self.delivered += 10 * MSS;
        let ev = AckEvent {
            now: self.now,
            acked_bytes: MSS,
            largest_sent_time: self.now - Duration::from_millis(RTT_MS),
            prior_in_flight: in_flight,
            rate: RateSample {
                delivery_rate: Some(rate),
                is_app_limited,
                prior_delivered: prior,
                delivered: self.delivered,
            },
        };
        self.bbr.on_ack(&ev, &self.rtt);
    }

    /// A round with a large flight (startup and drain are not cut short by it).
    fn round(&mut self, rate: f64) {
        self.round_with(rate, 10_000_000);
    }
}

#[test]
fn datagrams_of_the_largest_allowed_size_keep_a_window_of_two() {
    // session.max_datagram_size accepts up to 65,000 bytes: two of them are more than the
    // 64 KB cap on a send quantum, which panicked in `clamp` before.
    let mut d = Driver::with_mss(65_000);
    for _ in 0..5 {
        d.round(1e6);
    }
    assert!(d.bbr.window() >= 2 * 65_000, "window {}", d.bbr.window());
}

#[test]
fn startup_paces_at_two_over_ln_two() {
    assert!((HIGH_GAIN - 2.0 / std::f64::consts::LN_2).abs() < 1e-3);
    let mut d = Driver::new();
    d.round(1e6);
    assert!(d.bbr.in_slow_start());
    let pace = d.bbr.pacing_rate(&d.rtt).unwrap();
    assert!((pace - HIGH_GAIN * 1e6).abs() < 1.0, "{pace}");
}

#[test]
fn startup_ends_after_three_rounds_without_25_percent_growth() {
    let mut d = Driver::new();
    // Doubling, then under 25 % per round: 4.8 and 4.9 and 4.95 are each < 1.25 × 4.
    for rate in [1e6, 2e6, 4e6, 4.8e6, 4.9e6] {
        d.round(rate);
        assert!(d.bbr.in_slow_start(), "still in startup at {rate}");
    }
    d.round(4.95e6);
    assert!(!d.bbr.in_slow_start(), "the third flat round ends startup");
    assert_eq!(d.bbr.state, State::Drain);
    // Drain paces at 1/high_gain of the bottleneck rate.
    let pace = d.bbr.pacing_rate(&d.rtt).unwrap();
    assert!((pace - 4.95e6 / HIGH_GAIN).abs() < 1.0, "{pace}");
}

#[test]
fn a_25_percent_step_restarts_the_count() {
    let mut d = Driver::new();
    // Two flat rounds after 4e6, then +25 % (5e6 = 1.25 × 4e6): the count starts again.
    for rate in [1e6, 2e6, 4e6, 4.1e6, 4.2e6, 5e6, 5.1e6, 5.2e6] {
        d.round(rate);
        assert!(d.bbr.in_slow_start(), "still in startup at {rate}");
    }
    d.round(5.3e6);
    assert!(!d.bbr.in_slow_start());
}

#[test]
fn drain_ends_at_one_bdp_in_flight_and_probe_bw_cycles_its_gains() {
    let mut d = Driver::new();
    for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
        d.round(rate);
    }
    assert_eq!(d.bbr.state, State::Drain);
    // BDP = 4e6 B/s × 20 ms = 80 kB; below it (the ACK's own bytes off), ProbeBW begins.
    d.round_with(4e6, 60_000);
    assert_eq!(d.bbr.state, State::ProbeBw);
    assert_eq!(d.bbr.cwnd_gain, 2.0);
    // Over a few cycles every gain of the draft's eight-phase cycle is used, and no other.
    let mut seen = Vec::new();
    for _ in 0..40 {
        d.round_with(4e6, 200_000);
        let g = d.bbr.pacing_gain;
        assert!(CYCLE.contains(&g), "{g}");
        if !seen.contains(&g.to_bits()) {
            seen.push(g.to_bits());
        }
    }
    assert_eq!(seen.len(), 3, "1.25, 0.75 and 1.0 all used");
}

#[test]
fn the_bottleneck_rate_is_the_maximum_of_the_last_ten_rounds() {
    let mut d = Driver::new();
    d.round(9e6);
    for _ in 0..BW_WINDOW_ROUNDS {
        d.round(3e6);
        assert_eq!(d.bbr.bandwidth(), Some(9e6));
    }
    d.round(3e6);
    assert_eq!(d.bbr.bandwidth(), Some(3e6), "the old maximum left the window");
}

#[test]
fn loss_does_not_shrink_the_window_unless_persistent() {
    let mut d = Driver::new();
    for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
        d.round(rate);
    }
    let w = d.bbr.window();
    let ev = LossEvent::congestion(d.now, 5 * MSS, d.now);
    d.bbr.on_congestion(&ev, &d.rtt);
    assert_eq!(d.bbr.window(), w);
    d.bbr.on_congestion(&LossEvent { persistent: true, ..ev }, &d.rtt);
    assert_eq!(d.bbr.window(), MIN_PIPE_PACKETS * MSS);
    assert_eq!(d.bbr.bandwidth(), Some(4e6), "the rate model is kept");
}

#[test]
fn a_minimum_rtt_unconfirmed_for_ten_seconds_sends_bbr_to_probe_rtt() {
    let mut d = Driver::new();
    for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
        d.round(rate);
    }
    // Samples 50 % above the minimum neither lower nor confirm it.
    d.rtt.update(Duration::from_millis(30), Duration::ZERO);
    let rounds = MIN_RTT_WINDOW.as_millis() as u64 / RTT_MS;
    for _ in 0..rounds - 2 {
        d.round_with(4e6, 100_000);
        assert_ne!(d.bbr.state, State::ProbeRtt);
    }
    for _ in 0..3 {
        d.round_with(4e6, 100_000);
    }
    assert_eq!(d.bbr.state, State::ProbeRtt);
    assert_eq!(d.bbr.pacing_gain, PROBE_RTT_DRAIN_GAIN);
}

#[test]
fn the_shared_variant_drains_probe_rtt_to_half_a_bdp_also_when_frozen() {
    let mut plain = Driver::new();
    let mut shared = Driver { bbr: Bbr::shared(MSS), ..Driver::new() };
    for d in [&mut plain, &mut shared] {
        for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
            d.round(rate);
        }
    }
    // 4 MB/s × 20 ms: one BDP of 80 kB (and the packet a delayed ACK holds) for bbr, half of
    // it for bbr-shared (BBRv2's depth).
    let (one, half) = (plain.bbr.probe_rtt_window() as f64, shared.bbr.probe_rtt_window() as f64);
    assert!((one - 81_000.0).abs() <= 1.0 && (half - 40_000.0).abs() <= 1.0, "{one} {half}");
    // A blackout freeze keeps a copy (`clone_box`): the copy is still the shared variant.
    assert_eq!(shared.bbr.clone().probe_rtt_window() as f64, half);
    assert_eq!(shared.bbr.clone_box().name(), "bbr-shared");
    assert_eq!(plain.bbr.clone_box().name(), "bbr");
}

#[test]
fn the_shared_variant_told_it_is_alone_drains_to_one_bdp_and_a_packet() {
    // A server sending to one client at a time (`braid_daemon::crowd`): no crowd's queue to
    // empty, so ProbeRTT drains as plain BBR does, and deep again once others send.
    let mut shared = Driver { bbr: Bbr::shared(MSS), ..Driver::new() };
    for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
        shared.round(rate);
    }
    shared.bbr.set_shared_bottleneck(false);
    assert!((shared.bbr.probe_rtt_window() as f64 - 81_000.0).abs() <= 1.0);
    shared.bbr.set_shared_bottleneck(true);
    assert!((shared.bbr.probe_rtt_window() as f64 - 40_000.0).abs() <= 1.0);
    // Plain BBR drains to one BDP (and a packet) either way.
    let mut plain = Driver::new();
    for rate in [1e6, 2e6, 4e6, 4e6, 4e6, 4e6] {
        plain.round(rate);
    }
    plain.bbr.set_shared_bottleneck(true);
    assert!((plain.bbr.probe_rtt_window() as f64 - 81_000.0).abs() <= 1.0);
}

#[test]
fn a_slow_path_probes_its_minimum_rtt_with_what_one_ack_delay_brings_beyond_the_bdp() {
    // 10 kB/s over a 2 s minimum: a BDP of 20 kB. Within the peer's 25 ms of ACK delay only
    // 250 bytes arrive, so the receiver acknowledges a packet alone long before its pair comes
    // and ProbeRTT holds 250 bytes beyond the product, not a packet: a whole packet would
    // stand in the queue and raise the next minimum by its transmission time, every probe.
    let mut d = Driver::new();
    d.rtt = RttEstimator::default();
    d.rtt.update(Duration::from_secs(2), Duration::ZERO);
    for rate in [5e3, 1e4, 1e4, 1e4, 1e4, 1e4] {
        d.round(rate);
    }
    let window = d.bbr.probe_rtt_window() as f64;
    assert!((window - 20_250.0).abs() <= 1.0, "{window}");
}

/// A loss detection pass at the driver's time, behind a queue or not as the loss judge would
/// say (loss discrimination off: the controller is not told it is random).
fn lose(d: &mut Driver, queued: bool) {
    let ev = LossEvent::congestion(d.now, MSS, d.now - Duration::from_millis(RTT_MS));
    d.bbr.on_congestion(&LossEvent { queued, ..ev }, &d.rtt);
}

#[test]
fn application_limited_rounds_that_lose_to_a_queue_end_startup() {
    // Flat application-limited rounds alone keep startup going (the rate may be the
    // application's), and so do losses without a queue ...
    let mut d = Driver::new();
    d.round(1e6);
    for _ in 0..10 {
        lose(&mut d, false);
        d.app_limited_round(1e6);
    }
    assert!(d.bbr.in_slow_start());
    // ... but three flat rounds that each lost packets to a queue end it.
    for i in 0..3 {
        assert!(d.bbr.in_slow_start(), "still in startup before round {i}");
        lose(&mut d, true);
        d.app_limited_round(1e6);
    }
    assert_eq!(d.bbr.state, State::Drain);
}
