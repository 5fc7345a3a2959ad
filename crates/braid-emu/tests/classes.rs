//! Traffic classes end to end (issue 11): small-packet UDP (a call, a game) falls in the
//! built-in interactive class and rides two paths at once in both directions, so that its
//! loss is about the product of the paths' losses; large datagrams of the same flow ride one
//! path and lose what it loses.

use braid_emu::testbed::{udp_echo, Testbed, TestbedConfig};
use braid_sim::LinkSpec;
use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::UdpSocket;

/// Sends `count` numbered datagrams of `size` bytes through `forward`, one every 0.5 ms, and
/// returns the share that came back.
async fn round_trip_loss(forward: SocketAddr, size: usize, count: u32) -> f64 {
    let sock = Arc::new(UdpSocket::bind("127.0.0.1:0").await.unwrap());
    let back = Arc::new(Mutex::new(HashSet::new()));
    let (rs, rb) = (sock.clone(), back.clone());
    let receiver = tokio::spawn(async move {
        let mut buf = [0u8; 2048];
        while let Ok((n, _)) = rs.recv_from(&mut buf).await {
            if n == size {
                rb.lock().unwrap().insert(u32::from_be_bytes(buf[..4].try_into().unwrap()));
            }
        }
    });
    let mut msg = vec![0x5au8; size];
    let mut tick = tokio::time::interval(Duration::from_micros(500));
    for i in 0..count {
        tick.tick().await;
        msg[..4].copy_from_slice(&i.to_be_bytes());
        sock.send_to(&msg, forward).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(600)).await;
    receiver.abort();
    let n = back.lock().unwrap().len();
    1.0 - n as f64 / f64::from(count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_udp_rides_two_paths_and_loses_about_the_product_of_their_losses() {
    let target = udp_echo().await.unwrap();
    let links =
        ["20mbit/5ms/loss=5%", "20mbit/8ms/loss=5%"].iter().map(|s| LinkSpec::parse(s).unwrap()).collect();
    let cfg = TestbedConfig {
        forwards: vec![target.to_string()],
        socks: false,
        status: true,
        ..TestbedConfig::new(links)
    };
    let bed = Testbed::start(cfg).await.unwrap();
    let forward = bed.client.forward_addrs[0];
    // Warm up: the association opens and the server learns the client's classes.
    round_trip_loss(forward, 160, 20).await;
    let small = round_trip_loss(forward, 160, 1500).await;
    let large = round_trip_loss(forward, 1200, 1500).await;
    eprintln!(
        "round-trip loss over two 5% links: small (interactive) {:.2}%, large {:.2}%",
        small * 100.0,
        large * 100.0
    );
    // One path each way: 1 - 0.95² ≈ 9.75 %; two copies each way: ≈ 2 × 0.25 % = 0.5 %.
    assert!(large > 0.05, "large datagrams lost only {:.2}%: were they duplicated?", large * 100.0);
    assert!(small < 0.02, "interactive datagrams lost {:.2}% (one path would lose ~9.75%)", small * 100.0);
    // The server carries the client's classes: its session runs the interactive class too.
    let server = bed.server.board.snapshot();
    assert_eq!(server.sessions[0].scheduler_up, bed.client.board.snapshot().sessions[0].scheduler_up);
}
