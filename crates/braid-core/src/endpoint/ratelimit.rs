//! Per-source token buckets, WireGuard's ratelimiter (`ratelimiter.c`: 20 packets a second per
//! source, a burst of 5), with time injected.
//!
//! A source is an IPv4 address or an IPv6 /64 (one host usually holds a whole /64). The table is
//! bounded: when full, idle sources (a full bucket) are swept out, and if it is still full one
//! entry is evicted, so memory stays bounded under a flood of spoofed sources (which the cookie
//! check, not this table, stops).

use crate::time::Timestamp;
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};

/// Default table size.
pub const MAX_SOURCES: usize = 1 << 16;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Timestamp,
}

/// Token buckets by source.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    max: usize,
    table: HashMap<u128, Bucket>,
}

fn source_key(addr: SocketAddr) -> u128 {
    match addr.ip() {
        IpAddr::V4(v4) => u128::from(v4.to_ipv6_mapped()),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => u128::from(v4.to_ipv6_mapped()),
            None => u128::from(v6) & !((1u128 << 64) - 1),
        },
    }
}

impl RateLimiter {
    /// `per_second` events per source with bursts of `burst`, for at most `max` sources.
    pub fn new(per_second: f64, burst: f64, max: usize) -> Self {
        RateLimiter { per_second, burst, max: max.max(1), table: HashMap::new() }
    }

    /// Takes one token of `source`'s bucket at `now`, if it has one.
    pub fn allow(&mut self, now: Timestamp, source: SocketAddr) -> bool {
        let key = source_key(source);
        if !self.table.contains_key(&key) && self.table.len() >= self.max {
            self.sweep(now);
            if self.table.len() >= self.max {
                if let Some(k) = self.table.keys().next().copied() {
                    self.table.remove(&k);
                }
            }
        }
        let b = self.table.entry(key).or_insert(Bucket { tokens: self.burst, at: now });
        let elapsed = now.saturating_since(b.at).as_secs_f64();
        b.tokens = (b.tokens + elapsed * self.per_second).min(self.burst);
        b.at = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Sources tracked.
    pub fn len(&self) -> usize {
        self.table.len()
    }

    /// True when no source is tracked.
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }

    /// Forgets sources whose bucket has refilled.
    fn sweep(&mut self, now: Timestamp) {
        let (rate, burst) = (self.per_second, self.burst);
        self.table.retain(|_, b| b.tokens + now.saturating_since(b.at).as_secs_f64() * rate < burst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn at(ms: u64) -> Timestamp {
        Timestamp::ZERO + Duration::from_millis(ms)
    }

    #[test]
    fn burst_then_rate_per_source() {
        let mut r = RateLimiter::new(20.0, 5.0, 100);
        let a: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let a_other_port: SocketAddr = "192.0.2.1:2".parse().unwrap();
        let b: SocketAddr = "192.0.2.2:1".parse().unwrap();
        assert_eq!((0..10).filter(|_| r.allow(at(0), a)).count(), 5);
        assert!(!r.allow(at(0), a_other_port), "ports share their host's bucket");
        assert!(r.allow(at(0), b), "another host has its own");
        // 20 a second: one token every 50 ms.
        assert!(!r.allow(at(40), a));
        assert!(r.allow(at(100), a));
        // Over a second, at most burst + rate.
        let n = (0..1000).filter(|i| r.allow(at(1000 + i), a)).count();
        assert!((20..=26).contains(&n), "{n}");
    }

    #[test]
    fn ipv6_by_prefix_and_bounded_table() {
        let mut r = RateLimiter::new(1.0, 1.0, 4);
        assert!(r.allow(at(0), "[2001:db8::1]:1".parse().unwrap()));
        assert!(!r.allow(at(0), "[2001:db8::2]:1".parse().unwrap()), "same /64");
        assert!(r.allow(at(0), "[2001:db8:0:1::1]:1".parse().unwrap()), "another /64");
        for i in 0..100u32 {
            let a = SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::from(0xc000_0000u32 + i)), 1);
            assert!(r.allow(at(0), a), "a new source is never refused for lack of room");
            assert!(r.len() <= 4);
        }
    }
}
