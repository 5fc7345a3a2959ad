//! The expensive part of admitting a client — the Noise responder's four Diffie-Hellman
//! operations — as a self-contained job the driver runs off the data path (its own task or
//! thread, behind a bounded queue), so that data packets of established sessions keep flowing
//! while handshakes wait.
//!
//! The endpoint makes a job only after the cheap checks passed (`mac1`, the replay table, the
//! cookie under load, the per-source rate limit); [`HandshakeJob::run`] is pure, and
//! [`crate::Endpoint::complete`] turns its outcome into a session.

use crate::config::ServerConfig;
use crate::crypto::handshake::{Responder, SessionKeys};
use crate::crypto::{PublicKey, Seed};
use crate::endpoint::ratelimit::RateLimiter;
use crate::endpoint::recent::Fingerprint;
use crate::time::Timestamp;
use crate::wire::{SessionId, MAC1_OFFSET, RESET_TOKEN_LEN};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

/// Refusals written per second, all sources together: each costs two more Diffie-Hellman
/// operations, so a flood of unknown keys cannot double the handshake thread's work.
pub(super) const REFUSALS_PER_SECOND: f64 = 10.0;

/// The one bucket of refusals, shared with the thread that runs the jobs.
#[derive(Debug, Clone)]
pub(super) struct RefusalBudget(Arc<Mutex<RateLimiter>>);

impl RefusalBudget {
    pub(super) fn new() -> Self {
        RefusalBudget(Arc::new(Mutex::new(RateLimiter::new(REFUSALS_PER_SECOND, REFUSALS_PER_SECOND, 1))))
    }

    fn take(&self, now: Timestamp) -> bool {
        self.0.lock().map(|mut r| r.allow_key(now, 0)).unwrap_or(false)
    }
}

/// A HANDSHAKE_INIT that passed the cheap checks, waiting for its public-key work.
pub struct HandshakeJob {
    pub(super) config: Arc<ServerConfig>,
    /// Where it came from.
    pub remote: SocketAddr,
    /// The local address it arrived on.
    pub local: Option<SocketAddr>,
    pub(super) init: Vec<u8>,
    pub(super) fingerprint: Fingerprint,
    pub(super) session_id: SessionId,
    pub(super) reset_token: [u8; RESET_TOKEN_LEN],
    pub(super) seed: Seed,
    /// When the message arrived.
    pub(super) at: Timestamp,
    /// Refusals are written only while this budget lasts.
    pub(super) refusals: RefusalBudget,
}

impl std::fmt::Debug for HandshakeJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeJob").field("remote", &self.remote).finish_non_exhaustive()
    }
}

/// What the public-key work found.
pub(super) enum Verdict {
    /// The message did not open (not for our key, or forged past `mac1`).
    Undecryptable,
    /// The key is not admitted; the authenticated refusal, if one was allowed.
    Refused { client: PublicKey, response: Option<Vec<u8>> },
    /// Admitted: the answer and keys, waiting for the endpoint's checks (timestamp).
    Admitted {
        client: PublicKey,
        timestamp: u64,
        client_session: SessionId,
        response: Vec<u8>,
        keys: Box<SessionKeys>,
    },
}

/// A finished job, for [`crate::Endpoint::complete`].
pub struct HandshakeOutcome {
    pub(super) job: HandshakeJob,
    pub(super) verdict: Verdict,
}

impl HandshakeOutcome {
    /// Where the handshake came from (where an answer goes).
    pub fn remote(&self) -> SocketAddr {
        self.job.remote
    }

    /// The local address it arrived on.
    pub fn local(&self) -> Option<SocketAddr> {
        self.job.local
    }
}

impl std::fmt::Debug for HandshakeOutcome {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandshakeOutcome").field("remote", &self.job.remote).finish_non_exhaustive()
    }
}

impl HandshakeJob {
    /// Does the public-key work. Pure: may run on any thread.
    pub fn run(self) -> HandshakeOutcome {
        let verdict = match Responder::read_init(&self.config.secret, &self.init[2..MAC1_OFFSET], &self.seed)
        {
            Err(_) => Verdict::Undecryptable,
            Ok(r) if !self.config.clients.contains(&r.client_key) => {
                let client = r.client_key;
                Verdict::Refused { client, response: self.refusals.take(self.at).then(|| r.refuse()) }
            }
            Ok(r) => {
                let (client, timestamp, client_session) = (r.client_key, r.timestamp, r.client_session_id);
                let (response, keys) =
                    r.accept(self.session_id, self.config.session.cipher, self.reset_token);
                Verdict::Admitted { client, timestamp, client_session, response, keys: Box::new(keys) }
            }
        };
        HandshakeOutcome { job: self, verdict }
    }
}
