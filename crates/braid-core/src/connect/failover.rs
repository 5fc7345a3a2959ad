//! The handshake failover policy: attempts go round the links in order, starting at the one
//! the caller names. In the first round each attempt lasts [`HANDSHAKE_FIRST_TRY`]; each
//! further round doubles it (the backoff: a link is offered a fresh handshake less and less
//! often), never beyond the session's handshake timeout. A client with one link has nothing
//! to fail over to: its one attempt lasts the whole budget. The client gives up when the
//! budget — the handshake timeout once per link, what trying every link for the whole
//! timeout in turn would take — is spent, at once when the server refuses the client's key,
//! and at once when every link of a round was refused by ICMP (nothing listens there).

use crate::time::Timestamp;
use crate::timing::HANDSHAKE_FIRST_TRY;
use std::time::Duration;

/// How an attempt ended without a session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptEnd {
    /// No answer within the attempt's timeout.
    NoAnswer,
    /// The link reported the server unreachable (ICMP port or host unreachable, no route).
    Unreachable,
    /// The server answered and refused the client's key.
    Refused,
    /// The server answered that it speaks another protocol version (the newest it speaks).
    /// Not authenticated beyond an echo of the message (see `session`), so, like an ICMP
    /// unreachable, it ends this attempt only; the phase gives up when every link of a round
    /// ended so.
    WrongVersion(u8),
}

/// Why the client gave up connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FailoverError {
    /// There was no link to try.
    #[error("no link to connect over")]
    NoLink,
    /// The server refused the client's key.
    #[error("the server refused this client's key")]
    Refused,
    /// No link got an answer within the budget, and some link reported the server unreachable.
    #[error("the server is unreachable over every link (ICMP unreachable or no route)")]
    Unreachable,
    /// No link got an answer within the budget.
    #[error("no answer from the server over any link")]
    NoAnswer,
    /// The server speaks another protocol version (the newest it speaks), said over every
    /// link of a round, or over some link when the budget ran out.
    #[error("{}", crate::CloseReason::VersionMismatch { server: *server })]
    Version {
        /// The server's newest protocol version.
        server: u8,
    },
}

/// What the caller does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Start a session on link `link` (an index into the caller's links) whose handshake gives
    /// up after `timeout`.
    Attempt {
        /// Which link.
        link: usize,
        /// The attempt's handshake timeout.
        timeout: Duration,
    },
    /// An attempt is under way (or the session is established): nothing to start.
    Wait,
    /// Stop trying.
    GiveUp(FailoverError),
}

/// The attempt under way.
#[derive(Debug, Clone, Copy)]
struct Attempt {
    link: usize,
    until: Timestamp,
}

/// One connect phase's policy over the links (see the module docs).
#[derive(Debug, Clone)]
pub struct Failover {
    links: usize,
    /// The next link to try, counted from 0 without wrapping (the link is `next % links`).
    next: usize,
    /// The session's handshake timeout: no attempt lasts longer.
    full: Duration,
    first_try: Duration,
    deadline: Timestamp,
    round: u32,
    /// Attempts ended in the current round, and how many of them by a definite answer (ICMP
    /// unreachable, or VERSION).
    ended_in_round: usize,
    definite_in_round: usize,
    any_unreachable: bool,
    /// The newest version a VERSION answer named, over any link.
    server_version: Option<u8>,
    attempts: u32,
    current: Option<Attempt>,
    established: Option<(usize, Timestamp)>,
    gave_up: Option<FailoverError>,
}

impl Failover {
    /// A connect phase over `links` links beginning at `now`, first on link `first` (taken
    /// modulo `links`), with the session's handshake timeout `handshake_timeout`.
    pub fn new(now: Timestamp, links: usize, first: usize, handshake_timeout: Duration) -> Self {
        let budget = handshake_timeout.saturating_mul(u32::try_from(links).unwrap_or(u32::MAX));
        Failover {
            links,
            next: if links == 0 { 0 } else { first % links },
            full: handshake_timeout,
            first_try: HANDSHAKE_FIRST_TRY,
            deadline: now + budget,
            round: 0,
            ended_in_round: 0,
            definite_in_round: 0,
            any_unreachable: false,
            server_version: None,
            attempts: 0,
            current: None,
            established: None,
            gave_up: (links == 0).then_some(FailoverError::NoLink),
        }
    }

    /// Sets how long each link's first attempt lasts (default [`HANDSHAKE_FIRST_TRY`]). The
    /// handshake timeout itself gives the one-link-at-a-time behaviour of a client without
    /// this policy: every link is waited on for the whole timeout.
    pub fn with_first_try(mut self, first_try: Duration) -> Self {
        self.first_try = first_try.max(Duration::from_millis(1));
        self
    }

    /// What to do at `now`. An attempt whose timeout has passed without a report counts as
    /// [`AttemptEnd::NoAnswer`].
    pub fn poll(&mut self, now: Timestamp) -> Step {
        if let Some(e) = self.gave_up {
            return Step::GiveUp(e);
        }
        if self.established.is_some() {
            return Step::Wait;
        }
        if let Some(a) = self.current {
            if now < a.until {
                return Step::Wait;
            }
            self.attempt_failed(now, AttemptEnd::NoAnswer);
            if let Some(e) = self.gave_up {
                return Step::GiveUp(e);
            }
        }
        if now >= self.deadline {
            return Step::GiveUp(self.give_up(self.exhausted()));
        }
        let left = self.deadline.saturating_since(now);
        let timeout = if self.links == 1 {
            left
        } else {
            self.first_try.saturating_mul(1u32 << self.round.min(16)).min(self.full).min(left)
        };
        let link = self.next % self.links;
        self.next += 1;
        self.attempts += 1;
        self.current = Some(Attempt { link, until: now + timeout });
        Step::Attempt { link, timeout }
    }

    /// The attempt under way ended at `now` without a session.
    pub fn attempt_failed(&mut self, _now: Timestamp, end: AttemptEnd) {
        if self.current.take().is_none() || self.gave_up.is_some() {
            return;
        }
        match end {
            AttemptEnd::Refused => {
                self.give_up(FailoverError::Refused);
                return;
            }
            AttemptEnd::Unreachable => {
                self.any_unreachable = true;
                self.definite_in_round += 1;
            }
            AttemptEnd::WrongVersion(v) => {
                self.server_version = Some(self.server_version.map_or(v, |s| s.max(v)));
                // A definite answer, as an ICMP unreachable is.
                self.definite_in_round += 1;
            }
            AttemptEnd::NoAnswer => {}
        }
        self.ended_in_round += 1;
        if self.ended_in_round >= self.links {
            if self.definite_in_round >= self.links {
                // Every link was told nothing listens there, or that the server speaks another
                // version: waiting longer changes nothing.
                let e = self.exhausted();
                self.give_up(e);
                return;
            }
            self.round += 1;
            self.ended_in_round = 0;
            self.definite_in_round = 0;
        }
    }

    /// The attempt under way established its session at `now`.
    pub fn established(&mut self, now: Timestamp) {
        if let Some(a) = self.current.take() {
            self.established = Some((a.link, now));
        }
    }

    /// When [`Failover::poll`] must be called next, if nothing is reported before: the end
    /// of the attempt under way (None when none is, or the phase is over).
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        self.current.filter(|_| self.gave_up.is_none()).map(|a| a.until)
    }

    /// The link of the attempt under way.
    pub fn current_link(&self) -> Option<usize> {
        self.current.map(|a| a.link)
    }

    /// The link the session was established on, and when.
    pub fn established_on(&self) -> Option<(usize, Timestamp)> {
        self.established
    }

    /// Attempts started so far.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// When the phase gives up if no link answers.
    pub fn deadline(&self) -> Timestamp {
        self.deadline
    }

    /// The error for a budget spent without a session: the most telling answer any link got.
    fn exhausted(&self) -> FailoverError {
        if let Some(server) = self.server_version {
            FailoverError::Version { server }
        } else if self.any_unreachable {
            FailoverError::Unreachable
        } else {
            FailoverError::NoAnswer
        }
    }

    fn give_up(&mut self, e: FailoverError) -> FailoverError {
        self.current = None;
        *self.gave_up.get_or_insert(e)
    }
}
