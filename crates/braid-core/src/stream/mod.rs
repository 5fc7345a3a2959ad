//! Reliable, ordered, flow-controlled byte streams, multiplexed over all paths of a session.
//!
//! Streams are bidirectional. Ids are QUIC-style (`id`). A stream opens implicitly with its
//! first frame; STREAM_OPEN tells the peer its traffic class. Flow control has two levels (per
//! stream in `send`/`recv`, per session in `flow`), credits are granted as the application
//! reads. `Streams` owns the streams and the parts that span them: the send queue with its
//! backlog counters (`queue`), session flow control (`flow`) and the control frames owed
//! (`control`). The application's calls are here, the peer's frames and the fate of ours in
//! `frames`, what the sender takes in `sending`.

mod control;
mod events;
mod flow;
mod frames;
mod id;
mod queue;
pub mod recv;
pub mod send;
mod sending;
#[cfg(test)]
mod tests;

pub use control::StreamControl;
pub use events::{StreamError, StreamEvent, StreamViolation};
pub use frames::FrameFate;
pub use id::StreamId;

use crate::side::Side;
use bytes::Bytes;
use control::OwedResets;
use flow::SessionFlow;
use queue::{SendQueue, SendState};
use recv::RecvStream;
use send::SendStream;
use std::collections::{BTreeMap, VecDeque};

/// Limits of the stream layer.
#[derive(Debug, Clone)]
pub struct StreamLimits {
    /// Per-stream receive window.
    pub stream_window: u64,
    /// Session-wide receive window.
    pub session_window: u64,
    /// Per-stream send buffer.
    pub send_buffer: u64,
    /// Streams the peer may have open at once.
    pub max_streams: u64,
}

/// One stream.
#[derive(Debug)]
struct Stream {
    class: u8,
    send: SendStream,
    recv: RecvStream,
    /// STREAM_OPEN still to be sent (ours) .
    announce: bool,
    /// The application was told it is readable and has not drained it yet.
    readable_signalled: bool,
}

impl Stream {
    /// What the send queue keeps of this stream.
    fn send_state(&self) -> SendState {
        let (gap, new) = self.send.unsent_parts();
        SendState {
            class: self.class,
            announce: self.announce,
            without_credit: self.send.has_sendable(0),
            with_credit: self.send.has_sendable(1),
            retransmit: self.send.has_retransmit(),
            gap,
            new,
        }
    }
}

/// All streams of a session.
#[derive(Debug)]
pub struct Streams {
    side: Side,
    limits: StreamLimits,
    streams: BTreeMap<u64, Stream>,
    next_local_index: u64,
    /// Streams we may open (the peer's MAX_STREAMS).
    peer_max_streams: u64,
    /// Streams the peer may open (our MAX_STREAMS).
    local_max_streams: u64,
    /// Peer streams opened so far (highest index + 1).
    peer_opened: u64,
    /// Peer streams fully closed (each frees one MAX_STREAMS credit).
    peer_closed: u64,
    flow: SessionFlow,
    queue: SendQueue,
    owed: OwedResets,
    events: VecDeque<StreamEvent>,
    /// Frames owed.
    pub control: StreamControl,
    /// The largest reorder-buffer occupancy seen on any stream, in packets.
    pub reorder_max: usize,
    /// Reorder-buffer occupancy across streams, kept as frames arrive.
    reorder_total: usize,
    /// Stream bytes sent again after a loss or a path blackout.
    pub retransmitted_bytes: u64,
    /// What each stream's send buffer holds at most now: `limits.send_buffer`, or less while
    /// the paths carry less (see [`Streams::size_send_buffer`]).
    send_cap: u64,
}

/// The least a stream's send buffer is sized to, whatever the paths carry: enough that the
/// application's writes keep ahead of the paths between two sizings (100 ms).
pub const MIN_SEND_BUFFER: u64 = 1 << 20;

impl Streams {
    /// The stream layer of one side, with our limits; the peer is assumed to use the same
    /// initial limits (both ends run braid with compatible defaults, announced values follow).
    pub fn new(side: Side, limits: StreamLimits) -> Self {
        Streams {
            side,
            streams: BTreeMap::new(),
            next_local_index: 0,
            peer_max_streams: limits.max_streams,
            local_max_streams: limits.max_streams,
            peer_opened: 0,
            peer_closed: 0,
            flow: SessionFlow::new(limits.stream_window, limits.session_window),
            queue: SendQueue::default(),
            owed: OwedResets::default(),
            events: VecDeque::new(),
            control: StreamControl::default(),
            reorder_max: 0,
            reorder_total: 0,
            retransmitted_bytes: 0,
            send_cap: limits.send_buffer,
            limits,
        }
    }

    /// Adds a stream of class `class` (`announce`: ours, STREAM_OPEN owed).
    fn add_stream(&mut self, id: u64, class: u8, announce: bool) {
        let mut recv = RecvStream::new(self.limits.stream_window);
        recv.set_window(self.flow.windows().0);
        let s = Stream {
            class,
            send: SendStream::new(self.limits.stream_window),
            recv,
            announce,
            readable_signalled: false,
        };
        self.queue.insert(id, s.send_state());
        self.streams.insert(id, s);
    }

    /// Stream `id` changed: the send queue, its counters and the owed resets follow. Every
    /// change of a stream's send half, announcement or class is followed by this.
    fn touched(&mut self, id: u64) {
        if let Some(s) = self.streams.get(&id) {
            self.queue.update(id, s.send_state());
            self.owed.sync(id, s.send.reset_pending, s.recv.stop_pending);
        }
    }

    /// Opens a stream of traffic class `class`.
    pub fn open(&mut self, class: u8) -> Result<StreamId, StreamError> {
        if self.next_local_index >= self.peer_max_streams {
            return Err(StreamError::Limit);
        }
        let id = StreamId::new(self.side, self.next_local_index);
        self.next_local_index += 1;
        self.add_stream(id.0, class, true);
        self.queue.enqueue(id.0);
        Ok(id)
    }

    /// Next stream event for the application.
    pub fn poll_event(&mut self) -> Option<StreamEvent> {
        self.events.pop_front()
    }

    /// Number of open streams.
    pub fn count(&self) -> usize {
        self.streams.len()
    }

    /// The traffic class of a stream.
    pub fn class(&self, id: StreamId) -> Option<u8> {
        self.streams.get(&id.0).map(|s| s.class)
    }

    /// Sizes every stream's send buffer to what the paths carry, as Linux sizes a TCP socket's
    /// (twice the congestion window): `want` bytes (the session passes four times the sum of
    /// its paths' congestion windows), at least [`MIN_SEND_BUFFER`] and at most the configured
    /// `send_buffer`. Bytes buffered beyond what the paths can carry in a few round trips
    /// only add latency for the application and memory at the sender (8 MB per stream by
    /// default, ~10 MB per busy session). A stream blocked on the old size that now has room
    /// is told it is writable.
    pub fn size_send_buffer(&mut self, want: u64) {
        let cap = want.max(MIN_SEND_BUFFER).min(self.limits.send_buffer);
        let grew = cap > self.send_cap;
        self.send_cap = cap;
        if grew {
            for (id, s) in &mut self.streams {
                if s.send.blocked && s.send.buffered() < cap {
                    s.send.blocked = false;
                    self.events.push_back(StreamEvent::Writable(StreamId(*id)));
                }
            }
        }
    }

    /// What each stream's send buffer holds at most now.
    pub fn send_cap(&self) -> u64 {
        self.send_cap
    }

    /// Writes as much of `data` as the send buffer takes; `Blocked` when it takes nothing.
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        let cap = self.send_cap;
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        if let Some(code) = s.send.stopped {
            return Err(StreamError::Stopped(code));
        }
        if s.send.fin || s.send.reset.is_some() {
            return Err(StreamError::Closed);
        }
        let room = cap.saturating_sub(s.send.buffered()) as usize;
        let n = room.min(data.len());
        if n == 0 {
            s.send.blocked = true;
            return Err(StreamError::Blocked);
        }
        s.send.write(send::to_bytes(&data[..n]));
        self.touched(id.0);
        self.queue.enqueue(id.0);
        Ok(n)
    }

    /// Writes a `Bytes` without copying, if the buffer has room for all of it.
    pub fn write_bytes(&mut self, id: StreamId, data: Bytes) -> Result<(), StreamError> {
        let cap = self.send_cap;
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        if let Some(code) = s.send.stopped {
            return Err(StreamError::Stopped(code));
        }
        if s.send.fin || s.send.reset.is_some() {
            return Err(StreamError::Closed);
        }
        if s.send.buffered() + data.len() as u64 > cap && s.send.buffered() > 0 {
            s.send.blocked = true;
            return Err(StreamError::Blocked);
        }
        s.send.write(data);
        self.touched(id.0);
        self.queue.enqueue(id.0);
        Ok(())
    }

    /// Room in a stream's send buffer.
    pub fn write_room(&self, id: StreamId) -> Result<u64, StreamError> {
        let s = self.streams.get(&id.0).ok_or(StreamError::Unknown)?;
        Ok(self.send_cap.saturating_sub(s.send.buffered()))
    }

    /// Marks the end of what we send on a stream.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        if s.send.reset.is_some() {
            return Err(StreamError::Closed);
        }
        s.send.finish();
        self.touched(id.0);
        self.queue.enqueue(id.0);
        Ok(())
    }

    /// Abandons our send half.
    pub fn reset(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        s.send.reset(code);
        self.touched(id.0);
        Ok(())
    }

    /// Stops reading and asks the peer to stop sending.
    pub fn stop(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        self.reorder_total -= s.recv.out_of_order_chunks();
        s.recv.stop(code);
        self.reorder_total += s.recv.out_of_order_chunks();
        self.touched(id.0);
        self.maybe_forget(id.0);
        Ok(())
    }

    /// Reads up to `max` bytes in order without copying. `Ok(None)` at the end of the stream.
    pub fn read_chunk(&mut self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        if let Some(code) = s.recv.reset {
            s.recv.done = true;
            self.maybe_forget(id.0);
            return Err(StreamError::Reset(code));
        }
        match s.recv.read_chunk(max) {
            Some(chunk) => {
                if let Some(_credit) = s.recv.credit_update() {
                    self.control.max_stream_data.push(id.0);
                }
                if !s.recv.is_readable() {
                    s.readable_signalled = false;
                }
                self.control.max_data |= self.flow.on_read(chunk.len() as u64);
                // The stream is forgotten only once the application has seen its end (the
                // next read answers `Ok(None)`), not with its last bytes.
                Ok(Some(chunk))
            }
            None if s.recv.is_finished() => {
                s.recv.done = true;
                self.maybe_forget(id.0);
                Ok(None)
            }
            None => {
                s.readable_signalled = false;
                Err(StreamError::Blocked)
            }
        }
    }

    /// Sets the receive windows granted from now on, per stream and for the session
    /// (`session::window_sizing`, seed 004 §V), and grants at once what a larger window allows.
    pub fn set_receive_windows(&mut self, stream: u64, session: u64) {
        let Some(owed) = self.flow.set_windows(stream, session) else { return };
        for (id, s) in &mut self.streams {
            s.recv.set_window(stream);
            if s.recv.credit_update().is_some() && !self.control.max_stream_data.contains(id) {
                self.control.max_stream_data.push(*id);
            }
        }
        self.control.max_data |= owed;
    }

    /// The receive windows granted now (per stream, session).
    pub fn receive_windows(&self) -> (u64, u64) {
        self.flow.windows()
    }

    /// Reads into `buf`. `Ok(None)` at the end of the stream.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<Option<usize>, StreamError> {
        let mut n = 0;
        while n < buf.len() {
            // After some bytes, stop where the data stops: the end (or a reset) is reported
            // by the next read, not swallowed by this one.
            if n > 0 && !self.streams.get(&id.0).is_some_and(|s| s.recv.has_data()) {
                break;
            }
            match self.read_chunk(id, buf.len() - n) {
                Ok(Some(c)) => {
                    buf[n..n + c.len()].copy_from_slice(&c);
                    n += c.len();
                }
                Ok(None) if n == 0 => return Ok(None),
                Err(e) if n == 0 => return Err(e),
                _ => break,
            }
        }
        Ok(Some(n))
    }

    /// Forgets a stream once both halves are done; a closed peer stream frees a credit.
    fn maybe_forget(&mut self, id: u64) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let send_done = s.send.is_complete() || (s.send.reset.is_some() && s.send.reset_acked);
        let recv_done = s.recv.done && !s.recv.stop_pending;
        if send_done && recv_done {
            self.reorder_total -= s.recv.out_of_order_chunks();
            self.streams.remove(&id);
            self.queue.remove(id);
            self.owed.sync(id, false, false);
            self.events.push_back(StreamEvent::Closed(StreamId(id)));
            if StreamId(id).initiator() != self.side {
                self.peer_closed += 1;
                self.local_max_streams = self.peer_closed + self.limits.max_streams;
                self.control.max_streams = true;
            }
        }
    }
}
