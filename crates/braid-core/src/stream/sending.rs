//! What the sender takes from the streams: the next chunk by class rank and turn, EDPF's
//! chunks ahead, and the backlog the schedulers weigh — each O(classes + log streams) per
//! packet, from the send queue's kept shelves and counters (`queue`).

use super::send::Chunk;
use super::Streams;
use crate::wire::frame::encode;
use crate::wire::varint;

impl Streams {
    /// True when some stream has data (or a FIN) to send.
    pub fn has_sendable(&self) -> bool {
        self.queue.has_sendable(self.flow.credit() == 0)
    }

    /// Bytes stream `id` has queued for retransmission.
    pub fn retransmit_bytes_of(&self, id: u64) -> u64 {
        self.streams.get(&id).map_or(0, |s| s.send.retransmit_bytes())
    }

    /// True when some stream has retransmissions queued.
    pub fn has_retransmit(&self) -> bool {
        self.queue.has_retransmit()
    }

    /// The stream that would send next and its class (`rank`: see `next_chunk`): this and
    /// `unsent_packets_of` tell the scheduler what EDPF may skip.
    pub fn next_sender(&self, rank: impl Fn(u8) -> Option<u8>) -> Option<(u64, u8)> {
        let id = self.queue.next(self.flow.credit() == 0, &rank)?;
        self.streams.get(&id).map(|s| (id, s.class))
    }

    /// New bytes stream `id` could send, in packets of `room` bytes (what EDPF may skip).
    pub fn unsent_packets_of(&self, id: u64, room: usize) -> u32 {
        let credit = self.flow.credit();
        let Some(s) = self.streams.get(&id) else { return 0 };
        let per = room.saturating_sub(encode::stream_header_len(id, u64::MAX >> 2, None)).max(1) as u64;
        (s.send.unsent_bytes(credit) / per).min(u64::from(u32::MAX)) as u32
    }

    /// Takes the next chunk to send from the highest-priority stream with something to send
    /// (round-robin among equals), sized so that its frame (and a STREAM_OPEN, if the stream
    /// must still be announced) fits in `room` bytes. Returns the stream id, the chunk (None
    /// when only the announcement fits or is due) and the class to announce.
    ///
    /// `rank` gives a class's priority (lower first), or None when the class may not send in
    /// this packet: a packet carries the one class its scheduler was asked about.
    pub fn next_chunk(
        &mut self,
        room: usize,
        rank: impl Fn(u8) -> Option<u8>,
    ) -> Option<(u64, Option<Chunk>, Option<u8>)> {
        let credit = self.flow.credit();
        // Streams with nothing to send leave the queue until something is written or lost.
        self.queue.sweep(credit == 0);
        let id = self.queue.next(credit == 0, &rank)?;
        let Some(s) = self.streams.get_mut(&id) else {
            self.queue.dequeue(id);
            return None;
        };
        let announce_len = if s.announce { 2 + varint::size(id) } else { 0 };
        let max_len =
            |offset: u64| room.saturating_sub(announce_len + encode::stream_header_len(id, offset, None));
        let chunk = s.send.next_chunk(max_len, credit);
        let announce = if s.announce && announce_len <= room {
            s.announce = false;
            Some(s.class)
        } else {
            None
        };
        if let Some(c) = &chunk {
            if c.retransmit {
                self.retransmitted_bytes += c.len as u64;
            }
            self.flow.on_sent(c.grew);
        }
        // Round-robin: to the back of the queue if more remains.
        let more = s.send.has_sendable(self.flow.credit()) || s.announce;
        self.touched(id);
        if more {
            self.queue.send_to_back(id);
        } else {
            self.queue.dequeue(id);
        }
        if chunk.is_none() && announce.is_none() {
            return None;
        }
        Some((id, chunk, announce))
    }

    /// New data of the stream that would send next, lying `skip_packets` packets (of `room`
    /// bytes each) beyond its next in-order data: what a slower path sends so that it arrives
    /// just after the data before it (EDPF, see `scheduler::edpf`). Returns the stream id and
    /// the chunk; None when there is not that much data or credit, or the stream must still
    /// be announced.
    pub fn next_chunk_ahead(
        &mut self,
        room: usize,
        skip_packets: u32,
        rank: impl Fn(u8) -> Option<u8>,
    ) -> Option<(u64, Chunk)> {
        let credit = self.flow.credit();
        let id = self.queue.next(credit == 0, &rank)?;
        let s = self.streams.get(&id)?;
        // Queued retransmissions do not stop it: EDPF sends new data ahead past them when the
        // earliest path delivers them all first.
        if s.announce || s.send.has_retransmit() {
            return None;
        }
        let max_len = room.saturating_sub(encode::stream_header_len(id, u64::MAX >> 2, None));
        // Streams of the same priority take turns: the skip is shared among them.
        let p = rank(s.class);
        let peers = self.queue.sendable_at(credit == 0, &rank, p).max(1) as u64;
        let skip = u64::from(skip_packets) * max_len as u64 / peers;
        let s = self.streams.get_mut(&id)?;
        let chunk = s.send.next_chunk_ahead(skip.max(1), max_len, credit)?;
        self.flow.on_sent(chunk.grew);
        self.touched(id);
        Some((id, chunk))
    }

    /// Classes of the streams waiting to send.
    pub fn sending_classes(&self) -> Vec<u8> {
        self.queue.classes()
    }

    /// Bytes written by the application and not yet sent, across streams.
    pub fn unsent_total(&self) -> u64 {
        self.queue.unsent_total(self.flow.credit())
    }

    /// Copies stream bytes into a packet.
    pub fn copy_range(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) {
        if let Some(s) = self.streams.get(&id) {
            s.send.copy_range(offset, len, out);
        }
    }

    /// Session-level flow control: (new bytes sent, peer's limit, bytes received, our limit).
    pub fn flow(&self) -> (u64, u64, u64, u64) {
        self.flow.snapshot()
    }

    /// Bytes in send buffers across streams.
    pub fn buffered_send_bytes(&self) -> u64 {
        self.streams.values().map(|s| s.send.buffered()).sum()
    }

    /// Current reorder-buffer occupancy (packets held behind gaps) across streams, kept as
    /// frames arrive. O(1).
    pub fn reorder_now(&self) -> usize {
        self.reorder_total
    }
}
