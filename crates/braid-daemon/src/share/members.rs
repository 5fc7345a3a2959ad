//! Members as the sharer sees them: who is admitted, the anti-replay timestamp of each, their
//! rate limit and their usage against their daily and monthly caps.
//!
//! Usage is counted in relayed bytes, both directions together, in calendar days and months of
//! the sharer's local time (passed in, as the clock always is); it is kept across restarts by
//! [`super::usage`], which reads it back with [`Members::restore`] and takes it with
//! [`Members::usage`].

use super::bucket::Bucket;
use super::config::{AtCap, Limits, ShareSettings};
use super::usage::MemberUsage;
use super::wire::{Mode, Status};
use braid_core::PublicKey;
use chrono::{Datelike, NaiveDate};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Community members remembered at most (the oldest is forgotten first, its usage parked).
const MAX_COMMUNITY: usize = 256;
/// Usage of community members not among them kept at most (the least used goes first).
const MAX_PARKED: usize = 4096;

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
    /// Bytes/s relayed (both directions) over the last [`Members::measure`] interval.
    rate: AtomicU64,
    /// `up + down` at the last [`Members::measure`].
    measured: AtomicU64,
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
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
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
    /// Bytes/s relayed, both directions, over the last second.
    #[serde(default)]
    pub rate: u64,
    /// relaying, idle (no relay open), throttled or stopped (by a cap).
    #[serde(default)]
    pub state: String,
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
            rate: AtomicU64::new(0),
            measured: AtomicU64::new(0),
        }
    }

    /// Takes up counting from `u` (read back after a restart): a cap it had reached acts at once.
    fn restore(&self, u: MemberUsage) {
        let mut g = self.lock();
        (g.day, g.today, g.this_month) = (Some(u.day), u.today, u.this_month);
        g.capped = self.over_cap(&g);
        if let (true, AtCap::Throttle(r)) = (g.capped, self.limits.at_cap) {
            g.bucket.set_rate(Some(r));
        }
    }

    /// Its counters, once it has been counted.
    fn usage(&self) -> Option<MemberUsage> {
        let g = self.lock();
        g.day.map(|day| MemberUsage { day, today: g.today, this_month: g.this_month })
    }

    /// Sets the rate from the bytes relayed over the `dt` since the last call.
    fn measure(&self, dt: Duration) {
        let total = self.up.load(Ordering::Relaxed) + self.down.load(Ordering::Relaxed);
        let moved = total.saturating_sub(self.measured.swap(total, Ordering::Relaxed));
        let rate = if dt.is_zero() { 0 } else { (moved as f64 / dt.as_secs_f64()) as u64 };
        self.rate.store(rate, Ordering::Relaxed);
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

    /// Its status line on `day`; `relaying`: a relay of it is open.
    pub fn status(&self, day: NaiveDate, relaying: bool) -> MemberStatus {
        let mut g = self.lock();
        self.roll(&mut g, day);
        let state = match (g.capped, self.limits.at_cap) {
            (true, AtCap::Stop) => "stopped",
            (true, AtCap::Throttle(_)) => "throttled",
            (false, _) if relaying => "relaying",
            (false, _) => "idle",
        };
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
            rate: self.rate.load(Ordering::Relaxed),
            state: state.into(),
        }
    }
}

/// Every member the sharer admits.
#[derive(Debug)]
pub struct Members {
    listed: HashMap<PublicKey, Arc<Member>>,
    community_limits: Option<Limits>,
    community: Mutex<Vec<Arc<Member>>>,
    /// Usage of community members not in `community` (read back, or forgotten there).
    parked: Mutex<HashMap<PublicKey, MemberUsage>>,
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
            parked: Mutex::new(HashMap::new()),
        }
    }

    /// Takes up counting from usage read back after a restart, on `day`. A community
    /// member's waits until it comes back; usage of a past month, or of a key no longer
    /// admitted, is dropped (and so leaves the file at the next write).
    pub fn restore(&mut self, saved: HashMap<PublicKey, MemberUsage>, day: NaiveDate) {
        for (key, u) in saved {
            match self.listed.get(&key) {
                Some(m) => m.restore(u),
                None if self.community_limits.is_some() && (u.same_month(day) || u.day > day) => {
                    park(self.parked.get_mut().unwrap_or_else(|e| e.into_inner()), key, u);
                }
                None => {}
            }
        }
    }

    /// Every member's usage, to be kept.
    pub fn usage(&self) -> Vec<(PublicKey, MemberUsage)> {
        let live = |m: &Arc<Member>| m.usage().map(|u| (m.key, u));
        let mut v: Vec<_> = self.listed.values().filter_map(live).collect();
        v.extend(self.community.lock().unwrap_or_else(|e| e.into_inner()).iter().filter_map(live));
        v.extend(self.parked.lock().unwrap_or_else(|e| e.into_inner()).iter().map(|(k, u)| (*k, *u)));
        v
    }

    /// Sets each member's rate from what it relayed over the `dt` since the last call.
    pub fn measure(&self, dt: Duration) {
        self.listed.values().for_each(|m| m.measure(dt));
        self.community.lock().unwrap_or_else(|e| e.into_inner()).iter().for_each(|m| m.measure(dt));
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
        let mut parked = self.parked.lock().unwrap_or_else(|e| e.into_inner());
        if c.len() >= MAX_COMMUNITY {
            let old = c.remove(0);
            if let Some(u) = old.usage() {
                park(&mut parked, old.key, u);
            }
        }
        let limits = self.community_limits.unwrap_or_default();
        let m = Arc::new(Member::new(format!("community:{}", crate::config::key_name(key)), *key, limits));
        if let Some(u) = parked.remove(key) {
            m.restore(u);
        }
        c.push(m.clone());
        m
    }

    /// Status lines of every member on `day`, listed first; `relaying`: keys with a relay open.
    pub fn status(&self, day: NaiveDate, relaying: &HashSet<PublicKey>) -> Vec<MemberStatus> {
        let line = |m: &Arc<Member>| m.status(day, relaying.contains(&m.key));
        let mut v: Vec<MemberStatus> = self.listed.values().map(line).collect();
        v.sort_by(|a, b| a.name.cmp(&b.name));
        v.extend(self.community.lock().unwrap_or_else(|e| e.into_inner()).iter().map(line));
        v
    }
}

/// Parks `u` as `key`'s usage; when full, the least used this month makes room.
fn park(parked: &mut HashMap<PublicKey, MemberUsage>, key: PublicKey, u: MemberUsage) {
    if parked.len() >= MAX_PARKED && !parked.contains_key(&key) {
        if let Some(least) = parked.iter().min_by_key(|(_, u)| u.this_month).map(|(k, _)| *k) {
            parked.remove(&least);
        }
    }
    parked.insert(key, u);
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
        assert_eq!(m.status(day(2), false).this_month, 4500);
    }

    #[test]
    fn a_throttling_cap_slows_instead() {
        let lim = Limits { monthly_cap: Some(1000), at_cap: AtCap::Throttle(100), ..Limits::default() };
        let m = Member::new("c".into(), crate::keyfile::generate().public_key(), lim);
        let t = Instant::now();
        assert!(m.admit(t, day(1), 1200, true));
        assert_eq!(m.rate_now(), Some(100));
        assert!(!m.stopped(day(1)));
        assert!(m.status(day(1), false).capped);
    }

    #[test]
    fn replays_and_strangers_are_refused() {
        let k = crate::keyfile::generate().public_key();
        let stranger = crate::keyfile::generate().public_key();
        let m = super::super::config::MemberPolicy { name: "m".into(), key: k, limits: Limits::default() };
        let s = ShareSettings::for_test(vec![m], None);
        let ms = Members::new(&s);
        assert!(ms.admit(&k, Mode::Listed, 5, day(1)).is_ok());
        assert_eq!(ms.admit(&k, Mode::Listed, 5, day(1)).err(), Some(Status::Stale));
        assert_eq!(ms.admit(&stranger, Mode::Listed, 9, day(1)).err(), Some(Status::KeyNotAdmitted));
        assert_eq!(ms.admit(&stranger, Mode::Community, 9, day(1)).err(), Some(Status::KeyNotAdmitted));
    }

    #[test]
    fn the_rate_is_what_was_relayed_over_the_interval() {
        let m = Member::new("r".into(), crate::keyfile::generate().public_key(), Limits::default());
        let t = Instant::now();
        assert!(m.admit(t, day(1), 30_000, true) && m.admit(t, day(1), 10_000, false));
        m.measure(Duration::from_millis(500));
        assert_eq!(m.status(day(1), true).rate, 80_000);
        assert_eq!(m.status(day(1), true).state, "relaying");
        m.measure(Duration::from_secs(1));
        assert_eq!(m.status(day(1), false).rate, 0, "nothing moved since");
        assert_eq!(m.status(day(1), false).state, "idle");
    }

    #[test]
    fn a_forgotten_community_member_gets_its_usage_back() {
        let limits = Limits { daily_cap: Some(5000), ..Limits::default() };
        let community = super::super::config::CommunityPolicy { key: [7; 32], limits };
        let ms = Members::new(&ShareSettings::for_test(vec![], Some(community)));
        let (t, d) = (Instant::now(), day(3));
        let first = crate::keyfile::generate().public_key();
        let m = ms.admit(&first, Mode::Community, 1, d).unwrap();
        assert!(m.admit(t, d, 5000, true));
        assert_eq!(m.status(d, true).state, "stopped");
        // Enough newcomers to push it out of the members held in memory.
        for i in 0..MAX_COMMUNITY {
            ms.admit(&crate::keyfile::generate().public_key(), Mode::Community, i as u64 + 1, d).unwrap();
        }
        assert!(ms.community.lock().unwrap().iter().all(|m| m.key != first));
        assert!(ms.usage().contains(&(first, MemberUsage { day: d, today: 5000, this_month: 5000 })));
        assert_eq!(ms.admit(&first, Mode::Community, 2, d).err(), Some(Status::OverCap));
        let back = ms.status(d, &HashSet::new()).into_iter().find(|s| s.key == first.to_string()).unwrap();
        assert_eq!((back.today, back.state.as_str()), (5000, "stopped"));
    }
}
