//! LAN discovery with mDNS/DNS-SD (RFC 6762, RFC 6763) through the `mdns-sd` crate: a sharer
//! announces `NAME._braid-share._udp.local.` with its key and capacity in the TXT record; a
//! client browses for that type and learns sharers as they come and go (seed 000's members
//! joining and leaving the piconet at will).
//!
//! ```text
//! TXT: v=1  key=<sharer public key, base64>  cap=<WAN capacity, bit/s; absent if unknown>
//! ```
//! An announcement is not trusted for more than an address: the allocation handshake proves the
//! sharer holds the announced key, and the client may list the sharer keys it trusts.

use braid_core::PublicKey;
use mdns_sd::{ResolvedService, ServiceDaemon, ServiceEvent, ServiceInfo};
use std::net::{IpAddr, SocketAddr};

/// The DNS-SD service type.
pub const SERVICE_TYPE: &str = "_braid-share._udp.local.";

/// A sharer seen on the LAN.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discovered {
    /// The DNS-SD instance's full name (what a removal names).
    pub fullname: String,
    /// Its instance name.
    pub name: String,
    /// Where to send: its announced addresses, IPv4 first (never empty). A sharer listening on
    /// every address announces its WAN addresses too; the client tries each in turn.
    pub addrs: Vec<SocketAddr>,
    /// Its key.
    pub key: PublicKey,
    /// Its WAN capacity in bit/s, when announced.
    pub capacity: Option<u64>,
}

/// What the browser reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// A sharer appeared (or changed).
    Up(Discovered),
    /// The sharer with this full name left.
    Down(String),
}

/// Announces this sharer; returns the daemon (dropping it does not stop it: call
/// [`stop_announcing`]) and the instance's full name.
pub fn announce(
    name: &str,
    addr: SocketAddr,
    key: &PublicKey,
    capacity: Option<u64>,
) -> Result<(ServiceDaemon, String), String> {
    let d = ServiceDaemon::new().map_err(|e| format!("mDNS: {e}"))?;
    let key = key.to_string();
    let cap = capacity.map(|c| c.to_string());
    let mut props: Vec<(&str, &str)> = vec![("v", "1"), ("key", key.as_str())];
    if let Some(c) = &cap {
        props.push(("cap", c.as_str()));
    }
    let host = format!("{}.local.", sanitize(name));
    let ips: Vec<IpAddr> = if addr.ip().is_unspecified() { Vec::new() } else { vec![addr.ip()] };
    let mut info = ServiceInfo::new(SERVICE_TYPE, name, &host, ips.as_slice(), addr.port(), props.as_slice())
        .map_err(|e| format!("mDNS: {e}"))?;
    if addr.ip().is_unspecified() {
        info = info.enable_addr_auto();
    }
    let full = info.get_fullname().to_string();
    d.register(info).map_err(|e| format!("mDNS: {e}"))?;
    Ok((d, full))
}

/// Withdraws the announcement (a goodbye packet, so browsers drop the sharer at once).
pub fn stop_announcing(d: &ServiceDaemon, fullname: &str) {
    if let Ok(rx) = d.unregister(fullname) {
        let _ = rx.recv_timeout(std::time::Duration::from_millis(500));
    }
    let _ = d.shutdown();
}

fn sanitize(name: &str) -> String {
    let s: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '-' }).collect();
    if s.is_empty() {
        "braid-share".into()
    } else {
        s
    }
}

/// A sharer from a resolved service, or why it is ignored.
pub fn from_resolved(r: &ResolvedService) -> Result<Discovered, String> {
    if r.txt_properties.get_property_val_str("v") != Some("1") {
        return Err(format!("{}: not version 1", r.fullname));
    }
    let key: PublicKey = r
        .txt_properties
        .get_property_val_str("key")
        .ok_or_else(|| format!("{}: no key", r.fullname))?
        .parse()
        .map_err(|e| format!("{}: key: {e}", r.fullname))?;
    let capacity = r.txt_properties.get_property_val_str("cap").and_then(|c| c.parse().ok());
    let mut ips: Vec<IpAddr> = r.addresses.iter().map(|a| a.to_ip_addr()).collect();
    ips.sort_by_key(|ip| (!ip.is_ipv4(), *ip));
    if ips.is_empty() {
        return Err(format!("{}: no address", r.fullname));
    }
    let name = r.fullname.strip_suffix(&format!(".{SERVICE_TYPE}")).unwrap_or(&r.fullname).to_string();
    let addrs = ips.into_iter().map(|ip| SocketAddr::new(ip, r.port)).collect();
    Ok(Discovered { fullname: r.fullname.clone(), name, addrs, key, capacity })
}

/// Browses for sharers until the returned daemon is shut down; changes arrive on `tx`.
pub fn browse(tx: tokio::sync::mpsc::Sender<Change>) -> Result<ServiceDaemon, String> {
    let d = ServiceDaemon::new().map_err(|e| format!("mDNS: {e}"))?;
    let rx = d.browse(SERVICE_TYPE).map_err(|e| format!("mDNS: {e}"))?;
    tokio::spawn(async move {
        while let Ok(ev) = rx.recv_async().await {
            let change = match ev {
                ServiceEvent::ServiceResolved(r) => match from_resolved(&r) {
                    Ok(s) => Change::Up(s),
                    Err(e) => {
                        tracing::debug!(error = %e, "announcement ignored");
                        continue;
                    }
                },
                ServiceEvent::ServiceRemoved(_, full) => Change::Down(full),
                _ => continue,
            };
            if tx.send(change).await.is_err() {
                return;
            }
        }
    });
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_host_labels() {
        assert_eq!(sanitize("alice's phone"), "alice-s-phone");
        assert_eq!(sanitize(""), "braid-share");
    }
}
