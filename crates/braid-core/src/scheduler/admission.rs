//! Path admission: leave out a path that would lower the total (seeds 000, 002), keep it in
//! standby, and admit it again when it improves.
//!
//! Two rules, applied in order of the paths' Eq. 1 score S/(R·√p) (seed 000 appendix: "pick
//! link 1 if 1/(R1√p1) > 1/(R2√p2)", with the window proportional to the rate, Eq. 3):
//!
//! 1. **Loss disparity** (seed 002, end of §IV): "As the disparity of the link impairments on
//!    the component links grows large, avoid using multiple links entirely by assigning all
//!    packets to the highest bandwidth component link." A path whose loss rate exceeds the best
//!    path's by 4 % or more is left out — by 10 % when both are 1 Mbit/s or slower, where seed
//!    002 found aggregation still paid up to `plr1 ≤ 0.1` (Case I; the digest's A9 reading).
//! 2. **Throughput bound** (seed 000 appendix, Eqs. 1, 4, 5): a group's throughput is at most
//!    Σ C·B/(R_i·√p_i), each R_i inflated by the transmission and reordering delay the other
//!    members add, R_i′ = R_i + 3(n−1)/2 · B/S_i, and no path carries more than its capacity
//!    S_i·(1 − p_i). A path is admitted only if adding it raises the group's bound. With
//!    C ≈ 1.3 as the paper gives; a path with no measurable loss is bounded by its capacity.
//!
//! Both rules model one loss-based TCP flow striped over the links (seed 002 stripes at the
//! network layer; seed 000's bound is a TCP throughput bound). braid's own transport has a
//! controller per path and resends a lost frame on any path, so a lossy path costs only its own
//! window: measured in the simulator, leaving such a path out lowers braid's goodput (see
//! docs/experiments.md). Admission is therefore off by default (`SessionConfig::path_admission`)
//! and meant for sessions whose traffic is itself such a flow.
//!
//! A path leaves only on enough evidence (100 packet outcomes on it and on the best path) and
//! comes back with a margin (its loss disparity below 3/4 of the limit, and a bound gain of
//! 2 %), so a path near the limit does not flap. The session applies a verdict only when the
//! path's previous change is 2 s old.

use crate::path::capacity::goodput_capacity;
use crate::path::PathId;
use std::time::Duration;

/// C in C·B/(R·√p): "directly proportional to a link's congestion window size and whose value
/// is ordinarily calculated to be ≈ 1.3" (seed 000, Eq. 1).
pub const C: f64 = 1.3;
/// Loss below this counts as none (the bound is then the path's capacity).
pub const LOSS_FLOOR: f64 = 1e-4;
/// Loss disparity that leaves a path out (seed 002 rule 3).
pub const DISPARITY: f64 = 0.04;
/// The same for paths of at most [`SLOW_PATH`].
pub const DISPARITY_SLOW: f64 = 0.10;
/// 1 Mbit/s in bytes/s.
pub const SLOW_PATH: f64 = 125_000.0;
/// Packet outcomes needed before a path is judged.
pub const MIN_SAMPLES: u64 = 100;
/// A standby path returns when its disparity is below this share of the limit.
pub const READMIT_MARGIN: f64 = 0.75;
/// …and when it raises the group's bound by this factor.
pub const READMIT_GAIN: f64 = 1.02;
pub use crate::timing::ADMISSION_HOLD as HOLD;

/// What admission knows about a path.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Path id.
    pub id: PathId,
    /// Capacity S, bytes/s.
    pub rate: f64,
    /// Loss fraction p.
    pub loss: f64,
    /// Round-trip time R.
    pub rtt: Duration,
    /// Packet outcomes the loss figure rests on.
    pub samples: u64,
    /// Currently admitted.
    pub admitted: bool,
}

/// Seed 000 Eq. 1/3 score: S/(R·√p), p floored so loss-free paths compare by S/R.
pub fn score(c: &Candidate) -> f64 {
    c.rate / (c.rtt.as_secs_f64().max(1e-4) * c.loss.max(LOSS_FLOOR).sqrt())
}

/// Seed 000 Eq. 4 with Eq. 5's inflation: the bound on a group's throughput, bytes/s, for
/// packets of `mss` bytes.
pub fn group_bound(members: &[&Candidate], mss: f64) -> f64 {
    let n = members.len() as f64;
    members
        .iter()
        .map(|c| {
            let capacity = goodput_capacity(c.rate, c.loss);
            if c.loss < LOSS_FLOOR {
                return capacity;
            }
            let r = c.rtt.as_secs_f64() + 1.5 * (n - 1.0) * mss / c.rate.max(1.0);
            capacity.min(C * mss / (r.max(1e-4) * c.loss.sqrt()))
        })
        .sum()
}

/// The paths to admit, best first.
pub fn admit(candidates: &[Candidate], mss: f64) -> Vec<PathId> {
    let mut order: Vec<&Candidate> = candidates.iter().collect();
    order.sort_by(|a, b| score(b).total_cmp(&score(a)).then(a.id.cmp(&b.id)));
    let Some((best, rest)) = order.split_first() else {
        return Vec::new();
    };
    let mut group = vec![*best];
    for c in rest {
        let judged = c.samples >= MIN_SAMPLES && best.samples >= MIN_SAMPLES;
        if judged {
            let slow = c.rate <= SLOW_PATH && best.rate <= SLOW_PATH;
            let mut limit = if slow { DISPARITY_SLOW } else { DISPARITY };
            let mut gain = 1.0;
            if !c.admitted {
                limit *= READMIT_MARGIN;
                gain = READMIT_GAIN;
            }
            if c.loss - best.loss >= limit {
                continue;
            }
            let before = group_bound(&group, mss);
            let mut with = group.clone();
            with.push(c);
            if group_bound(&with, mss) <= before * gain {
                continue;
            }
        }
        group.push(c);
    }
    group.iter().map(|c| c.id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(id: PathId, mbit: f64, rtt_ms: u64, loss: f64) -> Candidate {
        Candidate {
            id,
            rate: mbit * 125_000.0,
            loss,
            rtt: Duration::from_millis(rtt_ms),
            samples: 1000,
            admitted: true,
        }
    }

    #[test]
    fn loss_free_paths_are_all_admitted() {
        let c = [cand(0, 50.0, 10, 0.0), cand(1, 10.0, 80, 0.0), cand(2, 2.0, 160, 0.0)];
        assert_eq!(admit(&c, 1452.0), vec![0, 1, 2]);
        let c = [cand(0, 20.0, 20, 0.01), cand(1, 5.0, 80, 0.0)];
        assert_eq!(admit(&c, 1452.0).len(), 2);
    }

    #[test]
    fn large_loss_disparity_leaves_a_path_out_and_it_returns_with_margin() {
        // Seed 002 Case II: lossless fast link + lossy slow link at 10 % loss.
        let mut c = vec![cand(0, 10.0, 20, 0.0), cand(1, 2.0, 20, 0.10)];
        assert_eq!(admit(&c, 1452.0), vec![0]);
        // Back at 3.5 %: within the 4 % rule but not the 3 % re-admission margin.
        c[1].loss = 0.035;
        c[1].admitted = false;
        assert_eq!(admit(&c, 1452.0), vec![0]);
        c[1].loss = 0.005;
        assert_eq!(admit(&c, 1452.0), vec![0, 1]);
        // Slow links tolerate up to 10 % (seed 002 Case I at 1 Mbit/s).
        let c = [cand(0, 0.02, 40, 0.01), cand(1, 0.02, 40, 0.09)];
        assert_eq!(admit(&c, 1000.0).len(), 2);
    }

    #[test]
    fn the_bound_rejects_a_trickle_that_slows_a_lossy_fast_path() {
        // A lossy fast path is window-limited by C·B/(R√p); a 64 kbit/s path with 3 % loss adds
        // less than the remux delay it costs the fast one (seed 000 Eq. 5).
        let c = [cand(0, 20.0, 20, 0.01), cand(1, 0.064, 20, 0.03)];
        assert_eq!(admit(&c, 1452.0), vec![0]);
        let g0 = group_bound(&[&c[0]], 1452.0);
        let g01 = group_bound(&[&c[0], &c[1]], 1452.0);
        assert!(g01 < g0, "{g01} {g0}");
    }

    #[test]
    fn no_verdict_without_evidence() {
        let mut c = vec![cand(0, 10.0, 20, 0.0), cand(1, 2.0, 20, 0.5)];
        c[1].samples = 20;
        assert_eq!(admit(&c, 1452.0), vec![0, 1]);
    }
}
