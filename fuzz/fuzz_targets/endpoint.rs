//! Arbitrary datagrams to a server endpoint and to an established client session: never a
//! panic, and the endpoint never answers with more bytes than it received.
#![no_main]
use braid_core::*;
use bytes::BytesMut;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let client = StaticSecret::from_bytes([1; 32]);
    let server = StaticSecret::from_bytes([2; 32]);
    let session = SessionConfig::default();
    let scfg = ServerConfig { secret: server.clone(), clients: vec![client.public_key()], session: session.clone() };
    let mut ep = Endpoint::new(scfg, Seed::from_u64(1));
    let now = Timestamp::from_nanos(1);
    let from = "192.0.2.1:9".parse().unwrap();
    if let DatagramEvent::Respond(answer) = ep.handle_inline(now, None, from, data) {
        assert!(answer.len() <= data.len());
    }
    let ccfg = ClientConfig { secret: client, server_key: server.public_key(), session };
    let mut c = Session::connect(&ccfg, now, None, from, Seed::from_u64(3), 1);
    c.handle_datagram(now, None, from, BytesMut::from(data));
    let mut buf = Vec::new();
    let mut n = 0;
    while c.poll_transmit(now, &mut buf).is_some() && n < 16 {
        n += 1;
    }
});
