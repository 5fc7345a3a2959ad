//! Independent-Path Striping (seed 000 §III-D): for multiple-description video, whose
//! descriptions decode independently. "The IPS algorithm tries to achieve path diversity by
//! allocating a separate channel for each description. Since the video can be reconstructed
//! (albeit at lower quality) even if one or more entire subflows are lost, video reception is
//! protected against one or more complete channel failure(s)." Each class takes paths no other
//! class uses, most reliable first; only when those run out does it share the least loaded
//! path. A class that does not fit is dropped alone — the others still decode.

use super::priority::{Policy, PriorityStriping};

/// The IPS scheduler: the priority-striping engine with the independent policy.
pub fn ips() -> PriorityStriping {
    PriorityStriping::new(Policy::Independent, "ips")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::priority::tests::{channel, class};
    use crate::scheduler::test_util::{datagram, ms, sent};
    use crate::scheduler::{Decision, Scheduler};

    #[test]
    fn one_path_per_description() {
        // Two descriptions of 5 kbit/s each: LPS would put both on the best path; IPS keeps
        // them apart so that losing a path loses one description.
        let classes = [class(0, 5.0), class(1, 5.0)];
        let paths = [channel(0, 0.02), channel(1, 0.01), channel(2, 0.03)];
        let mut ips = ips();
        ips.on_classes(ms(0), &classes);
        assert_eq!(sent(ips.select(ms(0), &paths, &datagram(0))), 1);
        assert_eq!(sent(ips.select(ms(0), &paths, &datagram(1))), 0);
        let mut lps = super::super::lps::lps();
        lps.on_classes(ms(0), &classes);
        assert_eq!(sent(lps.select(ms(0), &paths, &datagram(1))), 1);
    }

    #[test]
    fn a_description_that_does_not_fit_is_dropped_alone() {
        let classes = [class(0, 15.0), class(1, 30.0), class(2, 15.0)];
        let paths = [channel(0, 0.01), channel(1, 0.05)];
        let mut ips = ips();
        ips.on_classes(ms(0), &classes);
        assert_eq!(sent(ips.select(ms(0), &paths, &datagram(0))), 0);
        assert_eq!(ips.select(ms(0), &paths, &datagram(1)), Decision::Drop);
        assert_eq!(sent(ips.select(ms(0), &paths, &datagram(2))), 1);
    }
}
