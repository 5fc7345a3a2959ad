//! The client's link and class policy (issue 11) in the simulator: link tiers, per-link rate
//! caps and per-class rate limits do what they say, and the server follows the client.

use braid_core::scheduler::Kind;
use braid_core::{SessionConfig, TrafficClass};
use braid_sim::{run, FlowSpec, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

fn cfg(specs: &[&str], session: SessionConfig, secs: u64) -> SimConfig {
    let links = specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    SimConfig::bulk(links, Duration::from_secs(secs), 1, session)
}

fn go(c: &SimConfig) -> SimReport {
    let r = run(c).expect("simulation runs");
    assert!(r.errors.is_empty() && r.closed.is_none(), "{:?} {:?}", r.errors, r.closed);
    r
}

/// A secondary link carries nothing while the primary can carry the load, and takes its
/// share when the primary cannot (Speedify's "secondary": used when the others are short).
#[test]
fn a_secondary_link_carries_only_what_the_primary_cannot() {
    let specs = ["10mbit/10ms", "10mbit/20ms"];
    // 2 Mbit/s of datagrams: the primary alone suffices.
    let mut light = cfg(&specs, SessionConfig::default(), 20);
    light.bulk = false;
    light.flows = vec![FlowSpec { class: 0, rate_bps: 2_000_000, size: 1000 }];
    light.secondary = vec![1];
    let r = go(&light);
    let assigned: Vec<u64> = r.paths.iter().map(|p| p.datagrams_assigned).collect();
    assert!(assigned[1] * 100 <= assigned[0], "secondary used while the primary sufficed: {assigned:?}");
    assert!(r.classes[0].loss_pct < 1.0, "{}", r.classes[0].loss_pct);
    // A bulk transfer: the primary is short, the secondary carries its share.
    let mut heavy = cfg(&specs, SessionConfig::default(), 20);
    heavy.secondary = vec![1];
    let r = go(&heavy);
    assert!(r.intact);
    assert!(r.paths[1].goodput_bps > 7e6, "secondary under a bulk load: {}", r.paths[1].goodput_bps);
    assert!(r.goodput_bps > 0.9 * 20e6 * 0.95, "{}", r.goodput_bps);
}

/// A backup link carries nothing while an active one is up.
#[test]
fn a_backup_link_waits_while_the_active_one_is_up() {
    let mut c = cfg(&["10mbit/10ms", "10mbit/20ms"], SessionConfig::default(), 15);
    c.backup = vec![1];
    let r = go(&c);
    assert!(r.paths[1].goodput_bps < 0.01 * r.paths[0].goodput_bps, "{:?}", r.paths);
}

/// A link capped at 4 Mbit/s carries no more, and the session still uses the rest.
#[test]
fn a_capped_link_carries_no_more_than_its_cap() {
    let mut c = cfg(
        &["20mbit/10ms", "20mbit/10ms"],
        SessionConfig { scheduler: Kind::Edpf, ..SessionConfig::default() },
        20,
    );
    c.max_rates = vec![None, Some(500_000)];
    let r = go(&c);
    assert!(r.intact);
    let capped = r.paths[1].goodput_bps;
    assert!(capped <= 4.1e6 && capped > 3.0e6, "capped link: {capped}");
    assert!(r.paths[0].goodput_bps > 17e6, "{}", r.paths[0].goodput_bps);
}

/// A class with a maximum rate is held to it; a datagram class over its maximum loses the
/// excess at its deadline, not another class's share.
#[test]
fn a_class_is_held_to_its_maximum_rate() {
    let mut session = SessionConfig::default();
    session.classes.insert(0, TrafficClass { max_rate: Some(250_000), ..TrafficClass::default() });
    let r = go(&cfg(&["20mbit/10ms", "10mbit/20ms"], session.clone(), 20));
    assert!(r.intact);
    assert!(r.goodput_bps <= 2.05e6 && r.goodput_bps > 1.7e6, "bulk at 2 Mbit/s max: {}", r.goodput_bps);

    session.classes.insert(
        1,
        TrafficClass { priority: 1, deadline: Some(Duration::from_millis(200)), ..TrafficClass::default() },
    );
    session.classes.get_mut(&0).unwrap().deadline = Some(Duration::from_millis(200));
    let mut c = cfg(&["20mbit/10ms", "10mbit/20ms"], session, 20);
    c.bulk = false;
    c.flows = vec![
        FlowSpec { class: 0, rate_bps: 4_000_000, size: 1000 },
        FlowSpec { class: 1, rate_bps: 4_000_000, size: 1000 },
    ];
    let r = go(&c);
    let (limited, free) = (&r.classes[0], &r.classes[1]);
    assert!(
        (40.0..60.0).contains(&limited.loss_pct),
        "class 0 at 2 of 4 Mbit/s: {:.1} % lost",
        limited.loss_pct
    );
    assert!(free.loss_pct < 1.0, "class 1 unlimited: {:.1} % lost", free.loss_pct);
}
