//! Receive windows sized from the measured delay skew (seed 004 §V, Figs. 6–10;
//! `braid_core::session::window_sizing`): with the paper's 64 KB receive buffers, two
//! 20 Mbit/s paths of 5 and 150 ms are throttled by a fixed window; the sized one grows from
//! the same floor until the paths are used, and stays the configured window on a small skew.

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

/// 64 KB windows, as the paper's TCP receive buffers (seed 004 Table I).
const WINDOW: u64 = 64_000;

fn go(specs: &[&str], cap: u64) -> SimReport {
    let session = SessionConfig { stream_window: WINDOW, session_window: WINDOW, ..SessionConfig::default() };
    go_with(specs, cap, session)
}

fn go_with(specs: &[&str], cap: u64, session: SessionConfig) -> SimReport {
    let links = specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::Edpf, receive_window_cap: cap, ..session };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(12), 1, session)).unwrap();
    assert!(r.intact, "{specs:?}: stream not intact");
    r
}

#[test]
fn sized_window_lifts_the_throttle_of_a_fixed_one_on_a_high_skew() {
    let skewed = ["20mbit/5ms", "20mbit/150ms"];
    let fixed = go(&skewed, 1);
    let sized = go(&skewed, 128 << 20);
    // The fixed window allows 64 KB per round trip of the slow path and its credit.
    assert_eq!(fixed.receive_window_bytes, WINDOW);
    assert!(fixed.efficiency < 0.5, "fixed window efficiency {:.3}", fixed.efficiency);
    // Sized: twice the aggregate rate × (skew + RTT), about 5 MB/s × 0.31 s × 2, a few MB.
    assert!(sized.receive_window_bytes > 1_000_000, "sized window {}", sized.receive_window_bytes);
    assert!(
        sized.goodput_bps > 1.3 * fixed.goodput_bps,
        "sized {:.0} bit/s against fixed {:.0}",
        sized.goodput_bps,
        fixed.goodput_bps
    );
}

#[test]
fn small_skew_keeps_the_configured_window() {
    // The default windows (16 MB per stream, 32 MB per session) stay as they are on 40 Mbit/s
    // of 5 and 20 ms: 2 × 5 MB/s × (15 ms + a round trip with queueing) is far below them.
    let default = SessionConfig::default();
    let r = go_with(&["20mbit/5ms", "20mbit/20ms"], default.receive_window_cap, default.clone());
    assert_eq!(r.receive_window_bytes, default.session_window);
}

#[test]
fn sized_window_stays_under_its_cap() {
    let r = go(&["20mbit/5ms", "20mbit/150ms"], 500_000);
    assert_eq!(r.receive_window_bytes, 500_000);
}
