//! Key update in both directions (RFC 9001 §6) while a bulk stream crosses lossy, jittery
//! (reordering) links: many key phases, every byte intact, no stall.
//!
//! The long run of the issue (≥ 10^7 packets) is a command, not a test:
//! `braid sim --link 1gbit/5ms/loss=0.5%/jitter=1ms --link 400mbit/20ms/reorder=1% --duration 90s
//! --key-update-packets 1000000 --seed 7`.

use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

fn cfg(key_update_packets: Option<u64>, seed: u64) -> SimConfig {
    let links = ["20mbit/10ms/loss=1%/jitter=3ms", "5mbit/40ms/reorder=2%/loss=0.5%"]
        .iter()
        .map(|s| LinkSpec::parse(s).unwrap())
        .collect();
    let mut session = SessionConfig::default();
    session.key_update.packets = key_update_packets;
    SimConfig::bulk(links, Duration::from_secs(30), seed, session)
}

#[test]
fn many_key_phases_with_loss_and_reordering_stay_byte_exact() {
    for seed in [1, 2, 3] {
        let plain = run(&cfg(None, seed)).unwrap();
        let updated = run(&cfg(Some(1000), seed)).unwrap();
        assert!(updated.intact, "seed {seed}: {:?} {:?}", updated.closed, updated.errors);
        assert_eq!(plain.key_phase, 0);
        // One update a second at most (each waits out the previous key's grace).
        assert!(updated.key_phase >= 20, "seed {seed}: {} key phases", updated.key_phase);
        assert!(
            updated.goodput_bps > 0.97 * plain.goodput_bps,
            "seed {seed}: {} with key updates, {} without",
            updated.goodput_bps,
            plain.goodput_bps
        );
        assert!(updated.closed.is_none());
    }
}
