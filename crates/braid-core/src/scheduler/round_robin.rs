//! Round-robin (seed 000): paths take turns. A path that cannot send now (full window, paced)
//! loses its turn rather than blocking the others.

use super::{eligible, wait_for, Decision, PacketInfo, PathView, Scheduler};
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

    fn select(&mut self, now: Timestamp, paths: &[PathView], _packet: &PacketInfo) -> Decision {
        let ready: Vec<PathId> = eligible(paths).filter(|p| p.ready(now)).map(|p| p.id).collect();
        if ready.is_empty() {
            return wait_for(eligible(paths));
        }
        // The first ready path after the last one used, wrapping around.
        let next = match self.last {
            Some(last) => ready.iter().copied().find(|&id| id > last).unwrap_or(ready[0]),
            None => ready[0],
        };
        self.last = Some(next);
        Decision::Send(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{packet, view};

    #[test]
    fn takes_turns_and_skips_blocked() {
        let mut s = RoundRobin::default();
        let now = Timestamp::from_nanos(10);
        let paths = [view(0, 10, Some(0)), view(1, 10, Some(0)), view(2, 10, Some(0))];
        let picks: Vec<_> = (0..6).map(|_| s.select(now, &paths, &packet())).collect();
        let ids: Vec<_> = picks
            .iter()
            .map(|d| match d {
                Decision::Send(i) => *i,
                _ => 99,
            })
            .collect();
        assert_eq!(ids, vec![0, 1, 2, 0, 1, 2]);
        let paths = [view(0, 10, Some(0)), view(1, 10, None), view(2, 10, Some(0))];
        let ids: Vec<_> = (0..4).map(|_| s.select(now, &paths, &packet())).collect();
        assert_eq!(ids, vec![Decision::Send(0), Decision::Send(2), Decision::Send(0), Decision::Send(2)]);
    }
}
