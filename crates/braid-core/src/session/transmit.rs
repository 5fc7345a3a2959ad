//! Datagrams out. `poll_transmit` decides, in a fixed order, what the next packet is:
//!
//! 1. the handshake (client: message 1 and its retransmissions; server: the answer);
//! 2. path control: PATH_RESPONSE, PATH_CHALLENGE (padded to 1200 bytes), probes after a PTO,
//!    packet-pair probes (two back-to-back PING + PADDING packets, see `monitor`);
//! 3. per-path queues: datagrams a scheduler committed to a path, redundant copies;
//! 4. acknowledgements that are due, on the path chosen by the ACK policy;
//! 5. data — control frames, retransmissions, stream bytes, datagrams by class priority — on
//!    the path the scheduler of the content's traffic class picks;
//! 6. keepalive PINGs on idle paths.

use super::builder::{Builder, Transmit};
use super::{Session, State};
use crate::path::PathState;
use crate::time::Timestamp;
use crate::wire::frame::encode;

impl Session {
    /// The next datagram to send, written to `buf`; None when nothing is to be sent now
    /// (`poll_timeout` says when to ask again).
    pub fn poll_transmit(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        buf.clear();
        match &mut self.state {
            State::Closed => return None,
            State::Handshaking { initiator, next_send, tries, .. } => {
                if now < *next_send {
                    return None;
                }
                *tries += 1;
                *next_send = now + super::timing::handshake_backoff(*tries);
                buf.extend_from_slice(&initiator.init_packet);
                return Some(Transmit::on(&self.paths[0], buf.len()));
            }
            State::Closing { .. } => return self.poll_close(now, buf),
            State::Established => {}
        }
        if self.handshake_resp_due {
            self.handshake_resp_due = false;
            if let (Some(resp), Some(p)) = (&self.handshake_resp, self.path(0)) {
                buf.extend_from_slice(resp);
                return Some(Transmit::on(p, buf.len()));
            }
        }
        self.housekeeping(now);
        self.poll_path_control(now, buf)
            .or_else(|| self.poll_pinned(now, buf))
            .or_else(|| self.poll_acks(now, buf))
            .or_else(|| self.poll_data(now, buf))
            .or_else(|| self.poll_keepalive(now, buf))
    }

    /// Starts a packet on path `idx` (see [`Builder::start`]).
    pub(super) fn start(&mut self, idx: usize, buf: &mut Vec<u8>) -> Builder {
        Builder::start(idx, &mut self.paths[idx], self.remote_id, buf)
    }

    /// Seals `b` and records it on its path (see [`Builder::seal_and_record`]).
    pub(super) fn seal_and_record(
        &mut self,
        now: Timestamp,
        b: Builder,
        buf: &mut Vec<u8>,
        destination: Option<std::net::SocketAddr>,
    ) -> Transmit {
        let grace = self.key_grace();
        let keys = self.keys.as_mut().expect("established sessions have keys");
        self.stats.packets_sent += 1;
        let path = &mut self.paths[b.idx];
        b.seal_and_record(now, keys, grace, path, buf, destination)
    }

    fn poll_keepalive(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        let interval = self.config.keepalive_interval;
        let idx = self.paths.iter().position(|p| {
            p.state == PathState::Active && p.last_eliciting_sent.is_none_or(|t| now - t >= interval)
        })?;
        let mut b = self.start(idx, buf);
        self.write_acks(now, &mut b, buf, true);
        encode::ping(buf);
        b.ack_eliciting = true;
        Some(self.seal_and_record(now, b, buf, None))
    }
}
