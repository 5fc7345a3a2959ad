//! Network interfaces from netlink: which exist, which are up, their addresses, and a stream
//! of "something changed" notifications for hot-plug.

use futures::stream::{StreamExt, TryStreamExt};
use netlink_packet_route::address::{AddressAttribute, AddressScope};
use netlink_packet_route::link::{LinkAttribute, LinkFlags};
use rtnetlink::{new_connection, new_multicast_connection, MulticastGroup};
use std::collections::BTreeMap;
use std::io;
use std::net::IpAddr;
use std::time::Duration;
use tokio::sync::mpsc;

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    /// Name.
    pub name: String,
    /// Index.
    pub index: u32,
    /// Administratively and operationally up.
    pub up: bool,
    /// A loopback interface.
    pub loopback: bool,
    /// Addresses a path can leave from: global scope, and on a loopback interface also host
    /// scope (127.0.0.1 and ::1 are host-scoped, and `--link lo` must see them).
    pub addrs: Vec<IpAddr>,
}

/// Every interface, by name.
pub async fn interfaces() -> io::Result<BTreeMap<String, Interface>> {
    let (conn, handle, _) = new_connection()?;
    let task = tokio::spawn(conn);
    let mut by_index: BTreeMap<u32, Interface> = BTreeMap::new();
    let mut links = handle.link().get().execute();
    while let Some(msg) = links.try_next().await.map_err(io::Error::other)? {
        let name = msg.attributes.iter().find_map(|a| match a {
            LinkAttribute::IfName(n) => Some(n.clone()),
            _ => None,
        });
        let Some(name) = name else { continue };
        let flags = msg.header.flags;
        by_index.insert(
            msg.header.index,
            Interface {
                name,
                index: msg.header.index,
                up: flags.contains(LinkFlags::Up) && flags.contains(LinkFlags::Running),
                loopback: flags.contains(LinkFlags::Loopback),
                addrs: Vec::new(),
            },
        );
    }
    let mut addrs = handle.address().get().execute();
    while let Some(msg) = addrs.try_next().await.map_err(io::Error::other)? {
        let loopback = by_index.get(&msg.header.index).is_some_and(|i| i.loopback);
        let scope_ok = match msg.header.scope {
            AddressScope::Universe => true,
            AddressScope::Host => loopback,
            _ => false,
        };
        if !scope_ok {
            continue;
        }
        let ip = msg.attributes.iter().find_map(|a| match a {
            AddressAttribute::Local(ip) => Some(*ip),
            AddressAttribute::Address(ip) => Some(*ip),
            _ => None,
        });
        if let (Some(ip), Some(i)) = (ip, by_index.get_mut(&msg.header.index)) {
            if !i.addrs.contains(&ip) {
                i.addrs.push(ip);
            }
        }
    }
    task.abort();
    Ok(by_index.into_values().map(|i| (i.name.clone(), i)).collect())
}

/// Notifies (coalesced, at most every 200 ms) when links or addresses change. The task ends
/// when the receiver is dropped.
pub fn watch() -> io::Result<mpsc::Receiver<()>> {
    let (conn, _handle, mut messages) = new_multicast_connection(&[
        MulticastGroup::Link,
        MulticastGroup::Ipv4Ifaddr,
        MulticastGroup::Ipv6Ifaddr,
    ])?;
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let conn = tokio::spawn(conn);
        while messages.next().await.is_some() {
            tokio::time::sleep(Duration::from_millis(200)).await;
            // Coalesce a burst of messages into one notification.
            while let Ok(Some(_)) = tokio::time::timeout(Duration::from_millis(1), messages.next()).await {}
            if tx.send(()).await.is_err() {
                break;
            }
        }
        conn.abort();
    });
    Ok(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lists_loopback() {
        let ifs = interfaces().await.unwrap();
        let lo = ifs.values().find(|i| i.loopback).expect("a loopback interface");
        assert!(lo.index > 0);
        // 127.0.0.1 is host-scoped: it counts on loopback, so `--link lo` finds an address.
        assert!(lo.up, "{lo:?}");
        assert!(lo.addrs.iter().any(|a| a.is_loopback()), "{lo:?}");
    }
}
