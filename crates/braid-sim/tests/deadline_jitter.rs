//! MMTP's path choice on a jittery path (`scheduler::deadline`, seed 001 §5.1): a path that is
//! earlier on average but whose one-way delay varies by tens of milliseconds delivers many
//! frames after their deadline, where a steadier path delivers them in time. The deadline
//! scheduler takes each path's arrival to be late by three times its delay variation — the
//! deviation of the forward delays the peer's ACK timestamps give, or the receiver's measured
//! jitter with receiver reports (seed 000's two-sided monitor). Without that margin 759 of 3623
//! frames arrived late here.

use braid_core::scheduler::Kind;
use braid_core::{SessionConfig, TrafficClass};
use braid_sim::{run, FlowSpec, LinkSpec, SimConfig, SimReport};
use std::time::Duration;

fn frames(scheduler: Kind, receiver_reports: bool) -> SimReport {
    frames_over(&["2mbit/20ms/jitter=60ms", "2mbit/40ms"], 70, scheduler, receiver_reports)
}

fn frames_over(links: &[&str], deadline_ms: u64, scheduler: Kind, receiver_reports: bool) -> SimReport {
    let links = links.iter().map(|l| LinkSpec::parse(l).unwrap()).collect();
    let mut session = SessionConfig { scheduler, receiver_reports, ..SessionConfig::default() };
    let class =
        TrafficClass { deadline: Some(Duration::from_millis(deadline_ms)), ..TrafficClass::default() };
    session.classes.insert(0, class);
    let flows = vec![FlowSpec { class: 0, rate_bps: 500_000, size: 1000 }];
    let cfg = SimConfig { bulk: false, flows, ..SimConfig::bulk(links, Duration::from_secs(60), 1, session) };
    let r = run(&cfg).expect("simulation runs");
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    r
}

#[test]
fn frames_go_to_the_steady_path_when_the_early_one_jitters() {
    let edpf = &frames(Kind::Edpf, false).classes[0];
    for reports in [false, true] {
        let d = &frames(Kind::Deadline, reports).classes[0];
        // Measured: 62 (sender's view) and 577 (receiver's) late; EDPF, earliest arrival
        // without a margin, 834 (at stop 49; 115, 187 and 688 with half the RTT variation and
        // RTT-ranked ACK routes); the deadline scheduler without the margin, 759.
        assert!(
            d.late * 4 < edpf.late * 3,
            "reports {reports}: {} late against EDPF's {}",
            d.late,
            edpf.late
        );
        assert!(
            d.on_time > edpf.on_time,
            "reports {reports}: {} on time against {}",
            d.on_time,
            edpf.on_time
        );
    }
}

/// The steady path's variation is its own: the sender measures it from the forward delays the
/// peer's ACK timestamps give (`OneWay::forward_variation`), not from half its RTT variation,
/// which holds the jitter of whichever path its ACKs return on. With the ACKs of the 40 ms path
/// on the jittery 10 ms one, the RTT's variation made the steady path look as jittery and the
/// scheduler left it: 159 frames on time here, 1364 when the ACKs took the RTT-ranked route,
/// 1863 now.
#[test]
fn a_steady_path_is_not_judged_by_the_jitter_of_its_ack_route() {
    let d = &frames_over(&["2mbit/10ms/jitter=60ms", "2mbit/40ms"], 50, Kind::Deadline, false).classes[0];
    assert!(d.on_time >= 1700, "{} on time, {} late", d.on_time, d.late);
}
