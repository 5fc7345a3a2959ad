//! Timers, in one table. Every timer of the session, and what happens when it fires:
//!
//! | timer | armed when | on expiry |
//! | --- | --- | --- |
//! | `Handshake` | client sent message 1 | resend (after 0.5 s, 1 s, then every 2 s) |
//! | `HandshakeTimeout` | client started | session ends: `HandshakeTimeout` |
//! | `Idle` | any authenticated packet | session ends: `IdleTimeout` |
//! | `Closing` | `close` called | session ends |
//! | `Pacing` | data waits for a pacer | data sent |
//! | `Loss(path)` | packets outstanding | losses declared, or a probe is owed |
//! | `Silence(path)` | ack-eliciting data outstanding | path suspect, data moved |
//! | `Ack(path)` | ack-eliciting packet received | ACK sent |
//! | `Keepalive(path)` | path idle | PING sent |
//! | `ValidationResend(path)` | challenge sent, path may send | challenge resent |
//! | `ValidationDeadline(path)` | validation started | path fails (or a migration is dropped) |
//! | `Stall` | a stream's head holds it back (`stall`) | the head is sent again |
//!
//! `poll_timeout` is the minimum of the table; `handle_timeout` acts on every expired entry.

use super::{CloseReason, Session, State};
use crate::path::{PathId, PathState};
use crate::time::Timestamp;
use crate::timing::VALIDATION_TIMEOUT;
use crate::wire::MIN_PROBE_BUDGET;

/// A named timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// Resend handshake message 1.
    Handshake,
    /// Give up the handshake.
    HandshakeTimeout,
    /// No packet for the idle timeout.
    Idle,
    /// Closing period over.
    Closing,
    /// A pacer releases waiting data.
    Pacing,
    /// Loss detection or probe timeout.
    Loss(PathId),
    /// Path silence.
    Silence(PathId),
    /// Delayed ACK.
    Ack(PathId),
    /// Keepalive PING.
    Keepalive(PathId),
    /// Resend PATH_CHALLENGE.
    ValidationResend(PathId),
    /// Validation deadline.
    ValidationDeadline(PathId),
    /// A stalled stream head is due to be sent again.
    Stall,
}

impl Session {
    /// Calls `f` for every armed timer.
    pub(super) fn for_each_timer(&self, mut f: impl FnMut(Timer, Timestamp)) {
        match &self.state {
            State::Closed => {}
            State::Handshaking { started, next_send, .. } => {
                f(Timer::Handshake, *next_send);
                f(Timer::HandshakeTimeout, *started + self.config.handshake_timeout);
            }
            State::Closing { until } => f(Timer::Closing, *until),
            State::Established => {
                let mad = self.config.max_ack_delay;
                let server = self.side == super::Side::Server;
                f(Timer::Idle, self.last_activity + self.config.idle_timeout);
                if let Some(t) = self.next_send {
                    f(Timer::Pacing, t);
                }
                if let Some(t) = self.stall_deadline() {
                    f(Timer::Stall, t);
                }
                for (idx, p) in self.paths.iter().enumerate() {
                    let id = p.id;
                    if let Some(t) = p.loss_timer(mad) {
                        f(Timer::Loss(id), t);
                    }
                    if let Some(t) = p.received.ack_deadline() {
                        f(Timer::Ack(id), t);
                    }
                    if let Some(t) = p.silence_deadline() {
                        f(Timer::Silence(id), t);
                    }
                    if p.state == PathState::Active {
                        let last = p.last_eliciting_sent.unwrap_or(p.created);
                        f(Timer::Keepalive(id), last + self.config.keepalive_interval);
                    }
                    if let Some(c) = p.challenge {
                        f(Timer::ValidationDeadline(id), c.started + VALIDATION_TIMEOUT);
                        if c.sent.is_none() && p.stats.validation_failures > 0 {
                            // A client path's next validation round.
                            f(Timer::ValidationResend(id), c.started);
                        }
                        if let Some(sent) = c.sent {
                            if p.challenge_budget(server) >= MIN_PROBE_BUDGET {
                                f(Timer::ValidationResend(id), sent + self.challenge_timeout(idx, c.tries));
                            }
                        }
                    }
                }
            }
        }
    }

    /// When `handle_timeout` must next be called (None: no timer armed).
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        let mut min = None;
        self.for_each_timer(|_, t| min = Some(min.map_or(t, |m: Timestamp| m.min(t))));
        min
    }

    /// The armed timers, for diagnostics.
    pub(super) fn timer_table(&self) -> Vec<(String, Timestamp)> {
        let mut v = Vec::new();
        self.for_each_timer(|timer, t| v.push((format!("{timer:?}"), t)));
        v
    }

    /// Acts on every timer that has expired at `now`.
    pub fn handle_timeout(&mut self, now: Timestamp) {
        match &self.state {
            State::Closed => {}
            State::Handshaking { started, .. } => {
                if now >= *started + self.config.handshake_timeout {
                    self.end(CloseReason::HandshakeTimeout);
                }
            }
            State::Closing { until } => {
                if now >= *until {
                    self.end(CloseReason::LocalClosed { code: 0 });
                }
            }
            State::Established => self.handle_established_timeout(now),
        }
    }

    fn handle_established_timeout(&mut self, now: Timestamp) {
        if now >= self.last_activity + self.config.idle_timeout {
            return self.end(CloseReason::IdleTimeout);
        }
        if self.next_send.is_some_and(|t| t <= now) {
            self.next_send = None;
        }
        self.reinject_stalled(now);
        let mad = self.config.max_ack_delay;
        let mut idx = 0;
        while idx < self.paths.len() {
            if self.paths[idx].loss_timer(mad).is_some_and(|t| t <= now) {
                let mut lost = std::mem::take(&mut self.lost_scratch);
                self.paths[idx].on_loss_timeout(now, mad, &mut lost);
                for p in lost.drain(..) {
                    self.on_packet_lost(now, idx, &p);
                }
                self.lost_scratch = lost;
            }
            if self.paths[idx].silence_deadline().is_some_and(|t| t <= now) {
                self.mark_suspect(now, idx);
            }
            if let Some(c) = self.paths[idx].challenge {
                if now >= c.started + VALIDATION_TIMEOUT {
                    let before = self.paths.len();
                    self.fail_validation(now, idx);
                    if self.paths.len() < before {
                        continue;
                    }
                }
            }
            idx += 1;
        }
    }
}
