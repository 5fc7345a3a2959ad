//! Application-aware striping (seed 000 §III-C, §III-D): traffic classes in order of importance
//! onto paths in order of reliability. The shared engine of [`super::lps`], [`super::fps`] and
//! [`super::ips`].
//!
//! Seed 000 §III-C.1: "as many topmost (say, k) channels as necessary for transporting sf1
//! are assigned first to sf1, and then repeat the same procedure with the remaining channels
//! for sf2, and so on. If sf1 does not need the entire bandwidth of channel ch_k, the remaining
//! bandwidth of this channel is assigned to sf2, and ch_k will transmit the packets of sf1 and
//! sf2 using a Weighted Round-Robin … Also, if there is not enough bandwidth available, the
//! least important subflows are not transported at all."
//!
//! * Paths are ordered by reliability — "the channel loss rate is used as the metric for
//!   reliability" — then by rate. A path moves ahead of another only when its loss is lower by
//!   more than half a percent, so the order does not flap on noise; it is recomputed every
//!   500 ms and whenever a path comes or goes: "If a new channel with higher reliability
//!   becomes available, allocation of layers is shifted up".
//! * A path's effective bandwidth is its capacity × (1 − loss) × 0.95 ("derive the effective
//!   bandwidth of each channel from its raw bandwidth and loss-rate information"; the 10 %
//!   leaves room for acknowledgements and probes).
//! * A class is carried only if all of it fits in what the more important classes left
//!   (the digest's A1 reading of Table VII, where ℓ2 is dropped "entirely"), and packets of a
//!   class are striped over its paths by surplus round-robin weighted by the bandwidth each
//!   path gave it. A class that is not carried is dropped at the sender.
//! * A class's need is its measured rate (datagram bytes offered per second over the last few
//!   seconds, with packet overhead); stream classes are elastic and take whatever paths have
//!   left when their turn comes. A class that is carried keeps its paths until its need
//!   exceeds what is available by 10 %, and one that is dropped returns only when it fits with
//!   10 % to spare, so a class near the limit does not flap with the noise of its rate.

use super::surplus::SurplusTurn;
use super::{striped, usable_for_data, wait_for, ClassView, Decision, PacketInfo, PathView, Scheduler};
use crate::path::capacity::goodput_capacity;
use crate::path::PathId;
use crate::time::Timestamp;
use std::collections::BTreeMap;

pub use crate::timing::REALLOCATE;
/// Share of a path's effective bandwidth the allocation may use.
pub const HEADROOM: f64 = 0.9;
/// Loss difference needed for a path to move ahead of another in the reliability order.
pub const ORDER_MARGIN: f64 = 0.005;
/// Bytes of the largest share per turn (surplus round-robin within a class).
const QUANTUM: f64 = 6000.0;

/// How classes relate to each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Cumulative layers (LPS): a layer is useless without every more important one, so once a
    /// class is not carried, no less important class is.
    Layered,
    /// Frame types of one stream, I > P > B (FPS): cumulative like layers, and sized by their
    /// peak rate because frames come in bursts.
    Frame,
    /// Independent descriptions (IPS): each class on paths of its own where possible, for low
    /// loss correlation; a class that does not fit is dropped alone.
    Independent,
}

/// Per class: the paths it uses and the bandwidth (bytes/s) each gives it. A class mapped to
/// an empty list is not carried.
pub type Allocation = BTreeMap<u8, Vec<(PathId, f64)>>;

/// Orders `paths` by reliability, starting from `previous` so that near-equal paths keep their
/// places (a path overtakes only with a loss lower by more than [`ORDER_MARGIN`]).
pub fn reliability_order(paths: &[&PathView], previous: &[PathId]) -> Vec<PathId> {
    let mut order: Vec<&PathView> = Vec::with_capacity(paths.len());
    for id in previous {
        if let Some(p) = paths.iter().find(|p| p.id == *id) {
            order.push(p);
        }
    }
    let mut fresh: Vec<&PathView> = paths.iter().copied().filter(|p| !previous.contains(&p.id)).collect();
    fresh.sort_by(|a, b| {
        a.loss_rate.total_cmp(&b.loss_rate).then(b.rate.total_cmp(&a.rate)).then(a.id.cmp(&b.id))
    });
    order.extend(fresh);
    // Bubble with a margin: stable for near-equal losses.
    loop {
        let mut swapped = false;
        for i in 1..order.len() {
            let (a, b) = (order[i - 1], order[i]);
            if b.loss_rate + ORDER_MARGIN < a.loss_rate {
                order.swap(i - 1, i);
                swapped = true;
            }
        }
        if !swapped {
            break;
        }
    }
    order.into_iter().map(|p| p.id).collect()
}

/// Margin of the carried/dropped hysteresis.
pub const FIT_MARGIN: f64 = 0.1;

/// Allocates paths (in `order`, most reliable first) to `classes` under `policy`; `previous`
/// is the allocation in force (for hysteresis).
pub fn allocate(
    policy: Policy,
    paths: &[&PathView],
    order: &[PathId],
    classes: &[ClassView],
    previous: &Allocation,
) -> Allocation {
    let mut remaining: Vec<(PathId, f64)> = order
        .iter()
        .filter_map(|id| paths.iter().find(|p| p.id == *id))
        .map(|p| (p.id, goodput_capacity(p.rate, p.loss_rate) * HEADROOM))
        .collect();
    let mut used: Vec<PathId> = Vec::new();
    let mut sorted: Vec<&ClassView> = classes.iter().collect();
    sorted.sort_by_key(|c| (c.priority, c.rate.is_infinite(), c.class));
    let mut out = Allocation::new();
    let mut dropped = false;
    for c in sorted {
        let need = match policy {
            Policy::Frame => c.peak_rate.max(c.rate),
            _ => c.rate,
        };
        if need.is_infinite() {
            // Elastic: what is left, or a share of the least reliable path.
            let mut shares: Vec<(PathId, f64)> =
                remaining.iter().filter(|(_, r)| *r > 0.0).copied().collect();
            if shares.is_empty() {
                shares = remaining.last().map(|(id, _)| vec![(*id, 1.0)]).unwrap_or_default();
            }
            remaining.iter_mut().for_each(|(_, r)| *r = 0.0);
            out.insert(c.class, shares);
            continue;
        }
        if dropped && policy != Policy::Independent {
            out.insert(c.class, Vec::new());
            continue;
        }
        // Candidate paths in the order this policy takes them.
        let mut candidates: Vec<usize> = (0..remaining.len()).filter(|&i| remaining[i].1 > 0.0).collect();
        if policy == Policy::Independent {
            // Unused paths first (in reliability order), then the least loaded used ones.
            candidates.sort_by(|&a, &b| {
                let ua = used.contains(&remaining[a].0);
                let ub = used.contains(&remaining[b].0);
                ua.cmp(&ub).then(if ua { remaining[b].1.total_cmp(&remaining[a].1) } else { a.cmp(&b) })
            });
        }
        if need <= 0.0 {
            // Not measured yet: the first candidate, without using up its bandwidth.
            out.insert(c.class, candidates.first().map(|&i| vec![(remaining[i].0, 1.0)]).unwrap_or_default());
            continue;
        }
        let available: f64 = candidates.iter().map(|&i| remaining[i].1).sum();
        let carried = previous.get(&c.class).is_some_and(|s| !s.is_empty());
        let fits = if carried {
            available * (1.0 + FIT_MARGIN) >= need
        } else {
            available >= need * (1.0 + FIT_MARGIN)
        };
        if !fits {
            out.insert(c.class, Vec::new());
            dropped = true;
            continue;
        }
        let mut left = need.min(available);
        let mut shares = Vec::new();
        for i in candidates {
            if left <= 0.0 {
                break;
            }
            let take = remaining[i].1.min(left);
            remaining[i].1 -= take;
            left -= take;
            shares.push((remaining[i].0, take));
            used.push(remaining[i].0);
        }
        out.insert(c.class, shares);
    }
    out
}

/// The priority-aware striping engine.
#[derive(Debug, Clone)]
pub struct PriorityStriping {
    policy: Policy,
    name: &'static str,
    classes: Vec<ClassView>,
    order: Vec<PathId>,
    alloc: Allocation,
    next_alloc: Option<Timestamp>,
    allocated_for: Vec<PathId>,
    turns: BTreeMap<u8, SurplusTurn>,
}

impl PriorityStriping {
    /// An engine with `policy`, reporting `name`.
    pub fn new(policy: Policy, name: &'static str) -> Self {
        PriorityStriping {
            policy,
            name,
            classes: Vec::new(),
            order: Vec::new(),
            alloc: Allocation::new(),
            next_alloc: None,
            allocated_for: Vec::new(),
            turns: BTreeMap::new(),
        }
    }

    /// The allocation in force.
    pub fn allocation(&self) -> &Allocation {
        &self.alloc
    }

    fn reallocate(&mut self, now: Timestamp, paths: &[&PathView]) {
        let ids: Vec<PathId> = paths.iter().map(|p| p.id).collect();
        if ids == self.allocated_for && self.next_alloc.is_some_and(|t| now < t) {
            return;
        }
        self.order = reliability_order(paths, &self.order);
        let alloc = allocate(self.policy, paths, &self.order, &self.classes, &self.alloc);
        // Each class keeps its place in the rotation over the paths it still has (restarting it
        // at every change would favour the first path).
        self.turns.retain(|class, _| alloc.get(class).is_some_and(|s| !s.is_empty()));
        self.alloc = alloc;
        self.allocated_for = ids;
        self.next_alloc = Some(now + REALLOCATE);
    }
}

/// LPS, FPS and IPS are this engine with their [`Policy`] (see `lps.rs`, `fps.rs`, `ips.rs`).
impl Scheduler for PriorityStriping {
    fn name(&self) -> &'static str {
        self.name
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let mut candidates: Vec<&PathView> = usable_for_data(paths).collect();
        if candidates.is_empty() {
            return wait_for(usable_for_data(paths));
        }
        candidates.sort_by_key(|p| p.id);
        self.reallocate(now, &candidates);
        let shares: Vec<(PathId, f64)> = self
            .alloc
            .get(&packet.class)
            .map(|s| s.iter().filter(|(id, _)| candidates.iter().any(|p| p.id == *id)).copied().collect())
            .unwrap_or_default();
        if shares.is_empty() {
            if packet.datagram && self.alloc.contains_key(&packet.class) {
                // "the least important subflows are not transported at all"
                return Decision::Drop;
            }
            // Unknown class, or control and stream content of a class without paths: the most
            // reliable path that can send now.
            let first = self
                .order
                .iter()
                .filter_map(|id| candidates.iter().find(|p| p.id == *id))
                .find(|p| p.ready(now));
            return match first {
                Some(p) => Decision::Send(p.id),
                None => wait_for(candidates.into_iter()),
            };
        }
        let turn = self.turns.entry(packet.class).or_default();
        let max = shares.iter().map(|(_, s)| *s).fold(0.0, f64::max).max(1e-9);
        let quanta: Vec<(PathId, f64)> = shares.iter().map(|(id, s)| (*id, QUANTUM * s / max)).collect();
        let id = turn.next(&quanta);
        let path = candidates.iter().find(|p| p.id == id).expect("a candidate");
        let (decision, used) = striped(now, path, packet);
        if used {
            turn.charge(id, packet.bytes);
        }
        decision
    }

    fn on_classes(&mut self, _now: Timestamp, classes: &[ClassView]) {
        let changed = classes != self.classes.as_slice();
        self.classes = classes.to_vec();
        if changed {
            self.next_alloc = None;
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::scheduler::test_util::link;

    /// A constant-rate datagram class of `kbit` kbit/s.
    pub fn class(class: u8, kbit: f64) -> ClassView {
        let rate = kbit * 1000.0 / 8.0;
        ClassView { class, priority: class, rate, peak_rate: rate }
    }

    /// A 20 kbit/s channel with `loss`.
    pub fn channel(id: PathId, loss: f64) -> PathView {
        let mut p = link(id, 0.02, 10);
        p.loss_rate = loss;
        p
    }

    #[test]
    fn order_has_hysteresis() {
        let paths = [channel(0, 0.05), channel(1, 0.01), channel(2, 0.10)];
        let refs: Vec<&PathView> = paths.iter().collect();
        assert_eq!(reliability_order(&refs, &[]), vec![1, 0, 2]);
        let mut close = paths.clone();
        close[0].loss_rate = 0.012; // within half a percent of path 1: keeps its place
        let refs: Vec<&PathView> = close.iter().collect();
        assert_eq!(reliability_order(&refs, &[1, 0, 2]), vec![1, 0, 2]);
        close[0].loss_rate = 0.004;
        let refs: Vec<&PathView> = close.iter().collect();
        assert_eq!(reliability_order(&refs, &[1, 0, 2]), vec![0, 1, 2]);
    }

    #[test]
    fn layers_fill_reliable_paths_first_and_overflow_shares() {
        // Seed 000 Table VII: 3 × 15 kbit/s over 20 kbit/s at 1 % and 5 %.
        let paths = [channel(0, 0.05), channel(1, 0.01)];
        let refs: Vec<&PathView> = paths.iter().collect();
        let order = reliability_order(&refs, &[]);
        let classes = [class(0, 15.0), class(1, 15.0), class(2, 15.0)];
        let a = allocate(Policy::Layered, &refs, &order, &classes, &Allocation::new());
        assert_eq!(a[&0].iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![1]);
        assert_eq!(a[&1].iter().map(|(id, _)| *id).collect::<Vec<_>>(), vec![1, 0]);
        assert!(a[&2].is_empty(), "the third layer does not fit: dropped entirely");
    }
}
