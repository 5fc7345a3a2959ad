//! Token buckets by key, WireGuard's ratelimiter (`ratelimiter.c`: 20 packets a second per
//! source, a burst of 5), with time injected.
//!
//! A key is a source ([`source_key`]: an IPv4 address or an IPv6 /64, since one host usually
//! holds a whole /64), a session id, or any other 128-bit value. The table is bounded, as
//! WireGuard's is: when it is full, idle keys (a full bucket) are swept out — at most once a
//! second, so a flood of new keys cannot make every packet pay for a sweep — and a new key that
//! still finds no room is refused. Only keys an attacker cannot mint freely (sources proven by
//! a cookie, session ids the server issued) are tracked, so a full table means real load.

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

/// Token buckets by key.
#[derive(Debug)]
pub struct RateLimiter {
    per_second: f64,
    burst: f64,
    max: usize,
    table: HashMap<u128, Bucket>,
    swept: Option<Timestamp>,
}

/// The key of a source: its IPv4 address, or its IPv6 /64.
pub fn source_key(addr: SocketAddr) -> u128 {
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
        RateLimiter { per_second, burst, max: max.max(1), table: HashMap::new(), swept: None }
    }

    /// Takes one token of `source`'s bucket at `now`, if it has one.
    pub fn allow(&mut self, now: Timestamp, source: SocketAddr) -> bool {
        self.allow_key(now, source_key(source))
    }

    /// Takes one token of `key`'s bucket at `now`, if it has one (and there is room for it).
    pub fn allow_key(&mut self, now: Timestamp, key: u128) -> bool {
        if !self.table.contains_key(&key) && self.table.len() >= self.max {
            if self.swept.is_none_or(|t| now >= t + std::time::Duration::from_secs(1)) {
                self.swept = Some(now);
                self.sweep(now);
            }
            if self.table.len() >= self.max {
                return false;
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
        let v4 = |i: u32| SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::from(0xc000_0000u32 + i)), 1);
        assert!(r.allow(at(0), v4(0)));
        assert!(r.allow(at(0), v4(1)));
        assert_eq!(r.len(), 4);
        assert!(!r.allow(at(0), v4(2)), "no room: refused, as WireGuard does");
        // A second later the idle entries are swept out and new keys fit again.
        assert!(r.allow(at(1000), v4(3)));
        for i in 4..100 {
            r.allow(at(1000), v4(i));
            assert!(r.len() <= 4);
        }
    }
}
