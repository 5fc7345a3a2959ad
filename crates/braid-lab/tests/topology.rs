//! Root-only: builds a two-link lab (one veth link, one VDE link with delay), checks that both
//! links carry traffic, that a cut really stops packets in both directions and that a restore
//! brings the link back, and that teardown leaves nothing behind. Skipped (with a message) when
//! not root or when the tools are missing; fails instead under CI or `BRAID_ROOT_TESTS=1`.

mod common;

use common::link;

use std::time::{Duration, Instant};

use braid_lab::topo::{link_exists, stale, Lab, Names};

#[test]
fn cut_stops_both_directions_and_teardown_is_clean() {
    if let Some(why) = common::skip_reason(&["ip", "tc", "nft", "vde_switch", "wirefilter"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let names = Names::for_pid(std::process::id());
    let id = names.id.clone();
    let mut lab = Lab::build(names, &[link(20, 0), link(5, 20)], None).expect("build lab");
    assert!(link_exists(&lab, 1) && link_exists(&lab, 2));

    for i in 1..=2 {
        assert_eq!(lab.probe(i, Duration::from_secs(3)).unwrap(), (true, true), "link {i} up");
    }
    for i in 1..=2 {
        lab.cut(i).unwrap();
        let t = Instant::now();
        let r = lab.probe(i, Duration::from_millis(400)).unwrap();
        assert_eq!(r, (false, false), "link {i} cut must block both directions");
        assert!(t.elapsed() < Duration::from_secs(3));
        // The other link is unaffected.
        let other = 3 - i;
        assert_eq!(lab.probe(other, Duration::from_secs(3)).unwrap(), (true, true));
        lab.restore(i).unwrap();
        assert_eq!(lab.probe(i, Duration::from_secs(3)).unwrap(), (true, true), "link {i} restored");
    }

    let left = lab.teardown();
    assert!(left.is_clean(), "leftovers: {left:?}");
    drop(lab);
    assert!(!stale::lab_namespaces().iter().any(|n| n.starts_with(&id)), "namespaces left");
    assert!(stale::pids_mentioning(&format!("{id}/")).is_empty(), "processes left");
}
