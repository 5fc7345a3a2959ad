//! Seed 003's offloading-ACK (`AckPath::Secondary`, see `braid_core`'s `session::ack_offload`):
//! its window gate and its dropping of replaceable ACKs, each shown to matter in the
//! simulator (short deterministic runs).

use braid_core::scheduler::Kind;
use braid_core::{AckPath, SessionConfig};
use braid_sim::{run, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

fn bulk(specs: &[&str], ack_path: AckPath) -> SimReport {
    let links = specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let session = SessionConfig { scheduler: Kind::MinRtt, ack_path, ..SessionConfig::default() };
    let r = run(&SimConfig::bulk(links, Duration::from_secs(10), 1, session)).expect("simulation runs");
    assert!(r.errors.is_empty() && r.intact, "{:?}", r.errors);
    r
}

/// (a) With few packets a round trip on the Wi-Fi path (4 Mbit/s, 10 ms), offloading its
/// ACKs would only stretch its RTT by the 3G's: the window gate keeps most of them at home
/// and goodput stays at least that of same-path ACKs. (Without the gate: 4.20 Mbit/s against
/// 4.45 with same-path ACKs.)
#[test]
fn offloading_waits_for_a_large_window() {
    let l = ["4mbit/5ms/shared/mac=100us", "1mbit/60ms"];
    let same = bulk(&l, AckPath::SamePath);
    let off = bulk(&l, AckPath::Secondary);
    assert!(
        off.goodput_bps >= 0.99 * same.goodput_bps,
        "secondary {} vs same path {}",
        off.goodput_bps,
        same.goodput_bps
    );
}

/// (c) A 420 kbit/s 3G path carries only part of an 802.11g path's ACKs: the replaceable
/// rest is dropped, not sent on the Wi-Fi where it would take airtime from the data. Without
/// dropping, the Wi-Fi carries over half the ACK bytes it carries with same-path ACKs and
/// the gain falls from +29 % to +13 % (30 s runs).
#[test]
fn replaceable_acks_are_dropped_when_the_secondary_is_short() {
    let l = ["54mbit/25ms/shared/mac=360us", "420kbit/60ms"];
    let same = bulk(&l, AckPath::SamePath);
    let off = bulk(&l, AckPath::Secondary);
    let (wifi_same, wifi_off) = (same.paths[0].return_bytes, off.paths[0].return_bytes);
    assert!(wifi_off * 10 < wifi_same, "ACK bytes on the Wi-Fi: {wifi_off} vs {wifi_same}");
    // The Offloader's counters reach the report: ACK packets on the 3G and dropped ones.
    assert!(
        off.acks_offloaded > 1000 && off.acks_dropped > 1000,
        "{} / {}",
        off.acks_offloaded,
        off.acks_dropped
    );
    assert_eq!((same.acks_offloaded, same.acks_dropped), (0, 0));
    assert!(
        off.goodput_bps > 1.2 * same.goodput_bps,
        "secondary {} vs same path {}",
        off.goodput_bps,
        same.goodput_bps
    );
}
