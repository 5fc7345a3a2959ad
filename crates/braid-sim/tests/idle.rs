//! An idle session costs its keepalives: one PING a second each way and the ACK of each, at
//! any round trip.
//!
//! An ACK-only packet is made ack-eliciting when its path has sent nothing ack-eliciting for
//! `LIVENESS_MIN` (50 ms), so that a path that only carries ACKs learns its RTT. Between two
//! idle ends the ACK of a keepalive became a PING, whose ACK became a PING in turn, for ever,
//! once the two delayed ACKs of a round trip (2 × 25 ms) reached 50 ms: 1,584 packets in 30 s
//! at a 26 ms RTT (52.8 a second), 1,338 at 40 ms, 930 at 80 ms, where 101 cross at 10 ms.
//! Now that rule holds only while the session carries traffic (`Session::carries_traffic`).
//!
//! Left: a path that carries its own ACKs sends a copy of its ACK and then the ACK itself once
//! per liveness interval (`AckCarrier::carrier`): 190 packets in 30 s where 131 would do.
//! Sending it once moves busy multipath figures (docs/benchmarks.md, "Idle sessions talked").

use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig};
use std::time::Duration;

/// Packets both sides send over `secs` of an idle session on `link`.
fn idle_packets(link: &str, secs: u64, seed: u64) -> u64 {
    let mut cfg = SimConfig::bulk(
        vec![LinkSpec::parse(link).unwrap()],
        Duration::from_secs(secs),
        seed,
        SessionConfig::default(),
    );
    cfg.bulk = false;
    let r = run(&cfg).expect("runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r.packets_sent
}

#[test]
fn an_idle_session_sends_its_keepalives_and_their_acks_at_any_round_trip() {
    const SECS: u64 = 30;
    for link in [
        "10mbit/0ms",
        "10mbit/5ms",
        "10mbit/13ms",
        "10mbit/20ms",
        "10mbit/40ms",
        "10mbit/150ms",
        "1mbit/300ms",
    ] {
        for seed in [1, 2] {
            let n = idle_packets(link, SECS, seed);
            // Two keepalives a second, their ACKs and the copies: 101-190 here.
            assert!(n <= SECS * 7, "{link}, seed {seed}: {n} packets in {SECS} s of idle");
        }
    }
}
