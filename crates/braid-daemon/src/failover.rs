//! The client's connect phase: the core's handshake failover ([`braid_core::connect`]) over
//! the links usable when the phase began, on the daemon's clock. The policy — which link the
//! handshake goes out on, how long each attempt waits, which link is next, when to give up —
//! is the core's, so the simulator runs the same one; this file only keeps its clock and its
//! links, and words its give-up for the user.

use crate::client::ActiveLink;
use crate::config::ClientSettings;
use crate::error::Failure;
use braid_core::connect::{AttemptEnd, Failover, FailoverError, Step};
use braid_core::Timestamp;
use std::time::Duration;
use tokio::time::Instant;

/// One connect phase: the policy, its links, its clock.
pub(crate) struct ConnectPhase {
    failover: Failover,
    links: Vec<ActiveLink>,
    epoch: Instant,
}

impl ConnectPhase {
    /// A phase over `links` (not empty), first on `links[first % len]`.
    pub(crate) fn new(links: Vec<ActiveLink>, first: usize, handshake_timeout: Duration) -> Self {
        let failover = Failover::new(Timestamp::ZERO, links.len(), first, handshake_timeout);
        ConnectPhase { failover, links, epoch: Instant::now() }
    }

    fn now(&self) -> Timestamp {
        Timestamp::from_duration(self.epoch.elapsed())
    }

    /// The phase's links.
    pub(crate) fn links(&self) -> &[ActiveLink] {
        &self.links
    }

    /// What to do now: start a handshake on a link (index into [`ConnectPhase::links`]) with
    /// this timeout, or stop with the policy's reason. Between attempts the policy never says
    /// wait: every report is followed by an attempt or a give-up.
    pub(crate) fn next(&mut self) -> Result<(usize, Duration), FailoverError> {
        loop {
            match self.failover.poll(self.now()) {
                Step::Attempt { link, timeout } => return Ok((link, timeout)),
                Step::GiveUp(e) => return Err(e),
                Step::Wait => {
                    // An attempt not reported yet: its end counts as no answer.
                    self.failover.attempt_failed(self.now(), AttemptEnd::NoAnswer);
                }
            }
        }
    }

    /// The attempt under way ended without a session.
    pub(crate) fn failed(&mut self, end: AttemptEnd) {
        let now = self.now();
        self.failover.attempt_failed(now, end);
    }
}

/// The error a client that never had a session reports when the phase gives up (exit codes
/// and wording as before failover moved into the core).
pub(crate) fn give_up_failure(e: FailoverError, settings: &ClientSettings, links: &[ActiveLink]) -> Failure {
    match e {
        FailoverError::Refused => Failure::Refused(format!(
            "the server at {} refused this client's key (it is not among the server's [[client]] keys); public key: {}",
            settings.server,
            settings.secret.public_key()
        )),
        FailoverError::Unreachable => Failure::Unreachable(format!(
            "the server at {} is unreachable over link {}: nothing listens on that port, or no route (ICMP unreachable)",
            settings.server,
            crate::linkpick::describe(links)
        )),
        FailoverError::Version { .. } => Failure::Version(format!("{e} (the server at {})", settings.server)),
        FailoverError::NoAnswer | FailoverError::NoLink => Failure::NoAnswer(format!(
            "no answer from the server at {} over link {}: it is down, filtered, or its key is not the configured server key ({})",
            settings.server,
            crate::linkpick::describe(links),
            settings.server_key
        )),
    }
}
