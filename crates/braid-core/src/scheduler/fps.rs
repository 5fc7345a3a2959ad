//! Frame-Priority Striping (seed 000 §III-D): an MPEG stream split into frame-type subflows,
//! one traffic class each, "The priority order for the frames in MPEG Group of Pictures (GoP)
//! is I>P>B. Similar to the LPS algorithm, the channels are allocated according to the subflow
//! priority. The I-frame subflow (sfI) is sent over the most reliable channels, and so on."
//!
//! It differs from LPS in how a class is sized: frames come in bursts (a large I frame per
//! group of pictures), so a class is given paths for its peak rate — the busiest second of the
//! last five — rather than its mean, and its bursts are not cut short by the allocation. P
//! frames need the I frames and B frames both, so classes are cumulative as in LPS.

use super::priority::{Policy, PriorityStriping};

/// The FPS scheduler: the priority-striping engine with the frame policy.
pub fn fps() -> PriorityStriping {
    PriorityStriping::new(Policy::Frame, "fps")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::priority::tests::{channel, class};
    use crate::scheduler::test_util::{datagram, ms, sent};
    use crate::scheduler::{Decision, Scheduler};

    #[test]
    fn i_frames_get_room_for_their_bursts() {
        // I frames average 10 kbit/s but peak at 17 kbit/s; P and B average 10 kbit/s each.
        let mut i = class(0, 10.0);
        i.peak_rate = 17_000.0 / 8.0;
        let classes = [i, class(1, 10.0), class(2, 10.0)];
        let paths = [channel(0, 0.01), channel(1, 0.05)];
        let mut fps = fps();
        fps.on_classes(ms(0), &classes);
        assert_eq!(sent(fps.select(ms(0), &paths, &datagram(0))), 0);
        let alloc = fps.allocation().clone();
        // The I class takes 17 of the 17.8 kbit/s the 1 % path offers (20 kbit/s × 0.99 × 0.9),
        // so P moves on to the 5 % path and B no longer fits: dropped.
        assert_eq!(alloc[&0].len(), 1);
        assert_eq!(alloc[&1].iter().map(|(p, _)| *p).collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(fps.select(ms(0), &paths, &datagram(2)), Decision::Drop);
        // LPS sizes by the mean and carries all three.
        let mut lps = super::super::lps::lps();
        lps.on_classes(ms(0), &classes);
        assert!(matches!(lps.select(ms(0), &paths, &datagram(2)), Decision::Send(_)));
    }
}
