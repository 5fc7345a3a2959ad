//! Many sessions through one link (issue 13: "100 active sessions share a bottleneck within
//! 10 % of each other"). With BBR's ProbeRTT draining to one BDP, a session that starts while
//! the others keep the queue full takes that queue for its minimum RTT and, with the larger
//! window that follows, more than its share: `cc::Algorithm::BbrShared` drains to half a
//! BDP so that every session's minimum meets the empty queue and the shares converge.

use braid_core::cc::Algorithm;
use braid_core::SessionConfig;
use braid_sim::crowd::{run, CrowdConfig};
use braid_sim::LinkSpec;
use std::time::Duration;

fn crowd(congestion: Algorithm, secs: u64) -> braid_sim::crowd::CrowdReport {
    crowd_of(20, "50mbit/10ms", congestion, secs)
}

fn crowd_of(sessions: usize, link: &str, congestion: Algorithm, secs: u64) -> braid_sim::crowd::CrowdReport {
    let cfg = CrowdConfig {
        sessions,
        link: LinkSpec::parse(link).expect("link"),
        duration: Duration::from_secs(secs),
        stagger: Duration::from_millis(10),
        seed: 1,
        session: SessionConfig { congestion, ..SessionConfig::default() },
    };
    run(&cfg).expect("crowd runs")
}

#[test]
fn twenty_bbr_shared_sessions_share_one_link_within_fifteen_percent() {
    let r = crowd(Algorithm::BbrShared, 60);
    assert!(r.intact, "a session's data arrived damaged or a stream failed");
    assert!(r.utilisation > 0.9, "the sessions used {:.3} of the link", r.utilisation);
    assert!(
        r.max_deviation <= 0.15 && r.jain >= 0.99,
        "largest deviation {:.1} % of the mean, Jain {:.4}",
        100.0 * r.max_deviation,
        r.jain
    );
}

#[test]
fn a_latecomer_held_back_alone_cannot_loosen_its_own_bound_in_one_step() {
    // A single-path session's held-back delivery-rate samples raise its capacity estimate
    // (and so EDPF's in-flight bound) by at most `HELD_BACK_GAIN` a window. Uncapped, as at
    // 7802133, the sessions that started into the full queue ran ahead: largest deviation
    // 21.4 % here (44.5 % with 100 sessions through 200 Mbit/s); capped, 8.9 %.
    let r = crowd_of(30, "100mbit/10ms", Algorithm::BbrShared, 30);
    assert!(r.intact, "a session's data arrived damaged or a stream failed");
    assert!(
        r.max_deviation <= 0.15,
        "largest deviation {:.1} % of the mean, Jain {:.4}",
        100.0 * r.max_deviation,
        r.jain
    );
}

#[test]
fn with_bbr_the_latecomers_take_the_link() {
    // What BbrShared is for, side by side over 30 s: under default BBR the last sessions to
    // start hold the largest minimum RTT and the largest share (at 1acba67: the last 4.54
    // Mbit/s, the first 1.59, largest deviation 91 % of the mean; with bbr-shared 8.5 %).
    // EDPF's base RTT (9e9be7a) narrowed BBR's spread from 443 % to that; if this starts
    // failing, BBR itself has become fair and BbrShared may no longer be needed.
    let bbr = crowd(Algorithm::Bbr, 30);
    let shared = crowd(Algorithm::BbrShared, 30);
    let (first, last) = (bbr.goodput_bps[0], bbr.goodput_bps[19]);
    assert!(last > 2.0 * first, "the last session got {last:.0} bit/s, the first {first:.0}");
    assert!(
        bbr.max_deviation > 4.0 * shared.max_deviation,
        "largest deviation {:.1} % with bbr, {:.1} % with bbr-shared",
        100.0 * bbr.max_deviation,
        100.0 * shared.max_deviation
    );
}

#[test]
fn a_crowd_of_none_is_refused() {
    let cfg = CrowdConfig {
        sessions: 0,
        link: LinkSpec::parse("1mbit/10ms").expect("link"),
        duration: Duration::from_secs(1),
        stagger: Duration::ZERO,
        seed: 1,
        session: SessionConfig::default(),
    };
    assert!(run(&cfg).is_err());
}

#[test]
fn a_crowd_whose_last_session_starts_after_the_measured_half_is_refused() {
    let cfg = |sessions: usize, stagger: Duration| CrowdConfig {
        sessions,
        link: LinkSpec::parse("1mbit/10ms").expect("link"),
        duration: Duration::from_secs(2),
        stagger,
        seed: 1,
        session: SessionConfig::default(),
    };
    // The third session would start at 2 s, after the measured half (1 s to 2 s) began: its
    // goodput would read as 0, an unfairness of the set-up, not of the sessions.
    assert!(run(&cfg(3, Duration::from_secs(1))).is_err());
    // A stagger whose product overflows is refused, not a panic.
    assert!(run(&cfg(3, Duration::MAX)).is_err());
    assert!(run(&cfg(3, Duration::from_millis(500))).is_ok());
}
