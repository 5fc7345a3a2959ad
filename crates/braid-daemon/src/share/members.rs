//! Members as the sharer sees them: who is admitted, the anti-replay timestamp of each, their
//! rate limit and their usage against their daily and monthly caps.
//!
//! Usage is counted in relayed bytes, both directions together, in calendar days and months of
//! the sharer's local time (passed in, as the clock always is).

use super::bucket::Bucket;
use super::config::{AtCap, Limits, ShareSettings};
use super::wire::{Mode, Status};
use braid_core::PublicKey;
use chrono::{Datelike, NaiveDate};
use serde::Serialize;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// Community members remembered at most (the oldest is forgotten first).
const MAX_COMMUNITY: usize = 256;

/// One member's live state.
#[derive(Debug)]
pub struct Member {
    /// Name.
    pub name: String,
    /// Key.
    pub key: PublicKey,
    /// Limits.
    pub limits: Limits,
    inner: Mutex<Inner>,
    /// Bytes relayed towards the server.
    pub up: AtomicU64,
    /// Bytes relayed towards the member.
    pub down: AtomicU64,
    /// Datagrams dropped by the rate limit or a cap.
    pub dropped: AtomicU64,
}

#[derive(Debug)]
struct Inner {
    bucket: Bucket,
    last_timestamp: u64,
    day: Option<NaiveDate>,
    today: u64,
    this_month: u64,
    capped: bool,
}

/// A member's line in the status.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct MemberStatus {
    /// Name.
    pub name: String,
    /// Public key.
    pub key: String,
    /// Bytes towards the server.
    pub up_bytes: u64,
    /// Bytes towards the member.
    pub down_bytes: u64,
    /// Datagrams dropped.
    pub dropped: u64,
    /// Rate limit now in bytes/s (null: none).
    pub rate_limit: Option<u64>,
    /// Bytes today.
    pub today: u64,
    /// Daily cap.
    pub daily_cap: Option<u64>,
    /// Bytes this month.
    pub this_month: u64,
    /// Monthly cap.
    pub monthly_cap: Option<u64>,
    /// At a cap now.
    pub capped: bool,
}

impl Member {
    fn new(name: String, key: PublicKey, limits: Limits) -> Member {
        Member {
            name,
            key,
            limits,
            inner: Mutex::new(Inner {
                bucket: Bucket::new(limits.rate),
                last_timestamp: 0,
                day: None,
                today: 0,
                this_month: 0,
                capped: false,
            }),
            up: AtomicU64::new(0),
            down: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts a new day or month when `day` is one.
    fn roll(&self, g: &mut Inner, day: NaiveDate) {
        if let Some(d) = g.day {
            if d == day {
                return;
            }
            g.today = 0;
            if (d.year(), d.month()) != (day.year(), day.month()) {
                g.this_month = 0;
            }
        }
        g.day = Some(day);
        let over = self.over_cap(g);
        if g.capped && !over {
            g.bucket.set_rate(self.limits.rate);
        }
        g.capped = over;
    }

    fn over_cap(&self, g: &Inner) -> bool {
        self.limits.daily_cap.is_some_and(|c| g.today >= c)
            || self.limits.monthly_cap.is_some_and(|c| g.this_month >= c)
    }

    /// Whether a datagram of `bytes` may be relayed now; counts it if so.
    pub fn admit(&self, now: Instant, day: NaiveDate, bytes: usize, towards_server: bool) -> bool {
        let mut g = self.lock();
        self.roll(&mut g, day);
        if g.capped && self.limits.at_cap == AtCap::Stop {
            drop(g);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        if !g.bucket.take(now, bytes) {
            drop(g);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        g.today += bytes as u64;
        g.this_month += bytes as u64;
        if !g.capped && self.over_cap(&g) {
            g.capped = true;
            tracing::info!(member = %self.name, action = ?self.limits.at_cap, "member reached its cap");
            if let AtCap::Throttle(r) = self.limits.at_cap {
                g.bucket.set_rate(Some(r));
            }
        }
        drop(g);
        let c = if towards_server { &self.up } else { &self.down };
        c.fetch_add(bytes as u64, Ordering::Relaxed);
        true
    }

    /// Whether the member is stopped by a cap on `day`.
    pub fn stopped(&self, day: NaiveDate) -> bool {
        let mut g = self.lock();
        self.roll(&mut g, day);
        g.capped && self.limits.at_cap == AtCap::Stop
    }

    /// Bytes left under the nearest cap (`u64::MAX`: none).
    pub fn cap_left(&self) -> u64 {
        let g = self.lock();
        let d = self.limits.daily_cap.map_or(u64::MAX, |c| c.saturating_sub(g.today));
        let m = self.limits.monthly_cap.map_or(u64::MAX, |c| c.saturating_sub(g.this_month));
        d.min(m)
    }

    /// Takes a request timestamp: false when it is not newer than the last one (a replay).
    fn fresh(&self, ts: u64) -> bool {
        let mut g = self.lock();
        if ts <= g.last_timestamp {
            return false;
        }
        g.last_timestamp = ts;
        true
    }

    /// The rate limit in force.
    pub fn rate_now(&self) -> Option<u64> {
        self.lock().bucket.rate()
    }

    /// Its status line.
    pub fn status(&self) -> MemberStatus {
        let g = self.lock();
        MemberStatus {
            name: self.name.clone(),
            key: self.key.to_string(),
            up_bytes: self.up.load(Ordering::Relaxed),
            down_bytes: self.down.load(Ordering::Relaxed),
            dropped: self.dropped.load(Ordering::Relaxed),
            rate_limit: g.bucket.rate(),
            today: g.today,
            daily_cap: self.limits.daily_cap,
            this_month: g.this_month,
            monthly_cap: self.limits.monthly_cap,
            capped: g.capped,
        }
    }
}

/// Every member the sharer admits.
#[derive(Debug)]
pub struct Members {
    listed: HashMap<PublicKey, Arc<Member>>,
    community_limits: Option<Limits>,
    community: Mutex<Vec<Arc<Member>>>,
}

impl Members {
    /// From the settings.
    pub fn new(s: &ShareSettings) -> Members {
        Members {
            listed: s
                .members
                .iter()
                .map(|m| (m.key, Arc::new(Member::new(m.name.clone(), m.key, m.limits))))
                .collect(),
            community_limits: s.community.as_ref().map(|c| c.limits),
            community: Mutex::new(Vec::new()),
        }
    }

    /// The member a request from `key`, admitted by `mode`, with `timestamp`, stands for; or
    /// why it is refused.
    pub fn admit(
        &self,
        key: &PublicKey,
        mode: Mode,
        timestamp: u64,
        day: NaiveDate,
    ) -> Result<Arc<Member>, Status> {
        let m = match (self.listed.get(key), mode) {
            (Some(m), _) => m.clone(),
            (None, Mode::Community) if self.community_limits.is_some() => self.community_member(key),
            (None, _) => return Err(Status::KeyNotAdmitted),
        };
        if !m.fresh(timestamp) {
            return Err(Status::Stale);
        }
        if m.stopped(day) {
            return Err(Status::OverCap);
        }
        Ok(m)
    }

    fn community_member(&self, key: &PublicKey) -> Arc<Member> {
        let mut c = self.community.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(m) = c.iter().find(|m| m.key == *key) {
            return m.clone();
        }
        if c.len() >= MAX_COMMUNITY {
            c.remove(0);
        }
        let limits = self.community_limits.unwrap_or_default();
        let m = Arc::new(Member::new(format!("community:{}", crate::config::key_name(key)), *key, limits));
        c.push(m.clone());
        m
    }

    /// Status lines of every member, listed first.
    pub fn status(&self) -> Vec<MemberStatus> {
        let mut v: Vec<MemberStatus> = self.listed.values().map(|m| m.status()).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.extend(self.community.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|m| m.status()));
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, 11, d).unwrap()
    }

    #[test]
    fn a_daily_cap_stops_until_the_next_day() {
        let m = Member::new(
            "bob".into(),
            crate::keyfile::generate().public_key(),
            Limits { daily_cap: Some(3000), ..Limits::default() },
        );
        let t = Instant::now();
        assert!(m.admit(t, day(1), 1500, true));
        assert!(m.admit(t, day(1), 1500, false));
        assert!(!m.admit(t, day(1), 10, true));
        assert!(m.stopped(day(1)));
        assert_eq!(m.cap_left(), 0);
        assert!(m.admit(t, day(2), 1500, true), "a new day starts afresh");
        assert_eq!(m.status().this_month, 4500);
    }

    #[test]
    fn a_throttling_cap_slows_instead() {
        let lim = Limits { monthly_cap: Some(1000), at_cap: AtCap::Throttle(100), ..Limits::default() };
        let m = Member::new("c".into(), crate::keyfile::generate().public_key(), lim);
        let t = Instant::now();
        assert!(m.admit(t, day(1), 1200, true));
        assert_eq!(m.rate_now(), Some(100));
        assert!(!m.stopped(day(1)));
        assert!(m.status().capped);
    }

    #[test]
    fn replays_and_strangers_are_refused() {
        let k = crate::keyfile::generate().public_key();
        let stranger = crate::keyfile::generate().public_key();
        let s = ShareSettings {
            name: "s".into(),
            secret: crate::keyfile::generate(),
            listen: "127.0.0.1:0".parse().unwrap(),
            servers: vec![],
            wan_interface: None,
            capacity: None,
            owner_priority: super::super::config::OwnerPriority::None,
            announce: false,
            status: None,
            members: vec![super::super::config::MemberPolicy {
                name: "m".into(),
                key: k,
                limits: Limits::default(),
            }],
            community: None,
            lease: std::time::Duration::from_secs(30),
            max_relays: 4,
        };
        let ms = Members::new(&s);
        assert!(ms.admit(&k, Mode::Listed, 5, day(1)).is_ok());
        assert_eq!(ms.admit(&k, Mode::Listed, 5, day(1)).err(), Some(Status::Stale));
        assert_eq!(ms.admit(&stranger, Mode::Listed, 9, day(1)).err(), Some(Status::KeyNotAdmitted));
        assert_eq!(ms.admit(&stranger, Mode::Community, 9, day(1)).err(), Some(Status::KeyNotAdmitted));
    }
}
