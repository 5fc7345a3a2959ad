//! A client and a server of different protocol versions: the server answers a HANDSHAKE_INIT of
//! another version with the versions it speaks (only when its `mac1` proves the sender knows
//! the server's key, smaller than the message, within answer limits), and the client ends its
//! attempt saying so, believing only an answer that echoes its own message.

mod common;

use braid_core::crypto::cookie::{mac1_of, CookieJar};
use braid_core::wire::{self, header::version_answer, Header, HANDSHAKE_INIT_LEN, VERSION};
use braid_core::*;
use bytes::BytesMut;
use common::*;
use std::net::SocketAddr;

fn server_endpoint() -> Endpoint {
    let (c, s) = keys();
    Endpoint::new(
        ServerConfig { secret: s, clients: vec![c.public_key()], session: SessionConfig::default() },
        Seed::from_u64(9),
    )
}

/// A client session and its first datagram (HANDSHAKE_INIT of this version).
fn client() -> (Session, Vec<u8>, Timestamp) {
    let (c, s) = keys();
    let cfg = ClientConfig { secret: c, server_key: s.public_key(), session: SessionConfig::default() };
    let t = Timestamp::from_nanos(1);
    let mut session = Session::connect(&cfg, t, Some(addr(CLIENT)), addr(SERVER), Seed::from_u64(4), 1000);
    let mut buf = Vec::new();
    let tx = session.poll_transmit(t, &mut buf).expect("message 1");
    buf.truncate(tx.size);
    assert_eq!(buf.len(), HANDSHAKE_INIT_LEN);
    (session, buf, t)
}

/// A HANDSHAKE_INIT of protocol `version`, `len` bytes long, with a valid `mac1` for the test
/// server when `stamped`.
fn other_version(version: u8, len: usize, stamped: bool) -> Vec<u8> {
    let mut init = vec![0x33; len];
    init[0] = wire::TYPE_HANDSHAKE_INIT;
    init[1] = version;
    if stamped {
        CookieJar::new(&keys().1.public_key()).stamp(Timestamp::from_nanos(1), &mut init);
    }
    init
}

#[test]
fn a_client_of_another_version_is_told_the_servers_versions() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    // An older client (same message length) and a newer one whose message is longer.
    for (version, len) in [(VERSION - 1, HANDSHAKE_INIT_LEN), (VERSION + 1, HANDSHAKE_INIT_LEN + 400)] {
        let init = other_version(version, len, true);
        let DatagramEvent::Respond(answer) = e.handle(t, None, addr(CLIENT), &init) else {
            panic!("version {version}: no answer");
        };
        assert!(answer.len() < init.len(), "an answer is smaller than its cause");
        assert_eq!(
            wire::header::parse(&answer),
            Ok(Header::Version { echo: &mac1_of(&init), versions: &wire::SUPPORTED_VERSIONS })
        );
    }
    assert_eq!(e.replied.versions, 2);
    assert_eq!(e.dropped.get(&DropReason::WrongVersion), Some(&2));
    assert_eq!(e.handshakes_in_progress(), 0, "no handshake work for another version");
}

#[test]
fn without_the_servers_key_another_version_gets_no_answer() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    // A scanner that does not know the key: no answer tells it a braid server is here.
    let junk = other_version(VERSION + 1, HANDSHAKE_INIT_LEN, false);
    assert!(matches!(e.handle(t, None, addr(CLIENT), &junk), DatagramEvent::Dropped(DropReason::BadMac)));
    // Too short or too long to be any version's message: malformed, whatever it carries (the
    // bound keeps the mac1 work small).
    let short = other_version(VERSION + 1, wire::MIN_ANY_INIT_LEN - 1, true);
    assert!(matches!(e.handle(t, None, addr(CLIENT), &short), DatagramEvent::Dropped(DropReason::Malformed)));
    let long = other_version(VERSION + 1, wire::MAX_ANY_INIT_LEN + 1, true);
    assert!(matches!(e.handle(t, None, addr(CLIENT), &long), DatagramEvent::Dropped(DropReason::Malformed)));
    let longest = other_version(VERSION + 1, wire::MAX_ANY_INIT_LEN, true);
    assert!(matches!(e.handle(t, None, addr(CLIENT), &longest), DatagramEvent::Respond(_)));
    e.replied.versions -= 1;
    assert!(matches!(
        e.handle(t, None, addr(CLIENT), &[wire::TYPE_HANDSHAKE_INIT, 9]),
        DatagramEvent::Dropped(_)
    ));
    assert_eq!(e.replied.versions, 0);
}

#[test]
fn version_answers_are_limited_per_message() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    let init = other_version(VERSION + 1, HANDSHAKE_INIT_LEN, true);
    let mut answered = 0;
    for i in 0..1000u32 {
        // From many sources: the limit is the message's, so a spoofer cannot aim more at one
        // victim by changing its own address.
        let from = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)), 7);
        match e.handle(t, None, from, &init) {
            DatagramEvent::Respond(_) => answered += 1,
            DatagramEvent::Dropped(DropReason::WrongVersion) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered, 5, "one burst per message at one instant");
    // Another message is answered still.
    let other = other_version(VERSION + 2, HANDSHAKE_INIT_LEN, true);
    assert!(matches!(e.handle(t, None, addr(CLIENT), &other), DatagramEvent::Respond(_)));
}

#[test]
fn a_flood_of_new_messages_gets_a_bounded_number_of_answers_and_leaves_resets_alone() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    // Anyone with the server's public key can make new messages at will: 100,000 of them at
    // one instant get one burst of the all-sources limit (100) ...
    let mut answered = 0;
    for i in 0..100_000u32 {
        let mut init = other_version(VERSION + 1, HANDSHAKE_INIT_LEN, false);
        init[2..6].copy_from_slice(&i.to_be_bytes());
        CookieJar::new(&keys().1.public_key()).stamp(t, &mut init);
        if let DatagramEvent::Respond(_) = e.handle(t, None, addr(CLIENT), &init) {
            answered += 1;
        }
    }
    assert_eq!(answered, 100);
    // ... and do not crowd out the per-session answers: a reset is still sent.
    let key = braid_core::crypto::reset::ResetKey::new(&keys().1);
    let mut data = vec![0x10; 40];
    data[1..9].copy_from_slice(&key.session_id(77).0.to_be_bytes());
    assert!(matches!(e.handle(t, None, addr(CLIENT), &data), DatagramEvent::Respond(_)));
}

#[test]
fn the_client_ends_its_attempt_on_an_answer_that_echoes_its_message() {
    let (mut c, init, t) = client();
    let answer = version_answer(&mac1_of(&init), &[VERSION + 1, VERSION + 2]);
    c.handle_datagram(t, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&answer[..]));
    assert_eq!(closed_reason(&mut c), Some(CloseReason::VersionMismatch { server: VERSION + 2 }));
    let said = CloseReason::VersionMismatch { server: VERSION + 2 }.to_string();
    assert!(
        said.contains(&format!("version {}", VERSION + 2)) && said.contains(&format!("version {VERSION}")),
        "{said}"
    );
}

#[test]
fn a_forged_version_answer_changes_nothing() {
    let (mut c, init, t) = client();
    // An off-path sender does not know our mac1.
    let forged = version_answer(&[0x5a; wire::MAC_LEN], &[VERSION + 1]);
    c.handle_datagram(t, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&forged[..]));
    // An answer that lists our own version is not a mismatch.
    let ours = version_answer(&mac1_of(&init), &[VERSION, VERSION + 1]);
    c.handle_datagram(t, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&ours[..]));
    assert_eq!(c.stats().dropped.get(&DropReason::BadVersion), Some(&2));
    assert_eq!(closed_reason(&mut c), None);
    // The handshake goes on: a server of our version still admits the client.
    let mut p = Pair::good();
    p.run(std::time::Duration::from_millis(10));
    let forged = version_answer(&[0x5a; wire::MAC_LEN], &[VERSION + 1]);
    p.client.handle_datagram(p.now, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&forged[..]));
    assert!(p.client.is_established());
    assert_eq!(p.client.stats().dropped.get(&DropReason::UnexpectedHandshake), Some(&1));
}
