//! The server tells each session whether another one is sending (`braid_core::crowd`): a
//! lone download's `bbr-shared` paths then drain ProbeRTT to one BDP as `bbr` does, and to
//! half a BDP (the crowd's drain) while a second session sends through the same uplink. It
//! tells each client, in a SHARING frame, whether another session's uploads arrive too. The
//! status API shows it per session (`shared_bottleneck`), on the server and on the client.

use braid_core::SessionConfig;
use braid_daemon::{start_client, start_server, ClientHandle, ServerHandle};
use braid_emu::bottleneck::Bottleneck;
use braid_emu::testbed::{
    client_settings, discard_sink, download_socks, endless_source, named_clients, server_settings,
    upload_socks_endless, Keys, TestbedConfig,
};
use braid_sim::LinkSpec;
use std::time::{Duration, Instant};

/// How long the status may take to show a change (it needs two 500 ms counts; the rest is
/// room for a loaded machine).
const LIMIT: Duration = Duration::from_secs(20);

/// Each session's (client name, shared_bottleneck) as the server's status shows them.
fn sharing(server: &ServerHandle) -> Vec<(String, bool)> {
    let mut v: Vec<(String, bool)> =
        server.board.snapshot().sessions.iter().map(|s| (s.peer.clone(), s.shared_bottleneck)).collect();
    v.sort();
    v
}

/// Each client's shared_bottleneck as its own status shows it (None: no session).
fn client_sharing(clients: &[ClientHandle]) -> Vec<(String, bool)> {
    clients
        .iter()
        .enumerate()
        .filter_map(|(i, c)| {
            c.board.snapshot().sessions.first().map(|s| (format!("c{i}"), s.shared_bottleneck))
        })
        .collect()
}

/// Polls the server's status every 100 ms, for at most [`LIMIT`], until it shows `want`.
async fn wait_for(server: &ServerHandle, want: &[(&str, bool)]) -> Result<(), String> {
    wait_until(|| sharing(server), want).await
}

/// Polls `seen` every 100 ms, for at most [`LIMIT`], until it returns `want`.
async fn wait_until(seen: impl Fn() -> Vec<(String, bool)>, want: &[(&str, bool)]) -> Result<(), String> {
    let want: Vec<(String, bool)> = want.iter().map(|(n, b)| (n.to_string(), *b)).collect();
    let end = Instant::now() + LIMIT;
    loop {
        let seen = seen();
        if seen == want {
            return Ok(());
        }
        if Instant::now() >= end {
            return Err(format!("the status showed {seen:?} after {LIMIT:?}, not {want:?}"));
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
    ss.clients = named_clients(&keys);
    let server = start_server(ss).await.unwrap();
    // One 40 Mbit/s uplink for both, and downloads that last until they are stopped.
    let uplink = Bottleneck::start(server.addr, LinkSpec::parse("40mbit/5ms").unwrap(), 3).await.unwrap();
    let source = endless_source().await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        let cfg = TestbedConfig::new(Vec::new());
        let c = start_client(client_settings(k, server.addr, &[uplink.addr], &cfg)).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(10)).await, "a session did not come up");
        clients.push(c);
    }
    let download = |i: usize| {
        let socks = clients[i].socks_addr.unwrap();
        tokio::spawn(async move { download_socks(socks, source, |_| {}).await })
    };
    // c0 downloads alone: it is told so; idle c1 would share once it sends.
    let first = download(0);
    let alone = wait_for(&server, &[("c0", false), ("c1", true)]).await;
    // Both download: each shares with the other.
    let second = download(1);
    let both = wait_for(&server, &[("c0", true), ("c1", true)]).await;
    // c1 stops: c0 is alone again.
    second.abort();
    let again = wait_for(&server, &[("c0", false), ("c1", true)]).await;
    let ended = first.is_finished();
    first.abort();
    for c in &clients {
        c.stop();
    }
    let context = if ended { " (c0's download had ended)" } else { "" };
    alone.map_err(|e| format!("c0 alone: {e}{context}")).unwrap();
    both.map_err(|e| format!("both sending: {e}{context}")).unwrap();
    again.map_err(|e| format!("c0 alone again: {e}{context}")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hears_whether_other_uploads_share_the_servers_ingress() {
    let server_key = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..2)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_key.clone() })
        .collect();
    let session =
        SessionConfig { congestion: braid_daemon::config::SERVER_CONGESTION, ..SessionConfig::default() };
    let mut ss = server_settings(&keys[0], session, true);
    ss.clients = named_clients(&keys);
    let server = start_server(ss).await.unwrap();
    // One 40 Mbit/s link for both, and uploads that last until they are stopped.
    let link = Bottleneck::start(server.addr, LinkSpec::parse("40mbit/5ms").unwrap(), 3).await.unwrap();
    let sink = discard_sink().await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        // The client's own default controller (bbr-shared), as a client file without
        // `[session] congestion` gets.
        let mut cfg = TestbedConfig::new(Vec::new());
        cfg.session.congestion = braid_daemon::config::CLIENT_CONGESTION;
        let c = start_client(client_settings(k, server.addr, &[link.addr], &cfg)).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(10)).await, "a session did not come up");
        clients.push(c);
    }
    let upload = |i: usize| {
        let socks = clients[i].socks_addr.unwrap();
        tokio::spawn(upload_socks_endless(socks, sink))
    };
    let seen = || client_sharing(&clients);
    let start = wait_until(seen, &[("c0", false), ("c1", false)]).await;
    // c0 uploads alone: idle c1 would share c0's ingress once it sends, c0 shares with none.
    let first = upload(0);
    let alone = wait_until(seen, &[("c0", false), ("c1", true)]).await;
    // Both upload: each hears that the other's uploads arrive.
    let second = upload(1);
    let both = wait_until(seen, &[("c0", true), ("c1", true)]).await;
    // c1 stops: c0 is alone again.
    second.abort();
    let again = wait_until(seen, &[("c0", false), ("c1", true)]).await;
    let ended = first.is_finished();
    first.abort();
    for c in &clients {
        c.stop();
    }
    let context = if ended { " (c0's upload had ended)" } else { "" };
    start.map_err(|e| format!("clients start alone: {e}")).unwrap();
    alone.map_err(|e| format!("c0 uploading alone: {e}{context}")).unwrap();
    both.map_err(|e| format!("both uploading: {e}{context}")).unwrap();
    again.map_err(|e| format!("c0 alone again: {e}{context}")).unwrap();
}
