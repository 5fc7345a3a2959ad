//! Selective redundancy (seed 003 §5, `session::critical`): each kind of copy does what it is
//! for, and copies stay within their budget. Each test fails with its part switched off.

use braid_core::cc::Algorithm;
use braid_core::scheduler::Kind;
use braid_core::{Redundancy, SessionConfig, TrafficClass};
use braid_sim::short::ShortSpec;
use braid_sim::{run, FlowSpec, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

/// Two lossy links of different delay (the experiment's pair).
const LOSSY: [&str; 2] = ["10mbit/20ms/loss=5%", "10mbit/60ms/loss=10%"];

/// `braid sim`'s defaults: min-RTT scheduler, BBR.
fn cfg(specs: &[&str], mut session: SessionConfig, secs: u64, seed: u64) -> SimConfig {
    session.scheduler = Kind::MinRtt;
    session.congestion = Algorithm::Bbr;
    let links = specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    SimConfig::bulk(links, Duration::from_secs(secs), seed, session)
}

fn go(c: &SimConfig) -> SimReport {
    let r = run(c).expect("simulation runs");
    assert!(r.errors.is_empty() && r.closed.is_none(), "{:?} {:?}", r.errors, r.closed);
    assert!(r.intact, "every byte arrived once, in order (the receiver dedupes copies)");
    for c in &r.classes {
        assert_eq!(c.duplicates, 0, "a datagram was delivered twice");
    }
    r
}

/// Short 2 kB request/response flows, every 100 ms, over the lossy pair; mean completion
/// time (ms) over three seeds.
fn short_flows(session: &SessionConfig) -> f64 {
    let mut total = 0.0;
    for seed in 1..=3 {
        let mut c = cfg(&LOSSY, session.clone(), 20, seed);
        c.bulk = false;
        c.short = Some(ShortSpec { size: 2000, interval: Duration::from_millis(100) });
        let r = go(&c);
        let s = r.short_flows.expect("short flows ran");
        assert_eq!(s.completed, s.opened, "every flow completed");
        total += s.mean_ms;
    }
    total / 3.0
}

/// (b) A flow's first bytes on two paths: short flows over lossy links complete sooner,
/// beyond what copying their control frames (STREAM_OPEN) alone gives.
#[test]
fn first_bytes_on_two_paths_shorten_short_flows() {
    let none = short_flows(&SessionConfig::default());
    let control_only = SessionConfig {
        redundancy: Redundancy::Critical,
        redundancy_first_bytes: 0,
        ..SessionConfig::default()
    };
    let control_only = short_flows(&control_only);
    let critical =
        short_flows(&SessionConfig { redundancy: Redundancy::Critical, ..SessionConfig::default() });
    eprintln!(
        "short flows mean: none {none:.1} ms, control only {control_only:.1} ms, critical {critical:.1} ms"
    );
    assert!(critical < 0.8 * control_only, "critical {critical:.1} ms, control only {control_only:.1} ms");
    assert!(critical < 0.8 * none, "critical {critical:.1} ms, none {none:.1} ms");
}

/// (a) Control frames that stall the peer: an upload held by a small stream window waits
/// for every MAX_STREAM_DATA; with credit frames copied, a lost credit stalls it less.
#[test]
fn copied_credit_frames_keep_a_window_limited_upload_moving() {
    let run_with = |redundancy| {
        let session = SessionConfig {
            redundancy,
            // Stream bytes are not copied: only control frames are.
            redundancy_first_bytes: 0,
            stream_window: 32 * 1024,
            ..SessionConfig::default()
        };
        let r = go(&cfg(&LOSSY, session, 20, 1));
        (r.goodput_bps, r.critical_copies)
    };
    let (none, none_copies) = run_with(Redundancy::None);
    let (critical, copies) = run_with(Redundancy::Critical);
    eprintln!("window-limited upload: none {none:.0} bit/s, critical {critical:.0} bit/s ({copies} copies)");
    assert_eq!(none_copies, 0);
    assert!(copies > 0);
    assert!(critical > 1.1 * none, "critical {critical:.0} bit/s, none {none:.0} bit/s");
}

/// Layered datagrams, base layer (class 0) marked `duplicate`: 1 Mbit/s base, 3 Mbit/s
/// enhancement, over the lossy pair.
fn layered(duplicate: bool, base_kbit: u64) -> SimReport {
    let mut session = SessionConfig::default();
    session.classes.insert(0, TrafficClass { priority: 0, duplicate, ..TrafficClass::default() });
    session.classes.insert(1, TrafficClass { priority: 1, ..TrafficClass::default() });
    let mut c = cfg(&LOSSY, session, 20, 1);
    c.bulk = false;
    c.flows = vec![
        FlowSpec { class: 0, rate_bps: base_kbit * 1000, size: 1000 },
        FlowSpec { class: 1, rate_bps: 3_000_000, size: 1000 },
    ];
    go(&c)
}

/// (c) A base layer's datagrams are duplicated, the enhancement layer's are not: the base
/// loses about the product of the links' losses, the enhancement what its links lose.
#[test]
fn a_duplicate_class_loses_far_less_than_the_others() {
    let plain = layered(false, 1000);
    let dup = layered(true, 1000);
    let (p0, p1) = (plain.classes[0].loss_pct, plain.classes[1].loss_pct);
    let (d0, d1) = (dup.classes[0].loss_pct, dup.classes[1].loss_pct);
    eprintln!("loss base/enhancement: plain {p0:.2}/{p1:.2} %, duplicate {d0:.2}/{d1:.2} %");
    assert!(d0 < 0.25 * p0 && d0 < 0.25 * d1, "base {d0:.2} %, enhancement {d1:.2} %, plain base {p0:.2} %");
    // Only the base layer was copied: its copies are about its own volume, not the enhancement's.
    let base_bytes = 1e6 / 8.0 * 18.0;
    let copied = dup.critical_copy_bytes as f64;
    assert!(copied > 0.8 * base_bytes && copied < 1.5 * base_bytes, "copied {copied:.0} bytes");
}

/// The budget: a 6 Mbit/s duplicate class over 20 Mbit/s of links may copy at most 10 % of
/// the capacity (2 Mbit/s) plus the 16 kB burst, not the 6 Mbit/s it asks for.
#[test]
fn copies_stay_within_their_share_of_capacity() {
    let r = layered(true, 6000);
    let secs = r.duration_s;
    let allowed = 0.1 * 20e6 / 8.0 * secs + 16_000.0;
    let copied = r.critical_copy_bytes as f64;
    eprintln!("copied {copied:.0} bytes, allowed {allowed:.0}");
    assert!(copied <= 1.1 * allowed, "copied {copied:.0} bytes, allowed {allowed:.0}");
    assert!(copied > 0.5 * allowed, "the budget is used: {copied:.0} of {allowed:.0}");
}
