//! A path whose capacity collapses must not keep the old rate in EDPF's plan (issue 14). At
//! 10 s a 20 Mbit/s path drops to 50 kbit/s beside a 100 Mbit/s one; what it had queued
//! drains at the new rate for a minute. Its estimate's inputs all kept the old rate (a packet
//! pair is not taken on a busy path, BBR's model filters over ten of the new, seconds-long round
//! trips), so EDPF went on placing packets on it that arrived seconds later, and the receiver
//! held 2,027 packets on average to the end. `Path::queue_bound` caps the estimate by what the
//! path's own queue allows.

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

#[test]
fn a_path_whose_capacity_collapsed_stops_holding_up_the_stream() {
    let links = ["100mbit/20ms", "20mbit/50ms/capacity=20mbit@0s,50kbit@10s"];
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::Edpf, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(30), 1, session)).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.intact, "the stream arrived damaged");
    // Before: 2,027 packets held on average after the warm-up, efficiency 0.786; now 208 and
    // 0.799.
    assert!(
        r.reorder_mean_lossfree_packets < 600.0,
        "held {:.0} packets on average",
        r.reorder_mean_lossfree_packets
    );
    assert!(r.efficiency > 0.78, "efficiency {:.3}", r.efficiency);
}
