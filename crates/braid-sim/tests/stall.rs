//! A stream stalled behind a slow path's packets (`session::stall`): a lowest-RTT path of
//! 50 kbit/s beside 100 Mbit/s at 50 ms took a window of packets before its rate was known;
//! each waited seconds in its queue while the fast path filled the send buffer and stood idle
//! (MinRTT efficiency 0.229 over 30 s). Its stalled heads are now sent again on the fast path.

use braid_core::scheduler::Kind;
use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

fn bulk(links: &[&str], scheduler: Kind) -> SimReport {
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let session = SessionConfig { scheduler, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(30), 1, session)).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    assert!(r.intact, "delivered bytes differ from those sent");
    r
}

#[test]
fn a_head_stalled_on_a_slow_path_is_sent_again() {
    let r = bulk(&["50kbit/5ms", "100mbit/50ms"], Kind::MinRtt);
    assert!(r.efficiency >= 0.6, "efficiency {:.3}", r.efficiency);
}

#[test]
fn no_copies_without_a_stall() {
    // Two equal lossless links: nothing is lost, nothing stalls, nothing is sent twice.
    let r = bulk(&["20mbit/10ms", "20mbit/10ms"], Kind::MinRtt);
    assert_eq!(r.retransmitted_bytes, 0);
    assert!(r.efficiency >= 0.9, "efficiency {:.3}", r.efficiency);
}
