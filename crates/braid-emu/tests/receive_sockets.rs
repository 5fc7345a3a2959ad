//! A server with several receive sockets on one port (`SO_REUSEPORT`, issue 13): sessions
//! whose paths the kernel spreads over the sockets all carry their data intact, and the
//! status counts what each socket received.

use braid_core::SessionConfig;
use braid_daemon::config::ClientPolicy;
use braid_daemon::{start_client, start_server};
use braid_emu::testbed::{
    client_settings, download_socks, server_settings, start_source, Keys, TestbedConfig,
};
use std::time::Duration;

const SOCKETS: usize = 4;
const CLIENTS: usize = 6;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_spread_over_four_sockets_download_intact() {
    let server_key = braid_daemon::keyfile::generate();
    let keys: Vec<Keys> = (0..CLIENTS)
        .map(|_| Keys { client: braid_daemon::keyfile::generate(), server: server_key.clone() })
        .collect();
    let mut ss = server_settings(&keys[0], SessionConfig::default(), true);
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
    ss.receive_sockets = SOCKETS;
    let server = start_server(ss).await.unwrap();
    let source = start_source(2 << 20, 5).await.unwrap();
    let mut clients = Vec::new();
    for k in &keys {
        // Three paths each, straight to the server: 18 source ports for the kernel to hash.
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
    // 18 paths over 4 sockets: all on one would happen once in 4^17 runs.
    let used = per_socket.iter().filter(|&&n| n > 0).count();
    assert!(used >= 2, "every path reached one socket: {per_socket:?}");
    for c in &clients {
        c.stop();
    }
}
