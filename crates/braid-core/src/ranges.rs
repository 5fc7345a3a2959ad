//! A set of `u64` values kept as disjoint, non-adjacent half-open ranges `[start, end)`.
//!
//! Used for received packet numbers (to build ACK frames), for acknowledged and to-be-resent
//! stream byte ranges, and for anything else that is "which of these numbers have we seen".

use std::collections::BTreeMap;
use std::ops::Range;

/// Disjoint half-open ranges, merged on insert.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end (exclusive). Invariant: ranges neither overlap nor touch.
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// True when no value is in the set.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Number of disjoint ranges.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Inserts `range`; returns true when at least one value was new.
    pub fn insert(&mut self, range: Range<u64>) -> bool {
        if range.start >= range.end {
            return false;
        }
        let (mut start, mut end) = (range.start, range.end);
        // At or after the last range's start (packet numbers and stream bytes arriving in
        // order): only the last range can be touched, and it grows in place, one tree lookup
        // where the general case below costs a removal and an insertion per call.
        if let Some(mut last) = self.map.last_entry() {
            if start >= *last.key() {
                let e = *last.get();
                if end <= e {
                    return false;
                }
                if start <= e {
                    *last.get_mut() = end;
                } else {
                    self.map.insert(start, end);
                }
                return true;
            }
        }
        // Merge with a range that starts at or before `start` and reaches it.
        if let Some((&s, &e)) = self.map.range(..=start).next_back() {
            if e >= end {
                return false;
            }
            if e >= start {
                start = s;
                self.map.remove(&s);
            }
        }
        // Swallow every range that starts within [start, end].
        while let Some((&s, &e)) = self.map.range(start..=end).next() {
            self.map.remove(&s);
            end = end.max(e);
        }
        self.map.insert(start, end);
        true
    }

    /// Inserts a single value; returns true when it was new.
    pub fn insert_one(&mut self, v: u64) -> bool {
        self.insert(v..v.saturating_add(1))
    }

    /// Removes `range` from the set (without allocating: per packet on the hot path).
    pub fn remove(&mut self, range: Range<u64>) {
        if range.start >= range.end {
            return;
        }
        // A range that starts below `range` and reaches into it keeps its head (and its
        // tail, when it reaches past `range` too: then it was the only one touched).
        if let Some((&s, &e)) = self.map.range(..range.start).next_back() {
            if e > range.start {
                self.map.insert(s, range.start);
                if e > range.end {
                    self.map.insert(range.end, e);
                    return;
                }
            }
        }
        // Ranges that start within `range` go; the last may keep a tail past it.
        while let Some((&s, &e)) = self.map.range(range.start..range.end).next() {
            if e > range.end {
                // The tail goes in before the range leaves: a set of one range is not emptied
                // and refilled (its tree node freed and allocated again).
                self.map.insert(range.end, e);
                self.map.remove(&s);
                break;
            }
            self.map.remove(&s);
        }
    }

    /// True when `v` is in the set.
    pub fn contains(&self, v: u64) -> bool {
        self.map.range(..=v).next_back().is_some_and(|(_, &e)| v < e)
    }

    /// True when every value of `range` is in the set.
    pub fn contains_range(&self, range: Range<u64>) -> bool {
        if range.start >= range.end {
            return true;
        }
        self.map.range(..=range.start).next_back().is_some_and(|(_, &e)| range.end <= e)
    }

    /// The smallest value, if any.
    pub fn min(&self) -> Option<u64> {
        self.map.keys().next().copied()
    }

    /// The largest value, if any.
    pub fn max(&self) -> Option<u64> {
        self.map.values().next_back().map(|e| e - 1)
    }

    /// Removes and returns the lowest range.
    pub fn pop_min(&mut self) -> Option<Range<u64>> {
        let (s, e) = self.map.pop_first()?;
        Some(s..e)
    }

    /// The lowest range, without removing it.
    pub fn first(&self) -> Option<Range<u64>> {
        self.map.iter().next().map(|(&s, &e)| s..e)
    }

    /// Ranges in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = Range<u64>> + Clone + '_ {
        self.map.iter().map(|(&s, &e)| s..e)
    }

    /// Drops every value below `v`.
    pub fn remove_below(&mut self, v: u64) {
        self.remove(0..v);
    }

    /// Keeps only the `n` highest ranges (bounds memory for long-lived ack state).
    pub fn keep_highest(&mut self, n: usize) {
        while self.map.len() > n {
            self.map.pop_first();
        }
    }

    /// The parts of `range` that are not in the set, in ascending order (an iterator: no
    /// allocation per received frame).
    pub fn gaps_in(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let end = range.end;
        let mut cursor = range.start;
        let mut done = range.start >= range.end;
        if let Some((_, &e)) = self.map.range(..=range.start).next_back() {
            cursor = cursor.max(e);
        }
        let mut inside = self.map.range(range.start..range.end.max(range.start));
        std::iter::from_fn(move || {
            if done {
                return None;
            }
            for (&s, &e) in inside.by_ref() {
                let gap = (s > cursor).then(|| cursor..s.min(end));
                cursor = cursor.max(e);
                if gap.is_some() {
                    return gap;
                }
            }
            done = true;
            (cursor < end).then_some(cursor..end)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn merges_adjacent_and_overlapping() {
        let mut s = RangeSet::new();
        assert!(s.insert(0..2));
        assert!(s.insert(4..6));
        assert!(s.insert(2..4));
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0..6]);
        assert!(!s.insert(1..3));
        s.remove(2..3);
        assert_eq!(s.iter().collect::<Vec<_>>(), vec![0..2, 3..6]);
        assert_eq!(s.gaps_in(0..8).collect::<Vec<_>>(), vec![2..3, 6..8]);
        assert_eq!(s.gaps_in(4..4).count(), 0, "an empty range has no gaps");
        let (hi, lo) = (7, 3);
        assert_eq!(s.gaps_in(hi..lo).count(), 0, "nor has a reversed one (no panic)");
        assert_eq!(s.gaps_in(4..5).count(), 0, "inside a range");
        assert_eq!(s.gaps_in(5..9).collect::<Vec<_>>(), vec![6..9]);
        assert_eq!(s.max(), Some(5));
        assert!(s.contains_range(3..6));
        assert!(!s.contains_range(1..4));
    }

    proptest! {
        #[test]
        fn behaves_like_a_set(ops in proptest::collection::vec((any::<bool>(), 0u64..64, 0u64..8), 0..64)) {
            let mut s = RangeSet::new();
            let mut model = BTreeSet::new();
            for (ins, start, len) in ops {
                if ins {
                    let new = (start..start + len).any(|v| !model.contains(&v));
                    prop_assert_eq!(s.insert(start..start + len), new);
                    model.extend(start..start + len);
                } else {
                    s.remove(start..start + len);
                    for v in start..start + len { model.remove(&v); }
                }
                // Invariant: disjoint and non-adjacent.
                let v: Vec<_> = s.iter().collect();
                for w in v.windows(2) { prop_assert!(w[0].end < w[1].start); }
            }
            for v in 0..80 { prop_assert_eq!(s.contains(v), model.contains(&v)); }
            let gaps: BTreeSet<u64> = s.gaps_in(0..80).flatten().collect();
            let expect: BTreeSet<u64> = (0..80).filter(|v| !model.contains(v)).collect();
            prop_assert_eq!(gaps, expect);
        }
    }
}
