//! `endpoint::session_of`: the session id a server's receive loops route by agrees with the
//! endpoint's own routing, and names nothing for what is not a data packet.

mod common;

use braid_core::endpoint::session_of;
use braid_core::DatagramEvent;
use common::{addr, Pair, SERVER};
use std::time::Duration;

#[test]
fn a_data_packet_names_the_session_the_endpoint_routes_it_to() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(50));
    let init = p.client_sent.first().expect("the client's handshake").bytes.clone();
    assert_eq!(session_of(&init), None, "a handshake initiation names no session");
    let id = p.server.as_ref().expect("admitted").id();
    let data: Vec<_> = p.client_sent.iter().filter(|s| s.is_data()).collect();
    assert!(!data.is_empty(), "the client sent data packets");
    for d in data {
        assert_eq!(session_of(&d.bytes), Some(id));
        match p.endpoint.handle(p.now, Some(addr(SERVER)), d.from, &d.bytes) {
            DatagramEvent::Route(r) => assert_eq!(r, id),
            other => panic!("the endpoint did not route a data packet: {other:?}"),
        }
    }
    let resp = p.server_sent.iter().find(|s| !s.is_data()).expect("the server's handshake response");
    assert_eq!(session_of(&resp.bytes), None, "a handshake response names no session");
    for junk in [&[][..], &[0x10][..], &[0xff; 40][..]] {
        assert_eq!(session_of(junk), None, "{junk:?}");
    }
}
