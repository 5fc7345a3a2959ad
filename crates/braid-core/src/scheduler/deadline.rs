//! Deadline-aware scheduling (seed 001 §5.1, MMTP): the path for each packet is chosen from
//! its estimated bandwidth and delay, and "MMTP will drop packets that it estimates cannot
//! arrive on time". A datagram whose class has a deadline goes to the path where it would
//! arrive first ([`PathView::arrival`], counting what is queued there); if even that is after
//! its deadline, it is dropped at the sender (counted as expired in the class's datagram
//! statistics, which is how the application learns of "the lack of necessary resources").
//! Everything else is scheduled as by EDPF.
//!
//! A path's arrival is taken to be late by [`JITTER_MARGIN`] times how much its one-way delay
//! varies ([`PathView::jitter`]) when the path is chosen: a datagram goes where it arrives first
//! *with that margin* among the paths that make its deadline on average, so a steady path wins
//! over one that is earlier on average but often late. The variation is the receiver's measured
//! jitter with `--receiver-reports` (seed 000 §III-B's two-sided channel monitor), else the
//! deviation of the forward delays the peer's ACK timestamps give (half the sender's RTT
//! variation before those). The drop rule keeps the estimate without the margin: a datagram is
//! dropped only when no path delivers it in time on average. (`braid sim --link
//! 2mbit/20ms/jitter=60ms --link 2mbit/40ms --workload cbr:500kbit --deadline 70ms --scheduler
//! deadline`: 759 of 3623 frames late with no margin when the margin came; now 62 with the
//! forward deviation, 577 with the receiver's jitter; docs/experiments.md.)

use super::edpf::Edpf;
use super::{eligible_for, wait_for, Candidates, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;

/// How many delay variations ([`PathView::jitter`]) a path's arrival is taken to be late by
/// when choosing a path for a datagram with a deadline. RFC 3550's jitter is the mean
/// difference between successive transit times: for a delay spread evenly over [0, D] it is
/// D/3, so three cover the spread.
pub const JITTER_MARGIN: u32 = 3;

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
            if packet.datagram {
                // Among the paths that make the deadline on average, the one that makes it
                // with the margin soonest (with no variation known: the earliest, as EDPF).
                let late = |p: &PathView| p.arrival(now, bytes) + JITTER_MARGIN * p.jitter;
                let steady = candidates
                    .iter()
                    .filter(|p| p.arrival(now, bytes) <= deadline)
                    .min_by_key(|p| (late(p), p.id))
                    .expect("the earliest path makes the deadline");
                return Decision::Send(steady.id);
            }
        }
        Edpf::choose(now, &candidates, packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, link, ms};
    use std::time::Duration;

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

    #[test]
    fn a_steady_path_wins_over_an_earlier_one_that_jitters() {
        let mut s = DeadlineAware;
        // Arrivals at 11 ms and 21 ms; the first path's receiver reports 5 ms of jitter.
        let mut paths = [link(0, 8.0, 10), link(1, 8.0, 20)];
        let d = PacketInfo { deadline: Some(ms(40)), ..datagram(0) };
        assert_eq!(s.select(ms(0), &paths, &d), Decision::Send(0));
        paths[0].jitter = Duration::from_millis(5); // 11 + 15 = 26 ms against 21
        assert_eq!(s.select(ms(0), &paths, &d), Decision::Send(1));
        paths[0].jitter = Duration::from_millis(3); // 11 + 9 = 20 ms: still the first
        assert_eq!(s.select(ms(0), &paths, &d), Decision::Send(0));
        // A path that cannot make the deadline on average is not chosen for its steadiness;
        // and a datagram is dropped only when no path makes it on average.
        paths[0].jitter = Duration::from_millis(50);
        let tight = PacketInfo { deadline: Some(ms(15)), ..datagram(0) };
        assert_eq!(s.select(ms(0), &paths, &tight), Decision::Send(0));
        let past = PacketInfo { deadline: Some(ms(10)), ..datagram(0) };
        assert_eq!(s.select(ms(0), &paths, &past), Decision::Drop);
    }
}
