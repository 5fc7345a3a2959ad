//! TUN mode end to end, in network namespaces (root; skipped otherwise, failed when
//! `BRAID_ROOT_TESTS=1`): a client namespace whose only route to the target host is braid's
//! TUN reaches it with curl over TCP (IPv4 and IPv6, by name through DNS), a UDP echo, DNS,
//! ping and a QUIC download (quinn) — no SOCKS, no forward; a link cut during a download breaks nothing; the
//! namespace's rules, routes and resolv.conf are as before after SIGTERM, and after SIGKILL
//! followed by a new start. Gateway mode carries a LAN host's traffic the same way; the
//! server's egress policy refuses TUN flows to denied addresses as it refuses SOCKS5.

mod nslab;
mod tunlab;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};
use tunlab::*;

const TOOLS: &[&str] = &["ip", "tc", "curl", "ping", "getent"];

fn ping(ns: &str, target: &str) -> bool {
    sh(&["ip", "netns", "exec", ns, "ping", "-c", "3", "-i", "0.2", "-W", "2", target])
}

#[test]
fn tun_carries_tcp_udp_dns_and_ping_and_a_download_survives_a_link_cut() {
    if !can_run(TOOLS) {
        return;
    }
    // Two links of 40 Mbit/s towards the client: 16 MB take ~1.7 s with both, longer with one.
    let mut lab = Lab::new("t", 2, Some(40));
    let body = blob(16 << 20);
    lab.serve_http(body.clone());
    lab.serve_udp_echo();
    lab.serve_dns();
    let before = lab.host_state();
    assert!(!before.contains("braid0"));
    lab.start_client(&[]);
    let c = lab.client.clone();
    // The client namespace has no route to the target but the TUN's.
    let direct = out(&["ip", "-n", &c, "route", "get", TARGET4, "mark", "0xb1d"]);
    assert!(direct.is_empty() || !direct.contains("dev tc"), "a direct route to the target: {direct}");

    // UDP, both families: every datagram back whole and in order.
    udp_echo(&c, SocketAddr::new(TARGET4.parse().unwrap(), ECHO_PORT), 100).unwrap();
    udp_echo(&c, SocketAddr::new(TARGET6.parse().unwrap(), ECHO_PORT), 100).unwrap();
    // QUIC (quinn): a 4 MB download over both links, byte-exact.
    let quic_body = blob(4 << 20);
    let quic_at = SocketAddr::new(TARGET4.parse().unwrap(), 4433);
    let cert = serve_quic(&lab, quic_at, quic_body.clone());
    let t = Instant::now();
    let got = quic_download(&c, quic_at, cert).unwrap();
    assert_eq!(sha256(&got), sha256(&quic_body), "the QUIC download is not byte-exact");
    eprintln!("QUIC: 4 MB in {:.2} s", t.elapsed().as_secs_f64());
    // DNS through the TUN (resolv.conf now names the target), then TCP by that name.
    let names = out(&["ip", "netns", "exec", &c, "getent", "ahostsv4", NAME]);
    assert!(names.contains(TARGET4), "DNS through the TUN: {names:?}");
    let names6 = out(&["ip", "netns", "exec", &c, "getent", "ahostsv6", NAME]);
    assert!(names6.contains(TARGET6), "DNS (AAAA) through the TUN: {names6:?}");
    assert!(ping(&c, TARGET4), "ping through the TUN");
    assert!(ping(&c, TARGET6), "ping -6 through the TUN");
    let small = lab.dir.join("v6");
    let ok = curl(&c, &format!("http://[{TARGET6}]:{HTTP_PORT}/x"), &small).status().unwrap().success();
    assert!(ok, "curl over IPv6 through the TUN");
    assert_eq!(sha256(&std::fs::read(&small).unwrap()), sha256(&body));

    // A download by name; link tc1 is cut a third of the way through.
    let file = lab.dir.join("download");
    let mut dl = curl(&c, &format!("http://{NAME}:{HTTP_PORT}/blob"), &file).spawn().unwrap();
    let started = Instant::now();
    wait_for("a third of the download", Duration::from_secs(20), || {
        std::fs::metadata(&file).map(|m| m.len() as usize > body.len() / 3).unwrap_or(false)
    });
    let at_cut = std::fs::metadata(&file).unwrap().len() as usize;
    assert!(at_cut < body.len(), "the download ended before the cut; nothing was tested");
    must(&["ip", "-n", &c, "link", "set", "tc1", "down"]);
    let end = Instant::now() + Duration::from_secs(30);
    let done = loop {
        if let Some(s) = dl.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < end, "the download did not end after the link cut");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(done.success(), "curl failed after the link cut: {done}");
    let got = std::fs::read(&file).unwrap();
    assert_eq!(got.len(), body.len());
    assert_eq!(sha256(&got), sha256(&body), "the download is not byte-exact");
    eprintln!("16 MB in {:.2} s, tc1 cut after {} bytes", started.elapsed().as_secs_f64(), at_cut);
    // The link back as it was, so that the namespace can be compared with its first state.
    must(&["ip", "-n", &c, "link", "set", "tc1", "up"]);
    must(&[
        "ip",
        "-n",
        &c,
        "route",
        "add",
        &format!("{SERVICE}/32"),
        "via",
        "10.77.1.2",
        "dev",
        "tc1",
        "metric",
        "1",
    ]);

    let st = lab.status();
    let tun = &st["frontend"]["tun"];
    assert!(tun["tcp_flows"].as_u64().unwrap_or(0) >= 2, "TCP flows through the TUN: {tun}");
    assert!(tun["udp_flows"].as_u64().unwrap_or(0) >= 3, "UDP flows (echo, DNS): {tun}");
    assert!(tun["ping_flows"].as_u64().unwrap_or(0) >= 2, "ping flows: {tun}");
    let client = lab.procs.len() - 1;
    assert!(lab.signal(client, libc::SIGTERM).success());
    assert_eq!(lab.host_state(), before, "routes, rules or DNS not restored after SIGTERM");
}

#[test]
fn a_tun_tcp_connection_is_reset_not_ended_when_the_session_dies() {
    if !can_run(TOOLS) {
        return;
    }
    // 10 Mbit/s towards the client: 32 MB would take ~27 s, so the transfer is under way when
    // the server dies; a short idle timeout ends the client's session soon after.
    let mut lab = Lab::new("k", 1, Some(10));
    lab.serve_http(blob(32 << 20));
    lab.start_client(&["--set=session.idle_timeout=2s"]);
    let (started, under_way) = std::sync::mpsc::channel();
    let app = in_netns(&lab.client, move || {
        let to = SocketAddr::new(TARGET4.parse().unwrap(), HTTP_PORT);
        let mut s = TcpStream::connect_timeout(&to, Duration::from_secs(5)).map_err(|e| (e.kind(), 0))?;
        s.write_all(b"GET /blob HTTP/1.0\r\n\r\n").map_err(|e| (e.kind(), 0))?;
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = vec![0u8; 65536];
        let mut got = 0usize;
        loop {
            match s.read(&mut buf) {
                Ok(0) => return Ok(got),
                Ok(n) => {
                    got += n;
                    if got >= 1 << 20 && got - n < 1 << 20 {
                        let _ = started.send(());
                    }
                }
                Err(e) => return Err((e.kind(), got)),
            }
        }
    });
    under_way.recv_timeout(Duration::from_secs(20)).expect("1 MB of the download through the TUN");
    let server = &mut lab.procs[0];
    server.kill().unwrap();
    server.wait().unwrap();
    match app.join().unwrap() {
        Err((ErrorKind::ConnectionReset, got)) => eprintln!("reset after {got} bytes, as it should"),
        Err((kind, got)) => panic!("the application saw {kind:?} after {got} bytes, not a reset"),
        Ok(got) => panic!("the application saw a clean end of file after {got} of 32 MB, not a reset"),
    }
}

#[test]
fn tun_restores_routes_rules_and_dns_after_sigterm_and_after_sigkill_and_a_new_start() {
    if !can_run(TOOLS) {
        return;
    }
    let mut lab = Lab::new("r", 1, None);
    lab.serve_http(blob(1000));
    let before = lab.host_state();
    let first = lab.start_client(&[]);
    let during = lab.host_state();
    assert_ne!(during, before);
    let dns = std::fs::read_to_string(lab.resolv_conf()).unwrap();
    assert!(dns.contains(&format!("nameserver {TARGET4}")) && !dns.contains("192.0.2.53"), "{dns}");
    assert!(lab.signal(first, libc::SIGTERM).success(), "exit status after SIGTERM");
    assert_eq!(lab.host_state(), before, "not restored after SIGTERM");
    assert!(!lab.state_file().exists(), "the state file outlived a clean stop");

    // A crash leaves the rules and resolv.conf behind (the device goes with the process)...
    let second = lab.start_client(&[]);
    lab.signal(second, libc::SIGKILL);
    let left = lab.host_state();
    assert_ne!(left, before, "SIGKILL left nothing behind; nothing to test");
    assert!(lab.state_file().exists());
    // ...which the next start undoes before making its own changes (one copy of each rule)...
    let third = lab.start_client(&[]);
    assert_eq!(lab.host_state(), during, "the new start did not undo the crashed run's changes");
    // ...and its own clean stop leaves the namespace as it was at first.
    assert!(lab.signal(third, libc::SIGTERM).success());
    assert_eq!(lab.host_state(), before, "not restored after SIGKILL and a new start");
}

#[test]
fn gateway_mode_carries_a_lan_hosts_tcp_udp_and_ping() {
    if !can_run(TOOLS) {
        return;
    }
    let mut lab = Lab::new("g", 1, None);
    let lan = lab.add_lan();
    let body = blob(4 << 20);
    lab.serve_http(body.clone());
    lab.serve_udp_echo();
    let c = lab.client.clone();
    let forwarding = || out(&["ip", "netns", "exec", &c, "sysctl", "-n", "net.ipv4.ip_forward"]);
    let before = (lab.host_state(), forwarding());
    let client = lab.start_client(&["--gateway"]);
    assert_eq!(forwarding().trim(), "1");
    let file = lab.dir.join("lan-download");
    assert!(curl(&lan, &format!("http://{TARGET4}:{HTTP_PORT}/b"), &file).status().unwrap().success());
    assert_eq!(sha256(&std::fs::read(&file).unwrap()), sha256(&body));
    udp_echo(&lan, SocketAddr::new(TARGET4.parse().unwrap(), ECHO_PORT), 50).unwrap();
    assert!(ping(&lan, TARGET4), "ping from the LAN through the gateway");
    assert!(lab.signal(client, libc::SIGTERM).success());
    assert_eq!((lab.host_state(), forwarding()), before, "gateway mode not undone");
}

#[test]
fn the_servers_egress_policy_refuses_tun_flows_as_it_refuses_socks() {
    if !can_run(TOOLS) {
        return;
    }
    // The server's default policy: the lab's private target is not allowed.
    let mut lab = Lab::with_egress("e", 1, None, false);
    lab.serve_http(blob(1000));
    lab.serve_udp_echo();
    let client = lab.start_client_connected(&[]);
    let c = lab.client.clone();
    let file = lab.dir.join("denied");
    let ok = curl(&c, &format!("http://{TARGET4}:{HTTP_PORT}/x"), &file).status().unwrap().success();
    assert!(!ok, "curl reached a private address the server's policy denies");
    assert!(std::fs::read(&file).map_or(true, |b| b.is_empty()), "bytes arrived from a denied address");
    // UDP is judged per datagram at the server, as for SOCKS5 UDP ASSOCIATE: none gets out.
    assert!(udp_echo(&c, SocketAddr::new(TARGET4.parse().unwrap(), ECHO_PORT), 1).is_err());
    assert!(!ping(&c, TARGET4), "ping reached a denied address");
    let tun = lab.status()["frontend"]["tun"].clone();
    assert!(tun["tcp_refused"].as_u64().unwrap_or(0) >= 1, "TCP refusal not counted: {tun}");
    assert!(lab.signal(client, libc::SIGTERM).success());
}
