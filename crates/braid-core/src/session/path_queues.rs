//! Per-path queues: datagrams a scheduler committed to a path that could not send yet (the
//! striping schedulers of seed 000, EDPF over per-path queues), and redundant copies. Each
//! waits for its path's pacer and congestion window; a datagram (or a copy of datagrams) is
//! dropped there when its deadline passes. When a path goes silent or away, its datagrams go
//! back to the head of their class queues and its copies are dropped.
//!
//! [`PathQueues`] owns the queues and their byte counts: every change goes through its
//! methods, which keep each queue's bytes as a running sum (the scheduler reads it for every
//! packet) and hold no empty queue.

use crate::datagram::{OutgoingDatagram, DATAGRAM_OVERHEAD};
use crate::path::sent::FrameRecords;
use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::DATA_OVERHEAD;
use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;

/// Something waiting on one path.
#[derive(Debug)]
pub(super) enum Pinned {
    /// A datagram assigned to this path.
    Datagram(OutgoingDatagram),
    /// A redundant copy of a packet sent on another path: its frames, ready to seal.
    Copy {
        /// The frames (plaintext payload after the header).
        payload: Vec<u8>,
        /// What they carry.
        frames: FrameRecords,
        /// Dropped after this time (the earliest deadline of the datagrams in it).
        expires: Option<Timestamp>,
    },
}

impl Pinned {
    /// Bytes it will occupy on the path.
    pub(super) fn bytes(&self) -> u64 {
        match self {
            Pinned::Datagram(d) => (d.data.len() + DATAGRAM_OVERHEAD) as u64,
            Pinned::Copy { payload, .. } => (payload.len() + DATA_OVERHEAD) as u64,
        }
    }

    fn deadline(&self) -> Option<Timestamp> {
        match self {
            Pinned::Datagram(d) => d.deadline,
            Pinned::Copy { expires, .. } => *expires,
        }
    }
}

/// One path's queue and the bytes it holds.
#[derive(Debug, Default)]
struct Queue {
    items: VecDeque<Pinned>,
    bytes: u64,
}

/// The per-path queues of a session (see the module docs).
#[derive(Debug, Default)]
pub(super) struct PathQueues {
    queues: BTreeMap<PathId, Queue>,
    /// The earliest deadline of anything queued (a lower bound: it may have left since), so
    /// that expiry does nothing until then.
    earliest_deadline: Option<Timestamp>,
}

impl PathQueues {
    /// True when no path has anything queued.
    pub(super) fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }

    /// True when path `id` has nothing queued.
    pub(super) fn is_empty_for(&self, id: PathId) -> bool {
        !self.queues.contains_key(&id)
    }

    /// Bytes queued on path `id`.
    pub(super) fn bytes(&self, id: PathId) -> u64 {
        self.queues.get(&id).map_or(0, |q| q.bytes)
    }

    /// Bytes the head of path `id`'s queue will occupy (0 when empty).
    pub(super) fn front_bytes(&self, id: PathId) -> u64 {
        self.queues.get(&id).and_then(|q| q.items.front()).map_or(0, Pinned::bytes)
    }

    /// True when the head of path `id`'s queue is a datagram.
    pub(super) fn front_is_datagram(&self, id: PathId) -> bool {
        self.queues.get(&id).and_then(|q| q.items.front()).is_some_and(|p| matches!(p, Pinned::Datagram(_)))
    }

    /// The first path with something queued whose id is above `after` (all paths with None),
    /// in id order: a cursor that stays valid while queues come and go.
    pub(super) fn next_path(&self, after: Option<PathId>) -> Option<PathId> {
        let from = after.map_or(Bound::Unbounded, Bound::Excluded);
        self.queues.range((from, Bound::Unbounded)).next().map(|(id, _)| *id)
    }

    fn note_deadline(&mut self, item: &Pinned) {
        self.earliest_deadline = crate::time::earliest(self.earliest_deadline, item.deadline());
    }

    /// Queues `item` at the back of path `id`'s queue; when the queue then holds more than
    /// `limit` items its oldest one goes, and is returned.
    pub(super) fn push(&mut self, id: PathId, item: Pinned, limit: usize) -> Option<Pinned> {
        self.note_deadline(&item);
        let q = self.queues.entry(id).or_default();
        q.bytes += item.bytes();
        q.items.push_back(item);
        if q.items.len() > limit {
            let old = q.items.pop_front()?;
            q.bytes -= old.bytes();
            return Some(old);
        }
        None
    }

    /// Puts `item` back at the head of path `id`'s queue.
    pub(super) fn push_front(&mut self, id: PathId, item: Pinned) {
        self.note_deadline(&item);
        let q = self.queues.entry(id).or_default();
        q.bytes += item.bytes();
        q.items.push_front(item);
    }

    /// Takes the head of path `id`'s queue.
    pub(super) fn pop_front(&mut self, id: PathId) -> Option<Pinned> {
        let q = self.queues.get_mut(&id)?;
        let item = q.items.pop_front()?;
        q.bytes -= item.bytes();
        if q.items.is_empty() {
            self.queues.remove(&id);
        }
        Some(item)
    }

    /// Removes path `id`'s queue and returns what it held, oldest first.
    pub(super) fn drain_path(&mut self, id: PathId) -> Option<VecDeque<Pinned>> {
        self.queues.remove(&id).map(|q| q.items)
    }

    /// Drops everything whose deadline is at or before `now`; `expired(path, class)` is told
    /// of every datagram dropped. Nothing is scanned before the earliest deadline queued.
    pub(super) fn expire(&mut self, now: Timestamp, mut expired: impl FnMut(PathId, u8)) {
        if self.earliest_deadline.is_none_or(|t| t > now) {
            return;
        }
        let mut earliest = None;
        for (id, q) in self.queues.iter_mut() {
            let mut gone = 0;
            q.items.retain(|item| {
                let deadline = item.deadline();
                if deadline.is_some_and(|t| t <= now) {
                    gone += item.bytes();
                    if let Pinned::Datagram(d) = item {
                        expired(*id, d.class);
                    }
                    return false;
                }
                earliest = crate::time::earliest(earliest, deadline);
                true
            });
            q.bytes -= gone;
        }
        self.earliest_deadline = earliest;
        self.queues.retain(|_, q| !q.items.is_empty());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::Bytes;
    use std::time::Duration;

    fn at(ms: u64) -> Timestamp {
        Timestamp::from_duration(Duration::from_millis(ms))
    }

    fn datagram(len: usize, deadline: Option<Timestamp>) -> Pinned {
        Pinned::Datagram(OutgoingDatagram { class: 3, seq: 0, data: Bytes::from(vec![0; len]), deadline })
    }

    fn copy(len: usize) -> Pinned {
        Pinned::Copy { payload: vec![0; len], frames: Default::default(), expires: None }
    }

    /// The running byte count equals the sum over the queue after every kind of change.
    fn check(q: &PathQueues) {
        for (id, queue) in &q.queues {
            assert!(!queue.items.is_empty(), "empty queue kept for path {id}");
            assert_eq!(queue.bytes, queue.items.iter().map(Pinned::bytes).sum::<u64>());
        }
    }

    #[test]
    fn byte_counts_follow_every_change() {
        let mut q = PathQueues::default();
        assert!(q.push(1, datagram(100, Some(at(10))), 8).is_none());
        assert!(q.push(1, copy(500), 8).is_none());
        q.push_front(2, datagram(50, None));
        check(&q);
        let one = (100 + DATAGRAM_OVERHEAD + 500 + DATA_OVERHEAD) as u64;
        assert_eq!(q.bytes(1), one);
        assert_eq!(q.front_bytes(1), (100 + DATAGRAM_OVERHEAD) as u64);
        assert!(q.front_is_datagram(1));
        assert!(matches!(q.pop_front(1), Some(Pinned::Datagram(_))));
        check(&q);
        assert!(!q.front_is_datagram(1));
        assert!(q.pop_front(1).is_some());
        assert!(q.is_empty_for(1), "an emptied queue goes");
        assert_eq!(q.bytes(1), 0);
        assert_eq!(q.drain_path(2).map(|d| d.len()), Some(1));
        assert!(q.is_empty());
    }

    #[test]
    fn the_oldest_item_goes_past_the_limit() {
        let mut q = PathQueues::default();
        for len in [10, 20, 30] {
            assert!(q.push(4, datagram(len, None), 3).is_none());
        }
        let old = q.push(4, copy(40), 3).expect("the fourth pushes one out");
        assert_eq!(old.bytes(), (10 + DATAGRAM_OVERHEAD) as u64);
        check(&q);
        assert_eq!(q.front_bytes(4), (20 + DATAGRAM_OVERHEAD) as u64);
    }

    #[test]
    fn expiry_drops_what_is_due_and_reports_datagrams() {
        let mut q = PathQueues::default();
        q.push(1, datagram(10, Some(at(5))), 8);
        q.push(1, datagram(10, Some(at(20))), 8);
        q.push(2, Pinned::Copy { payload: vec![0; 9], frames: Default::default(), expires: Some(at(5)) }, 8);
        q.push(3, copy(9), 8);
        let mut gone = Vec::new();
        q.expire(at(4), |p, c| gone.push((p, c)));
        assert!(gone.is_empty());
        q.expire(at(5), |p, c| gone.push((p, c)));
        assert_eq!(gone, vec![(1, 3)], "the copy goes without a report");
        check(&q);
        assert!(q.is_empty_for(2));
        assert_eq!(q.bytes(1), (10 + DATAGRAM_OVERHEAD) as u64);
        q.expire(at(20), |p, c| gone.push((p, c)));
        assert_eq!(gone, vec![(1, 3), (1, 3)]);
        assert!(q.is_empty_for(1));
        assert_eq!(q.next_path(None), Some(3));
        assert_eq!(q.next_path(Some(3)), None);
    }
}
