//! The client's connect phase in the simulator: the core's handshake failover
//! ([`braid_core::connect::Failover`]) over the links present at the start, one client
//! [`Session`] per attempt, as the daemon's client does. A dead first link is survived here
//! exactly as there, and the time to an established session is measured.

use crate::harness::{configure_path, join_path, ts, SimConfig};
use crate::net::{client_addr, SERVER};
use braid_core::connect::{AttemptEnd, Failover, FailoverError, Step};
use braid_core::{ClientConfig, CloseReason, Seed, Session};
use std::time::Duration;

/// The client's connect phase.
pub(crate) struct Connector {
    failover: Failover,
    /// The links present at the start (the candidates), in link order.
    present: Vec<usize>,
    client: ClientConfig,
    /// The give-up and when it happened.
    gave_up: Option<(FailoverError, Duration)>,
}

impl Connector {
    /// The phase and its first attempt's session (on link 0, which is always present).
    /// (`pending`: links whose paths join later; never link 0).
    pub(crate) fn start(
        cfg: &SimConfig,
        client: ClientConfig,
        now: Duration,
        pending: &[usize],
    ) -> (Self, Session) {
        let present: Vec<usize> = (0..cfg.links.len()).filter(|i| !pending.contains(i)).collect();
        let mut failover = Failover::new(ts(now), present.len(), 0, client.session.handshake_timeout);
        if let Some(d) = cfg.handshake_first_try {
            failover = failover.with_first_try(d);
        }
        let mut c = Connector { failover, present, client, gave_up: None };
        let session = match c.failover.poll(ts(now)) {
            Step::Attempt { link, timeout } => c.attempt(cfg, now, link, timeout, pending),
            // At least link 0 is present: the first poll always starts an attempt.
            Step::Wait | Step::GiveUp(_) => unreachable!("a first attempt over one or more links"),
        };
        (c, session)
    }

    /// The session was established at `now`.
    pub(crate) fn established(&mut self, now: Duration) {
        self.failover.established(ts(now));
    }

    /// The client session ended; before it was established, the next attempt's session
    /// (`pending`: links whose paths have not joined yet), or None when the client gives up.
    pub(crate) fn next(
        &mut self,
        cfg: &SimConfig,
        now: Duration,
        ended: &Session,
        pending: &[usize],
    ) -> Option<Session> {
        if self.failover.established_on().is_some() || self.gave_up.is_some() {
            return None;
        }
        let end = match ended.close_reason() {
            Some(CloseReason::Refused) => AttemptEnd::Refused,
            Some(CloseReason::VersionMismatch { server }) => AttemptEnd::WrongVersion(*server),
            _ => AttemptEnd::NoAnswer,
        };
        self.failover.attempt_failed(ts(now), end);
        match self.failover.poll(ts(now)) {
            Step::Attempt { link, timeout } => Some(self.attempt(cfg, now, link, timeout, pending)),
            Step::Wait => None,
            Step::GiveUp(e) => {
                self.gave_up = Some((e, now));
                None
            }
        }
    }

    /// When the session was established and over which link.
    pub(crate) fn established_on(&self) -> Option<(usize, Duration)> {
        self.failover.established_on().map(|(i, t)| (self.present[i], t.as_duration()))
    }

    /// Handshake attempts made.
    pub(crate) fn attempts(&self) -> u32 {
        self.failover.attempts()
    }

    /// Why and when the client gave up, if it did.
    pub(crate) fn gave_up(&self) -> Option<(FailoverError, Duration)> {
        self.gave_up
    }

    /// A client session whose handshake goes out on candidate `index`, with every other
    /// present link's path added (they wait for the handshake, then validate).
    fn attempt(
        &mut self,
        cfg: &SimConfig,
        now: Duration,
        index: usize,
        timeout: Duration,
        pending: &[usize],
    ) -> Session {
        let link = self.present[index];
        let n = u64::from(self.failover.attempts()) - 1;
        let mut client = self.client.clone();
        client.session.handshake_timeout = timeout;
        // Attempt 0 keeps the seed and stamp the simulator always used (same runs, same bytes).
        let mut session = Session::connect(
            &client,
            ts(now),
            Some(client_addr(link)),
            SERVER,
            Seed::from_u64(cfg.seed ^ 0xc11e47 ^ (n << 40)),
            1 + n,
        );
        configure_path(cfg, &mut session, now, link, 0);
        for i in (0..cfg.links.len()).filter(|i| *i != link && !pending.contains(i)) {
            join_path(cfg, &mut session, now, i);
        }
        session.record_losses(cfg.bulk);
        if cfg.shared_bottleneck {
            session.set_shared_bottleneck(true);
        }
        session
    }
}
