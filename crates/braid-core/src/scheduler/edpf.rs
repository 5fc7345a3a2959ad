//! Earliest Delivery Path First (seed 004 §III-B, after Chebrolu & Rao): "it calculates how
//! long it takes from the sender to a receiver on each route, and it chooses the fastest path".
//! For path j the packet would arrive at
//!
//! ```text
//! d_j = max(now, A_j) + D_j + L/B_j
//! ```
//!
//! with A_j the time path j can take it (its pacer and window, behind what is queued on it),
//! D_j its one-way delay, L the packet size and B_j its rate ([`PathView::arrival`]).
//!
//! In the paper a packet goes into the chosen path's queue and the path's A_j moves on. braid
//! builds packets only when a path can send, so it evaluates the same schedule lazily: when
//! the earliest path is busy but a slower path j is free now, EDPF would have given j the first
//! packet whose earliest arrival is on j — the packet after the m that the other paths deliver
//! before j's would arrive. j therefore sends the new stream data m packets ahead
//! ([`Decision::Ahead`]) and the skipped packets leave on the faster paths, arriving first:
//! packets reach the receiver nearly in order (seed 004 Fig. 15: "the maximum number of packets
//! stored in the buffer of receiver Middleware is only three").
//!
//! Queued retransmissions are scheduled the same way, ahead of new data: a free slower path
//! takes one when the busy earliest path cannot deliver all of them before it would (its
//! schedule reaches past the retransmission queue, it sends new data ahead instead). Control
//! frames alone wait for their earliest path; a datagram is committed to its earliest path's
//! queue (EDPF over per-path queues, literally).
//!
//! A path counts as free only while what it has in flight stays within 1.5 bandwidth-delay
//! products plus three packets (room for a delivery-rate controller to probe at 1.25). Holding a
//! packet at the sender instead of in the bottleneck queue does not delay it (the queue is
//! first-in first-out either way), but it keeps the plan short: the further ahead a slow path
//! must be scheduled, the more a change on a fast path (a loss, a window probing its minimum
//! RTT) reorders what is already on the way.

use super::{eligible_for, wait_for, Candidates, Decision, PacketInfo, PathView, Scheduler};
use crate::time::Timestamp;
use smallvec::SmallVec;

/// The most packets a free path may send ahead (bounds the receiver's reorder buffer if an
/// estimate is badly wrong).
pub const MAX_AHEAD: u32 = 20_000;

/// The EDPF scheduler.
#[derive(Debug, Default, Clone)]
pub struct Edpf;

/// Share of a bandwidth-delay product a path may hold in flight beyond one, for EDPF.
pub const QUEUE_ALLOWANCE: f64 = 0.5;

/// True when `p` can take a packet of `bytes` now: its pacer and window allow and it holds no
/// more than its bandwidth-delay product plus the allowance in flight.
///
/// The product uses the path's base RTT ([`PathView::min_rtt`], [`crate::path::base_rtt`]):
/// the minimum RTT (RFC 9002) as its floor ([`crate::path::rtt::RttEstimator::floor`]), raised
/// after a lasting rise of more than the path's own packets could queue. With the lifetime
/// minimum alone, a path whose base delay rose above 1.5 × it for good delivered less than its
/// rate, measured that, and ended at about three packets per round trip (`braid sim --link
/// 20mbit/10ms/delay=10ms@0s,40ms@10s --scheduler edpf`: 0.36 of the link, now 0.90, MinRTT
/// 0.95). A plain windowed minimum (BBR's) fixed
/// that run but raised EDPF's reorder on seed 004's mixes (Table III 6 → 10–27 packets), where
/// at 200 kbit/s one queued packet is worth more than the propagation delay.
pub fn free(p: &PathView, now: Timestamp, bytes: u64) -> bool {
    let pipe = p.rate * p.min_rtt.as_secs_f64();
    let cap = (1.0 + QUEUE_ALLOWANCE) * pipe + 3.0 * p.mtu as f64;
    p.ready(now) && (p.in_flight + bytes) as f64 <= cap
}

/// When EDPF plans a packet of `bytes` handed to `p` now to arrive: after its departure, the
/// measured one-way delay ([`PathView::measured_delay`]), its transmission and a margin of
/// one full packet's transmission at the path's rate; until the delay is measured, the plain
/// [`PathView::arrival`].
///
/// The margin: lateness and earliness do not cost the same here. A packet that arrives after
/// its estimate makes the receiver hold every packet the faster paths deliver meanwhile, one
/// that arrives early holds only itself. The 90-mix sweep kept 62 mixes within 10 packets
/// without the margin and 72 with it (held-out mixes: 51 and 61) at the same efficiency
/// (docs/benchmarks.md, "EDPF from one-way delays"). The plain estimate needs none: it holds
/// a transmission twice already.
pub fn planned_arrival(p: &PathView, now: Timestamp, bytes: u64) -> Timestamp {
    match p.measured_delay {
        Some(d) => p.departure(now, bytes) + d + p.serialization(bytes) + p.serialization(p.mtu as u64),
        None => p.arrival(now, bytes),
    }
}

/// How many packets of `bytes` path `p` delivers, if given packets back to back from now,
/// that arrive before `deadline`.
pub fn delivered_before(p: &PathView, now: Timestamp, bytes: u64, deadline: Timestamp) -> u64 {
    let first = planned_arrival(p, now, bytes);
    if first >= deadline {
        return 0;
    }
    let each = p.serialization(bytes).as_secs_f64().max(1e-9);
    // Arrivals first + k·each for k = 0, 1, … that are before the deadline.
    ((deadline - first).as_secs_f64() / each - 1e-9).ceil().max(1.0) as u64
}

/// The most times the other paths' combined rate may exceed a path's own for it to carry
/// stream data (see [`keep_in_order_capable`]).
pub const MAX_RATE_RATIO: f64 = 100.0;

/// Leaves out of `paths` those too slow to carry a stream's data in order: a path whose rate
/// is below 1/[`MAX_RATE_RATIO`] of the others' combined rate. (The fastest path always
/// stays.)
///
/// Why: the receiver holds, behind a slow path's packet, what the other paths deliver while
/// the packet's arrival estimate is wrong. That error is a fraction of the slow packet's
/// transmission time L/B_j (its pacing phase, the queue seen through a window of a few
/// packets), so the hold is that fraction of the rate ratio in packets — seed 004 Figs. 7–10
/// find the receiver's buffer proportional to the bandwidth ratio. In braid's sweep the error
/// was 3–10 % of L/B_j (100 Mbit/s beside 50 kbit/s held 120 packets, a ratio of 2000; beside
/// 20 kbit/s, thousands), so a ratio of at most 100 keeps it to about 10 packets, and leaving
/// such a path out costs under 1 % of the capacity. It still carries datagrams (committed to
/// a path's queue, they do not hold a stream), its probes, and everything when it is the only
/// path left. Tighter bounds (10, 30) left out paths of equal rate whose capacity estimate
/// lagged at the start, and lost efficiency (docs/experiments.md, "EDPF reorder on any mix").
///
/// A path's own rate here is the larger of its estimate and its recent packet pair
/// ([`PathView::pair`]). A path left out is fed nothing but probes, so its estimate rests on
/// samples of one or two packets a round trip and cannot rise on its own; the pair measures
/// the bottleneck directly. On the estimate alone, a 100 Mbit/s, 150 ms path beside two 100
/// Mbit/s, 20 ms ones read 0.1–0.8 Mbit/s and carried nothing for 6.75 s, then ramped up after
/// the warm-up and held 937 packets (efficiency 0.855 over 30 s); with the pair it ramps from
/// 1 s (32 packets, 0.915).
pub fn keep_in_order_capable(paths: &mut Candidates<'_>) {
    let total: f64 = paths.iter().map(|p| p.rate).sum();
    let fastest = paths.iter().map(|p| p.rate).fold(0.0, f64::max);
    paths.retain(|p| {
        let own = p.rate.max(p.pair.unwrap_or(0.0));
        p.rate >= fastest || total - p.rate <= MAX_RATE_RATIO * own
    });
}

impl Edpf {
    /// The EDPF decision for `packet`, considering `paths` (already filtered).
    pub fn choose(now: Timestamp, paths: &[&PathView], packet: &PacketInfo) -> Decision {
        let bytes = packet.bytes as u64;
        let Some(best) = paths.iter().min_by_key(|p| (planned_arrival(p, now, bytes), p.id)) else {
            return Decision::Wait(None);
        };
        if free(best, now, bytes) || packet.datagram {
            return Decision::Send(best.id);
        }
        // Queued retransmissions come before any new data. Control frames alone wait.
        let rtx = u64::from(if packet.retransmit { packet.retransmit_packets } else { 0 });
        if rtx > 0 || (!packet.retransmit && packet.ahead_packets > 0) {
            let mut open: SmallVec<[&&PathView; 8]> = paths.iter().filter(|p| free(p, now, bytes)).collect();
            open.sort_by_key(|p| (planned_arrival(p, now, bytes), p.id));
            for j in open {
                let arrives = planned_arrival(j, now, bytes);
                let m: u64 = paths
                    .iter()
                    .filter(|p| p.id != j.id)
                    .map(|p| delivered_before(p, now, bytes, arrives))
                    .sum();
                if m < rtx {
                    // The m+1-th queued retransmission arrives first on j: j takes one now (the
                    // head, rather than skipping into the retransmission queue). Without this a
                    // burst of losses on a 100 Mbit/s, 150 ms path was resent one by one over a
                    // 2 Mbit/s, 5 ms path for ten seconds while the fast path stood idle.
                    return Decision::Send(j.id);
                }
                let skip = m - rtx;
                if skip > 0 && skip <= u64::from(packet.ahead_packets.min(MAX_AHEAD)) {
                    return Decision::Ahead(j.id, skip as u32);
                }
            }
        }
        // The wake-up is the next pacer release. A path that could send now but is over its
        // in-flight bound frees up only as ACKs come in, and they wake the session anyway;
        // counting its ready time (now) set no timer at all, and a fast path waiting for its
        // pacer was then served only when ACKs arrived — at the rate they acknowledged, so
        // BBR's probing gain never reached its delivery rate and its estimate stayed where it
        // was (lab/slow.toml downloads at 0.7 Mbit/s beside a 50 kbit/s path over its bound).
        wait_for(paths.iter().copied().filter(|p| !free(p, now, bytes) && !p.ready(now)))
    }
}

impl Scheduler for Edpf {
    fn name(&self) -> &'static str {
        "edpf"
    }

    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision {
        let mut candidates: Candidates<'_> = eligible_for(paths, packet).collect();
        if !packet.datagram {
            keep_in_order_capable(&mut candidates);
        }
        if candidates.is_empty() {
            return wait_for(eligible_for(paths, packet));
        }
        Edpf::choose(now, &candidates, packet)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::test_util::{datagram, link, ms, packet};
    use std::time::Duration;

    #[test]
    fn earliest_arrival_wins_even_if_it_must_wait() {
        // 8 Mbit/s at 10 ms and 2 Mbit/s at 40 ms, 1000-byte packets: 11 ms against 44 ms.
        let mut s = Edpf;
        let mut paths = [link(0, 8.0, 10), link(1, 2.0, 40)];
        let p = packet();
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Send(0));
        // The fast path is paced for 2 ms: still earlier (13.2 ms); the stream waits for it.
        paths[0].ready_at = Some(ms(2));
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Wait(Some(ms(2))));
        // A datagram is committed to the fast path's queue.
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Send(0));
    }

    #[test]
    fn measured_delays_replace_the_plain_estimate_with_a_late_margin() {
        let mut s = Edpf;
        // Plain estimates: 10 ms and 12 ms one way, 8 Mbit/s each (1000 bytes: 1 ms).
        let mut paths = [link(0, 8.0, 10), link(1, 8.0, 12)];
        let p = packet();
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Send(0));
        assert_eq!(planned_arrival(&paths[0], ms(0), 1000), ms(11), "plain: no margin");
        // Measured, path 0's forward leg is 20 ms: path 1 is earlier.
        paths[0].measured_delay = Some(Duration::from_millis(20));
        paths[1].measured_delay = Some(Duration::from_millis(12));
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Send(1));
        // 12 ms + 1 ms on the wire + one full packet's transmission (the path's MTU).
        let mtu = paths[1].serialization(paths[1].mtu as u64);
        assert_eq!(planned_arrival(&paths[1], ms(0), 1000), ms(13) + mtu);
    }

    #[test]
    fn a_free_slow_path_sends_ahead_by_what_the_fast_path_delivers_first() {
        let mut s = Edpf;
        let mut paths = [link(0, 8.0, 10), link(1, 2.0, 40)];
        paths[0].ready_at = Some(ms(1));
        let p = crate::scheduler::PacketInfo { bytes: 1000, ahead_packets: 100, ..packet() };
        // Path 1 would deliver at 0 + 40 + 4 = 44 ms. Path 0 delivers its k-th packet at
        // 1 + 10 + k ms: packets at 12..=43 ms arrive first, 32 of them.
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Ahead(1, 32));
        // Not enough data to reach that far: wait for the fast path.
        let short = crate::scheduler::PacketInfo { ahead_packets: 10, ..p.clone() };
        assert_eq!(s.select(ms(0), &paths, &short), Decision::Wait(Some(ms(1))));
        // Control frames alone never skip.
        let control = crate::scheduler::PacketInfo { retransmit: true, ..p.clone() };
        assert_eq!(s.select(ms(0), &paths, &control), Decision::Wait(Some(ms(1))));
        // One queued retransmission: the fast path delivers it among its 32; the slow path
        // sends new data 31 packets ahead.
        let one = crate::scheduler::PacketInfo { retransmit: true, retransmit_packets: 1, ..p.clone() };
        assert_eq!(s.select(ms(0), &paths, &one), Decision::Ahead(1, 31));
        // More queued than the fast path delivers before the slow path's arrival: the slow
        // path takes a retransmission now instead of standing idle.
        let many = crate::scheduler::PacketInfo { retransmit: true, retransmit_packets: 40, ..p };
        assert_eq!(s.select(ms(0), &paths, &many), Decision::Send(1));
    }

    #[test]
    fn a_path_over_a_hundred_times_slower_carries_no_stream_data() {
        let mut s = Edpf;
        // 100 Mbit/s and 50 kbit/s, both 5 ms; the fast path is busy for 1 ms.
        let mut paths = [link(0, 100.0, 5), link(1, 0.05, 5)];
        paths[0].ready_at = Some(ms(1));
        let p = crate::scheduler::PacketInfo { ahead_packets: 20_000, ..packet() };
        // The stream waits for the fast path rather than send ahead on the slow one.
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Wait(Some(ms(1))));
        // A datagram still goes where it arrives first (197 ms against 305 ms).
        paths[0].ready_at = Some(ms(300));
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Send(1));
        // At 1 Mbit/s (a ratio of 100) the slow path takes stream data ahead.
        paths[0].ready_at = Some(ms(1));
        paths[1] = link(1, 1.0, 5);
        assert!(matches!(s.select(ms(0), &paths, &p), Decision::Ahead(1, _)));
        // Alone, the slow path carries everything.
        paths[0].usable = false;
        paths[1] = link(1, 0.05, 5);
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Send(1));
    }

    #[test]
    fn a_path_whose_packet_pair_reads_fast_is_not_left_out() {
        let mut s = Edpf;
        // The estimate says 50 kbit/s (what a path the scheduler never fed delivered), the
        // packet pair 100 Mbit/s: the path takes stream data ahead of the busy fast path.
        let mut paths = [link(0, 100.0, 5), link(1, 0.05, 5)];
        paths[0].ready_at = Some(ms(1));
        paths[1].pair = Some(100e6 / 8.0);
        let p = crate::scheduler::PacketInfo { ahead_packets: 20_000, ..packet() };
        assert!(matches!(s.select(ms(0), &paths, &p), Decision::Ahead(1, _)));
        // A pair that reads as slow as the estimate leaves it out, as before.
        paths[1].pair = Some(50e3 / 8.0);
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Wait(Some(ms(1))));
    }

    #[test]
    fn a_wait_is_for_the_pacer_not_for_a_path_held_at_its_bound() {
        let mut s = Edpf;
        // The fast path waits 2 ms for its pacer; the slow one could send now but holds more
        // than its bound in flight (50 kbit/s at 10 ms: 3 packets and a little).
        let mut paths = [link(0, 8.0, 10), link(1, 0.4, 5)];
        paths[0].ready_at = Some(ms(2));
        paths[1].in_flight = 5000;
        let p = crate::scheduler::PacketInfo { ahead_packets: 0, ..packet() };
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Wait(Some(ms(2))));
        // With nothing but a held path, no timer: its ACKs wake the session.
        paths[0].usable = false;
        assert_eq!(s.select(ms(0), &paths, &p), Decision::Wait(None));
    }

    #[test]
    fn queued_bytes_push_the_arrival_back() {
        let mut s = Edpf;
        let mut paths = [link(0, 8.0, 10), link(1, 8.0, 12)];
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Send(0));
        paths[0].queued_bytes = 3000; // 3 ms of queue: 14 ms against 13 ms
        assert_eq!(s.select(ms(0), &paths, &datagram(0)), Decision::Send(1));
    }
}
