//! The send half: retransmissions, sending ahead, flow control, and the kept unsent parts
//! against a recount.

use super::*;
use proptest::prelude::*;

/// The unsent bytes counted as before they were kept in parts: a walk over the ranges sent
/// ahead.
fn unsent_recount(s: &SendStream, conn_credit: u64) -> u64 {
    let credit_end = s.highest_sent.max(s.next_new).saturating_add(conn_credit);
    let limit = s.write_offset.min(s.max_data).min(credit_end);
    let ahead: u64 = s.sent_ahead.iter().map(|r| r.end.min(limit).saturating_sub(r.start)).sum();
    limit.saturating_sub(s.next_new).saturating_sub(ahead)
}

proptest! {
    /// The kept bytes sent ahead and the unsent bytes in parts equal a recount after any
    /// sequence of writes, sends in order and ahead, losses, acks and credit.
    #[test]
    fn unsent_parts_match_a_recount(ops in proptest::collection::vec((0u8..7, 0u64..3000, 1usize..1500), 1..120)) {
        let mut s = SendStream::new(20_000);
        let mut credit = 50_000u64;
        for (op, a, b) in ops {
            match op {
                0 => s.write(Bytes::from(vec![1u8; b])),
                1 => if let Some(c) = s.next_chunk(|_| b, credit) { credit -= c.grew },
                2 => if let Some(c) = s.next_chunk_ahead(a + 1, b, credit) { credit -= c.grew },
                // Losses and acks of what was sent.
                3 | 4 if s.highest_sent > 0 => {
                    let off = a % s.highest_sent;
                    let len = (b as u64).min(s.highest_sent - off);
                    if op == 3 { s.on_lost(off, len, false) } else { s.on_acked(off, len, false) }
                }
                3 | 4 => {}
                5 => s.max_data += a,
                _ => credit += a,
            }
            let ahead: u64 = s.sent_ahead.iter().map(|r| r.end - r.start).sum();
            prop_assert_eq!(s.ahead_bytes, ahead);
            for c in [0, 1, credit, a, u64::MAX] {
                prop_assert_eq!(s.unsent_bytes(c), unsent_recount(&s, c), "credit {}", c);
            }
        }
    }
}

#[test]
fn retransmits_only_what_is_unacked() {
    let mut s = SendStream::new(1000);
    s.write(Bytes::from_static(b"0123456789"));
    s.finish();
    let a = s.next_chunk(|_| 4, u64::MAX).unwrap();
    assert_eq!(a, Chunk { offset: 0, len: 4, fin: false, retransmit: false, grew: 4 });
    let b = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!(b, Chunk { offset: 4, len: 6, fin: true, retransmit: false, grew: 6 });
    assert!(s.next_chunk(|_| 100, u64::MAX).is_none());
    s.on_acked(2, 2, false);
    s.on_lost(0, 4, false);
    s.on_lost(4, 6, true);
    let r = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!(r, Chunk { offset: 0, len: 2, fin: false, retransmit: true, grew: 0 });
    let r = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!(r, Chunk { offset: 4, len: 6, fin: true, retransmit: true, grew: 0 });
    let mut out = Vec::new();
    s.copy_range(4, 6, &mut out);
    assert_eq!(out, b"456789");
    s.on_acked(0, 2, false);
    s.on_acked(4, 6, true);
    assert!(s.is_complete());
    assert_eq!(s.buffered(), 0);
}

/// Regression: an acknowledgement of bytes below the acknowledged prefix (a stranded packet
/// acknowledged after its bytes were resent and acknowledged) froze the prefix, the send
/// buffer never drained and the stream stalled (`braid sim --link 20mbit/10ms
/// --link 5mbit/40ms --cut 0@10s --restore 0@20s`: goodput fell to zero at 24 s).
#[test]
fn late_ack_below_prefix_does_not_freeze_it() {
    let mut s = SendStream::new(1000);
    s.write(Bytes::from_static(b"0123456789"));
    s.next_chunk(|_| 10, u64::MAX).unwrap();
    s.on_acked(0, 5, false);
    s.on_acked(0, 3, false); // late duplicate
    s.on_acked(5, 5, false);
    assert_eq!(s.buffered(), 0);
}

#[test]
fn sending_ahead_leaves_a_gap_filled_in_order() {
    let mut s = SendStream::new(1000);
    s.write(Bytes::from(vec![7u8; 100]));
    s.finish();
    // A slow path sends 10 bytes, 30 unsent bytes ahead.
    let a = s.next_chunk_ahead(30, 10, u64::MAX).unwrap();
    assert_eq!((a.offset, a.len, a.grew), (30, 10, 40));
    // Another one, 30 unsent bytes ahead, skips the range already sent.
    let b = s.next_chunk_ahead(30, 10, u64::MAX).unwrap();
    assert_eq!((b.offset, b.len, b.grew), (40, 10, 10));
    assert_eq!(s.unsent_bytes(u64::MAX), 80);
    // The fast path fills the gap in order, then jumps past the ranges sent ahead.
    let c = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!((c.offset, c.len, c.grew), (0, 30, 0));
    let d = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!((d.offset, d.len, d.fin, d.grew), (50, 50, true, 50));
    assert!(s.next_chunk(|_| 100, u64::MAX).is_none());
    assert_eq!(s.final_size(), 100);
    // Ahead chunks are acknowledged and lost like any other.
    s.on_lost(30, 10, false);
    let r = s.next_chunk(|_| 100, u64::MAX).unwrap();
    assert_eq!((r.offset, r.retransmit), (30, true));
}

#[test]
fn sending_ahead_respects_flow_control() {
    let mut s = SendStream::new(50);
    s.write(Bytes::from(vec![7u8; 100]));
    assert!(s.next_chunk_ahead(45, 10, u64::MAX).unwrap().len == 5);
    assert!(s.next_chunk_ahead(60, 10, u64::MAX).is_none());
    // Connection credit counts the highest offset, gap included.
    let mut s = SendStream::new(1000);
    s.write(Bytes::from(vec![7u8; 100]));
    assert_eq!(s.next_chunk_ahead(20, 10, 25).map(|c| c.len), Some(5));
}

#[test]
fn respects_flow_control() {
    let mut s = SendStream::new(5);
    s.write(Bytes::from_static(b"0123456789"));
    assert_eq!(s.next_chunk(|_| 100, u64::MAX).unwrap().len, 5);
    assert!(s.next_chunk(|_| 100, u64::MAX).is_none());
    s.max_data = 10;
    assert_eq!(s.next_chunk(|_| 100, 2).unwrap().len, 2);
}

/// A stream of `limit` bytes of credit with `bytes` written and `packets` chunks of 1000
/// bytes sent.
fn sent_in_packets(limit: u64, bytes: usize, packets: usize) -> SendStream {
    let mut s = SendStream::new(limit);
    s.write(Bytes::from(vec![7u8; bytes]));
    for _ in 0..packets {
        s.next_chunk(|_| 1000, u64::MAX).unwrap();
    }
    s
}

#[test]
fn a_full_buffer_held_by_its_head_stalls_and_its_holes_are_queued() {
    // Ten 1000-byte packets out; the first and the sixth ride a slow path, the rest are acked.
    let mut s = sent_in_packets(1 << 20, 10_000, 10);
    for k in [1u64, 2, 3, 4, 6, 7, 8, 9] {
        s.on_acked(k * 1000, 1000, false);
    }
    // Room for another write: not stalled (the application can go on).
    assert_eq!(s.stalled_head(u64::MAX, 1 << 20, 64 * 1024), None);
    // The buffer is full (cap 10 kB): the head stalls.
    assert_eq!(s.stalled_head(u64::MAX, 10_000, 64 * 1024), Some(0..1000));
    // Both holes below the highest acknowledged byte are queued, and only they.
    assert_eq!(s.reinject_holes(0, 64 * 1024), 2000);
    assert_eq!(
        s.next_chunk(|_| 5000, u64::MAX).map(|c| (c.offset, c.len, c.retransmit)),
        Some((0, 1000, true))
    );
    assert_eq!(
        s.next_chunk(|_| 5000, u64::MAX).map(|c| (c.offset, c.len, c.retransmit)),
        Some((5000, 1000, true))
    );
    // A head queued for retransmission is not a stall.
    s.on_lost(0, 1000, false);
    assert_eq!(s.stalled_head(u64::MAX, 10_000, 64 * 1024), None);
}

#[test]
fn reinjection_is_bounded_and_a_head_waiting_for_credit_stalls() {
    let mut s = sent_in_packets(4000, 10_000, 4);
    s.on_acked(3000, 1000, false);
    // The stream's limit (4000) stops it with data unsent: the head holds it.
    assert_eq!(s.stalled_head(u64::MAX, 1 << 20, 1500), Some(0..1500));
    assert_eq!(s.reinject_holes(0, 1500), 1500);
    // After a reset nothing stalls and nothing is queued.
    s.reset(1);
    assert_eq!(s.stalled_head(u64::MAX, 1 << 20, 1500), None);
    assert_eq!(s.reinject_holes(0, 1500), 0);
}

#[test]
fn a_head_is_held_once_the_peer_holds_the_budget_behind_it() {
    let mut s = sent_in_packets(1 << 20, 20_000, 20);
    // Nothing beyond the head acknowledged: nothing held.
    assert_eq!(s.held_head(3000, 64 * 1024), None);
    // One packet far ahead (EDPF sends a slow path's packets ahead): under the budget.
    s.on_acked(15_000, 1000, false);
    assert_eq!(s.held_head(3000, 64 * 1024), None);
    // Three packets held behind the two-packet head: its own hole, bounded by max_len.
    s.on_acked(2000, 1000, false);
    s.on_acked(3000, 1000, false);
    assert_eq!(s.held_head(3000, 64 * 1024), Some(0..2000));
    assert_eq!(s.held_head(3000, 1500), Some(0..1500));
    // Sending the hole again queues it alone, not the holes beyond it.
    assert_eq!(s.reinject_holes(1000, 2000), 0, "not the head any more");
    assert_eq!(s.reinject_holes(0, 2000), 2000);
    assert_eq!(
        s.next_chunk(|_| 5000, u64::MAX).map(|c| (c.offset, c.len, c.retransmit)),
        Some((0, 2000, true))
    );
    // The head arrived: the next hole is held behind one packet only.
    s.on_acked(0, 2000, false);
    assert_eq!(s.held_head(3000, 64 * 1024), None);
    s.reset(1);
    assert_eq!(s.held_head(0, 64 * 1024), None);
}
