//! Traffic classes in the client daemon (issue 11; seed 001's per-application parameters):
//! rules that put each connection or datagram in a class by protocol, destination port and
//! prefix, DSCP, SOCKS5 user and forward, and each class's scheduler, priority, deadline and
//! rates. The classes travel to the server in the session's policy, so that the answers run
//! under them too.
//!
//! Built in, as a user of a bonding tool expects: `interactive` (DNS, SSH, small-packet UDP
//! such as calls and games) is duplicated on the two best paths ahead of everything else;
//! `bulk` (every other stream) runs the session's scheduler; `datagrams` (every other UDP
//! datagram) goes ahead of bulk. A
//! `[[class]]` named like a built-in one changes it; rules are tried in order, the user's
//! first, and the first match wins.

use crate::config::{DurationText, Parsed};
use crate::egress::Rule;
use braid_core::scheduler::Kind;
use braid_core::units::parse_rate;
use braid_core::TrafficClass;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::ops::RangeInclusive;

/// Class of streams no rule matched.
pub const BULK: u8 = crate::appproto::CLASS_STREAM;
/// Class of datagrams no rule matched.
pub const DATAGRAMS: u8 = crate::appproto::CLASS_UDP;
/// The built-in interactive class.
pub const INTERACTIVE: u8 = 2;
/// UDP payloads up to this size are "small-packet UDP" (a G.711 RTP packet is 172 bytes, game
/// updates 50–300).
pub const SMALL_UDP: usize = 256;

/// Transport of a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// A stream (TCP connection).
    Tcp,
    /// Datagrams.
    Udp,
}

/// What is known of a connection or datagram when it is classified.
#[derive(Debug, Clone, Copy, Default)]
pub struct Flow<'a> {
    /// Transport.
    pub protocol: Option<Protocol>,
    /// Destination address, when known (a SOCKS5 request may name a host instead).
    pub ip: Option<IpAddr>,
    /// Destination port.
    pub port: u16,
    /// DSCP of the packet (TUN traffic).
    pub dscp: Option<u8>,
    /// SOCKS5 user name.
    pub user: Option<&'a str>,
    /// The forward it came through (its listen address or target, as configured).
    pub forward: Option<(&'a str, &'a str)>,
    /// Datagram payload length.
    pub len: Option<usize>,
}

/// One rule: every criterion given must hold.
#[derive(Debug, Clone, Default)]
pub struct Match {
    protocol: Option<Protocol>,
    ports: Vec<RangeInclusive<u16>>,
    prefixes: Vec<Rule>,
    dscp: Vec<u8>,
    user: Option<String>,
    forward: Option<String>,
    small_udp: Option<usize>,
}

impl Match {
    fn udp_port(port: u16) -> Match {
        Match { protocol: Some(Protocol::Udp), ports: vec![port..=port], ..Match::default() }
    }

    fn is_empty(&self) -> bool {
        self.protocol.is_none()
            && self.ports.is_empty()
            && self.prefixes.is_empty()
            && self.dscp.is_empty()
            && self.user.is_none()
            && self.forward.is_none()
            && self.small_udp.is_none()
    }

    fn matches(&self, f: &Flow) -> bool {
        self.protocol.is_none_or(|p| f.protocol == Some(p))
            && (self.ports.is_empty() || self.ports.iter().any(|r| r.contains(&f.port)))
            && (self.prefixes.is_empty()
                || f.ip.is_some_and(|ip| self.prefixes.iter().any(|r| r.covers(ip, f.port))))
            && (self.dscp.is_empty() || f.dscp.is_some_and(|d| self.dscp.contains(&d)))
            && self.user.as_deref().is_none_or(|u| f.user == Some(u))
            && self.forward.as_deref().is_none_or(|w| f.forward.is_some_and(|(l, t)| w == l || w == t))
            && self
                .small_udp
                .is_none_or(|n| f.protocol == Some(Protocol::Udp) && f.len.is_some_and(|l| l <= n))
    }
}

/// A class: its id on the wire, its settings and its rules.
#[derive(Debug, Clone)]
pub struct Class {
    /// Name in the configuration and status.
    pub name: String,
    /// Id carried by its streams and datagrams.
    pub id: u8,
    /// Scheduler, priority, deadline, rates.
    pub settings: TrafficClass,
    rules: Vec<Match>,
}

/// Every class and the rules that choose between them.
#[derive(Debug, Clone)]
pub struct Classifier {
    /// In the order rules are tried.
    classes: Vec<Class>,
}

impl Default for Classifier {
    /// The built-in classes alone.
    fn default() -> Self {
        Classifier { classes: builtins() }
    }
}

fn builtins() -> Vec<Class> {
    let interactive = Class {
        name: "interactive".into(),
        id: INTERACTIVE,
        settings: TrafficClass {
            priority: 0,
            scheduler: Some(Kind::Redundant(2)),
            ..TrafficClass::default()
        },
        rules: vec![
            Match::udp_port(53),
            Match { protocol: Some(Protocol::Tcp), ports: vec![22..=22], ..Match::default() },
            Match { small_udp: Some(SMALL_UDP), ..Match::default() },
        ],
    };
    let bulk = Class {
        name: "bulk".into(),
        id: BULK,
        settings: TrafficClass { priority: 2, ..TrafficClass::default() },
        rules: vec![Match { protocol: Some(Protocol::Tcp), ..Match::default() }],
    };
    let datagrams = Class {
        name: "datagrams".into(),
        id: DATAGRAMS,
        settings: TrafficClass { priority: 1, ..TrafficClass::default() },
        rules: vec![Match { protocol: Some(Protocol::Udp), ..Match::default() }],
    };
    vec![interactive, bulk, datagrams]
}

impl Classifier {
    /// The class of `flow`: the first class with a matching rule; streams no rule matched are
    /// bulk, datagrams are `datagrams`.
    pub fn classify(&self, flow: &Flow) -> u8 {
        self.classes
            .iter()
            .find(|c| c.rules.iter().any(|r| r.matches(flow)))
            .map_or(if flow.protocol == Some(Protocol::Udp) { DATAGRAMS } else { BULK }, |c| c.id)
    }

    /// The classes' settings by id, for the session (and, through its policy, the server).
    pub fn settings(&self) -> BTreeMap<u8, TrafficClass> {
        self.classes.iter().map(|c| (c.id, c.settings.clone())).collect()
    }

    /// The classes, in the order their rules are tried.
    pub fn classes(&self) -> &[Class] {
        &self.classes
    }

    /// The built-ins changed and extended by the file's `[[class]]` entries.
    pub fn from_sections(sections: &[ClassSection]) -> Result<Classifier, String> {
        let mut builtin = builtins();
        let mut user: Vec<Class> = Vec::new();
        for (i, s) in sections.iter().enumerate() {
            let at = |e: String| format!("class[{i}] '{}': {e}", s.name);
            let rule = s.rule().map_err(at)?;
            let existing = match builtin.iter().position(|c| c.name == s.name) {
                // A built-in class named by the user is tried with the user's classes, in
                // the user's order; its built-in rules stay unless the entry gives its own.
                Some(b) => {
                    let mut c = builtin.remove(b);
                    if !rule.is_empty() {
                        c.rules.clear();
                    }
                    user.push(c);
                    user.len() - 1
                }
                None => match user.iter().position(|c| c.name == s.name) {
                    Some(u) => u,
                    None => {
                        let id = (3u8..=u8::MAX)
                            .find(|id| !user.iter().chain(&builtin).any(|c| c.id == *id))
                            .ok_or_else(|| at("too many classes".into()))?;
                        user.push(Class {
                            name: s.name.clone(),
                            id,
                            settings: TrafficClass::default(),
                            rules: Vec::new(),
                        });
                        user.len() - 1
                    }
                },
            };
            let c = &mut user[existing];
            if !rule.is_empty() {
                c.rules.push(rule);
            }
            s.apply(&mut c.settings).map_err(at)?;
            if c.rules.is_empty() && c.id > INTERACTIVE {
                return Err(at(
                    "a class needs at least one of protocol, ports, prefixes, dscp, user, forward, small_udp"
                        .into(),
                ));
            }
        }
        user.extend(builtin);
        Ok(Classifier { classes: user })
    }
}

/// `[[class]]` of the client file: one rule and (optionally) the class's settings. Several
/// entries with one name give that class several rules.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassSection {
    name: String,
    protocol: Option<String>,
    #[serde(default)]
    ports: Vec<String>,
    #[serde(default)]
    prefixes: Vec<String>,
    #[serde(default)]
    dscp: Vec<u8>,
    user: Option<String>,
    forward: Option<String>,
    small_udp: Option<usize>,
    scheduler: Option<Parsed<Kind>>,
    priority: Option<u8>,
    deadline: Option<DurationText>,
    max_rate: Option<String>,
    min_rate: Option<String>,
    duplicate: Option<bool>,
}

impl ClassSection {
    fn rule(&self) -> Result<Match, String> {
        let protocol = match self.protocol.as_deref() {
            None | Some("any") => None,
            Some("tcp") => Some(Protocol::Tcp),
            Some("udp") => Some(Protocol::Udp),
            Some(p) => return Err(format!("protocol '{p}' is not tcp, udp or any")),
        };
        let ports = self
            .ports
            .iter()
            .map(|p| {
                let bad = || format!("port '{p}' is not a port or a range such as 10000-20000");
                match p.split_once('-') {
                    Some((a, b)) => {
                        Ok(a.trim().parse().map_err(|_| bad())?..=b.trim().parse().map_err(|_| bad())?)
                    }
                    None => p.trim().parse::<u16>().map(|n| n..=n).map_err(|_| bad()),
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        let prefixes = self.prefixes.iter().map(|p| Rule::parse(p)).collect::<Result<Vec<_>, String>>()?;
        if let Some(d) = self.dscp.iter().find(|d| **d > 63) {
            return Err(format!("dscp {d} is not a DSCP value (0-63)"));
        }
        Ok(Match {
            protocol,
            ports,
            prefixes,
            dscp: self.dscp.clone(),
            user: self.user.clone(),
            forward: self.forward.clone(),
            small_udp: self.small_udp,
        })
    }

    fn apply(&self, c: &mut TrafficClass) -> Result<(), String> {
        if let Some(k) = &self.scheduler {
            c.scheduler = Some(k.0);
        }
        if let Some(p) = self.priority {
            c.priority = p;
        }
        if let Some(d) = self.deadline {
            c.deadline = Some(d.0);
        }
        if let Some(r) = &self.max_rate {
            c.max_rate = Some((parse_rate(r)? / 8).max(1));
        }
        if let Some(r) = &self.min_rate {
            c.min_rate = Some((parse_rate(r)? / 8).max(1));
        }
        if let Some(d) = self.duplicate {
            c.duplicate = d;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sections(text: &str) -> Vec<ClassSection> {
        #[derive(Deserialize)]
        struct F {
            class: Vec<ClassSection>,
        }
        toml::from_str::<F>(text).unwrap().class
    }

    #[test]
    fn built_ins_put_dns_ssh_and_small_udp_first() {
        let c = Classifier::default();
        let udp = |port, len| Flow { protocol: Some(Protocol::Udp), port, len: Some(len), ..Flow::default() };
        let tcp = |port| Flow { protocol: Some(Protocol::Tcp), port, ..Flow::default() };
        assert_eq!(c.classify(&udp(53, 1200)), INTERACTIVE);
        assert_eq!(c.classify(&udp(4433, 160)), INTERACTIVE);
        assert_eq!(c.classify(&udp(4433, 1200)), DATAGRAMS);
        assert_eq!(c.classify(&tcp(22)), INTERACTIVE);
        assert_eq!(c.classify(&tcp(443)), BULK);
        let s = c.settings();
        assert_eq!(s[&INTERACTIVE].scheduler, Some(Kind::Redundant(2)));
        assert_eq!(s[&BULK].scheduler, None);
    }

    #[test]
    fn user_rules_come_first_and_change_built_ins() {
        let c = Classifier::from_sections(&sections(
            r#"
            [[class]]
            name = "voip"
            protocol = "udp"
            ports = ["5060", "10000-20000"]
            scheduler = "redundant:3"
            priority = 0
            deadline = "150ms"
            [[class]]
            name = "voip"
            dscp = [46]
            [[class]]
            name = "backups"
            prefixes = ["10.9.0.0/16"]
            user = "nas"
            max_rate = "8mbit"
            priority = 5
            [[class]]
            name = "bulk"
            scheduler = "wrr"
            "#,
        ))
        .unwrap();
        let voip = c.classes().iter().find(|k| k.name == "voip").unwrap().id;
        let udp = |port| Flow { protocol: Some(Protocol::Udp), port, len: Some(1200), ..Flow::default() };
        assert_eq!(c.classify(&udp(15000)), voip);
        assert_eq!(c.classify(&Flow { dscp: Some(46), ..udp(9) }), voip);
        assert_eq!(c.classify(&udp(9)), DATAGRAMS);
        let ip = Some("10.9.1.2".parse().unwrap());
        let nas = Flow { protocol: Some(Protocol::Tcp), ip, port: 445, user: Some("nas"), ..Flow::default() };
        let backups = c.classes().iter().find(|k| k.name == "backups").unwrap();
        assert_eq!(c.classify(&nas), backups.id);
        assert_eq!(backups.settings.max_rate, Some(1_000_000));
        assert_eq!(c.classify(&Flow { user: Some("eve"), ..nas }), BULK);
        assert_eq!(c.settings()[&BULK].scheduler, Some(Kind::Wrr));
        assert_eq!(c.settings()[&voip].deadline, Some(std::time::Duration::from_millis(150)));
        let e = Classifier::from_sections(&sections("[[class]]\nname = \"x\"\nports = [\"http\"]\n"))
            .unwrap_err();
        assert!(e.contains("class[0] 'x': port 'http'"), "{e}");
        let e = Classifier::from_sections(&sections("[[class]]\nname = \"x\"\npriority = 1\n")).unwrap_err();
        assert!(e.contains("needs at least one"), "{e}");
    }
}
