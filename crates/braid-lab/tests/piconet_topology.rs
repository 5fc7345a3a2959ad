//! Root-only: builds a piconet (`[share]`): link 1 in the client namespace, links 2 and 3 in
//! two neighbour namespaces joined to the client by the LAN bridge. Checks where each link's
//! client end lives, that every WAN and the LAN carry traffic, that a neighbour's cut blocks
//! only its link, and that teardown removes the neighbours too. Skipped (with a message) when
//! not root or when the tools are missing; fails instead under CI or `BRAID_ROOT_TESTS=1`.

mod common;

use common::link;

use std::net::TcpListener;
use std::time::Duration;

use braid_lab::scenario::ShareSpec;
use braid_lab::sys::netns::{in_netns, tcp_connect};
use braid_lab::topo::{link_exists, stale, Lab, Names};

#[test]
fn neighbours_hold_their_links_and_the_lan_joins_them_to_the_client() {
    if let Some(why) = common::skip_reason(&["ip", "tc", "nft", "vde_switch", "wirefilter"]) {
        eprintln!("skipping: {why}");
        return;
    }
    let names = Names::for_pid(std::process::id());
    let id = names.id.clone();
    let share = ShareSpec { neighbours: 2, lan_rate_bps: 100_000_000 };
    let mut lab =
        Lab::build(names, &[link(10, 0), link(10, 5), link(5, 0)], Some(share)).expect("build piconet");
    assert_eq!(lab.own_links(), 1);
    assert_eq!(lab.neighbours(), [format!("{id}-nb1"), format!("{id}-nb2")]);
    assert_eq!(lab.link_ns(1), lab.cli());
    assert_eq!(lab.link_ns(2), format!("{id}-nb1"));
    assert_eq!(lab.link_ns(3), format!("{id}-nb2"));
    for i in 1..=3 {
        assert!(link_exists(&lab, i), "link {i}");
        assert_eq!(lab.probe(i, Duration::from_secs(3)).unwrap(), (true, true), "link {i} up");
    }
    // The LAN: the client reaches each neighbour's LAN address.
    for k in 1..=2 {
        let ns = lab.neighbours()[k - 1].clone();
        let l = in_netns(&ns, move || TcpListener::bind((Names::lan_addr(k).as_str(), 0))).unwrap().unwrap();
        tcp_connect(lab.cli(), l.local_addr().unwrap(), Duration::from_secs(3)).expect("LAN to neighbour");
    }
    // A neighbour's WAN cut blocks it alone.
    lab.cut(2).unwrap();
    assert_eq!(lab.probe(2, Duration::from_millis(400)).unwrap(), (false, false));
    assert_eq!(lab.probe(3, Duration::from_secs(3)).unwrap(), (true, true));
    lab.restore(2).unwrap();
    assert_eq!(lab.probe(2, Duration::from_secs(3)).unwrap(), (true, true));

    let left = lab.teardown();
    assert!(left.is_clean(), "leftovers: {left:?}");
    drop(lab);
    assert!(!stale::lab_namespaces().iter().any(|n| n.starts_with(&id)), "namespaces left");
}
