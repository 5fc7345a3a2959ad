//! Per-path queues: datagrams a scheduler committed to a path that could not send yet (the
//! striping schedulers of seed 000, EDPF over per-path queues), and redundant copies. Each
//! waits for its path's pacer and congestion window; a datagram (or a copy of datagrams) is
//! dropped there when its deadline passes. When a path goes silent or away, its datagrams go
//! back to the head of their class queues and its copies are dropped.

use super::{Session, Transmit};
use crate::datagram::OutgoingDatagram;
use crate::path::sent::FrameRecords;
use crate::path::sent::SentFrame;
use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use std::collections::VecDeque;

/// Something waiting on one path.
#[derive(Debug)]
pub(super) enum Pinned {
    /// A datagram assigned to this path.
    Datagram(OutgoingDatagram),
    /// A redundant copy of a packet sent on another path: its frames, ready to seal.
    Copy {
        /// The frames (plaintext payload after the header).
        payload: Vec<u8>,
        /// What they carry.
        frames: FrameRecords,
        /// Dropped after this time (the earliest deadline of the datagrams in it).
        expires: Option<Timestamp>,
    },
}

impl Pinned {
    /// Bytes it will occupy on the path.
    pub(super) fn bytes(&self) -> u64 {
        match self {
            Pinned::Datagram(d) => (d.data.len() + crate::datagram::DATAGRAM_OVERHEAD) as u64,
            Pinned::Copy { payload, .. } => (payload.len() + crate::wire::DATA_OVERHEAD) as u64,
        }
    }

    fn expired(&self, now: Timestamp) -> bool {
        let deadline = match self {
            Pinned::Datagram(d) => d.deadline,
            Pinned::Copy { expires, .. } => *expires,
        };
        deadline.is_some_and(|t| t <= now)
    }
}

impl Session {
    /// Queues `item` on path `id`; the oldest item goes when the queue holds as many as the
    /// datagram queue limit.
    pub(super) fn pin(&mut self, id: PathId, item: Pinned) {
        let limit = self.config.datagram_queue;
        let q = self.pinned.entry(id).or_default();
        q.push_back(item);
        if q.len() > limit {
            if let Some(Pinned::Datagram(d)) = q.pop_front() {
                self.datagrams.stats.entry(d.class).or_default().overflowed += 1;
            }
        }
    }

    /// Drops what waited past its deadline, counting datagrams as expired.
    pub(super) fn expire_pinned(&mut self, now: Timestamp) {
        for (id, q) in self.pinned.iter_mut() {
            let before = q.len();
            let mut gone: Vec<u8> = Vec::new();
            q.retain(|item| {
                let e = item.expired(now);
                if e {
                    if let Pinned::Datagram(d) = item {
                        gone.push(d.class);
                    }
                }
                !e
            });
            if q.len() == before {
                continue;
            }
            for class in &gone {
                self.datagrams.count_expired(*class);
            }
            if let Some(p) = self.paths.iter_mut().find(|p| p.id == *id) {
                p.stats.datagrams_expired += gone.len() as u64;
            }
        }
        self.pinned.retain(|_, q| !q.is_empty());
    }

    /// Path `id` can no longer send: its datagrams go back to their class queues (in order),
    /// its copies are dropped.
    pub(super) fn unpin_path(&mut self, id: PathId) {
        let Some(q) = self.pinned.remove(&id) else { return };
        for item in q.into_iter().rev() {
            if let Pinned::Datagram(d) = item {
                self.datagrams.push_front(d);
            }
        }
    }

    /// True when a redundant copy carries stream data only and all of it is acknowledged.
    fn copy_is_stale(&self, frames: &FrameRecords) -> bool {
        let mut any_stream = false;
        for f in frames {
            match *f {
                SentFrame::Stream { id, offset, len, .. } => {
                    any_stream = true;
                    if !self.streams.is_acked(id, offset, u64::from(len)) {
                        return false;
                    }
                }
                SentFrame::Ack { .. } => {}
                _ => return false,
            }
        }
        any_stream
    }

    /// Sends the head of a path queue whose path can send now.
    pub(super) fn poll_pinned(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.pinned.is_empty() {
            return None;
        }
        self.expire_pinned(now);
        let ids: Vec<PathId> = self.pinned.keys().copied().collect();
        for id in ids {
            let Some(idx) = self.paths.iter().position(|p| p.id == id) else {
                // The path is gone: put its datagrams back.
                self.unpin_path(id);
                continue;
            };
            if !self.paths[idx].is_usable() {
                continue;
            }
            let bytes = self.pinned.get(&id).and_then(VecDeque::front).map_or(0, Pinned::bytes);
            if self.paths[idx].ready_at(now, bytes).is_none_or(|t| t > now) {
                continue;
            }
            let head = self.pinned.get_mut(&id).and_then(VecDeque::pop_front)?;
            if let Pinned::Copy { frames, .. } = &head {
                if self.copy_is_stale(frames) {
                    // Every stream byte it carries has arrived through another copy.
                    self.pinned.retain(|_, q| !q.is_empty());
                    return self.poll_pinned(now, buf);
                }
            }
            let t = match head {
                Pinned::Copy { payload, frames, .. } => {
                    let mut b = self.start(idx, buf);
                    buf.extend_from_slice(&payload);
                    let datagrams = frames.iter().filter(|f| matches!(f, SentFrame::Datagram { .. })).count();
                    self.paths[idx].stats.datagrams_sent += datagrams as u64;
                    b.frames = frames;
                    b.ack_eliciting = true;
                    self.seal_and_record(now, b, buf, None)
                }
                Pinned::Datagram(first) => {
                    let mut b = self.start(idx, buf);
                    self.write_acks(now, &mut b, buf, true);
                    let mut next = Some(first);
                    let mut deadline = None;
                    while let Some(d) = next.take() {
                        if self.write_datagram(now, &mut b, buf, &d) {
                            deadline = crate::time::earliest(deadline, d.deadline);
                        } else {
                            if b.frames.iter().any(|f| matches!(f, SentFrame::Datagram { .. })) {
                                // Does not fit next to the others: it leads the next packet.
                                self.pinned.entry(id).or_default().push_front(Pinned::Datagram(d));
                            } else {
                                // Only acknowledgements took the room: drop it (cannot happen
                                // with datagrams no larger than `max_datagram_payload`).
                                self.datagrams.count_expired(d.class);
                            }
                            break;
                        }
                        if let Some(q) = self.pinned.get_mut(&id) {
                            if matches!(q.front(), Some(Pinned::Datagram(_))) {
                                if let Some(Pinned::Datagram(d)) = q.pop_front() {
                                    next = Some(d);
                                }
                            }
                        }
                    }
                    if !b.ack_eliciting {
                        encode::ping(buf);
                        b.ack_eliciting = true;
                    }
                    // A base layer's datagrams get their copy here too (see `critical`).
                    let copy = self
                        .is_critical(&b.frames)
                        .then(|| (buf[crate::wire::DATA_HEADER_LEN..].to_vec(), b.frames.clone()));
                    let t = self.seal_and_record(now, b, buf, None);
                    if let Some((payload, frames)) = copy {
                        self.copy_critical(now, idx, payload, frames, deadline);
                    }
                    t
                }
            };
            self.pinned.retain(|_, q| !q.is_empty());
            self.last_data_sent = Some(now);
            return Some(t);
        }
        None
    }
}
