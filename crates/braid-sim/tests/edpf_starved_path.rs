//! EDPF must not starve a fast path whose estimate is low only because it was never fed
//! (issue 14). A path over a hundred times slower than the others carries no stream data
//! (`scheduler::edpf::keep_in_order_capable`); one left out that way gets probes alone, so its
//! estimate stays at what a packet or two a round trip delivers. Judged by that estimate, a
//! 100 Mbit/s, 150 ms path beside two 100 Mbit/s, 20 ms paths read 0.1–0.8 Mbit/s and
//! carried 103 kbit/s over the first 7 s; its packet pair read 98 Mbit/s throughout.

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

#[test]
fn a_fast_path_with_a_long_delay_is_used_from_the_start() {
    let links = ["100mbit/20ms", "100mbit/150ms", "100mbit/20ms"];
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::Edpf, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(7), 2, session)).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    let slow = &r.paths[1];
    // Before: 102.7 kbit/s over the 7 s, efficiency 0.601; now 60.9 Mbit/s, 0.800.
    assert!(slow.goodput_bps > 40e6, "the 150 ms path carried {} bit/s", slow.goodput_bps);
    assert!(r.efficiency > 0.75, "efficiency {:.3}", r.efficiency);
}
