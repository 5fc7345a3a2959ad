//! braid over a piconet (seed 000): each neighbour namespace runs `braid share`, offering its
//! WAN link to the client; the client bonds its own links with a path through every sharer it
//! finds on the LAN by mDNS (`[neighbours] discover`).
//!
//! ```text
//! braid share --config nb<k>.toml      # key, name neighbour<k>, listen 10.0.200.(10+k):7400,
//!                                      # servers [10.0.1.2:7000], wan_interface c<i>, member = client
//! braid client ... --set neighbours.discover=true --set neighbours.interface=lan0
//! ```

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Result};

use super::braid::BRAID_PORT;
use crate::scenario::units::tc_rate;
use crate::sys::netns::http_get;
use crate::sys::proc::{Proc, Stdin};
use crate::sys::signal;
use crate::topo::{Lab, Names};

/// UDP port a sharer listens on (its LAN address).
pub const SHARE_PORT: u16 = 7400;
/// A sharer's status port (its namespace's loopback).
pub const SHARE_STATUS_PORT: u16 = 7401;
/// How long the client may take to have a path through every sharer.
const JOIN_LIMIT: Duration = Duration::from_secs(30);

/// The name neighbour `k` announces; the client's path through it is labelled `via:<name>`.
pub fn sharer_name(k: usize) -> String {
    format!("neighbour{k}")
}

/// Neighbour `k`'s `braid share` configuration: it relays only to the lab's server, only for
/// `member`, over WAN link `link` of `rate_bps`. The owners are idle in the lab, so members get
/// the whole link (`owner_priority = "none"`, as in seed 000's piconet experiment); spare-capacity
/// mode has its own root test (crates/braid/tests/piconet.rs). Its usage against caps is kept
/// beside its key, in the run's own directory.
pub fn sharer_config(k: usize, link: usize, rate_bps: u64, key: &Path, member: &str) -> String {
    format!(
        "key = \"{}\"\nname = \"{}\"\nlisten = \"{}:{SHARE_PORT}\"\nservers = [\"{}:{BRAID_PORT}\"]\n\
         wan_interface = \"{}\"\ncapacity = \"{}\"\nowner_priority = \"none\"\n\
         status = \"127.0.0.1:{SHARE_STATUS_PORT}\"\nusage_file = \"{}\"\n\n\
         [[member]]\nname = \"client\"\nkey = \"{member}\"\n",
        key.display(),
        sharer_name(k),
        Names::lan_addr(k),
        Names::srv_addr(1),
        Names::cli_dev(link),
        tc_rate(rate_bps),
        key.with_extension("usage.redb").display(),
    )
}

/// The client's extra arguments: find sharers on the LAN.
pub fn client_args() -> Vec<String> {
    vec![
        "--set".into(),
        "neighbours.discover=true".into(),
        "--set".into(),
        format!("neighbours.interface={}", Names::LAN_BRIDGE),
    ]
}

/// Starts `braid share` in every neighbour namespace, with a fresh key each; their status
/// endpoints go to `running.sharer_status`.
pub fn start_sharers(
    lab: &Lab,
    braid: &Path,
    keys: &Path,
    member: &str,
    tag: &str,
    running: &mut super::Running,
) -> Result<()> {
    for (k, ns) in (1..).zip(lab.neighbours()) {
        let key = keys.join(format!("share{k}.key"));
        super::braid::keypair(braid, &key)?;
        let link = lab.own_links() + k;
        let cfg = keys.join(format!("share{k}.toml"));
        std::fs::write(&cfg, sharer_config(k, link, lab.links()[link - 1].rate_bps, &key, member))?;
        let mut c = Command::new("ip");
        c.args(["netns", "exec", ns]).arg(braid).args(["share", "--config"]).arg(&cfg);
        let log = lab.dir().join(format!("braid-share{k}-{tag}.log"));
        running.procs.push(Proc::spawn(&format!("braid share {k}"), c, &log, Stdin::Null)?);
        running.sharer_status.push((ns.clone(), ([127, 0, 0, 1], SHARE_STATUS_PORT).into()));
    }
    Ok(())
}

/// Waits until the client (status on `status` in the client namespace) has a path on each of
/// its own links and through each sharer, validated: carrying data, or held back by seed 000's
/// channel selection (`secondary`, `standby`, `backup`).
pub fn wait_for_paths(lab: &Lab, status: std::net::SocketAddr) -> Result<()> {
    let own = (1..=lab.own_links()).map(Names::cli_addr);
    let want: Vec<String> =
        own.chain((1..=lab.neighbours().len()).map(|k| format!("via:{}", sharer_name(k)))).collect();
    let mut last = Vec::new();
    let done = signal::poll_until(JOIN_LIMIT, Duration::from_millis(200), || {
        let body = http_get(lab.cli(), status, "/status", Duration::from_millis(500)).ok()?;
        last = joined_links(&body);
        want.iter().all(|w| last.contains(w)).then_some(())
    })?;
    if done.is_none() {
        bail!("after {}s the client's validated paths are {last:?}; want {want:?}", JOIN_LIMIT.as_secs());
    }
    Ok(())
}

/// The link labels of the validated paths in a client's status document.
pub fn joined_links(status_json: &str) -> Vec<String> {
    let Ok(v) = serde_json::from_str::<serde_json::Value>(status_json) else {
        return Vec::new();
    };
    let paths =
        v["sessions"].as_array().into_iter().flatten().filter_map(|s| s["paths"].as_array()).flatten();
    paths
        .filter(|p| matches!(p["state"].as_str(), Some("active" | "secondary" | "standby" | "backup")))
        .filter_map(|p| p["link"].as_str().map(String::from))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joined_links_reads_the_status_document() {
        let doc = r#"{"sessions":[{"paths":[{"link":"10.0.1.1","state":"active"},
            {"link":"via:neighbour1","state":"probing"},{"link":"via:neighbour2","state":"standby"}]}]}"#;
        assert_eq!(joined_links(doc), ["10.0.1.1", "via:neighbour2"]);
        assert!(joined_links("{}").is_empty());
        assert!(joined_links("nonsense").is_empty());
    }

    #[test]
    fn a_sharer_relays_to_the_lab_server_for_the_client_only() {
        let c = sharer_config(2, 3, 10_000_000, Path::new("/k/share2.key"), "PUB");
        let v: toml::Table = toml::from_str(&c).unwrap();
        assert_eq!(v["listen"].as_str(), Some("10.0.200.12:7400"));
        assert_eq!(v["servers"].as_array().unwrap()[0].as_str(), Some("10.0.1.2:7000"));
        assert_eq!(v["wan_interface"].as_str(), Some("c3"));
        assert_eq!(v["capacity"].as_str(), Some("10mbit"));
        assert_eq!(v["usage_file"].as_str(), Some("/k/share2.usage.redb"));
        assert_eq!(v["member"].as_array().unwrap()[0]["key"].as_str(), Some("PUB"));
    }
}
