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

/// A server with two named clients (c0, c1), each through the same 40 Mbit/s link.
struct Two {
    server: ServerHandle,
    clients: Vec<ClientHandle>,
    _link: Bottleneck,
}

/// Starts [`Two`] with the server's and the clients' default controllers (`bbr-shared`), as
/// files without `[session] congestion` get.
async fn two_clients() -> Two {
    let server_key = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..2)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_key.clone() })
        .collect();
    let session =
        SessionConfig { congestion: braid_daemon::config::SERVER_CONGESTION, ..SessionConfig::default() };
    let mut ss = server_settings(&keys[0], session, true);
    ss.clients = named_clients(&keys);
    let server = start_server(ss).await.unwrap();
    let link = Bottleneck::start(server.addr, LinkSpec::parse("40mbit/5ms").unwrap(), 3).await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        let mut cfg = TestbedConfig::new(Vec::new());
        cfg.session.congestion = braid_daemon::config::CLIENT_CONGESTION;
        let c = start_client(client_settings(k, server.addr, &[link.addr], &cfg)).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(10)).await, "a session did not come up");
        clients.push(c);
    }
    Two { server, clients, _link: link }
}

/// c0 transfers alone, then both do, then c0 alone again; `seen` must show in turn: c0 alone
/// and idle c1 sharing (it would, once it sends), both sharing, c0 alone again.
async fn alone_both_alone<T: Send + 'static>(
    two: &Two,
    transfer: impl Fn(usize) -> tokio::task::JoinHandle<T>,
    seen: impl Fn() -> Vec<(String, bool)>,
    what: &str,
) {
    let first = transfer(0);
    let alone = wait_until(&seen, &[("c0", false), ("c1", true)]).await;
    let second = transfer(1);
    let both = wait_until(&seen, &[("c0", true), ("c1", true)]).await;
    second.abort();
    let again = wait_until(&seen, &[("c0", false), ("c1", true)]).await;
    let ended = first.is_finished();
    first.abort();
    for c in &two.clients {
        c.stop();
    }
    let context = if ended { format!(" (c0's {what} had ended)") } else { String::new() };
    alone.map_err(|e| format!("c0 alone: {e}{context}")).unwrap();
    both.map_err(|e| format!("both: {e}{context}")).unwrap();
    again.map_err(|e| format!("c0 alone again: {e}{context}")).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_shares_its_bottleneck_only_while_another_sends() {
    let two = two_clients().await;
    // Downloads that last until they are stopped; the server's status shows its sending crowd.
    let source = endless_source().await.unwrap();
    let download = |i: usize| {
        let socks = two.clients[i].socks_addr.unwrap();
        tokio::spawn(async move { download_socks(socks, source, |_| {}).await })
    };
    alone_both_alone(&two, download, || sharing(&two.server), "download").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_hears_whether_other_uploads_share_the_servers_ingress() {
    let two = two_clients().await;
    let seen = || client_sharing(&two.clients);
    wait_until(seen, &[("c0", false), ("c1", false)])
        .await
        .map_err(|e| format!("clients start alone: {e}"))
        .unwrap();
    // Uploads that last until they are stopped; each client's status shows what its server said.
    let sink = discard_sink().await.unwrap();
    let upload = |i: usize| tokio::spawn(upload_socks_endless(two.clients[i].socks_addr.unwrap(), sink));
    alone_both_alone(&two, upload, seen, "upload").await;
}
