//! The ACK-carrier policy: on which path a path's due ACK leaves. With `AckPath::SamePath`
//! every path carries its own; with `AckPath::Fastest` the fastest answering path that can
//! bear the load carries them all (seed 003's offloading-ACK, generalised); with
//! `AckPath::Secondary` seed 003's own Offloader decides (see `ack_offload`), spending the
//! credit this type owns.

use super::ack_offload::{self, Credit, OffloadStats, Route, CAPACITY_SHARE};
use super::Session;
use crate::config::AckPath;
use crate::path::{Path, PathState};
use crate::time::Timestamp;
use crate::wire::PathStatusKind;
use smallvec::SmallVec;
use std::time::Duration;

/// Capacity a path needs, per packet per second that another path receives, to carry that
/// path's ACKs: an ACK-only packet of about 80 bytes on the wire per two packets received, at
/// most a quarter of the carrier. A 20 kbit/s path that carried the ACKs of a 100 Mbit/s one
/// queued them for seconds, and the fast path's sender crawled at 1.3 Mbit/s (simulator).
const ACK_CARRIER_BYTES_PER_PACKET: f64 = 160.0;

/// A carrier's rank, lowest first: not active (a secondary path), one-way delay, path id.
type Rank = (bool, Duration, u8);

/// How often a path that only carries ACKs sends an ack-eliciting one.
pub(super) fn liveness(path: &Path) -> Duration {
    path.rtt.smoothed().max(crate::timing::LIVENESS_MIN)
}

/// The ACK-carrier policy and the Offloader's credit on the secondary path.
#[derive(Debug, Default)]
pub(super) struct AckCarrier {
    credit: Credit,
}

impl AckCarrier {
    /// The path that carries `paths[for_idx]`'s due ACK, and whether it carries that ACK alone.
    pub(super) fn carrier(
        &self,
        mode: AckPath,
        paths: &[Path],
        for_idx: usize,
        now: Timestamp,
    ) -> (usize, bool) {
        let own = &paths[for_idx];
        if mode == AckPath::SamePath && own.state != PathState::Closed {
            return (for_idx, false);
        }
        // A path whose own ACKs ride elsewhere still gets one on itself every liveness
        // interval: were the carrier to die, its ACKs would stop too and the path
        // would be suspected in sympathy (seen in the lab when the fast path was cut). That
        // packet carries a copy of this path's ACK only, which stays due for the fast carrier:
        // RTT samples and ACK clocking keep to the fast path while it lives (sending the ACK
        // itself on the slow path raised EDPF's reorder maximum from 6 to 17 packets).
        if own.state == PathState::Active && own.last_sent.is_none_or(|t| now - t >= liveness(own)) {
            return (for_idx, true);
        }
        (self.offload_carrier(mode, paths, for_idx, now).unwrap_or(for_idx), false)
    }

    /// Offloading-ACK (seed 003): the path that carries `for_idx`'s ACKs — the fastest path
    /// (shortest one-way delay toward the peer) that is known to be answering, among those
    /// that carry data (a backup or metered path carries ACKs only when no other can) and whose
    /// capacity carries the ACK load with room to spare ([`ACK_CARRIER_BYTES_PER_PACKET`]);
    /// when none has, the fastest answering path all the same (never a suspect path's own dead
    /// link). None with no active path.
    pub(super) fn offload_carrier(
        &self,
        mode: AckPath,
        paths: &[Path],
        for_idx: usize,
        now: Timestamp,
    ) -> Option<usize> {
        let open = paths[for_idx].state != PathState::Closed;
        if mode == AckPath::Secondary && open {
            // Seed 003's own rule (see `ack_offload`); a dropped ACK is never written.
            return match self.route(paths, for_idx, now) {
                Route::Secondary(j) => Some(j),
                _ => Some(for_idx),
            };
        }
        if mode == AckPath::SamePath && open {
            return Some(for_idx);
        }
        let need = paths[for_idx].received.packet_rate(now) * ACK_CARRIER_BYTES_PER_PACKET;
        // Ranked by the one-way delay toward the peer, which is the way the ACKs go: the
        // forward leg measured with the peer's ACK timestamps (`path::one_way`), its packet's
        // transmission taken out at the path's capacity estimate, plus what stands queued
        // beyond the pipe; half the smoothed RTT for a path whose leg is not measured yet.
        // Not the RTT: that holds the return route the *peer* chose for this side's own ACKs
        // (seed 004 Figs. 16–18 with BBR: 8 → 26 packets when that moved). Known weakness: a
        // path that carries only ACKs has a low estimate, so more comes out than was on the
        // wire; keeping the transmission in, or ranking by the legs only once every path has
        // one, lost more elsewhere (docs/experiments.md, "ACK carriers and deadlines by one-way
        // delay").
        let active = || paths.iter().enumerate().filter(|(_, p)| p.state == PathState::Active);
        if active().nth(1).is_none() {
            // One active path (or none): no ranking to make.
            return active().next().map(|(i, _)| i);
        }
        let offset = Path::clock_offset(paths, now);
        // (index, rank, bears the load) per path, worked out once per path.
        let ranked: SmallVec<[(usize, Rank, bool); 8]> = active()
            .map(|(i, p)| {
                let rate = p.usable_capacity(now);
                let forward = offset.and_then(|o| p.one_way.forward_us(o, rate)).map(Duration::from_micros);
                let standing = p.outstanding() as f64 / rate.max(1.0) - p.rtt.floor().as_secs_f64();
                let delay =
                    forward.unwrap_or(p.rtt.smoothed() / 2) + Duration::from_secs_f64(standing.max(0.0));
                (i, (p.status() != PathStatusKind::Active, delay, p.id), i == for_idx || rate >= need)
            })
            .collect();
        let best = |bearing: bool| {
            ranked.iter().filter(|(_, _, bears)| *bears || !bearing).min_by_key(|(_, rank, _)| *rank)
        };
        best(true).or_else(|| best(false)).map(|(i, _, _)| *i)
    }

    /// The primary path's secondary and the rate (bytes/s) its credit refills at; None when
    /// `i` is not the primary (the active path receiving the most packets) or no other path
    /// is active.
    fn secondary(paths: &[Path], i: usize, now: Timestamp) -> Option<(usize, f64)> {
        let active = |p: &Path| p.state == PathState::Active;
        let mine = paths[i].received.packet_rate(now);
        if !active(&paths[i])
            || paths
                .iter()
                .enumerate()
                .any(|(k, p)| k != i && active(p) && p.received.packet_rate(now) > mine)
        {
            return None;
        }
        let rank = |p: &Path| (p.status() == PathStatusKind::Active, p.usable_capacity(now) as u64);
        let (j, p) = paths
            .iter()
            .enumerate()
            .filter(|(k, p)| *k != i && active(p) && p.status() != PathStatusKind::Standby)
            .max_by_key(|(_, p)| rank(p))?;
        Some((j, p.usable_capacity(now) * CAPACITY_SHARE))
    }

    /// Packets one round trip brings on path `p`: what the receiver can see of the sender's
    /// window.
    fn packets_per_round_trip(p: &Path, now: Timestamp) -> f64 {
        if !p.rtt.has_sample() {
            return 0.0;
        }
        p.received.packet_rate(now) * p.rtt.smoothed().as_secs_f64()
    }

    /// Where path `i`'s due ACK goes (`AckPath::Secondary`).
    fn route(&self, paths: &[Path], i: usize, now: Timestamp) -> Route {
        let Some((j, rate)) = Self::secondary(paths, i, now) else {
            return Route::Default;
        };
        let credit = self.credit.covers(now, rate);
        let p = &paths[i];
        ack_offload::route(Self::packets_per_round_trip(p, now), Some(j), credit, p.received.replaceable(now))
    }

    /// Drops the due ACKs the Offloader can neither place on the secondary nor needs to send
    /// (replaceable ones), before the next ACK packet is built.
    pub(super) fn drop_replaceable_acks(&mut self, paths: &mut [Path], now: Timestamp) {
        for i in 0..paths.len() {
            if paths[i].received.ack_due(now) && self.route(paths, i, now) == Route::Drop {
                paths[i].received.on_ack_replaced();
                self.credit.on_dropped();
            }
        }
    }

    /// An ACK-only packet of `bytes` carrying path `i`'s ACK left on `carrier`: it spends the
    /// credit when `carrier` is `i`'s secondary.
    pub(super) fn on_ack_packet_sent(
        &mut self,
        paths: &[Path],
        i: usize,
        carrier: usize,
        bytes: usize,
        now: Timestamp,
    ) {
        if let Some((_, rate)) = Self::secondary(paths, i, now).filter(|(j, _)| *j == carrier && *j != i) {
            self.credit.spend(now, rate, bytes);
        }
    }
}

impl Session {
    /// Seed 003's Offloader counters: ACK packets offloaded to the secondary path and
    /// replaceable ACKs dropped (zero unless `AckPath::Secondary`).
    pub fn ack_offload_stats(&self) -> OffloadStats {
        self.ack_carrier.credit.stats()
    }
}
