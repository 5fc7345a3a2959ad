//! The LAN of a piconet (seed 000): a bridge `lan0` (10.0.200.1) in the client namespace and,
//! for neighbour `k`, a veth pair `l<k>` (10.0.200.(10+k), its namespace) — `b<k>` (a bridge
//! port). Both ends are shaped to the LAN rate, like a Wi-Fi or Ethernet segment that is fast
//! next to the WANs but not free. mDNS announcements travel over it as on a real LAN.

use std::time::Duration;

use anyhow::Result;

use super::names::Names;
use super::shape;
use crate::scenario::LinkSpec;
use crate::sys::cmd;
use braid_sim::link::QueueLimit;

/// Builds the bridge and one shaped port per neighbour namespace.
pub fn create(names: &Names, neighbours: &[String], rate_bps: u64) -> Result<()> {
    let cli = names.cli.as_str();
    let bridge = Names::LAN_BRIDGE;
    cmd::run_ok(&["ip", "-n", cli, "link", "add", bridge, "type", "bridge"])?;
    cmd::run_ok(&["ip", "-n", cli, "addr", "add", &format!("{}/24", Names::LAN_CLIENT_ADDR), "dev", bridge])?;
    cmd::run_ok(&["ip", "-n", cli, "link", "set", bridge, "up"])?;
    let mut lan = LinkSpec::new(rate_bps, Duration::ZERO);
    lan.queue = QueueLimit::Time(Duration::from_millis(20));
    for (k, ns) in (1..).zip(neighbours) {
        let (dev, port) = (Names::lan_dev(k), Names::lan_port(k));
        cmd::run_ok(&[
            "ip", "link", "add", &dev, "netns", ns, "type", "veth", "peer", "name", &port, "netns", cli,
        ])?;
        cmd::run_ok(&["ip", "-n", ns, "addr", "add", &format!("{}/24", Names::lan_addr(k)), "dev", &dev])?;
        for (n, d) in [(ns.as_str(), &dev), (cli, &port)] {
            shape::shape(n, d, &lan)?;
            cmd::run_ok(&["ip", "-n", n, "link", "set", d, "up"])?;
        }
        cmd::run_ok(&["ip", "-n", cli, "link", "set", &port, "master", bridge])?;
    }
    Ok(())
}
