//! One-way legs of a path's round trip when its ACKs come back on another path.
//!
//! A path's RTT is its forward leg plus the return leg of the path its ACKs ride on (the
//! offloading-ACK carrier, seed 003). Links are taken as symmetric, so a carrier's return
//! leg is its own forward leg — which is its floor RTT less *its* carrier's leg, and so on
//! down the chain to a path whose ACKs come back on itself (half its floor).
//!
//! Taking every carrier's leg as half its floor RTT, as braid did, is wrong whenever the
//! carrier's own ACKs ride elsewhere: on `100mbit/50ms 5mbit/5ms 20mbit/20ms 20mbit/50ms`
//! the 100 Mbit/s path's ACKs rode the 20 ms path, whose ACKs rode the 5 ms path, so its
//! floor of 25 ms gave a return leg of 12.5 ms for a link of 20. EDPF then expected the fast
//! path's packets 7.5 ms after they came, and the receiver held ~95 packets on average outside
//! loss recovery (`braid sim`, 15 s); resolved down the chain, 29
//! (`braid-sim/tests/papers.rs::edpf_resolves_a_chain_of_ack_carriers`).

use super::{Path, PathState};
use smallvec::SmallVec;
use std::time::Duration;

/// The forward leg of a path whose RTT floor is `rtt` and whose ACKs come back over a leg of
/// `back` (None when they come back on the path itself): the floor less the return leg, or
/// half the floor on the path itself. Never less than `back`: a floor below the carrier's leg
/// is a misread (an estimate of a path that moved), not a link faster one way.
///
/// The leg keeps half the path's packet transmission time that the floor holds. Taking it
/// out (the leg as pure propagation, the transmission added once by
/// [`crate::scheduler::PathView::arrival`]) was tried: EDPF's sweep within 10 packets outside
/// loss recovery fell from 58 to 37 of 90 mixes (`bench/sim-sweep.py`, seeds 7, 11, 3).
pub fn one_way(rtt: Duration, back: Option<Duration>) -> Duration {
    match back {
        Some(leg) => rtt.saturating_sub(leg).max(leg),
        None => rtt / 2,
    }
}

/// The forward leg of `paths[idx]` ([`one_way`] of its floor RTT), with the return leg of its
/// ACKs' route resolved down the chain of carriers; half its floor when its ACKs come back on
/// itself, their route is unknown, or the chain loops. None while the path is not active or
/// has no RTT sample.
pub fn forward_leg(paths: &[Path], idx: usize) -> Option<Duration> {
    let measured = |p: &&Path| p.state == PathState::Active && p.rtt.has_sample();
    let first = paths.get(idx).filter(measured)?;
    let mut chain: SmallVec<[&Path; 8]> = SmallVec::new();
    let mut cur = first;
    while let Some(r) = cur.rtt.route().filter(|r| *r != cur.id) {
        if chain.iter().any(|p| p.id == r) || chain.len() >= paths.len() {
            break;
        }
        let Some(next) = paths.iter().find(|p| p.id == r).filter(measured) else { break };
        chain.push(cur);
        cur = next;
    }
    let mut leg = one_way(cur.rtt.floor(), None);
    for p in chain.iter().rev() {
        leg = one_way(p.rtt.floor(), Some(leg));
    }
    Some(leg)
}

/// The return leg of `paths[idx]`'s ACKs: the forward leg of the active path they come back
/// on, when that is another path (links taken as symmetric); None when they come back on the
/// path itself or on a path not measured.
pub fn carrier_leg(paths: &[Path], idx: usize) -> Option<Duration> {
    let p = paths.get(idx)?;
    let r = p.rtt.route().filter(|r| *r != p.id)?;
    let c = paths.iter().position(|q| q.id == r)?;
    forward_leg(paths, c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Algorithm;
    use crate::time::Timestamp;

    /// An active path `id` with one RTT sample of `floor` whose ACK came back on `route`.
    fn measured_path(id: u8, floor: Duration, route: u8) -> Path {
        let addr = "127.0.0.1:9".parse().unwrap();
        let mut p = Path::new(id, None, addr, PathState::Active, Algorithm::Cubic, 1200, Timestamp::ZERO);
        p.rtt.next_sample_route(route, None);
        p.rtt.update(floor, Duration::ZERO);
        p
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn a_leg_is_the_floor_without_the_return_leg() {
        assert_eq!(one_way(ms(70), Some(ms(20))), ms(50));
        assert_eq!(one_way(ms(70), None), ms(35));
        // A floor below the return leg is a misread: the leg is kept.
        assert_eq!(one_way(ms(30), Some(ms(40))), ms(40));
    }

    #[test]
    fn a_chain_of_carriers_resolves_to_each_links_own_leg() {
        // 100mbit/50ms → ACKs on the 20 ms path → its ACKs on the 5 ms path (on itself).
        let paths = [measured_path(0, ms(70), 2), measured_path(1, ms(10), 1), measured_path(2, ms(25), 1)];
        assert_eq!(forward_leg(&paths, 1), Some(ms(5)));
        // Half the 20 ms path's floor would be 12.5 ms.
        assert_eq!(forward_leg(&paths, 2), Some(ms(20)));
        assert_eq!(forward_leg(&paths, 0), Some(ms(50)));
        assert_eq!(carrier_leg(&paths, 0), Some(ms(20)));
        assert_eq!(carrier_leg(&paths, 1), None);
    }

    #[test]
    fn a_loop_of_carriers_splits_the_floor_in_half() {
        let paths = [measured_path(0, ms(40), 1), measured_path(1, ms(40), 0)];
        assert_eq!(forward_leg(&paths, 0), Some(ms(20)));
        assert_eq!(forward_leg(&paths, 1), Some(ms(20)));
    }
}
