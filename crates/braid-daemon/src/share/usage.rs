//! Members' usage across restarts: each member's day and month counters, by public key
//! (community members too), in the usage database ([`crate::usage_store`]). Read at start,
//! written every [`FLUSH_EVERY`] when a counter moved (only the records that changed) and once
//! more at a clean stop, so a restart does not reset anyone's caps; a crash loses at most
//! [`FLUSH_EVERY`] of counting. As on the client, a file that cannot be opened or read is
//! reported in a warning and counting starts from zero.

use super::members::Members;
use crate::config::UsageFile;
use crate::usage_store::{key_tag, load_or_warn, open_setting, Record, Row, UsageStore, FLUSH_EVERY};
use braid_core::PublicKey;
use chrono::{Datelike, NaiveDate};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};

/// What this file keeps of a member: "member usage".
const WHAT: &str = "member usage";

/// A member's counted bytes (both directions): on `day`, and in `day`'s month up to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemberUsage {
    /// The calendar day (sharer's local time) `today` counts.
    pub day: NaiveDate,
    /// Bytes on `day`.
    pub today: u64,
    /// Bytes in `day`'s month.
    pub this_month: u64,
}

impl MemberUsage {
    /// Whether `day` is in the same calendar month (nothing of it is left on a later month).
    pub fn same_month(&self, day: NaiveDate) -> bool {
        (self.day.year(), self.day.month()) == (day.year(), day.month())
    }
}

impl Record for MemberUsage {
    const TABLE: &'static str = "member_usage";
    fn to_row(self) -> Row {
        (i64::from(self.day.num_days_from_ce()), self.today, self.this_month)
    }
    /// A day out of range (a damaged row) reads as the earliest date: the next count starts
    /// that member afresh.
    fn from_row((day, today, this_month): Row) -> MemberUsage {
        let day =
            i32::try_from(day).ok().and_then(NaiveDate::from_num_days_from_ce_opt).unwrap_or(NaiveDate::MIN);
        MemberUsage { day, today, this_month }
    }
}

/// Reads members' usage at start and writes it back.
pub struct UsageKeeper {
    store: Option<Arc<UsageStore>>,
    /// What the file holds now.
    written: Mutex<BTreeMap<String, MemberUsage>>,
}

impl UsageKeeper {
    /// Opens the store `file` names (for the default place, `share-usage-KEY.redb` after the
    /// sharer's `key`); returns it with the usage it holds, by member key.
    pub fn open(file: &UsageFile, key: &PublicKey) -> (UsageKeeper, HashMap<PublicKey, MemberUsage>) {
        let store = open_setting(file, &format!("share-usage-{}.redb", key_tag(key)), WHAT);
        let written: BTreeMap<String, MemberUsage> = load_or_warn(store.as_ref(), WHAT);
        let saved = written.iter().filter_map(|(k, u)| Some((k.parse().ok()?, *u))).collect();
        (UsageKeeper { store: store.map(Arc::new), written: Mutex::new(written) }, saved)
    }

    /// Writes the records of `members` that changed since the last write, and removes those
    /// it no longer holds.
    pub async fn flush(&self, members: &Members) {
        let Some(store) = self.store.clone() else { return };
        let now: BTreeMap<String, MemberUsage> =
            members.usage().into_iter().map(|(k, u)| (k.to_string(), u)).collect();
        let (changed, gone) = {
            let w = self.written.lock().unwrap_or_else(|e| e.into_inner());
            let changed: BTreeMap<String, MemberUsage> =
                now.iter().filter(|(k, u)| w.get(*k) != Some(u)).map(|(k, u)| (k.clone(), *u)).collect();
            let gone: Vec<String> = w.keys().filter(|k| !now.contains_key(*k)).cloned().collect();
            (changed, gone)
        };
        if changed.is_empty() && gone.is_empty() {
            return;
        }
        match tokio::task::spawn_blocking(move || store.save(&changed, &gone)).await {
            Ok(Ok(())) => *self.written.lock().unwrap_or_else(|e| e.into_inner()) = now,
            Ok(Err(e)) => tracing::warn!(error = %e, "cannot write {WHAT}"),
            Err(e) => tracing::warn!(error = %e, "cannot write {WHAT}"),
        }
    }

    /// The file, if usage is kept.
    pub fn path(&self) -> Option<&Path> {
        self.store.as_deref().map(UsageStore::path)
    }

    /// Writes `shared`'s members' usage every [`FLUSH_EVERY`], until the task is dropped.
    pub async fn run(shared: Arc<super::relay::Shared>) {
        let mut tick = tokio::time::interval(FLUSH_EVERY);
        loop {
            tick.tick().await;
            shared.usage.flush(&shared.members).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::config::{AtCap, CommunityPolicy, Limits, MemberPolicy, ShareSettings};
    use crate::share::wire::{Mode, Status};
    use std::time::Instant;

    fn day(m: u32, d: u32) -> NaiveDate {
        NaiveDate::from_ymd_opt(2026, m, d).unwrap()
    }

    /// A sharer's members and its keeper as a (re)start makes them, on `today`.
    fn start(s: &ShareSettings, today: NaiveDate) -> (Members, UsageKeeper) {
        let (keeper, saved) = UsageKeeper::open(&s.usage_file, &s.secret.public_key());
        let mut ms = Members::new(s);
        ms.restore(saved, today);
        (ms, keeper)
    }

    fn line(ms: &Members, key: &PublicKey, d: NaiveDate) -> crate::share::members::MemberStatus {
        ms.status(d, &Default::default()).into_iter().find(|m| m.key == key.to_string()).unwrap()
    }

    #[tokio::test]
    async fn usage_outlives_a_restart_and_rolls_over_with_the_calendar() {
        let dir = std::env::temp_dir().join(format!("braid-share-usage-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let bob = crate::keyfile::generate().public_key();
        let carol = crate::keyfile::generate().public_key();
        let capped = Limits { daily_cap: Some(3000), monthly_cap: Some(100_000), ..Limits::default() };
        let throttled = Limits { daily_cap: Some(1000), at_cap: AtCap::Throttle(50), ..Limits::default() };
        let mut s = ShareSettings::for_test(
            vec![MemberPolicy { name: "bob".into(), key: bob, limits: capped }],
            Some(CommunityPolicy { key: [3; 32], limits: throttled }),
        );
        s.usage_file = UsageFile::At(dir.join("share.redb"));
        let (t, nov24) = (Instant::now(), day(11, 24));

        let (ms, keeper) = start(&s, nov24);
        assert_eq!(keeper.path(), Some(dir.join("share.redb").as_path()));
        let b = ms.admit(&bob, Mode::Listed, 1, nov24).unwrap();
        assert!(b.admit(t, nov24, 3000, false));
        let c = ms.admit(&carol, Mode::Community, 1, nov24).unwrap();
        assert!(c.admit(t, nov24, 1200, true));
        keeper.flush(&ms).await;
        drop((ms, keeper));

        // Restarted the same day: bob stays stopped, carol throttled, counts go on.
        let (ms, keeper) = start(&s, nov24);
        assert_eq!(ms.admit(&bob, Mode::Listed, 2, nov24).err(), Some(Status::OverCap));
        assert_eq!((line(&ms, &bob, nov24).today, line(&ms, &bob, nov24).state.as_str()), (3000, "stopped"));
        let c = ms.admit(&carol, Mode::Community, 2, nov24).unwrap();
        assert_eq!(c.rate_now(), Some(50), "a throttling cap reached before the restart");
        assert!(c.admit(t, nov24, 10, true));
        keeper.flush(&ms).await;
        drop((ms, keeper));

        // The next day: today starts afresh, the month goes on.
        let nov25 = day(11, 25);
        let (ms, keeper) = start(&s, nov25);
        let b = ms.admit(&bob, Mode::Listed, 3, nov25).unwrap();
        assert!(b.admit(t, nov25, 500, true));
        let l = line(&ms, &bob, nov25);
        assert_eq!((l.today, l.this_month, l.state.as_str()), (500, 3500, "idle"));
        assert_eq!(ms.admit(&carol, Mode::Community, 3, nov25).unwrap().rate_now(), None);
        assert_eq!(line(&ms, &carol, nov25).this_month, 1210);
        keeper.flush(&ms).await;
        drop((ms, keeper));

        // A new month: both counters start afresh; a community member's old month leaves the
        // file at the next write.
        let dec1 = day(12, 1);
        let (ms, keeper) = start(&s, dec1);
        let l = line(&ms, &bob, dec1);
        assert_eq!((l.today, l.this_month), (0, 0));
        keeper.flush(&ms).await;
        drop((ms, keeper));
        let (_, saved) = UsageKeeper::open(&s.usage_file, &s.secret.public_key());
        assert_eq!(saved.get(&bob), Some(&MemberUsage { day: dec1, today: 0, this_month: 0 }));
        assert!(!saved.contains_key(&carol), "{saved:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_damaged_day_reads_as_a_day_long_past() {
        let u = MemberUsage::from_row((i64::MAX, 5, 6));
        assert_eq!(u.day, NaiveDate::MIN);
        assert!(!u.same_month(day(11, 24)));
        let u = MemberUsage { day: day(2, 28), today: 1, this_month: 2 };
        assert_eq!(MemberUsage::from_row(u.to_row()), u);
    }
}
