//! The peer's stream frames, and the fate (sent, acknowledged, lost) of the frames we sent.

use super::events::{StreamEvent, StreamViolation};
use super::id::StreamId;
use super::{Stream, Streams};
use bytes::Bytes;

/// What happened to a control frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameFate {
    /// It left in a packet.
    Sent,
    /// Its packet was lost.
    Lost,
    /// Its packet was acknowledged.
    Acked,
}

impl Streams {
    /// The stream a peer frame names, opening the peer's streams up to it; None when it is
    /// ours and already forgotten.
    fn get_or_open_peer(&mut self, id: StreamId) -> Result<Option<&mut Stream>, StreamViolation> {
        if id.initiator() == self.side {
            // Our own stream: unknown means already closed (or never opened: a violation).
            if id.index() >= self.next_local_index {
                return Err(StreamViolation::StreamState);
            }
            return Ok(self.streams.get_mut(&id.0));
        }
        if id.index() >= self.local_max_streams {
            return Err(StreamViolation::StreamState);
        }
        while self.peer_opened <= id.index() {
            let new = StreamId::new(id.initiator(), self.peer_opened);
            self.peer_opened += 1;
            self.add_stream(new.0, 0, false);
            self.events.push_back(StreamEvent::Opened(new));
        }
        Ok(self.streams.get_mut(&id.0))
    }

    /// Applies a STREAM frame; returns how many of its bytes were new.
    pub fn on_stream_frame(
        &mut self,
        id: u64,
        offset: u64,
        data: Bytes,
        fin: bool,
    ) -> Result<u64, StreamViolation> {
        let Some(s) = self.get_or_open_peer(StreamId(id))? else {
            return Ok(0);
        };
        let held = s.recv.out_of_order_chunks();
        let (grew, fresh) = s.recv.on_frame(offset, data, fin)?;
        let readable = s.recv.is_readable() && !s.readable_signalled;
        if readable {
            s.readable_signalled = true;
        }
        let ooo = s.recv.out_of_order_chunks();
        self.reorder_total = self.reorder_total + ooo - held;
        self.reorder_max = self.reorder_max.max(ooo);
        self.flow.on_received(grew, true)?;
        if readable {
            self.events.push_back(StreamEvent::Readable(StreamId(id)));
        }
        Ok(fresh)
    }

    /// Applies STREAM_OPEN.
    pub fn on_stream_open(&mut self, id: u64, class: u8) -> Result<(), StreamViolation> {
        if let Some(s) = self.get_or_open_peer(StreamId(id))? {
            s.class = class;
            self.touched(id);
        }
        Ok(())
    }

    /// Applies RESET_STREAM.
    pub fn on_reset(&mut self, id: u64, code: u64, final_size: u64) -> Result<(), StreamViolation> {
        let Some(s) = self.get_or_open_peer(StreamId(id))? else {
            return Ok(());
        };
        if s.recv.reset.is_some() {
            return Ok(());
        }
        let held = s.recv.out_of_order_chunks();
        let grew = s.recv.on_reset(code, final_size)?;
        self.reorder_total -= held;
        self.flow.on_received(grew, false)?;
        self.events.push_back(StreamEvent::Reset(StreamId(id), code));
        Ok(())
    }

    /// Applies STOP_SENDING: we reset our send half in answer.
    pub fn on_stop_sending(&mut self, id: u64, code: u64) -> Result<(), StreamViolation> {
        let Some(s) = self.get_or_open_peer(StreamId(id))? else {
            return Ok(());
        };
        if s.send.stopped.is_none() {
            s.send.stopped = Some(code);
            s.send.reset(code);
            self.touched(id);
            self.events.push_back(StreamEvent::Stopped(StreamId(id), code));
        }
        Ok(())
    }

    /// Applies MAX_STREAM_DATA.
    pub fn on_max_stream_data(&mut self, id: u64, max: u64) -> Result<(), StreamViolation> {
        let Some(s) = self.get_or_open_peer(StreamId(id))? else {
            return Ok(());
        };
        if max > s.send.max_data {
            s.send.max_data = max;
            self.touched(id);
            self.queue.enqueue(id);
        }
        Ok(())
    }

    /// Applies MAX_DATA.
    pub fn on_max_data(&mut self, max: u64) {
        if self.flow.on_max_data(max) {
            self.queue.enqueue_all();
        }
    }

    /// Applies MAX_STREAMS.
    pub fn on_max_streams(&mut self, count: u64) {
        self.peer_max_streams = self.peer_max_streams.max(count);
    }

    /// Our current MAX_DATA value.
    pub fn local_max_data(&self) -> u64 {
        self.flow.local_max()
    }

    /// Our current MAX_STREAMS value.
    pub fn local_max_streams(&self) -> u64 {
        self.local_max_streams
    }

    /// Our current MAX_STREAM_DATA value for a stream.
    pub fn local_max_stream_data(&self, id: u64) -> Option<u64> {
        self.streams.get(&id).map(|s| s.recv.max_data)
    }

    /// True when stream `id`'s bytes `[offset, offset + len)` are acknowledged (or the stream
    /// is gone).
    pub fn is_acked(&self, id: u64, offset: u64, len: u64) -> bool {
        self.streams.get(&id).is_none_or(|s| s.send.reset.is_some() || s.send.is_acked(offset, len))
    }

    /// A STREAM frame we sent was acknowledged.
    pub fn on_frame_acked(&mut self, id: u64, offset: u64, len: u64, fin: bool) {
        let cap = self.send_cap;
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        s.send.on_acked(offset, len, fin);
        let writable = s.send.blocked && s.send.buffered() < cap;
        if writable {
            s.send.blocked = false;
        }
        let complete = s.send.is_complete();
        self.touched(id);
        if writable {
            self.events.push_back(StreamEvent::Writable(StreamId(id)));
        }
        if complete {
            self.events.push_back(StreamEvent::Finished(StreamId(id)));
            self.maybe_forget(id);
        }
    }

    /// The first unacknowledged part of stream `id`'s `[start, end)`; None when all of it is
    /// acknowledged or the stream is reset or gone.
    pub fn first_unacked(&self, id: u64, start: u64, end: u64) -> Option<std::ops::Range<u64>> {
        self.streams.get(&id)?.send.first_unacked(start, end)
    }

    /// A STREAM frame we sent was lost (or its path went silent).
    pub fn on_frame_lost(&mut self, id: u64, offset: u64, len: u64, fin: bool) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.send.on_lost(offset, len, fin);
            self.touched(id);
            self.queue.enqueue(id);
        }
    }

    /// Every stream's stalled head ([`super::send::SendStream::stalled_head`]), at most `max_len`
    /// bytes each. O(streams): asked a few times a second, not per packet.
    pub fn stalled_heads(&self, max_len: u64) -> smallvec::SmallVec<[(u64, std::ops::Range<u64>); 4]> {
        let (credit, cap) = (self.flow.credit(), self.send_cap);
        self.streams
            .iter()
            .filter_map(|(&id, s)| Some((id, s.send.stalled_head(credit, cap, max_len)?)))
            .collect()
    }

    /// Every stream's held head (`SendStream::held_head`), with its id.
    pub fn held_heads(
        &self,
        budget: u64,
        max_len: u64,
    ) -> smallvec::SmallVec<[(u64, std::ops::Range<u64>); 4]> {
        self.streams.iter().filter_map(|(&id, s)| Some((id, s.send.held_head(budget, max_len)?))).collect()
    }

    /// Sends stream `id`'s unacknowledged holes again, up to `max_len` bytes, although they
    /// are not known lost (a stalled head, `session::stall`), if its head is still at `head`.
    /// Returns the bytes queued.
    pub fn reinject(&mut self, id: u64, head: u64, max_len: u64) -> u64 {
        let Some(s) = self.streams.get_mut(&id) else { return 0 };
        let queued = s.send.reinject_holes(head, max_len);
        if queued > 0 {
            self.touched(id);
            self.queue.enqueue(id);
        }
        queued
    }

    /// A STREAM_OPEN we sent was lost: announce the class again with the next frame.
    pub fn on_open_lost(&mut self, id: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.announce = true;
            self.touched(id);
            self.queue.enqueue(id);
        }
    }

    /// True when a RESET_STREAM or STOP_SENDING waits to be sent. O(1) (the sender asks
    /// before every packet).
    pub fn has_pending_resets_or_stops(&self) -> bool {
        self.owed.any()
    }

    /// Streams with RESET_STREAM to send: (id, code, final size), in id order.
    pub fn pending_resets(&self) -> Vec<(u64, u64, u64)> {
        if !self.owed.any() {
            return Vec::new();
        }
        self.owed
            .resets()
            .filter_map(|id| self.streams.get(&id).map(|s| (id, s)))
            .filter_map(|(id, s)| Some((id, s.send.reset?, s.send.final_size())))
            .collect()
    }

    /// Marks RESET_STREAM as sent (`true`), lost (`false` re-arms it) or acknowledged.
    pub fn on_reset_sent(&mut self, id: u64, state: FrameFate) {
        if let Some(s) = self.streams.get_mut(&id) {
            match state {
                FrameFate::Sent => s.send.reset_pending = false,
                FrameFate::Lost => s.send.reset_pending = s.send.reset.is_some() && !s.send.reset_acked,
                FrameFate::Acked => s.send.reset_acked = true,
            }
            self.touched(id);
        }
        if state == FrameFate::Acked {
            self.maybe_forget(id);
        }
    }

    /// Streams with STOP_SENDING to send: (id, code), in id order.
    pub fn pending_stops(&self) -> Vec<(u64, u64)> {
        if !self.owed.any() {
            return Vec::new();
        }
        self.owed
            .stops()
            .filter_map(|id| self.streams.get(&id).map(|s| (id, s)))
            .filter_map(|(id, s)| Some((id, s.recv.stopped?)))
            .collect()
    }

    /// Marks STOP_SENDING as sent, lost or acknowledged.
    pub fn on_stop_sent(&mut self, id: u64, state: FrameFate) {
        if let Some(s) = self.streams.get_mut(&id) {
            match state {
                FrameFate::Sent => s.recv.stop_pending = false,
                FrameFate::Lost => s.recv.stop_pending = true,
                FrameFate::Acked => {}
            }
            self.touched(id);
        }
        if state == FrameFate::Acked {
            self.maybe_forget(id);
        }
    }
}
