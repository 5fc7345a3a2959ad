//! What goes into a data packet: control frames, then the datagrams and stream bytes of the
//! one traffic class whose scheduler chose the path; redundant copies of it are queued on
//! other paths (the `redundant` scheduler's, or selective redundancy's, see `critical`).

use super::builder::{Builder, Transmit};
use super::Session;
use crate::datagram::OutgoingDatagram;
use crate::path::sent::SentFrame;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use crate::wire::{DATA_HEADER_LEN, TAG_LEN};

/// Room below which a packet is considered full.
const MIN_FRAME_ROOM: usize = 24;

/// A class ranking that admits `class` alone: what fills a packet its scheduler placed. (With
/// one class admitted its priority does not matter.)
pub(super) fn only(class: u8) -> impl Fn(u8) -> Option<u8> + Copy {
    move |c| (c == class).then_some(0)
}

impl Session {
    /// Builds a data packet on `idx` with control frames, then stream data and datagrams of
    /// `class` only — the class whose scheduler chose `idx`: filling the room with another
    /// class's content would carry it where its own scheduler did not send it (past a
    /// priority scheduler's drops, or a backup path it must avoid). `copies` get the same
    /// frames (redundant scheduling).
    pub(super) fn build_data(
        &mut self,
        now: Timestamp,
        idx: usize,
        class: u8,
        buf: &mut Vec<u8>,
        copies: &[usize],
    ) -> Transmit {
        let mut earliest_deadline: Option<Timestamp> = None;
        let mut only_datagrams = true;
        let mut b = self.start(idx, buf);
        // Redundant copies carry the same bytes: the packet fits the smallest MTU among them.
        for &c in copies {
            b.limit = b.limit.min(self.paths[c].mtu - TAG_LEN);
        }
        self.write_acks(now, &mut b, buf, true);
        self.write_control(&mut b, buf);
        loop {
            let room = b.room(buf);
            if room < MIN_FRAME_ROOM {
                break;
            }
            // Within a class, datagrams go first (they are the time-critical content).
            if let Some(d) = self.datagrams.pop(class, now) {
                if !self.write_datagram(now, &mut b, buf, &d) {
                    self.datagrams.push_front(d);
                    break;
                }
                earliest_deadline = crate::time::earliest(earliest_deadline, d.deadline);
                continue;
            }
            if !self.write_stream(&mut b, class, buf) {
                break;
            }
            only_datagrams = false;
        }
        if b.frames.iter().any(|f| !matches!(f, SentFrame::Datagram { .. } | SentFrame::Ack { .. })) {
            only_datagrams = false;
        }
        if !b.ack_eliciting {
            // Only ACKs fit (nothing else was ready): still a valid packet.
            encode::ping(buf);
            b.ack_eliciting = true;
        }
        if b.frames.iter().any(|f| matches!(f, SentFrame::Stream { .. } | SentFrame::Datagram { .. })) {
            self.last_data_sent = Some(now);
        }
        // Frames and payload are copied only when a redundant copy is made: for every path in
        // `copies`, or for one when the packet is critical (`critical`).
        let critical = copies.is_empty() && self.is_critical(&b.frames);
        let copy =
            (!copies.is_empty() || critical).then(|| (buf[DATA_HEADER_LEN..].to_vec(), b.frames.clone()));
        let t = self.seal_and_record(now, b, buf, None);
        self.count_class(now, class, t.size);
        if let Some((payload, frames)) = copy {
            // Copies of datagrams are useless after their deadline; other copies are kept.
            let expires = if only_datagrams { earliest_deadline } else { None };
            if critical {
                self.copy_critical(now, idx, payload, frames, expires);
            } else {
                self.copy_to(copies, payload, frames, expires);
            }
        }
        t
    }

    /// Appends a DATAGRAM frame carrying `d`; false (nothing written) when it does not fit.
    pub(super) fn write_datagram(
        &mut self,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        d: &OutgoingDatagram,
    ) -> bool {
        let room = b.room(buf);
        let deadline_us = d.deadline.map(|t| (t - now).as_micros() as u64);
        if encode::datagram_len(d.seq, deadline_us, d.data.len()) > room {
            return false;
        }
        encode::datagram(buf, d.class, d.seq, deadline_us, &d.data);
        b.frames.push(SentFrame::Datagram { class: d.class });
        self.datagrams.stats.entry(d.class).or_default().sent += 1;
        self.paths[b.idx].stats.datagrams_sent += 1;
        b.ack_eliciting = true;
        true
    }

    /// Appends one STREAM frame (and STREAM_OPEN if due). False when nothing fitted.
    fn write_stream(&mut self, b: &mut Builder, class: u8, buf: &mut Vec<u8>) -> bool {
        let room = b.room(buf);
        let Some((id, chunk, announce)) = self.streams.next_chunk(room, only(class)) else {
            return false;
        };
        if let Some(class) = announce {
            encode::stream_open(buf, id, class);
            b.frames.push(SentFrame::StreamOpen { id });
            b.ack_eliciting = true;
        }
        let Some(chunk) = chunk else { return true };
        let room = b.room(buf);
        let with_len = encode::stream_header_len(id, chunk.offset, Some(chunk.len)) + chunk.len;
        encode::stream_header(buf, id, chunk.offset, chunk.fin, (with_len <= room).then_some(chunk.len));
        self.streams.copy_range(id, chunk.offset, chunk.len, buf);
        b.frames.push(SentFrame::Stream { id, offset: chunk.offset, len: chunk.len as u32, fin: chunk.fin });
        b.ack_eliciting = true;
        if chunk.retransmit {
            self.paths[b.idx].stats.retransmitted_bytes += chunk.len as u64;
        }
        true
    }

    /// Appends pending control frames that fit.
    fn write_control(&mut self, b: &mut Builder, buf: &mut Vec<u8>) {
        let fits = |buf: &Vec<u8>| buf.len() + 24 <= b.limit;
        if self.streams.control.max_data && fits(buf) {
            self.streams.control.max_data = false;
            encode::max_data(buf, self.streams.local_max_data());
            b.frames.push(SentFrame::MaxData);
        }
        if self.streams.control.max_streams && fits(buf) {
            self.streams.control.max_streams = false;
            encode::max_streams(buf, self.streams.local_max_streams());
            b.frames.push(SentFrame::MaxStreams);
        }
        while fits(buf) {
            let Some(id) = self.streams.control.max_stream_data.pop() else {
                break;
            };
            if let Some(max) = self.streams.local_max_stream_data(id) {
                tracing::trace!(session = %self.local_id, stream = id, max, "sending MAX_STREAM_DATA");
                encode::max_stream_data(buf, id, max);
                b.frames.push(SentFrame::MaxStreamData { id });
            }
        }
        for (id, code, final_size) in self.streams.pending_resets() {
            if !fits(buf) {
                break;
            }
            encode::reset_stream(buf, id, code, final_size);
            b.frames.push(SentFrame::ResetStream { id });
            self.streams.on_reset_sent(id, crate::stream::FrameFate::Sent);
        }
        for (id, code) in self.streams.pending_stops() {
            if !fits(buf) {
                break;
            }
            encode::stop_sending(buf, id, code);
            b.frames.push(SentFrame::StopSending { id });
            self.streams.on_stop_sent(id, crate::stream::FrameFate::Sent);
        }
        while fits(buf) {
            let Some(path) = self.path_control.status.pop_first() else {
                break;
            };
            if let Some(p) = self.path(path) {
                encode::path_status(buf, path, p.status_seq, p.local_status);
                b.frames.push(SentFrame::PathStatus { path });
            }
        }
        while fits(buf) {
            let Some((path, code)) = self.path_control.abandon.pop_first() else {
                break;
            };
            encode::path_abandon(buf, path, code);
            b.frames.push(SentFrame::PathAbandon { path });
        }
        if self.policy.due && self.is_established() {
            let body = self.policy().encode();
            let seq = self.policy.seq();
            if buf.len() + encode::policy_len(seq, body.len()) <= b.limit {
                self.policy.due = false;
                encode::policy(buf, seq, &body);
                b.frames.push(SentFrame::Policy { seq });
            }
        }
        if self.is_established() {
            self.sharing.write(b, buf);
        }
        if !b.frames.iter().all(|f| matches!(f, SentFrame::Ack { .. })) {
            b.ack_eliciting = true;
        }
    }
}
