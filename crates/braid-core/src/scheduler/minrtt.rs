//! Min-RTT: the path with the lowest smoothed RTT among those that can send now (the default
//! scheduler of Linux MPTCP). With per-path pacing a path "can send" only when its pacer
//! releases the packet, so faster paths are preferred but every path is kept busy.

use super::{eligible_for, fastest_ready, wait_for, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;

/// The min-RTT scheduler.
#[derive(Debug, Default, Clone)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "minrtt"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        match fastest_ready(now, eligible_for(paths, packet)) {
            Some(p) => Decision::Send(p.id),
            None => wait_for(eligible_for(paths, packet)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{packet, view};
    use crate::wire::PathStatusKind;

    #[test]
    fn lowest_rtt_among_ready() {
        let mut s = MinRtt;
        let now = Timestamp::from_nanos(100);
        let paths = [view(0, 40, Some(0)), view(1, 10, Some(500)), view(2, 20, Some(50))];
        assert_eq!(s.select(now, &paths, &packet()), Decision::Send(2));
        let paths = [view(0, 40, None), view(1, 10, Some(500))];
        assert_eq!(s.select(now, &paths, &packet()), Decision::Wait(Some(Timestamp::from_nanos(500))));
        assert_eq!(s.select(now, &[view(0, 40, None)], &packet()), Decision::Wait(None));
    }

    #[test]
    fn backup_only_when_no_active_path() {
        let mut s = MinRtt;
        let now = Timestamp::from_nanos(100);
        let mut backup = view(0, 5, Some(0));
        backup.status = PathStatusKind::Backup;
        let mut paths = vec![backup, view(1, 50, Some(0))];
        assert_eq!(s.select(now, &paths, &packet()), Decision::Send(1));
        paths[1].usable = false;
        assert_eq!(s.select(now, &paths, &packet()), Decision::Send(0));
    }
}
