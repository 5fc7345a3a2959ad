//! PATH_REPORT: the receiving side of the two-sided channel monitor (seed 000 §III-B) tells the
//! sender what arrived on each path (see [`crate::path::arrivals`]). A report rides in front of
//! the path's ACK: every [`REPORT_INTERVAL`] while packets arrive, and at once with the ACK that
//! follows a gap, so that the sender holds seed 001's inter-arrival verdict when that ACK makes
//! it declare the loss.

use super::builder::Builder;
use super::Session;
use crate::path::judge::LossJudge;
use crate::path::peer_report::ReportCounters;
use crate::path::Path;
use crate::time::Timestamp;
use crate::wire::frame::encode;

pub use crate::timing::REPORT_INTERVAL;
/// Room an ACK frame needs after the report (what `write_ack_of` asks for).
const ACK_ROOM: usize = 32;

impl Session {
    /// True when this side sends PATH_REPORTs.
    fn sends_reports(&self) -> bool {
        self.config.receiver_reports || self.config.loss_judge == LossJudge::Arrival
    }

    /// Writes path `i`'s PATH_REPORT when one is due and there is room for it and the ACK.
    pub(super) fn write_report_of(&mut self, i: usize, now: Timestamp, b: &Builder, buf: &mut Vec<u8>) {
        if !self.sends_reports() || b.room(buf) < encode::PATH_REPORT_MAX_LEN + ACK_ROOM {
            return;
        }
        let p = &mut self.paths[i];
        let due = p.report_verdict || p.report_sent.is_none_or(|t| now >= t + REPORT_INTERVAL);
        if !p.arrivals.any() || !due {
            return;
        }
        let a = &p.arrivals;
        let rate = match p.report_sent {
            Some(t) if now > t => (a.bytes - p.report_bytes) as f64 / (now - t).as_secs_f64(),
            _ => 0.0,
        };
        let c = ReportCounters {
            received: a.received,
            lost: a.lost,
            random: a.random,
            congestion: a.congestion,
            jitter_us: a.jitter.as_micros() as u64,
            rate: rate as u64,
        };
        encode::path_report(buf, p.id, &c);
        p.report_bytes = a.bytes;
        p.report_sent = Some(now);
        p.report_verdict = false;
    }
}

impl Path {
    /// The loss fraction schedulers read: with receiver reports on, the peer's count of what
    /// went missing on the way while its latest report is fresh (the receiver sees every
    /// packet, and a packet the sender declared lost that arrived late is not missing there);
    /// otherwise, or with no fresh report, the sender's own estimate.
    pub fn scheduler_loss(&self, now: Timestamp, reports: bool) -> f64 {
        let reported = if reports { self.peer.fresh_loss(now) } else { None };
        reported.unwrap_or(self.monitor.loss_rate)
    }
}
