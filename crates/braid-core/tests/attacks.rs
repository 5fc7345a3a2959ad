//! The core tried as an attacker and an unlucky operator would (issue 9): a server that lost the
//! session, floods of replayed or forged handshakes, recorded packets of removed paths, path ids
//! reused, keys worn out by packet count.

mod common;

use braid_core::wire::{HANDSHAKE_INIT_LEN, STATELESS_RESET_LEN, TYPE_STATELESS_RESET};
use braid_core::*;
use bytes::BytesMut;
use common::*;
use std::net::SocketAddr;
use std::time::Duration;

/// The first datagram (HANDSHAKE_INIT) of a client with `key` towards the test server.
fn initiation(key: [u8; 32], seed: u64, timestamp: u64) -> Vec<u8> {
    let (_, server) = keys();
    let cfg = ClientConfig {
        secret: StaticSecret::from_bytes(key),
        server_key: server.public_key(),
        session: SessionConfig::default(),
    };
    let t = Timestamp::from_nanos(1);
    let mut s = Session::connect(&cfg, t, Some(addr(CLIENT)), addr(SERVER), Seed::from_u64(seed), timestamp);
    let mut buf = Vec::new();
    let tx = s.poll_transmit(t, &mut buf).expect("message 1");
    buf.truncate(tx.size);
    assert_eq!(buf.len(), HANDSHAKE_INIT_LEN);
    buf
}

fn server_endpoint() -> Endpoint {
    let (c, s) = keys();
    Endpoint::new(
        ServerConfig { secret: s, clients: vec![c.public_key()], session: SessionConfig::default() },
        Seed::from_u64(9),
    )
}

#[test]
fn a_restarted_server_resets_the_session_at_once() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    assert!(p.client.is_established());
    p.restart_server();
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"are you there?").unwrap();
    p.run(Duration::from_millis(5));
    assert_eq!(closed_reason(&mut p.client), Some(CloseReason::StatelessReset));
    let reset = p.server_sent.iter().find(|s| s.bytes[0] == TYPE_STATELESS_RESET).expect("a reset was sent");
    assert_eq!(reset.bytes.len(), STATELESS_RESET_LEN);
    assert_eq!(p.endpoint.replied.resets, 1);
}

/// Two clients with one key: the newer handshake wins, and the older session stays routed
/// until the server's driver forgets it, so that its client hears the CLOSE saying why rather
/// than a stateless reset (which reads as a server restart and is answered by taking the key
/// back at once).
#[test]
fn a_replaced_session_is_routed_until_forgotten() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let old = p.server.as_ref().unwrap().id();
    let (c, s) = keys();
    let cfg = ClientConfig { secret: c, server_key: s.public_key(), session: SessionConfig::default() };
    let mut second =
        Session::connect(&cfg, p.now, Some(addr(CLIENT_2)), addr(SERVER), Seed::from_u64(5), 2000);
    let mut buf = Vec::new();
    let t = second.poll_transmit(p.now, &mut buf).expect("message 1");
    let ev = p.endpoint.handle_inline(p.now, Some(addr(SERVER)), addr(CLIENT_2), &buf[..t.size]);
    let DatagramEvent::Accepted { replaces, .. } = ev else { panic!("not admitted: {ev:?}") };
    assert_eq!(replaces, Some(old));
    let first_packet = |p: &mut Pair| {
        let id = p.client.open_stream(0).unwrap();
        p.client.write(id, b"still here").unwrap();
        let mut buf = Vec::new();
        let t = p.client.poll_transmit(p.now, &mut buf).expect("a data packet");
        buf.truncate(t.size);
        buf
    };
    let packet = first_packet(&mut p);
    match p.endpoint.handle_inline(p.now, Some(addr(SERVER)), addr(CLIENT), &packet) {
        DatagramEvent::Route(id) => assert_eq!(id, old),
        other => panic!("the replaced session's packet was not routed to it: {other:?}"),
    }
    p.endpoint.forget(old);
    let packet = first_packet(&mut p);
    let ev = p.endpoint.handle_inline(p.now, Some(addr(SERVER)), addr(CLIENT), &packet);
    assert!(matches!(ev, DatagramEvent::Respond(ref b) if b[0] == TYPE_STATELESS_RESET), "{ev:?}");
}

#[test]
fn a_session_the_server_ended_is_reset_too() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.server.as_ref().unwrap().id();
    p.endpoint.forget(id);
    p.server = None;
    p.run(Duration::from_millis(1500));
    assert_eq!(closed_reason(&mut p.client), Some(CloseReason::StatelessReset));
}

#[test]
fn a_forged_reset_is_dropped_and_the_session_goes_on() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let mut forged = [TYPE_STATELESS_RESET; STATELESS_RESET_LEN];
    forged[1..].copy_from_slice(&[0x5a; 16]);
    p.client.handle_datagram(p.now, Some(addr(CLIENT)), addr(SERVER), BytesMut::from(&forged[..]));
    assert!(p.client.is_established());
    assert_eq!(p.client.stats().dropped.get(&DropReason::BadReset), Some(&1));
    p.run(Duration::from_millis(10));
    assert!(p.client.is_established());
}

/// A DATA packet (unsealed garbage after the header) for session `id`.
fn data_for(id: SessionId) -> Vec<u8> {
    let mut packet = vec![0x10; 40];
    packet[1..9].copy_from_slice(&id.0.to_be_bytes());
    packet
}

#[test]
fn resets_are_smaller_than_their_cause_and_rate_limited_per_session() {
    let mut e = server_endpoint();
    let key = braid_core::crypto::reset::ResetKey::new(&keys().1);
    let t = Timestamp::from_nanos(1);
    let packet = data_for(key.session_id(77));
    let mut answered = 0;
    for i in 0..1000u32 {
        // From many sources: the limit is the session's, not a source's.
        let from = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)), 7);
        match e.handle(t, None, from, &packet) {
            DatagramEvent::Respond(r) => {
                assert!(r.len() < packet.len());
                answered += 1;
            }
            DatagramEvent::Dropped(DropReason::UnknownSession) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(answered, 5, "one burst per session id at one instant");
    // Another session's packets are answered still: spoofed packets of one id cannot
    // silence the resets of another.
    assert!(matches!(
        e.handle(t, None, addr(CLIENT), &data_for(key.session_id(78))),
        DatagramEvent::Respond(_)
    ));
}

/// Session ids the server could not have issued get no answer: nobody can collect reset
/// tokens by asking for every id, nor use the server as a reflector with random ids.
#[test]
fn guessed_session_ids_get_no_reset() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    for i in 0..10_000u64 {
        let id = SessionId(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5555);
        let from = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i as u32)), 7);
        assert!(matches!(
            e.handle(t, None, from, &data_for(id)),
            DatagramEvent::Dropped(DropReason::UnknownSession)
        ));
    }
    assert_eq!(e.replied.resets, 0);
}

/// 20,000 replays a second of a real initiation from a key the server does not admit: one
/// Diffie-Hellman in all, and a listed client from the same host still comes up.
#[test]
fn a_replay_flood_costs_one_handshake_and_blocks_no_one() {
    let mut e = server_endpoint();
    let stranger = initiation([77; 32], 5, 1000);
    let flooder = addr("127.0.0.1:40000");
    let (mut jobs, mut refusals) = (0, 0);
    let mut admitted = false;
    for i in 0..20_000u64 {
        let now = Timestamp::from_nanos(1_000_000 + i * 50_000);
        match e.handle(now, None, flooder, &stranger) {
            DatagramEvent::Handshake(job) => {
                jobs += 1;
                if let DatagramEvent::Respond(_) = e.complete(now, job.run()) {
                    refusals += 1;
                }
            }
            DatagramEvent::Respond(r) => {
                assert!(r.len() < stranger.len());
                refusals += 1;
            }
            DatagramEvent::Dropped(_) => {}
            other => panic!("{other:?}"),
        }
        if i == 10_000 {
            // keys() gives the listed client [11; 32].
            let listed = initiation([11; 32], 6, 2000);
            let DatagramEvent::Handshake(job) = e.handle(now, None, addr("127.0.0.1:40001"), &listed) else {
                panic!("the listed client's handshake was not taken")
            };
            admitted = matches!(e.complete(now, job.run()), DatagramEvent::Accepted { .. });
        }
    }
    assert_eq!(jobs, 1, "replays are answered from the table, not with Diffie-Hellman");
    assert!(admitted);
    assert!(refusals <= 30, "repeated refusals are rate-limited: {refusals}");
}

#[test]
fn junk_of_the_right_length_costs_no_public_key_work() {
    let mut e = server_endpoint();
    let mut junk = initiation([1; 32], 1, 1);
    for i in 0..1000u32 {
        junk[10..14].copy_from_slice(&i.to_be_bytes());
        let ev = e.handle(Timestamp::from_nanos(1), None, addr("203.0.113.1:1"), &junk);
        assert!(matches!(ev, DatagramEvent::Dropped(DropReason::BadMac)), "{ev:?}");
    }
}

/// Puts `e` under load: LOAD_THRESHOLD handshakes in progress from as many sources.
fn load(e: &mut Endpoint, t: Timestamp) {
    for i in 0..braid_core::endpoint::LOAD_THRESHOLD as u32 {
        let init = initiation([(i % 200) as u8 + 30; 32], u64::from(i), 1);
        let from = SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::from(0xc633_6400 + i)), 9);
        assert!(matches!(e.handle(t, None, from, &init), DatagramEvent::Handshake(_)));
    }
}

/// Not under load, the server takes every fresh handshake (its queue is the bound): a spoofer
/// cannot spend another host's handshakes.
#[test]
fn without_load_no_source_can_spend_another_hosts_handshakes() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    let victim = addr("192.0.2.9:1000");
    for i in 0..50u64 {
        let init = initiation([100 + i as u8; 32], i, 1);
        assert!(matches!(e.handle(t, None, victim, &init), DatagramEvent::Handshake(_)), "{i}");
    }
}

/// Under load, a source that proved its address with a cookie is held to 20 handshakes a
/// second (bursts of 5); another host is not held back.
#[test]
fn under_load_handshakes_are_rate_limited_per_proven_source() {
    let mut e = server_endpoint();
    let t = Timestamp::from_nanos(1);
    load(&mut e, t);
    let (_, server) = keys();
    let from = addr("192.0.2.9:1000");
    let mut jar = braid_core::crypto::cookie::CookieJar::new(&server.public_key());
    let mut first = initiation([99; 32], 999, 1);
    jar.stamp(t, &mut first);
    let DatagramEvent::Respond(reply) = e.handle(t, None, from, &first) else { panic!("no cookie reply") };
    jar.on_reply(t, reply[1..25].try_into().unwrap(), reply[25..].try_into().unwrap()).unwrap();
    let mut taken = 0;
    for i in 0..20u64 {
        let mut init = initiation([150 + i as u8; 32], 2000 + i, 1);
        jar.stamp(t, &mut init);
        match e.handle(t, None, from, &init) {
            DatagramEvent::Handshake(_) => taken += 1,
            DatagramEvent::Dropped(DropReason::RateLimited) => {}
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(taken, 5);
}

/// Under load (many handshakes in progress) the server answers a handshake without a cookie
/// with a COOKIE_REPLY; the client proves its address with `mac2` and is admitted.
#[test]
fn under_load_a_cookie_proves_the_address() {
    let mut p = Pair::good();
    let now = p.now;
    load(&mut p.endpoint, now);
    assert_eq!(p.endpoint.handshakes_in_progress(), braid_core::endpoint::LOAD_THRESHOLD);
    p.run(Duration::from_millis(5));
    assert!(p.client.is_established(), "the client came up through the cookie");
    assert_eq!(p.endpoint.replied.cookies, 1);
    let reply = p.server_sent.iter().find(|s| s.bytes[0] == 0x04).unwrap();
    assert!(reply.bytes.len() < HANDSHAKE_INIT_LEN);
    assert_eq!(p.server_drops(DropReason::CookieNeeded), 1);
}

/// A recorded packet of a path that was removed, replayed from another address, re-creates
/// nothing and draws nothing to that address.
#[test]
fn a_replayed_packet_of_a_removed_path_recreates_nothing() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let path = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.run(Duration::from_millis(20));
    assert!(p.server.as_ref().unwrap().path_ids().contains(&path));
    let recorded: Vec<Sent> =
        p.client_sent.iter().filter(|s| s.is_data() && s.path() == path).cloned().collect();
    assert!(!recorded.is_empty());
    p.client.remove_path(p.now, path).unwrap();
    p.run(Duration::from_millis(20));
    assert!(!p.server.as_ref().unwrap().path_ids().contains(&path), "the server retired the path");
    let before = p.server_drops(DropReason::Replayed);
    let attacker = addr("203.0.113.66:6666");
    for r in &recorded {
        p.deliver_to_server(attacker, &r.bytes);
    }
    p.run(Duration::from_millis(50));
    assert!(!p.server.as_ref().unwrap().path_ids().contains(&path), "a replay re-created the path");
    assert_eq!(p.server_drops(DropReason::Replayed) - before, recorded.len() as u64);
    assert!(p.misdirected.iter().all(|s| s.to != attacker), "the server sent to the attacker");
}

/// A path id used again continues its packet numbers, so no (key, nonce) pair repeats.
#[test]
fn a_reused_path_id_continues_its_packet_numbers() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let first = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    p.run(Duration::from_millis(20));
    let last_pn =
        p.client_sent.iter().filter(|s| s.is_data() && s.path() == first).map(|s| s.pn()).max().unwrap();
    p.client.remove_path(p.now, first).unwrap();
    p.run(Duration::from_millis(5));
    // Path ids are handed out in turn: go round until `first` comes back.
    let mut id = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    while id != first {
        p.client.remove_path(p.now, id).unwrap();
        id = p.client.add_path(p.now, Some(addr(CLIENT_2)), addr(SERVER)).unwrap();
    }
    let mark = p.client_sent.len();
    p.run(Duration::from_millis(20));
    let again: Vec<u32> =
        p.client_sent[mark..].iter().filter(|s| s.is_data() && s.path() == first).map(|s| s.pn()).collect();
    assert!(!again.is_empty());
    assert!(again.iter().all(|pn| *pn > last_pn), "packet numbers restarted: {again:?} after {last_pn}");
    assert!(p.server.as_ref().unwrap().path_ids().contains(&first), "the server validated it again");
}

/// Keys are updated by packet count in both directions while a stream flows for 12 s, without
/// loss. (An update waits until the previous key's grace, at least 1 s, is over.)
#[test]
fn keys_update_by_packet_count_without_a_stall() {
    let mut session = SessionConfig::default();
    session.key_update.packets = Some(64);
    let mut p = Pair::good_with(session);
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    let data: Vec<u8> = (0..2_400_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    let mut written = 0;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    // 10 kB every 50 ms: 200 kB/s for 12 s.
    for _ in 0..400 {
        if written < data.len() {
            let end = (written + 10_000).min(data.len());
            written += p.client.write(id, &data[written..end]).unwrap_or(0);
            if written == data.len() {
                p.client.finish(id).unwrap();
            }
        }
        p.run(Duration::from_millis(50));
        let s = p.server.as_mut().unwrap();
        while let Ok(Some(n)) = s.read(id, &mut buf) {
            got.extend_from_slice(&buf[..n]);
        }
        if got.len() == data.len() {
            break;
        }
    }
    assert!(got == data, "stream intact across key updates ({} of {} bytes)", got.len(), data.len());
    let (c, s) = (p.client.key_phase(), p.server.as_ref().unwrap().key_phase());
    assert!(c >= 8 && c == s, "key phases: client {c}, server {s}");
    assert_eq!(p.server_drops(DropReason::KeyPhase), 0);
    assert_eq!(p.server_drops(DropReason::Decrypt), 0);
}

/// A packet raced from a spoofed address (a copy that beats the original) starts a migration
/// challenge there; what the server sends to that unvalidated address stays within three
/// times what came from it (RFC 9000 §9.3.1), however long the challenge is retried.
#[test]
fn a_raced_packet_draws_at_most_three_times_its_size_to_the_spoofed_address() {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, &[7; 3000]).unwrap();
    let mut buf = Vec::new();
    let t = p.client.poll_transmit(p.now, &mut buf).unwrap();
    let packet = buf[..t.size].to_vec();
    let spoofed = addr("203.0.113.99:9999");
    p.deliver_to_server(spoofed, &packet);
    p.deliver_to_server(addr(CLIENT), &packet);
    p.run(Duration::from_secs(5));
    let to_spoofed: usize = p.server_sent.iter().filter(|s| s.to == spoofed).map(|s| s.bytes.len()).sum();
    assert!(to_spoofed > 0, "the raced packet drew a challenge");
    assert!(to_spoofed <= 3 * packet.len(), "{to_spoofed} bytes to the spoofed address for {}", packet.len());
    assert!(p.client.is_established());
}
