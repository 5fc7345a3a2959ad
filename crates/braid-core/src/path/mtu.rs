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
//! binary search between what works and the ceiling, a size given up after [`PROBE_TRIES`]
//! losses (§5.1.3 MAX_PROBES). Probes are outside congestion control and loss statistics
//! (§4.4: a lost probe is not congestion). A search that ended below the ceiling is tried
//! again after [`RAISE_INTERVAL`] (§5.1.1 PMTU_RAISE_TIMER), as routes change.
//!
//! The ceiling is RFC 8899's MAX_PLPMTU, "the largest size … that can be sent on the
//! outgoing interface". It starts at the starting size and rises ([`MtuDiscovery::raise_ceiling`])
//! to what the driver reads from the local interface (the client: 1472 on Ethernet, 8972 on
//! a jumbo-frame LAN, 65,000 on loopback) or to the largest datagram the path has delivered
//! to us (the server, which learns it from the client's probes). The search up starts once
//! the path carries bulk data (a full-size packet of stream data acknowledged or arrived)
//! and has delivered its starting size: bulk transfer is what larger datagrams make cheaper,
//! and an idle path keeps small buffers. A raised ceiling is probed
//! first, as it is: a LAN that carries its interface MTU end to end takes one probe, as a
//! TCP sender's MSS follows its interface MTU; a smaller hop costs [`PROBE_TRIES`] losses
//! and then the binary search. Fewer, larger datagrams are what makes bulk transfer cheap
//! per byte (issue 13: the same stream over loopback at 1452 and at 65,000 bytes).

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
/// The largest ceiling: a UDP payload that an IPv4 datagram carries (65,507) with room to
/// spare; `session.max_datagram_size` has the same bound.
pub const MAX_CEILING: usize = 65_000;

/// Path MTU state of one path.
#[derive(Debug, Clone)]
pub struct MtuDiscovery {
    /// The most the search may reach (UDP payload bytes): RFC 8899's MAX_PLPMTU, at least
    /// the starting size.
    ceiling: usize,
    /// Largest UDP payload this path has delivered (acknowledged); 0 before any.
    delivered: usize,
    /// The path carried a full-size packet of stream data, one way or the other: a raised
    /// ceiling's search waits for it (see [`MtuDiscovery::on_stream_packet`]).
    loaded: bool,
    /// Consecutive losses of packets larger than `delivered`.
    big_losses: u32,
    search: Option<Search>,
    /// A search ended below the ceiling at this size; searched again at that time.
    settled: Option<(usize, Timestamp)>,
    /// A raised ceiling's search starts from this size (the path's MTU when the ceiling rose)
    /// once the path is `loaded` and has delivered a packet this large: a path that cannot
    /// carry even its starting size has a black hole to find first.
    raise_from: Option<usize>,
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
    /// The ceiling is probed first, as it is (a raised ceiling; see the module docs).
    top_first: bool,
}

impl MtuDiscovery {
    /// A path that starts at `max` bytes of UDP payload.
    pub fn new(max: usize) -> Self {
        MtuDiscovery {
            ceiling: max,
            delivered: 0,
            loaded: false,
            big_losses: 0,
            search: None,
            settled: None,
            raise_from: None,
            black_holes: 0,
        }
    }

    /// The most the search may reach.
    pub fn ceiling(&self) -> usize {
        self.ceiling
    }

    /// The path may carry up to `ceiling` bytes (the local interface's limit, or a datagram
    /// of that size arrived on it; at most [`MAX_CEILING`]). A higher ceiling starts a
    /// search up from `current`, the path's MTU, that probes the ceiling first, once the
    /// path carries bulk data ([`MtuDiscovery::on_stream_packet`]). A search under way
    /// (after a black hole) keeps its course and is tried again later.
    pub fn raise_ceiling(&mut self, ceiling: usize, current: usize) {
        let ceiling = ceiling.min(MAX_CEILING);
        if ceiling <= self.ceiling {
            return;
        }
        self.ceiling = ceiling;
        if self.search.is_none() && ceiling >= current + SEARCH_STEP {
            self.settled = None;
            self.raise_from = Some(current);
            self.start_raise();
        }
    }

    /// A packet of `size` bytes that carried stream data was acknowledged, or arrived, while
    /// the path's MTU was `mtu`. A raised ceiling's search starts once such a packet was full
    /// size, either way, and the path has delivered its starting size (a path that cannot
    /// has a black hole to find first): the path carries bulk data, which is what larger
    /// datagrams make cheaper. An idle path (keepalives, packet-pair probes) keeps its size,
    /// and its driver's buffers stay small: 1,000 idle sessions on loopback took 150–181 MB
    /// with the search started by any full-size packet, against 50 MB without it.
    pub fn on_stream_packet(&mut self, size: usize, mtu: usize) {
        if !self.loaded && size >= mtu {
            self.loaded = true;
            self.start_raise();
        }
    }

    /// Starts the search a raised ceiling waits for, once the path is loaded and has
    /// delivered the size it starts from.
    fn start_raise(&mut self) {
        let ready = |lo: &usize| self.loaded && self.delivered >= *lo && self.search.is_none();
        if let Some(lo) = self.raise_from.filter(ready) {
            self.raise_from = None;
            self.search =
                Some(Search { lo, hi: self.ceiling, tries: 0, outstanding: false, top_first: true });
        }
    }

    /// Size of the next probe to send, if one is due at `now`.
    pub fn probe_due(&mut self, now: Timestamp) -> Option<usize> {
        if let Some((size, at)) = self.settled.filter(|(_, at)| now >= *at) {
            self.settled = None;
            self.search =
                Some(Search { lo: size, hi: self.ceiling, tries: 0, outstanding: false, top_first: false });
            tracing::trace!(size, ?at, "path MTU: searching again");
        }
        let s = self.search.as_ref().filter(|s| !s.outstanding && s.hi >= s.lo + SEARCH_STEP)?;
        Some(if s.top_first { s.hi } else { (s.lo + s.hi).div_ceil(2) })
    }

    /// Ends the search if it has converged; a size below the ceiling is searched again later.
    fn end_search_if_done(&mut self, now: Timestamp) {
        if let Some(s) = self.search.as_ref().filter(|s| s.hi < s.lo + SEARCH_STEP) {
            if s.lo < self.ceiling {
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
            self.start_raise();
        }
        let s = self.search.as_mut()?;
        if probe {
            s.outstanding = false;
            s.tries = 0;
        }
        if size <= s.lo {
            return None;
        }
        s.lo = size.min(self.ceiling);
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
                    s.top_first = false;
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
        self.raise_from = None;
        let hi = size.saturating_sub(1).min(self.ceiling);
        self.settled = None;
        self.search = Some(Search { lo: floor, hi, tries: 0, outstanding: false, top_first: false });
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
    fn a_raised_ceiling_is_probed_first_and_taken_when_it_passes() {
        let mut m = MtuDiscovery::new(1452);
        m.raise_ceiling(1300, 1452);
        assert_eq!(m.probe_due(T0), None, "a lower ceiling changes nothing");
        m.raise_ceiling(70_000, 1452);
        assert_eq!(m.ceiling(), MAX_CEILING);
        assert_eq!(m.probe_due(T0), None, "not before the starting size is delivered");
        m.on_acked(T0, 1452, false);
        assert_eq!(m.probe_due(T0), None, "nor for a full-size packet without data (a pair probe)");
        m.on_stream_packet(1400, 1452);
        assert_eq!(m.probe_due(T0), None, "nor for a short one with data");
        m.on_stream_packet(1452, 1452);
        assert_eq!(m.probe_due(T0), Some(MAX_CEILING), "the ceiling first");
        m.on_probe_sent();
        assert_eq!(m.on_acked(T0, MAX_CEILING, true), Some(MAX_CEILING));
        assert_eq!(m.probe_due(T0), None, "one probe was enough");
        assert_eq!(m.probe_due(T0 + RAISE_INTERVAL), None, "nothing left to search later");
    }

    #[test]
    fn a_ceiling_the_path_cannot_carry_falls_back_to_the_binary_search() {
        // A jumbo-frame interface (8972 bytes of UDP payload) behind a 1500-byte hop.
        let mut m = MtuDiscovery::new(1452);
        m.on_acked(T0, 1452, false);
        m.on_stream_packet(1452, 1452);
        m.raise_ceiling(8972, 1452);
        let limit = 1472;
        let (mut mtu, mut probes) = (1452, 0);
        for _ in 0..60 {
            let Some(size) = m.probe_due(T0) else { break };
            m.on_probe_sent();
            probes += 1;
            if size <= limit {
                mtu = m.on_acked(T0, size, true).unwrap_or(mtu);
            } else {
                assert_eq!(m.on_lost(T0, size, true, mtu), None, "a lost probe is no black hole");
            }
        }
        assert_eq!(m.probe_due(T0), None, "the search ends");
        assert!(mtu <= limit && mtu + SEARCH_STEP > limit, "found {mtu}");
        assert!(probes <= 2 + 2 * 10, "{probes} probes");
        // It was settled below the ceiling: searched again later.
        assert!(m.probe_due(T0 + RAISE_INTERVAL).is_some());
    }

    #[test]
    fn a_black_hole_under_a_raised_ceiling_is_found_first() {
        // A 1400-byte hop on a jumbo-frame interface: the starting size never arrives, while
        // a download's full-size data comes the other way.
        let mut m = MtuDiscovery::new(1452);
        m.raise_ceiling(8972, 1452);
        m.on_acked(T0, 80, false);
        m.on_stream_packet(1452, 1452);
        assert_eq!(m.probe_due(T0), None, "no search up from a size never delivered");
        for _ in 0..BLACK_HOLE_LOSSES {
            m.on_lost(T0, 1452, false, 1452);
        }
        assert_eq!(m.black_holes, 1);
        assert!(m.probe_due(T0).is_some_and(|s| s < 1452), "the search goes down first");
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
