//! The shared bottleneck: every client reaches the server from an outer address of its own,
//! answers find their way back, and the link's rate holds for all clients together.

use braid_emu::bottleneck::Bottleneck;
use braid_sim::LinkSpec;
use std::collections::HashSet;
use std::time::{Duration, Instant};
use tokio::net::UdpSocket;

#[tokio::test]
async fn clients_share_one_link_from_addresses_of_their_own() {
    let server = UdpSocket::bind("127.0.0.1:0").await.unwrap();
    // 8 Mbit/s: 1,000 datagrams of 1,000 bytes a second.
    let spec = LinkSpec::parse("8mbit/5ms").unwrap();
    let b = Bottleneck::start(server.local_addr().unwrap(), spec, 1).await.unwrap();
    let clients =
        [UdpSocket::bind("127.0.0.1:0").await.unwrap(), UdpSocket::bind("127.0.0.1:0").await.unwrap()];
    let payload = [7u8; 972]; // 1,000 bytes with IP and UDP headers
    let started = Instant::now();
    for _ in 0..30 {
        for c in &clients {
            c.send_to(&payload, b.addr).await.unwrap();
        }
    }
    let mut from = HashSet::new();
    let mut buf = [0u8; 2048];
    for _ in 0..60 {
        let (n, addr) = tokio::time::timeout(Duration::from_secs(5), server.recv_from(&mut buf))
            .await
            .expect("arrives")
            .unwrap();
        assert_eq!(n, payload.len());
        from.insert(addr);
        server.send_to(&buf[..n], addr).await.unwrap();
    }
    // 60 datagrams at 1,000 a second (within the 100 ms queue) take at least ~60 ms through one link, whoever sent them.
    assert!(started.elapsed() >= Duration::from_millis(55), "{:?}", started.elapsed());
    assert_eq!(from.len(), 2, "one outer address per client");
    for c in &clients {
        let (n, _) = tokio::time::timeout(Duration::from_secs(5), c.recv_from(&mut buf))
            .await
            .expect("answer")
            .unwrap();
        assert_eq!(n, payload.len());
    }
}
