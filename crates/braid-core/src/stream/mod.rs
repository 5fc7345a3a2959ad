//! Reliable, ordered, flow-controlled byte streams, multiplexed over all paths of a session.
//!
//! Streams are bidirectional. Ids are QUIC-style: the low bit says who opened the stream
//! (0 the client, 1 the server), the rest is a per-side index. A stream opens implicitly with
//! its first frame; STREAM_OPEN tells the peer its traffic class. Flow control has two levels
//! (per stream and per session), credits are granted as the application reads.

pub mod recv;
pub mod send;
#[cfg(test)]
mod tests;

use crate::side::Side;
use crate::wire::frame::encode;
use crate::wire::varint;
use bytes::Bytes;
use recv::{RecvError, RecvStream};
use send::{Chunk, SendStream};
use std::collections::{BTreeMap, VecDeque};
use std::fmt;

/// A stream id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The side that opened the stream.
    pub fn initiator(self) -> Side {
        if self.0 & 1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// The per-side index.
    pub fn index(self) -> u64 {
        self.0 >> 1
    }

    fn new(side: Side, index: u64) -> Self {
        StreamId(index << 1 | u64::from(side == Side::Server))
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Errors of stream operations called by the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// No such stream (never opened, or closed and forgotten).
    #[error("unknown stream")]
    Unknown,
    /// Nothing can be done right now; an event will say when.
    #[error("blocked")]
    Blocked,
    /// The stream was finished or reset by us.
    #[error("stream closed for sending")]
    Closed,
    /// The peer asked us to stop sending, with this code.
    #[error("peer stopped the stream (code {0})")]
    Stopped(u64),
    /// The peer reset the stream, with this code.
    #[error("peer reset the stream (code {0})")]
    Reset(u64),
    /// The peer does not allow more streams yet.
    #[error("stream limit reached")]
    Limit,
}

/// A violation of the stream rules by the peer: the session must close.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StreamViolation {
    /// Data beyond the credit we gave.
    #[error("flow control violated")]
    FlowControl,
    /// Final size contradicted.
    #[error("final size violated")]
    FinalSize,
    /// A stream beyond the limit we announced, or one the peer cannot open.
    #[error("stream limit or direction violated")]
    StreamState,
}

impl From<RecvError> for StreamViolation {
    fn from(e: RecvError) -> Self {
        match e {
            RecvError::FlowControl => StreamViolation::FlowControl,
            RecvError::FinalSize => StreamViolation::FinalSize,
        }
    }
}

/// Something the application should know about a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEvent {
    /// The peer opened a stream.
    Opened(StreamId),
    /// Data (or the end) can be read.
    Readable(StreamId),
    /// Writing can resume.
    Writable(StreamId),
    /// Everything we sent, FIN included, was acknowledged.
    Finished(StreamId),
    /// The peer reset its send half.
    Reset(StreamId, u64),
    /// The peer asked us to stop sending.
    Stopped(StreamId, u64),
    /// Both halves are done (or reset) and the stream is forgotten: its id is unknown from
    /// now on, and whoever bridges it may let go.
    Closed(StreamId),
}

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
    /// In the send queue.
    queued: bool,
    /// The application was told it is readable and has not drained it yet.
    readable_signalled: bool,
}

/// Session-level control frames the stream layer owes the peer.
#[derive(Debug, Default)]
pub struct StreamControl {
    /// MAX_DATA must be sent.
    pub max_data: bool,
    /// MAX_STREAMS must be sent.
    pub max_streams: bool,
    /// MAX_STREAM_DATA for these streams.
    pub max_stream_data: Vec<u64>,
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
    /// New bytes sent across all streams, and the peer's limit on it.
    sent_data: u64,
    peer_max_data: u64,
    /// Highest offsets received across streams, bytes read, and our limit.
    received_data: u64,
    read_data: u64,
    local_max_data: u64,
    /// The receive windows granted from now on (per stream, session): the configured ones
    /// until [`Streams::set_receive_windows`] sizes them from the paths' skew. The initial
    /// credit of a new stream stays the configured one, which the peer assumes.
    recv_windows: (u64, u64),
    send_queue: VecDeque<u64>,
    events: VecDeque<StreamEvent>,
    /// Frames owed.
    pub control: StreamControl,
    /// The largest reorder-buffer occupancy seen on any stream, in packets.
    pub reorder_max: usize,
    /// Stream bytes sent again after a loss or a path blackout.
    pub retransmitted_bytes: u64,
    /// Some stream may owe RESET_STREAM or STOP_SENDING: set wherever one becomes owed,
    /// cleared by `settle_resets_and_stops` once none is. The sender asks before every packet,
    /// and scanning every stream each time was O(streams) per packet.
    resets_or_stops_owed: bool,
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
            sent_data: 0,
            peer_max_data: limits.session_window,
            received_data: 0,
            read_data: 0,
            local_max_data: limits.session_window,
            recv_windows: (limits.stream_window, limits.session_window),
            send_queue: VecDeque::new(),
            events: VecDeque::new(),
            control: StreamControl::default(),
            reorder_max: 0,
            retransmitted_bytes: 0,
            resets_or_stops_owed: false,
            send_cap: limits.send_buffer,
            limits,
        }
    }

    fn new_stream(&self, class: u8, announce: bool) -> Stream {
        let mut recv = RecvStream::new(self.limits.stream_window);
        recv.set_window(self.recv_windows.0);
        Stream {
            class,
            send: SendStream::new(self.limits.stream_window),
            recv,
            announce,
            queued: false,
            readable_signalled: false,
        }
    }

    /// Opens a stream of traffic class `class`.
    pub fn open(&mut self, class: u8) -> Result<StreamId, StreamError> {
        if self.next_local_index >= self.peer_max_streams {
            return Err(StreamError::Limit);
        }
        let id = StreamId::new(self.side, self.next_local_index);
        self.next_local_index += 1;
        let s = self.new_stream(class, true);
        self.streams.insert(id.0, s);
        self.enqueue(id.0);
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

    fn enqueue(&mut self, id: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            if !s.queued {
                s.queued = true;
                self.send_queue.push_back(id);
            }
        }
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
        self.enqueue(id.0);
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
        self.enqueue(id.0);
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
        self.enqueue(id.0);
        Ok(())
    }

    /// Abandons our send half.
    pub fn reset(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        s.send.reset(code);
        self.resets_or_stops_owed = true;
        Ok(())
    }

    /// Stops reading and asks the peer to stop sending.
    pub fn stop(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        let s = self.streams.get_mut(&id.0).ok_or(StreamError::Unknown)?;
        s.recv.stop(code);
        self.resets_or_stops_owed = true;
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
                self.read_data += chunk.len() as u64;
                if let Some(_credit) = s.recv.credit_update() {
                    self.control.max_stream_data.push(id.0);
                }
                if !s.recv.is_readable() {
                    s.readable_signalled = false;
                }
                self.grant_session_credit();
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

    /// MAX_DATA is owed once the application has consumed half the session window.
    fn grant_session_credit(&mut self) {
        let window = self.recv_windows.1;
        if self.local_max_data - self.read_data < window / 2 {
            self.local_max_data = self.read_data + window;
            self.control.max_data = true;
        }
    }

    /// Sets the receive windows granted from now on, per stream and for the session
    /// (`session::window_sizing`, seed 004 §V), and grants at once what a larger window allows.
    pub fn set_receive_windows(&mut self, stream: u64, session: u64) {
        if self.recv_windows == (stream, session) {
            return;
        }
        self.recv_windows = (stream, session);
        for (id, s) in &mut self.streams {
            s.recv.set_window(stream);
            if s.recv.credit_update().is_some() && !self.control.max_stream_data.contains(id) {
                self.control.max_stream_data.push(*id);
            }
        }
        self.grant_session_credit();
    }

    /// The receive windows granted now (per stream, session).
    pub fn receive_windows(&self) -> (u64, u64) {
        self.recv_windows
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
            self.streams.remove(&id);
            self.events.push_back(StreamEvent::Closed(StreamId(id)));
            if StreamId(id).initiator() != self.side {
                self.peer_closed += 1;
                self.local_max_streams = self.peer_closed + self.limits.max_streams;
                self.control.max_streams = true;
            }
        }
    }

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
            let s = self.new_stream(0, false);
            self.streams.insert(new.0, s);
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
        let window = self.local_max_data;
        let Some(s) = self.get_or_open_peer(StreamId(id))? else {
            return Ok(0);
        };
        let (grew, fresh) = s.recv.on_frame(offset, data, fin)?;
        let readable = s.recv.is_readable() && !s.readable_signalled;
        if readable {
            s.readable_signalled = true;
        }
        let ooo = s.recv.out_of_order_chunks();
        self.reorder_max = self.reorder_max.max(ooo);
        self.received_data += grew;
        if self.received_data > window {
            return Err(StreamViolation::FlowControl);
        }
        if readable {
            self.events.push_back(StreamEvent::Readable(StreamId(id)));
        }
        Ok(fresh)
    }

    /// Applies STREAM_OPEN.
    pub fn on_stream_open(&mut self, id: u64, class: u8) -> Result<(), StreamViolation> {
        if let Some(s) = self.get_or_open_peer(StreamId(id))? {
            s.class = class;
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
        let grew = s.recv.on_reset(code, final_size)?;
        self.received_data += grew;
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
            self.resets_or_stops_owed = true;
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
            self.enqueue(id);
        }
        Ok(())
    }

    /// Applies MAX_DATA.
    pub fn on_max_data(&mut self, max: u64) {
        if max > self.peer_max_data {
            self.peer_max_data = max;
            let ids: Vec<u64> = self.streams.keys().copied().collect();
            for id in ids {
                self.enqueue(id);
            }
        }
    }

    /// Applies MAX_STREAMS.
    pub fn on_max_streams(&mut self, count: u64) {
        self.peer_max_streams = self.peer_max_streams.max(count);
    }

    /// Our current MAX_DATA value.
    pub fn local_max_data(&self) -> u64 {
        self.local_max_data
    }

    /// Our current MAX_STREAMS value.
    pub fn local_max_streams(&self) -> u64 {
        self.local_max_streams
    }

    /// Our current MAX_STREAM_DATA value for a stream.
    pub fn local_max_stream_data(&self, id: u64) -> Option<u64> {
        self.streams.get(&id).map(|s| s.recv.max_data)
    }

    /// True when some stream has data (or a FIN) to send.
    pub fn has_sendable(&self) -> bool {
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
        self.send_queue
            .iter()
            .filter_map(|id| self.streams.get(id))
            .any(|s| s.send.has_sendable(credit) || s.announce)
    }

    /// Bytes stream `id` has queued for retransmission.
    pub fn retransmit_bytes_of(&self, id: u64) -> u64 {
        self.streams.get(&id).map_or(0, |s| s.send.retransmit_bytes())
    }

    /// True when some stream has retransmissions queued.
    pub fn has_retransmit(&self) -> bool {
        self.send_queue.iter().filter_map(|id| self.streams.get(id)).any(|s| s.send.has_retransmit())
    }

    /// The stream that would send next and its class (`rank`: see `next_chunk`): one scan of
    /// the send queue answers both this and, with `unsent_packets_of`, what EDPF may skip.
    pub fn next_sender(&self, rank: impl Fn(u8) -> Option<u8>) -> Option<(u64, u8)> {
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
        let id = self.next_stream(credit, &rank)?;
        self.streams.get(&id).map(|s| (id, s.class))
    }

    /// New bytes stream `id` could send, in packets of `room` bytes (what EDPF may skip).
    pub fn unsent_packets_of(&self, id: u64, room: usize) -> u32 {
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
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
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
        let mut best: Option<(usize, u8)> = None;
        let mut i = 0;
        while i < self.send_queue.len() {
            let id = self.send_queue[i];
            match self.streams.get_mut(&id) {
                Some(s) if s.send.has_sendable(credit) || s.announce => {
                    if let Some(p) = rank(s.class) {
                        if best.is_none_or(|(_, bp)| p < bp) {
                            best = Some((i, p));
                        }
                    }
                    i += 1;
                }
                Some(s) => {
                    // Nothing to send: leave the queue until something is written or lost.
                    s.queued = false;
                    self.send_queue.remove(i);
                }
                None => {
                    self.send_queue.remove(i);
                }
            }
        }
        let (idx, _) = best?;
        let id = self.send_queue.remove(idx)?;
        let s = self.streams.get_mut(&id)?;
        s.queued = false;
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
            self.sent_data += c.grew;
        }
        // Round-robin: to the back of the queue if more remains.
        if s.send.has_sendable(self.peer_max_data.saturating_sub(self.sent_data)) || s.announce {
            s.queued = true;
            self.send_queue.push_back(id);
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
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
        let id = self.next_stream(credit, &rank)?;
        let s = self.streams.get_mut(&id)?;
        // Queued retransmissions do not stop it: EDPF sends new data ahead past them when the
        // earliest path delivers them all first.
        if s.announce || s.send.has_retransmit() {
            return None;
        }
        let max_len = room.saturating_sub(encode::stream_header_len(id, u64::MAX >> 2, None));
        // Streams of the same priority take turns: the skip is shared among them.
        let peers = self.streams_at_priority(credit, &rank).max(1) as u64;
        let skip = u64::from(skip_packets) * max_len as u64 / peers;
        let s = self.streams.get_mut(&id)?;
        let chunk = s.send.next_chunk_ahead(skip.max(1), max_len, credit)?;
        self.sent_data += chunk.grew;
        Some((id, chunk))
    }

    /// The stream `next_chunk` would serve (highest priority, first in turn).
    fn next_stream(&self, credit: u64, rank: &impl Fn(u8) -> Option<u8>) -> Option<u64> {
        let mut best: Option<(u64, u8)> = None;
        for id in &self.send_queue {
            if let Some(s) = self.streams.get(id).filter(|s| s.send.has_sendable(credit) || s.announce) {
                let Some(p) = rank(s.class) else { continue };
                if best.is_none_or(|(_, bp)| p < bp) {
                    best = Some((*id, p));
                }
            }
        }
        best.map(|(id, _)| id)
    }

    fn streams_at_priority(&self, credit: u64, rank: &impl Fn(u8) -> Option<u8>) -> usize {
        let Some(top) = self.next_stream(credit, rank).and_then(|id| self.streams.get(&id)) else {
            return 0;
        };
        let p = rank(top.class);
        self.send_queue
            .iter()
            .filter_map(|id| self.streams.get(id))
            .filter(|s| s.send.has_sendable(credit) && rank(s.class) == p)
            .count()
    }

    /// Classes of the streams waiting to send.
    pub fn sending_classes(&self) -> Vec<u8> {
        let mut v: Vec<u8> =
            self.send_queue.iter().filter_map(|id| self.streams.get(id)).map(|s| s.class).collect();
        v.sort_unstable();
        v.dedup();
        v
    }

    /// Bytes written by the application and not yet sent, across streams.
    pub fn unsent_total(&self) -> u64 {
        let credit = self.peer_max_data.saturating_sub(self.sent_data);
        self.streams.values().map(|s| s.send.unsent_bytes(credit)).sum()
    }

    /// Copies stream bytes into a packet.
    pub fn copy_range(&self, id: u64, offset: u64, len: usize, out: &mut Vec<u8>) {
        if let Some(s) = self.streams.get(&id) {
            s.send.copy_range(offset, len, out);
        }
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
        if s.send.blocked && s.send.buffered() < cap {
            s.send.blocked = false;
            self.events.push_back(StreamEvent::Writable(StreamId(id)));
        }
        if s.send.is_complete() {
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
            self.enqueue(id);
        }
    }

    /// A STREAM_OPEN we sent was lost: announce the class again with the next frame.
    pub fn on_open_lost(&mut self, id: u64) {
        if let Some(s) = self.streams.get_mut(&id) {
            s.announce = true;
            self.enqueue(id);
        }
    }

    /// True when a RESET_STREAM or STOP_SENDING waits to be sent. O(1) while none is owed
    /// (the sender asks before every packet).
    pub fn has_pending_resets_or_stops(&self) -> bool {
        self.resets_or_stops_owed
            && self.streams.values().any(|s| s.send.reset_pending || s.recv.stop_pending)
    }

    /// After the sender took what fitted: forgets that resets or stops are owed when none is.
    pub fn settle_resets_and_stops(&mut self) {
        if self.resets_or_stops_owed && !self.has_pending_resets_or_stops() {
            self.resets_or_stops_owed = false;
        }
    }

    /// Streams with RESET_STREAM to send: (id, code, final size).
    pub fn pending_resets(&self) -> Vec<(u64, u64, u64)> {
        self.streams
            .iter()
            .filter(|(_, s)| s.send.reset_pending)
            .filter_map(|(id, s)| Some((*id, s.send.reset?, s.send.final_size())))
            .collect()
    }

    /// Marks RESET_STREAM as sent (`true`), lost (`false` re-arms it) or acknowledged.
    pub fn on_reset_sent(&mut self, id: u64, state: FrameFate) {
        if let Some(s) = self.streams.get_mut(&id) {
            match state {
                FrameFate::Sent => s.send.reset_pending = false,
                FrameFate::Lost => {
                    s.send.reset_pending = s.send.reset.is_some() && !s.send.reset_acked;
                    self.resets_or_stops_owed |= s.send.reset_pending;
                }
                FrameFate::Acked => s.send.reset_acked = true,
            }
        }
        if state == FrameFate::Acked {
            self.maybe_forget(id);
        }
    }

    /// Streams with STOP_SENDING to send: (id, code).
    pub fn pending_stops(&self) -> Vec<(u64, u64)> {
        self.streams
            .iter()
            .filter(|(_, s)| s.recv.stop_pending)
            .filter_map(|(id, s)| Some((*id, s.recv.stopped?)))
            .collect()
    }

    /// Marks STOP_SENDING as sent, lost or acknowledged.
    pub fn on_stop_sent(&mut self, id: u64, state: FrameFate) {
        if let Some(s) = self.streams.get_mut(&id) {
            match state {
                FrameFate::Sent => s.recv.stop_pending = false,
                FrameFate::Lost => {
                    s.recv.stop_pending = true;
                    self.resets_or_stops_owed = true;
                }
                FrameFate::Acked => {}
            }
        }
        if state == FrameFate::Acked {
            self.maybe_forget(id);
        }
    }

    /// Session-level flow control: (new bytes sent, peer's limit, bytes received, our limit).
    pub fn flow(&self) -> (u64, u64, u64, u64) {
        (self.sent_data, self.peer_max_data, self.received_data, self.local_max_data)
    }

    /// Bytes in send buffers across streams.
    pub fn buffered_send_bytes(&self) -> u64 {
        self.streams.values().map(|s| s.send.buffered()).sum()
    }

    /// Current reorder-buffer occupancy (packets held behind gaps) across streams.
    pub fn reorder_now(&self) -> usize {
        self.streams.values().map(|s| s.recv.out_of_order_chunks()).sum()
    }
}

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
