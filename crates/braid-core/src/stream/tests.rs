//! The send buffer sized from the paths' windows; the kept counters and the send queue's
//! order against a recount and the FIFO they replaced.

use super::{FrameFate, StreamError, StreamEvent, StreamId, StreamLimits, Streams, MIN_SEND_BUFFER};
use crate::side::Side;
use bytes::Bytes;
use proptest::prelude::*;
use std::collections::VecDeque;

fn streams() -> Streams {
    Streams::new(
        Side::Client,
        StreamLimits {
            stream_window: 16 << 20,
            session_window: 32 << 20,
            send_buffer: 8 << 20,
            max_streams: 16,
        },
    )
}

#[test]
fn the_send_buffer_follows_the_paths_between_a_floor_and_the_configured_size() {
    let mut s = streams();
    let id = s.open(0).unwrap();
    assert_eq!(s.send_cap(), 8 << 20, "the configured size until the paths are known");
    s.size_send_buffer(100_000);
    assert_eq!(s.send_cap(), MIN_SEND_BUFFER, "never below the floor");
    let data = vec![0u8; 3 << 20];
    assert_eq!(s.write(id, &data).unwrap(), MIN_SEND_BUFFER as usize, "a write takes what the buffer holds");
    assert!(matches!(s.write(id, &data), Err(StreamError::Blocked)));
    while s.poll_event().is_some() {}
    s.size_send_buffer(3 << 20);
    assert_eq!(s.send_cap(), 3 << 20);
    let mut writable = false;
    while let Some(e) = s.poll_event() {
        writable |= matches!(e, StreamEvent::Writable(w) if w == id);
    }
    assert!(writable, "a stream blocked on the smaller size is told it has room");
    assert_eq!(s.write(id, &data).unwrap(), (2 << 20) as usize);
    s.size_send_buffer(1 << 40);
    assert_eq!(s.send_cap(), 8 << 20, "never above the configured size");
}

/// The send queue as it was before it was kept in shelves: a FIFO of stream ids, swept of the
/// streams with nothing to send on every `next_chunk`. The kept queue must choose exactly as
/// this does (the simulator's figures depend on the order of chunks).
#[derive(Default)]
struct FifoModel {
    queue: VecDeque<u64>,
}

impl FifoModel {
    fn sendable(s: &Streams, id: u64, credit: u64) -> bool {
        s.streams.get(&id).is_some_and(|st| st.send.has_sendable(credit) || st.announce)
    }

    fn enqueue(&mut self, id: u64) {
        if !self.queue.contains(&id) {
            self.queue.push_back(id);
        }
    }

    fn next(&self, s: &Streams, rank: &dyn Fn(u8) -> Option<u8>) -> Option<u64> {
        let credit = s.flow.credit();
        let mut best: Option<(u64, u8)> = None;
        for &id in &self.queue {
            if !Self::sendable(s, id, credit) {
                continue;
            }
            let Some(p) = rank(s.streams[&id].class) else { continue };
            if best.is_none_or(|(_, bp)| p < bp) {
                best = Some((id, p));
            }
        }
        best.map(|(id, _)| id)
    }

    /// Before `next_chunk`: the sweep and the choice.
    fn take(&mut self, s: &Streams, rank: &dyn Fn(u8) -> Option<u8>) -> Option<u64> {
        let credit = s.flow.credit();
        self.queue.retain(|id| Self::sendable(s, *id, credit));
        let id = self.next(s, rank)?;
        self.queue.retain(|q| *q != id);
        Some(id)
    }

    /// After `next_chunk` served `id`: back in the queue when more remains.
    fn served(&mut self, s: &Streams, id: u64) {
        if Self::sendable(s, id, s.flow.credit()) {
            self.queue.push_back(id);
        }
    }

    fn peers(&self, s: &Streams, rank: &dyn Fn(u8) -> Option<u8>, p: Option<u8>) -> usize {
        let credit = s.flow.credit();
        self.queue
            .iter()
            .filter_map(|id| s.streams.get(id))
            .filter(|st| st.send.has_sendable(credit) && rank(st.class) == p)
            .count()
    }
}

fn ranks() -> Vec<Box<dyn Fn(u8) -> Option<u8>>> {
    vec![
        Box::new(Some),
        Box::new(|_| Some(0)),
        Box::new(|c| (c == 1).then_some(0)),
        Box::new(|c| (c != 2).then_some(3 - c)),
    ]
}

/// Every kept counter and the queue's choices checked against a recount and the FIFO.
fn check(s: &Streams, fifo: &FifoModel) -> Result<(), TestCaseError> {
    let credit = s.flow.credit();
    let unsent: u64 = s.streams.values().map(|st| st.send.unsent_bytes(credit)).sum();
    prop_assert_eq!(s.unsent_total(), unsent, "unsent_total");
    let live = || fifo.queue.iter().filter_map(|id| s.streams.get(id));
    prop_assert_eq!(s.has_retransmit(), live().any(|st| st.send.has_retransmit()), "has_retransmit");
    let sendable = live().any(|st| st.send.has_sendable(credit) || st.announce);
    prop_assert_eq!(s.has_sendable(), sendable, "has_sendable");
    let mut classes: Vec<u8> = live().map(|st| st.class).collect();
    classes.sort_unstable();
    classes.dedup();
    prop_assert_eq!(s.sending_classes(), classes, "sending_classes");
    let owed = s.streams.values().any(|st| st.send.reset_pending || st.recv.stop_pending);
    prop_assert_eq!(s.has_pending_resets_or_stops(), owed, "resets or stops owed");
    let resets: Vec<u64> =
        s.streams.iter().filter(|(_, st)| st.send.reset_pending).map(|(id, _)| *id).collect();
    prop_assert_eq!(s.pending_resets().iter().map(|r| r.0).collect::<Vec<_>>(), resets, "pending resets");
    let held: usize = s.streams.values().map(|st| st.recv.out_of_order_chunks()).sum();
    prop_assert_eq!(s.reorder_now(), held, "reorder_now");
    for rank in ranks() {
        let want = fifo.next(s, &rank);
        prop_assert_eq!(s.next_sender(&rank).map(|(id, _)| id), want, "next_sender");
        if let Some(id) = want {
            let p = rank(s.streams[&id].class);
            let peers = s.queue.sendable_at(credit == 0, &rank, p);
            prop_assert_eq!(peers, fifo.peers(s, &rank, p), "streams at the top priority");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    /// Random writes, sends (in order and ahead), acknowledgements, losses, resets, credits and
    /// peer frames: after each, the kept counters equal a recount and the send queue chooses
    /// as the FIFO it replaced.
    #[test]
    fn kept_counters_and_queue_order_match_a_recount(
        ops in proptest::collection::vec((0u8..14, 0u64..1 << 16, 0u64..1 << 16), 1..150),
    ) {
        let mut s = Streams::new(Side::Client, StreamLimits {
            stream_window: 2500,
            session_window: 4000,
            send_buffer: 1 << 20,
            max_streams: 6,
        });
        let mut fifo = FifoModel::default();
        let mut sent: Vec<(u64, u64, u64, bool)> = Vec::new();
        let ranks = ranks();
        for (op, a, b) in ops {
            let ours: Vec<u64> = s.streams.keys().copied().filter(|id| id & 1 == 0).collect();
            let pick = |v: &[u64]| (!v.is_empty()).then(|| v[a as usize % v.len()]);
            match op {
                0 => if let Ok(id) = s.open((b % 4) as u8) { fifo.enqueue(id.0) },
                1 | 2 => if let Some(id) = pick(&ours) {
                    if s.write(StreamId(id), &vec![0u8; 1 + b as usize % 3000]).is_ok() { fifo.enqueue(id) }
                },
                3 => if let Some(id) = pick(&ours) {
                    if s.finish(StreamId(id)).is_ok() { fifo.enqueue(id) }
                },
                4..=6 => {
                    let rank = &ranks[b as usize % ranks.len()];
                    let want = fifo.take(&s, rank);
                    let got = s.next_chunk(200 + (a % 1400) as usize, rank);
                    if let Some(id) = want { fifo.served(&s, id) }
                    if let Some((id, chunk, _)) = got {
                        prop_assert_eq!(Some(id), want, "next_chunk");
                        if let Some(c) = chunk { sent.push((id, c.offset, c.len as u64, c.fin)) }
                    }
                }
                7 => {
                    let rank = &ranks[b as usize % ranks.len()];
                    if let Some((id, c)) = s.next_chunk_ahead(1200, 1 + (a % 8) as u32, rank) {
                        sent.push((id, c.offset, c.len as u64, c.fin));
                    }
                }
                8 | 9 if !sent.is_empty() => {
                    let (id, off, len, fin) = sent.swap_remove(a as usize % sent.len());
                    if op == 8 {
                        s.on_frame_acked(id, off, len, fin);
                    } else {
                        s.on_frame_lost(id, off, len, fin);
                        if s.streams.contains_key(&id) { fifo.enqueue(id) }
                    }
                }
                10 => if let Some(id) = pick(&ours) {
                    match b % 4 {
                        0 => { let _ = s.reset(StreamId(id), 7); }
                        1 => { let _ = s.on_stop_sending(id, 9); }
                        2 => { s.on_open_lost(id); fifo.enqueue(id) }
                        _ => if s.on_max_stream_data(id, b).is_ok() && s.streams.get(&id).is_some_and(|st| st.send.max_data == b) {
                            fifo.enqueue(id)
                        },
                    }
                },
                11 => {
                    let before = s.flow.snapshot().1;
                    s.on_max_data(before + b % 700);
                    if s.flow.snapshot().1 > before {
                        for id in s.streams.keys() { fifo.enqueue(*id) }
                    }
                }
                12 if b % 5 == 0 => {
                    // A peer stream reset with data held behind a gap.
                    let id = 1 + 2 * (a % 3);
                    let highest = s.streams.get(&id).map_or(0, |st| st.recv.highest());
                    let _ = s.on_reset(id, 5, highest);
                }
                12 => {
                    // A peer stream's data, out of order.
                    let _ = s.on_stream_frame(1 + 2 * (b % 3), a % 5000, Bytes::from(vec![1u8; 1 + (b % 900) as usize]), false);
                }
                _ => {
                    let pending = s.pending_resets();
                    if let Some(&(id, ..)) = pending.first() {
                        s.on_reset_sent(id, [FrameFate::Sent, FrameFate::Lost, FrameFate::Acked][(b % 3) as usize]);
                    }
                    let _ = s.read_chunk(StreamId(1 + 2 * (b % 3)), 500);
                }
            }
            check(&s, &fifo)?;
        }
    }
}
