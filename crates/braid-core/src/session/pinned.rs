//! Sending from the per-path queues ([`PathQueues`](super::path_queues::PathQueues)): the head of a path's queue leaves as
//! soon as that path can send; a path that can no longer send gives its datagrams back to
//! their class queues.

use super::builder::Transmit;
use super::path_queues::Pinned;
use super::Session;
use crate::path::sent::FrameRecords;
use crate::path::sent::SentFrame;
use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::frame::encode;

impl Session {
    /// Queues `item` on path `id`; the oldest item goes when the queue holds as many as the
    /// datagram queue limit.
    pub(super) fn pin(&mut self, id: PathId, item: Pinned) {
        if let Some(Pinned::Datagram(d)) = self.queues.push(id, item, self.config.datagram_queue) {
            self.datagrams.stats.entry(d.class).or_default().overflowed += 1;
        }
    }

    /// Drops what waited past its deadline, counting datagrams as expired.
    fn expire_pinned(&mut self, now: Timestamp) {
        let (datagrams, paths) = (&mut self.datagrams, &mut self.paths);
        self.queues.expire(now, |id, class| {
            datagrams.count_expired(class);
            if let Some(p) = paths.iter_mut().find(|p| p.id == id) {
                p.stats.datagrams_expired += 1;
            }
        });
    }

    /// Path `id` can no longer send: its datagrams go back to their class queues (in order),
    /// its copies are dropped.
    pub(super) fn unpin_path(&mut self, id: PathId) {
        let Some(q) = self.queues.drain_path(id) else { return };
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
        if self.queues.is_empty() {
            return None;
        }
        self.expire_pinned(now);
        let mut cursor = None;
        while let Some(id) = self.queues.next_path(cursor) {
            cursor = Some(id);
            let Some(idx) = self.paths.iter().position(|p| p.id == id) else {
                // The path is gone: put its datagrams back.
                self.unpin_path(id);
                continue;
            };
            if !self.paths[idx].is_usable() {
                continue;
            }
            let bytes = self.queues.front_bytes(id);
            if self.paths[idx].ready_at(now, bytes).is_none_or(|t| t > now) {
                continue;
            }
            let head = self.queues.pop_front(id)?;
            if let Pinned::Copy { frames, .. } = &head {
                if self.copy_is_stale(frames) {
                    // Every stream byte it carries has arrived through another copy.
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
                                self.queues.push_front(id, Pinned::Datagram(d));
                            } else {
                                // Only acknowledgements took the room: drop it (cannot happen
                                // with datagrams no larger than `max_datagram_payload`).
                                self.datagrams.count_expired(d.class);
                            }
                            break;
                        }
                        if self.queues.front_is_datagram(id) {
                            if let Some(Pinned::Datagram(d)) = self.queues.pop_front(id) {
                                next = Some(d);
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
            self.last_data_sent = Some(now);
            return Some(t);
        }
        None
    }
}
