//! Random striping (seed 000, §III Table I): "a uniformly random channel per packet". Like the
//! paper's striper it does not look at whether the drawn path can send: a datagram waits in
//! that path's queue, stream data waits for the path. "Random and RR algorithms do not adapt
//! to channel bandwidth and allocate an equal number of packets to each channel."

use super::{eligible_for, striped, wait_for, Decision, PacketInfo, PathView, Scheduler, SplitMix};
use crate::path::PathId;
use crate::time::Timestamp;

/// The random scheduler.
#[derive(Debug, Clone)]
pub struct Random {
    rng: SplitMix,
    /// The path drawn for stream data that is waiting for it (kept until used, so that
    /// waiting does not favour paths that happen to be ready).
    drawn: Option<PathId>,
}

impl Random {
    /// A random scheduler whose draws derive from `seed`.
    pub fn new(seed: u64) -> Self {
        Random { rng: SplitMix::new(seed), drawn: None }
    }
}

impl Scheduler for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let candidates: Vec<&PathView> = eligible_for(paths, packet).collect();
        if candidates.is_empty() {
            return wait_for(eligible_for(paths, packet));
        }
        let kept =
            self.drawn.and_then(|id| candidates.iter().find(|p| p.id == id)).filter(|_| !packet.datagram);
        let path = match kept {
            Some(p) => *p,
            None => candidates[self.rng.below(candidates.len())],
        };
        let (decision, used) = striped(now, path, packet);
        self.drawn = if used { None } else { Some(path.id) };
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, packet, sent, view};

    #[test]
    fn spreads_evenly_and_ignores_readiness() {
        let mut s = Random::new(7);
        let now = Timestamp::from_nanos(10);
        // Path 1 cannot send now: datagrams are still assigned to it.
        let paths = [view(0, 10, Some(0)), view(1, 10, Some(1_000_000)), view(2, 10, None)];
        let mut counts = [0u32; 3];
        for _ in 0..3000 {
            counts[sent(s.select(now, &paths, &datagram(0))) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (900..1100).contains(&c)), "{counts:?}");
    }

    #[test]
    fn stream_data_waits_for_the_drawn_path() {
        let mut s = Random::new(1);
        let now = Timestamp::from_nanos(10);
        let paths = [view(0, 10, Some(0)), view(1, 10, Some(500))];
        // Draw until path 1 is drawn: then it waits for path 1, and keeps waiting.
        let mut waited = false;
        for _ in 0..20 {
            match s.select(now, &paths, &packet()) {
                Decision::Wait(t) => {
                    assert_eq!(t, Some(Timestamp::from_nanos(500)));
                    assert_eq!(s.select(now, &paths, &packet()), Decision::Wait(t));
                    waited = true;
                    break;
                }
                d => assert_eq!(d, Decision::Send(0)),
            }
        }
        assert!(waited);
        // Once path 1 can send, the waiting packet goes there.
        assert_eq!(s.select(Timestamp::from_nanos(500), &paths, &packet()), Decision::Send(1));
    }
}
