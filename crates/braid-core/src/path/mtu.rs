//! Path MTU: black-hole detection and an upward search (RFC 8899 DPLPMTUD, reduced).
//!
//! A path starts at the configured maximum datagram size (1452 bytes of UDP payload fit
//! every common link), so nothing is spent on discovery where nothing is wrong. Where a hop
//! carries less — a tunnel or PPPoE link whose ICMP "fragmentation needed" never comes back —
//! full-size packets vanish while small ones (ACKs, probes, the 1200-byte validation) pass.
//! RFC 8899 §4.3 calls this a black hole: when [`BLACK_HOLE_LOSSES`] ack-eliciting packets
//! larger than anything this path has delivered are lost in a row, the path falls back to
//! the largest size it has delivered, at least [`BASE`] (RFC 8899's BASE_PLPMTU; QUIC's
//! minimum, which path validation proved), and searches upward: one padded probe at a time,
//! binary search between what works and the maximum, a size given up after [`PROBE_TRIES`]
//! losses (§5.1.3 MAX_PROBES). Probes are outside congestion control and loss statistics
//! (§4.4: a lost probe is not congestion). A search that ended below the maximum is tried
//! again after [`RAISE_INTERVAL`] (§5.1.1 PMTU_RAISE_TIMER), as routes change.

use crate::time::Timestamp;
use crate::wire::MIN_DATAGRAM;

/// The size every validated path carries (UDP payload bytes).
pub const BASE: usize = MIN_DATAGRAM;
/// Consecutive losses of never-delivered sizes that declare a black hole.
pub const BLACK_HOLE_LOSSES: u32 = 3;
/// Losses of one probe size before the search gives it up.
pub const PROBE_TRIES: u32 = 2;
/// The search stops when what works and what failed are closer than this.
pub const SEARCH_STEP: usize = 16;
pub use crate::timing::RAISE_INTERVAL;

/// Path MTU state of one path.
#[derive(Debug, Clone)]
pub struct MtuDiscovery {
    /// The configured maximum (UDP payload bytes).
    max: usize,
    /// Largest UDP payload this path has delivered (acknowledged); 0 before any.
    delivered: usize,
    /// Consecutive losses of packets larger than `delivered`.
    big_losses: u32,
    search: Option<Search>,
    /// A search ended below the maximum at this size; searched again at `raise_at`.
    settled: Option<(usize, Timestamp)>,
    /// Black holes detected.
    pub black_holes: u32,
}

/// A binary search for the largest size that passes.
#[derive(Debug, Clone)]
struct Search {
    /// Largest size known to pass.
    lo: usize,
    /// Smallest size known to fail, minus one.
    hi: usize,
    /// Losses of the size under probe.
    tries: u32,
    /// A probe of this size is out.
    outstanding: bool,
}

impl MtuDiscovery {
    /// A path that starts at `max` bytes of UDP payload.
    pub fn new(max: usize) -> Self {
        MtuDiscovery { max, delivered: 0, big_losses: 0, search: None, settled: None, black_holes: 0 }
    }

    /// Size of the next probe to send, if one is due at `now`.
    pub fn probe_due(&mut self, now: Timestamp) -> Option<usize> {
        if let Some((size, at)) = self.settled.filter(|(_, at)| now >= *at) {
            self.settled = None;
            self.search = Some(Search { lo: size, hi: self.max, tries: 0, outstanding: false });
            tracing::trace!(size, ?at, "path MTU: searching again");
        }
        let s = self.search.as_ref().filter(|s| !s.outstanding && s.hi >= s.lo + SEARCH_STEP)?;
        Some((s.lo + s.hi).div_ceil(2))
    }

    /// Ends the search if it has converged; a size below the maximum is searched again later.
    fn end_search_if_done(&mut self, now: Timestamp) {
        if let Some(s) = self.search.as_ref().filter(|s| s.hi < s.lo + SEARCH_STEP) {
            if s.lo < self.max {
                self.settled = Some((s.lo, now + RAISE_INTERVAL));
            }
            self.search = None;
        }
    }

    /// A probe of `probe_due()`'s size left.
    pub fn on_probe_sent(&mut self) {
        if let Some(s) = self.search.as_mut() {
            s.outstanding = true;
        }
    }

    /// A packet of `size` bytes was acknowledged at `now`. Returns the path's new MTU when it
    /// grows.
    pub fn on_acked(&mut self, now: Timestamp, size: usize, probe: bool) -> Option<usize> {
        if size > self.delivered {
            self.delivered = size;
            self.big_losses = 0;
        }
        let s = self.search.as_mut()?;
        if probe {
            s.outstanding = false;
            s.tries = 0;
        }
        if size <= s.lo {
            return None;
        }
        s.lo = size.min(self.max);
        s.hi = s.hi.max(s.lo);
        let lo = s.lo;
        self.end_search_if_done(now);
        Some(lo)
    }

    /// A packet of `size` bytes was declared lost at `now` while the path's MTU was `mtu`.
    /// Returns the path's new MTU when a black hole is detected.
    pub fn on_lost(&mut self, now: Timestamp, size: usize, probe: bool, mtu: usize) -> Option<usize> {
        if probe {
            if let Some(s) = self.search.as_mut() {
                s.outstanding = false;
                s.tries += 1;
                if s.tries >= PROBE_TRIES {
                    s.tries = 0;
                    s.hi = size.saturating_sub(1).max(s.lo);
                }
            }
            self.end_search_if_done(now);
            return None;
        }
        let floor = self.delivered.max(BASE);
        if size <= floor || self.search.is_some() || mtu <= floor {
            return None;
        }
        self.big_losses += 1;
        if self.big_losses < BLACK_HOLE_LOSSES {
            return None;
        }
        self.big_losses = 0;
        self.black_holes += 1;
        let hi = size.saturating_sub(1).min(self.max);
        self.settled = None;
        self.search = Some(Search { lo: floor, hi, tries: 0, outstanding: false });
        self.end_search_if_done(now);
        Some(floor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const T0: Timestamp = Timestamp::ZERO;

    #[test]
    fn a_delivered_full_size_packet_rules_out_a_black_hole() {
        let mut m = MtuDiscovery::new(1452);
        assert_eq!(m.on_acked(T0, 1452, false), None);
        for _ in 0..10 {
            assert_eq!(m.on_lost(T0, 1452, false, 1452), None);
        }
        assert_eq!(m.probe_due(T0), None);
    }

    #[test]
    fn three_big_losses_fall_back_and_the_search_finds_the_limit() {
        let mut m = MtuDiscovery::new(1452);
        m.on_acked(T0, 80, false); // ACK-sized packets pass
        assert_eq!(m.on_lost(T0, 1452, false, 1452), None);
        assert_eq!(m.on_lost(T0, 1452, false, 1452), None);
        assert_eq!(m.on_lost(T0, 1452, false, 1452), Some(BASE));
        assert_eq!(m.black_holes, 1);
        // The link carries 1372 bytes of UDP payload (a 1400-byte IP MTU).
        let limit = 1372;
        let mut mtu = BASE;
        for _ in 0..40 {
            let Some(size) = m.probe_due(T0) else { break };
            m.on_probe_sent();
            assert_eq!(m.probe_due(T0), None, "one probe at a time");
            if size <= limit {
                mtu = m.on_acked(T0, size, true).unwrap_or(mtu);
            } else {
                assert_eq!(m.on_lost(T0, size, true, mtu), None);
            }
        }
        assert_eq!(m.probe_due(T0), None, "the search ends");
        assert!(mtu <= limit && mtu + SEARCH_STEP > limit, "found {mtu}");
        // Ten minutes on, the search starts again from the size found.
        assert_eq!(m.probe_due(T0 + RAISE_INTERVAL - Duration::from_secs(1)), None);
        let again = m.probe_due(T0 + RAISE_INTERVAL).expect("searching again");
        assert!(again > mtu, "{again}");
    }

    #[test]
    fn losses_at_or_below_what_was_delivered_are_not_a_black_hole() {
        let mut m = MtuDiscovery::new(1452);
        m.on_acked(T0, 1300, false);
        for _ in 0..5 {
            assert_eq!(m.on_lost(T0, 1300, false, 1452), None);
        }
        assert_eq!(m.on_lost(T0, 1452, false, 1452), None);
        assert_eq!(m.on_lost(T0, 1452, false, 1452), None);
        assert_eq!(m.on_lost(T0, 1452, false, 1452), Some(1300));
    }
}
