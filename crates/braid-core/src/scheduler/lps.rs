//! Layer-Priority Striping (seed 000 §III-D): for hierarchically layer-coded video, one traffic
//! class per layer, base layer most important. "The LPS algorithm matches the layer-priority to
//! the channel reliability … the base layer (ℓ0) is assigned to the most reliable channels,
//! where the channel loss rate is used as the metric for reliability. The packets for each
//! layer are striped in WRR fashion onto the allocated channels." Layers are cumulative ("ℓk
//! can only be used if all sublayers ℓi : i = 0, …, k − 1 are available"), so when a layer
//! does not fit, it and every layer above it are dropped at the sender. See [`super::priority`].

use super::priority::{Policy, PriorityStriping};

/// The LPS scheduler: the priority-striping engine with the layered policy.
pub fn lps() -> PriorityStriping {
    PriorityStriping::new(Policy::Layered, "lps")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::priority::tests::{channel, class};
    use crate::scheduler::test_util::{datagram, ms, sent};
    use crate::scheduler::{Decision, Scheduler};

    #[test]
    fn base_layer_on_the_most_reliable_path_and_the_top_layer_dropped() {
        // Seed 000 Table VII: 2 × 20 kbit/s at 5 % and 1 %; 3 layers of 15 kbit/s.
        let mut s = lps();
        s.on_classes(ms(0), &[class(0, 15.0), class(1, 15.0), class(2, 15.0)]);
        let paths = [channel(0, 0.05), channel(1, 0.01)];
        for _ in 0..20 {
            assert_eq!(sent(s.select(ms(0), &paths, &datagram(0))), 1);
        }
        let l1: Vec<_> = (0..40).map(|_| sent(s.select(ms(0), &paths, &datagram(1)))).collect();
        assert!(l1.contains(&0) && l1.contains(&1), "layer 1 spans both paths: {l1:?}");
        assert_eq!(s.select(ms(0), &paths, &datagram(2)), Decision::Drop);
    }

    #[test]
    fn allocation_shifts_when_reliability_changes() {
        // Seed 000 Table VI: 3 × 20 kbit/s at 1/5/10 %, 3 layers of 15 kbit/s: each layer on the
        // next most reliable path, sharing what the one before left.
        let mut s = lps();
        s.on_classes(ms(0), &[class(0, 15.0), class(1, 15.0), class(2, 15.0)]);
        let mut paths = [channel(0, 0.10), channel(1, 0.01), channel(2, 0.05)];
        let first =
            |s: &PriorityStriping, c: u8| s.allocation()[&c].iter().map(|(p, _)| *p).collect::<Vec<_>>();
        assert_eq!(sent(s.select(ms(0), &paths, &datagram(0))), 1);
        assert_eq!((first(&s, 0), first(&s, 1), first(&s, 2)), (vec![1], vec![1, 2], vec![2, 0]));
        // Path 1 degrades to 10 % and path 0 recovers to 1 %: "the allocation is shifted".
        paths[0].loss_rate = 0.01;
        paths[1].loss_rate = 0.10;
        assert_eq!(sent(s.select(ms(600), &paths, &datagram(0))), 0);
        assert_eq!((first(&s, 1), first(&s, 2)), (vec![0, 2], vec![2, 1]));
        // Path 0 goes away: the base layer moves down to the best remaining path, and the top
        // layer no longer fits.
        paths[0].usable = false;
        assert_eq!(sent(s.select(ms(700), &paths, &datagram(0))), 2);
        assert_eq!(s.select(ms(700), &paths, &datagram(2)), Decision::Drop);
    }
}
