//! Unreliable datagrams: queued per traffic class at the sender (highest priority first,
//! dropped when their deadline passes — seed 001's MMTP), delivered at most once.

use crate::time::Timestamp;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

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
}

/// Datagram queues of a session.
#[derive(Debug, Default)]
pub struct Datagrams {
    outgoing: BTreeMap<u8, VecDeque<OutgoingDatagram>>,
    outgoing_len: usize,
    incoming: VecDeque<Datagram>,
    next_seq: BTreeMap<u8, u64>,
    /// Counters by class.
    pub stats: BTreeMap<u8, DatagramStats>,
    /// Received datagrams dropped because the application did not read them in time.
    pub incoming_overflow: u64,
    limit: usize,
}

impl Datagrams {
    /// Queues of at most `limit` datagrams each way.
    pub fn new(limit: usize) -> Self {
        Datagrams { limit: limit.max(1), ..Default::default() }
    }

    /// Queues a datagram; when the queue is full the oldest of the least important class goes.
    pub fn push(&mut self, class: u8, data: Bytes, deadline: Option<Timestamp>, priority: impl Fn(u8) -> u8) {
        let seq = self.next_seq.entry(class).or_insert(0);
        let d = OutgoingDatagram { class, seq: *seq, data, deadline };
        *seq += 1;
        self.stats.entry(class).or_default().queued += 1;
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
                if self.outgoing.get_mut(&c).and_then(|q| q.pop_front()).is_some() {
                    self.outgoing_len -= 1;
                    self.stats.entry(c).or_default().overflowed += 1;
                }
            }
        }
    }

    /// True when a datagram is waiting.
    pub fn has_outgoing(&self) -> bool {
        self.outgoing_len > 0
    }

    /// The next datagram by priority (lowest value first), without taking it.
    pub fn peek(&self, priority: impl Fn(u8) -> u8) -> Option<&OutgoingDatagram> {
        self.outgoing
            .iter()
            .filter_map(|(c, q)| q.front().map(|d| (priority(*c), d)))
            .min_by_key(|(p, _)| *p)
            .map(|(_, d)| d)
    }

    /// Takes the datagram `peek` returned.
    pub fn pop(&mut self, class: u8) -> Option<OutgoingDatagram> {
        let d = self.outgoing.get_mut(&class)?.pop_front()?;
        self.outgoing_len -= 1;
        Some(d)
    }

    /// Drops datagrams whose deadline has passed.
    pub fn expire(&mut self, now: Timestamp) {
        for (class, q) in self.outgoing.iter_mut() {
            let before = q.len();
            q.retain(|d| d.deadline.is_none_or(|t| t > now));
            let gone = before - q.len();
            if gone > 0 {
                self.outgoing_len -= gone;
                self.stats.entry(*class).or_default().expired += gone as u64;
            }
        }
    }

    /// Counts a datagram dropped by the scheduler.
    pub fn count_expired(&mut self, class: u8) {
        self.stats.entry(class).or_default().expired += 1;
    }

    /// Stores a received datagram for the application.
    pub fn on_received(&mut self, d: Datagram) {
        self.stats.entry(d.class).or_default().received += 1;
        if self.incoming.len() >= self.limit {
            self.incoming.pop_front();
            self.incoming_overflow += 1;
        }
        self.incoming.push_back(d);
    }

    /// The next received datagram.
    pub fn recv(&mut self) -> Option<Datagram> {
        self.incoming.pop_front()
    }
}
