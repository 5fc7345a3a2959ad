//! Path MTU black holes: a link that silently drops braid's full-size packets (a tunnel or
//! PPPoE hop whose ICMP never returns) still carries the session, at the size it can pass.

use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

fn links(specs: &[&str]) -> Vec<LinkSpec> {
    specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect()
}

#[test]
fn a_black_hole_path_falls_back_and_finds_its_mtu() {
    // 1400-byte IP MTU: 1372 bytes of UDP payload, below braid's 1452.
    let cfg = SimConfig::bulk(
        links(&["20mbit/10ms/mtu=1400", "5mbit/40ms"]),
        Duration::from_secs(20),
        1,
        SessionConfig::default(),
    );
    let r = run(&cfg).unwrap();
    assert!(r.intact);
    // Without black-hole detection the path carried nothing (efficiency 0.19).
    assert!(r.paths[0].goodput_bps > 15e6, "black-hole path: {}", r.paths[0].goodput_bps);
    let mtu = r.paths[0].mtu;
    assert!(mtu <= 1372 && mtu > 1372 - braid_core::path::mtu::SEARCH_STEP, "found {mtu}");
    assert_eq!(r.paths[1].mtu, 1452, "the clean path keeps the full size");
}

#[test]
fn a_black_hole_as_the_only_path_still_carries_the_stream() {
    let mut cfg = SimConfig::bulk(
        links(&["10mbit/20ms/mtu=1280"]),
        Duration::from_secs(20),
        3,
        SessionConfig::default(),
    );
    cfg.bulk_bytes = Some(5_000_000);
    let r = run(&cfg).unwrap();
    assert!(r.intact && r.complete, "{:?}", r.closed);
    assert!(r.paths[0].mtu <= 1252, "{}", r.paths[0].mtu);
}
