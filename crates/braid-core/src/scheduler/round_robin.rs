//! Round-robin (seed 000): "one packet per channel in turn". The turn is strict — a path that
//! cannot send now keeps its turn (a datagram waits in its queue, stream data waits for it) —
//! so, as in the paper and as with Linux TEQL (seed 002), every path carries the same number
//! of packets whatever its capacity.

use super::{eligible_for, striped, wait_for, Decision, PacketInfo, PathView, Scheduler};
use crate::path::PathId;
use crate::time::Timestamp;

/// The round-robin scheduler.
#[derive(Debug, Default, Clone)]
pub struct RoundRobin {
    last: Option<PathId>,
}

impl Scheduler for RoundRobin {
    fn name(&self) -> &'static str {
        "rr"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let mut candidates: Vec<&PathView> = eligible_for(paths, packet).collect();
        if candidates.is_empty() {
            return wait_for(eligible_for(paths, packet));
        }
        candidates.sort_by_key(|p| p.id);
        // The first path after the last one used, wrapping around.
        let next = match self.last {
            Some(last) => candidates.iter().find(|p| p.id > last).unwrap_or(&candidates[0]),
            None => &candidates[0],
        };
        let (decision, used) = striped(now, next, packet);
        if used {
            self.last = Some(next.id);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, packet, view};

    #[test]
    fn strict_turns() {
        let mut s = RoundRobin::default();
        let now = Timestamp::from_nanos(10);
        let paths = [view(0, 10, Some(0)), view(1, 10, Some(0)), view(2, 10, Some(0))];
        let picks: Vec<_> = (0..6).map(|_| s.select(now, &paths, &packet())).collect();
        let want: Vec<_> = [0, 1, 2, 0, 1, 2].into_iter().map(Decision::Send).collect();
        assert_eq!(picks, want);
        // Path 1's pacer holds it: stream data waits for path 1 instead of skipping it.
        let paths = [view(0, 10, Some(0)), view(1, 10, Some(900)), view(2, 10, Some(0))];
        assert_eq!(s.select(now, &paths, &packet()), Decision::Send(0));
        assert_eq!(s.select(now, &paths, &packet()), Decision::Wait(Some(Timestamp::from_nanos(900))));
        assert_eq!(s.select(now, &paths, &packet()), Decision::Wait(Some(Timestamp::from_nanos(900))));
        // A datagram is assigned to path 1 anyway (it waits in path 1's queue).
        assert_eq!(s.select(now, &paths, &datagram(0)), Decision::Send(1));
        assert_eq!(s.select(now, &paths, &datagram(0)), Decision::Send(2));
    }

    #[test]
    fn skips_unusable_paths() {
        let mut s = RoundRobin::default();
        let now = Timestamp::from_nanos(10);
        let mut paths = [view(0, 10, Some(0)), view(1, 10, Some(0)), view(2, 10, Some(0))];
        paths[1].usable = false;
        let picks: Vec<_> = (0..4).map(|_| s.select(now, &paths, &packet())).collect();
        let want: Vec<_> = [0, 2, 0, 2].into_iter().map(Decision::Send).collect();
        assert_eq!(picks, want);
    }
}
