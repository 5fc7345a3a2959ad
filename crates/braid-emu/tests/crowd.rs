//! The server tells each session whether another one is sending (`braid_daemon::crowd`): a
//! lone download's `bbr-shared` paths then drain ProbeRTT to one BDP as `bbr` does, and to
//! half a BDP (the crowd's drain) once a second session sends through the same uplink. The
//! status API shows it per session (`shared_bottleneck`).

use braid_core::SessionConfig;
use braid_daemon::config::ClientPolicy;
use braid_daemon::{start_client, start_server, ServerHandle};
use braid_emu::bottleneck::Bottleneck;
use braid_emu::testbed::{
    client_settings, download_socks, server_settings, start_source, Keys, TestbedConfig,
};
use braid_sim::LinkSpec;
use std::time::{Duration, Instant};

/// Each session's (client name, shared_bottleneck) as the server's status shows them.
fn sharing(server: &ServerHandle) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> =
        server.board.snapshot().sessions.iter().map(|s| (s.peer.clone(), s.shared_bottleneck)).collect();
    v.sort();
    v
}

/// Polls the server's status every 100 ms, for at most `limit`, until it shows `want`.
async fn wait_for(server: &ServerHandle, want: &[(&str, bool)], limit: Duration) -> Result<(), String> {
    let want: Vec<(String, bool)> = want.iter().map(|(n, b)| (n.to_string(), *b)).collect();
    let end = Instant::now() + limit;
    loop {
        let seen = sharing(server);
        if seen == want {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(format!("the status showed {seen:?} after {limit:?}, not {want:?}"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_shares_its_bottleneck_only_while_another_sends() {
    let server_key = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..2)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_key.clone() })
        .collect();
    // The server's own default controller (bbr-shared), as a server file without
    // `[session] congestion` gets.
    let session =
        SessionConfig { congestion: braid_daemon::config::SERVER_CONGESTION, ..SessionConfig::default() };
    let mut ss = server_settings(&keys[0], session, true);
    ss.clients = keys
        .iter()
        .enumerate()
        .map(|(i, k)| ClientPolicy {
            name: format!("c{i}"),
            key: k.client.public_key(),
            max_streams: 64,
            max_udp: 8,
        })
        .collect();
    let server = start_server(ss).await.unwrap();
    // One 40 Mbit/s uplink for both: 64 MB takes 13 s, longer than the test looks.
    let uplink = Bottleneck::start(server.addr, LinkSpec::parse("40mbit/5ms").unwrap(), 3).await.unwrap();
    let source = start_source(64 << 20, 9).await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        let cfg = TestbedConfig::new(Vec::new());
        let c = start_client(client_settings(k, server.addr, &[uplink.addr], &cfg)).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(10)).await, "a session did not come up");
        clients.push(c);
    }
    let limit = Duration::from_secs(5);
    let download = |i: usize| {
        let (socks, target) = (clients[i].socks_addr.unwrap(), source.addr);
        tokio::spawn(async move { download_socks(socks, target, |_| {}).await })
    };
    // c0 downloads alone: it is told so; idle c1 would share once it sends.
    let first = download(0);
    let alone = wait_for(&server, &[("c0", false), ("c1", true)], limit).await;
    // Both download: each shares with the other.
    let second = download(1);
    let both = wait_for(&server, &[("c0", true), ("c1", true)], limit).await;
    first.abort();
    second.abort();
    for c in &clients {
        c.stop();
    }
    alone.unwrap();
    both.unwrap();
}
