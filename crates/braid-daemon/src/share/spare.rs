//! "Members get spare capacity": the owner's own traffic keeps priority on the WAN link.
//!
//! Every [`TICK`] the sharer reads the WAN interface's byte counters, takes away what it relayed
//! itself (plus the UDP/IP headers of those datagrams), and so learns the owner's own rate in
//! each direction. Members together may then use
//!
//! ```text
//! spare = capacity − owner rate − headroom        (at least FLOOR · capacity)
//! headroom = HEADROOM · capacity while the owner is active (above ACTIVE · capacity), else 0
//! ```
//! The headroom keeps the bottleneck queue short of full while the owner sends, so the owner's
//! TCP sees no loss caused by members and can grow into it; as it grows, the members' share
//! shrinks. The owner's rate is smoothed (EWMA) on the way up only slowly and on the way down
//! quickly, so members do not rush back in between two of the owner's bursts.

use std::time::Duration;

/// Measurement period.
pub const TICK: Duration = Duration::from_millis(100);
/// Share of capacity kept free while the owner is active.
pub const HEADROOM: f64 = 0.15;
/// The owner counts as active above this share of capacity.
pub const ACTIVE: f64 = 0.03;
/// Members always get at least this share (their keepalives and acks go through).
pub const FLOOR: f64 = 0.03;
/// Bytes a relayed datagram adds on the wire beyond its payload (IPv4 20 + UDP 8 + Ethernet 14).
pub const WIRE_OVERHEAD: u64 = 42;

/// The owner's rate and the spare capacity, from counter samples.
#[derive(Debug, Clone)]
pub struct SpareMeter {
    capacity: f64,
    owner: f64,
    last: Option<(u64, u64, u64)>,
}

impl SpareMeter {
    /// A meter for a link of `capacity` bytes/s.
    pub fn new(capacity: u64) -> SpareMeter {
        SpareMeter { capacity: capacity as f64, owner: 0.0, last: None }
    }

    /// Takes one sample: the interface's received and sent bytes, and the relayed bytes on the
    /// wire (both directions, headers included), `dt` after the previous one. Returns the
    /// members' rate in bytes/s.
    pub fn sample(&mut self, rx: u64, tx: u64, relayed: u64, dt: Duration) -> u64 {
        if let Some((prx, ptx, prel)) = self.last {
            let secs = dt.as_secs_f64().max(1e-3);
            // Relayed bytes cross the WAN interface once, in one direction or the other; the
            // owner's are what is left of the busier direction.
            let rel = relayed.saturating_sub(prel);
            let drx = rx.saturating_sub(prx);
            let dtx = tx.saturating_sub(ptx);
            let owner = (drx.max(dtx) + drx.min(dtx)).saturating_sub(rel).min(drx.max(dtx));
            let rate = owner as f64 / secs;
            let alpha = if rate > self.owner { 0.5 } else { 0.25 };
            self.owner += alpha * (rate - self.owner);
        }
        self.last = Some((rx, tx, relayed));
        self.spare()
    }

    /// The owner's smoothed rate in bytes/s.
    pub fn owner_rate(&self) -> u64 {
        self.owner as u64
    }

    /// What members may use, bytes/s.
    pub fn spare(&self) -> u64 {
        let headroom = if self.owner > ACTIVE * self.capacity { HEADROOM * self.capacity } else { 0.0 };
        let s = self.capacity - self.owner - headroom;
        s.max(FLOOR * self.capacity) as u64
    }
}

/// The interface's (received, sent) byte counters from sysfs.
pub fn read_counters(interface: &str) -> std::io::Result<(u64, u64)> {
    let read = |what: &str| -> std::io::Result<u64> {
        let p = format!("/sys/class/net/{interface}/statistics/{what}");
        let t = std::fs::read_to_string(&p)?;
        t.trim()
            .parse()
            .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("{p}: not a number")))
    };
    Ok((read("rx_bytes")?, read("tx_bytes")?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_owner_leaves_almost_everything_and_a_busy_one_takes_priority() {
        let cap = 1_250_000; // 10 Mbit/s
        let mut m = SpareMeter::new(cap);
        let t = Duration::from_millis(100);
        let (mut rx, mut tx, mut rel) = (0u64, 0u64, 0u64);
        m.sample(rx, tx, rel, t);
        // Members move 100 kB per tick through the interface; the owner nothing.
        for _ in 0..20 {
            rx += 100_000;
            rel += 100_000;
            m.sample(rx, tx, rel, t);
        }
        assert!(m.spare() > 1_200_000, "{}", m.spare());
        // The owner downloads at 8 Mbit/s (100 kB per tick), members keep 20 kB per tick.
        for _ in 0..20 {
            rx += 120_000;
            tx += 3_000;
            rel += 20_000;
            m.sample(rx, tx, rel, t);
        }
        let owner = m.owner_rate();
        assert!((950_000..=1_050_000).contains(&owner), "{owner}");
        // 10 − 8 − 1.5 Mbit/s of headroom: 0.5 Mbit/s, no less than the floor.
        assert!(m.spare() <= 80_000, "{}", m.spare());
        assert!(m.spare() >= (FLOOR * cap as f64) as u64);
    }
}
