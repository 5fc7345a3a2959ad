//! CUBIC against RFC 9438: the multiplicative decrease β = 0.7 (§4.6), fast convergence
//! (§4.7), K and the cubic curve through W_max (§4.2), and the Reno-friendly region (§4.3).

use super::*;
use crate::cc::RateSample;
use std::time::Duration;

const MSS: u64 = 1000;

fn t(ms: u64) -> Timestamp {
    Timestamp::from_duration(Duration::from_millis(ms))
}

fn loss(now: u64, sent: u64) -> LossEvent {
    LossEvent::congestion(t(now), MSS, t(sent))
}

fn rtt_of(ms: u64) -> RttEstimator {
    let mut r = RttEstimator::default();
    r.update(Duration::from_millis(ms), Duration::ZERO);
    r
}

/// A controller in congestion avoidance that just lost at a window of `segments`.
fn after_loss_at(segments: u64, now: u64) -> Cubic {
    let mut cc = Cubic::new(MSS);
    cc.window = segments * MSS;
    cc.on_congestion(&loss(now, now - 1), &rtt_of(100));
    cc
}

/// Acknowledges one full window per round trip, one segment at a time, from `from` ms for
/// `rounds` rounds of `rtt` ms (each acknowledging packets sent after `from`); the window (in segments) at the end of each round.
fn grow(cc: &mut Cubic, from: u64, rounds: u64, rtt: u64) -> Vec<f64> {
    let est = rtt_of(rtt);
    let mut out = Vec::new();
    for r in 0..rounds {
        let now = from + (r + 1) * rtt;
        for _ in 0..cc.window / MSS {
            let ev = AckEvent {
                now: t(now),
                acked_bytes: MSS,
                largest_sent_time: t(now - rtt + 1),
                prior_in_flight: cc.window,
                rate: RateSample::default(),
            };
            cc.on_ack(&ev, &est);
        }
        out.push(cc.segments());
    }
    out
}

#[test]
fn a_loss_multiplies_the_window_by_beta_and_remembers_w_max() {
    let cc = after_loss_at(100, 1000);
    assert_eq!(cc.window(), 70 * MSS, "β_cubic = 0.7");
    assert_eq!(cc.ssthresh, 70 * MSS);
    assert_eq!(cc.w_max, 100.0);
    // K = cbrt(W_max (1 - β) / C) = cbrt(75) s.
    assert!((cc.k - 75f64.cbrt()).abs() < 1e-9, "{}", cc.k);
}

#[test]
fn fast_convergence_lowers_w_max_when_the_window_did_not_recover() {
    let mut cc = after_loss_at(100, 1000);
    // The next loss comes at 80 segments, below W_max = 100: W_max = 80 (1 + β) / 2 = 68.
    cc.window = 80 * MSS;
    cc.on_congestion(&loss(5000, 4999), &rtt_of(100));
    assert!((cc.w_max - 68.0).abs() < 1e-9, "{}", cc.w_max);
    assert_eq!(cc.window(), 56 * MSS);
}

#[test]
fn one_reduction_per_window_of_data() {
    let mut cc = after_loss_at(100, 1000);
    cc.on_congestion(&loss(1050, 900), &rtt_of(100));
    assert_eq!(cc.window(), 70 * MSS, "a loss from before the reduction is the same event");
}

#[test]
fn the_window_follows_the_cubic_curve_through_w_max_at_k() {
    // W_max = 100 segments, RTT 100 ms: K = cbrt(75) ≈ 4.22 s; Reno-friendly growth (about
    // 0.53 segment per RTT) stays below the curve, so the window is W_cubic(t).
    let mut cc = after_loss_at(100, 1000);
    let w = grow(&mut cc, 1000, 80, 100);
    let k_round = (75f64.cbrt() * 10.0).round() as usize; // rounds of 100 ms
    let at = |round: usize| w[round - 1];
    let curve = |secs: f64| C * (secs - 75f64.cbrt()).powi(3) + 100.0;
    for round in [10, 20, 30, k_round, 50, 60, 80] {
        let want = curve(round as f64 / 10.0);
        assert!((at(round) - want).abs() < 0.01 * want, "round {round}: {} vs {want}", at(round));
    }
    // Concave before K (fast, then flattening), convex after it.
    assert!(at(10) - at(1) > at(k_round) - at(k_round - 9));
    assert!(at(80) - at(71) > at(k_round + 9) - at(k_round));
    assert!((at(k_round) - 100.0).abs() < 2.0, "plateau at W_max: {}", at(k_round));
}

#[test]
fn a_short_rtt_grows_at_least_as_fast_as_reno() {
    // W_max = 10 segments, RTT 10 ms: K ≈ 1.96 s, and W_cubic stays near 10 for a second;
    // W_est grows by α = 3(1 - β)/(1 + β) segments per RTT and governs the window.
    let mut cc = after_loss_at(10, 1000);
    let w = grow(&mut cc, 1000, 100, 10);
    let alpha = 3.0 * (1.0 - BETA) / (1.0 + BETA);
    let reno = 7.0 + alpha * 100.0;
    assert!((w[99] - reno).abs() < 0.1 * reno, "{} vs Reno-friendly {reno}", w[99]);
    let cubic_alone = C * (1.0 - 7.5f64.cbrt()).powi(3) + 10.0;
    assert!(w[99] > 3.0 * cubic_alone);
}

#[test]
fn random_loss_is_ignored_and_persistent_congestion_collapses_the_window() {
    let mut cc = Cubic::new(MSS);
    cc.window = 50 * MSS;
    cc.on_congestion(&LossEvent { random: true, ..loss(100, 50) }, &rtt_of(100));
    assert_eq!(cc.window(), 50 * MSS);
    cc.on_congestion(&LossEvent { persistent: true, ..loss(200, 150) }, &rtt_of(100));
    assert_eq!(cc.window(), 2 * MSS);
    assert!(cc.epoch_start.is_none());
}
