//! ACK frames out: which paths' ACKs a packet carries (the carrier policy is
//! [`AckCarrier`](super::ack_carrier::AckCarrier)'s), and ACK-only packets when ACKs are due.

use super::ack_carrier::liveness;
use super::builder::{Builder, Transmit};
use super::Session;
use crate::config::AckPath;
use crate::path::sent::SentFrame;
use crate::path::PathState;
use crate::time::Timestamp;
use crate::timing::PAIRS_AFTER_DATA;
use crate::wire::frame::encode;

impl Session {
    pub(super) fn poll_acks(&mut self, now: Timestamp, buf: &mut Vec<u8>) -> Option<Transmit> {
        if self.config.ack_path == AckPath::Secondary {
            self.ack_carrier.drop_replaceable_acks(&mut self.paths, now);
        }
        let due = self.paths.iter().position(|p| p.received.ack_due(now))?;
        let (idx, alone) = self.ack_carrier.carrier(self.config.ack_path, &self.paths, due, now);
        let carries_traffic = self.carries_traffic(now);
        let mut b = self.start(idx, buf);
        if alone {
            self.write_ack_of(due, now, &mut b, buf, true, true);
        } else {
            self.write_acks(now, &mut b, buf, true);
        }
        let path = &self.paths[idx];
        if !alone
            && carries_traffic
            && path.state == PathState::Active
            && path.last_eliciting_sent.is_none_or(|t| now - t >= liveness(path))
        {
            encode::ping(buf);
            b.ack_eliciting = true;
        }
        let t = self.seal_and_record(now, b, buf, None);
        if self.config.ack_path == AckPath::Secondary && !alone {
            self.ack_carrier.on_ack_packet_sent(&self.paths, due, idx, t.size, now);
        }
        Some(t)
    }

    /// True while the session carries traffic: it sent application data, or received more
    /// than PINGs, PADDING and ACKs, within [`PAIRS_AFTER_DATA`]. Only then is an ACK-only
    /// packet made ack-eliciting for its path's liveness. Between two idle ends, the ACK of a
    /// keepalive became a PING, whose ACK became a PING in turn, for ever, once the two delayed
    /// ACKs of a round trip reached `LIVENESS_MIN`: 52.8 packets a second at a 26 ms RTT,
    /// now 6.3 (the keepalives, their ACKs and the carrier's copies; `braid-sim/tests/idle.rs`).
    fn carries_traffic(&self, now: Timestamp) -> bool {
        let lately = |t: Option<Timestamp>| t.is_some_and(|t| now < t + PAIRS_AFTER_DATA);
        lately(self.last_data_sent) || lately(self.last_payload_received)
    }

    /// Appends ACK frames for the paths whose ACKs this packet's path carries (itself, and
    /// those it is the carrier of) that have something worth acknowledging.
    pub(super) fn write_acks(
        &mut self,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        all_pending: bool,
    ) {
        for i in 0..self.paths.len() {
            // A path's ACK rides on itself or on its carrier, never on a third path: every RTT
            // sample of a path then sees one return route, and a slow path does not carry the
            // ranges of a fast one (EDPF's in-flight bound and the monitor read the minimum RTT).
            if !self.paths[i].received.ack_wanted(now, all_pending) {
                continue;
            }
            if i != b.idx
                && self.ack_carrier.offload_carrier(self.config.ack_path, &self.paths, i, now) != Some(b.idx)
            {
                continue;
            }
            if !self.write_ack_of(i, now, b, buf, all_pending, false) {
                return;
            }
        }
    }

    /// Writes path `i`'s ACK when it is due (or, with `all_pending`, owed at all); false when
    /// the packet has no room left. With `copy` the ACK stays due (it goes out again, on its
    /// usual carrier).
    fn write_ack_of(
        &mut self,
        i: usize,
        now: Timestamp,
        b: &mut Builder,
        buf: &mut Vec<u8>,
        all_pending: bool,
        copy: bool,
    ) -> bool {
        let room = b.room(buf);
        if room < 32 {
            return false;
        }
        if !self.paths[i].received.ack_wanted(now, all_pending) {
            return true;
        }
        let id = self.paths[i].id;
        // The ranges go from the receive record straight into the packet (no allocation).
        let Some(largest) = self.paths[i].received.ack_ranges().next().map(|r| r.end - 1) else {
            if !copy {
                self.paths[i].received.on_ack_sent();
            }
            return true;
        };
        let max_ranges = ((room - 24) / 16).max(1);
        // A run of packet-pair probes: an ACK as it stood when each probe arrived, with that
        // probe's own delay (see `Received::on_probe`), then the current one.
        if let Some(run) = (!copy).then(|| self.paths[i].received.take_pair_report()).flatten() {
            for &(pn, at) in run.probes() {
                let room = b.room(buf);
                let older = self.paths[i]
                    .received
                    .ack_ranges()
                    .filter(move |r| r.start <= pn)
                    .map(move |r| r.start..r.end.min(pn + 1));
                if older.clone().next().is_some() && room >= 64 {
                    let max = ((room - 48) / 32).max(1);
                    encode::ack(buf, id, (now - at).as_micros() as u64, None, older.take(max));
                }
            }
        }
        if !copy {
            self.write_report_of(i, now, b, buf);
        }
        let room = b.room(buf);
        let max_ranges = max_ranges.min(((room.saturating_sub(24)) / 16).max(1));
        let received = &mut self.paths[i].received;
        let stamp = received.stamp_due(now).then(|| now.as_micros());
        encode::ack(buf, id, received.ack_delay(now), stamp, received.ack_ranges().take(max_ranges));
        if !copy {
            received.on_ack_sent_at(now, stamp.is_some());
        }
        b.frames.push(SentFrame::Ack { path: id, largest });
        true
    }
}
