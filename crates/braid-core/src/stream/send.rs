//! The send half of a stream: bytes written by the application, kept until acknowledged;
//! lost ranges are queued for retransmission on whichever path the scheduler picks.

use crate::ranges::RangeSet;
use bytes::{Bytes, BytesMut};
use std::collections::BTreeMap;

/// A send buffer with less room than this counts as full for [`SendStream::stalled_head`]:
/// an application writes in chunks (the daemon's reads are 64 KB) and waits for room for one.
pub const WRITE_SLACK: u64 = 64 * 1024;

/// Send-side state of one stream.
#[derive(Debug, Default)]
pub struct SendStream {
    /// Unacknowledged data by stream offset; chunks never overlap.
    chunks: BTreeMap<u64, Bytes>,
    /// Offset below which everything is acknowledged and dropped.
    acked_prefix: u64,
    /// Acknowledged ranges above `acked_prefix`.
    acked: RangeSet,
    /// End of the written data.
    write_offset: u64,
    /// First offset never sent.
    next_new: u64,
    /// New data sent ahead of `next_new` (EDPF's skipped packets leave later on faster paths).
    sent_ahead: RangeSet,
    /// Bytes in `sent_ahead`, kept as ranges come and go (the backlog is asked per packet).
    ahead_bytes: u64,
    /// End of the highest new data sent (what the peer's flow control counts).
    highest_sent: u64,
    /// Ranges to send again.
    retransmit: RangeSet,
    /// `finish()` was called.
    pub fin: bool,
    /// A FIN is owed: never sent, or lost.
    fin_pending: bool,
    /// The FIN was acknowledged.
    pub fin_acked: bool,
    /// The peer's flow-control limit for this stream.
    pub max_data: u64,
    /// We reset the stream with this code.
    pub reset: Option<u64>,
    /// RESET_STREAM must be (re)sent.
    pub reset_pending: bool,
    /// RESET_STREAM was acknowledged.
    pub reset_acked: bool,
    /// The peer asked us to stop with this code.
    pub stopped: Option<u64>,
    /// The application was told "blocked" and waits for a Writable event.
    pub blocked: bool,
}

/// What to put in the next STREAM frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Stream offset.
    pub offset: u64,
    /// Length in bytes.
    pub len: usize,
    /// Carries the FIN.
    pub fin: bool,
    /// The bytes were sent before (a retransmission).
    pub retransmit: bool,
    /// How far the highest offset sent grew (what flow control charges).
    pub grew: u64,
}

impl SendStream {
    /// A send half with the peer's initial limit.
    pub fn new(max_data: u64) -> Self {
        SendStream { max_data, ..Default::default() }
    }

    /// Bytes written and not yet acknowledged (what the send buffer holds).
    pub fn buffered(&self) -> u64 {
        self.write_offset - self.acked_prefix
    }

    /// End of written data.
    pub fn write_offset(&self) -> u64 {
        self.write_offset
    }

    /// Appends application data; the caller has checked buffer space.
    pub fn write(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        let len = data.len() as u64;
        self.chunks.insert(self.write_offset, data);
        self.write_offset += len;
    }

    /// Marks the end of the stream.
    pub fn finish(&mut self) {
        if !self.fin {
            self.fin = true;
            self.fin_pending = true;
        }
    }

    /// True when a frame could be built now (ignoring the connection-level limit for new data:
    /// `conn_credit` is what the connection allows).
    pub fn has_sendable(&self, conn_credit: u64) -> bool {
        if self.reset.is_some() {
            return false;
        }
        !self.retransmit.is_empty()
            || (self.next_new < self.write_offset
                && self.next_new < self.max_data
                && (conn_credit > 0 || self.next_new < self.highest_sent))
            || (self.fin_pending && self.next_new == self.write_offset)
    }

    /// Bytes queued for retransmission.
    pub fn retransmit_bytes(&self) -> u64 {
        if self.reset.is_some() {
            return 0;
        }
        self.retransmit.iter().map(|r| r.end - r.start).sum()
    }

    /// True when retransmissions are queued.
    pub fn has_retransmit(&self) -> bool {
        self.reset.is_none() && !self.retransmit.is_empty()
    }

    /// Picks the next chunk of at most `max_len` bytes: retransmissions first, then new data
    /// within the stream's and the connection's (`conn_credit`) limits.
    pub fn next_chunk(&mut self, max_len: impl Fn(u64) -> usize, conn_credit: u64) -> Option<Chunk> {
        if self.reset.is_some() {
            return None;
        }
        if let Some(r) = self.retransmit.first() {
            let len = ((r.end - r.start) as usize).min(max_len(r.start));
            if len == 0 {
                return None;
            }
            self.retransmit.remove(r.start..r.start + len as u64);
            let end = r.start + len as u64;
            let fin = self.fin
                && end == self.write_offset
                && self.fin_pending
                && self.next_new == self.write_offset;
            if fin {
                self.fin_pending = false;
            }
            return Some(Chunk { offset: r.start, len, fin, retransmit: true, grew: 0 });
        }
        // New data up to the next range already sent ahead.
        let gap_end = self.sent_ahead.first().map_or(u64::MAX, |r| r.start);
        let credit_end = self.highest_sent.max(self.next_new).saturating_add(conn_credit);
        let limit = self.write_offset.min(self.max_data).min(credit_end).min(gap_end);
        let len = (limit.saturating_sub(self.next_new) as usize).min(max_len(self.next_new));
        let end = self.next_new + len as u64;
        let fin = self.fin_pending && end == self.write_offset;
        if len == 0 && !fin {
            return None;
        }
        let grew = end.saturating_sub(self.highest_sent);
        let chunk = Chunk { offset: self.next_new, len, fin, retransmit: false, grew };
        self.highest_sent = self.highest_sent.max(end);
        self.next_new = end;
        // Skip what was already sent ahead.
        while let Some(r) = self.sent_ahead.first().filter(|r| r.start <= self.next_new) {
            self.next_new = self.next_new.max(r.end);
            self.ahead_bytes -= r.end - r.start;
            self.sent_ahead.remove(r);
        }
        if fin {
            self.fin_pending = false;
        }
        Some(chunk)
    }

    /// New data that is not yet sent and lies `skip` unsent bytes beyond the next in-order
    /// offset: the chunk a slower path sends so that it arrives when the bytes before it, sent
    /// by faster paths, have arrived. None when there is not that much data or credit.
    pub fn next_chunk_ahead(&mut self, skip: u64, max_len: usize, conn_credit: u64) -> Option<Chunk> {
        if self.reset.is_some() || skip == 0 {
            return None;
        }
        // Walk the unsent gaps from next_new, counting `skip` unsent bytes.
        let start = self.next_new;
        let pos = {
            let mut pos = start;
            let mut left = skip;
            let mut ranges = self.sent_ahead.iter().filter(|r| r.end > start).peekable();
            loop {
                let gap_end = ranges.peek().map_or(u64::MAX, |r| r.start.max(pos));
                let gap = gap_end - pos;
                if gap > left {
                    break pos + left;
                }
                left -= gap;
                match ranges.next() {
                    Some(r) => pos = r.end.max(pos),
                    None => break pos,
                }
            }
        };
        let next_sent = self.sent_ahead.iter().find(|r| r.end > pos).map_or(u64::MAX, |r| r.start);
        let credit_end = self.highest_sent.max(self.next_new).saturating_add(conn_credit);
        let limit = self.write_offset.min(self.max_data).min(credit_end).min(next_sent);
        if pos >= limit {
            return None;
        }
        let len = ((limit - pos) as usize).min(max_len);
        if len == 0 {
            return None;
        }
        let end = pos + len as u64;
        let fin = self.fin_pending && end == self.write_offset;
        if fin {
            self.fin_pending = false;
        }
        let grew = end.saturating_sub(self.highest_sent);
        self.highest_sent = self.highest_sent.max(end);
        // `pos` lies in a gap and `end` at most at the next range: all of it is new.
        self.sent_ahead.insert(pos..end);
        self.ahead_bytes += len as u64;
        Some(Chunk { offset: pos, len, fin, retransmit: false, grew })
    }

    /// New bytes available to send ahead of the next in-order offset, within the limits:
    /// `gap + min(new, conn_credit)` of [`SendStream::unsent_parts`]. O(1).
    pub fn unsent_bytes(&self, conn_credit: u64) -> u64 {
        let (gap, new) = self.unsent_parts();
        gap + new.min(conn_credit)
    }

    /// The unsent bytes in two parts: those below the highest offset sent (the gaps left by
    /// EDPF's sending ahead, which session credit already covers), and those above it that the
    /// stream's own limit allows (which session credit caps). Apart, they let the stream layer
    /// keep the session's backlog as running sums (see `queue::SendQueue`).
    pub fn unsent_parts(&self) -> (u64, u64) {
        // Everything sent ahead lies between `next_new` and `highest_sent`, and the written
        // end and the peer's limit both lie at or above `highest_sent`.
        let top = self.highest_sent.max(self.next_new);
        let gap = (top - self.next_new).saturating_sub(self.ahead_bytes);
        let new = self.write_offset.min(self.max_data).saturating_sub(top);
        (gap, new)
    }

    /// Copies `[offset, offset + len)` into `out`.
    pub fn copy_range(&self, offset: u64, len: usize, out: &mut Vec<u8>) {
        let end = offset + len as u64;
        let mut pos = offset;
        let start_key = self.chunks.range(..=offset).next_back().map_or(offset, |(k, _)| *k);
        for (&k, chunk) in self.chunks.range(start_key..) {
            if pos >= end {
                break;
            }
            let chunk_end = k + chunk.len() as u64;
            if chunk_end <= pos {
                continue;
            }
            let from = (pos - k) as usize;
            let to = (end.min(chunk_end) - k) as usize;
            out.extend_from_slice(&chunk[from..to]);
            pos = k + to as u64;
        }
        debug_assert_eq!(pos, end, "stream data below the acknowledged prefix was requested");
    }

    /// A frame covering `[offset, offset + len)` (and the FIN if `fin`) was acknowledged.
    pub fn on_acked(&mut self, offset: u64, len: u64, fin: bool) {
        if fin {
            self.fin_acked = true;
            self.fin_pending = false;
        }
        // Only what lies above the acknowledged prefix is news (a late acknowledgement of a
        // stranded packet whose bytes were resent and acknowledged already is not).
        let start = offset.max(self.acked_prefix);
        let end = offset + len;
        if start >= end {
            return;
        }
        self.retransmit.remove(start..end);
        // In order (every acknowledgement of a path that does not reorder): the prefix grows
        // without the range passing through `acked`.
        if start == self.acked_prefix && self.acked.first().is_none_or(|r| r.start > end) {
            self.acked_prefix = end;
            self.drop_acked_prefix();
            return;
        }
        self.acked.insert(start..end);
        if let Some(first) = self.acked.first() {
            if first.start <= self.acked_prefix {
                self.acked_prefix = first.end;
                self.acked.remove_below(self.acked_prefix);
                self.drop_acked_prefix();
            }
        }
    }

    fn drop_acked_prefix(&mut self) {
        while let Some(entry) = self.chunks.first_entry() {
            let k = *entry.key();
            let end = k + entry.get().len() as u64;
            if end <= self.acked_prefix {
                entry.remove();
            } else if k < self.acked_prefix {
                let mut chunk = entry.remove();
                let cut = (self.acked_prefix - k) as usize;
                chunk = chunk.slice(cut..);
                self.chunks.insert(self.acked_prefix, chunk);
                break;
            } else {
                break;
            }
        }
    }

    /// A frame covering `[offset, offset + len)` was lost: queue what is not yet acknowledged.
    pub fn on_lost(&mut self, offset: u64, len: u64, fin: bool) {
        if self.reset.is_some() {
            return;
        }
        if fin && !self.fin_acked {
            self.fin_pending = true;
        }
        let start = offset.max(self.acked_prefix);
        let end = offset + len;
        if start >= end {
            return;
        }
        for gap in self.acked.gaps_in(start..end) {
            self.retransmit.insert(gap);
        }
    }

    /// The unacknowledged sent bytes at the stream's head (at most `max_len` of them) while
    /// they hold everything else back: the stream can send nothing now, and its send buffer
    /// (of `cap` bytes) has no room for another application write of up to [`WRITE_SLACK`]
    /// bytes, or data waits for the peer's credit (`conn_credit`: what the session's flow
    /// control allows). None when the head is unsent, queued for retransmission, or the stream
    /// simply has nothing more to say. See `session::stall`.
    pub fn stalled_head(&self, conn_credit: u64, cap: u64, max_len: u64) -> Option<std::ops::Range<u64>> {
        if self.reset.is_some() || !self.retransmit.is_empty() || self.has_sendable(conn_credit) {
            return None;
        }
        let full = self.blocked || self.buffered().saturating_add(WRITE_SLACK) > cap;
        if !full && self.next_new >= self.write_offset {
            return None;
        }
        let start = self.acked_prefix;
        let end = self.acked.first().map_or(self.next_new, |r| r.start).min(self.next_new);
        (start < end).then(|| start..end.min(start.saturating_add(max_len)))
    }

    /// The unacknowledged bytes at the stream's head (at most `max_len` of them) while the peer
    /// holds at least `budget` acknowledged bytes behind them: data the receiver cannot deliver
    /// until the head arrives. None when the head is queued for retransmission, nothing beyond
    /// it is acknowledged, or after a reset. Counts at most the acknowledged ranges that reach
    /// `budget`. See `session::stall`.
    pub fn held_head(&self, budget: u64, max_len: u64) -> Option<std::ops::Range<u64>> {
        if self.reset.is_some() || !self.retransmit.is_empty() {
            return None;
        }
        let start = self.acked_prefix;
        let end = self.acked.first().map(|r| r.start).filter(|&e| e > start)?.min(self.next_new);
        let mut held = 0;
        for r in self.acked.iter() {
            held += r.end - r.start;
            if held >= budget {
                return (start < end).then(|| start..end.min(start.saturating_add(max_len)));
            }
        }
        None
    }

    /// Queues for sending again the unacknowledged bytes below the highest acknowledged offset
    /// (or the head alone, when nothing beyond it is acknowledged), at most `max_len` bytes from
    /// the head on: what slower paths still carry while faster ones delivered what follows.
    /// Nothing when the head is no longer at `head` (it arrived after it was found stalled).
    /// Returns the bytes queued.
    pub fn reinject_holes(&mut self, head: u64, max_len: u64) -> u64 {
        if self.reset.is_some() || self.acked_prefix != head {
            return 0;
        }
        let top = self.acked.max().map_or(self.next_new, |m| m + 1).min(self.next_new);
        let top = top.max(self.acked_prefix.saturating_add(1).min(self.next_new));
        let mut left = max_len;
        let holes: smallvec::SmallVec<[std::ops::Range<u64>; 8]> =
            self.acked.gaps_in(self.acked_prefix..top).collect();
        for gap in holes {
            if left == 0 {
                break;
            }
            let end = gap.end.min(gap.start + left);
            left -= end - gap.start;
            self.retransmit.insert(gap.start..end);
        }
        max_len - left
    }

    /// The first part of `[start, end)` that is not acknowledged (None also after a reset):
    /// what a loss fetch still has to send (seed 003, see `session::fetch`).
    pub fn first_unacked(&self, start: u64, end: u64) -> Option<std::ops::Range<u64>> {
        if self.reset.is_some() {
            return None;
        }
        let start = start.max(self.acked_prefix);
        if start >= end {
            return None;
        }
        self.acked.gaps_in(start..end).next()
    }

    /// True when `[offset, offset + len)` is acknowledged.
    pub fn is_acked(&self, offset: u64, len: u64) -> bool {
        offset + len <= self.acked_prefix
            || self.acked.contains_range(offset.max(self.acked_prefix)..offset + len)
    }

    /// True once everything, FIN included, is acknowledged.
    pub fn is_complete(&self) -> bool {
        self.fin && self.fin_acked && self.acked_prefix == self.write_offset
    }

    /// Abandons the send half.
    pub fn reset(&mut self, code: u64) {
        if self.reset.is_none() {
            self.reset = Some(code);
            self.reset_pending = true;
            self.chunks.clear();
            self.retransmit = RangeSet::new();
        }
    }

    /// The final size announced in RESET_STREAM: how far we sent.
    pub fn final_size(&self) -> u64 {
        self.next_new.max(self.highest_sent)
    }
}

/// Gathers `data` into one `Bytes` (used when the application hands over a slice).
pub fn to_bytes(data: &[u8]) -> Bytes {
    let mut b = BytesMut::with_capacity(data.len());
    b.extend_from_slice(data);
    b.freeze()
}

#[cfg(test)]
mod tests;
