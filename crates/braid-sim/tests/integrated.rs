//! Seed 003 Fig. 8, the integrated walk: Wi-Fi only, then 3G joins at 20 s, 2 s blackouts at
//! 40 s and 70 s, 1 % loss from 72 s. Each super-aggregation mechanism must act in its phase,
//! and a link that joins late (`SimConfig::joins`) must carry nothing before it joins.

use braid_core::cc::Algorithm;
use braid_core::config::AckPath;
use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

const WIFI: &str = "54mbit/25ms/mac=360us/shared/down=40s-42s,70s-72s/loss=0%@0s,1%@72s";
const THREE_G: &str = "1mbit/60ms";

/// The walk with NewReno (the paper's TCP); `on` turns all three mechanisms on.
fn walk(on: bool, three_g_backup: bool) -> SimReport {
    let session = SessionConfig {
        scheduler: Kind::MinRtt,
        congestion: Algorithm::NewReno,
        ack_path: if on { AckPath::Secondary } else { AckPath::SamePath },
        blackout_freeze: on,
        loss_fetching: on,
        loss_discrimination: on,
        ..SessionConfig::default()
    };
    let links = [WIFI, THREE_G].iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let mut c = SimConfig::bulk(links, Duration::from_secs(100), 1, session);
    c.joins = vec![(1, Duration::from_secs(20))];
    if three_g_backup {
        c.backup = vec![1];
    }
    let r = run(&c).expect("simulation runs");
    assert!(r.intact && r.errors.is_empty(), "{:?}", r.errors);
    r
}

/// Mean goodput (bit/s) of the 100 ms timeline within [a, b) seconds.
fn phase(r: &SimReport, a: u64, b: u64) -> f64 {
    let g: Vec<f64> =
        r.timeline.iter().filter(|(t, _)| *t >= a * 1000 && *t < b * 1000).map(|(_, g)| *g).collect();
    g.iter().sum::<f64>() / g.len() as f64
}

#[test]
fn seed003_fig8_each_mechanism_acts_in_its_phase() {
    let (off, on) = (walk(false, true), walk(true, true));
    // Wi-Fi only: nothing to differ.
    assert!((phase(&on, 0, 20) / phase(&off, 0, 20) - 1.0).abs() < 0.02);
    // 3G joined: offloading-ACK frees the Wi-Fi's airtime (paper's Android: +31 %).
    assert!(phase(&on, 20, 40) > 1.2 * phase(&off, 20, 40), "{} {}", phase(&on, 20, 40), phase(&off, 20, 40));
    // AP3's random loss: fetching, with the loss hidden from the window, keeps the rate.
    assert!(phase(&on, 72, 100) > 4.0 * phase(&off, 72, 100));
    // The whole walk (paper: +189 % with its own phase lengths).
    assert!(on.goodput_bps > 1.4 * off.goodput_bps, "{} {}", on.goodput_bps, off.goodput_bps);
}

#[test]
fn a_late_link_joins_when_told_and_not_before() {
    let r = walk(true, false);
    // Before 20 s only the Wi-Fi path carries data; after it the 3G path adds to the total and
    // carries the offloaded ACKs (its return bytes).
    assert!(phase(&r, 21, 40) > phase(&r, 0, 20) * 1.2);
    assert!(r.paths[1].return_bytes > 0 && r.paths[1].state == "active", "{:?}", r.paths[1].state);
    let links = [WIFI, THREE_G].iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let mut c = SimConfig::bulk(links, Duration::from_secs(10), 1, SessionConfig::default());
    c.joins = vec![(1, Duration::from_secs(20))];
    let r = run(&c).expect("simulation runs");
    assert_eq!(r.paths[1].goodput_bps, 0.0, "the 3G path joins at 20 s, after this 10 s run");
    assert_eq!(r.paths[1].return_bytes, 0);
}
