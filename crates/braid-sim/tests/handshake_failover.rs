//! Handshake failover (issue 13): the client's handshake goes out on link 0 first and, when
//! that link does not answer, on the next — the core's `connect::Failover`, which the daemon's
//! client runs too. A dead first link costs the first try (2 s), not the handshake timeout
//! (10 s); a client whose every link is dead gives up after the budget with a clear error.

use braid_core::SessionConfig;
use braid_sim::{run, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

const DEAD: &str = "down=0s-1000s";

fn sim(links: &[&str], secs: u64, first_try: Option<Duration>) -> SimReport {
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let mut cfg = SimConfig::bulk(links, Duration::from_secs(secs), 7, SessionConfig::default());
    cfg.handshake_first_try = first_try;
    run(&cfg).unwrap()
}

fn established(r: &SimReport) -> (f64, usize) {
    let h = &r.handshake;
    match (h.established_ms, h.link) {
        (Some(ms), Some(link)) => (ms, link),
        _ => panic!("never established: {h:?}"),
    }
}

#[test]
fn a_live_first_link_takes_one_attempt() {
    let r = sim(&["10mbit/20ms", "5mbit/30ms"], 5, None);
    let (ms, link) = established(&r);
    assert_eq!((link, r.handshake.attempts), (0, 1));
    assert!(ms < 100.0, "{ms}");
}

#[test]
fn first_link_dead_from_the_start() {
    let r = sim(&[&format!("10mbit/20ms/{DEAD}"), "5mbit/30ms"], 10, None);
    let (ms, link) = established(&r);
    assert_eq!((link, r.handshake.attempts), (1, 2));
    // The first try (2 s) and one round trip on link 1.
    assert!((2000.0..2200.0).contains(&ms), "{ms}");
    assert!(r.intact && r.goodput_bps > 3e6, "{} bit/s", r.goodput_bps);
    assert!(r.closed.is_none(), "{:?}", r.closed);
    // One link at a time, each for the whole handshake timeout (the daemon before): 10 s.
    let before = sim(&[&format!("10mbit/20ms/{DEAD}"), "5mbit/30ms"], 15, Some(Duration::from_secs(10)));
    assert!(established(&before).0 >= 10_000.0);
}

#[test]
fn first_two_links_dead() {
    let r = sim(&[&format!("10mbit/20ms/{DEAD}"), &format!("8mbit/25ms/{DEAD}"), "5mbit/30ms"], 10, None);
    let (ms, link) = established(&r);
    assert_eq!((link, r.handshake.attempts), (2, 3));
    assert!((4000.0..4200.0).contains(&ms), "{ms}");
    // 5 Mbit/s for the 6 s after it, averaged over the 10 s run.
    assert!(r.intact && r.goodput_bps > 2e6, "{} bit/s", r.goodput_bps);
}

#[test]
fn every_link_dead_gives_up_after_the_budget() {
    let r = sim(&[&format!("10mbit/20ms/{DEAD}"), &format!("5mbit/30ms/{DEAD}")], 60, None);
    let h = &r.handshake;
    assert_eq!(h.established_ms, None);
    assert_eq!(h.gave_up.as_deref(), Some("no answer from the server over any link"));
    // Two links × the 10 s handshake timeout, then the run ends: no hang.
    assert_eq!(h.gave_up_ms, Some(20_000.0));
    assert_eq!(h.attempts, 5);
    assert!(r.closed.is_some());
}

#[test]
fn first_link_comes_back() {
    // Both links dead at the start; link 0 comes back at 12 s, after one attempt on each link
    // of the whole 10 s timeout would have given up (at 20 s, never trying link 0 again).
    let r = sim(&["10mbit/20ms/down=0s-12s", &format!("5mbit/30ms/{DEAD}")], 20, None);
    let (ms, link) = established(&r);
    assert_eq!(link, 0);
    assert!((12_000.0..12_200.0).contains(&ms), "{ms}");
    assert!(r.intact && r.goodput_bps > 3e6, "{} bit/s", r.goodput_bps);
}

#[test]
fn failover_is_deterministic() {
    let links = [&format!("10mbit/20ms/{DEAD}") as &str, "5mbit/30ms"];
    assert_eq!(sim(&links, 5, None).wire_digest, sim(&links, 5, None).wire_digest);
}
