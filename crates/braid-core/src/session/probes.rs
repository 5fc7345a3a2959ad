//! Path control packets, each on its own path: PATH_RESPONSE and PATH_CHALLENGE (padded to
//! 1200 bytes, RFC 9000 §8.2), probes after a PTO (RFC 9002 §6.2.4), packet-pair probes (seed
//! 001 §4.1) and path MTU probes (see `path::mtu`).

use super::builder::Transmit;
use super::Session;
use crate::path::PathState;
use crate::time::Timestamp;
use crate::wire::frame::encode;
use crate::wire::{MIN_DATAGRAM, MIN_PROBE_BUDGET, TAG_LEN};
use std::time::Duration;

impl Session {
    /// PATH_RESPONSE / PATH_CHALLENGE / PTO probes, each on its own path.
    pub(super) fn poll_path_control(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        for idx in 0..self.paths.len() {
            let p = &self.paths[idx];
            let server = self.side == super::Side::Server;
            let budget = p.amplification_budget(server);
            if budget < MIN_PROBE_BUDGET {
                continue;
            }
            let challenge_budget = p.challenge_budget(server);
            let challenge_due = challenge_budget >= MIN_PROBE_BUDGET
                && p.challenge.is_some_and(|c| {
                    now >= c.started && c.sent.is_none_or(|s| now >= s + self.challenge_timeout(idx, c.tries))
                });
            if !p.responses.is_empty() || challenge_due {
                let budget = if challenge_due { challenge_budget } else { budget };
                return Some(self.send_validation(now, idx, buf, challenge_due, budget));
            }
            if p.probes_due > 0 && matches!(p.state, PathState::Active | PathState::Suspect) {
                self.paths[idx].probes_due -= 1;
                let mut b = self.start(idx, buf);
                self.write_acks(now, &mut b, buf, true);
                encode::ping(buf);
                b.ack_eliciting = true;
                return Some(self.seal_and_record(now, b, buf, None));
            }
            if p.monitor.pair_due > 0 && p.state == PathState::Active {
                // Packet pair (seed 001 §4.1): two full-size probes back to back, past the pacer.
                let mut b = self.start(idx, buf);
                encode::ping(buf);
                let target = b.limit.min(budget.saturating_sub(TAG_LEN));
                if buf.len() < target {
                    encode::padding(buf, target - buf.len());
                }
                b.ack_eliciting = true;
                let pn = b.pn;
                let t = Transmit { alone: true, ..self.seal_and_record(now, b, buf, None) };
                self.paths[idx].monitor.on_pair_sent(now, pn, t.size as u64);
                return Some(t);
            }
            let active = p.state == PathState::Active;
            if let Some(size) = self.paths[idx].pmtu.probe_due(now).filter(|s| *s <= budget && active) {
                // Path MTU search (see `path::mtu`): a PING padded to the size under test.
                let mut b = self.start(idx, buf);
                b.limit = size - TAG_LEN;
                b.mtu_probe = true;
                encode::ping(buf);
                encode::padding(buf, b.limit - buf.len());
                b.ack_eliciting = true;
                self.paths[idx].pmtu.on_probe_sent();
                return Some(self.seal_and_record(now, b, buf, None));
            }
        }
        None
    }

    fn send_validation(
        &mut self,
        now: Timestamp,
        idx: usize,
        buf: &mut Vec<u8>,
        challenge_due: bool,
        budget: usize,
    ) -> Transmit {
        let mut b = self.start(idx, buf);
        let path = &mut self.paths[idx];
        let mut destination = None;
        for (token, from) in path.responses.drain(..) {
            encode::path_response(buf, token);
            destination = Some(from);
        }
        if challenge_due {
            if let Some(c) = path.challenge.as_mut() {
                // A response goes where its challenge came from; a challenge to the address
                // under validation. Both usually coincide.
                if destination.is_none_or(|d| d == c.remote) {
                    encode::path_challenge(buf, c.token);
                    c.sent = Some(now);
                    c.tries += 1;
                    destination = Some(c.remote);
                }
            }
        }
        b.ack_eliciting = true;
        // Pad to the minimum datagram size: the path must carry full-size packets.
        let target = (MIN_DATAGRAM - TAG_LEN).min(budget.saturating_sub(TAG_LEN)).min(b.limit);
        if buf.len() < target {
            encode::padding(buf, target - buf.len());
        }
        let t = self.seal_and_record(now, b, buf, destination);
        if let Some(c) = self.paths[idx].challenge.as_mut().filter(|c| c.remote == t.destination) {
            c.bytes_out += t.size as u64;
        }
        t
    }

    pub(super) fn challenge_timeout(&self, idx: usize, tries: u32) -> Duration {
        let base =
            self.paths[idx].rtt.pto_base(self.config.max_ack_delay).max(crate::timing::CHALLENGE_RESEND_MIN);
        base * (1 << tries.saturating_sub(1).min(6))
    }
}
