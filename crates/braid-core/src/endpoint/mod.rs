//! The server's front door: admits configured client keys, creates sessions, routes every later
//! datagram to its session by the session id in its header, and answers packets of sessions it
//! does not know with a stateless reset.
//!
//! A HANDSHAKE_INIT passes, in order, checks that cost nothing like a Diffie-Hellman
//! (WireGuard's order, whitepaper §5.4.4 and §5.4.7):
//!
//! 1. version, then exact length (the header parser). A message of another version, of a
//!    length any version may have, whose `mac1` is valid gets a VERSION answer (the versions
//!    we speak, smaller than the message, within the all-sources and per-message answer
//!    limits) and nothing else: it stops here;
//! 2. `mac1`, keyed by our public key: junk and messages for another server stop here;
//! 3. the replay table ([`recent`]): a message seen in the last two minutes is answered from
//!    the table (its session, or its refusal) or dropped;
//! 4. under load (many handshakes in progress), `mac2`: without a cookie for its source the
//!    sender gets a COOKIE_REPLY, smaller than its message, and no public-key work; with one,
//!    the per-source rate limit ([`ratelimit`]: 20 a second, bursts of 5, per host). As in
//!    WireGuard the limit applies only to sources a cookie proved, so nobody can spend
//!    another host's handshakes by spoofing its address;
//! 5. the bound on handshakes in progress.
//!
//! Other answers to the unauthenticated are limited per *session id* or per *message*, not
//! per source address, for the same reason: a spoofer cannot silence a client's resets.
//!
//! Then it becomes a [`HandshakeJob`] that the driver runs off the data path and hands back
//! to [`Endpoint::complete`]. Sessions are handed to the driver when created (one driver per
//! session); the endpoint keeps only the routing table.

pub mod job;
pub mod ratelimit;
pub mod recent;

use crate::config::ServerConfig;
use crate::crypto::cookie::{mac1_of, CookieChecker};
use crate::crypto::reset::ResetKey;
use crate::crypto::{PublicKey, Seed};
use crate::session::{DropReason, Session};
use crate::time::Timestamp;
use crate::wire::{self, Header, SessionId, HANDSHAKE_INIT_LEN, STATELESS_RESET_LEN, TYPE_STATELESS_RESET};
pub use job::{HandshakeJob, HandshakeOutcome};
use job::{RefusalBudget, Verdict};
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;
use ratelimit::{RateLimiter, MAX_SOURCES};
use recent::{Recent, Seen};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Handshakes in progress (jobs out) at most; more are dropped.
pub const MAX_IN_PROGRESS: usize = 1024;
/// From this many handshakes in progress the server is under load and demands cookies.
pub const LOAD_THRESHOLD: usize = MAX_IN_PROGRESS / 8;
/// Load is remembered this long after it fell (WireGuard: 1 s), so the cookie demand does not
/// flap.
const LOAD_MEMORY: Duration = Duration::from_secs(1);
/// Handshakes started per cookie-proven source host and second under load, and their burst
/// (WireGuard's values).
const HANDSHAKES_PER_SECOND: f64 = 20.0;
const HANDSHAKE_BURST: f64 = 5.0;
/// Answers per session id (stateless resets, handshake retransmissions) or per handshake
/// message (repeated refusals), a second.
const ANSWERS_PER_SECOND: f64 = 20.0;
const ANSWER_BURST: f64 = 5.0;
/// Cookie replies per second, all sources: bounds the work a flood of valid-`mac1` junk can
/// cause under load (each reply is smaller than its cause, so this is not about reflection).
const COOKIES_PER_SECOND: f64 = 20_000.0;
/// VERSION answers per second, all sources: bounds what a flood of other-version messages
/// with a valid `mac1` costs beyond the `mac1` check (each answer is smaller than its cause).
const VERSIONS_PER_SECOND: f64 = 1_000.0;
/// Messages of other versions whose answers are counted at once (their own table: a flood of
/// new ones fills it, not the one stateless resets and refusals use).
const VERSION_MESSAGES: usize = 4096;
/// At most one log line per this interval for refused keys, and one for other versions.
const REFUSAL_LOG_EVERY: Duration = Duration::from_secs(10);

/// What the driver does with a datagram the endpoint looked at.
#[derive(Debug)]
pub enum DatagramEvent {
    /// Give it to the session with this id.
    Route(SessionId),
    /// Run this job off the data path, then give its outcome to [`Endpoint::complete`].
    Handshake(Box<HandshakeJob>),
    /// A client was admitted: the driver now owns this session (its first `poll_transmit`
    /// answers the handshake). `replaces` is the id of an older session of the same client
    /// key, which the driver should close; its datagrams are routed to it until
    /// [`Endpoint::forget`].
    Accepted {
        /// The new session.
        session: Box<Session>,
        /// The previous session of this client, if any.
        replaces: Option<SessionId>,
    },
    /// Send these bytes back to the sender (a refusal, a cookie reply or a stateless reset,
    /// each smaller than what it sent).
    Respond(Vec<u8>),
    /// Dropped for this reason.
    Dropped(DropReason),
}

/// Answers the endpoint sent to unauthenticated packets, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Replies {
    /// COOKIE_REPLY (under load).
    pub cookies: u64,
    /// STATELESS_RESET (unknown session).
    pub resets: u64,
    /// Refusals of keys that are not admitted.
    pub refusals: u64,
    /// VERSION answers to clients of another protocol version.
    pub versions: u64,
}

#[derive(Debug, Clone)]
struct Known {
    client: PublicKey,
}

/// Log lines about refused handshakes, at most one per interval, counting what was left out.
#[derive(Debug, Default)]
struct RefusalLog {
    last: Option<Timestamp>,
    suppressed: u64,
}

impl RefusalLog {
    /// Whether a line may be written at `now`; if so, how many were left out since the last.
    fn line(&mut self, now: Timestamp) -> Option<u64> {
        if self.last.is_some_and(|t| now < t + REFUSAL_LOG_EVERY) {
            self.suppressed += 1;
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.suppressed))
    }
}

/// The session a data packet names, without decrypting it (None for handshake messages and
/// what does not parse): what a server's receive loops need to hand a packet to its
/// session's driver without the endpoint. Whether the session exists is the caller's
/// question; [`Endpoint::handle`] answers it for the rest.
pub fn session_of(datagram: &[u8]) -> Option<SessionId> {
    match wire::header::parse(datagram) {
        Ok(Header::Data(h)) => Some(h.session_id),
        _ => None,
    }
}

/// The server endpoint.
#[derive(Debug)]
pub struct Endpoint {
    config: Arc<ServerConfig>,
    session_config: Arc<crate::SessionConfig>,
    sessions: HashMap<SessionId, Known>,
    by_client: HashMap<PublicKey, SessionId>,
    /// Highest handshake timestamp accepted per client key (outlives sessions).
    last_timestamp: HashMap<PublicKey, u64>,
    rng: ChaCha20Rng,
    cookies: CookieChecker,
    reset_key: ResetKey,
    recent: Recent,
    /// Handshakes by cookie-proven source, under load.
    handshakes: RateLimiter,
    /// Answers by session id or message fingerprint.
    answers: RateLimiter,
    /// Cookie replies, all sources.
    cookie_replies: RateLimiter,
    /// VERSION answers by message fingerprint (apart from `answers`), and over all sources.
    version_answers: RateLimiter,
    version_replies: RateLimiter,
    refusals: RefusalBudget,
    /// Session ids handed to jobs in progress.
    reserved: HashSet<SessionId>,
    under_load_until: Option<Timestamp>,
    refusal_log: RefusalLog,
    version_log: RefusalLog,
    /// Datagrams dropped before reaching a session, by reason.
    pub dropped: BTreeMap<DropReason, u64>,
    /// Answers sent to unauthenticated packets.
    pub replied: Replies,
}

impl Endpoint {
    /// An endpoint with `config`; `seed` feeds every random choice (the daemon: 32 bytes from
    /// the OS).
    pub fn new(config: ServerConfig, seed: Seed) -> Self {
        let public = config.secret.public_key();
        Endpoint {
            session_config: Arc::new(config.session.clone()),
            cookies: CookieChecker::new(&public),
            reset_key: ResetKey::new(&config.secret),
            config: Arc::new(config),
            sessions: HashMap::new(),
            by_client: HashMap::new(),
            last_timestamp: HashMap::new(),
            rng: seed.rng(),
            recent: Recent::default(),
            handshakes: RateLimiter::new(HANDSHAKES_PER_SECOND, HANDSHAKE_BURST, MAX_SOURCES),
            answers: RateLimiter::new(ANSWERS_PER_SECOND, ANSWER_BURST, MAX_SOURCES),
            cookie_replies: RateLimiter::new(COOKIES_PER_SECOND, COOKIES_PER_SECOND / 10.0, 1),
            version_answers: RateLimiter::new(ANSWERS_PER_SECOND, ANSWER_BURST, VERSION_MESSAGES),
            version_replies: RateLimiter::new(VERSIONS_PER_SECOND, VERSIONS_PER_SECOND / 10.0, 1),
            refusals: RefusalBudget::new(),
            reserved: HashSet::new(),
            under_load_until: None,
            refusal_log: RefusalLog::default(),
            version_log: RefusalLog::default(),
            dropped: BTreeMap::new(),
            replied: Replies::default(),
        }
    }

    /// Sessions currently routed.
    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    /// Handshakes whose job is out.
    pub fn handshakes_in_progress(&self) -> usize {
        self.reserved.len()
    }

    /// The client key of a session.
    pub fn client_of(&self, session: SessionId) -> Option<PublicKey> {
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
            Err(wire::ParseError::UnsupportedVersion(v)) => self.on_other_version(now, remote, data, v),
            Err(_) => self.drop(DropReason::Malformed),
            Ok(Header::Data(h)) => {
                if self.sessions.contains_key(&h.session_id) {
                    DatagramEvent::Route(h.session_id)
                } else {
                    self.on_unknown_session(now, h.session_id, data.len())
                }
            }
            Ok(
                Header::HandshakeResp { .. }
                | Header::CookieReply { .. }
                | Header::StatelessReset { .. }
                | Header::Version { .. },
            ) => self.drop(DropReason::UnexpectedHandshake),
            Ok(Header::HandshakeInit { .. }) => self.on_init(now, local, remote, data),
        }
    }

    /// RFC 9000 §10.3: a packet for a session we do not know gets a stateless reset the client
    /// can authenticate, smaller than the packet — if we could have issued its session id (so
    /// guessed ids get nothing, see `crypto::reset`), within the per-session answer limit.
    fn on_unknown_session(&mut self, now: Timestamp, id: SessionId, len: usize) -> DatagramEvent {
        *self.dropped.entry(DropReason::UnknownSession).or_insert(0) += 1;
        if len <= STATELESS_RESET_LEN
            || !self.reset_key.issued(id)
            || !self.answers.allow_key(now, u128::from(id.0))
        {
            return DatagramEvent::Dropped(DropReason::UnknownSession);
        }
        self.replied.resets += 1;
        let mut reset = vec![TYPE_STATELESS_RESET; STATELESS_RESET_LEN];
        reset[1..].copy_from_slice(&self.reset_key.token(id));
        DatagramEvent::Respond(reset)
    }

    /// A HANDSHAKE_INIT of another protocol version (`version`): answered with the versions we
    /// speak, so that the client can say why it is not admitted instead of timing out — only
    /// when its length is one a message of any version may have (the bound keeps the `mac1`
    /// computation cheap) and its `mac1` is valid (a scanner that does not know our key learns
    /// nothing), within the per-message answer limit and [`VERSIONS_PER_SECOND`].
    fn on_other_version(
        &mut self,
        now: Timestamp,
        remote: SocketAddr,
        data: &[u8],
        version: u8,
    ) -> DatagramEvent {
        if !(wire::MIN_ANY_INIT_LEN..=wire::MAX_ANY_INIT_LEN).contains(&data.len()) {
            return self.drop(DropReason::Malformed);
        }
        if !self.cookies.mac1_ok(data) {
            return self.drop(DropReason::BadMac);
        }
        *self.dropped.entry(DropReason::WrongVersion).or_insert(0) += 1;
        let fingerprint = mac1_of(data);
        // Per message in a table of its own: anyone with our public key can make new messages
        // at will, and in the table that resets and refusals share each would take a slot.
        if !self.version_answers.allow_key(now, u128::from_be_bytes(fingerprint))
            || !self.version_replies.allow_key(now, 0)
        {
            return DatagramEvent::Dropped(DropReason::WrongVersion);
        }
        self.replied.versions += 1;
        if let Some(suppressed) = self.version_log.line(now) {
            tracing::warn!(
                %remote,
                client_version = version,
                server_version = wire::VERSION,
                suppressed,
                "a client of another braid protocol version tried to connect and was told this \
                 server's version; run the same braid release on both (at most one such line per \
                 10 s; `suppressed` counts the others)"
            );
        }
        DatagramEvent::Respond(wire::header::version_answer(&fingerprint, &wire::SUPPORTED_VERSIONS))
    }

    fn under_load(&mut self, now: Timestamp) -> bool {
        if self.reserved.len() >= LOAD_THRESHOLD {
            self.under_load_until = Some(now + LOAD_MEMORY);
        }
        self.under_load_until.is_some_and(|t| now < t)
    }

    fn on_init(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        data: &[u8],
    ) -> DatagramEvent {
        debug_assert_eq!(data.len(), HANDSHAKE_INIT_LEN);
        if !self.cookies.mac1_ok(data) {
            return self.drop(DropReason::BadMac);
        }
        let fingerprint = mac1_of(data);
        match self.recent.get(now, &fingerprint).cloned() {
            None => {}
            Some(Seen::Session(id)) if self.sessions.contains_key(&id) => {
                // A retransmission: the session answers again, within its answer limit.
                if !self.answers.allow_key(now, u128::from(id.0)) {
                    return self.drop(DropReason::RateLimited);
                }
                return DatagramEvent::Route(id);
            }
            Some(Seen::Refused(Some(answer))) => {
                *self.dropped.entry(DropReason::Refused).or_insert(0) += 1;
                if !self.answers.allow_key(now, u128::from_be_bytes(fingerprint)) {
                    return DatagramEvent::Dropped(DropReason::Refused);
                }
                self.replied.refusals += 1;
                return DatagramEvent::Respond(answer.to_vec());
            }
            Some(Seen::Refused(None)) => return self.drop(DropReason::Refused),
            Some(Seen::Pending) => return self.drop(DropReason::DuplicateHandshake),
            Some(Seen::Session(_) | Seen::Failed) => return self.drop(DropReason::StaleHandshake),
        }
        if self.under_load(now) {
            if !self.cookies.mac2_ok(now, data, remote) {
                if !self.cookie_replies.allow_key(now, 0) {
                    return self.drop(DropReason::Overloaded);
                }
                self.replied.cookies += 1;
                *self.dropped.entry(DropReason::CookieNeeded).or_insert(0) += 1;
                return DatagramEvent::Respond(self.cookies.reply(now, &mut self.rng, data, remote).to_vec());
            }
            // The cookie proved the source: now its rate counts.
            if !self.handshakes.allow(now, remote) {
                return self.drop(DropReason::RateLimited);
            }
        }
        if self.reserved.len() >= MAX_IN_PROGRESS {
            return self.drop(DropReason::Overloaded);
        }
        let session_id = loop {
            let id = self.reset_key.session_id(self.rng.next_u32());
            if id.0 != 0 && !self.sessions.contains_key(&id) && !self.reserved.contains(&id) {
                break id;
            }
        };
        self.reserved.insert(session_id);
        self.recent.insert(now, fingerprint, Seen::Pending);
        DatagramEvent::Handshake(Box::new(HandshakeJob {
            config: self.config.clone(),
            remote,
            local,
            init: data.to_vec(),
            fingerprint,
            session_id,
            reset_token: self.reset_key.token(session_id),
            seed: Seed::draw(&mut self.rng),
            at: now,
            refusals: self.refusals.clone(),
        }))
    }

    /// Gives back a job the driver could not run (its queue failed): the message may be tried
    /// again when the client retransmits it.
    pub fn abandon(&mut self, job: HandshakeJob) {
        self.reserved.remove(&job.session_id);
        self.recent.remove(&job.fingerprint);
    }

    /// [`Endpoint::handle`] with the public-key work of a handshake done at once, in line: for
    /// the simulator and tests, where determinism matters more than the data path's latency.
    pub fn handle_inline(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        data: &[u8],
    ) -> DatagramEvent {
        match self.handle(now, local, remote, data) {
            DatagramEvent::Handshake(job) => self.complete(now, job.run()),
            other => other,
        }
    }

    /// Takes the outcome of a [`HandshakeJob`]: a new session, a refusal to send, or a drop.
    pub fn complete(&mut self, now: Timestamp, outcome: HandshakeOutcome) -> DatagramEvent {
        let HandshakeOutcome { job, verdict } = outcome;
        self.reserved.remove(&job.session_id);
        match verdict {
            Verdict::Undecryptable => {
                self.recent.insert(now, job.fingerprint, Seen::Failed);
                self.drop(DropReason::HandshakeDecrypt)
            }
            Verdict::Refused { client, response } => {
                self.log_refusal(now, client, job.remote);
                *self.dropped.entry(DropReason::Refused).or_insert(0) += 1;
                let answer: Option<Arc<[u8]>> = response.map(Arc::from);
                self.recent.insert(now, job.fingerprint, Seen::Refused(answer.clone()));
                match answer {
                    Some(a) => {
                        self.replied.refusals += 1;
                        DatagramEvent::Respond(a.to_vec())
                    }
                    None => DatagramEvent::Dropped(DropReason::Refused),
                }
            }
            Verdict::Admitted { client, timestamp, client_session, response, keys } => {
                if self.last_timestamp.get(&client).is_some_and(|l| timestamp <= *l) {
                    self.recent.insert(now, job.fingerprint, Seen::Failed);
                    return self.drop(DropReason::StaleHandshake);
                }
                let id = job.session_id;
                let session = Session::accept(
                    self.session_config.clone(),
                    now,
                    job.local,
                    job.remote,
                    Seed::draw(&mut self.rng),
                    (id, client_session),
                    *keys,
                    client,
                    job.init,
                    response,
                );
                // The older session of this key stays routed until the driver forgets it: its
                // client then hears the CLOSE that says why it ended, not a stateless reset
                // that reads like a server restart (and is answered by taking the key back).
                let replaces = self.by_client.insert(client, id);
                self.sessions.insert(id, Known { client });
                self.last_timestamp.insert(client, timestamp);
                self.recent.insert(now, job.fingerprint, Seen::Session(id));
                tracing::info!(%client, remote = %job.remote, session = %id, "session accepted");
                DatagramEvent::Accepted { session: Box::new(session), replaces }
            }
        }
    }

    fn log_refusal(&mut self, now: Timestamp, client: PublicKey, remote: SocketAddr) {
        let Some(suppressed) = self.refusal_log.line(now) else { return };
        tracing::info!(
            %client,
            %remote,
            suppressed,
            "refused handshake from a key that is not admitted (at most one such line per 10 s; \
             `suppressed` counts the others)"
        );
    }

    /// Forgets a session that ended: its packets now get a stateless reset.
    pub fn forget(&mut self, id: SessionId) {
        if let Some(k) = self.sessions.remove(&id) {
            if self.by_client.get(&k.client) == Some(&id) {
                self.by_client.remove(&k.client);
            }
        }
    }
}
