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
use std::time::Duration;

/// Capacity a path needs, per packet per second that another path receives, to carry that
/// path's ACKs: an ACK-only packet of about 80 bytes on the wire per two packets received, at
/// most a quarter of the carrier. A 20 kbit/s path that carried the ACKs of a 100 Mbit/s one
/// queued them for seconds, and the fast path's sender crawled at 1.3 Mbit/s (simulator).
const ACK_CARRIER_BYTES_PER_PACKET: f64 = 160.0;

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
    /// that is known to be answering, among those that carry data (a backup or metered path
    /// carries ACKs only when no other can) and whose capacity carries the ACK load with room
    /// to spare ([`ACK_CARRIER_BYTES_PER_PACKET`]); when none has, the fastest answering path
    /// all the same (never a suspect path's own dead link). None with no active path.
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
        let rank = |(_, p): &(usize, &Path)| (p.status() != PathStatusKind::Active, p.rtt.smoothed(), p.id);
        let active = || paths.iter().enumerate().filter(|(_, p)| p.state == PathState::Active);
        let bears = |(i, p): &(usize, &Path)| *i == for_idx || p.usable_capacity(now) >= need;
        active().filter(bears).min_by_key(rank).or_else(|| active().min_by_key(rank)).map(|(i, _)| i)
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
