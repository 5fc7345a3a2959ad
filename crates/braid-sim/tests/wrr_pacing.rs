//! Weighted round-robin over paced paths: its strict turn must not leave all but one path idle
//! (with five packets a turn, four equal 115.2 kbit/s links carried half their sum).

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

#[test]
fn four_equal_slow_links_all_carry_under_wrr() {
    let links = (0..4).map(|_| LinkSpec::parse("115.2kbit/100ms").unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::Wrr, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(30), 1, session)).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.efficiency >= 0.7, "efficiency {:.3}", r.efficiency);
}
