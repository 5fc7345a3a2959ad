//! Unreliable datagrams: queued per traffic class at the sender (highest priority first,
//! dropped when their deadline passes — seed 001's MMTP), delivered at most once (copies sent
//! on several paths by the redundant scheduler are recognised by class and sequence number).
//!
//! The sender measures each class's offered rate, which priority-aware schedulers allocate
//! paths by (seed 000 §III-C: subflows are described by their rate).

use crate::time::Timestamp;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};
use std::time::Duration;

/// Bytes a datagram costs on the wire beyond its payload (packet header, AEAD tag, frame
/// header with deadline), counted in the class rate.
pub const DATAGRAM_OVERHEAD: usize = crate::wire::DATA_OVERHEAD + 16;
/// Width of a rate-meter bucket.
const RATE_BUCKET: Duration = Duration::from_secs(1);
/// Buckets the rate meter averages over (and takes the peak of).
const RATE_BUCKETS: usize = 5;
/// Sequence numbers remembered per class to recognise duplicates.
const DEDUP_WINDOW: u64 = 4096;

/// A datagram waiting to be sent.
#[derive(Debug, Clone)]
pub struct OutgoingDatagram {
    /// Traffic class.
    pub class: u8,
    /// Per-class sequence number.
    pub seq: u64,
    /// Payload.
    pub data: Bytes,
    /// Drop it if it cannot leave before this time.
    pub deadline: Option<Timestamp>,
}

/// A received datagram.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Datagram {
    /// Traffic class.
    pub class: u8,
    /// Per-class sequence number set by the sender (gaps are losses or sender drops).
    pub seq: u64,
    /// Payload.
    pub data: Bytes,
}

/// Why a datagram was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DatagramError {
    /// Larger than a packet can carry.
    #[error("datagram of {0} bytes exceeds the maximum of {1}")]
    TooLarge(usize, usize),
    /// The session is not established (or closed).
    #[error("session not established")]
    NotConnected,
}

/// Per-class datagram counters.
#[derive(Debug, Clone, Default)]
pub struct DatagramStats {
    /// Queued by the application.
    pub queued: u64,
    /// Put in a packet.
    pub sent: u64,
    /// Dropped at the sender: deadline passed or the scheduler had no path able to meet it.
    pub expired: u64,
    /// Dropped at the sender because the queue was full.
    pub overflowed: u64,
    /// Their packet was acknowledged.
    pub acked: u64,
    /// Their packet was lost.
    pub lost: u64,
    /// Received from the peer.
    pub received: u64,
    /// Received again (a redundant copy) and discarded.
    pub duplicates: u64,
}

/// Offered rate of one class: bytes per one-second bucket over the last five seconds.
#[derive(Debug, Clone, Default)]
pub struct RateMeter {
    start: Option<Timestamp>,
    current: u64,
    done: VecDeque<u64>,
}

impl RateMeter {
    /// Counts `bytes` offered at `now`.
    pub fn add(&mut self, now: Timestamp, bytes: u64) {
        self.roll(now);
        self.current += bytes;
    }

    fn roll(&mut self, now: Timestamp) {
        let start = *self.start.get_or_insert(now);
        let elapsed = (now - start).as_nanos() / RATE_BUCKET.as_nanos();
        if elapsed == 0 {
            return;
        }
        for i in 0..elapsed.min(RATE_BUCKETS as u128 + 1) {
            self.done.push_back(if i == 0 { self.current } else { 0 });
            if self.done.len() > RATE_BUCKETS {
                self.done.pop_front();
            }
        }
        self.current = 0;
        self.start = Some(start + RATE_BUCKET * elapsed as u32);
    }

    /// (mean, peak) in bytes/s over the completed buckets; zero before the first completes.
    pub fn rates(&mut self, now: Timestamp) -> (f64, f64) {
        self.roll(now);
        if self.done.is_empty() {
            return (0.0, 0.0);
        }
        let secs = RATE_BUCKET.as_secs_f64();
        let mean = self.done.iter().sum::<u64>() as f64 / self.done.len() as f64 / secs;
        let peak = self.done.iter().copied().max().unwrap_or(0) as f64 / secs;
        (mean, peak)
    }
}

/// Which sequence numbers of a class arrived (a sliding window).
#[derive(Debug, Clone, Default)]
struct SeenWindow {
    highest: Option<u64>,
    bits: VecDeque<bool>,
}

impl SeenWindow {
    /// Records `seq`; false when it was seen before or is too old to tell.
    fn insert(&mut self, seq: u64) -> bool {
        let Some(high) = self.highest else {
            // Sequence numbers start at 0: everything below the first one is still expected.
            self.highest = Some(seq);
            self.bits.extend(std::iter::repeat_n(false, seq.min(DEDUP_WINDOW - 1) as usize));
            self.bits.push_back(true);
            return true;
        };
        if seq > high {
            // The gap is the peer's number: only the last DEDUP_WINDOW of it can matter.
            let gap = (seq - high - 1).min(DEDUP_WINDOW);
            self.bits.extend(std::iter::repeat_n(false, gap as usize));
            self.bits.push_back(true);
            while self.bits.len() as u64 > DEDUP_WINDOW {
                self.bits.pop_front();
            }
            self.highest = Some(seq);
            return true;
        }
        let back = high - seq;
        if back >= self.bits.len() as u64 {
            return false;
        }
        let idx = self.bits.len() - 1 - back as usize;
        !std::mem::replace(&mut self.bits[idx], true)
    }
}

/// Datagram queues of a session.
#[derive(Debug, Default)]
pub struct Datagrams {
    outgoing: BTreeMap<u8, VecDeque<OutgoingDatagram>>,
    /// Datagrams in `outgoing` (kept, not counted: the sender asks on every packet).
    outgoing_len: usize,
    /// Payload bytes in `outgoing`, likewise.
    outgoing_bytes: u64,
    incoming: VecDeque<Datagram>,
    next_seq: BTreeMap<u8, u64>,
    /// Counters by class.
    pub stats: BTreeMap<u8, DatagramStats>,
    /// Received datagrams dropped because the application did not read them in time.
    pub incoming_overflow: u64,
    limit: usize,
    rates: BTreeMap<u8, RateMeter>,
    seen: BTreeMap<u8, SeenWindow>,
}

impl Datagrams {
    /// Queues of at most `limit` datagrams each way.
    pub fn new(limit: usize) -> Self {
        Datagrams { limit: limit.max(1), ..Default::default() }
    }

    /// Queues a datagram at `now`; when the queue is full the oldest of the least important
    /// class goes.
    pub fn push(
        &mut self,
        now: Timestamp,
        class: u8,
        data: Bytes,
        deadline: Option<Timestamp>,
        priority: impl Fn(u8) -> u8,
    ) {
        self.rates.entry(class).or_default().add(now, (data.len() + DATAGRAM_OVERHEAD) as u64);
        let seq = self.next_seq.entry(class).or_insert(0);
        let d = OutgoingDatagram { class, seq: *seq, data, deadline };
        *seq += 1;
        self.stats.entry(class).or_default().queued += 1;
        self.outgoing_bytes += d.data.len() as u64;
        self.outgoing.entry(class).or_default().push_back(d);
        self.outgoing_len += 1;
        if self.outgoing_len > self.limit {
            let worst = self
                .outgoing
                .iter()
                .filter(|(_, q)| !q.is_empty())
                .max_by_key(|(c, _)| priority(**c))
                .map(|(c, _)| *c);
            if let Some(c) = worst {
                if self.take_front(c).is_some() {
                    self.stats.entry(c).or_default().overflowed += 1;
                }
            }
        }
    }

    /// True when a datagram is waiting.
    pub fn has_outgoing(&self) -> bool {
        self.outgoing_len > 0
    }

    /// The next datagram by rank (lowest first; classes ranked None are left out), without
    /// taking it.
    pub fn peek(&self, rank: impl Fn(u8) -> Option<u8>) -> Option<&OutgoingDatagram> {
        self.outgoing
            .iter()
            .filter_map(|(c, q)| Some((rank(*c)?, q.front()?)))
            .min_by_key(|(p, _)| *p)
            .map(|(_, d)| d)
    }

    /// Puts a datagram back at the head of its class queue (it was waiting on a path that
    /// went away).
    pub fn push_front(&mut self, d: OutgoingDatagram) {
        self.outgoing_bytes += d.data.len() as u64;
        self.outgoing.entry(d.class).or_default().push_front(d);
        self.outgoing_len += 1;
    }

    /// Takes the head of `class`'s queue, keeping the counts.
    fn take_front(&mut self, class: u8) -> Option<OutgoingDatagram> {
        let d = self.outgoing.get_mut(&class)?.pop_front()?;
        self.outgoing_len -= 1;
        self.outgoing_bytes -= d.data.len() as u64;
        Some(d)
    }

    /// Bytes of datagram payload waiting in the class queues.
    pub fn queued_bytes(&self) -> u64 {
        self.outgoing_bytes
    }

    /// Every class that offered datagrams, with its (mean, peak) rate in bytes/s.
    pub fn class_rates(&mut self, now: Timestamp) -> Vec<(u8, f64, f64)> {
        self.rates
            .iter_mut()
            .map(|(c, m)| {
                let (mean, peak) = m.rates(now);
                (*c, mean, peak)
            })
            .collect()
    }

    /// Takes the datagram `peek` returned: the head of `class`'s queue, passing over (and
    /// counting) any whose deadline has passed by `now`.
    pub fn pop(&mut self, class: u8, now: Timestamp) -> Option<OutgoingDatagram> {
        loop {
            let d = self.take_front(class)?;
            if d.deadline.is_none_or(|t| t > now) {
                return Some(d);
            }
            self.stats.entry(class).or_default().expired += 1;
        }
    }

    /// Drops datagrams whose deadline has passed from the heads of the queues. A class's
    /// deadlines grow along its queue (each is its push time plus the class's deadline), so
    /// this is O(expired); one queued behind a later deadline (the class's deadline was
    /// shortened live) is caught by `pop`, never sent late.
    pub fn expire(&mut self, now: Timestamp) {
        if self.outgoing_len == 0 {
            return;
        }
        let classes: smallvec::SmallVec<[u8; 8]> = self.outgoing.keys().copied().collect();
        for class in classes {
            while self.outgoing[&class].front().is_some_and(|d| d.deadline.is_some_and(|t| t <= now)) {
                self.take_front(class);
                self.stats.entry(class).or_default().expired += 1;
            }
        }
    }

    /// Counts a datagram dropped by the scheduler.
    pub fn count_expired(&mut self, class: u8) {
        self.stats.entry(class).or_default().expired += 1;
    }

    /// Stores a received datagram for the application; false (and dropped) when it is a copy
    /// of one already received.
    pub fn on_received(&mut self, d: Datagram) -> bool {
        if !self.seen.entry(d.class).or_default().insert(d.seq) {
            self.stats.entry(d.class).or_default().duplicates += 1;
            return false;
        }
        self.stats.entry(d.class).or_default().received += 1;
        if self.incoming.len() >= self.limit {
            self.incoming.pop_front();
            self.incoming_overflow += 1;
        }
        self.incoming.push_back(d);
        true
    }

    /// The next received datagram.
    pub fn recv(&mut self) -> Option<Datagram> {
        self.incoming.pop_front()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The kept datagram count and payload bytes equal a recount of the class queues after
        /// any sequence of pushes (with overflow), pops, expiry and puts back; expiry leaves no
        /// expired datagram at a queue's head.
        #[test]
        fn kept_counts_match_a_recount(ops in proptest::collection::vec((0u8..5, 0u8..3, 0u64..200, 1usize..40), 1..200)) {
            let t = |ms: u64| Timestamp::from_nanos(ms * 1_000_000);
            let mut d = Datagrams::new(8);
            let mut now = 0;
            let mut held = Vec::new();
            for (op, class, x, len) in ops {
                match op {
                    0 | 1 => {
                        let deadline = (x % 3 != 0).then(|| t(now + x));
                        d.push(t(now), class, Bytes::from(vec![0u8; len]), deadline, |c| c);
                    }
                    2 => held.extend(d.pop(class, t(now))),
                    3 => {
                        now += x % 50;
                        d.expire(t(now));
                        for q in d.outgoing.values() {
                            prop_assert!(q.front().is_none_or(|h| h.deadline.is_none_or(|dl| dl > t(now))));
                        }
                    }
                    _ => if let Some(h) = held.pop() { d.push_front(h) },
                }
                let len: usize = d.outgoing.values().map(|q| q.len()).sum();
                let bytes: u64 = d.outgoing.values().flatten().map(|g| g.data.len() as u64).sum();
                prop_assert_eq!((d.outgoing_len, d.queued_bytes()), (len, bytes));
                prop_assert_eq!(d.has_outgoing(), len > 0);
            }
        }
    }

    #[test]
    fn a_huge_sequence_jump_costs_one_window_at_most() {
        let mut w = SeenWindow::default();
        assert!(w.insert(0));
        // A peer-chosen number far ahead: bounded work, bounded memory, and the window goes on.
        assert!(w.insert(1 << 61));
        assert!(w.bits.len() as u64 <= DEDUP_WINDOW);
        assert!(!w.insert(1 << 61), "a copy of it is a duplicate");
        assert!(w.insert((1 << 61) - 3), "a late one inside the window is new");
        assert!(!w.insert(5), "one far behind is too old to tell");
    }

    #[test]
    fn copies_are_delivered_once() {
        let mut d = Datagrams::new(16);
        let dg = |seq| Datagram { class: 1, seq, data: Bytes::from_static(b"x") };
        assert!(d.on_received(dg(5)));
        assert!(!d.on_received(dg(5)));
        assert!(d.on_received(dg(3)));
        assert!(d.on_received(dg(9000)));
        assert!(!d.on_received(dg(3)), "too old to tell: treated as a copy");
        assert!(d.on_received(dg(8999)));
        assert_eq!(d.stats[&1].received, 4);
        assert_eq!(d.stats[&1].duplicates, 2);
    }

    #[test]
    fn class_rate_over_whole_seconds() {
        let mut m = RateMeter::default();
        let t = |ms: u64| Timestamp::from_nanos(ms * 1_000_000);
        for i in 0..50 {
            m.add(t(i * 100), 1000); // 10 kB/s for 5 s
        }
        let (mean, peak) = m.rates(t(5000));
        assert!((mean - 10_000.0).abs() < 1.0 && (peak - 10_000.0).abs() < 1.0, "{mean} {peak}");
        let (mean, _) = m.rates(t(20_000));
        assert_eq!(mean, 0.0, "idle for long: nothing offered");
    }

    #[test]
    fn queued_bytes_and_expiry_follow_every_change() {
        let t = |ms: u64| Timestamp::from_nanos(ms * 1_000_000);
        let mut d = Datagrams::new(3);
        let prio = |c: u8| c;
        d.push(t(0), 1, Bytes::from_static(b"aaaa"), Some(t(100)), prio);
        d.push(t(10), 1, Bytes::from_static(b"bb"), Some(t(110)), prio);
        d.push(t(20), 2, Bytes::from_static(b"c"), None, prio);
        assert_eq!(d.queued_bytes(), 7);
        // Full: the oldest of the least important class (2) makes room.
        d.push(t(30), 1, Bytes::from_static(b"ddd"), Some(t(50)), prio);
        assert_eq!((d.queued_bytes(), d.stats[&2].overflowed), (9, 1));
        // Expiry takes the expired heads only: "aaaa" (100 ms), not "bb" (110 ms).
        d.expire(t(105));
        assert_eq!((d.queued_bytes(), d.stats[&1].expired), (5, 1));
        // "ddd" (deadline 50 ms, queued behind a later deadline) is never handed out late.
        let first = d.pop(1, t(105)).unwrap();
        assert_eq!(&first.data[..], b"bb");
        assert!(d.pop(1, t(105)).is_none());
        assert_eq!((d.queued_bytes(), d.stats[&1].expired, d.has_outgoing()), (0, 2, false));
        d.push_front(first);
        assert_eq!(d.queued_bytes(), 2);
    }
}
