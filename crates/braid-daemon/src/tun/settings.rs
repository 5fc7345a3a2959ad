//! TUN mode's settings and their defaults: the device, the prefixes routed into it, DNS,
//! gateway mode, the firewall mark and routing table that keep braid's own paths out.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::path::PathBuf;
use std::time::Duration;

/// The TUN's IPv4 address: the benchmarking range of RFC 2544, unlikely on a real LAN.
pub const ADDRESS_V4: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The TUN's IPv6 address (unique local, RFC 4193).
pub const ADDRESS_V6: Ipv6Addr = Ipv6Addr::new(0xfd00, 0xb1d, 0, 0, 0, 0, 0, 1);
/// Default device name.
pub const DEFAULT_NAME: &str = "braid0";
/// Default MTU: the largest UDP datagram it admits (1372 bytes over IPv4) still fits one braid
/// datagram with its flow header on a path of the default 1452-byte packets.
pub const DEFAULT_MTU: u16 = 1400;
/// Default firewall mark of braid's path sockets, routing table and rule priority.
pub const DEFAULT_MARK: u32 = 0xb1d;
/// Default routing table (and the priority of its rule).
pub const DEFAULT_TABLE: u32 = 2845;
/// TUN mode settings (`[tun]` in the client file).
#[derive(Debug, Clone, PartialEq)]
pub struct TunSettings {
    /// Device name.
    pub name: String,
    /// Device MTU.
    pub mtu: u16,
    /// Prefixes routed into the TUN; empty: the default route (IPv4 and IPv6).
    pub routes: Vec<(IpAddr, u8)>,
    /// DNS servers written to resolv.conf (reached through the TUN); empty: DNS untouched.
    pub dns: Vec<IpAddr>,
    /// Gateway mode: forward a LAN's traffic too (IP forwarding on).
    pub gateway: bool,
    /// Also IPv6.
    pub ipv6: bool,
    /// Linux GSO/GRO offloads on the device (fewer, larger reads).
    pub offload: bool,
    /// Firewall mark of braid's path sockets.
    pub fwmark: u32,
    /// braid's routing table; its rule has this priority too.
    pub table: u32,
    /// The longest a datagram waits in a flow's reorder window.
    pub reorder_max: Duration,
    /// Where the plan of host changes is kept.
    pub state_file: PathBuf,
    /// resolv.conf (a test may point elsewhere).
    pub resolv_conf: PathBuf,
}

impl TunSettings {
    /// Defaults for a device named `braid0` routing the default route.
    pub fn new() -> Self {
        TunSettings {
            name: DEFAULT_NAME.into(),
            mtu: DEFAULT_MTU,
            routes: Vec::new(),
            dns: Vec::new(),
            gateway: false,
            ipv6: true,
            offload: true,
            fwmark: DEFAULT_MARK,
            table: DEFAULT_TABLE,
            reorder_max: crate::reorder::DEFAULT_CAP,
            state_file: default_state_file(),
            resolv_conf: PathBuf::from("/etc/resolv.conf"),
        }
    }
}

impl Default for TunSettings {
    fn default() -> Self {
        Self::new()
    }
}

/// `$RUNTIME_DIRECTORY/tun-state.json`, else `/run/braid/tun-state.json`.
pub fn default_state_file() -> PathBuf {
    let dir = std::env::var_os("RUNTIME_DIRECTORY").map(PathBuf::from).unwrap_or_else(|| "/run/braid".into());
    dir.join("tun-state.json")
}

/// Parses `ADDR/LEN` (a bare address is a host route).
pub fn parse_prefix(s: &str) -> Result<(IpAddr, u8), String> {
    let (a, l) = s.split_once('/').unwrap_or((s, ""));
    let ip: IpAddr = a.trim().parse().map_err(|_| format!("'{s}' is not an IP prefix (ADDR/LEN)"))?;
    let max = if ip.is_ipv4() { 32 } else { 128 };
    let len =
        if l.is_empty() { max } else { l.trim().parse().map_err(|_| format!("'{s}': bad prefix length"))? };
    if len > max {
        return Err(format!("'{s}': prefix length over {max}"));
    }
    Ok((ip, len))
}
