//! Surplus round-robin (seed 000 §III, after Adiseshu et al.): paths take turns; a visit adds
//! the path's quantum to its counter, the path holding the turn sends while its counter is
//! positive and pays each packet's size, and the overshoot carries into the next round — the
//! packet approximation of bit-by-bit weighted round-robin. Shared by weighted round-robin
//! (one turn per session) and priority striping (one turn per traffic class).

use crate::path::PathId;
use std::collections::BTreeMap;

/// Visits after which a turn is given up as found (quanta are at least one byte, packets at
/// most a few kilobytes, so a real turn is found in far fewer).
const MAX_VISITS: usize = 100_000;

/// The turn of one surplus round-robin.
#[derive(Debug, Default, Clone)]
pub(crate) struct SurplusTurn {
    counters: BTreeMap<PathId, f64>,
    current: Option<PathId>,
}

impl SurplusTurn {
    /// The path holding the turn among `quanta` (each path with its quantum in bytes, in
    /// visiting order; must not be empty). Paths not listed lose their counters.
    pub(crate) fn next(&mut self, quanta: &[(PathId, f64)]) -> PathId {
        self.counters.retain(|id, _| quanta.iter().any(|(q, _)| q == id));
        for _ in 0..MAX_VISITS {
            if let Some(c) = self.current.filter(|c| self.counters.get(c).is_some_and(|v| *v > 0.0)) {
                return c;
            }
            let pos = self.current.and_then(|c| quanta.iter().position(|(id, _)| *id == c));
            let (next, quantum) = quanta[pos.map_or(0, |p| (p + 1) % quanta.len())];
            *self.counters.entry(next).or_insert(0.0) += quantum.max(1.0);
            self.current = Some(next);
        }
        self.current.unwrap_or(quanta[0].0)
    }

    /// `id` sent a packet of `bytes`.
    pub(crate) fn charge(&mut self, id: PathId, bytes: usize) {
        *self.counters.entry(id).or_insert(0.0) -= bytes as f64;
    }

    /// Starts a new round from zero counters (the weights changed).
    pub(crate) fn reset(&mut self) {
        self.counters.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_follow_the_quanta_and_the_overshoot_carries() {
        let mut t = SurplusTurn::default();
        let quanta = [(1, 3000.0), (2, 1000.0)];
        let mut sent = BTreeMap::new();
        for _ in 0..4000 {
            let id = t.next(&quanta);
            t.charge(id, 1200);
            *sent.entry(id).or_insert(0u64) += 1;
        }
        let (a, b) = (sent[&1] as f64, sent[&2] as f64);
        assert!((a / b - 3.0).abs() < 0.05, "{a} : {b}");
    }

    #[test]
    fn a_path_that_leaves_loses_its_turn_and_counter() {
        let mut t = SurplusTurn::default();
        let both = [(1, 6000.0), (2, 6000.0)];
        assert_eq!(t.next(&both), 1);
        assert_eq!(t.next(&[(2, 6000.0)]), 2);
        assert!(!t.counters.contains_key(&1));
    }
}
