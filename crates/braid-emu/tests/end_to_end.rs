//! End-to-end tests over loopback relays: real sockets, real tokio, the whole daemon.

use braid_core::{AckPath, SessionConfig};
use braid_daemon::{start_client, start_server, Failure};
use braid_emu::testbed::{
    client_settings, download_socks, server_settings, start_source, Keys, Testbed, TestbedConfig,
};
use braid_sim::LinkSpec;
use fast_socks5::client::{Config, Socks5Datagram, Socks5Stream};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream, UdpSocket};

fn links(specs: &[&str]) -> Vec<LinkSpec> {
    specs.iter().map(|s| LinkSpec::parse(s).unwrap()).collect()
}

fn quick_session() -> SessionConfig {
    SessionConfig { handshake_timeout: Duration::from_secs(2), ..SessionConfig::default() }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_megabytes_arrive_identical_while_a_path_is_cut_and_restored() {
    let source = start_source(50 << 20, 9).await.unwrap();
    let bed = Testbed::start(TestbedConfig::new(links(&["200mbit/2ms", "100mbit/5ms"]))).await.unwrap();
    let relay = bed.relays[0].clone();
    let cutter = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(700)).await;
        relay.set_down(true);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        relay.set_down(false);
    });
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    cutter.await.unwrap();
    assert_eq!(d.bytes, source.len);
    assert_eq!(d.sha256, source.sha256, "the download differs from the source");
    let st = bed.client.board.snapshot();
    assert!(
        st.sessions[0].paths.iter().any(|p| p.blackouts > 0),
        "the cut went unnoticed: {:?}",
        st.sessions[0].paths
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn port_forward_carries_a_tcp_connection_both_ways() {
    let echo = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = echo.local_addr().unwrap();
    let uecho = UdpSocket::bind(target).await.unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = uecho.recv_from(&mut buf).await {
            let _ = uecho.send_to(&buf[..n], from).await;
        }
    });
    tokio::spawn(async move {
        while let Ok((mut c, _)) = echo.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = c.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    let cfg = TestbedConfig {
        forwards: vec![target.to_string()],
        socks: false,
        ..TestbedConfig::new(links(&["50mbit/5ms", "20mbit/10ms"]))
    };
    let bed = Testbed::start(cfg).await.unwrap();
    let mut c = TcpStream::connect(bed.client.forward_addrs[0]).await.unwrap();
    let msg: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    c.write_all(&msg).await.unwrap();
    c.shutdown().await.unwrap();
    let mut back = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), c.read_to_end(&mut back)).await.unwrap().unwrap();
    assert_eq!(back, msg);
    // The forward's port carries UDP to the same target port as well.
    let u = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let mut answered = false;
    for i in 0..20u8 {
        u.send_to(&[7, 7, i], bed.client.forward_addrs[0]).await.unwrap();
        let mut buf = [0u8; 16];
        if let Ok(Ok((n, _))) = tokio::time::timeout(Duration::from_millis(300), u.recv_from(&mut buf)).await
        {
            assert_eq!(&buf[..2], &[7, 7]);
            assert_eq!(n, 3);
            answered = true;
            break;
        }
    }
    assert!(answered, "no UDP answer through the forward");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn udp_associate_round_trip() {
    let echo = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    let target = echo.local_addr().unwrap();
    tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf).await {
            let _ = echo.send_to(&buf[..n], from).await;
        }
    });
    let bed = Testbed::start(TestbedConfig::new(links(&["50mbit/5ms", "20mbit/10ms"]))).await.unwrap();
    let control = TcpStream::connect(bed.client.socks_addr.unwrap()).await.unwrap();
    let dg = Socks5Datagram::bind(control, "127.0.0.1:0").await.unwrap();
    let mut got = None;
    for i in 0..20u8 {
        dg.send_to(&[b'u', b'd', b'p', i], target).await.unwrap();
        let mut buf = [0u8; 64];
        if let Ok(Ok((n, from))) =
            tokio::time::timeout(Duration::from_millis(500), dg.recv_from(&mut buf)).await
        {
            got = Some((buf[..n].to_vec(), from));
            break;
        }
    }
    let (data, _) = got.expect("no UDP answer through the association");
    assert_eq!(&data[..3], b"udp");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_server_key_is_reported_as_no_answer() {
    let keys = Keys::generate();
    let server = start_server(server_settings(&keys, quick_session(), false)).await.unwrap();
    let mut cs = client_settings(
        &keys,
        server.addr,
        &[server.addr],
        &TestbedConfig { session: quick_session(), ..TestbedConfig::new(vec![]) },
    );
    cs.server_key = braid_daemon::keyfile::generate().public_key();
    let mut client = start_client(cs).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(15), client.wait()).await.unwrap().unwrap_err();
    assert!(matches!(err, Failure::NoAnswer(_)), "{err}");
    assert_eq!(err.exit_code(), 5);
    assert!(err.to_string().contains("key"), "{err}");
    let st = server.board.snapshot();
    // mac1 is keyed by the server's public key: the server drops the message before any
    // public-key work.
    assert!(st.endpoint_dropped.get("bad_mac").copied().unwrap_or(0) > 0, "{:?}", st.endpoint_dropped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_client_key_is_refused() {
    let keys = Keys::generate();
    let server = start_server(server_settings(&keys, quick_session(), false)).await.unwrap();
    let mut cs = client_settings(
        &keys,
        server.addr,
        &[server.addr],
        &TestbedConfig { session: quick_session(), ..TestbedConfig::new(vec![]) },
    );
    cs.secret = braid_daemon::keyfile::generate();
    let mut client = start_client(cs).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(15), client.wait()).await.unwrap().unwrap_err();
    assert!(matches!(err, Failure::Refused(_)), "{err}");
    assert_eq!(err.exit_code(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_down_is_reported_as_unreachable() {
    let keys = Keys::generate();
    // A port with nothing behind it: the kernel answers with ICMP port unreachable.
    let closed = UdpSocket::bind("127.0.0.1:0").await.unwrap().local_addr().unwrap();
    let cs = client_settings(
        &keys,
        closed,
        &[closed],
        &TestbedConfig { session: quick_session(), ..TestbedConfig::new(vec![]) },
    );
    let mut client = start_client(cs).await.unwrap();
    let err = tokio::time::timeout(Duration::from_secs(15), client.wait()).await.unwrap().unwrap_err();
    assert!(matches!(err, Failure::Unreachable(_)), "{err}");
    assert_eq!(err.exit_code(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_survives_garbage_on_its_port() {
    let source = start_source(8 << 20, 3).await.unwrap();
    let bed = Testbed::start(TestbedConfig::new(links(&["100mbit/2ms", "50mbit/5ms"]))).await.unwrap();
    let server = bed.server.addr;
    let junk = tokio::spawn(async move {
        let s = UdpSocket::bind("127.0.0.1:0").await.unwrap();
        for i in 0..3000u32 {
            let len = (i * 7919 % 1500) as usize;
            let mut pkt: Vec<u8> = (0..len).map(|j| (j as u32 * 31 + i) as u8).collect();
            if let Some(b) = pkt.first_mut() {
                *b = (i % 5) as u8; // all packet types, valid and not
            }
            let _ = s.send_to(&pkt, server).await;
            if i % 100 == 0 {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    junk.await.unwrap();
    assert_eq!(d.sha256, source.sha256);
    // The server is still serving.
    let d2 = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d2.sha256, source.sha256);
    let st = bed.server.board.snapshot();
    let dropped: u64 = st.endpoint_dropped.values().sum();
    assert!(dropped > 1000, "garbage was not counted: {:?}", st.endpoint_dropped);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn socks5_with_a_password_admits_only_the_right_one() {
    let source = start_source(1 << 20, 5).await.unwrap();
    let cfg = TestbedConfig {
        socks_auth: Some(("me".into(), "s3cret".into())),
        ..TestbedConfig::new(links(&["50mbit/5ms"]))
    };
    let bed = Testbed::start(cfg).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let target = source.addr;
    let wrong = Socks5Stream::connect_with_password(
        socks,
        target.ip().to_string(),
        target.port(),
        "me".into(),
        "guess".into(),
        Config::default(),
    )
    .await;
    assert!(wrong.is_err(), "a wrong password was admitted");
    let none = Socks5Stream::connect(socks, target.ip().to_string(), target.port(), Config::default()).await;
    assert!(none.is_err(), "no password was admitted");
    let mut ok = Socks5Stream::connect_with_password(
        socks,
        target.ip().to_string(),
        target.port(),
        "me".into(),
        "s3cret".into(),
        Config::default(),
    )
    .await
    .unwrap();
    let mut all = Vec::new();
    ok.read_to_end(&mut all).await.unwrap();
    assert_eq!(all.len() as u64, source.len);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_servers_stream_limit_refuses_the_extra_stream() {
    // A destination that holds connections open.
    let hold = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = hold.local_addr().unwrap();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((c, _)) = hold.accept().await {
            held.push(c);
        }
    });
    let cfg = TestbedConfig { max_streams: 2, ..TestbedConfig::new(links(&["50mbit/5ms"])) };
    let bed = Testbed::start(cfg).await.unwrap();
    let socks = bed.client.socks_addr.unwrap();
    let open = || Socks5Stream::connect(socks, target.ip().to_string(), target.port(), Config::default());
    let a = open().await.expect("first stream");
    let b = open().await.expect("second stream");
    let c = open().await;
    assert!(c.is_err(), "a third stream got through a limit of two");
    drop((a, b));
}

/// One POST of `body` to `path` on `addr` through braid's HTTP client, with the daemon's
/// control token; the answer's status code and body.
async fn post(addr: std::net::SocketAddr, path: &str, body: &str) -> (u16, String) {
    let token = braid_daemon::control::read_token(&braid_daemon::control::default_token_path(addr)).unwrap();
    let (path, body) = (path.to_string(), body.to_string());
    let answer = tokio::task::spawn_blocking(move || {
        let s = braid_http::connect(addr, Duration::from_secs(2)).unwrap();
        braid_http::exchange(s, addr, braid_http::Request::post(&path, &body, &token), Duration::from_secs(5))
    });
    let answer = answer.await.unwrap().unwrap();
    (answer.status, answer.body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_switches_live_while_a_download_goes_on() {
    let source = start_source(20 << 20, 4).await.unwrap();
    let mut cfg = TestbedConfig::new(links(&["80mbit/2ms", "40mbit/8ms"]));
    cfg.status = true;
    let bed = Testbed::start(cfg).await.unwrap();
    let status = bed.server.status_addr.unwrap();
    let (bad, why) = post(status, "/scheduler", "warp").await;
    assert!(bad == 400 && why.contains("unknown scheduler"), "{bad}: {why}");
    let switcher = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(600)).await;
        post(status, "/scheduler", "edpf").await
    });
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    let (ok, msg) = switcher.await.unwrap();
    assert!(ok == 200 && msg.contains("edpf"), "{ok}: {msg}");
    assert!(d.elapsed > Duration::from_millis(600), "the download ended before the switch");
    assert_eq!(d.sha256, source.sha256, "the download differs from the source");
    tokio::time::sleep(Duration::from_millis(600)).await;
    let st = bed.server.board.snapshot();
    assert_eq!(st.sessions[0].scheduler, "edpf", "{:?}", st.sessions[0]);
}

/// A relay that silently drops packets over 1400 bytes (a path MTU black hole): the download
/// still arrives intact, and the server's path through that relay finds the size it passes.
/// 60 MB, so that the share asked of the narrow path is its share after the search: with
/// 20 MB (under two seconds) it carried under 1 MB in 2 runs of 6 after the ACK routing, RTT
/// route and EDPF retransmission changes (1 of 6 before them, at 3.1 MB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_path_mtu_black_hole_is_found_and_the_download_arrives() {
    let source = start_source(60 << 20, 11).await.unwrap();
    let bed =
        Testbed::start(TestbedConfig::new(links(&["100mbit/2ms/mtu=1400", "50mbit/5ms"]))).await.unwrap();
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256, "the download differs from the source");
    let st = bed.server.board.snapshot();
    let mtus: Vec<(u8, usize)> = st.sessions[0].paths.iter().map(|p| (p.id, p.mtu)).collect();
    let narrow = mtus.iter().find(|(_, m)| *m <= 1372 && *m > 1300).map(|(id, _)| *id);
    let narrow = narrow.unwrap_or_else(|| panic!("server paths' MTUs: {mtus:?}"));
    let found = st.sessions[0].paths.iter().find(|p| p.id == narrow).map_or(0, |p| p.mtu_black_holes);
    assert!(found >= 1, "the narrow path's MTU fell through black-hole detection");
    // The clean path keeps the starting size or more: its relay is Ethernet-sized (1472 bytes
    // of UDP payload), which the search up to loopback's MTU may find.
    assert!(
        mtus.iter().any(|(_, m)| (1452..=1472).contains(m)),
        "the clean path keeps the full size: {mtus:?}"
    );
    // The narrow path is used, not abandoned: it carried a good share of the download.
    let st = bed.client.board.snapshot();
    let carried = st.sessions[0].paths.iter().find(|p| p.id == narrow).map_or(0, |p| p.stream_bytes_received);
    assert!(carried > source.len / 5, "{carried} of {} bytes over the narrow path", source.len);
}

/// A jumbo-frame link (9000-byte IP MTU): the client's path searches up from loopback's MTU
/// and finds the link's size, the server learns it from the client's probes and searches up
/// to it once it sends the download, and the download arrives intact at that size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_over_a_jumbo_frame_link_uses_its_size_both_ways() {
    let source = start_source(40 << 20, 12).await.unwrap();
    let bed = Testbed::start(TestbedConfig::new(links(&["200mbit/2ms/mtu=9000"]))).await.unwrap();
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256, "the download differs from the source");
    let jumbo = 8900..=8972;
    let client: Vec<usize> = bed.client.board.snapshot().sessions[0].paths.iter().map(|p| p.mtu).collect();
    let server: Vec<usize> = bed.server.board.snapshot().sessions[0].paths.iter().map(|p| p.mtu).collect();
    assert!(client.iter().all(|m| jumbo.contains(m)), "client paths' MTUs: {client:?}");
    assert!(server.iter().all(|m| jumbo.contains(m)), "server paths' MTUs: {server:?}");
}

/// Seed 003's offloading-ACK in the daemon: on a download over two links with
/// `ack_path = secondary`, the client (the receiver) sends the primary path's ACKs on the
/// secondary, and its status document and `/metrics` count them per session.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offloaded_acks_show_in_the_status_and_metrics() {
    let source = start_source(20 << 20, 6).await.unwrap();
    let mut cfg = TestbedConfig::new(links(&["100mbit/2ms", "40mbit/5ms"]));
    cfg.session.ack_path = AckPath::Secondary;
    cfg.status = true;
    let bed = Testbed::start(cfg).await.unwrap();
    let d = download_socks(bed.client.socks_addr.unwrap(), source.addr, |_| {}).await.unwrap();
    assert_eq!(d.sha256, source.sha256, "the download differs from the source");
    let st = bed.client.board.snapshot();
    let s = &st.sessions[0];
    assert!(s.acks_offloaded > 0, "no ACK offloaded: {s:?}");
    let addr = bed.client.status_addr.unwrap();
    let text =
        tokio::task::spawn_blocking(move || braid_http::get_ok(addr, "/metrics", Duration::from_secs(5)));
    let text = text.await.unwrap().unwrap();
    let line = text
        .lines()
        .find(|l| l.starts_with("braid_offloaded_acks_total{"))
        .unwrap_or_else(|| panic!("{text}"));
    let n: u64 = line.rsplit_once(' ').and_then(|(_, v)| v.parse().ok()).unwrap_or_else(|| panic!("{line}"));
    assert!(n >= s.acks_offloaded, "{line} against {} in the status", s.acks_offloaded);
    assert!(text.contains("braid_dropped_acks_total{"), "{text}");
}
