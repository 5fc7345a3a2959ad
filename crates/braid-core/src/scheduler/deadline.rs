//! Deadline-aware scheduling (seed 001 §5.1, MMTP): the path for each packet is chosen from
//! its estimated bandwidth and delay, and "MMTP will drop packets that it estimates cannot
//! arrive on time". A datagram whose class has a deadline goes to the path where it would
//! arrive first ([`PathView::arrival`], counting what is queued there); if even that is after
//! its deadline, it is dropped at the sender (counted as expired in the class's datagram
//! statistics, which is how the application learns of "the lack of necessary resources").
//! Everything else is scheduled as by EDPF.

use super::edpf::Edpf;
use super::{eligible_for, wait_for, Candidates, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;

/// The deadline-aware scheduler.
#[derive(Debug, Default, Clone)]
pub struct DeadlineAware;

impl Scheduler for DeadlineAware {
    fn name(&self) -> &'static str {
        "deadline"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let candidates: Candidates<'_> = eligible_for(paths, packet).collect();
        if candidates.is_empty() {
            return wait_for(eligible_for(paths, packet));
        }
        if let Some(deadline) = packet.deadline {
            let bytes = packet.bytes as u64;
            let best = candidates.iter().min_by_key(|p| (p.arrival(now, bytes), p.id)).expect("non-empty");
            if best.arrival(now, bytes) > deadline {
                return Decision::Drop;
            }
        }
        Edpf::choose(now, &candidates, packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, link, ms};

    #[test]
    fn drops_what_cannot_arrive_in_time() {
        let mut s = DeadlineAware;
        let mut paths = [link(0, 8.0, 10), link(1, 2.0, 40)];
        let d = |t: u64| PacketInfo { deadline: Some(ms(t)), ..datagram(0) };
        assert_eq!(s.select(ms(0), &paths, &d(50)), Decision::Send(0)); // arrives at 11 ms
        assert_eq!(s.select(ms(0), &paths, &d(10)), Decision::Drop);
        // The fast path's queue holds 45 ms of data: the slow path still makes 50 ms.
        paths[0].queued_bytes = 45_000;
        assert_eq!(s.select(ms(0), &paths, &d(50)), Decision::Send(1));
        assert_eq!(s.select(ms(0), &paths, &d(43)), Decision::Drop);
        // No deadline: EDPF.
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Send(1));
    }
}
