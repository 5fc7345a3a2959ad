//! EDPF on a path whose base delay rises for good (issue 14): its in-flight bound must follow
//! the new round trip. Sized from the lifetime minimum RTT, a 20 Mbit/s path whose RTT rose
//! from 20 to 80 ms delivered less than its rate, measured that, and fell to 0.5 Mbit/s
//! (efficiency 0.356 over 30 s, MinRTT 0.945).

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

fn efficiency(links: &[&str]) -> f64 {
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::Edpf, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(30), 1, session)).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r.efficiency
}

#[test]
fn edpf_follows_a_base_delay_that_rose() {
    let e = efficiency(&["20mbit/10ms/delay=10ms@0s,40ms@10s"]);
    assert!(e >= 0.85, "efficiency {e:.3}");
}
