//! Where the server may send its clients' traffic: an allow/deny list of networks and ports.
//! Private, loopback, link-local, multicast and other non-internet destinations
//! ([`special`]), and the server's own addresses ([`local`]), are denied unless explicitly
//! allowed (`allow_private`), so a braid server is not a way into the network it sits in, nor
//! into its own host.
//!
//! An IPv6 address that embeds an IPv4 address (mapped, compatible, NAT64, 6to4, Teredo) is
//! judged as the IPv4 address(es) it stands for, by every check: the private ranges, the deny
//! rules and the allow rules.
//!
//! Rules read `CIDR[:PORTS]`: `10.0.0.0/8`, `0.0.0.0/0:443`, `192.0.2.1:1000-2000`,
//! `[2001:db8::]/32:80`, `::1`.

pub mod local;
pub mod special;

pub use special::is_private;

use local::LocalAddresses;
use special::stands_for;
use std::net::IpAddr;
use std::ops::RangeInclusive;

/// How an operator allows what the default policy denies, for refusal messages.
pub const ALLOW_HINT: &str =
    "allow it with --allow-private or [egress] allow_private = true, or an [egress] allow rule for it";

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

    /// Whether the rule covers `ip:port`, `ip` as written (callers also try what it stands for).
    fn matches(&self, ip: IpAddr, port: u16) -> bool {
        if self.ports.as_ref().is_some_and(|r| !r.contains(&port)) {
            return false;
        }
        match (self.net, ip) {
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

    /// Whether the rule covers `ip:port` (traffic-class rules use egress's rule syntax).
    pub fn covers(&self, ip: IpAddr, port: u16) -> bool {
        self.matches(ip, port)
    }

    /// Whether the rule names one host (a /32 or /128).
    fn is_host(&self) -> bool {
        self.prefix == if self.net.is_ipv4() { 32 } else { 128 }
    }
}

/// The policy.
#[derive(Debug, Clone, Default)]
pub struct EgressPolicy {
    allow_private: bool,
    allow: Vec<Rule>,
    deny: Vec<Rule>,
    /// The server's own addresses, shared by every clone of the policy.
    local: LocalAddresses,
}

impl EgressPolicy {
    /// A policy from rule texts.
    pub fn new(allow_private: bool, allow: &[String], deny: &[String]) -> Result<Self, String> {
        Ok(EgressPolicy {
            allow_private,
            allow: allow.iter().map(|r| Rule::parse(r)).collect::<Result<_, _>>()?,
            deny: deny.iter().map(|r| Rule::parse(r)).collect::<Result<_, _>>()?,
            local: LocalAddresses::default(),
        })
    }

    /// A policy that allows everything, private destinations included (tests, demo, lab).
    pub fn open() -> Self {
        EgressPolicy { allow_private: true, ..Default::default() }
    }

    /// The server's own addresses, as the policy sees them.
    pub fn local_addresses(&self) -> &LocalAddresses {
        &self.local
    }

    /// Reads the server's own addresses again if the list is stale (see [`local`]); call
    /// before [`check`](Self::check) where waiting is possible.
    pub async fn refresh(&self) {
        if !self.allow_private {
            self.local.refresh_if_stale().await;
        }
    }

    /// Whether `ip:port` may be reached; the error says why not.
    ///
    /// Every address `ip` stands for is checked ([`special::stands_for`]): a deny rule that
    /// covers any of them denies; each private one must be allowed explicitly (`allow_private`,
    /// or an allow rule narrower than `/0` that covers it — a rule for the IPv6 form of a
    /// NAT64 or 6to4 prefix does not open the private IPv4 space behind it); each of the
    /// server's own addresses must be allowed by `allow_private` or an allow rule naming that
    /// one host (a public range in the allow list is about the internet, not this host); and
    /// with an allow list, the address as written or every address it stands for must be in it.
    pub fn check(&self, ip: IpAddr, port: u16) -> Result<(), String> {
        let meanings = stands_for(ip);
        let covers = |r: &Rule| r.matches(ip, port) || meanings.iter().any(|m| r.matches(*m, port));
        if let Some(r) = self.deny.iter().find(|r| covers(r)) {
            return Err(format!("{ip}:{port} is denied by rule {}", r.text));
        }
        let written_as = |m: IpAddr| if m == ip { String::new() } else { format!(" (it stands for {m})") };
        if !self.allow_private {
            for &m in &meanings {
                if self.local.contains(m) && !self.allow.iter().any(|r| r.is_host() && r.matches(m, port)) {
                    return Err(format!(
                        "{ip}{} is an address of this server (denied unless allowed: the server must not be a way into its own host; {ALLOW_HINT})",
                        written_as(m)
                    ));
                }
                if is_private(m) && !self.allow.iter().any(|r| r.prefix > 0 && r.matches(m, port)) {
                    return Err(format!(
                        "{ip}{} is a private or local address (the server denies these unless allowed: {ALLOW_HINT})",
                        written_as(m)
                    ));
                }
            }
        }
        let listed = |a: IpAddr| self.allow.iter().any(|r| r.matches(a, port));
        if !self.allow.is_empty() && !listed(ip) && !meanings.iter().all(|m| listed(*m)) {
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
        assert!(p.check(ip("2606:4700::1111"), 443).is_ok());
        assert!(EgressPolicy::open().check(ip("127.0.0.1"), 5201).is_ok());
    }

    #[test]
    fn ipv6_forms_of_private_ipv4_are_denied() {
        let p = EgressPolicy::default();
        for a in [
            "::ffff:127.0.0.1",            // IPv4-mapped
            "::ffff:0:127.0.0.1",          // IPv4-translated (SIIT)
            "::127.0.0.1",                 // IPv4-compatible
            "::10.0.0.1",                  // IPv4-compatible
            "::2",                         // IPv4-compatible 0.0.0.2
            "64:ff9b::7f00:1",             // NAT64 of 127.0.0.1
            "64:ff9b::a9fe:a9fe",          // NAT64 of 169.254.169.254 (cloud metadata)
            "64:ff9b:1::1",                // local-use NAT64: the whole /48
            "64:ff9b:1:ab00:1::",          // local-use NAT64, /56-style position
            "2002:7f00:1::1",              // 6to4 of 127.0.0.1
            "2002:c0a8:101::",             // 6to4 of 192.168.1.1
            "2001:0:7f00:1::",             // Teredo, server 127.0.0.1
            "2001:0:5db8:d822::f5ff:fffe", // Teredo, public server, client 10.0.0.1
        ] {
            let e = p.check(ip(a), 80).expect_err(a);
            assert!(e.contains("private or local"), "{a}: {e}");
            assert!(
                e.contains("--allow-private") && e.contains("[egress] allow_private"),
                "names the fix: {e}"
            );
        }
        let e = p.check(ip("64:ff9b::7f00:1"), 80).unwrap_err();
        assert!(e.contains("stands for 127.0.0.1"), "{e}");
    }

    #[test]
    fn ipv6_forms_of_public_ipv4_pass() {
        let p = EgressPolicy::default();
        for a in [
            "::ffff:93.184.216.34",
            "64:ff9b::5db8:d822",
            "2002:5db8:d822::1",
            "2001:0:5db8:d822::f7f7:f7f7", // Teredo: server 93.184.216.34, client 8.8.8.8
        ] {
            assert!(p.check(ip(a), 443).is_ok(), "{a}: {:?}", p.check(ip(a), 443));
        }
    }

    #[test]
    fn non_internet_ipv6_ranges_are_denied() {
        let p = EgressPolicy::default();
        for a in [
            "::",
            "fec0::1",     // site-local (deprecated)
            "100::1",      // discard-only
            "2001:db8::1", // documentation
            "3fff::1",     // documentation (RFC 9637)
            "2001:2::5",   // benchmarking
            "ff02::1",     // multicast
            "192.0.2.7",   // IPv4 documentation
            "198.18.0.1",  // IPv4 benchmarking
        ] {
            assert!(p.check(ip(a), 80).is_err(), "{a}");
        }
    }

    #[test]
    fn the_servers_own_addresses_are_denied_unless_named() {
        let p = EgressPolicy::new(false, &["0.0.0.0/1:443".into(), "45.67.0.0/16".into()], &[]).unwrap();
        p.local_addresses().set(vec![ip("45.67.89.10"), ip("2a01:4f8::10")]);
        for a in ["45.67.89.10", "::ffff:45.67.89.10", "64:ff9b::2d43:590a", "2002:2d43:590a::1"] {
            let e = p.check(ip(a), 443).expect_err(a);
            assert!(e.contains("address of this server"), "{a}: {e}");
        }
        assert!(p.check(ip("45.67.89.11"), 443).is_ok(), "a neighbour in the allowed range");
        let p = EgressPolicy::new(false, &[], &[]).unwrap();
        p.local_addresses().set(vec![ip("2a01:4f8::10")]);
        assert!(p.check(ip("2a01:4f8::10"), 22).is_err());
        let named = EgressPolicy::new(false, &["45.67.89.10:443".into()], &[]).unwrap();
        named.local_addresses().set(vec![ip("45.67.89.10")]);
        assert!(named.check(ip("45.67.89.10"), 443).is_ok(), "a rule naming the host opens it");
        assert!(named.check(ip("45.67.89.10"), 22).is_err(), "on its ports only");
        let open = EgressPolicy::open();
        open.local_addresses().set(vec![ip("45.67.89.10")]);
        assert!(open.check(ip("45.67.89.10"), 22).is_ok(), "allow_private opens it");
    }

    #[test]
    fn allow_rules_for_translation_prefixes_do_not_open_private_space() {
        let p = EgressPolicy::new(false, &["[64:ff9b::]/96".into(), "[2002::]/16".into()], &[]).unwrap();
        assert!(p.check(ip("64:ff9b::5db8:d822"), 443).is_ok(), "NAT64 to the internet");
        assert!(p.check(ip("2002:5db8:d822::1"), 443).is_ok(), "6to4 to the internet");
        for a in ["64:ff9b::7f00:1", "64:ff9b::a00:1", "2002:a00:1::", "2002:7f00:1::"] {
            assert!(p.check(ip(a), 443).unwrap_err().contains("private"), "{a}");
        }
        // An IPv4 allow list applies to the IPv6 forms of its addresses, private or not.
        let p = EgressPolicy::new(false, &["0.0.0.0/0:443".into(), "10.9.0.0/16".into()], &[]).unwrap();
        assert!(p.check(ip("64:ff9b::5db8:d822"), 443).is_ok());
        assert!(p.check(ip("64:ff9b::5db8:d822"), 80).unwrap_err().contains("allow list"));
        assert!(p.check(ip("64:ff9b::a00:1"), 443).unwrap_err().contains("private"), "/0 is not explicit");
        assert!(p.check(ip("64:ff9b::a09:1"), 22).is_ok(), "the NAT64 form of an allowed private net");
        assert!(p.check(ip("2606:4700::1111"), 443).unwrap_err().contains("allow list"));
        // Deny rules cover the IPv6 forms too.
        let p = EgressPolicy::new(false, &[], &["93.184.216.0/24".into()]).unwrap();
        for a in ["93.184.216.34", "::ffff:93.184.216.34", "64:ff9b::5db8:d822", "2002:5db8:d822::"] {
            assert!(p.check(ip(a), 443).unwrap_err().contains("denied by rule"), "{a}");
        }
    }

    #[tokio::test]
    async fn the_hosts_addresses_come_from_netlink() {
        // Broad allow rules open private ranges, but not the host's own addresses.
        let p = EgressPolicy::new(
            false,
            &["0.0.0.0/1".into(), "128.0.0.0/1".into(), "[::]/1".into(), "[8000::]/1".into()],
            &[],
        )
        .unwrap();
        p.refresh().await;
        let ifs = crate::netlink::interfaces().await.unwrap();
        for a in ifs.values().flat_map(|i| i.addrs.iter()) {
            assert!(p.local_addresses().contains(*a), "{a} was not listed");
            let e = p.check(*a, 80).expect_err(&a.to_string());
            assert!(e.contains("address of this server"), "{a}: {e}");
        }
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
