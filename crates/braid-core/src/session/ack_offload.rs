//! Offloading-ACK as seed 003 defines it (§3.1 "Selective Offloading", §4.2 ACK Marker,
//! Offloader and Interface Characterizer): `AckPath::Secondary`.
//!
//! On Wi-Fi a small ACK costs nearly the airtime of a data packet, and the ACKs of a download
//! contend with its data for the one channel ("TCP self contention"). The receiver therefore
//! sends the ACKs of the primary path — the one receiving the most packets — on a secondary
//! path, with the paper's two safeguards and its drop rule:
//!
//! (a) "offloading-ACK is performed only when the congestion window is large": seed 003 uses
//!     ssthresh, 20 segments. The receiver cannot read the sender's window; it reads what one
//!     round trip brings on the primary: packet rate × RTT ≥ 20 packets.
//! (b) "offloading-ACK is performed only to that fraction of ACKs that are indeed sustainable
//!     by the low-bandwidth interface. The remaining ACKs are sent as-is through the default
//!     interface": ACK packets on the secondary spend a credit that refills at a share of its
//!     capacity estimate (the Interface Characterizer's remaining uplink capacity).
//! (c) "If the 3G interface doesn't have enough uplink capacity for offloading, Offloader can
//!     discard replaceable ACKs": an ACK that only moves the cumulative point
//!     (`Received::replaceable`) is dropped when the credit is short, and the next one
//!     supersedes it (never later than `max_ack_delay`); other ACKs go on the primary.
//!
//! The paper also prefers offloading the ACKs at the start of a window; braid's credit takes
//! them in arrival order.

use crate::time::Timestamp;

/// Seed 003 §3.1: "A simple heuristic we use for the offload-ACK threshold is the ssthresh
/// value [...]. The value is 20 segments in our prototyping."
pub const WINDOW_GATE_PACKETS: f64 = 20.0;
/// Share of the secondary's capacity estimate its offloaded ACKs may take; the rest is left
/// to the secondary's own traffic.
pub(super) const CAPACITY_SHARE: f64 = 0.5;
/// What one ACK-only packet costs the secondary on the wire: IP and UDP headers (28), the
/// packet header and AEAD tag, one ACK frame.
pub const ACK_PACKET_BYTES: f64 = 90.0;
/// Credit banked at most: a few ACKs, for jitter in their spacing.
const MAX_CREDIT: f64 = 4.0 * ACK_PACKET_BYTES;

/// Where the Offloader puts a due ACK of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Route {
    /// On this secondary path (its index).
    Secondary(usize),
    /// On the default path: the path the ACK belongs to.
    Default,
    /// Nowhere: a newer ACK of the same path supersedes it.
    Drop,
}

/// Where a due ACK goes, from what the Offloader knows: packets a round trip brings on its
/// path (`window`, 0 when the path is not the primary), the secondary path if any, whether
/// the secondary's credit pays for one more ACK packet, and whether the ACK is replaceable.
pub fn route(window: f64, secondary: Option<usize>, credit: bool, replaceable: bool) -> Route {
    match secondary {
        Some(j) if window >= WINDOW_GATE_PACKETS => {
            if credit {
                Route::Secondary(j)
            } else if replaceable {
                Route::Drop
            } else {
                Route::Default
            }
        }
        _ => Route::Default,
    }
}

/// The Offloader's credit on the secondary path (bytes it may still send there), refilled at
/// `rate` bytes a second.
#[derive(Debug, Default)]
pub struct Credit {
    bytes: f64,
    refilled: Option<Timestamp>,
    stats: OffloadStats,
}

/// What the Offloader did over the session (`AckPath::Secondary`): shown by `braid sim` and in
/// the daemon's status, so that a user sees whether the secondary carried the ACKs or was too
/// short for them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OffloadStats {
    /// ACK packets sent on the secondary path.
    pub offloaded: u64,
    /// Replaceable ACKs dropped because the secondary's credit was short (rule (c)).
    pub dropped: u64,
}

impl Credit {
    fn available(&self, now: Timestamp, rate: f64) -> f64 {
        let since = self.refilled.map_or(MAX_CREDIT, |t| rate * now.saturating_since(t).as_secs_f64());
        (self.bytes + since).min(MAX_CREDIT)
    }

    /// True when one more ACK packet fits.
    pub fn covers(&self, now: Timestamp, rate: f64) -> bool {
        self.available(now, rate) >= ACK_PACKET_BYTES
    }

    /// An ACK packet of `bytes` (UDP payload) left on the secondary.
    pub fn spend(&mut self, now: Timestamp, rate: f64, bytes: usize) {
        let wire = bytes as f64 + 28.0;
        self.bytes = self.available(now, rate) - wire;
        self.refilled = Some(now);
        self.stats.offloaded += 1;
    }

    /// A replaceable ACK was dropped.
    pub fn on_dropped(&mut self) {
        self.stats.dropped += 1;
    }

    /// The counters so far.
    pub fn stats(&self) -> OffloadStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn routes_by_window_credit_and_replaceability() {
        // (a) a small window keeps the ACK on its own path, whatever else holds.
        assert_eq!(route(19.0, Some(1), true, true), Route::Default);
        assert_eq!(route(19.0, Some(1), false, true), Route::Default);
        // A large window offloads while the credit lasts.
        assert_eq!(route(20.0, Some(1), true, false), Route::Secondary(1));
        // (c) short of credit: replaceable ACKs are dropped, the others stay on the primary.
        assert_eq!(route(40.0, Some(1), false, true), Route::Drop);
        assert_eq!(route(40.0, Some(1), false, false), Route::Default);
        assert_eq!(route(40.0, None, true, true), Route::Default);
    }

    #[test]
    fn credit_sustains_the_share_of_capacity() {
        // (b) at 9000 bytes/s the credit pays for 90-byte packets (118 on the wire) about 76
        // times a second, whatever the ACKs offered.
        let t0 = Timestamp::from_duration(Duration::from_secs(1));
        let mut c = Credit::default();
        let (mut sent, mut offered) = (0, 0);
        for k in 0..10_000u64 {
            let now = t0 + Duration::from_micros(k * 1000);
            offered += 1;
            if c.covers(now, 9000.0) {
                c.spend(now, 9000.0, 90);
                sent += 1;
            }
        }
        assert_eq!(offered, 10_000);
        assert!((755..=770).contains(&sent), "{sent}");
        assert_eq!(c.stats(), OffloadStats { offloaded: sent, dropped: 0 });
    }
}
