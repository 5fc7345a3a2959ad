//! The daemon's client over loopback relays with its first link dead from the start: the
//! core's handshake failover (`braid_core::connect`) moves the handshake to the next link
//! after the first try (2 s), where one link at a time waited out the whole handshake timeout
//! (10 s by default). Real sockets and tokio time, so the bounds are loose.

use braid_core::SessionConfig;
use braid_daemon::{start_client, start_server, Failure};
use braid_emu::testbed::{client_settings, server_settings, Keys, TestbedConfig};
use braid_emu::{Relay, RelayHandle};
use braid_sim::LinkSpec;
use std::time::{Duration, Instant};

/// Starts a server and one relay per link (the first `dead` of them cut), then a client over
/// them; returns the client, the relays and when the client was started.
async fn client_with_dead_links(
    session: SessionConfig,
    links: usize,
    dead: usize,
) -> (braid_daemon::ClientHandle, braid_daemon::ServerHandle, Vec<RelayHandle>, Instant) {
    let keys = Keys::generate();
    let server = start_server(server_settings(&keys, session.clone(), false)).await.unwrap();
    let mut relays = Vec::new();
    for i in 0..links {
        let spec = LinkSpec::parse("100mbit/5ms").unwrap();
        let r = Relay::start("127.0.0.1:0".parse().unwrap(), server.addr, spec, 7 + i as u64).await.unwrap();
        r.set_down(i < dead);
        relays.push(r);
    }
    let addrs: Vec<_> = relays.iter().map(|r| r.addr).collect();
    let cfg = TestbedConfig { session, ..TestbedConfig::new(vec![]) };
    let started = Instant::now();
    let client = start_client(client_settings(&keys, server.addr, &addrs, &cfg)).await.unwrap();
    (client, server, relays, started)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_first_link_costs_the_first_try_not_the_timeout() {
    let (client, _server, relays, started) = client_with_dead_links(SessionConfig::default(), 2, 1).await;
    assert!(client.wait_connected(Duration::from_secs(30)).await, "no session over the live link");
    let took = started.elapsed();
    eprintln!("established after {took:?} with link 0 dead");
    // 2 s of first try and a round trip; the handshake timeout (10 s) is far off.
    assert!(took >= Duration::from_millis(1900) && took < Duration::from_secs(6), "{took:?}");
    relays.iter().for_each(RelayHandle::stop);
    client.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_link_dead_gives_up_with_no_answer_in_bounded_time() {
    let session = SessionConfig { handshake_timeout: Duration::from_secs(2), ..SessionConfig::default() };
    let (mut client, _server, relays, started) = client_with_dead_links(session, 2, 2).await;
    let err = tokio::time::timeout(Duration::from_secs(15), client.wait()).await.unwrap().unwrap_err();
    let took = started.elapsed();
    eprintln!("gave up after {took:?}: {err}");
    assert!(matches!(err, Failure::NoAnswer(_)), "{err}");
    assert_eq!(err.exit_code(), 5);
    // Two links × the 2 s handshake timeout.
    assert!(took >= Duration::from_millis(3900) && took < Duration::from_secs(8), "{took:?}");
    relays.iter().for_each(RelayHandle::stop);
}
