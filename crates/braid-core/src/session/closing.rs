//! Closing a session: CLOSE goes out once on every path that still answers, then the session
//! drains for three PTOs (RFC 9000 §10.2) and ends.

use super::builder::Transmit;
use super::events::{CloseReason, Event};
use super::{Session, State};
use crate::path::PathState;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use std::collections::BTreeSet;

impl Session {
    /// Closes the session: CLOSE is sent on every path, then the session ends.
    pub fn close(&mut self, now: Timestamp, code: u64, reason: &str) {
        match self.state {
            State::Closing { .. } | State::Closed => {}
            State::Handshaking { .. } => self.end(CloseReason::LocalClosed { code }),
            State::Established => {
                self.close_frame = Some((code, reason.to_owned(), BTreeSet::new()));
                let pto = self.paths.iter().map(|p| p.rtt.pto_base(self.config.max_ack_delay)).max();
                self.state = State::Closing { until: now + 3 * pto.unwrap_or(crate::timing::CLOSING_PTO) };
                self.closed_reason = Some(CloseReason::LocalClosed { code });
            }
        }
    }

    /// Ends the session now with `reason`.
    pub(super) fn end(&mut self, reason: CloseReason) {
        if matches!(self.state, State::Closed) {
            return;
        }
        self.state = State::Closed;
        let reason = self.closed_reason.take().unwrap_or(reason);
        self.closed_reason = Some(reason.clone());
        self.events.push_back(Event::Closed(reason));
    }

    /// Closes after a protocol violation: one CLOSE goes out, then the session ends.
    pub(super) fn violation(&mut self, now: Timestamp, what: String) {
        tracing::debug!(session = %self.local_id, %what, "protocol violation");
        self.close(now, 1, "protocol violation");
        self.closed_reason = Some(CloseReason::ProtocolViolation(what));
    }

    pub(super) fn poll_close(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let (code, reason, done) = self.close_frame.as_ref()?;
        let idx = self.paths.iter().position(|p| {
            matches!(p.state, PathState::Active | PathState::Suspect) && !done.contains(&p.id)
        })?;
        let (code, reason) = (*code, reason.clone());
        let id = self.paths[idx].id;
        let mut b = self.start(idx, buf);
        encode::close(buf, code, reason.as_bytes());
        if let Some((_, _, done)) = self.close_frame.as_mut() {
            done.insert(id);
        }
        b.ack_eliciting = false;
        Some(self.seal_and_record(now, b, buf, None))
    }
}
