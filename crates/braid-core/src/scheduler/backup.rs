//! Backup-aware scheduling: paths marked backup (PATH_STATUS backup, e.g. a metered LTE link)
//! carry data only when no active path is usable, or when the active paths are saturated —
//! none can send now and what waits would take them more than 50 ms to drain. Otherwise it is
//! min-RTT over the active paths.

use super::{eligible_for, fastest_ready, wait_for, Candidates, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;
use crate::wire::PathStatusKind;

pub use crate::timing::BACKUP_SATURATION as SATURATION;

/// The backup-aware scheduler.
#[derive(Debug, Default, Clone)]
pub struct Backup;

impl Scheduler for Backup {
    fn name(&self) -> &'static str {
        "backup"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let active: Candidates<'_> =
            eligible_for(paths, packet).filter(|p| p.status == PathStatusKind::Active).collect();
        if let Some(p) = fastest_ready(now, active.iter().copied()) {
            return Decision::Send(p.id);
        }
        let rate: f64 = active.iter().map(|p| p.rate).sum();
        let drain = packet.backlog_bytes as f64 / rate.max(1.0);
        let saturated = active.is_empty() || drain > SATURATION.as_secs_f64();
        let backups: Candidates<'_> =
            paths.iter().filter(|p| p.usable && p.status == PathStatusKind::Backup).collect();
        if saturated {
            if let Some(p) = fastest_ready(now, backups.iter().copied()) {
                return Decision::Send(p.id);
            }
            return wait_for(active.into_iter().chain(backups));
        }
        wait_for(active.into_iter())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{link, ms, packet};

    fn paths() -> [PathView; 2] {
        let mut p = [link(0, 10.0, 20), link(1, 50.0, 5)];
        p[1].status = PathStatusKind::Backup;
        p
    }

    #[test]
    fn active_first_even_when_backup_is_faster() {
        let mut s = Backup;
        assert_eq!(s.select(ms(0), &paths(), &packet()), Decision::Send(0));
    }

    #[test]
    fn backup_when_active_is_down_or_saturated() {
        let mut s = Backup;
        let mut p = paths();
        p[0].usable = false;
        assert_eq!(s.select(ms(0), &p, &packet()), Decision::Send(1));
        let mut p = paths();
        p[0].ready_at = Some(ms(1));
        // A small backlog (1200 bytes, 1 ms at 10 Mbit/s): wait for the active path.
        assert_eq!(s.select(ms(0), &p, &packet()), Decision::Wait(Some(ms(1))));
        // 1 MB waiting: 800 ms at 10 Mbit/s — the active path is saturated.
        let big = PacketInfo { backlog_bytes: 1_000_000, ..packet() };
        assert_eq!(s.select(ms(0), &p, &big), Decision::Send(1));
    }
}
