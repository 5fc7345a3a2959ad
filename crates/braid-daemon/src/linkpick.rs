//! Which interfaces a client link stands for, and how a link is named.
//!
//! `auto` means every interface that can reach the server: for a server on a loopback address
//! (a first try on one machine) that is the loopback interface and nothing else — an `eth0`
//! socket never reaches 127.0.0.1, and a client bound there would wait out its handshake
//! timeout and then blame the server. For any other server it is every interface that is up
//! with a global address of the server's family, loopback excluded.

use crate::client::ActiveLink;
use crate::error::Failure;
use crate::netlink::Interface;
use crate::udp::UdpLink;
use std::collections::BTreeMap;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The interfaces `auto` uses to reach `server`, in name order.
pub fn auto_interfaces(ifs: &BTreeMap<String, Interface>, server: SocketAddr) -> Vec<&Interface> {
    let family = |a: &IpAddr| a.is_ipv4() == server.is_ipv4();
    ifs.values()
        .filter(|i| i.up)
        .filter(|i| {
            if server.ip().is_loopback() {
                i.loopback
            } else {
                !i.loopback && i.addrs.iter().any(|a| family(a) && usable(*a))
            }
        })
        .collect()
}

fn usable(ip: IpAddr) -> bool {
    !ip.is_loopback() && !ip.is_unspecified() && !ip.is_multicast()
}

/// A socket for `auto` on interface `i` towards `server`: on a loopback interface, bound to
/// the loopback address of the server's family (no device binding needed); elsewhere bound to
/// the interface.
pub fn bind_auto(i: &Interface, server: SocketAddr) -> io::Result<UdpLink> {
    if i.loopback {
        let ip =
            if server.is_ipv4() { IpAddr::V4(Ipv4Addr::LOCALHOST) } else { IpAddr::V6(Ipv6Addr::LOCALHOST) };
        UdpLink::bind(SocketAddr::new(ip, 0), None)
    } else {
        UdpLink::bind(unspecified(server), Some(&i.name))
    }
}

/// The unspecified address of `server`'s family, port 0.
pub fn unspecified(server: SocketAddr) -> SocketAddr {
    match server {
        SocketAddr::V4(_) => SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0),
        SocketAddr::V6(_) => SocketAddr::new(IpAddr::V6(Ipv6Addr::UNSPECIFIED), 0),
    }
}

/// Refuses a named interface that cannot reach `server`: any interface but loopback, for a
/// server on a loopback address.
pub fn check_reaches(i: &Interface, server: SocketAddr) -> Result<(), Failure> {
    if server.ip().is_loopback() && !i.loopback {
        return Err(Failure::Interface(format!(
            "link {}: cannot reach the server at {server}, a loopback address (only the loopback interface can): leave out --link, or use --link lo",
            i.name
        )));
    }
    Ok(())
}

/// The label of a link given as a local address: the address, and the server address it
/// uses when that is its own (`127.0.0.1@127.0.0.1:40001`), so that several links from one
/// address have names of their own in the status, the metrics and the page.
pub fn address_label(ip: IpAddr, own_server: Option<&str>) -> String {
    match own_server {
        Some(s) => format!("{ip}@{s}"),
        None => ip.to_string(),
    }
}

/// One line for the log: each link, its socket and the server address it uses.
pub fn describe(links: &[ActiveLink]) -> String {
    let mut parts: Vec<String> = links
        .iter()
        .map(|l| {
            let backup = if l.backup { ", backup" } else { "" };
            format!("{} ({} -> {}{backup})", l.label, l.link.local, l.server)
        })
        .collect();
    if parts.is_empty() {
        parts.push("none".into());
    }
    parts.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(name: &str, up: bool, loopback: bool, addrs: &[&str]) -> (String, Interface) {
        let addrs = addrs.iter().map(|a| a.parse().unwrap()).collect();
        (name.to_string(), Interface { name: name.into(), index: 1, up, loopback, addrs })
    }

    fn machine() -> BTreeMap<String, Interface> {
        [
            iface("lo", true, true, &["127.0.0.1", "::1"]),
            iface("eth0", true, false, &["192.0.2.10", "2001:db8::10"]),
            iface("wlan0", true, false, &["198.51.100.7"]),
            iface("wwan0", false, false, &["203.0.113.5"]),
        ]
        .into()
    }

    fn names(v: Vec<&Interface>) -> Vec<&str> {
        v.into_iter().map(|i| i.name.as_str()).collect()
    }

    #[test]
    fn auto_picks_loopback_for_a_loopback_server_and_never_else() {
        let ifs = machine();
        assert_eq!(names(auto_interfaces(&ifs, "127.0.0.1:7000".parse().unwrap())), ["lo"]);
        assert_eq!(names(auto_interfaces(&ifs, "[::1]:7000".parse().unwrap())), ["lo"]);
        assert_eq!(names(auto_interfaces(&ifs, "192.0.2.1:7000".parse().unwrap())), ["eth0", "wlan0"]);
        assert_eq!(names(auto_interfaces(&ifs, "[2001:db8::1]:7000".parse().unwrap())), ["eth0"]);
    }

    #[test]
    fn a_named_interface_must_reach_the_server() {
        let ifs = machine();
        let e = check_reaches(&ifs["eth0"], "127.0.0.1:7000".parse().unwrap()).unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(e.to_string().contains("--link lo"), "{e}");
        assert!(check_reaches(&ifs["lo"], "127.0.0.1:7000".parse().unwrap()).is_ok());
        assert!(check_reaches(&ifs["eth0"], "192.0.2.1:7000".parse().unwrap()).is_ok());
    }

    #[tokio::test]
    async fn loopback_auto_links_bind_without_a_device() {
        let ifs = machine();
        let l = bind_auto(&ifs["lo"], "127.0.0.1:7000".parse().unwrap()).unwrap();
        assert!(l.local.ip().is_loopback() && l.local.port() != 0, "{}", l.local);
        assert_eq!(address_label("127.0.0.1".parse().unwrap(), Some("127.0.0.1:9")), "127.0.0.1@127.0.0.1:9");
        assert_eq!(address_label("::1".parse().unwrap(), None), "::1");
    }
}
