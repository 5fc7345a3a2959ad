//! Migration (issue 9, RFC 9000 §9): the client's address changes under a running session, as
//! behind a NAT that rebinds. The server validates the new address before it sends data there
//! (§9.3), and packets that still arrive from the old address do not draw it back.

use braid_core::*;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::time::Duration;

mod common;

use common::*;

/// The client's outside address once the NAT has rebound (a new port).
const REBOUND: &str = "10.0.0.1:4001";

/// A NAT in front of the client: its datagrams reach the server from `outer`; the server's
/// reach the client only when sent to `outer` (the old mapping is gone), the others are kept in
/// `elsewhere`. Every other client DATA packet, `hold` of them, is kept back in `held` (still
/// in flight on the old mapping).
struct Nat {
    outer: SocketAddr,
    hold: usize,
    held: Vec<Vec<u8>>,
    data_packets: u64,
    elsewhere: Vec<Sent>,
    /// Stream bytes the client read.
    read: u64,
}

impl Nat {
    fn new() -> Nat {
        Nat {
            outer: addr(CLIENT),
            hold: 0,
            held: Vec::new(),
            data_packets: 0,
            elsewhere: Vec::new(),
            read: 0,
        }
    }

    /// One step of both sides at `p.now`, the server writing stream `id` as fast as it may.
    fn step(&mut self, p: &mut Pair, id: StreamId) {
        let now = p.now;
        if p.client.poll_timeout().is_some_and(|t| t <= now) {
            p.client.handle_timeout(now);
        }
        let s = p.server.as_mut().unwrap();
        if s.poll_timeout().is_some_and(|t| t <= now) {
            s.handle_timeout(now);
        }
        while s.write(id, &[7u8; 16 * 1024]).is_ok_and(|n| n > 0) {}
        let mut buf = Vec::new();
        let mut answers = Vec::new();
        while let Some(t) = p.server.as_mut().unwrap().poll_transmit(now, &mut buf) {
            answers.push(Sent { from: addr(SERVER), to: t.destination, bytes: buf[..t.size].to_vec() });
        }
        let mut out = Vec::new();
        while let Some(t) = p.client.poll_transmit(now, &mut buf) {
            out.push(buf[..t.size].to_vec());
        }
        for d in out {
            let data = d[0] & 0xfc == 0x10;
            self.data_packets += u64::from(data);
            if self.hold > 0 && data && self.data_packets.is_multiple_of(2) {
                self.hold -= 1;
                self.held.push(d);
            } else {
                answers.extend(p.deliver_to_server(self.outer, &d));
            }
        }
        for a in answers {
            if a.to == self.outer {
                p.client.handle_datagram(now, Some(addr(CLIENT)), a.from, BytesMut::from(&a.bytes[..]));
            } else {
                self.elsewhere.push(a);
            }
        }
        let mut chunk = [0u8; 64 * 1024];
        while let Ok(Some(n)) = p.client.read(id, &mut chunk) {
            self.read += n as u64;
        }
    }

    /// Steps in 1 ms until `done` or `limit` has passed; true if `done`.
    fn run_until(
        &mut self,
        p: &mut Pair,
        id: StreamId,
        limit: Duration,
        done: impl Fn(&Pair) -> bool,
    ) -> bool {
        let end = p.now + limit;
        while p.now < end {
            self.step(p, id);
            if done(p) {
                return true;
            }
            p.now += Duration::from_millis(1);
        }
        false
    }
}

fn server_remote(p: &Pair) -> SocketAddr {
    p.server.as_ref().unwrap().path_info(0).unwrap().remote
}

/// A session with a download running on stream `id` behind `nat`.
fn downloading() -> (Pair, Nat, StreamId) {
    let mut p = Pair::good();
    p.run(Duration::from_millis(10));
    let id = p.client.open_stream(0).unwrap();
    p.client.write(id, b"get").unwrap();
    p.run(Duration::from_millis(10));
    let mut nat = Nat::new();
    nat.run_until(&mut p, id, Duration::from_millis(200), |_| false);
    assert!(nat.read > 0, "no download");
    (p, nat, id)
}

/// The server learns the new address from the client's packets, challenges it, and sends data
/// there only once the client has answered (RFC 9000 §9.3: "the endpoint MUST perform path
/// validation (Section 8.2) if it did not previously validate the peer's address").
#[test]
fn a_rebound_client_gets_data_at_its_new_address_once_validated() {
    let (mut p, mut nat, id) = downloading();
    nat.outer = addr(REBOUND);
    let before = p.server_sent.len();
    // The first packet from the new address draws a challenge there, not the path.
    let challenged = nat.run_until(&mut p, id, Duration::from_millis(100), |p| {
        p.server_sent[before..].iter().any(|s| s.to == addr(REBOUND))
    });
    assert!(challenged, "no challenge to the new address");
    assert_eq!(server_remote(&p), addr(CLIENT), "the path moved before validation");
    let to_new = |p: &Pair| p.server_sent[before..].iter().filter(|s| s.to == addr(REBOUND)).count();
    assert_eq!(to_new(&p), 1);
    let moved = nat.run_until(&mut p, id, Duration::from_secs(1), |p| server_remote(p) == addr(REBOUND));
    assert!(moved, "the path stayed at the old address");
    assert_eq!(to_new(&p), 1, "data went to the new address before its validation");
    // From here the download goes on at the new address; nothing goes to the old one.
    let (read, lost) = (nat.read, nat.elsewhere.len());
    p.now += Duration::from_millis(1);
    nat.run_until(&mut p, id, Duration::from_millis(500), |_| false);
    assert!(nat.read > read + 1_000_000, "{} bytes after the move", nat.read - read);
    assert_eq!(nat.elsewhere.len(), lost, "the server still sends to the old address");
    assert_eq!(server_remote(&p), addr(REBOUND));
}

/// Regression (issue 9, seen in `braid-emu/tests/mobility.rs`): packets still in flight on the
/// old mapping arrive after the move. RFC 9000 §9.3: "An endpoint only changes the address to
/// which it sends packets in response to the highest-numbered non-probing packet." The server
/// took them as a new migration back and sent PATH_CHALLENGEs to the old address.
#[test]
fn late_packets_from_the_old_address_draw_nothing_there() {
    let (mut p, mut nat, id) = downloading();
    nat.hold = 3;
    // Until three client packets are held (bounded: 100 steps of 10 ms).
    for _ in 0..100 {
        if nat.held.len() >= 3 {
            break;
        }
        nat.run_until(&mut p, id, Duration::from_millis(10), |_| false);
    }
    assert_eq!(nat.held.len(), 3);
    nat.outer = addr(REBOUND);
    let moved = nat.run_until(&mut p, id, Duration::from_secs(1), |p| server_remote(p) == addr(REBOUND));
    assert!(moved, "the path stayed at the old address");
    p.now += Duration::from_millis(1);
    nat.run_until(&mut p, id, Duration::from_millis(100), |_| false);
    // The late packets arrive from the old address: authenticated, not yet seen, older.
    let replayed = p.server_drops(DropReason::Replayed);
    let mark = nat.elsewhere.len();
    for d in std::mem::take(&mut nat.held) {
        let answers = p.deliver_to_server(addr(CLIENT), &d);
        nat.elsewhere.extend(answers.into_iter().filter(|a| a.to != addr(REBOUND)));
    }
    assert_eq!(p.server_drops(DropReason::Replayed), replayed, "the late packets were not new");
    let read = nat.read;
    nat.run_until(&mut p, id, Duration::from_secs(2), |_| false);
    let drawn: Vec<_> = nat.elsewhere[mark..].iter().map(|s| (s.to, s.bytes.len())).collect();
    assert!(drawn.is_empty(), "sent to the old address after the late packets: {drawn:?}");
    assert_eq!(server_remote(&p), addr(REBOUND));
    assert!(nat.read > read + 1_000_000, "the download stalled");
}
