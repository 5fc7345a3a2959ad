//! Batched transmit: several datagrams for one path and destination in one caller buffer, all
//! of one segment size except possibly a shorter last one, so that the caller hands them to
//! the kernel in one segmented send (UDP GSO). The shape is quinn-proto's
//! `Connection::poll_transmit` with `max_datagrams` (quinn-proto, connection/mod.rs): the
//! first datagram sets the segment size; a shorter one ends the batch.
//!
//! Datagrams are built one at a time by [`Session::poll_transmit`], and the scheduler may
//! interleave paths packet by packet. So that a batch still fills, datagrams are gathered in
//! an open batch per (path, destination, source) held in the caller's [`TransmitBatch`]; one
//! is handed out when it is full (`max_datagrams`, [`MAX_BATCH_BYTES`], or a shorter last
//! datagram), when a datagram cannot join it (longer than its segment size), and, one per
//! call, once the session has nothing more to send now. Nothing is built twice or lost.

use super::Session;
use crate::path::PathId;
use crate::time::Timestamp;
use std::net::SocketAddr;
use std::time::Duration;

/// Most bytes one batch holds: a segmented send is one UDP datagram to the kernel, whose
/// payload stays under 65,535 bytes less the IP and UDP headers.
pub const MAX_BATCH_BYTES: usize = 64_000;
/// Buffers that grew beyond this many bytes are given back once no batch has needed that
/// much for [`KEEP_LARGE`]: a path whose MTU search reached 65,000 bytes (loopback) grows them
/// with one probe (1,000 idle sessions that had searched kept about 130 KB each).
const TRIM_ABOVE: usize = 16 * 1024;
/// How long large buffers are kept after the last batch that needed them (a busy session
/// reuses them round after round: no allocation per batch).
const KEEP_LARGE: Duration = Duration::from_secs(1);

/// Where a batch goes and how it is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch {
    /// The path its datagrams belong to.
    pub path: PathId,
    /// Where to send them.
    pub destination: SocketAddr,
    /// The local address to send from (None: any).
    pub source: Option<SocketAddr>,
    /// The size of every datagram but the last, which may be shorter.
    pub segment_size: usize,
    /// Datagrams in the batch.
    pub count: usize,
}

/// A batch still taking datagrams.
#[derive(Debug)]
struct Open {
    batch: Batch,
    contents: Vec<u8>,
    /// A datagram shorter than the segment size was added: it is the last.
    closed: bool,
}

impl Open {
    fn takes(&self, size: usize) -> bool {
        !self.closed && size <= self.batch.segment_size
    }

    fn is_full(&self, max_datagrams: usize) -> bool {
        let limit = max_datagrams.min(MAX_BATCH_BYTES / self.batch.segment_size.max(1)).max(1);
        self.closed || self.batch.count >= limit
    }

    fn push(&mut self, datagram: &[u8]) {
        self.contents.extend_from_slice(datagram);
        self.batch.count += 1;
        self.closed = datagram.len() < self.batch.segment_size;
    }
}

/// The caller's buffers for [`Session::poll_transmit_batch`], kept between calls (no
/// allocation per batch once warm): the batch handed out last, the open batches, and the
/// datagram being built. Large buffers are given back when unused for a while.
#[derive(Debug, Default)]
pub struct TransmitBatch {
    contents: Vec<u8>,
    open: Vec<Open>,
    spare: Vec<Vec<u8>>,
    scratch: Vec<u8>,
    /// When a batch last needed more than [`TRIM_ABOVE`] bytes.
    last_large: Option<Timestamp>,
}

impl TransmitBatch {
    /// Empty buffers.
    pub fn new() -> Self {
        TransmitBatch::default()
    }

    /// The datagrams of the last batch, back to back.
    pub fn contents(&self) -> &[u8] {
        &self.contents
    }

    /// Whether datagrams wait in open batches (handed out by the next calls).
    pub fn is_holding(&self) -> bool {
        !self.open.is_empty()
    }

    /// Bytes held in buffers (their capacity).
    #[cfg(test)]
    fn held_bytes(&self) -> usize {
        self.contents.capacity()
            + self.scratch.capacity()
            + self.spare.iter().chain(self.open.iter().map(|o| &o.contents)).map(Vec::capacity).sum::<usize>()
    }

    /// A batch of `len` bytes was handed out at `now`.
    fn used(&mut self, now: Timestamp, len: usize) {
        if len > TRIM_ABOVE {
            self.last_large = Some(now);
        }
    }

    /// Nothing is open: gives back the buffers over [`TRIM_ABOVE`] once no batch has needed
    /// them for [`KEEP_LARGE`].
    fn trim(&mut self, now: Timestamp) {
        if self.last_large.is_some_and(|t| now - t < KEEP_LARGE) {
            return;
        }
        for b in std::iter::once(&mut self.contents).chain(Some(&mut self.scratch)).chain(&mut self.spare) {
            if b.capacity() > TRIM_ABOVE {
                *b = Vec::new();
            }
        }
        self.spare.retain(|b| b.capacity() > 0);
    }

    /// Hands out open batch `i`: its datagrams become [`TransmitBatch::contents`].
    fn hand_out(&mut self, i: usize) -> Batch {
        let open = self.open.swap_remove(i);
        let old = std::mem::replace(&mut self.contents, open.contents);
        self.spare.push(old);
        open.batch
    }

    /// Adds datagram `t`, built in `scratch`, to the open batch of its path, destination and
    /// source, or opens one; returns a batch to send when one is full or `t` cannot join it.
    fn gather(&mut self, t: super::Transmit, max_datagrams: usize) -> Option<Batch> {
        let same = |o: &Open| {
            o.batch.path == t.path && o.batch.destination == t.destination && o.batch.source == t.source
        };
        let batch = Batch {
            path: t.path,
            destination: t.destination,
            source: t.source,
            segment_size: t.size,
            count: 1,
        };
        match self.open.iter().position(same) {
            Some(i) if !t.alone && self.open[i].takes(t.size) => {
                self.open[i].push(&self.scratch[..t.size]);
                self.open[i].is_full(max_datagrams).then(|| self.hand_out(i))
            }
            Some(i) => {
                // It cannot join: the open batch leaves, the datagram starts the next.
                let full = self.hand_out(i);
                self.open(batch, t.alone);
                Some(full)
            }
            None => {
                let i = self.open(batch, t.alone);
                self.open[i].is_full(max_datagrams).then(|| self.hand_out(i))
            }
        }
    }

    /// Opens a batch with the datagram in `scratch[..size]`, closed to others when it must
    /// leave `alone` ([`super::Transmit::alone`]); returns its index. The datagram's buffer
    /// becomes the batch's and `scratch` takes a spare one: the first datagram of a batch is
    /// not copied, so a path whose datagrams fill a batch alone (65,000 bytes on loopback)
    /// copies none. (Buffers rotate through `scratch`; once warm, each has the room it needs
    /// and nothing grows.)
    fn open(&mut self, batch: Batch, alone: bool) -> usize {
        let spare = self.spare.pop().unwrap_or_default();
        let mut contents = std::mem::replace(&mut self.scratch, spare);
        debug_assert_eq!(contents.len(), batch.segment_size, "a datagram is built to its size");
        contents.truncate(batch.segment_size);
        self.open.push(Open { batch: Batch { count: 1, ..batch }, contents, closed: alone });
        self.open.len() - 1
    }
}

impl Session {
    /// The next batch of at most `max_datagrams` datagrams for one path, destination and
    /// source, written back to back to `out` (read it with [`TransmitBatch::contents`]); None
    /// when nothing is to be sent now and no batch is open. Every datagram has
    /// `segment_size` bytes except possibly the last, which may be shorter; the batch stays
    /// within [`MAX_BATCH_BYTES`]. Call until None: open batches are handed out last.
    pub fn poll_transmit_batch(
        &mut self,
        now: Timestamp,
        max_datagrams: usize,
        out: &mut TransmitBatch,
    ) -> Option<Batch> {
        while let Some(t) = self.poll_transmit(now, &mut out.scratch) {
            if let Some(b) = out.gather(t, max_datagrams) {
                out.used(now, out.contents.len());
                return Some(b);
            }
        }
        if out.open.is_empty() {
            out.trim(now);
            None
        } else {
            let b = out.hand_out(0);
            out.used(now, out.contents.len());
            Some(b)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Transmit;

    fn datagram(out: &mut TransmitBatch, path: PathId, size: usize, alone: bool) -> Transmit {
        out.scratch = vec![path; size];
        let to: SocketAddr = "192.0.2.1:7000".parse().unwrap();
        Transmit { path, destination: to, source: None, size, alone }
    }

    #[test]
    fn a_probe_leaves_alone_and_in_order() {
        let mut out = TransmitBatch::new();
        let t = datagram(&mut out, 0, 1200, false);
        assert_eq!(out.gather(t, 10), None);
        let t = datagram(&mut out, 0, 1200, false);
        assert_eq!(out.gather(t, 10), None, "data of one path gathers");
        // A probe: the data before it leaves first, then the probe on its own.
        let t = datagram(&mut out, 0, 1200, true);
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(2));
        let t = datagram(&mut out, 0, 1200, true);
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(1), "the first probe");
        let t = datagram(&mut out, 0, 1200, false);
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(1), "the second probe");
        let t = datagram(&mut out, 0, 1200, false);
        assert_eq!(out.gather(t, 10), None, "data after the probes gathers again");
        assert_eq!(out.open.len(), 1);
        assert_eq!(out.open[0].batch.count, 2);
    }

    #[test]
    fn large_buffers_are_given_back_a_second_after_their_last_use() {
        let mut out = TransmitBatch::new();
        let t0 = Timestamp::from_nanos(1_000_000_000);
        let t = datagram(&mut out, 0, 65_000, true);
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(1));
        out.used(t0, out.contents.len());
        assert!(out.held_bytes() >= 65_000);
        out.trim(t0 + Duration::from_millis(500));
        assert!(out.held_bytes() >= 65_000, "kept while in use");
        out.trim(t0 + KEEP_LARGE);
        assert_eq!(out.held_bytes(), 0, "given back once unused");
        // Small buffers stay: a session sending ACKs does not allocate each round.
        let t = datagram(&mut out, 0, 1200, true);
        out.gather(t, 10);
        out.trim(t0 + 3 * KEEP_LARGE);
        assert!(out.held_bytes() >= 1200);
    }

    #[test]
    fn the_first_datagram_of_a_batch_is_not_copied() {
        let mut out = TransmitBatch::new();
        let t = datagram(&mut out, 0, 65_000, true);
        let built = out.scratch.as_ptr();
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(1));
        assert_eq!(out.contents().as_ptr(), built, "a datagram alone leaves from the buffer it was built in");
        assert_eq!(out.contents().len(), 65_000);
        // Two that share a batch: the first stays where it was built (a warm buffer, with
        // room for the batch), the second joins it.
        let t = datagram(&mut out, 1, 1200, false);
        out.scratch.reserve(MAX_BATCH_BYTES);
        let first = out.scratch.as_ptr();
        assert_eq!(out.gather(t, 10), None);
        let t = datagram(&mut out, 1, 1000, false);
        assert_eq!(out.gather(t, 10).map(|b| b.count), Some(2), "a shorter datagram ends the batch");
        assert_eq!(out.contents().as_ptr(), first);
        assert_eq!(out.contents(), [vec![1u8; 1200], vec![1u8; 1000]].concat());
    }
}
