//! Redundant scheduling (seed 003 §5.1: "sends a duplicate copy of those command packets" over
//! both interfaces; mirroring base-layer frames): every packet leaves on every usable path, or
//! on the N paths where it would arrive first (`redundant:N`). The receiver keeps the first
//! copy, so a datagram is lost only when every copy is — its loss is about the product of the
//! paths' losses — and it arrives with the fastest path's latency.
//!
//! The first copy goes on a path that can send now; the others wait in their paths' queues
//! (a datagram copy is dropped there when its deadline passes, a stream copy once what it
//! carries has been acknowledged), and a path whose queue holds more than 100 ms of data gets
//! no further copies. Path admission does not apply: a lossy path still adds redundancy.

use super::{usable_for_data, wait_for, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;
use smallvec::SmallVec;

pub use crate::timing::COPY_BACKLOG;

/// The redundant scheduler.
#[derive(Debug, Clone)]
pub struct Redundant {
    /// Copies per packet; 0 for every path.
    copies: u8,
}

impl Redundant {
    /// Copies on every path (`copies == 0`) or on the best `copies` paths.
    pub fn new(copies: u8) -> Self {
        Redundant { copies }
    }
}

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let bytes = packet.bytes as u64;
        // A copy is not queued behind more than 100 ms of what a path already has waiting (for
        // a bulk stream a slow path could never keep up).
        let mut chosen: Vec<&PathView> = usable_for_data(paths)
            .filter(|p| p.queued_bytes as f64 <= p.rate * COPY_BACKLOG.as_secs_f64())
            .collect();
        chosen.sort_by_key(|p| (p.arrival(now, bytes), p.id));
        if self.copies > 0 {
            chosen.truncate(usize::from(self.copies));
        }
        if chosen.is_empty() {
            return wait_for(usable_for_data(paths));
        }
        // The original leaves now on the first chosen path that can send; a datagram may also
        // wait in the earliest path's queue.
        let first = match chosen.iter().position(|p| p.ready(now)) {
            Some(i) => i,
            None if packet.datagram => 0,
            None => return wait_for(chosen.into_iter()),
        };
        let mut ids: SmallVec<[_; 4]> = SmallVec::new();
        ids.push(chosen[first].id);
        ids.extend(chosen.iter().enumerate().filter(|(i, _)| *i != first).map(|(_, p)| p.id));
        if ids.len() == 1 {
            Decision::Send(ids[0])
        } else {
            Decision::Redundant(ids)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, link, ms, packet};
    use smallvec::smallvec;

    #[test]
    fn copies_on_every_path_fastest_first() {
        let mut s = Redundant::new(0);
        let mut paths = [link(0, 2.0, 40), link(1, 8.0, 10), link(2, 4.0, 20)];
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Redundant(smallvec![1, 2, 0]));
        // Admission does not matter; a path that cannot send gets its copy queued.
        paths[2].admitted = false;
        paths[1].ready_at = Some(ms(5));
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Redundant(smallvec![2, 1, 0]));
        paths[1].usable = false;
        assert_eq!(s.select(ms(0), &paths, &packet()), Decision::Redundant(smallvec![2, 0]));
    }

    #[test]
    fn best_two() {
        let mut s = Redundant::new(2);
        let paths = [link(0, 2.0, 40), link(1, 8.0, 10), link(2, 4.0, 20)];
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Redundant(smallvec![1, 2]));
        let one = [link(0, 2.0, 40)];
        assert_eq!(s.select(ms(0), &one, &datagram(0)), Decision::Send(0));
    }

    #[test]
    fn stream_data_waits_when_no_chosen_path_can_send() {
        let mut s = Redundant::new(0);
        let mut paths = [link(0, 2.0, 40), link(1, 8.0, 10)];
        paths[0].ready_at = Some(ms(4));
        paths[1].ready_at = None;
        assert_eq!(s.select(ms(0), &paths, &packet()), Decision::Wait(Some(ms(4))));
    }
}
