//! Weighted round-robin (seeds 000, 002): packets are striped "in proportion to each channel's
//! bandwidth". Seed 000 implements it as Surplus Round Robin, the packet approximation of
//! bit-WRR: on its turn a path's counter grows by a quantum proportional to its weight, it
//! sends while the counter is positive, and the overshoot carries into the next round.
//!
//! Weights are static (set per path with `Session::set_path_weight`, as seed 002's sysfs
//! weights) or automatic: every second each path's capacity estimate is filtered (EWMA,
//! α = 0.5, [`crate::path::capacity::weight_filter`]) and the weights are set proportional to it, the largest being 100 (seed 002 §V:
//! "calculates the available bandwidth … combined and filtered to calculate a link weight
//! set"). Seed 002's second rule is applied on top — "As the disparity of the link impairments
//! on the component links increases, overweight the highest bandwidth link" — by scaling a
//! path's weight by (1 − Δ/4 %) when its loss exceeds the best path's by Δ between 1 % and
//! 4 % (for paths of 1 Mbit/s or less: (1 − Δ/10 %) beyond 2.5 %, as seed 002 found slow links
//! to tolerate more); the third rule (use the best link alone) is path admission's.
//!
//! When the weights change the counters are reset, as NATALIE "resets a packet counter for
//! each link, and starts distributing packets according to the new weights" — the change is
//! live and disturbs no stream.
//!
//! Like round-robin the turn is strict: a path that cannot send now keeps it.

use super::surplus::SurplusTurn;
use super::{eligible_for, striped, wait_for, Decision, PacketInfo, PathView, Scheduler};
use crate::path::capacity::weight_filter;
use crate::path::PathId;
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// Bytes a path of weight 100 may send per turn: about one packet. The turn is strict and each
/// path is paced at its rate, so while one path spends its turn the others wait; with five
/// packets a turn, four equal 115.2 kbit/s links carried 0.51 of their sum (one path sending at
/// a time, `braid sim` with four `115.2kbit/100ms` links, 60 s), with one packet 0.82.
const QUANTUM: f64 = 1500.0;
pub use crate::timing::REWEIGHT_INTERVAL;
/// Loss disparity below which weights follow bandwidth alone (seed 002 rule 1).
pub const DISPARITY_LOW: f64 = 0.01;
/// Loss disparity at which the worse path's weight reaches zero (seed 002 rule 2 → rule 3).
pub const DISPARITY_HIGH: f64 = 0.04;
/// The same two for paths of 1 Mbit/s or less, where seed 002 found aggregation paying up to
/// 10 % loss (Case I at 1 Mbit/s).
pub const DISPARITY_LOW_SLOW: f64 = 0.025;
/// See [`DISPARITY_LOW_SLOW`].
pub const DISPARITY_HIGH_SLOW: f64 = 0.10;

/// The weighted round-robin scheduler.
#[derive(Debug, Default, Clone)]
pub struct Wrr {
    weights: BTreeMap<PathId, u32>,
    turn: SurplusTurn,
    smoothed: BTreeMap<PathId, f64>,
    next_reweight: Option<Timestamp>,
}

impl Wrr {
    /// The weights in force, by path.
    pub fn weights(&self) -> &BTreeMap<PathId, u32> {
        &self.weights
    }

    /// Recomputes the weights when due or when the set of paths changed.
    fn reweight(&mut self, now: Timestamp, paths: &[&PathView]) {
        let same_set =
            paths.len() == self.weights.len() && paths.iter().all(|p| self.weights.contains_key(&p.id));
        let statics_match =
            paths.iter().all(|p| p.weight.is_none_or(|w| self.weights.get(&p.id) == Some(&w.max(1))));
        if same_set && statics_match && self.next_reweight.is_some_and(|t| now < t) {
            return;
        }
        self.next_reweight = Some(now + REWEIGHT_INTERVAL);
        for p in paths {
            let previous = self.smoothed.get(&p.id).copied();
            self.smoothed.insert(p.id, weight_filter(previous, p.rate));
        }
        self.smoothed.retain(|id, _| paths.iter().any(|p| p.id == *id));
        let new = auto_weights(paths, &self.smoothed);
        let changed = new.iter().any(|(id, w)| self.weights.get(id).is_some_and(|old| old != w));
        if changed {
            // "resets a packet counter for each link, and starts distributing packets
            // according to the new weights"
            self.turn.reset();
        }
        // A path that came or went only joins or leaves the rotation.
        self.weights = new;
    }
}

/// Weights for `paths`: static ones as given; the others proportional to their smoothed
/// capacity (largest 100) and reduced for loss disparity (seed 002 rule 2).
pub fn auto_weights(paths: &[&PathView], capacity: &BTreeMap<PathId, f64>) -> BTreeMap<PathId, u32> {
    let cap = |p: &PathView| capacity.get(&p.id).copied().unwrap_or(p.rate).max(1.0);
    // The best path: the highest capacity, then the lowest loss.
    let best = paths.iter().max_by(|a, b| {
        cap(a).total_cmp(&cap(b)).then(b.loss_rate.total_cmp(&a.loss_rate)).then(b.id.cmp(&a.id))
    });
    let max = best.map_or(1.0, |p| cap(p));
    let best_loss = best.map_or(0.0, |p| p.loss_rate);
    paths
        .iter()
        .map(|p| {
            let w = match p.weight {
                Some(w) => w.max(1),
                None => {
                    let delta = p.loss_rate - best_loss;
                    let slow = cap(p) <= super::admission::SLOW_PATH && max <= super::admission::SLOW_PATH;
                    let (low, high) = if slow {
                        (DISPARITY_LOW_SLOW, DISPARITY_HIGH_SLOW)
                    } else {
                        (DISPARITY_LOW, DISPARITY_HIGH)
                    };
                    let scale = if delta <= low { 1.0 } else { (1.0 - delta / high).max(0.0) };
                    ((100.0 * cap(p) / max * scale).round() as u32).clamp(1, 100)
                }
            };
            (p.id, w)
        })
        .collect()
}

impl Scheduler for Wrr {
    fn name(&self) -> &'static str {
        "wrr"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let mut candidates: Vec<&PathView> = eligible_for(paths, packet).collect();
        if candidates.is_empty() {
            return wait_for(eligible_for(paths, packet));
        }
        candidates.sort_by_key(|p| p.id);
        self.reweight(now, &candidates);
        let quanta: Vec<(PathId, f64)> = candidates
            .iter()
            .map(|p| (p.id, QUANTUM * f64::from(self.weights.get(&p.id).copied().unwrap_or(1)) / 100.0))
            .collect();
        let id = self.turn.next(&quanta);
        let path = candidates.iter().find(|p| p.id == id).expect("a candidate");
        let (decision, used) = striped(now, path, packet);
        if used {
            self.turn.charge(id, packet.bytes);
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, link, ms, packet, sent};

    fn shares(s: &mut Wrr, paths: &[PathView], n: usize) -> Vec<usize> {
        let mut counts = vec![0; paths.len()];
        for _ in 0..n {
            counts[sent(s.select(ms(0), paths, &datagram(0))) as usize] += 1;
        }
        counts
    }

    #[test]
    fn auto_weights_follow_capacity() {
        // 200/100/50 kbit/s: the paper's 4:2:1 (seed 004).
        let paths = [link(0, 0.2, 15), link(1, 0.1, 50), link(2, 0.05, 50)];
        let mut s = Wrr::default();
        let c = shares(&mut s, &paths, 7000);
        assert_eq!(s.weights().values().copied().collect::<Vec<_>>(), vec![100, 50, 25]);
        assert!((3950..4050).contains(&c[0]) && (1950..2050).contains(&c[1]), "{c:?}");
    }

    #[test]
    fn static_weights_and_live_change() {
        let mut paths = [link(0, 10.0, 5), link(1, 10.0, 5)];
        paths[0].weight = Some(100);
        paths[1].weight = Some(50);
        let mut s = Wrr::default();
        let c = shares(&mut s, &paths, 3000);
        assert!((1950..2050).contains(&c[0]), "{c:?}");
        // A weight written live takes effect at once, counters reset.
        paths[1].weight = Some(100);
        let c = shares(&mut s, &paths, 2000);
        assert!((980..1020).contains(&c[0]), "{c:?}");
    }

    #[test]
    fn loss_disparity_overweights_the_best_path() {
        let mut paths = [link(0, 10.0, 5), link(1, 10.0, 5)];
        paths[1].loss_rate = 0.02; // Δ = 2 %: weight × 0.5
        let w = auto_weights(&paths.iter().collect::<Vec<_>>(), &BTreeMap::new());
        assert_eq!(w.values().copied().collect::<Vec<_>>(), vec![100, 50]);
        paths[1].loss_rate = 0.005; // within rule 1
        let w = auto_weights(&paths.iter().collect::<Vec<_>>(), &BTreeMap::new());
        assert_eq!(w.values().copied().collect::<Vec<_>>(), vec![100, 100]);
    }

    #[test]
    fn strict_turn_waits_for_stream_data() {
        let mut paths = [link(0, 10.0, 5), link(1, 10.0, 5)];
        let mut s = Wrr::default();
        // Weight 100 each: quantum 1500; a path sends while its counter is positive, so two
        // 1200-byte packets per turn.
        for _ in 0..2 {
            assert_eq!(s.select(ms(0), &paths, &packet()), Decision::Send(0));
        }
        paths[1].ready_at = Some(ms(3));
        assert_eq!(s.select(ms(0), &paths, &packet()), Decision::Wait(Some(ms(3))));
        assert_eq!(s.select(ms(3), &paths, &packet()), Decision::Send(1));
    }
}
