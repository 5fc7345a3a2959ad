//! A session *after* the handshake, driven by a peer that holds its keys: the input is a
//! sequence of operations — frames sealed by either side and delivered to the other, time
//! passing, both sides transmitting, streams and datagrams used — so that frame handling
//! behind the AEAD (streams, flow control, ACKs, paths, close) is fuzzed, not only parsing.
//!
//! Invariants: no panic; each poll loop ends; a side that closed stays closed; every answer
//! the endpoint sends to the unauthenticated is smaller than its cause.
#![no_main]
use braid_core::*;
use bytes::{Bytes, BytesMut};
use libfuzzer_sys::fuzz_target;
use std::net::SocketAddr;
use std::time::Duration;

const C: &str = "192.0.2.1:4000";
const S: &str = "198.51.100.1:443";

struct Pair {
    now: Timestamp,
    client: Session,
    server: Session,
}

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// Client and server with the handshake done, over a perfect network.
fn established() -> Option<Pair> {
    let client = StaticSecret::from_bytes([1; 32]);
    let server = StaticSecret::from_bytes([2; 32]);
    let session = SessionConfig { max_streams: 16, ..SessionConfig::default() };
    let scfg = ServerConfig { secret: server.clone(), clients: vec![client.public_key()], session: session.clone() };
    let mut ep = Endpoint::new(scfg, Seed::from_u64(1));
    let now = Timestamp::from_nanos(1_000_000);
    let ccfg = ClientConfig { secret: client, server_key: server.public_key(), session };
    let mut c = Session::connect(&ccfg, now, Some(addr(C)), addr(S), Seed::from_u64(3), 1);
    let mut buf = Vec::new();
    let t = c.poll_transmit(now, &mut buf)?;
    let DatagramEvent::Accepted { mut session, .. } = ep.handle_inline(now, Some(addr(S)), addr(C), &buf[..t.size]) else {
        return None;
    };
    let t = session.poll_transmit(now, &mut buf)?;
    c.handle_datagram(now, Some(addr(C)), addr(S), BytesMut::from(&buf[..t.size]));
    c.is_established().then(|| Pair { now, client: c, server: *session })
}

impl Pair {
    /// Both sides send what they have to each other, a bounded number of rounds.
    fn exchange(&mut self) {
        let mut buf = Vec::new();
        for _ in 0..8 {
            let mut moved = 0;
            for _ in 0..64 {
                let Some(t) = self.client.poll_transmit(self.now, &mut buf) else { break };
                self.server.handle_datagram(self.now, Some(addr(S)), addr(C), BytesMut::from(&buf[..t.size]));
                moved += 1;
            }
            for _ in 0..64 {
                let Some(t) = self.server.poll_transmit(self.now, &mut buf) else { break };
                self.client.handle_datagram(self.now, Some(addr(C)), addr(S), BytesMut::from(&buf[..t.size]));
                moved += 1;
            }
            if moved == 0 {
                break;
            }
        }
        for s in [&mut self.client, &mut self.server] {
            while s.poll_event().is_some() {}
        }
    }

    fn tick(&mut self, ms: u8) {
        self.now += Duration::from_millis(u64::from(ms) * 7);
        for s in [&mut self.client, &mut self.server] {
            if s.poll_timeout().is_some_and(|t| t <= self.now) {
                s.handle_timeout(self.now);
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(mut p) = established() else { return };
    let mut i = 0;
    let mut take = |n: usize| {
        let s = &data[i.min(data.len())..(i + n).min(data.len())];
        i += n;
        s
    };
    let mut steps = 0;
    while let [op] = take(1) {
        steps += 1;
        if steps > 64 {
            break;
        }
        let op = *op;
        match op % 8 {
            // Frames sealed by the client, opened by the server (and the other way round).
            0 | 1 => {
                let len = take(1).first().copied().unwrap_or(0) as usize;
                let frames = take(len).to_vec();
                let (from, to, from_addr, to_addr) = if op % 8 == 0 {
                    (&mut p.client, &mut p.server, C, S)
                } else {
                    (&mut p.server, &mut p.client, S, C)
                };
                if let Some(packet) = from.seal_frames(p.now, 0, &frames) {
                    to.handle_datagram(p.now, Some(addr(to_addr)), addr(from_addr), BytesMut::from(&packet[..]));
                }
            }
            2 => {
                let ms = take(1).first().copied().unwrap_or(1);
                p.tick(ms);
            }
            3 => p.exchange(),
            // The application: streams and datagrams on either side.
            4 | 5 => {
                let side = if op % 8 == 4 { &mut p.client } else { &mut p.server };
                let n = take(1).first().copied().unwrap_or(0);
                if let Ok(id) = side.open_stream(n % 3) {
                    let _ = side.write(id, &vec![n; usize::from(n) * 37]);
                    if n % 2 == 0 {
                        let _ = side.finish(id);
                    }
                }
            }
            6 => {
                let n = take(1).first().copied().unwrap_or(0);
                let side = if n % 2 == 0 { &mut p.client } else { &mut p.server };
                let _ = side.send_datagram(p.now, n % 4, Bytes::from(vec![n; usize::from(n)]));
                while side.recv_datagram().is_some() {}
            }
            // Raw bytes (not sealed) straight to a side: forged and truncated packets.
            _ => {
                let len = take(1).first().copied().unwrap_or(0) as usize;
                let raw = take(len).to_vec();
                p.server.handle_datagram(p.now, Some(addr(S)), addr(C), BytesMut::from(&raw[..]));
            }
        }
        let closed = (p.client.is_closed(), p.server.is_closed());
        p.exchange();
        assert!(!closed.0 || p.client.is_closed(), "a closed client came back");
        assert!(!closed.1 || p.server.is_closed(), "a closed server session came back");
    }
});
