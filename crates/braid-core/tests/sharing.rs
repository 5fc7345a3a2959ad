//! A session hands what its host knows about sharing (`Session::set_shared_bottleneck`, told
//! by the server's crowd count) to every path's controller, where `bbr-shared` chooses its
//! ProbeRTT depth from it; a server tells its client whether other uploads share its ingress
//! (`Session::set_shares_ingress`, a SHARING frame), again when that frame is lost.

use braid_core::cc::Algorithm;
use braid_core::*;
use bytes::Bytes;
use std::time::Duration;

mod common;

use common::*;

/// What each of the client's paths' controllers was last told.
fn told(p: &Pair) -> Vec<Option<bool>> {
    p.client.path_ids().into_iter().map(|id| p.client.path_info(id).unwrap().shared_bottleneck).collect()
}

#[test]
fn every_paths_controller_hears_whether_the_bottleneck_is_shared() {
    let mut p =
        Pair::good_with(SessionConfig { congestion: Algorithm::BbrShared, ..SessionConfig::default() });
    p.run(Duration::from_millis(50));
    assert!(p.client.is_established() && p.server.is_some(), "handshake");
    p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.run(Duration::from_millis(50));
    assert_eq!(told(&p), [Some(false); 2], "a client starts alone");
    p.client.set_shared_bottleneck(true);
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [Some(true); 2], "a session told it shares");

    let id = p.client.open_stream(0).unwrap();
    p.client.write_bytes(id, Bytes::from(vec![7u8; 200_000])).unwrap();
    p.client.set_shared_bottleneck(false);
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [Some(false); 2], "both paths hear that the session is alone");

    p.client.set_shared_bottleneck(true);
    p.client.write_bytes(id, Bytes::from(vec![8u8; 200_000])).unwrap();
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [Some(true); 2], "and that it shares again");
}

#[test]
fn a_controller_that_ignores_sharing_says_so() {
    let mut p = Pair::good_with(SessionConfig { congestion: Algorithm::Cubic, ..SessionConfig::default() });
    p.run(Duration::from_millis(50));
    p.client.set_shared_bottleneck(false);
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [None]);
}

fn bbr_shared_pair() -> Pair {
    let mut p =
        Pair::good_with(SessionConfig { congestion: Algorithm::BbrShared, ..SessionConfig::default() });
    p.run(Duration::from_millis(50));
    assert!(p.client.is_established() && p.server.is_some(), "handshake");
    p
}

#[test]
fn a_server_tells_its_client_whether_uploads_share_its_ingress() {
    let mut p = bbr_shared_pair();
    assert!(p.server.as_ref().unwrap().shared_bottleneck(), "a server starts shared");
    assert!(!p.server.as_ref().unwrap().is_busy_receiving(p.now, Duration::from_secs(1)), "no data yet");
    let id = p.client.open_stream(0).unwrap();
    p.client.write_bytes(id, Bytes::from(vec![7u8; 200_000])).unwrap();
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [Some(false)], "a client starts alone");
    assert!(p.server.as_ref().unwrap().is_busy_receiving(p.now, Duration::from_millis(20)));

    p.server.as_mut().unwrap().set_shares_ingress(true);
    p.client.write_bytes(id, Bytes::from(vec![8u8; 200_000])).unwrap();
    p.run(Duration::from_millis(20));
    assert!(p.client.shared_bottleneck(), "the server said others upload too");
    assert_eq!(told(&p), [Some(true)]);

    p.server.as_mut().unwrap().set_shares_ingress(false);
    p.client.write_bytes(id, Bytes::from(vec![9u8; 200_000])).unwrap();
    p.run(Duration::from_millis(20));
    assert_eq!(told(&p), [Some(false)], "and that they stopped");
}

#[test]
fn a_lost_sharing_frame_is_sent_again() {
    let mut p = bbr_shared_pair();
    let s = p.server.as_mut().unwrap();
    s.set_shares_ingress(true);
    let mut buf = Vec::new();
    let mut lost = 0;
    while s.poll_transmit(p.now, &mut buf).is_some() {
        lost += 1;
    }
    assert!(lost > 0, "the SHARING frame left in a packet, which the network loses");
    p.run(Duration::from_millis(10));
    assert!(!p.client.shared_bottleneck(), "the client has not heard");
    p.run(Duration::from_secs(2));
    assert!(p.client.shared_bottleneck(), "the frame was sent again");
}
