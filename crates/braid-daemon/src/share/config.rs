//! `braid share`'s configuration (the sharer) and the client's `[neighbours]` section.
//!
//! ```toml
//! # share.toml
//! key = "/etc/braid/share.key"
//! name = "alice-phone"            # announced on the LAN
//! listen = "0.0.0.0:7400"         # where members send (the LAN side)
//! servers = ["203.0.113.7:7000"]  # the only aggregation servers it relays to
//! wan_interface = "wwan0"         # relayed sockets leave on it; its bytes tell the owner's use
//! capacity = "10mbit"             # the WAN link's rate
//! owner_priority = "spare"        # members get spare capacity only ("none": no priority)
//! announce = true                 # mDNS/DNS-SD
//! status = "127.0.0.1:7401"       # JSON /status and Prometheus /metrics
//! usage_file = "/var/lib/braid/share-usage.redb"  # members' usage across restarts ("none")
//!
//! [[member]]
//! name = "bob"
//! key = "BASE64 PUBLIC KEY"
//! rate = "5mbit"
//! daily_cap = "1GB"
//! monthly_cap = "10GB"
//! at_cap = "throttle"             # or "stop"
//! throttle_rate = "256kbit"
//!
//! [community]                     # anyone holding this key is a member, with these limits
//! key = "BASE64 32 BYTES"
//! rate = "2mbit"
//! ```

use crate::config::{DurationText, Parsed, UsageFile};
use crate::error::Failure;
use base64::Engine;
use braid_core::units::{parse_bytes, parse_rate};
use braid_core::{PublicKey, StaticSecret};
use serde::Deserialize;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What happens to a member at its cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtCap {
    /// Nothing more is relayed until the period ends.
    Stop,
    /// Relayed at this many bytes/s until the period ends.
    Throttle(u64),
}

/// A member's limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes/s, both directions together (`None`: no limit).
    pub rate: Option<u64>,
    /// Bytes per calendar day, both directions.
    pub daily_cap: Option<u64>,
    /// Bytes per calendar month, both directions.
    pub monthly_cap: Option<u64>,
    /// What a cap does.
    pub at_cap: AtCap,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { rate: None, daily_cap: None, monthly_cap: None, at_cap: AtCap::Stop }
    }
}

/// A listed member.
#[derive(Debug, Clone)]
pub struct MemberPolicy {
    /// Its name in status and logs.
    pub name: String,
    /// Its static public key.
    pub key: PublicKey,
    /// Its limits.
    pub limits: Limits,
}

/// Members admitted by the community key.
#[derive(Debug, Clone)]
pub struct CommunityPolicy {
    /// The community key (the Noise psk).
    pub key: [u8; 32],
    /// The limits of each community member.
    pub limits: Limits,
}

/// Whose traffic comes first on the WAN link.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OwnerPriority {
    /// Members share the link as it is.
    None,
    /// Members get only what the owner leaves: capacity minus the owner's measured rate.
    Spare,
}

/// `braid share`'s settings.
#[derive(Debug, Clone)]
pub struct ShareSettings {
    /// Announced name.
    pub name: String,
    /// Its key.
    pub secret: StaticSecret,
    /// LAN address members send to.
    pub listen: SocketAddr,
    /// Aggregation servers it relays to.
    pub servers: Vec<SocketAddr>,
    /// The WAN interface: relayed sockets are bound to it, and its byte counters measured.
    pub wan_interface: Option<String>,
    /// The WAN link's capacity in bit/s.
    pub capacity: Option<u64>,
    /// Owner priority.
    pub owner_priority: OwnerPriority,
    /// Announce on the LAN with mDNS.
    pub announce: bool,
    /// Status address.
    pub status: Option<SocketAddr>,
    /// Listed members.
    pub members: Vec<MemberPolicy>,
    /// Community admission.
    pub community: Option<CommunityPolicy>,
    /// Silence after which a member's relay is forgotten.
    pub lease: Duration,
    /// Relays (member addresses) held at once.
    pub max_relays: usize,
    /// Where members' usage is kept across restarts ([`super::usage`]).
    pub usage_file: UsageFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LimitsFile {
    rate: Option<String>,
    daily_cap: Option<String>,
    monthly_cap: Option<String>,
    at_cap: Option<String>,
    throttle_rate: Option<String>,
}

impl LimitsFile {
    fn limits(&self) -> Result<Limits, String> {
        let rate = |s: &Option<String>| s.as_deref().map(parse_rate).transpose().map(|r| r.map(|b| b / 8));
        let at_cap = match self.at_cap.as_deref() {
            None | Some("stop") => AtCap::Stop,
            Some("throttle") => AtCap::Throttle(
                rate(&self.throttle_rate)?
                    .ok_or("at_cap = \"throttle\" needs throttle_rate (e.g. \"256kbit\")")?,
            ),
            Some(o) => return Err(format!("at_cap: '{o}' is not stop or throttle")),
        };
        Ok(Limits {
            rate: rate(&self.rate)?,
            daily_cap: self.daily_cap.as_deref().map(parse_bytes).transpose()?,
            monthly_cap: self.monthly_cap.as_deref().map(parse_bytes).transpose()?,
            at_cap,
        })
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberFile {
    name: Option<String>,
    key: Parsed<PublicKey>,
    #[serde(flatten)]
    limits: LimitsFile,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CommunityFile {
    key: String,
    #[serde(flatten)]
    limits: LimitsFile,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ShareFile {
    key: Option<PathBuf>,
    name: Option<String>,
    listen: Option<Parsed<SocketAddr>>,
    #[serde(default)]
    servers: Vec<String>,
    wan_interface: Option<String>,
    capacity: Option<String>,
    owner_priority: Option<String>,
    announce: Option<bool>,
    status: Option<Parsed<SocketAddr>>,
    lease: Option<DurationText>,
    max_relays: Option<usize>,
    usage_file: Option<PathBuf>,
    #[serde(default)]
    member: Vec<MemberFile>,
    community: Option<CommunityFile>,
}

/// Decodes a 32-byte community key written in base64.
pub fn community_key(s: &str) -> Result<[u8; 32], String> {
    let b = base64::engine::general_purpose::STANDARD
        .decode(s.trim())
        .map_err(|_| "community key: not valid base64".to_string())?;
    let n = b.len();
    b.try_into().map_err(|_| format!("community key: 32 bytes expected, this one decodes to {n}"))
}

/// Port of `braid share` when none is given.
pub const DEFAULT_SHARE_PORT: u16 = 7400;

impl ShareSettings {
    /// From a TOML file (and `--set` overrides).
    pub fn load(file: Option<&Path>, sets: &[String]) -> Result<ShareSettings, Failure> {
        let f: ShareFile = crate::config::load(file, sets)?;
        let path = f.key.ok_or_else(|| Failure::Config("no sharer key: key = \"FILE\"".into()))?;
        let secret = crate::keyfile::read_secret(&path, |w| tracing::warn!("{w}"))?;
        let mut servers = Vec::new();
        for s in &f.servers {
            let a = std::net::ToSocketAddrs::to_socket_addrs(s.as_str())
                .map_err(|e| Failure::Config(format!("servers: '{s}': {e}")))?;
            servers.extend(a);
        }
        if servers.is_empty() {
            return Err(Failure::Config(
                "no servers: list the aggregation servers members may reach (servers = [\"HOST:PORT\"])"
                    .into(),
            ));
        }
        let mut members = Vec::new();
        for (i, m) in f.member.iter().enumerate() {
            let limits = m.limits.limits().map_err(|e| Failure::Config(format!("member {}: {e}", i + 1)))?;
            members.push(MemberPolicy {
                name: m.name.clone().unwrap_or_else(|| crate::config::key_name(&m.key.0)),
                key: m.key.0,
                limits,
            });
        }
        let community = match &f.community {
            Some(c) => Some(CommunityPolicy {
                key: community_key(&c.key).map_err(Failure::Config)?,
                limits: c.limits.limits().map_err(|e| Failure::Config(format!("community: {e}")))?,
            }),
            None => None,
        };
        if members.is_empty() && community.is_none() {
            return Err(Failure::Config(
                "no members: add [[member]] key = \"...\" entries or a [community] key".into(),
            ));
        }
        let capacity = f.capacity.as_deref().map(parse_rate).transpose().map_err(Failure::Config)?;
        let owner_priority = match f.owner_priority.as_deref() {
            None | Some("spare") => OwnerPriority::Spare,
            Some("none") => OwnerPriority::None,
            Some(o) => return Err(Failure::Config(format!("owner_priority: '{o}' is not spare or none"))),
        };
        if owner_priority == OwnerPriority::Spare && (capacity.is_none() || f.wan_interface.is_none()) {
            return Err(Failure::Config(
                "owner_priority = \"spare\" needs capacity (the WAN link's rate) and wan_interface (whose bytes are measured); or set owner_priority = \"none\"".into(),
            ));
        }
        Ok(ShareSettings {
            name: f.name.unwrap_or_else(|| crate::config::key_name(&secret.public_key())),
            listen: f.listen.map_or(SocketAddr::from(([0, 0, 0, 0], DEFAULT_SHARE_PORT)), |p| p.0),
            secret,
            servers,
            wan_interface: f.wan_interface,
            capacity,
            owner_priority,
            announce: f.announce.unwrap_or(true),
            status: f.status.map(|p| p.0),
            members,
            community,
            lease: f.lease.map_or(Duration::from_secs(30), |d| d.0),
            max_relays: f.max_relays.unwrap_or(64),
            usage_file: UsageFile::from_setting(f.usage_file),
        })
    }
}

/// A sharer the client knows without discovery.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaticSharer {
    /// Its name (labels the path: `via:NAME`).
    pub name: String,
    /// Its LAN address.
    pub address: Parsed<SocketAddr>,
    /// Its public key.
    pub key: Parsed<PublicKey>,
    /// The server address to ask it for (default: the client's server).
    pub server: Option<String>,
}

/// The client's `[neighbours]` section.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NeighbourSection {
    /// Browse the LAN (mDNS/DNS-SD) for sharers.
    #[serde(default)]
    pub discover: bool,
    /// The LAN interface paths through sharers leave on.
    pub interface: Option<String>,
    /// Community key, when the sharers admit by it.
    pub community_key: Option<String>,
    /// Sharer keys trusted (empty: any sharer announced).
    #[serde(default)]
    pub trust: Vec<Parsed<PublicKey>>,
    /// Sharers known beforehand.
    #[serde(default)]
    pub sharer: Vec<StaticSharer>,
    /// Seed 000's channel selection: a neighbour path that would lower the group's TCP bound
    /// waits in standby (default true).
    pub select: Option<bool>,
}

/// The client's neighbour settings.
#[derive(Debug, Clone)]
pub struct NeighbourSettings {
    /// Browse with mDNS.
    pub discover: bool,
    /// LAN interface.
    pub interface: Option<String>,
    /// Community key.
    pub community: Option<[u8; 32]>,
    /// Trusted sharer keys (empty: any).
    pub trust: Vec<PublicKey>,
    /// Sharers known beforehand.
    pub sharers: Vec<StaticSharer>,
    /// Channel selection on.
    pub select: bool,
}

impl Default for NeighbourSettings {
    fn default() -> Self {
        NeighbourSettings {
            discover: false,
            interface: None,
            community: None,
            trust: Vec::new(),
            sharers: Vec::new(),
            select: true,
        }
    }
}

impl NeighbourSection {
    /// The settings, or `None` when the section asks for nothing.
    pub fn settings(&self) -> Result<Option<NeighbourSettings>, String> {
        if !self.discover && self.sharer.is_empty() {
            return Ok(None);
        }
        Ok(Some(NeighbourSettings {
            discover: self.discover,
            interface: self.interface.clone(),
            community: self.community_key.as_deref().map(community_key).transpose()?,
            trust: self.trust.iter().map(|k| k.0).collect(),
            sharers: self.sharer.clone(),
            select: self.select.unwrap_or(true),
        }))
    }
}

#[cfg(test)]
impl ShareSettings {
    /// Settings of a sharer on loopback admitting `members` and `community`, with usage in
    /// memory only.
    pub(crate) fn for_test(members: Vec<MemberPolicy>, community: Option<CommunityPolicy>) -> ShareSettings {
        ShareSettings {
            name: "s".into(),
            secret: crate::keyfile::generate(),
            listen: "127.0.0.1:0".parse().expect("an address"),
            servers: vec![],
            wan_interface: None,
            capacity: None,
            owner_priority: OwnerPriority::None,
            announce: false,
            status: None,
            members,
            community,
            lease: Duration::from_secs(30),
            max_relays: 4,
            usage_file: UsageFile::Off,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_file_loads() {
        let dir = std::env::temp_dir().join(format!("braid-share-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let key = dir.join("share.key");
        std::fs::write(&key, format!("{}\n", crate::keyfile::generate().to_base64())).unwrap();
        let text = include_str!("../../../../examples/share.toml")
            .replace("/etc/braid/share.key", &key.display().to_string())
            .replace("REPLACE-WITH-MEMBER-PUBLIC-KEY", &crate::keyfile::generate().public_key().to_string());
        let p = dir.join("share.toml");
        std::fs::write(&p, text).unwrap();
        let s = ShareSettings::load(Some(&p), &[]);
        let off = ShareSettings::load(Some(&p), &["usage_file=\"none\"".into()]);
        let at = ShareSettings::load(Some(&p), &["usage_file=\"/tmp/u.redb\"".into()]);
        let _ = std::fs::remove_dir_all(&dir);
        let s = s.unwrap();
        assert_eq!(off.unwrap().usage_file, UsageFile::Off);
        assert_eq!(at.unwrap().usage_file, UsageFile::At("/tmp/u.redb".into()));
        assert_eq!(s.name, "alice-phone");
        assert_eq!(s.members[0].limits.at_cap, AtCap::Throttle(32_000));
        assert_eq!(s.owner_priority, OwnerPriority::Spare);
        assert_eq!(s.capacity, Some(10_000_000));
        assert_eq!(s.usage_file, UsageFile::Default);
    }

    #[test]
    fn limits_parse_and_refuse_clearly() {
        let l = LimitsFile {
            rate: Some("8mbit".into()),
            daily_cap: Some("1GB".into()),
            at_cap: Some("throttle".into()),
            throttle_rate: Some("80kbit".into()),
            ..LimitsFile::default()
        };
        let got = l.limits().unwrap();
        assert_eq!(got.rate, Some(1_000_000));
        assert_eq!(got.daily_cap, Some(1_000_000_000));
        assert_eq!(got.at_cap, AtCap::Throttle(10_000));
        let bad = LimitsFile { at_cap: Some("throttle".into()), ..LimitsFile::default() };
        assert!(bad.limits().unwrap_err().contains("throttle_rate"));
        let bad = LimitsFile { at_cap: Some("slow".into()), ..LimitsFile::default() };
        assert!(bad.limits().unwrap_err().contains("not stop or throttle"));
        assert!(community_key("AAAA").unwrap_err().contains("32 bytes"));
    }
}
