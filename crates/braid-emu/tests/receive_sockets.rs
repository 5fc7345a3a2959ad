//! A server with several receive sockets on one port (`SO_REUSEPORT`, issue 13): sessions
//! spread over the sockets (and so over the server's shards) all carry their data intact,
//! every path of a session reaches its session's socket, and the status counts what each
//! socket received.

use braid_core::SessionConfig;
use braid_daemon::{start_client, start_server};
use braid_emu::testbed::{
    client_settings, download_socks, named_clients, server_settings, start_source, Keys, TestbedConfig,
};
use std::time::Duration;

const SOCKETS: usize = 4;
/// Fewer sessions than sockets: some socket has none, and must see no path.
const CLIENTS: usize = 3;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_spread_over_four_sockets_download_intact() {
    let server_key = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..CLIENTS)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_key.clone() })
        .collect();
    let mut ss = server_settings(&keys[0], SessionConfig::default(), true);
    ss.clients = named_clients(&keys);
    ss.receive_sockets = SOCKETS;
    let server = start_server(ss).await.unwrap();
    let source = start_source(2 << 20, 5).await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        // Three paths each, straight to the server: 9 source ports the kernel would hash.
        let cfg = TestbedConfig::new(Vec::new());
        let c = start_client(client_settings(k, server.addr, &[server.addr; 3], &cfg)).await.unwrap();
        assert!(c.wait_connected(Duration::from_secs(10)).await, "a session did not come up");
        clients.push(c);
    }
    // All at once.
    let downloads: Vec<_> = clients
        .iter()
        .map(|c| tokio::spawn(download_socks(c.socks_addr.unwrap(), source.addr, |_| {})))
        .collect();
    for d in downloads {
        let d = d.await.unwrap().unwrap();
        assert_eq!(d.bytes, source.len);
        assert_eq!(d.sha256, source.sha256, "a download differs from the source");
    }
    // The counters are published with the endpoint's, at most every 100 ms.
    tokio::time::sleep(Duration::from_millis(600)).await;
    let per_socket = server.board.snapshot().received_per_socket;
    eprintln!("datagrams received per socket: {per_socket:?}");
    assert_eq!(per_socket.len(), SOCKETS, "{per_socket:?}");
    // Every path of a session reaches its session's socket (`udp::steer_by_session`): the
    // sockets no session has get the handshakes at most (a few datagrams per client), the
    // others the ACKs of 2 MB downloads (about 40 datagrams a session here).
    let ids: Vec<u64> = server
        .board
        .snapshot()
        .sessions
        .iter()
        .map(|s| u64::from_str_radix(&s.id, 16).expect("a session id is 16 hex digits"))
        .collect();
    assert_eq!(ids.len(), CLIENTS);
    let steered: Vec<usize> =
        ids.iter().map(|&id| braid_daemon::udp::socket_of(braid_core::SessionId(id), SOCKETS)).collect();
    for (k, &n) in per_socket.iter().enumerate() {
        let sessions = steered.iter().filter(|&&s| s == k).count() as u64;
        if sessions > 0 {
            assert!(n >= 20 * sessions, "socket {k}: {per_socket:?}, sessions on sockets {steered:?}");
        } else {
            assert!(
                n <= 3 * CLIENTS as u64,
                "socket {k} has no session: {per_socket:?}, sessions on {steered:?}"
            );
        }
    }
    for c in &clients {
        c.stop();
    }
}
