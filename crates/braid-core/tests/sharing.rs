//! A session hands what its host knows about sharing (`Session::set_shared_bottleneck`, told
//! by the server's crowd count) to every path's controller, where `bbr-shared` chooses its
//! ProbeRTT depth from it.

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
    assert_eq!(told(&p), [Some(true); 2], "a session starts shared");

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
