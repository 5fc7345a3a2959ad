//! Frames: the units inside a sealed DATA packet.
//!
//! ```text
//! 0x00 PADDING                              0x10 MAX_DATA        max
//! 0x01 PING                                 0x11 MAX_STREAM_DATA id max
//! 0x02 ACK   path largest delay_us count    0x12 MAX_STREAMS     count
//!            first_range (gap len)*         0x13 STREAM_OPEN     id class
//! 0x03 ACK_TS path largest delay_us time_us count first_range (gap len)*
//! 0x04 RESET_STREAM id code final_size      0x30 DATAGRAM        class seq len data
//! 0x05 STOP_SENDING id code                 0x31 DATAGRAM        class seq deadline_us len data
//! 0x08..0x0f STREAM id [offset] [len] data  0x40 PATH_CHALLENGE  8 bytes
//!      (bits: 0x04 offset, 0x02 len, 0x01 fin; without len the data runs to the packet end)
//! 0x41 PATH_RESPONSE 8 bytes                0x42 PATH_STATUS     path seq status
//! 0x43 PATH_ABANDON path code               0x50 CLOSE           code reason_len reason
//! 0x44 PATH_REPORT path received lost random congestion jitter_us rate
//! 0x60 POLICY seq len body (see `policy`)   0x61 SHARING        seq shared(0|1)
//! ```
//! Integers are QUIC varints except single-byte `class` and `status`. ACK ranges follow RFC 9000
//! §19.3.1: the first range ends at `largest`; each (gap, len) pair steps down from the previous
//! range's smallest packet.

use super::{varint, ParseError};
use smallvec::SmallVec;
use std::ops::RangeInclusive;

const PADDING: u8 = 0x00;
const PING: u8 = 0x01;
const ACK: u8 = 0x02;
const ACK_TS: u8 = 0x03;
const RESET_STREAM: u8 = 0x04;
const STOP_SENDING: u8 = 0x05;
const STREAM: u8 = 0x08;
const STREAM_OFF: u8 = 0x04;
const STREAM_LEN: u8 = 0x02;
const STREAM_FIN: u8 = 0x01;
const MAX_DATA: u8 = 0x10;
const MAX_STREAM_DATA: u8 = 0x11;
const MAX_STREAMS: u8 = 0x12;
const STREAM_OPEN: u8 = 0x13;
const DATAGRAM: u8 = 0x30;
const DATAGRAM_DEADLINE: u8 = 0x31;
const PATH_CHALLENGE: u8 = 0x40;
const PATH_RESPONSE: u8 = 0x41;
const PATH_STATUS: u8 = 0x42;
const PATH_ABANDON: u8 = 0x43;
const PATH_REPORT: u8 = 0x44;
const CLOSE: u8 = 0x50;
const POLICY: u8 = 0x60;
const SHARING: u8 = 0x61;

/// The most ACK ranges one frame may carry; more is rejected as malformed.
pub const MAX_ACK_RANGES: usize = 256;

/// What a peer asks us to do with one of its paths (with the link tiers of the client's
/// policy: primary = `Active`, `Secondary`, `Backup`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathStatusKind {
    /// Carry data normally (a primary link).
    Active,
    /// Keep the path validated and probed, but carry no data.
    Standby,
    /// Carry data only when no active or secondary path is usable.
    Backup,
    /// Carry data when the active paths are down or cannot keep up (Speedify's "secondary":
    /// a metered link that helps only when the others are short).
    Secondary,
}

impl PathStatusKind {
    fn to_byte(self) -> u8 {
        match self {
            PathStatusKind::Active => 0,
            PathStatusKind::Standby => 1,
            PathStatusKind::Backup => 2,
            PathStatusKind::Secondary => 3,
        }
    }
    fn from_byte(b: u8) -> Option<Self> {
        Some(match b {
            0 => PathStatusKind::Active,
            1 => PathStatusKind::Standby,
            2 => PathStatusKind::Backup,
            3 => PathStatusKind::Secondary,
            _ => return None,
        })
    }
}

/// A parsed ACK frame: acknowledged packet numbers of one path, in descending ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckFrame {
    /// The path whose packets are acknowledged (may differ from the path carrying the ACK).
    pub path_id: u8,
    /// The largest acknowledged packet number.
    pub largest: u64,
    /// How long the receiver held the largest before acknowledging it, in microseconds.
    pub ack_delay_us: u64,
    /// The receiver's clock when it wrote the ACK, in microseconds from an epoch of its own
    /// (ACK_TS only): less the ACK delay, when the largest arrived. Against the sender's send
    /// times it gives each path's one-way delay up to one clock offset
    /// ([`crate::path::one_way`]).
    pub timestamp_us: Option<u64>,
    /// Acknowledged ranges, highest first.
    pub ranges: SmallVec<[RangeInclusive<u64>; 4]>,
}

/// One frame, borrowing its data from the decrypted packet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    /// `n` bytes of padding.
    Padding(usize),
    /// Asks for an acknowledgement; carries nothing.
    Ping,
    /// Acknowledges packets of a path.
    Ack(AckFrame),
    /// The sender abandons a stream's send side.
    ResetStream { id: u64, code: u64, final_size: u64 },
    /// The sender asks the peer to stop sending on a stream.
    StopSending { id: u64, code: u64 },
    /// Stream bytes at `offset`.
    Stream { id: u64, offset: u64, fin: bool, data: &'a [u8] },
    /// Connection-wide flow-control credit: the peer may send up to `max` stream bytes in total.
    MaxData(u64),
    /// Per-stream flow-control credit.
    MaxStreamData { id: u64, max: u64 },
    /// The peer may open streams up to this count.
    MaxStreams(u64),
    /// Opens a stream and names its traffic class.
    StreamOpen { id: u64, class: u8 },
    /// An unreliable datagram of a traffic class.
    Datagram { class: u8, seq: u64, deadline_us: Option<u64>, data: &'a [u8] },
    /// Path validation challenge.
    PathChallenge([u8; 8]),
    /// Path validation answer.
    PathResponse([u8; 8]),
    /// The sender's wish for how a path is used.
    PathStatus { path_id: u8, seq: u64, status: PathStatusKind },
    /// The sender closes one path.
    PathAbandon { path_id: u8, code: u64 },
    /// What the sender received on one of our paths (the two-sided channel monitor, seed
    /// 000; counters cumulative, see `crate::path::arrivals`).
    PathReport { path_id: u8, counters: crate::path::peer_report::ReportCounters },
    /// The sender closes the session.
    Close { code: u64, reason: &'a [u8] },
    /// The client's policy for both directions (`crate::policy`), newest `seq` wins.
    Policy { seq: u64, body: &'a [u8] },
    /// Server to client: whether other sessions' uploads share the server's ingress with this
    /// one's (`crate::session::sharing`), newest `seq` wins.
    Sharing { seq: u64, shared: bool },
}

impl Frame<'_> {
    /// True for frames that ask the receiver for an acknowledgement (all but ACK, PADDING,
    /// CLOSE, PATH_REPORT: a report rides with ACKs and, like them, is never acknowledged).
    pub fn is_ack_eliciting(&self) -> bool {
        !matches!(self, Frame::Padding(_) | Frame::Ack(_) | Frame::Close { .. } | Frame::PathReport { .. })
    }
}

/// Iterator over the frames of a decrypted payload; yields an error once and then stops.
pub struct Frames<'a> {
    buf: &'a [u8],
    pos: usize,
    failed: bool,
}

impl<'a> Frames<'a> {
    /// Frames of `payload`.
    pub fn new(payload: &'a [u8]) -> Self {
        Frames { buf: payload, pos: 0, failed: false }
    }

    fn varint(&mut self) -> Result<u64, ParseError> {
        let (v, n) = varint::read(&self.buf[self.pos..]).ok_or(ParseError::Truncated)?;
        self.pos += n;
        Ok(v)
    }

    fn byte(&mut self) -> Result<u8, ParseError> {
        let b = *self.buf.get(self.pos).ok_or(ParseError::Truncated)?;
        self.pos += 1;
        Ok(b)
    }

    fn bytes(&mut self, n: u64) -> Result<&'a [u8], ParseError> {
        let n = usize::try_from(n).map_err(|_| ParseError::Truncated)?;
        let end = self.pos.checked_add(n).ok_or(ParseError::Truncated)?;
        let s = self.buf.get(self.pos..end).ok_or(ParseError::Truncated)?;
        self.pos = end;
        Ok(s)
    }

    fn path_id(&mut self) -> Result<u8, ParseError> {
        u8::try_from(self.varint()?).map_err(|_| ParseError::Malformed("path id"))
    }

    fn parse_ack(&mut self, stamped: bool) -> Result<AckFrame, ParseError> {
        let path_id = self.path_id()?;
        let largest = self.varint()?;
        let ack_delay_us = self.varint()?;
        let timestamp_us = if stamped { Some(self.varint()?) } else { None };
        let count = self.varint()?;
        if count as usize >= MAX_ACK_RANGES {
            return Err(ParseError::Malformed("ACK"));
        }
        let first = self.varint()?;
        let mut smallest = largest.checked_sub(first).ok_or(ParseError::Malformed("ACK"))?;
        let mut ranges = SmallVec::new();
        ranges.push(smallest..=largest);
        for _ in 0..count {
            let gap = self.varint()?;
            let len = self.varint()?;
            let hi = smallest
                .checked_sub(gap)
                .and_then(|v| v.checked_sub(2))
                .ok_or(ParseError::Malformed("ACK"))?;
            let lo = hi.checked_sub(len).ok_or(ParseError::Malformed("ACK"))?;
            ranges.push(lo..=hi);
            smallest = lo;
        }
        Ok(AckFrame { path_id, largest, ack_delay_us, timestamp_us, ranges })
    }

    fn parse_one(&mut self) -> Result<Frame<'a>, ParseError> {
        let ty = self.byte()?;
        Ok(match ty {
            PADDING => {
                let start = self.pos - 1;
                while self.buf.get(self.pos) == Some(&PADDING) {
                    self.pos += 1;
                }
                Frame::Padding(self.pos - start)
            }
            PING => Frame::Ping,
            ACK => Frame::Ack(self.parse_ack(false)?),
            ACK_TS => Frame::Ack(self.parse_ack(true)?),
            RESET_STREAM => {
                Frame::ResetStream { id: self.varint()?, code: self.varint()?, final_size: self.varint()? }
            }
            STOP_SENDING => Frame::StopSending { id: self.varint()?, code: self.varint()? },
            t if t & !0x07 == STREAM => {
                let id = self.varint()?;
                let offset = if t & STREAM_OFF != 0 { self.varint()? } else { 0 };
                let data = if t & STREAM_LEN != 0 {
                    let len = self.varint()?;
                    self.bytes(len)?
                } else {
                    let rest = &self.buf[self.pos..];
                    self.pos = self.buf.len();
                    rest
                };
                if offset.checked_add(data.len() as u64).is_none_or(|end| end > varint::MAX) {
                    return Err(ParseError::Malformed("STREAM"));
                }
                Frame::Stream { id, offset, fin: t & STREAM_FIN != 0, data }
            }
            MAX_DATA => Frame::MaxData(self.varint()?),
            MAX_STREAM_DATA => Frame::MaxStreamData { id: self.varint()?, max: self.varint()? },
            MAX_STREAMS => Frame::MaxStreams(self.varint()?),
            STREAM_OPEN => Frame::StreamOpen { id: self.varint()?, class: self.byte()? },
            DATAGRAM | DATAGRAM_DEADLINE => {
                let class = self.byte()?;
                let seq = self.varint()?;
                let deadline_us = if ty == DATAGRAM_DEADLINE { Some(self.varint()?) } else { None };
                let len = self.varint()?;
                Frame::Datagram { class, seq, deadline_us, data: self.bytes(len)? }
            }
            PATH_CHALLENGE | PATH_RESPONSE => {
                let data: [u8; 8] = self.bytes(8)?.try_into().expect("8 bytes");
                if ty == PATH_CHALLENGE {
                    Frame::PathChallenge(data)
                } else {
                    Frame::PathResponse(data)
                }
            }
            PATH_STATUS => {
                let path_id = self.path_id()?;
                let seq = self.varint()?;
                let status =
                    PathStatusKind::from_byte(self.byte()?).ok_or(ParseError::Malformed("PATH_STATUS"))?;
                Frame::PathStatus { path_id, seq, status }
            }
            PATH_ABANDON => Frame::PathAbandon { path_id: self.path_id()?, code: self.varint()? },
            PATH_REPORT => {
                let path_id = self.path_id()?;
                let counters = crate::path::peer_report::ReportCounters {
                    received: self.varint()?,
                    lost: self.varint()?,
                    random: self.varint()?,
                    congestion: self.varint()?,
                    jitter_us: self.varint()?,
                    rate: self.varint()?,
                };
                Frame::PathReport { path_id, counters }
            }
            CLOSE => {
                let code = self.varint()?;
                let len = self.varint()?;
                Frame::Close { code, reason: self.bytes(len)? }
            }
            POLICY => {
                let seq = self.varint()?;
                let len = self.varint()?;
                Frame::Policy { seq, body: self.bytes(len)? }
            }
            SHARING => {
                let seq = self.varint()?;
                let shared = match self.byte()? {
                    0 => false,
                    1 => true,
                    _ => return Err(ParseError::Malformed("SHARING")),
                };
                Frame::Sharing { seq, shared }
            }
            other => return Err(ParseError::UnknownFrame(u64::from(other))),
        })
    }
}

impl<'a> Iterator for Frames<'a> {
    type Item = Result<Frame<'a>, ParseError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed || self.pos >= self.buf.len() {
            return None;
        }
        let r = self.parse_one();
        self.failed = r.is_err();
        Some(r)
    }
}

/// Frame encoders. Each appends one frame to `out`.
pub mod encode {
    use super::*;

    /// PING.
    pub fn ping(out: &mut Vec<u8>) {
        out.push(PING);
    }

    /// `n` bytes of PADDING.
    pub fn padding(out: &mut Vec<u8>, n: usize) {
        out.resize(out.len() + n, PADDING);
    }

    /// ACK for `path_id`, an ACK_TS when written with the receiver's clock `timestamp_us`:
    /// `ranges` must be descending, disjoint and non-adjacent (as a `RangeSet` yields them in
    /// reverse), half-open.
    pub fn ack<I>(out: &mut Vec<u8>, path_id: u8, ack_delay_us: u64, timestamp_us: Option<u64>, ranges: I)
    where
        I: IntoIterator<Item = std::ops::Range<u64>>,
        I::IntoIter: Clone,
    {
        let ranges = ranges.into_iter();
        let mut it = ranges.clone();
        let Some(first) = it.next() else { return };
        let count = it.count();
        out.push(if timestamp_us.is_some() { ACK_TS } else { ACK });
        varint::put(out, u64::from(path_id));
        varint::put(out, first.end - 1);
        varint::put(out, ack_delay_us);
        if let Some(t) = timestamp_us {
            varint::put(out, t);
        }
        varint::put(out, count as u64);
        varint::put(out, first.end - 1 - first.start);
        let mut smallest = first.start;
        for r in ranges.skip(1) {
            let hi = r.end - 1;
            varint::put(out, smallest - hi - 2);
            varint::put(out, hi - r.start);
            smallest = r.start;
        }
    }

    /// The size of a STREAM frame header for these fields.
    pub fn stream_header_len(id: u64, offset: u64, len: Option<usize>) -> usize {
        1 + varint::size(id)
            + if offset > 0 { varint::size(offset) } else { 0 }
            + len.map_or(0, |l| varint::size(l as u64))
    }

    /// A STREAM frame header; the data follows. Without `len` the data runs to the packet end.
    pub fn stream_header(out: &mut Vec<u8>, id: u64, offset: u64, fin: bool, len: Option<usize>) {
        let mut ty = STREAM;
        if offset > 0 {
            ty |= STREAM_OFF;
        }
        if len.is_some() {
            ty |= STREAM_LEN;
        }
        if fin {
            ty |= STREAM_FIN;
        }
        out.push(ty);
        varint::put(out, id);
        if offset > 0 {
            varint::put(out, offset);
        }
        if let Some(len) = len {
            varint::put(out, len as u64);
        }
    }

    /// STREAM; when `last` is true the length is omitted and the data runs to the packet end.
    pub fn stream(out: &mut Vec<u8>, id: u64, offset: u64, fin: bool, data: &[u8], last: bool) {
        stream_header(out, id, offset, fin, (!last).then_some(data.len()));
        out.extend_from_slice(data);
    }

    /// RESET_STREAM.
    pub fn reset_stream(out: &mut Vec<u8>, id: u64, code: u64, final_size: u64) {
        out.push(RESET_STREAM);
        varint::put(out, id);
        varint::put(out, code);
        varint::put(out, final_size);
    }

    /// STOP_SENDING.
    pub fn stop_sending(out: &mut Vec<u8>, id: u64, code: u64) {
        out.push(STOP_SENDING);
        varint::put(out, id);
        varint::put(out, code);
    }

    /// MAX_DATA.
    pub fn max_data(out: &mut Vec<u8>, max: u64) {
        out.push(MAX_DATA);
        varint::put(out, max);
    }

    /// MAX_STREAM_DATA.
    pub fn max_stream_data(out: &mut Vec<u8>, id: u64, max: u64) {
        out.push(MAX_STREAM_DATA);
        varint::put(out, id);
        varint::put(out, max);
    }

    /// MAX_STREAMS.
    pub fn max_streams(out: &mut Vec<u8>, count: u64) {
        out.push(MAX_STREAMS);
        varint::put(out, count);
    }

    /// STREAM_OPEN.
    pub fn stream_open(out: &mut Vec<u8>, id: u64, class: u8) {
        out.push(STREAM_OPEN);
        varint::put(out, id);
        out.push(class);
    }

    /// The encoded size of a DATAGRAM frame.
    pub fn datagram_len(seq: u64, deadline_us: Option<u64>, len: usize) -> usize {
        2 + varint::size(seq) + deadline_us.map_or(0, varint::size) + varint::size(len as u64) + len
    }

    /// DATAGRAM.
    pub fn datagram(out: &mut Vec<u8>, class: u8, seq: u64, deadline_us: Option<u64>, data: &[u8]) {
        out.push(if deadline_us.is_some() { DATAGRAM_DEADLINE } else { DATAGRAM });
        out.push(class);
        varint::put(out, seq);
        if let Some(d) = deadline_us {
            varint::put(out, d);
        }
        varint::put(out, data.len() as u64);
        out.extend_from_slice(data);
    }

    /// PATH_CHALLENGE.
    pub fn path_challenge(out: &mut Vec<u8>, token: [u8; 8]) {
        out.push(PATH_CHALLENGE);
        out.extend_from_slice(&token);
    }

    /// PATH_RESPONSE.
    pub fn path_response(out: &mut Vec<u8>, token: [u8; 8]) {
        out.push(PATH_RESPONSE);
        out.extend_from_slice(&token);
    }

    /// PATH_STATUS.
    pub fn path_status(out: &mut Vec<u8>, path_id: u8, seq: u64, status: PathStatusKind) {
        out.push(PATH_STATUS);
        varint::put(out, u64::from(path_id));
        varint::put(out, seq);
        out.push(status.to_byte());
    }

    /// POLICY with its encoded body.
    pub fn policy(out: &mut Vec<u8>, seq: u64, body: &[u8]) {
        out.push(POLICY);
        varint::put(out, seq);
        varint::put(out, body.len() as u64);
        out.extend_from_slice(body);
    }

    /// Bytes of a POLICY frame with a body of `len` bytes.
    pub fn policy_len(seq: u64, len: usize) -> usize {
        1 + varint::size(seq) + varint::size(len as u64) + len
    }

    /// SHARING.
    pub fn sharing(out: &mut Vec<u8>, seq: u64, shared: bool) {
        out.push(SHARING);
        varint::put(out, seq);
        out.push(u8::from(shared));
    }

    /// Bytes of a SHARING frame.
    pub fn sharing_len(seq: u64) -> usize {
        2 + varint::size(seq)
    }

    /// PATH_ABANDON.
    pub fn path_abandon(out: &mut Vec<u8>, path_id: u8, code: u64) {
        out.push(PATH_ABANDON);
        varint::put(out, u64::from(path_id));
        varint::put(out, code);
    }

    /// PATH_REPORT; values above the varint range are written as its maximum.
    pub fn path_report(out: &mut Vec<u8>, path_id: u8, c: &crate::path::peer_report::ReportCounters) {
        out.push(PATH_REPORT);
        varint::put(out, u64::from(path_id));
        for v in [c.received, c.lost, c.random, c.congestion, c.jitter_us, c.rate] {
            varint::put(out, v.min(varint::MAX));
        }
    }

    /// The most bytes a PATH_REPORT takes.
    pub const PATH_REPORT_MAX_LEN: usize = 2 + 2 + 6 * 8;

    /// CLOSE; the reason is cut to 256 bytes.
    pub fn close(out: &mut Vec<u8>, code: u64, reason: &[u8]) {
        let reason = &reason[..reason.len().min(256)];
        out.push(CLOSE);
        varint::put(out, code);
        varint::put(out, reason.len() as u64);
        out.extend_from_slice(reason);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::path::peer_report::ReportCounters;
    use proptest::prelude::*;

    fn parse_all(buf: &[u8]) -> Vec<Frame<'_>> {
        Frames::new(buf).collect::<Result<Vec<_>, _>>().unwrap()
    }

    #[test]
    fn every_frame_round_trips() {
        let mut out = Vec::new();
        encode::ping(&mut out);
        encode::ack(&mut out, 3, 250, None, [10..21, 5..8, 0..1]);
        encode::reset_stream(&mut out, 4, 9, 1000);
        encode::stop_sending(&mut out, 4, 1);
        encode::stream(&mut out, 8, 0, false, b"abc", false);
        encode::stream(&mut out, 8, 3, true, b"", false);
        encode::max_data(&mut out, 1 << 40);
        encode::max_stream_data(&mut out, 8, 77);
        encode::max_streams(&mut out, 100);
        encode::stream_open(&mut out, 12, 2);
        encode::datagram(&mut out, 1, 5, None, b"dg");
        encode::datagram(&mut out, 2, 6, Some(20_000), b"late");
        encode::path_challenge(&mut out, [1; 8]);
        encode::path_response(&mut out, [2; 8]);
        encode::path_status(&mut out, 1, 3, PathStatusKind::Backup);
        encode::path_abandon(&mut out, 2, 0);
        encode::close(&mut out, 0, b"bye");
        let report = ReportCounters {
            received: 900,
            lost: 12,
            random: 9,
            congestion: 3,
            jitter_us: 1500,
            rate: 1 << 33,
        };
        encode::path_report(&mut out, 7, &report);
        encode::stream(&mut out, 16, 70000, false, b"tail", true);
        let frames = parse_all(&out);
        assert_eq!(frames.len(), 19);
        assert_eq!(frames[17], Frame::PathReport { path_id: 7, counters: report });
        assert!(!frames[17].is_ack_eliciting());
        let Frame::Ack(ack) = &frames[1] else { panic!("ack") };
        assert_eq!(ack.path_id, 3);
        assert_eq!(ack.largest, 20);
        assert_eq!((ack.ack_delay_us, ack.timestamp_us), (250, None));
        assert_eq!(ack.ranges.as_slice(), &[10..=20, 5..=7, 0..=0]);
        assert_eq!(frames[4], Frame::Stream { id: 8, offset: 0, fin: false, data: b"abc" });
        assert_eq!(frames[5], Frame::Stream { id: 8, offset: 3, fin: true, data: b"" });
        assert_eq!(
            frames[11],
            Frame::Datagram { class: 2, seq: 6, deadline_us: Some(20_000), data: b"late" }
        );
        assert_eq!(frames[18], Frame::Stream { id: 16, offset: 70000, fin: false, data: b"tail" });
        assert_eq!(
            encode::stream_header_len(16, 70000, None) + 4,
            out.len() - out.iter().rposition(|&b| b == 0x0c).unwrap()
        );
    }

    #[test]
    fn a_stamped_ack_round_trips_and_refuses_a_cut() {
        let mut out = Vec::new();
        encode::ack(&mut out, 1, 40, Some(u64::from(u32::MAX) + 7), [90..100, 10..20]);
        assert_eq!(out[0], ACK_TS);
        let Frame::Ack(ack) = &parse_all(&out)[0] else { panic!("ack") };
        assert_eq!((ack.path_id, ack.largest, ack.ack_delay_us), (1, 99, 40));
        assert_eq!(ack.timestamp_us, Some(u64::from(u32::MAX) + 7));
        assert_eq!(ack.ranges.as_slice(), &[90..=99, 10..=19]);
        for cut in 1..out.len() {
            assert!(Frames::new(&out[..cut]).next().unwrap().is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn malformed_ack_is_rejected() {
        let mut out = vec![ACK];
        for v in [0u64, 3, 0, 1, 5] {
            varint::put(&mut out, v); // first range 5 > largest 3
        }
        assert!(matches!(Frames::new(&out).next(), Some(Err(ParseError::Malformed("ACK")))));
        assert_eq!(Frames::new(&[0xee]).next(), Some(Err(ParseError::UnknownFrame(0xee))));
        let mut f = Frames::new(&[0xee, 0x01]);
        assert!(f.next().unwrap().is_err());
        assert!(f.next().is_none());
    }

    #[test]
    fn sharing_round_trips_and_refuses_other_flags() {
        for (seq, shared) in [(0, false), (1, true), (varint::MAX, true)] {
            let mut out = Vec::new();
            encode::sharing(&mut out, seq, shared);
            assert_eq!(out.len(), encode::sharing_len(seq));
            assert_eq!(parse_all(&out), vec![Frame::Sharing { seq, shared }]);
            for cut in 1..out.len() {
                assert!(Frames::new(&out[..cut]).next().unwrap().is_err());
            }
        }
        assert_eq!(Frames::new(&[SHARING, 3, 2]).next(), Some(Err(ParseError::Malformed("SHARING"))));
    }

    proptest! {
        #[test]
        fn parser_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            for f in Frames::new(&bytes) { let _ = f; }
        }

        /// Any PATH_REPORT round-trips (values within the varint range), fits its bound, and
        /// every truncation of it is refused without a panic.
        #[test]
        fn path_report_round_trips(path_id in any::<u8>(), v in proptest::array::uniform6(0..=varint::MAX)) {
            let c = ReportCounters { received: v[0], lost: v[1], random: v[2], congestion: v[3], jitter_us: v[4], rate: v[5] };
            let mut out = Vec::new();
            encode::path_report(&mut out, path_id, &c);
            prop_assert!(out.len() <= encode::PATH_REPORT_MAX_LEN);
            prop_assert_eq!(parse_all(&out), vec![Frame::PathReport { path_id, counters: c }]);
            for cut in 1..out.len() {
                prop_assert!(Frames::new(&out[..cut]).next().unwrap().is_err());
            }
        }
    }
}
