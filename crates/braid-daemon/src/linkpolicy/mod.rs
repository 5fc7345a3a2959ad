//! The user's policy for each client link (issue 11; Speedify's Primary / Secondary / Backup /
//! Never, and carriers' data caps): a tier, a weight, a rate cap and a data cap with what to do
//! when it is reached. Usage is counted per link and direction and kept in an embedded
//! database, so that it survives restarts and crashes.
//!
//! The client applies the policy to its own sends; the core carries tier (PATH_STATUS), weight
//! and rate (POLICY) to the server, which applies them to downloads.

pub mod keeper;
pub mod period;
pub mod steer;
pub mod store;
pub mod table;

use braid_core::units::{format_bytes, parse_bytes, parse_rate};
use braid_core::wire::PathStatusKind;
use std::fmt;
use std::str::FromStr;

/// How much a link is used (Speedify's link priorities).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default)]
pub enum Tier {
    /// Carries data all the time.
    #[default]
    Primary,
    /// Carries data when the primary links are down or cannot keep up.
    Secondary,
    /// Carries data only when no primary or secondary link is usable.
    Backup,
    /// Carries nothing: no path is opened on it.
    Never,
}

impl Tier {
    /// The path status that carries this tier to the session (None: no path at all).
    pub fn path_status(self) -> Option<PathStatusKind> {
        match self {
            Tier::Primary => Some(PathStatusKind::Active),
            Tier::Secondary => Some(PathStatusKind::Secondary),
            Tier::Backup => Some(PathStatusKind::Backup),
            Tier::Never => None,
        }
    }

    /// The name used in configuration and status.
    pub fn name(self) -> &'static str {
        match self {
            Tier::Primary => "primary",
            Tier::Secondary => "secondary",
            Tier::Backup => "backup",
            Tier::Never => "never",
        }
    }
}

impl FromStr for Tier {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "primary" => Ok(Tier::Primary),
            "secondary" => Ok(Tier::Secondary),
            "backup" => Ok(Tier::Backup),
            "never" => Ok(Tier::Never),
            _ => Err(format!("unknown tier '{s}': use primary, secondary, backup or never")),
        }
    }
}

/// How often a data cap starts afresh.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapPeriod {
    /// Every day at the reset hour.
    Daily,
    /// Every week on the reset day (1 = Monday … 7 = Sunday) at the reset hour.
    Weekly,
    /// Every month on the reset day (1–31; the last day in shorter months) at the reset hour.
    #[default]
    Monthly,
}

impl CapPeriod {
    /// The name used in configuration and status.
    pub fn name(self) -> &'static str {
        match self {
            CapPeriod::Daily => "daily",
            CapPeriod::Weekly => "weekly",
            CapPeriod::Monthly => "monthly",
        }
    }
}

impl FromStr for CapPeriod {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "daily" => Ok(CapPeriod::Daily),
            "weekly" => Ok(CapPeriod::Weekly),
            "monthly" => Ok(CapPeriod::Monthly),
            _ => Err(format!("unknown cap period '{s}': use daily, weekly or monthly")),
        }
    }
}

/// What happens to a link once its cap is reached, until the period ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CapAction {
    /// It becomes a backup link.
    #[default]
    Demote,
    /// It carries at most this many bytes a second each way.
    Throttle(u64),
    /// It carries nothing (its path is closed).
    Stop,
}

impl fmt::Display for CapAction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapAction::Demote => f.write_str("demote"),
            CapAction::Throttle(r) => write!(f, "throttle:{}bit", r * 8),
            CapAction::Stop => f.write_str("stop"),
        }
    }
}

impl FromStr for CapAction {
    type Err = String;
    /// `demote`, `stop`, or `throttle:RATE` (e.g. `throttle:1mbit`).
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim() {
            "demote" => Ok(CapAction::Demote),
            "stop" => Ok(CapAction::Stop),
            t => match t.strip_prefix("throttle:") {
                Some(rate) => Ok(CapAction::Throttle((parse_rate(rate)? / 8).max(1))),
                None => Err(format!(
                    "unknown cap action '{s}': use demote, stop or throttle:RATE (e.g. throttle:1mbit)"
                )),
            },
        }
    }
}

/// A data cap: so many bytes (both directions together, as carriers count) a period.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    /// Bytes a period.
    pub bytes: u64,
    /// How often it starts afresh.
    pub period: CapPeriod,
    /// Day of the week (1–7, weekly) or of the month (1–31, monthly) it starts afresh.
    pub reset_day: u32,
    /// Hour (0–23, local time) it starts afresh.
    pub reset_hour: u32,
    /// What happens at the cap.
    pub action: CapAction,
}

impl Cap {
    /// Checks the reset day and hour against the period.
    pub fn validate(&self) -> Result<(), String> {
        if self.reset_hour > 23 {
            return Err(format!("cap_reset_hour {} is not an hour (0-23)", self.reset_hour));
        }
        let days = match self.period {
            CapPeriod::Daily => 1..=31,
            CapPeriod::Weekly => 1..=7,
            CapPeriod::Monthly => 1..=31,
        };
        if !days.contains(&self.reset_day) {
            return Err(format!(
                "cap_reset_day {} is outside {}..={} for a {} cap",
                self.reset_day,
                days.start(),
                days.end(),
                self.period.name()
            ));
        }
        Ok(())
    }
}

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}, then {}", format_bytes(self.bytes), self.period.name(), self.action)
    }
}

/// One link's policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LinkPolicy {
    /// How much it is used.
    pub tier: Tier,
    /// Weighted-round-robin weight (None: from the measured capacity).
    pub weight: Option<u32>,
    /// Most bytes a second each way (None: no cap).
    pub max_rate: Option<u64>,
    /// Data cap.
    pub cap: Option<Cap>,
}

impl LinkPolicy {
    /// Applies one `KEY=VALUE` change, as the status API and `braid status --link` send them:
    /// `tier=backup`, `weight=3`, `weight=auto`, `max_rate=20mbit`, `max_rate=none`,
    /// `cap=20GB`, `cap=none`, `cap_period=daily`, `cap_reset_day=1`, `cap_reset_hour=0`,
    /// `cap_action=throttle:1mbit`.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        let value = value.trim();
        let none = matches!(value, "none" | "auto" | "");
        let cap = || self.cap.ok_or_else(|| format!("{key}: this link has no cap; set cap=SIZE first"));
        match key.trim() {
            "tier" => self.tier = value.parse()?,
            "weight" if none => self.weight = None,
            "weight" => {
                let w: u32 = value.parse().map_err(|_| format!("weight '{value}' is not a whole number"))?;
                if w == 0 {
                    return Err("weight 0 would carry nothing: use tier=never".into());
                }
                self.weight = Some(w);
            }
            "max_rate" if none => self.max_rate = None,
            "max_rate" => self.max_rate = Some((parse_rate(value)? / 8).max(1)),
            "cap" if none => self.cap = None,
            "cap" => {
                let bytes = parse_bytes(value)?;
                self.cap = Some(match self.cap {
                    Some(c) => Cap { bytes, ..c },
                    None => Cap { bytes, period: CapPeriod::Monthly, reset_day: 1, reset_hour: 0, action: CapAction::Demote },
                });
            }
            "cap_period" => {
                let mut c = cap()?;
                c.period = value.parse()?;
                if c.period == CapPeriod::Weekly && c.reset_day > 7 {
                    c.reset_day = 1;
                }
                self.cap = Some(c);
            }
            "cap_reset_day" => {
                let mut c = cap()?;
                c.reset_day = value.parse().map_err(|_| format!("cap_reset_day '{value}' is not a day number"))?;
                self.cap = Some(c);
            }
            "cap_reset_hour" => {
                let mut c = cap()?;
                c.reset_hour = value.parse().map_err(|_| format!("cap_reset_hour '{value}' is not an hour"))?;
                self.cap = Some(c);
            }
            "cap_action" => {
                let mut c = cap()?;
                c.action = value.parse()?;
                self.cap = Some(c);
            }
            k => {
                return Err(format!(
                    "unknown link setting '{k}': use tier, weight, max_rate, cap, cap_period, cap_reset_day, cap_reset_hour or cap_action"
                ))
            }
        }
        if let Some(c) = &self.cap {
            c.validate()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_parse_and_bad_ones_are_named() {
        let mut p = LinkPolicy::default();
        p.set("tier", "secondary").unwrap();
        p.set("weight", "3").unwrap();
        p.set("max_rate", "8mbit").unwrap();
        p.set("cap", "2GB").unwrap();
        p.set("cap_period", "weekly").unwrap();
        p.set("cap_reset_day", "7").unwrap();
        p.set("cap_action", "throttle:1mbit").unwrap();
        assert_eq!(p.tier, Tier::Secondary);
        assert_eq!(p.weight, Some(3));
        assert_eq!(p.max_rate, Some(1_000_000));
        let c = p.cap.unwrap();
        assert_eq!((c.bytes, c.period, c.reset_day), (2_000_000_000, CapPeriod::Weekly, 7));
        assert_eq!(c.action, CapAction::Throttle(125_000));
        assert_eq!(c.to_string(), "2.00 GB weekly, then throttle:1000000bit");
        assert!(p.set("cap_reset_day", "8").unwrap_err().contains("1..=7"));
        assert!(p.set("tier", "sometimes").unwrap_err().contains("primary, secondary"));
        assert!(p.set("weight", "0").is_err());
        assert!(p.set("colour", "red").unwrap_err().contains("unknown link setting"));
        p.set("cap", "none").unwrap();
        assert!(p.set("cap_action", "stop").unwrap_err().contains("no cap"));
        p.set("weight", "auto").unwrap();
        assert_eq!(p.weight, None);
    }
}
