use super::*;

fn ms(n: u64) -> Timestamp {
    Timestamp::from_nanos(n * 1_000_000)
}

#[test]
fn a_fresh_path_takes_the_pacer_rate_without_its_gain() {
    let e = CapacityEstimate::default();
    assert!(!e.measured());
    assert_eq!(e.estimate(ms(0), None, 125_000.0), 100_000.0);
    assert_eq!(e.estimate(ms(0), None, 0.0), 1.0, "never zero: readers divide by it");
    assert_eq!(e.drain_rate(), 0.0, "the silence timer adds nothing for an unmeasured path");
    assert_eq!(e.packet_pair(), None);
}

#[test]
fn saturated_delivery_rate_samples_set_the_estimate() {
    let mut e = CapacityEstimate::default();
    e.on_delivery_rate(ms(10), 600.0, false);
    e.on_delivery_rate(ms(20), 800.0, false);
    e.on_delivery_rate(ms(30), 700.0, false);
    assert!(e.measured() && e.saturated(ms(40)));
    assert_eq!(e.latest_delivery_rate(), 700.0);
    // The windowed maximum, not the latest sample; the pacer no longer matters.
    assert_eq!(e.estimate(ms(40), None, 1e9), 800.0);
    // A controller's model above the samples wins (it rides out a minimum-RTT probe's dip).
    assert_eq!(e.estimate(ms(40), Some(900.0), 1e9), 900.0);
    assert_eq!(e.estimate(ms(40), Some(300.0), 1e9), 800.0);
    // An application-limited sample above the maximum counts in the recent window only.
    e.on_delivery_rate(ms(50), 2000.0, true);
    assert_eq!(e.estimate(ms(60), None, 0.0), 800.0);
}

#[test]
fn unsaturated_the_packet_pair_wins_over_application_limited_samples() {
    let mut e = CapacityEstimate::default();
    e.on_packet_pair(ms(0), 1000.0);
    e.on_delivery_rate(ms(10), 400.0, true);
    assert!(!e.saturated(ms(20)));
    assert_eq!(e.estimate(ms(20), None, 5.0), 1000.0);
    assert_eq!(e.estimate(ms(20), Some(1300.0), 5.0), 1000.0, "the model may carry an inflated sample");
    e.on_delivery_rate(ms(30), 800.0, false);
    assert_eq!(e.estimate(ms(40), None, 5.0), 800.0, "saturated: the delivery rate");
    // Three seconds later the saturated samples have aged out: the pair again.
    assert_eq!(e.estimate(ms(3100), None, 5.0), 1000.0);
}

#[test]
fn samples_held_back_by_the_scheduler_are_not_saturated() {
    let mut e = CapacityEstimate::default();
    e.hold_back(10_000, false);
    assert!(e.held_back(10_000) && !e.held_back(10_001));
    assert!(!e.held_for_another(10_000), "a session's only path was held for nothing else");
    e.hold_back(20_000, true);
    assert!(e.held_for_another(20_000) && !e.held_for_another(20_001));
    // A later hold with no other path leaves the earlier stretch as it was.
    e.hold_back(30_000, false);
    assert!(e.held_back(30_000) && e.held_for_another(20_000) && !e.held_for_another(20_001));
}

#[test]
fn after_a_rate_drop_the_estimate_follows_within_the_window() {
    let mut e = CapacityEstimate::default();
    // 1 MB/s for a second, then the link drops to 300 kB/s (samples every 10 ms).
    for t in (0..1000).step_by(10) {
        e.on_delivery_rate(ms(t), 1e6, false);
    }
    for t in (1000..4000).step_by(10) {
        e.on_delivery_rate(ms(t), 3e5, false);
        let c = e.estimate(ms(t), None, 0.0);
        if t < 1000 + RATE_WINDOW.as_millis() as u64 / 2 {
            assert_eq!(c, 1e6, "at {t} ms the high samples are inside the window");
        }
        if t >= 1000 + RATE_WINDOW.as_millis() as u64 {
            assert_eq!(c, 3e5, "at {t} ms they have left it");
        }
    }
}

#[test]
fn the_drain_rate_decays_per_sample_and_keeps_through_silence() {
    let mut e = CapacityEstimate::default();
    e.on_delivery_rate(ms(0), 1000.0, false);
    assert_eq!(e.drain_rate(), 1000.0);
    for i in 1..=10 {
        e.on_delivery_rate(ms(i), 100.0, false);
    }
    let want = 1000.0 * DECAY.powi(10);
    assert!((e.drain_rate() - want).abs() < 1e-9, "{} {want}", e.drain_rate());
    // Application-limited samples below it do not lower it.
    e.on_delivery_rate(ms(20), 50.0, true);
    assert!((e.drain_rate() - want).abs() < 1e-9);
    // Silence: the estimate's windows expire, the drain rate stays.
    // (Within rounding: `powi` may differ from repeated products in the last bit.)
    assert!((e.estimate(ms(60_000), None, 0.0) - want).abs() < 1e-9);
    assert!((e.drain_rate() - want).abs() < 1e-9);
    // A packet pair above it raises it.
    e.on_packet_pair(ms(60_000), 5000.0);
    assert_eq!(e.drain_rate(), 5000.0);
}

#[test]
fn the_weight_filter_starts_at_the_estimate_and_halves_a_step() {
    assert_eq!(weight_filter(None, 800.0), 800.0);
    assert_eq!(weight_filter(Some(800.0), 200.0), 500.0);
    assert_eq!(weight_filter(Some(500.0), 200.0), 350.0);
}

#[test]
fn goodput_capacity_removes_the_loss() {
    assert_eq!(goodput_capacity(1000.0, 0.0), 1000.0);
    assert_eq!(goodput_capacity(1000.0, 0.25), 750.0);
    assert_eq!(goodput_capacity(1000.0, 1.5), 0.0);
}

#[test]
fn what_a_path_carried_leaves_its_packet_pair_out() {
    let mut e = CapacityEstimate::default();
    // A pair read at the gap floor (one receive batch): 11.6 Gbit/s.
    e.on_packet_pair(ms(0), 1.45e9);
    e.on_delivery_rate(ms(10), 250_000.0, true);
    assert_eq!(e.estimate(ms(20), None, 0.0), 1.45e9, "unsaturated, the pair is the estimate");
    assert_eq!(e.carried(ms(20), None), 250_000.0, "what the path delivered, not the pair");
    assert_eq!(e.carried(ms(20), Some(300_000.0)), 300_000.0, "or the controller's model");
    // Saturated, both agree.
    e.on_delivery_rate(ms(30), 280_000.0, false);
    assert_eq!(e.carried(ms(40), None), e.estimate(ms(40), None, 0.0));
    // Long after the windows expired, the decaying maximum remains.
    assert!(e.carried(ms(60_000), None) >= 250_000.0 * 0.98);
    assert_eq!(CapacityEstimate::default().carried(ms(0), None), 1.0, "never zero");
}

#[test]
fn a_sample_held_back_for_another_path_raises_the_estimate() {
    let mut e = CapacityEstimate::default();
    e.on_packet_pair(ms(0), 12.5e6);
    // The path's first saturated samples, before its rate was known.
    e.on_delivery_rate(ms(300), 19_000.0, false);
    // Then held at the scheduler's bound to keep another path in use: each sample a lower
    // bound, above the saturated one.
    e.on_held_back_rate(ms(400), 57_000.0, true);
    assert!(e.saturated(ms(500)));
    assert_eq!(e.estimate(ms(500), None, 0.0), 57_000.0, "at least what the path carried held back");
    assert_eq!(e.carried(ms(500), None), 57_000.0);
    // A sample limited by the application does not: an idle path keeps its saturated peak.
    e.on_delivery_rate(ms(450), 90_000.0, true);
    assert_eq!(e.estimate(ms(500), None, 0.0), 57_000.0);
    // Without saturated samples in the window, rule 2 (the pair) applies as before.
    assert_eq!(e.estimate(ms(3000), None, 0.0), 12.5e6);
}

#[test]
fn a_lone_path_held_back_climbs_by_a_doubling_a_window() {
    let mut e = CapacityEstimate::default();
    e.on_delivery_rate(ms(300), 19_000.0, false);
    // Held back with no other path to use: a doubling above the saturated samples at most.
    e.on_held_back_rate(ms(400), 100_000.0, false);
    let step = HELD_BACK_GAIN * 19_000.0;
    assert_eq!(e.estimate(ms(500), None, 0.0), step);
    assert_eq!(e.carried(ms(500), None), step);
    // Saturated at the loosened bound, the path climbs again.
    e.on_delivery_rate(ms(600), step, false);
    assert_eq!(e.estimate(ms(700), None, 0.0), HELD_BACK_GAIN * step);
    // Never above what the path carried held back.
    e.on_delivery_rate(ms(800), 60_000.0, false);
    assert_eq!(e.estimate(ms(900), None, 0.0), 100_000.0);
}

#[test]
fn a_packet_pair_well_below_a_held_back_sample_reads_low() {
    // Held back all along (no saturated sample), the path carried 54 units while a pair read
    // 36: the held-back sample is a lower bound, and the pair is taken as low.
    let mut e = CapacityEstimate::default();
    e.on_packet_pair(ms(0), 36.0);
    e.on_held_back_rate(ms(10), 54.0, true);
    assert!(!e.saturated(ms(20)));
    assert_eq!(e.estimate(ms(20), None, 5.0), 54.0);
    // Within a quarter of the pair, the pair stands (a held-back sample may carry ACK
    // compression).
    let mut e = CapacityEstimate::default();
    e.on_packet_pair(ms(0), 50.0);
    e.on_held_back_rate(ms(10), 54.0, true);
    assert_eq!(e.estimate(ms(20), None, 5.0), 50.0);
    // Once the held-back sample ages out, the pair again.
    assert_eq!(e.estimate(ms(3100), None, 5.0), 50.0);
}

#[test]
fn a_pair_counts_as_recent_for_the_estimate_window_only() {
    let mut e = CapacityEstimate::default();
    assert_eq!(e.recent_pair(ms(0)), None);
    e.on_packet_pair(ms(1_000), 12.5e6);
    assert_eq!(e.recent_pair(ms(1_000) + RATE_WINDOW), Some(12.5e6));
    // Older than the delivery-rate samples it would be weighed against: no longer recent,
    // though it stays the latest pair.
    assert_eq!(e.recent_pair(ms(1_001) + RATE_WINDOW), None);
    assert_eq!(e.packet_pair(), Some(12.5e6));
}
