//! The client's policy governs both directions: what it sets on its session reaches the
//! server's session of it (issue 11: "the client's choice governs both directions").

mod common;

use braid_core::scheduler::Kind;
use braid_core::wire::PathStatusKind;
use braid_core::*;
use common::*;
use std::time::Duration;

#[test]
fn the_server_follows_the_clients_scheduler_classes_and_path_limits() {
    let session = SessionConfig { scheduler: Kind::Edpf, ..SessionConfig::default() };
    let (c, s) = keys();
    let (sp, cp) = (s.public_key(), c.public_key());
    // The server's own default is min-RTT; the client asks for EDPF.
    let mut p = Pair::with_session(c, sp, s, vec![cp], session);
    p.endpoint = Endpoint::new(
        ServerConfig {
            secret: p.server_config.secret.clone(),
            clients: vec![cp],
            session: SessionConfig::default(),
        },
        Seed::from_u64(5),
    );
    p.run(Duration::from_millis(20));
    let server = p.server.as_ref().unwrap();
    assert_eq!(server.scheduler_name(), "edpf", "downloads run the client's scheduler");
    assert_eq!(server.peer_scheduler(), Some(Kind::Edpf));

    // Live changes follow: a class, a path's limits and tier, admission, the scheduler.
    let voip = TrafficClass {
        priority: 0,
        deadline: Some(Duration::from_millis(150)),
        scheduler: Some(Kind::Redundant(2)),
        max_rate: Some(50_000),
        min_rate: Some(10_000),
        // The base-layer flag travels too: the server copies this class's datagrams.
        duplicate: true,
    };
    p.client.set_class(4, voip.clone());
    let path = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.client.set_path_weight(path, Some(3)).unwrap();
    p.client.set_path_max_rate(p.now, path, Some(125_000)).unwrap();
    p.client.set_path_status(path, PathStatusKind::Secondary).unwrap();
    p.client.set_path_admission(true);
    p.client.set_scheduler(Kind::Wrr);
    p.run(Duration::from_millis(50));
    let server = p.server.as_ref().unwrap();
    assert_eq!(server.scheduler_name(), "wrr");
    assert_eq!(server.config().classes.get(&4), Some(&voip));
    assert!(server.config().path_admission);
    let info = server.path_info(path).expect("the path joined");
    assert_eq!((info.weight, info.max_rate), (Some(3), Some(125_000)));
    assert_eq!(info.status, PathStatusKind::Secondary);
}

/// Path limits sent before the path joins apply when it does.
#[test]
fn limits_of_a_path_that_joins_later_apply_when_it_joins() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let path = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.client.set_path_max_rate(p.now, path, Some(1_000_000)).unwrap();
    // The policy leaves before the new path's first packet reaches the server.
    p.run(Duration::from_millis(30));
    let info = p.server.as_ref().unwrap().path_info(path).expect("the path joined");
    assert_eq!(info.max_rate, Some(1_000_000));
}
