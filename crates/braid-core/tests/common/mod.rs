//! A client session and the server endpoint joined by a perfect, instant network, with every
//! datagram recorded (who sent it from where to where), for the robustness and attack tests.
#![allow(dead_code)]

use braid_core::*;
use bytes::BytesMut;
use std::net::SocketAddr;
use std::time::Duration;

pub const CLIENT: &str = "10.0.0.1:4000";
pub const CLIENT_2: &str = "10.0.1.1:4000";
pub const SERVER: &str = "10.9.0.1:443";

pub fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

pub fn keys() -> (StaticSecret, StaticSecret) {
    (StaticSecret::from_bytes([11; 32]), StaticSecret::from_bytes([22; 32]))
}

/// One datagram on the wire.
#[derive(Debug, Clone)]
pub struct Sent {
    pub from: SocketAddr,
    pub to: SocketAddr,
    pub bytes: Vec<u8>,
}

impl Sent {
    /// True for a DATA packet (any key phase).
    pub fn is_data(&self) -> bool {
        self.bytes[0] & 0xfc == 0x10
    }

    /// The path id of a DATA packet.
    pub fn path(&self) -> u8 {
        self.bytes[9]
    }

    /// The truncated packet number of a DATA packet.
    pub fn pn(&self) -> u32 {
        u32::from_be_bytes(self.bytes[10..14].try_into().unwrap())
    }
}

pub struct Pair {
    pub now: Timestamp,
    pub client: Session,
    pub endpoint: Endpoint,
    pub server: Option<Box<Session>>,
    pub server_config: ServerConfig,
    /// Every datagram the client sent, in order.
    pub client_sent: Vec<Sent>,
    /// Every datagram the server side sent (sessions and endpoint).
    pub server_sent: Vec<Sent>,
    /// Datagrams from the server side to addresses that are not the client's.
    pub misdirected: Vec<Sent>,
}

impl Pair {
    pub fn new(
        client_key: StaticSecret,
        server_key_for_client: PublicKey,
        server: StaticSecret,
        admitted: Vec<PublicKey>,
    ) -> Pair {
        Pair::with_session(client_key, server_key_for_client, server, admitted, SessionConfig::default())
    }

    pub fn with_session(
        client_key: StaticSecret,
        server_key_for_client: PublicKey,
        server: StaticSecret,
        admitted: Vec<PublicKey>,
        session: SessionConfig,
    ) -> Pair {
        let ccfg =
            ClientConfig { secret: client_key, server_key: server_key_for_client, session: session.clone() };
        let scfg = ServerConfig { secret: server, clients: admitted, session };
        let now = Timestamp::from_nanos(1_000_000_000);
        Pair {
            now,
            client: Session::connect(&ccfg, now, Some(addr(CLIENT)), addr(SERVER), Seed::from_u64(1), 1000),
            endpoint: Endpoint::new(scfg.clone(), Seed::from_u64(2)),
            server: None,
            server_config: scfg,
            client_sent: Vec::new(),
            server_sent: Vec::new(),
            misdirected: Vec::new(),
        }
    }

    pub fn good() -> Pair {
        Pair::good_with(SessionConfig::default())
    }

    pub fn good_with(session: SessionConfig) -> Pair {
        let (c, s) = keys();
        let sp = s.public_key();
        let cp = c.public_key();
        Pair::with_session(c, sp, s, vec![cp], session)
    }

    /// A server that lost every session (a restart): the same key, a new endpoint.
    pub fn restart_server(&mut self) {
        self.endpoint = Endpoint::new(self.server_config.clone(), Seed::from_u64(3));
        self.server = None;
    }

    fn is_client(a: SocketAddr) -> bool {
        a == addr(CLIENT) || a == addr(CLIENT_2)
    }

    /// Feeds a datagram to the server side as if it came from `from`; returns what the server
    /// side sent in answer (endpoint responses and session packets), recorded too.
    pub fn deliver_to_server(&mut self, from: SocketAddr, data: &[u8]) -> Vec<Sent> {
        let mut out = Vec::new();
        match self.endpoint.handle_inline(self.now, Some(addr(SERVER)), from, data) {
            DatagramEvent::Route(id) => {
                if let Some(s) = self.server.as_mut().filter(|s| s.id() == id) {
                    s.handle_datagram(self.now, Some(addr(SERVER)), from, BytesMut::from(data));
                }
            }
            DatagramEvent::Accepted { session, .. } => self.server = Some(session),
            DatagramEvent::Respond(bytes) => {
                let sent = Sent { from: addr(SERVER), to: from, bytes };
                self.server_sent.push(sent.clone());
                if !Self::is_client(from) {
                    self.misdirected.push(sent.clone());
                }
                out.push(sent);
            }
            DatagramEvent::Dropped(_) => {}
            DatagramEvent::Handshake(_) => unreachable!("handle_inline runs handshake jobs"),
        }
        out.extend(self.server_transmits());
        out
    }

    fn server_transmits(&mut self) -> Vec<Sent> {
        let mut out = Vec::new();
        let mut buf = Vec::new();
        if let Some(s) = self.server.as_mut() {
            while let Some(t) = s.poll_transmit(self.now, &mut buf) {
                out.push(Sent { from: addr(SERVER), to: t.destination, bytes: buf[..t.size].to_vec() });
            }
        }
        for s in &out {
            if !Self::is_client(s.to) {
                self.misdirected.push(s.clone());
            }
        }
        self.server_sent.extend(out.iter().cloned());
        out
    }

    fn deliver_to_client(&mut self, answers: Vec<Sent>) {
        for a in answers {
            if Self::is_client(a.to) {
                self.client.handle_datagram(self.now, Some(a.to), a.from, BytesMut::from(&a.bytes[..]));
            }
        }
    }

    /// One step of both sides at `now` (no time passes).
    pub fn step(&mut self) {
        let mut buf = Vec::new();
        if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
            self.client.handle_timeout(self.now);
        }
        if let Some(s) = self.server.as_mut() {
            if s.poll_timeout().is_some_and(|t| t <= self.now) {
                s.handle_timeout(self.now);
            }
        }
        while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
            let d = Sent {
                from: t.source.unwrap_or(addr(CLIENT)),
                to: t.destination,
                bytes: buf[..t.size].to_vec(),
            };
            self.client_sent.push(d.clone());
            let answers = self.deliver_to_server(d.from, &d.bytes);
            self.deliver_to_client(answers);
        }
        let answers = self.server_transmits();
        self.deliver_to_client(answers);
    }

    /// Runs both sides for `span` with 1 ms steps.
    pub fn run(&mut self, span: Duration) {
        let end = self.now + span;
        while self.now < end {
            self.step();
            self.now += Duration::from_millis(1);
        }
    }

    pub fn server_drops(&self, reason: DropReason) -> u64 {
        self.server.as_ref().map_or(0, |s| s.stats().dropped.get(&reason).copied().unwrap_or(0))
            + self.endpoint.dropped.get(&reason).copied().unwrap_or(0)
    }
}

pub fn closed_reason(s: &mut Session) -> Option<CloseReason> {
    while let Some(e) = s.poll_event() {
        if let Event::Closed(r) = e {
            return Some(r);
        }
    }
    None
}
