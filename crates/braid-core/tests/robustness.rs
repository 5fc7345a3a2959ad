//! Bad input never panics, is dropped and counted by reason, and is never answered with more
//! bytes than it carried: garbage, truncation, replays, wrong keys, unknown clients.

use braid_core::*;
use bytes::BytesMut;
use proptest::prelude::*;
use std::time::Duration;

mod common;

use common::*;

#[test]
fn handshake_and_stream_round_trip() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    assert!(p.client.is_established());
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"hello braid").unwrap();
    p.client.finish(id).unwrap();
    p.run(Duration::from_millis(10));
    let s = p.server.as_mut().unwrap();
    let mut buf = [0u8; 64];
    assert_eq!(s.read(id, &mut buf).unwrap(), Some(11));
    assert_eq!(&buf[..11], b"hello braid");
}

#[test]
fn both_ends_name_the_session_by_the_servers_id() {
    let mut p = Pair::good();
    assert_eq!(p.client.server_id(), SessionId(0), "no server id before the handshake");
    p.run(Duration::from_millis(10));
    let server = p.server.as_ref().unwrap();
    assert_eq!(p.client.server_id(), server.id());
    assert_eq!(server.server_id(), server.id());
    assert_ne!(p.client.id(), server.id(), "each side picks its own id for its packets");
}

#[test]
fn wrong_server_key_times_out_and_the_server_stays_silent() {
    let (c, s) = keys();
    let wrong = StaticSecret::from_bytes([33; 32]).public_key();
    let cp = c.public_key();
    let mut p = Pair::new(c, wrong, s, vec![cp]);
    p.run(Duration::from_secs(11));
    assert!(p.server_sent.is_empty(), "the server answered a handshake it could not open");
    // mac1 is keyed by the server's public key: a message for another key is dropped before
    // any Diffie-Hellman.
    assert!(p.server_drops(DropReason::BadMac) >= 3);
    assert_eq!(p.server_drops(DropReason::HandshakeDecrypt), 0);
    assert_eq!(closed_reason(&mut p.client), Some(CloseReason::HandshakeTimeout));
}

#[test]
fn unknown_client_is_refused_with_a_smaller_authenticated_answer() {
    let (c, s) = keys();
    let sp = s.public_key();
    let other = StaticSecret::from_bytes([44; 32]).public_key();
    let mut p = Pair::new(c, sp, s, vec![other]);
    p.run(Duration::from_millis(5));
    assert_eq!(closed_reason(&mut p.client), Some(CloseReason::Refused));
    assert_eq!(p.server_drops(DropReason::Refused), 1);
    for (sent, answer) in p.client_sent.iter().zip(&p.server_sent) {
        assert!(answer.bytes.len() < sent.bytes.len());
    }
}

#[test]
fn replays_are_dropped_and_counted() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"once").unwrap();
    p.run(Duration::from_millis(5));
    let data_packets: Vec<Vec<u8>> =
        p.client_sent.iter().filter(|d| d.is_data()).map(|d| d.bytes.clone()).collect();
    assert!(!data_packets.is_empty());
    for d in &data_packets {
        assert!(p.deliver_to_server(addr(CLIENT), d).is_empty(), "a replay was answered");
    }
    assert_eq!(p.server_drops(DropReason::Replayed), data_packets.len() as u64);
    // A replayed handshake message 1 (from anywhere) does not create a session: it is a
    // retransmission, answered by the existing session with a smaller packet.
    let init = p.client_sent[0].bytes.clone();
    let sessions = p.endpoint.session_count();
    let answers = p.deliver_to_server(addr("192.0.2.7:999"), &init);
    assert_eq!(p.endpoint.session_count(), sessions);
    assert!(answers.iter().all(|a| a.bytes.len() < init.len()));
}

#[test]
fn wrong_key_data_truncation_and_garbage_are_dropped() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"x").unwrap();
    p.run(Duration::from_millis(5));
    let good = p.client_sent.iter().rev().find(|d| d.is_data()).unwrap().bytes.clone();
    // Flip a ciphertext bit: authentication fails.
    let mut forged = good.clone();
    let last = forged.len() - 1;
    forged[last] ^= 1;
    // Bump the packet number so the replay window does not catch it first.
    forged[9] = forged[9].wrapping_add(100);
    assert!(p.deliver_to_server(addr(CLIENT), &forged).is_empty());
    assert_eq!(p.server_drops(DropReason::Decrypt), 1);
    // Truncated to below a minimal packet.
    assert!(p.deliver_to_server(addr(CLIENT), &good[..20]).is_empty());
    assert!(p.server_drops(DropReason::Malformed) >= 1);
    // Garbage of every length.
    for len in 0..200 {
        let junk: Vec<u8> = (0..len).map(|i| (i * 37 + len) as u8).collect();
        for answer in p.deliver_to_server(addr("198.51.100.1:5"), &junk) {
            assert!(answer.bytes.len() <= junk.len());
        }
    }
    assert!(p.client.is_established());
}

proptest! {
    #[test]
    fn endpoint_never_panics_nor_amplifies(data in proptest::collection::vec(any::<u8>(), 0..1500), first in 0u8..0x14) {
        let mut p = Pair::good();
        let mut d = data;
        if let Some(b) = d.first_mut() { *b = first; }
        for answer in p.deliver_to_server(addr("203.0.113.9:1"), &d) {
            prop_assert!(answer.bytes.len() <= d.len());
        }
    }

    /// A client still in its handshake, before any answer: random datagrams (VERSION answers
    /// among them, first byte 0x06) neither panic nor end it, and it still connects.
    #[test]
    fn handshaking_client_survives_random_datagrams(data in proptest::collection::vec(any::<u8>(), 0..1500), first in 0u8..0x14) {
        let mut p = Pair::good();
        let mut d = data;
        if let Some(b) = d.first_mut() { *b = first; }
        p.client.handle_datagram(p.now, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&d[..]));
        prop_assert_eq!(closed_reason(&mut p.client), None);
        p.run(Duration::from_millis(10));
        prop_assert!(p.client.is_established());
    }

    #[test]
    fn established_session_survives_random_datagrams(data in proptest::collection::vec(any::<u8>(), 0..1500)) {
        let mut p = Pair::good();
        p.run(Duration::from_millis(10));
        p.client.handle_datagram(p.now, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&data[..]));
        let mut sent = 0;
        let mut buf = Vec::new();
        while p.client.poll_transmit(p.now, &mut buf).is_some() { sent += 1; prop_assert!(sent < 100); }
        prop_assert!(p.client.is_established());
    }
}

/// A stream whose halves are both done is forgotten on each side, and each side says so
/// once (`StreamEvent::Closed`), so a driver can let go of what it keeps per stream.
#[test]
fn a_finished_stream_is_closed_on_both_sides_once() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"ping").unwrap();
    p.client.finish(id).unwrap();
    p.run(Duration::from_millis(10));
    let s = p.server.as_mut().unwrap();
    let mut buf = [0u8; 16];
    assert_eq!(s.read(id, &mut buf).unwrap(), Some(4));
    assert_eq!(s.read(id, &mut buf).unwrap(), None, "end of stream");
    s.write(id, b"pong").unwrap();
    s.finish(id).unwrap();
    p.run(Duration::from_millis(10));
    assert_eq!(p.client.read(id, &mut buf).unwrap(), Some(4));
    assert_eq!(p.client.read(id, &mut buf).unwrap(), None);
    p.run(Duration::from_millis(50));
    let closed = |s: &mut Session| {
        let mut n = 0;
        while let Some(e) = s.poll_event() {
            if e == Event::Stream(StreamEvent::Closed(id)) {
                n += 1;
            }
        }
        n
    };
    assert_eq!(closed(&mut p.client), 1);
    assert_eq!(closed(p.server.as_mut().unwrap()), 1);
    assert!(p.client.write(id, b"x").is_err(), "the id is unknown now");
}
