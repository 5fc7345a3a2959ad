//! Where the server may send its clients' traffic: an allow/deny list of networks and ports.
//! Private, loopback, link-local and multicast destinations are denied unless explicitly
//! allowed (`allow_private`), so a braid server is not a way into the network it sits in.
//!
//! Rules read `CIDR[:PORTS]`: `10.0.0.0/8`, `0.0.0.0/0:443`, `192.0.2.1:1000-2000`,
//! `[2001:db8::]/32:80`, `::1`.

use std::net::IpAddr;
use std::ops::RangeInclusive;

/// One rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rule {
    net: IpAddr,
    prefix: u8,
    ports: Option<RangeInclusive<u16>>,
    text: String,
}

impl Rule {
    /// Parses `CIDR[:PORTS]`.
    pub fn parse(s: &str) -> Result<Rule, String> {
        let bad = || format!("rule '{s}' is not CIDR[:PORTS] (e.g. 10.0.0.0/8, 0.0.0.0/0:443, [::1]:22)");
        let (addr_part, ports) = if let Some(rest) = s.strip_prefix('[') {
            let (inner, after) = rest.split_once(']').ok_or_else(bad)?;
            let (prefix, ports) = match after.split_once(':') {
                Some((p, ports)) => (p, Some(ports)),
                None => (after, None),
            };
            (format!("{inner}{prefix}"), ports)
        } else if s.matches(':').count() > 1 {
            (s.to_string(), None)
        } else {
            match s.split_once(':') {
                Some((a, p)) => (a.to_string(), Some(p)),
                None => (s.to_string(), None),
            }
        };
        let (ip, prefix) = match addr_part.split_once('/') {
            Some((ip, p)) => (ip.parse::<IpAddr>().map_err(|_| bad())?, p.parse::<u8>().map_err(|_| bad())?),
            None => {
                let ip: IpAddr = addr_part.parse().map_err(|_| bad())?;
                (ip, if ip.is_ipv4() { 32 } else { 128 })
            }
        };
        if prefix > if ip.is_ipv4() { 32 } else { 128 } {
            return Err(bad());
        }
        let ports = match ports {
            None | Some("*") => None,
            Some(p) => Some(match p.split_once('-') {
                Some((a, b)) => a.parse().map_err(|_| bad())?..=b.parse().map_err(|_| bad())?,
                None => {
                    let n: u16 = p.parse().map_err(|_| bad())?;
                    n..=n
                }
            }),
        };
        Ok(Rule { net: ip, prefix, ports, text: s.to_string() })
    }

    fn matches(&self, ip: IpAddr, port: u16) -> bool {
        if self.ports.as_ref().is_some_and(|r| !r.contains(&port)) {
            return false;
        }
        match (self.net, canonical(ip)) {
            (IpAddr::V4(n), IpAddr::V4(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u32::MAX << (32 - self.prefix) };
                u32::from(n) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(n), IpAddr::V6(a)) => {
                let mask = if self.prefix == 0 { 0 } else { u128::MAX << (128 - self.prefix) };
                u128::from(n) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

/// IPv4-mapped IPv6 addresses are checked as IPv4.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// True for loopback, private, link-local, shared (CGNAT), unspecified, multicast, broadcast
/// and reserved addresses.
pub fn is_private(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(a) => {
            let o = a.octets();
            a.is_loopback()
                || a.is_private()
                || a.is_link_local()
                || a.is_unspecified()
                || a.is_multicast()
                || a.is_broadcast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || o[0] >= 240
        }
        IpAddr::V6(a) => {
            let s = a.segments();
            a.is_loopback()
                || a.is_unspecified()
                || a.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00
                || (s[0] & 0xffc0) == 0xfe80
        }
    }
}

/// The policy.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    allow_private: bool,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
}

impl EgressPolicy {
    /// A policy from rule texts.
    pub fn new(allow_private: bool, allow: &[String], deny: &[String]) -> Result<Self, String> {
        Ok(EgressPolicy {
            allow_private,
            allow: allow.iter().map(|r| Rule::parse(r)).collect::<Result<_, _>>()?,
            deny: deny.iter().map(|r| Rule::parse(r)).collect::<Result<_, _>>()?,
        })
    }

    /// A policy that allows everything, private destinations included (tests, demo, lab).
    pub fn open() -> Self {
        EgressPolicy { allow_private: true, ..Default::default() }
    }

    /// Whether `ip:port` may be reached; the error says why not.
    pub fn check(&self, ip: IpAddr, port: u16) -> Result<(), String> {
        if let Some(r) = self.deny.iter().find(|r| r.matches(ip, port)) {
            return Err(format!("{ip}:{port} is denied by rule {}", r.text));
        }
        let explicitly_allowed = self.allow.iter().any(|r| r.matches(ip, port) && r.prefix > 0);
        if is_private(ip) && !self.allow_private && !explicitly_allowed {
            return Err(format!(
                "{ip} is a private or local address (the server denies these unless allowed)"
            ));
        }
        if !self.allow.is_empty() && !self.allow.iter().any(|r| r.matches(ip, port)) {
            return Err(format!("{ip}:{port} is not in the allow list"));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn defaults_deny_private_and_local() {
        let p = EgressPolicy::default();
        for a in [
            "127.0.0.1",
            "10.1.2.3",
            "192.168.0.1",
            "172.16.5.5",
            "169.254.1.1",
            "100.64.0.1",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(p.check(ip(a), 80).is_err(), "{a}");
        }
        assert!(p.check(ip("93.184.216.34"), 80).is_ok());
        assert!(p.check(ip("2001:db8::1"), 443).is_ok());
        assert!(EgressPolicy::open().check(ip("127.0.0.1"), 5201).is_ok());
    }

    #[test]
    fn rules_and_ports() {
        let p = EgressPolicy::new(
            false,
            &["0.0.0.0/0:443".into(), "10.9.0.0/16".into()],
            &["203.0.113.0/24".into()],
        )
        .unwrap();
        assert!(p.check(ip("93.184.216.34"), 443).is_ok());
        assert!(p.check(ip("93.184.216.34"), 80).unwrap_err().contains("allow list"));
        assert!(p.check(ip("203.0.113.5"), 443).unwrap_err().contains("denied by rule"));
        assert!(p.check(ip("10.9.1.1"), 22).is_ok(), "an explicit allow of a private net wins");
        assert!(Rule::parse("[2001:db8::]/32:80-90").is_ok());
        assert!(Rule::parse("::1").is_ok());
        assert!(Rule::parse("10.0.0.0/33").is_err());
        assert!(Rule::parse("nonsense").is_err());
    }
}
