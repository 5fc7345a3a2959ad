//! The client's links: each one's policy (as configured, changeable live) and its usage in the
//! current period, and what the two make of it — the tier, weight and rate the link runs with
//! now (a reached cap demotes, throttles or stops it until the period ends).

use super::period::period_start;
use super::store::Usage;
use super::{Cap, CapAction, CapPeriod, LinkPolicy, Tier};
use chrono::{DateTime, TimeZone};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The period usage is shown for when a link has no cap: the calendar month.
const MONTH: Cap = Cap {
    bytes: u64::MAX,
    period: CapPeriod::Monthly,
    reset_day: 1,
    reset_hour: 0,
    action: CapAction::Demote,
};

/// What a link runs with now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effective {
    /// Tier after the cap's action.
    pub tier: Tier,
    /// Weight.
    pub weight: Option<u32>,
    /// Rate cap after the cap's action, bytes/s.
    pub max_rate: Option<u64>,
    /// The data cap is reached.
    pub capped: bool,
}

/// One link in the status document.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct LinkStatus {
    /// Link name (interface, address).
    pub name: String,
    /// The tier it runs with now (after a reached cap's action).
    pub tier: String,
    /// The tier configured.
    pub configured_tier: String,
    /// Weight (None: from the measured capacity).
    pub weight: Option<u32>,
    /// Rate cap now, bit/s (None: none).
    pub max_rate_bps: Option<f64>,
    /// Usage in the current period.
    pub usage: UsageStatus,
    /// The data cap, if any.
    pub cap: Option<CapStatus>,
}

/// Usage in the status document.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct UsageStatus {
    /// Bytes sent (IP packets).
    pub sent_bytes: u64,
    /// Bytes received (IP packets).
    pub received_bytes: u64,
    /// When the period began (RFC 3339, local time).
    pub period_start: Option<String>,
}

/// A data cap in the status document.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct CapStatus {
    /// Bytes a period.
    pub bytes: u64,
    /// daily, weekly, monthly.
    pub period: String,
    /// What happens at the cap.
    pub action: String,
    /// The cap is reached: the action is in force until the period ends.
    pub reached: bool,
}

/// Every link's policy and usage.
#[derive(Debug, Default)]
pub struct LinkTable {
    policies: BTreeMap<String, LinkPolicy>,
    usage: BTreeMap<String, Usage>,
    /// Usage changed since it was last written.
    dirty: bool,
}

/// The table, shared by the sessions' drivers, the status API and the writer.
#[derive(Debug, Clone, Default)]
pub struct SharedLinks(Arc<Mutex<LinkTable>>);

impl SharedLinks {
    /// A table with these policies and the usage read back from the store.
    pub fn new(policies: BTreeMap<String, LinkPolicy>, usage: BTreeMap<String, Usage>) -> Self {
        SharedLinks(Arc::new(Mutex::new(LinkTable { policies, usage, dirty: false })))
    }

    /// The table, locked.
    pub fn lock(&self) -> MutexGuard<'_, LinkTable> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The policy key of a link label: `10.0.0.2@server:7000` is configured as `10.0.0.2`.
fn key(label: &str) -> &str {
    label.split('@').next().unwrap_or(label)
}

impl LinkTable {
    /// The policy configured for `label`.
    pub fn policy(&self, label: &str) -> LinkPolicy {
        self.policies.get(label).or_else(|| self.policies.get(key(label))).copied().unwrap_or_default()
    }

    /// Changes one setting of `label`'s policy, live (starting from what `label` runs with,
    /// which may come from its address's entry); returns the new policy.
    pub fn set(&mut self, label: &str, setting: &str, value: &str) -> Result<LinkPolicy, String> {
        let mut p = self.policy(label);
        p.set(setting, value)?;
        self.policies.insert(label.to_string(), p);
        Ok(p)
    }

    /// Starts a new period for `label` when its reset time has passed.
    fn roll<Tz: TimeZone>(&mut self, label: &str, now: &DateTime<Tz>) -> &mut Usage {
        let cap = self.policy(label).cap.unwrap_or(MONTH);
        let start = period_start(&cap, now).timestamp();
        let u = self.usage.entry(label.to_string()).or_default();
        if u.period_start != start {
            if start > u.period_start {
                *u = Usage { period_start: start, sent: 0, received: 0 };
            } else {
                // The reset was moved earlier (or the clock back): keep counting.
                u.period_start = start;
            }
            self.dirty = true;
        }
        u
    }

    /// Counts bytes sent and received on `label`.
    pub fn account<Tz: TimeZone>(&mut self, label: &str, sent: u64, received: u64, now: &DateTime<Tz>) {
        if sent == 0 && received == 0 {
            return;
        }
        let u = self.roll(label, now);
        u.sent = u.sent.saturating_add(sent);
        u.received = u.received.saturating_add(received);
        self.dirty = true;
    }

    /// Usage of `label` in its current period.
    pub fn usage<Tz: TimeZone>(&mut self, label: &str, now: &DateTime<Tz>) -> Usage {
        *self.roll(label, now)
    }

    /// What `label` runs with now.
    pub fn effective<Tz: TimeZone>(&mut self, label: &str, now: &DateTime<Tz>) -> Effective {
        let p = self.policy(label);
        let used = self.roll(label, now).total();
        let capped = p.cap.is_some_and(|c| used >= c.bytes);
        let mut e = Effective { tier: p.tier, weight: p.weight, max_rate: p.max_rate, capped };
        if let (true, Some(c)) = (capped, p.cap) {
            match c.action {
                CapAction::Demote => e.tier = e.tier.max(Tier::Backup),
                CapAction::Stop => e.tier = Tier::Never,
                CapAction::Throttle(r) => e.max_rate = Some(e.max_rate.map_or(r, |m| m.min(r))),
            }
        }
        e
    }

    /// The usage to write, if it changed since the last call.
    pub fn take_dirty(&mut self) -> Option<BTreeMap<String, Usage>> {
        std::mem::take(&mut self.dirty).then(|| self.usage.clone())
    }

    /// Every link in `names` (the links in use), then every other configured link, as the
    /// status document shows them.
    pub fn status<Tz: TimeZone>(&mut self, names: &[String], now: &DateTime<Tz>) -> Vec<LinkStatus>
    where
        Tz::Offset: std::fmt::Display,
    {
        let mut all: Vec<String> = names.to_vec();
        for k in self.policies.keys() {
            if !all.iter().any(|n| n == k || key(n) == k) {
                all.push(k.clone());
            }
        }
        all.into_iter()
            .map(|name| {
                let p = self.policy(&name);
                let e = self.effective(&name, now);
                let u = self.usage(&name, now);
                let start = now.timezone().timestamp_opt(u.period_start, 0).single().map(|t| t.to_rfc3339());
                LinkStatus {
                    tier: e.tier.name().into(),
                    configured_tier: p.tier.name().into(),
                    weight: e.weight,
                    max_rate_bps: e.max_rate.map(|r| r as f64 * 8.0),
                    usage: UsageStatus {
                        sent_bytes: u.sent,
                        received_bytes: u.received,
                        period_start: start,
                    },
                    cap: p.cap.map(|c| CapStatus {
                        bytes: c.bytes,
                        period: c.period.name().into(),
                        action: c.action.to_string(),
                        reached: e.capped,
                    }),
                    name,
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::FixedOffset;

    fn t(s: &str) -> DateTime<FixedOffset> {
        DateTime::parse_from_rfc3339(s).unwrap()
    }

    #[test]
    fn a_reached_cap_acts_until_the_period_ends() {
        let mut p = LinkPolicy::default();
        p.set("cap", "1000B").unwrap();
        p.set("cap_period", "daily").unwrap();
        let links = SharedLinks::new([("wwan0".to_string(), p)].into(), BTreeMap::new());
        let mut t0 = links.lock();
        let now = t("2026-11-24T10:00:00+01:00");
        assert_eq!(t0.effective("wwan0", &now).tier, Tier::Primary);
        t0.account("wwan0", 600, 399, &now);
        assert!(!t0.effective("wwan0", &now).capped);
        t0.account("wwan0", 0, 1, &now);
        let e = t0.effective("wwan0", &now);
        assert!(e.capped);
        assert_eq!(e.tier, Tier::Backup);
        t0.set("wwan0", "cap_action", "throttle:8kbit").unwrap();
        let e = t0.effective("wwan0", &now);
        assert_eq!((e.tier, e.max_rate), (Tier::Primary, Some(1000)));
        t0.set("wwan0", "cap_action", "stop").unwrap();
        assert_eq!(t0.effective("wwan0", &now).tier, Tier::Never);
        // The next day starts afresh.
        let tomorrow = t("2026-11-25T00:00:01+01:00");
        let e = t0.effective("wwan0", &tomorrow);
        assert!(!e.capped);
        assert_eq!(t0.usage("wwan0", &tomorrow).total(), 0);
        let dirty = t0.take_dirty().unwrap();
        assert_eq!(dirty["wwan0"].total(), 0);
        assert!(t0.take_dirty().is_none());
        // Status lists links in use and configured ones.
        let s = t0.status(&["eth0".to_string()], &tomorrow);
        assert_eq!(s.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(), ["eth0", "wwan0"]);
        assert_eq!(s[1].cap.as_ref().unwrap().action, "stop");
        assert_eq!(s[1].usage.period_start.as_deref(), Some("2026-11-25T00:00:00+01:00"));
    }

    #[test]
    fn address_links_are_configured_by_address() {
        let p = LinkPolicy { tier: Tier::Never, ..LinkPolicy::default() };
        let links = SharedLinks::new([("10.0.0.2".to_string(), p)].into(), BTreeMap::new());
        assert_eq!(links.lock().policy("10.0.0.2@srv:7000").tier, Tier::Never);
        assert_eq!(links.lock().policy("10.0.0.3").tier, Tier::Primary);
    }
}
