//! The receive half of a stream: the reorder buffer. Bytes arriving out of order over
//! different paths wait here until the gap before them is filled (seed 004's receiver
//! middleware buffer), then are read in order.

use crate::ranges::RangeSet;
use bytes::Bytes;
use std::collections::{BTreeMap, VecDeque};

/// Why a STREAM frame was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecvError {
    /// Data beyond the credit we gave.
    FlowControl,
    /// Data beyond, or a FIN contradicting, the final size.
    FinalSize,
}

/// Receive-side state of one stream.
#[derive(Debug)]
pub struct RecvStream {
    /// The bytes from `read_offset` to `contiguous`, in order, as they came: read next.
    ready: VecDeque<Bytes>,
    /// End of the bytes received in order.
    contiguous: u64,
    /// Chunks beyond `contiguous`, held behind a gap, by offset: the reorder buffer (its
    /// length is the occupancy in packets, asked after every STREAM frame).
    chunks: BTreeMap<u64, Bytes>,
    /// The ranges received beyond `contiguous` (none starts at or below it).
    received: RangeSet,
    read_offset: u64,
    highest: u64,
    final_size: Option<u64>,
    /// The credit announced to the peer.
    pub max_data: u64,
    window: u64,
    /// The peer reset the stream with this code.
    pub reset: Option<u64>,
    /// We asked the peer to stop sending with this code.
    pub stopped: Option<u64>,
    /// STOP_SENDING must be (re)sent.
    pub stop_pending: bool,
    /// The application read to the end (or saw the reset).
    pub done: bool,
}

impl RecvStream {
    /// A receive half granting `window` bytes of credit.
    pub fn new(window: u64) -> Self {
        RecvStream {
            ready: VecDeque::new(),
            contiguous: 0,
            chunks: BTreeMap::new(),
            received: RangeSet::new(),
            read_offset: 0,
            highest: 0,
            final_size: None,
            max_data: window,
            window,
            reset: None,
            stopped: None,
            stop_pending: false,
            done: false,
        }
    }

    /// Highest offset received (what counts against connection-level flow control).
    pub fn highest(&self) -> u64 {
        self.highest
    }

    /// Applies a STREAM frame. Returns how far `highest` moved and how many bytes were new.
    pub fn on_frame(&mut self, offset: u64, data: Bytes, fin: bool) -> Result<(u64, u64), RecvError> {
        let end = offset + data.len() as u64;
        if end > self.max_data {
            return Err(RecvError::FlowControl);
        }
        if let Some(f) = self.final_size {
            if end > f || (fin && end != f) {
                return Err(RecvError::FinalSize);
            }
        }
        if fin {
            if end < self.highest {
                return Err(RecvError::FinalSize);
            }
            self.final_size = Some(end);
        }
        let grew = end.saturating_sub(self.highest);
        self.highest = self.highest.max(end);
        if self.reset.is_some() || self.stopped.is_some() {
            return Ok((grew, 0));
        }
        let start = offset.max(self.contiguous);
        if start >= end {
            return Ok((grew, 0));
        }
        if start == self.contiguous && self.received.is_empty() {
            // In order with nothing held (a path that does not reorder): straight to the
            // readable queue, no reorder-buffer bookkeeping.
            self.ready.push_back(data.slice((start - offset) as usize..));
            self.contiguous = end;
            return Ok((grew, end - start));
        }
        let before = self.contiguous;
        let mut fresh = 0;
        for gap in self.received.gaps_in(start..end) {
            let from = (gap.start - offset) as usize;
            let to = (gap.end - offset) as usize;
            fresh += (to - from) as u64;
            if gap.start == before {
                self.ready.push_back(data.slice(from..to));
            } else {
                // A chunk held behind a gap may wait a round trip or more; a slice would keep
                // the whole receive batch it came in (tens of datagrams) alive that long, so
                // it gets its own copy. Chunks in order are read soon and stay slices.
                self.chunks.insert(gap.start, Bytes::copy_from_slice(&data[from..to]));
            }
        }
        self.received.insert(start..end);
        // What the frame joined to the in-order bytes is in order now.
        while let Some(r) = self.received.first() {
            if r.start > self.contiguous {
                break;
            }
            self.contiguous = self.contiguous.max(r.end);
            self.received.pop_min();
        }
        while let Some(entry) = self.chunks.first_entry() {
            if *entry.key() >= self.contiguous {
                break;
            }
            self.ready.push_back(entry.remove());
        }
        Ok((grew, fresh))
    }

    /// Chunks held behind a gap: the reorder-buffer occupancy in packets. O(1).
    pub fn out_of_order_chunks(&self) -> usize {
        self.chunks.len()
    }

    /// True when in-order data waits to be read.
    pub fn has_data(&self) -> bool {
        self.contiguous > self.read_offset
    }

    /// True when a read would return something: data, the end, or the reset.
    pub fn is_readable(&self) -> bool {
        self.has_data() || self.final_size == Some(self.read_offset) || self.reset.is_some()
    }

    /// Bytes readable in order right now.
    pub fn readable_bytes(&self) -> u64 {
        self.contiguous - self.read_offset
    }

    /// Takes up to `max` bytes in order, without copying. `None` when nothing is readable.
    pub fn read_chunk(&mut self, max: usize) -> Option<Bytes> {
        if max == 0 {
            return None;
        }
        let front = self.ready.front_mut()?;
        let out = if front.len() <= max { self.ready.pop_front()? } else { front.split_to(max) };
        self.read_offset += out.len() as u64;
        Some(out)
    }

    /// True when every byte up to the final size has been read.
    pub fn is_finished(&self) -> bool {
        self.final_size == Some(self.read_offset)
    }

    /// Bytes consumed by the application.
    pub fn read_offset(&self) -> u64 {
        self.read_offset
    }

    /// Changes the window later credit updates grant (sized from the paths' delay skew);
    /// credit already announced stays.
    pub fn set_window(&mut self, window: u64) {
        self.window = window;
    }

    /// The new credit to announce, when the application has consumed half a window.
    pub fn credit_update(&mut self) -> Option<u64> {
        if self.final_size.is_some() || self.reset.is_some() {
            return None;
        }
        let target = self.read_offset + self.window;
        if target >= self.max_data + self.window / 2 {
            self.max_data = target;
            Some(target)
        } else {
            None
        }
    }

    /// The peer reset the stream: drop what is buffered. Returns how far `highest` moved.
    pub fn on_reset(&mut self, code: u64, final_size: u64) -> Result<u64, RecvError> {
        if final_size < self.highest || self.final_size.is_some_and(|f| f != final_size) {
            return Err(RecvError::FinalSize);
        }
        if final_size > self.max_data {
            return Err(RecvError::FlowControl);
        }
        let grew = final_size - self.highest;
        self.highest = final_size;
        self.final_size = Some(final_size);
        self.reset = Some(code);
        self.chunks.clear();
        self.ready.clear();
        self.received = RangeSet::new();
        self.contiguous = self.read_offset;
        Ok(grew)
    }

    /// We stop reading: drop buffered data and ask the peer to stop.
    pub fn stop(&mut self, code: u64) {
        if self.stopped.is_none() {
            self.stopped = Some(code);
            self.stop_pending = true;
            self.chunks.clear();
            self.ready.clear();
            self.done = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_held_chunk_does_not_keep_its_receive_batch_alive() {
        let batch = Bytes::from(vec![7u8; 64 * 1024]);
        let range = batch.as_ptr() as usize..batch.as_ptr() as usize + batch.len();
        let mut r = RecvStream::new(1 << 20);
        r.on_frame(1000, batch.slice(0..1000), false).unwrap();
        r.on_frame(0, batch.slice(1000..2000), false).unwrap();
        let held = &r.ready[1];
        assert!(!range.contains(&(held.as_ptr() as usize)), "the held chunk is a copy");
        let in_order = &r.ready[0];
        assert!(range.contains(&(in_order.as_ptr() as usize)), "the in-order chunk stays a slice");
    }

    #[test]
    fn reorders_and_dedupes() {
        let mut r = RecvStream::new(100);
        assert_eq!(r.on_frame(5, Bytes::from_static(b"56789"), true), Ok((10, 5)));
        assert_eq!(r.out_of_order_chunks(), 1);
        assert!(!r.is_readable());
        assert_eq!(r.on_frame(2, Bytes::from_static(b"2345"), false), Ok((0, 3)));
        assert_eq!(r.on_frame(0, Bytes::from_static(b"01"), false), Ok((0, 2)));
        assert_eq!(r.out_of_order_chunks(), 0);
        let mut all = Vec::new();
        while let Some(c) = r.read_chunk(3) {
            all.extend_from_slice(&c);
        }
        assert_eq!(all, b"0123456789");
        assert!(r.is_finished());
        assert_eq!(r.on_frame(0, Bytes::from_static(b"01"), false), Ok((0, 0)));
        assert!(r.read_chunk(10).is_none());
    }

    /// The kept count of held chunks equals a recount after every frame and read, with
    /// frames arriving in a shuffled, overlapping, duplicated order.
    #[test]
    fn held_count_matches_a_recount() {
        let recount = |r: &RecvStream| r.chunks.range(r.contiguous..).count();
        let data: Vec<u8> = (0..=255u8).cycle().take(4000).collect();
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        let mut r = RecvStream::new(1 << 20);
        let mut max_seen = 0;
        for step in 0..600 {
            let off = next() % 3900;
            let len = 1 + next() % 100;
            r.on_frame(off as u64, Bytes::copy_from_slice(&data[off..off + len]), false).unwrap();
            assert_eq!(r.out_of_order_chunks(), recount(&r), "step {step}");
            max_seen = max_seen.max(r.out_of_order_chunks());
            if step % 7 == 0 {
                r.read_chunk(50);
                assert_eq!(r.out_of_order_chunks(), recount(&r), "step {step} after a read");
            }
        }
        assert!(max_seen > 3, "the sequence must hold chunks behind gaps");
        r.on_frame(0, Bytes::copy_from_slice(&data), false).unwrap();
        assert_eq!(r.out_of_order_chunks(), 0);
    }

    /// Whatever the order, overlap and duplication of frames and however reads interleave,
    /// the reads return the stream's bytes exactly once and in order, and every byte counts as
    /// fresh once. Half the frames arrive in order (the fast path), half anywhere.
    #[test]
    fn reads_return_the_bytes_once_and_in_order() {
        let data: Vec<u8> = (0..=255u8).cycle().take(20_000).collect();
        for seed in 1..=20u64 {
            let mut seed = seed;
            let mut next = move || {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                (seed >> 33) as usize
            };
            let mut r = RecvStream::new(1 << 20);
            let (mut read, mut fresh, mut in_order) = (Vec::new(), 0u64, 0usize);
            while read.len() < data.len() {
                let off = if next() % 2 == 0 { in_order } else { next() % data.len() };
                let len = (1 + next() % 1400).min(data.len() - off);
                let (_, f) =
                    r.on_frame(off as u64, Bytes::copy_from_slice(&data[off..off + len]), false).unwrap();
                fresh += f;
                in_order = in_order.max(r.contiguous as usize);
                if next() % 3 == 0 {
                    while let Some(c) = r.read_chunk(1 + next() % 3000) {
                        read.extend_from_slice(&c);
                    }
                }
                if r.contiguous as usize == data.len() {
                    while let Some(c) = r.read_chunk(usize::MAX) {
                        read.extend_from_slice(&c);
                    }
                }
            }
            assert_eq!(read, data);
            assert_eq!(fresh, data.len() as u64);
            assert_eq!(r.out_of_order_chunks(), 0);
            assert!(!r.has_data());
        }
    }

    #[test]
    fn enforces_limits() {
        let mut r = RecvStream::new(10);
        assert_eq!(r.on_frame(8, Bytes::from_static(b"abc"), false), Err(RecvError::FlowControl));
        assert_eq!(r.on_frame(0, Bytes::from_static(b"abc"), true), Ok((3, 3)));
        assert_eq!(r.on_frame(3, Bytes::from_static(b"d"), false), Err(RecvError::FinalSize));
        assert_eq!(r.on_frame(0, Bytes::from_static(b"ab"), true), Err(RecvError::FinalSize));
    }

    #[test]
    fn grants_credit_after_half_a_window() {
        let mut r = RecvStream::new(10);
        r.on_frame(0, Bytes::from_static(b"0123456"), false).unwrap();
        assert!(r.credit_update().is_none());
        r.read_chunk(7).unwrap();
        assert_eq!(r.credit_update(), Some(17));
    }
}
