//! `[tun]` of the client file, and the flags that override it (`--tun`, `--gateway`,
//! `--tun-route`, `--tun-dns`).

use super::{parse_prefix, TunSettings};
use crate::config::DurationText;
use serde::Deserialize;
use std::path::PathBuf;

/// `[tun]` in the client file; see `examples/client.toml`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunSection {
    enable: Option<bool>,
    name: Option<String>,
    mtu: Option<u16>,
    #[serde(default)]
    routes: Vec<String>,
    #[serde(default)]
    dns: Vec<String>,
    gateway: Option<bool>,
    ipv6: Option<bool>,
    offload: Option<bool>,
    fwmark: Option<u32>,
    table: Option<u32>,
    reorder_max: Option<DurationText>,
    state_file: Option<PathBuf>,
    resolv_conf: Option<PathBuf>,
}

/// The TUN flags.
#[derive(Debug, Default, Clone)]
pub struct TunFlags {
    /// `--tun`.
    pub tun: bool,
    /// `--gateway` (implies `--tun`).
    pub gateway: bool,
    /// `--tun-route PREFIX` (replaces the file's when given).
    pub routes: Vec<String>,
    /// `--tun-dns ADDR` (replaces the file's when given).
    pub dns: Vec<String>,
}

impl TunSection {
    /// The settings, or None when TUN mode is off.
    pub fn settings(self, flags: &TunFlags) -> Result<Option<TunSettings>, String> {
        let gateway = flags.gateway || self.gateway.unwrap_or(false);
        if !(flags.tun || gateway || self.enable.unwrap_or(false)) {
            return Ok(None);
        }
        let mut s = TunSettings::new();
        if let Some(n) = self.name {
            if n.is_empty()
                || n.len() > 15
                || !n.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
            {
                return Err(format!(
                    "tun.name: '{n}' is not an interface name (at most 15 letters, digits, - _ .)"
                ));
            }
            s.name = n;
        }
        if let Some(m) = self.mtu {
            if !(1280..=1452).contains(&m) {
                return Err(format!(
                    "tun.mtu: {m} is outside 1280..1452 (a UDP datagram must fit one braid datagram)"
                ));
            }
            s.mtu = m;
        }
        let routes = if flags.routes.is_empty() { self.routes } else { flags.routes.clone() };
        s.routes = routes
            .iter()
            .map(|r| parse_prefix(r).map_err(|e| format!("tun.routes: {e}")))
            .collect::<Result<_, _>>()?;
        let dns = if flags.dns.is_empty() { self.dns } else { flags.dns.clone() };
        s.dns = dns
            .iter()
            .map(|d| d.parse().map_err(|_| format!("tun.dns: '{d}' is not an IP address")))
            .collect::<Result<_, _>>()?;
        s.gateway = gateway;
        s.ipv6 = self.ipv6.unwrap_or(true);
        s.offload = self.offload.unwrap_or(true);
        if let Some(m) = self.fwmark {
            if m == 0 {
                return Err("tun.fwmark: 0 marks nothing".into());
            }
            s.fwmark = m;
        }
        if let Some(t) = self.table {
            if !(2..=0x7fff_ffff).contains(&t) || [253, 254, 255].contains(&t) {
                return Err(format!("tun.table: {t} is reserved or out of range"));
            }
            s.table = t;
        }
        if let Some(d) = self.reorder_max {
            if d.0 > std::time::Duration::from_secs(2) {
                return Err(format!("tun.reorder_max: {:?} is over 2s", d.0));
            }
            s.reorder_max = d.0;
        }
        if let Some(f) = self.state_file {
            s.state_file = f;
        }
        if let Some(f) = self.resolv_conf {
            s.resolv_conf = f;
        }
        Ok(Some(s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_example_files_tun_section_parses() {
        let text = include_str!("../../../../examples/client.toml");
        let (_, section) = text.split_once("\n[tun]\n").expect("examples/client.toml has [tun]");
        let section = section.split("\n[").next().unwrap_or_default();
        let t: TunSection = toml::from_str(section).unwrap();
        assert_eq!(t.enable, Some(false));
        let s = t.settings(&TunFlags { tun: true, ..Default::default() }).unwrap().unwrap();
        assert_eq!(
            (s.name.as_str(), s.mtu, s.reorder_max),
            ("braid0", 1400, std::time::Duration::from_millis(150))
        );
    }

    #[test]
    fn off_unless_asked_and_checked_when_on() {
        assert_eq!(TunSection::default().settings(&TunFlags::default()).unwrap(), None);
        let f = TunFlags {
            gateway: true,
            routes: vec!["10.0.1.2".into(), "fd00::/8".into()],
            ..Default::default()
        };
        let s = TunSection::default().settings(&f).unwrap().unwrap();
        assert!(s.gateway);
        assert_eq!(s.routes, vec![("10.0.1.2".parse().unwrap(), 32), ("fd00::".parse().unwrap(), 8)]);
        let on = TunFlags { tun: true, ..Default::default() };
        let bad = |t: &str| toml::from_str::<TunSection>(t).unwrap().settings(&on).unwrap_err();
        assert!(bad("mtu = 9000").contains("tun.mtu"));
        assert!(bad("routes = [\"10.0.0.0/33\"]").contains("prefix length"));
        assert!(bad("dns = [\"resolver\"]").contains("tun.dns"));
        assert!(bad("table = 254").contains("reserved"));
        assert!(bad("name = \"a very long interface name\"").contains("tun.name"));
    }
}
