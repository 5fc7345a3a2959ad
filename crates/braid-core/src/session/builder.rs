//! Building one DATA packet in the caller's buffer: [`Builder::start`] writes the header and
//! takes the path's next packet number, frames are appended by the caller,
//! [`Builder::seal_and_record`] seals the packet and records it on its path (RFC 9002 §A.5:
//! every ack-eliciting packet is remembered for loss detection; ACK-only packets are not, as
//! nothing in them is retransmitted). A leaf: it knows packets, paths and keys, not sessions.

use crate::crypto::keyupdate::KeySchedule;
use crate::path::sent::{FrameRecords, SentPacket};
use crate::path::{Path, PathId};
use crate::time::Timestamp;
use crate::wire::{DataHeader, SessionId, DATA_HEADER_LEN, TAG_LEN};
use smallvec::SmallVec;
use std::net::SocketAddr;
use std::time::Duration;

/// A datagram to put on the wire. Its bytes are in the buffer passed to `poll_transmit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    /// The path it belongs to.
    pub path: PathId,
    /// Where to send it.
    pub destination: SocketAddr,
    /// The local address to send from (None: any).
    pub source: Option<SocketAddr>,
    /// Its size.
    pub size: usize,
    /// It leaves as a datagram of its own, never in a segmented send (GSO) with others: a
    /// packet-pair probe, whose spacing from its neighbours is the measurement. A segmented
    /// send is one packet to the qdisc, so a shaper on the sending host (htb) passes it whole
    /// and the peer sees the probes arrive together.
    pub alone: bool,
}

impl Transmit {
    /// A datagram of `size` bytes to `path`'s peer address, from its local one.
    pub(super) fn on(path: &Path, size: usize) -> Transmit {
        Transmit { path: path.id, destination: path.remote, source: path.local, size, alone: false }
    }
}

/// A packet being built in the caller's buffer.
pub(super) struct Builder {
    /// The index of its path in the session's path list.
    pub(super) idx: usize,
    /// Its packet number.
    pub(super) pn: u64,
    /// Where its plaintext must end: the path's MTU less the AEAD tag.
    pub(super) limit: usize,
    /// What its frames carry, for loss recovery.
    pub(super) frames: FrameRecords,
    /// True once a frame that asks for an ACK is in it.
    pub(super) ack_eliciting: bool,
    /// A path MTU probe: not counted in flight (see `path::mtu`).
    pub(super) mtu_probe: bool,
}

impl Builder {
    /// Starts a packet on `path` (at `idx` in the session's list) to the peer's session
    /// `remote_id`: clears `buf` and writes the header (the key phase is written when the packet
    /// is sealed).
    pub(super) fn start(idx: usize, path: &mut Path, remote_id: SessionId, buf: &mut Vec<u8>) -> Builder {
        let pn = path.take_pn();
        buf.clear();
        buf.resize(DATA_HEADER_LEN, 0);
        DataHeader { session_id: remote_id, path_id: path.id, truncated_pn: pn as u32, key_phase: 0 }
            .write(buf);
        Builder {
            idx,
            pn,
            limit: path.mtu - TAG_LEN,
            frames: SmallVec::new(),
            ack_eliciting: false,
            mtu_probe: false,
        }
    }

    /// Room left for frames in `buf`.
    pub(super) fn room(&self, buf: &[u8]) -> usize {
        self.limit.saturating_sub(buf.len())
    }

    /// Seals the packet in `buf` with `keys` (`grace`: how long an old receive key is kept, see
    /// `KeySchedule::seal`) and records it as sent on `path` (the path it was started on);
    /// `destination` overrides the path's remote address.
    pub(super) fn seal_and_record(
        self,
        now: Timestamp,
        keys: &mut KeySchedule,
        grace: Duration,
        path: &mut Path,
        buf: &mut Vec<u8>,
        destination: Option<SocketAddr>,
    ) -> Transmit {
        keys.seal(now, grace, path.id, self.pn, buf, DATA_HEADER_LEN);
        let size = buf.len();
        let sent = SentPacket {
            pn: self.pn,
            sent_time: now,
            size: size as u32,
            ack_eliciting: self.ack_eliciting,
            in_flight: self.ack_eliciting && !self.mtu_probe,
            requeued: false,
            mtu_probe: self.mtu_probe,
            rate: Default::default(),
            frames: self.frames,
        };
        if sent.ack_eliciting {
            path.on_packet_sent(sent);
        } else {
            // ACK-only packets are not tracked: nothing in them needs recovery.
            path.stats.bytes_sent += size as u64;
            path.stats.packets_sent += 1;
            path.last_sent = Some(now);
        }
        Transmit {
            path: path.id,
            destination: destination.unwrap_or(path.remote),
            source: path.local,
            size,
            alone: false,
        }
    }
}
