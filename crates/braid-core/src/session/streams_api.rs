//! The application's side of streams and datagrams: the session checks that it is
//! established and passes the call on to its [`Streams`](crate::stream::Streams) and
//! [`Datagrams`](crate::datagram::Datagrams).

use super::Session;
use crate::datagram::{Datagram, DatagramError, DatagramStats};
use crate::stream::{StreamError, StreamId};
use crate::time::Timestamp;
use bytes::Bytes;
use std::collections::BTreeMap;

impl Session {
    // ---- streams -------------------------------------------------------------------------

    /// Opens a stream of traffic class `class`.
    pub fn open_stream(&mut self, class: u8) -> Result<StreamId, StreamError> {
        if !self.is_established() {
            return Err(StreamError::Blocked);
        }
        self.streams.open(class)
    }

    /// Writes to a stream; returns how much was taken (`Blocked` when nothing).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        self.streams.write(id, data)
    }

    /// Writes a `Bytes` whole without copying, or `Blocked`.
    pub fn write_bytes(&mut self, id: StreamId, data: Bytes) -> Result<(), StreamError> {
        self.streams.write_bytes(id, data)
    }

    /// Room in a stream's send buffer.
    pub fn write_room(&self, id: StreamId) -> Result<u64, StreamError> {
        self.streams.write_room(id)
    }

    /// Ends what we send on a stream.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)
    }

    /// Abandons what we send on a stream.
    pub fn reset_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, code)
    }

    /// Stops reading a stream and asks the peer to stop sending.
    pub fn stop_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.stop(id, code)
    }

    /// Reads into `buf`; `Ok(None)` at the end of the stream, `Blocked` when nothing is there.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<Option<usize>, StreamError> {
        self.streams.read(id, buf)
    }

    /// Reads up to `max` bytes without copying; `Ok(None)` at the end of the stream.
    pub fn read_chunk(&mut self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        self.streams.read_chunk(id, max)
    }

    /// The traffic class of a stream.
    pub fn stream_class(&self, id: StreamId) -> Option<u8> {
        self.streams.class(id)
    }

    /// Open streams.
    pub fn stream_count(&self) -> usize {
        self.streams.count()
    }

    /// Largest reorder-buffer occupancy seen, in packets held behind a gap.
    pub fn reorder_max(&self) -> usize {
        self.streams.reorder_max
    }

    /// Starts the reorder-buffer maximum afresh from the current occupancy (to measure a
    /// steady state after a warm-up).
    pub fn reset_reorder_max(&mut self) {
        self.streams.reorder_max = self.streams.reorder_now();
    }

    /// Current reorder-buffer occupancy, in packets.
    pub fn reorder_now(&self) -> usize {
        self.streams.reorder_now()
    }

    /// The armed timers, for diagnostics: (name, deadline).
    pub fn timers(&self) -> Vec<(String, Timestamp)> {
        self.timer_table()
    }

    /// Session-level flow control: (new bytes sent, peer's limit, bytes received, our limit).
    pub fn flow_control(&self) -> (u64, u64, u64, u64) {
        self.streams.flow()
    }

    /// The receive windows granted now, bytes (per stream, session): the configured ones, or
    /// larger when sized from the paths' delay skew (`window_sizing`).
    pub fn receive_windows(&self) -> (u64, u64) {
        self.streams.receive_windows()
    }

    /// Stream bytes sent more than once.
    pub fn retransmitted_bytes(&self) -> u64 {
        self.streams.retransmitted_bytes
    }

    // ---- datagrams -----------------------------------------------------------------------

    /// Largest datagram payload that fits a packet.
    pub fn max_datagram_payload(&self) -> usize {
        // DATA overhead, DATAGRAM frame header with a 2-byte length and an 8-byte deadline.
        self.mtu() - crate::wire::DATA_OVERHEAD - 2 - 8 - 8 - 2
    }

    /// Queues a datagram of class `class`. Its class deadline (if any) starts now.
    pub fn send_datagram(&mut self, now: Timestamp, class: u8, data: Bytes) -> Result<(), DatagramError> {
        if !self.is_established() {
            return Err(DatagramError::NotConnected);
        }
        let max = self.max_datagram_payload();
        if data.len() > max {
            return Err(DatagramError::TooLarge(data.len(), max));
        }
        let deadline = self.config.class(class).deadline.map(|d| now + d);
        let cfg = self.config.clone();
        self.datagrams.push(now, class, data, deadline, |c| cfg.priority(c));
        Ok(())
    }

    /// The next received datagram.
    pub fn recv_datagram(&mut self) -> Option<Datagram> {
        self.datagrams.recv()
    }

    /// Datagram counters by class.
    pub fn datagram_stats(&self) -> &BTreeMap<u8, DatagramStats> {
        &self.datagrams.stats
    }
}
