//! The session's periodic work for the path monitor and the schedulers, done at most every
//! 100 ms from `poll_transmit` (no timer of its own: it rides on the traffic and keepalives
//! that wake the session anyway):
//!
//! * every stream's send buffer is sized from the paths' congestion windows
//!   (`Streams::size_send_buffer`);
//! * the traffic classes' measured rates go to the schedulers (`Scheduler::on_classes`);
//! * a packet pair is asked for on every path that is not saturated and whose last pair is
//!   old (`Monitor::maybe_request_pair`), and paths left out by admission are pinged up to
//!   five times a second (1 % of their capacity at most), while the session carries data;
//! * every 500 ms path admission runs (`scheduler::admission`) and moves paths between active
//!   and standby, no path more often than every 2 s.

use super::Session;
use crate::path::PathState;
use crate::scheduler::admission::{self, Candidate};
use crate::scheduler::ClassView;
use crate::time::Timestamp;
use crate::timing::{ADMISSION, HOUSEKEEPING, PAIRS_AFTER_DATA, STANDBY_PROBE, STANDBY_PROBE_MAX};
use crate::wire::PathStatusKind;
use std::time::Duration;

/// A path in standby is probed at most every [`STANDBY_PROBE`] while the session carries
/// data, with probes of about this many bytes on the wire.
const PING_BYTES: f64 = 80.0;

impl Session {
    /// What a stream's send buffer should hold: four times the paths' congestion windows (as
    /// Linux sizes a TCP socket's, twice the window, with room for a second path's share), and
    /// at least four times what all paths send in the slowest path's round trip: a byte sent
    /// on the path of the longest RTT stays buffered (unacknowledged in order) while the
    /// others send on, so windows alone undersize the buffer when the RTTs are skewed
    /// (`50mbit/5ms` beside `2mbit/150ms` went from 49.2 to 39.0 Mbit/s in the simulator,
    /// the lab's three links from 57.7 to 47–55; `crates/braid-sim/tests/send_buffer.rs`).
    /// The rate is what each path has carried (`Path::carried_capacity`), not a packet pair
    /// it has not confirmed.
    fn send_buffer_want(&self, now: Timestamp) -> u64 {
        let usable = || self.paths.iter().filter(|p| p.is_usable());
        let windows: u64 = usable().map(|p| p.window()).sum();
        let rate: f64 = usable().map(|p| p.carried_capacity(now)).sum();
        let slowest = usable().map(|p| p.rtt.smoothed()).max().unwrap_or_default();
        let skew = (4.0 * rate * slowest.as_secs_f64()) as u64;
        windows.saturating_mul(4).max(skew)
    }

    /// Runs the periodic work if it is due.
    pub(super) fn housekeeping(&mut self, now: Timestamp) {
        if now < self.next_housekeeping {
            return;
        }
        self.next_housekeeping = now + HOUSEKEEPING;
        self.update_secondary(now);
        self.streams.size_send_buffer(self.send_buffer_want(now));
        self.watch_stalls(now);
        self.size_receive_windows(now);
        let classes = self.class_views(now);
        if !classes.is_empty() {
            self.schedulers.on_classes(now, &classes);
        }
        // Repeated packet pairs only while the session carries data: an idle session (a phone
        // on a metered link) costs its keepalives and nothing more.
        if self.last_data_sent.is_some_and(|t| now < t + PAIRS_AFTER_DATA) {
            for p in self.paths.iter_mut().filter(|p| p.state == PathState::Active) {
                let capacity = p.capacity(now);
                p.monitor.maybe_request_pair(now, &p.capacity_estimate, capacity, p.mtu);
                // A path left out by admission is pinged up to five times a second (at most 1 %
                // of its capacity), so that its loss rate (and re-admission) follows the link.
                let cost = Duration::from_secs_f64(PING_BYTES / (0.01 * capacity.max(1.0)));
                let every = STANDBY_PROBE.max(cost).min(STANDBY_PROBE_MAX);
                if !p.admitted && p.last_eliciting_sent.is_none_or(|t| now >= t + every) {
                    p.probes_due = p.probes_due.max(1);
                }
            }
        }
        if self.config.path_admission && now >= self.next_admission {
            self.next_admission = now + ADMISSION;
            self.run_admission(now);
        }
    }

    /// Every traffic class with its measured rate: datagram classes by what they offered,
    /// stream classes as elastic.
    pub(super) fn class_views(&mut self, now: Timestamp) -> Vec<ClassView> {
        let mut out: Vec<ClassView> = self
            .datagrams
            .class_rates(now)
            .into_iter()
            .map(|(class, rate, peak_rate)| {
                let c = self.config.class(class);
                ClassView { class, priority: c.priority, rate, peak_rate }
            })
            .collect();
        for class in self.streams.sending_classes() {
            if !out.iter().any(|c| c.class == class) {
                let c = self.config.class(class);
                out.push(ClassView {
                    class,
                    priority: c.priority,
                    rate: f64::INFINITY,
                    peak_rate: f64::INFINITY,
                });
            }
        }
        out
    }

    /// What admission judges each active path by. Its capacity S is the one the schedulers
    /// use, under the path's policy cap: a capped path adds no more than its cap.
    pub(super) fn admission_candidates(&self, now: Timestamp) -> Vec<Candidate> {
        self.paths
            .iter()
            .filter(|p| p.is_usable() && p.status() == PathStatusKind::Active)
            .map(|p| Candidate {
                id: p.id,
                rate: p.usable_capacity(now),
                loss: if p.admitted { p.monitor.impairment_loss } else { p.monitor.recent_impairment },
                rtt: p.rtt.smoothed(),
                samples: p.monitor.impairment_outcomes,
                admitted: p.admitted,
            })
            .collect()
    }

    fn run_admission(&mut self, now: Timestamp) {
        let candidates = self.admission_candidates(now);
        if candidates.is_empty() {
            return;
        }
        let keep = admission::admit(&candidates, self.mtu() as f64);
        for c in &candidates {
            let want = keep.contains(&c.id);
            let Some(p) = self.paths.iter_mut().find(|p| p.id == c.id) else { continue };
            if want != p.admitted && now >= p.admission_changed + admission::HOLD {
                tracing::debug!(
                    session = %self.local_id,
                    path = p.id,
                    admitted = want,
                    loss = c.loss,
                    rate = c.rate,
                    "path admission"
                );
                p.admitted = want;
                p.admission_changed = now;
            }
        }
    }
}
