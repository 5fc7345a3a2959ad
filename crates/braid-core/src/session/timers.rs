//! Timers. Every timer of the session, and what happens when it fires:
//!
//! | timer | armed when | on expiry |
//! | --- | --- | --- |
//! | handshake resend | client sent message 1 | resend (backoff 0.5 s, 1 s, 2 s, 4 s …) |
//! | handshake timeout | client started | session ends: `HandshakeTimeout` |
//! | idle | any authenticated packet | session ends: `IdleTimeout` |
//! | loss / PTO (per path) | packets outstanding | losses declared, or a probe is owed |
//! | silence (per path) | ack-eliciting data outstanding | path suspect, data moved |
//! | delayed ACK (per path) | ack-eliciting packet received | ACK sent |
//! | keepalive (per path) | path idle | PING sent |
//! | validation (per path) | challenge sent | resend; after 4 tries the path fails |
//! | pacing | data waits for a pacer | data sent |
//! | closing | `close` called | session ends |
//!
//! `poll_timeout` is the earliest of them; `handle_timeout` acts on every expired one.

use super::{CloseReason, Session, State};
use crate::path::PathState;
use crate::time::{earliest, Timestamp};
use std::time::Duration;

/// Validation attempts before a path is given up.
const MAX_CHALLENGE_TRIES: u32 = 4;

/// Delay before the `tries`-th resend of handshake message 1.
pub(super) fn handshake_backoff(tries: u32) -> Duration {
    Duration::from_millis(500) * (1 << tries.saturating_sub(1).min(3))
}

impl Session {
    /// When `handle_timeout` must next be called (None: no timer armed).
    pub fn poll_timeout(&self) -> Option<Timestamp> {
        match &self.state {
            State::Closed => None,
            State::Handshaking {
                started, next_send, ..
            } => Some((*next_send).min(*started + self.config.handshake_timeout)),
            State::Closing { until } => Some(*until),
            State::Established => {
                let mad = self.config.max_ack_delay;
                let mut t = Some(self.last_activity + self.config.idle_timeout);
                for (idx, p) in self.paths.iter().enumerate() {
                    t = earliest(t, p.loss_timer(mad));
                    t = earliest(t, p.received.ack_deadline());
                    t = earliest(t, p.silence_deadline());
                    if p.state == PathState::Active {
                        let last = p.last_eliciting_sent.unwrap_or(p.created);
                        t = earliest(t, Some(last + self.config.keepalive_interval));
                    }
                    if let Some(c) = p.challenge {
                        if let Some(sent) = c.sent {
                            t = earliest(t, Some(sent + self.challenge_timeout(idx, c.tries)));
                        }
                    }
                }
                earliest(t, self.next_send)
            }
        }
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
        let mad = self.config.max_ack_delay;
        let mut idx = 0;
        while idx < self.paths.len() {
            if self.paths[idx].loss_timer(mad).is_some_and(|t| t <= now) {
                let mut lost = std::mem::take(&mut self.lost_scratch);
                self.paths[idx].on_loss_timeout(now, mad, &mut lost);
                for p in lost.drain(..) {
                    self.on_packet_lost(&p);
                }
                self.lost_scratch = lost;
            }
            if self.paths[idx].silence_deadline().is_some_and(|t| t <= now) {
                self.mark_suspect(now, idx);
            }
            if let Some(c) = self.paths[idx].challenge {
                let expired = c
                    .sent
                    .is_some_and(|s| now >= s + self.challenge_timeout(idx, c.tries));
                if expired && c.tries >= MAX_CHALLENGE_TRIES {
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
