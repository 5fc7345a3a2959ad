//! The server's front door: opens handshakes, admits configured client keys, creates sessions,
//! and routes every later datagram to its session by the session id in its header.
//!
//! Sessions are handed to the driver when created (one driver per session); the endpoint keeps
//! only the routing table.

use crate::config::ServerConfig;
use crate::crypto::handshake::Responder;
use crate::crypto::PublicKey;
use crate::session::{DropReason, Session};
use crate::time::Timestamp;
use crate::wire::{self, Header};
use rand_chacha::ChaCha20Rng;
use rand_core::{RngCore, SeedableRng};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::Arc;

/// What the driver does with a datagram the endpoint looked at.
#[derive(Debug)]
pub enum DatagramEvent {
    /// Give it to the session with this id.
    Route(u32),
    /// A client was admitted: the driver now owns this session (its first `poll_transmit`
    /// answers the handshake). `replaces` is the id of an older session of the same client
    /// key, which the driver should close.
    Accepted {
        /// The new session.
        session: Box<Session>,
        /// The previous session of this client, if any.
        replaces: Option<u32>,
    },
    /// Send these bytes back to the sender (a refusal, smaller than what it sent).
    Respond(Vec<u8>),
    /// Dropped for this reason.
    Dropped(DropReason),
}

#[derive(Debug, Clone)]
struct Known {
    client: PublicKey,
    timestamp: u64,
}

/// The server endpoint.
#[derive(Debug)]
pub struct Endpoint {
    config: Arc<ServerConfig>,
    session_config: Arc<crate::SessionConfig>,
    sessions: HashMap<u32, Known>,
    by_client: HashMap<PublicKey, u32>,
    /// Highest handshake timestamp accepted per client key (outlives sessions).
    last_timestamp: HashMap<PublicKey, u64>,
    rng: ChaCha20Rng,
    /// Datagrams dropped before reaching a session, by reason.
    pub dropped: BTreeMap<DropReason, u64>,
}

impl Endpoint {
    /// An endpoint with `config`; `seed` feeds every random choice.
    pub fn new(config: ServerConfig, seed: u64) -> Self {
        Endpoint {
            session_config: Arc::new(config.session.clone()),
            config: Arc::new(config),
            sessions: HashMap::new(),
            by_client: HashMap::new(),
            last_timestamp: HashMap::new(),
            rng: ChaCha20Rng::seed_from_u64(seed),
            dropped: BTreeMap::new(),
        }
    }

    /// Sessions currently routed.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// The client key of a session.
    pub fn client_of(&self, session: u32) -> Option<PublicKey> {
        self.sessions.get(&session).map(|k| k.client)
    }

    fn drop(&mut self, reason: DropReason) -> DatagramEvent {
        *self.dropped.entry(reason).or_insert(0) += 1;
        DatagramEvent::Dropped(reason)
    }

    /// Looks at a received datagram.
    pub fn handle(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        data: &[u8],
    ) -> DatagramEvent {
        match wire::header::parse(data) {
            Err(_) => self.drop(DropReason::Malformed),
            Ok(Header::Data(h)) => {
                if self.sessions.contains_key(&h.session_id) {
                    DatagramEvent::Route(h.session_id)
                } else {
                    self.drop(DropReason::UnknownSession)
                }
            }
            Ok(Header::HandshakeResp { .. }) => self.drop(DropReason::UnexpectedHandshake),
            Ok(Header::HandshakeInit { noise }) => self.on_init(now, local, remote, data, noise),
        }
    }

    fn on_init(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        data: &[u8],
        noise: &[u8],
    ) -> DatagramEvent {
        let seed = self.rng.next_u64();
        let responder = match Responder::read_init(&self.config.secret, noise, seed) {
            Ok(r) => r,
            Err(_) => return self.drop(DropReason::HandshakeDecrypt),
        };
        let client = responder.client_key;
        if !self.config.clients.contains(&client) {
            *self.dropped.entry(DropReason::Refused).or_insert(0) += 1;
            tracing::info!(%client, %remote, "refused handshake from a key that is not admitted");
            return DatagramEvent::Respond(responder.refuse());
        }
        let last = self.last_timestamp.get(&client).copied();
        if let Some(&id) = self.by_client.get(&client) {
            if self.sessions.get(&id).is_some_and(|k| k.timestamp == responder.timestamp) {
                // A retransmission: the session answers again.
                return DatagramEvent::Route(id);
            }
        }
        if last.is_some_and(|l| responder.timestamp <= l) {
            return self.drop(DropReason::StaleHandshake);
        }
        let mut id = self.rng.next_u32();
        while id == 0 || self.sessions.contains_key(&id) {
            id = self.rng.next_u32();
        }
        let timestamp = responder.timestamp;
        let client_session = responder.client_session_id;
        let (resp, keys) = responder.accept(id, self.session_config.cipher);
        let session = Session::accept(
            self.session_config.clone(),
            now,
            local,
            remote,
            self.rng.next_u64(),
            (id, client_session),
            keys,
            client,
            data.to_vec(),
            resp,
        );
        let replaces = self.by_client.insert(client, id);
        if let Some(old) = replaces {
            self.sessions.remove(&old);
        }
        self.sessions.insert(id, Known { client, timestamp });
        self.last_timestamp.insert(client, timestamp);
        tracing::info!(%client, %remote, session = id, "session accepted");
        DatagramEvent::Accepted { session: Box::new(session), replaces }
    }

    /// Forgets a session that ended.
    pub fn forget(&mut self, id: u32) {
        if let Some(k) = self.sessions.remove(&id) {
            if self.by_client.get(&k.client) == Some(&id) {
                self.by_client.remove(&k.client);
            }
        }
    }
}
