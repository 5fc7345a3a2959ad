//! Paths joining and leaving: the client adds paths (validated by challenge/response before
//! they carry data), paths go silent and come back (blackout freeze, seed 003), paths are
//! removed when their interface disappears.

use super::{Event, PathEvent, Session, Side};
use crate::cc::LossEvent;
use crate::path::{Challenge, Path, PathId, PathState};
use crate::time::Timestamp;
use crate::timing::{VALIDATION_RETRY_FIRST, VALIDATION_RETRY_MAX};
use crate::wire::PathStatusKind;
use std::net::SocketAddr;

/// Why a path could not be added.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    /// Only the client opens paths.
    #[error("only the client opens paths")]
    NotClient,
    /// The session has as many paths as it may.
    #[error("path limit reached")]
    Limit,
    /// No such path.
    #[error("unknown path")]
    Unknown,
}

impl Session {
    /// Client: opens a path from `local` (None: the driver's default socket) to `remote`.
    /// It is validated before it carries data; [`Event::Path`] reports the outcome.
    pub fn add_path(
        &mut self,
        now: Timestamp,
        local: Option<SocketAddr>,
        remote: SocketAddr,
    ) -> Result<PathId, PathError> {
        if self.side != Side::Client {
            return Err(PathError::NotClient);
        }
        if self.paths.len() >= self.config.max_paths {
            return Err(PathError::Limit);
        }
        // Ids are handed out in turn (1..=255), skipping those in use, so a fresh path rarely
        // reuses a recent id.
        let id = (0..255u16)
            .map(|i| ((self.next_path_id - 1 + i) % 255 + 1) as PathId)
            .find(|id| self.path(*id).is_none())
            .ok_or(PathError::Limit)?;
        self.next_path_id = u16::from(id) % 255 + 1;
        let token = self.random_token();
        let mut path = self.new_path(id, local, remote, now);
        path.challenge = Some(Challenge::new(token, remote, now, 0));
        self.paths.push(path);
        tracing::debug!(session = %self.local_id, path = id, ?local, %remote, "adding path");
        Ok(id)
    }

    /// Closes a path (its interface went away): what it had in flight moves to the other
    /// paths, and the peer is told with PATH_ABANDON.
    pub fn remove_path(&mut self, now: Timestamp, id: PathId) -> Result<(), PathError> {
        if self.path(id).is_none() {
            return Err(PathError::Unknown);
        }
        self.retire_path(now, id, true);
        Ok(())
    }

    /// The local interface under path `id` sends datagrams of up to `bytes` of UDP payload
    /// (RFC 8899's MAX_PLPMTU: the interface MTU less the IP and UDP headers): the path
    /// searches up to it, within [`crate::SessionConfig::mtu_ceiling`] (`path::mtu`).
    pub fn set_path_mtu_ceiling(&mut self, id: PathId, bytes: usize) -> Result<(), PathError> {
        let most = self.config.mtu_ceiling;
        self.path_mut(id).ok_or(PathError::Unknown)?.raise_mtu_ceiling(bytes, most);
        Ok(())
    }

    /// Sets how we want a path used (active, standby, backup) and tells the peer.
    pub fn set_path_status(&mut self, id: PathId, status: PathStatusKind) -> Result<(), PathError> {
        let p = self.path_mut(id).ok_or(PathError::Unknown)?;
        if p.local_status != status {
            p.local_status = status;
            p.status_seq += 1;
            self.path_control.status.insert(id);
        }
        Ok(())
    }

    /// A validating path `id`. An id used before resumes its packet numbers and replay window
    /// (see `RetiredPath`).
    pub(super) fn new_path(
        &mut self,
        id: PathId,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        now: Timestamp,
    ) -> Path {
        let mut path =
            Path::new(id, local, remote, PathState::Validating, self.config.congestion, self.mtu(), now);
        path.monitor.discriminate_loss = self.config.loss_discrimination;
        path.loss_judge = self.config.loss_judge;
        if let Some(r) = self.retired.remove(&id) {
            path.next_pn = r.next_pn;
            path.received.resume(r.replay);
        }
        path
    }

    pub(super) fn retire_path(&mut self, _now: Timestamp, id: PathId, tell_peer: bool) {
        let Some(idx) = self.paths.iter().position(|p| p.id == id) else {
            return;
        };
        if self.side == Side::Client && id == 0 && !self.is_established() {
            return;
        }
        let mut path = self.paths.remove(idx);
        self.retired
            .insert(id, super::RetiredPath { next_pn: path.next_pn, replay: path.received.replay().clone() });
        let frames = path.strand();
        self.requeue_frames(&frames);
        self.unpin_path(id);
        if tell_peer && self.is_established() {
            self.path_control.abandon.insert(id, 0);
        }
        self.path_control.status.remove(&id);
        tracing::debug!(session = %self.local_id, path = id, "path closed");
        self.events.push_back(Event::Path(id, PathEvent::Closed));
    }

    /// The path went silent: suspect it, move its in-flight data to the other paths at once,
    /// and freeze its congestion state (or collapse it, when blackout freeze is off).
    pub(super) fn mark_suspect(&mut self, now: Timestamp, idx: usize) {
        let freeze = self.config.blackout_freeze;
        let path = &mut self.paths[idx];
        path.state = PathState::Suspect;
        path.stats.blackouts += 1;
        if freeze {
            path.frozen_cc = Some(path.cc.clone_box());
        } else {
            // Without freeze the path behaves like TCP after a retransmission timeout.
            let ev = LossEvent {
                now,
                lost_bytes: path.in_flight,
                largest_sent_time: now,
                persistent: true,
                random: false,
                queued: false,
            };
            path.cc.on_congestion(&ev, &path.rtt);
        }
        let frames = path.strand();
        path.probes_due = 1;
        path.monitor.pair = None;
        path.monitor.pair_due = 0;
        let id = path.id;
        tracing::debug!(session = %self.local_id, path = id, "path suspect");
        self.requeue_frames(&frames);
        self.unpin_path(id);
        self.events.push_back(Event::Path(id, PathEvent::Suspect));
    }

    /// The path's rate collapsed under what it has outstanding (its capacity just became
    /// capped, [`crate::path::Path::on_forward_sample`]): while another path is usable with
    /// the Active status (a standby or backup path takes nothing while this one is active, so
    /// the frames would come back to it), its outstanding frames go to the other paths at
    /// once, as when a path goes silent. The
    /// path stays active; its packets still count until acknowledged or lost, and a late copy
    /// is a duplicate the receiver drops.
    ///
    /// Why: what was queued when the rate fell drains at the new rate. 20 Mbit/s falling to
    /// 50 kbit/s with 357 kB in flight is a minute, and the receiver held everything behind
    /// each of those packets until `session/stall.rs` resent it, one hole at a time (`braid
    /// sim --scheduler edpf --duration 30s --seed 1 --link 100mbit/20ms --link
    /// 20mbit/50ms/capacity=20mbit@0s,50kbit@10s`: a largest hold of 5,927 packets).
    pub(super) fn strand_collapsed(&mut self, idx: usize) {
        let id = self.paths[idx].id;
        if !self.paths.iter().any(|p| p.id != id && p.is_usable() && p.status() == PathStatusKind::Active) {
            return;
        }
        let frames = self.paths[idx].strand();
        tracing::debug!(session = %self.local_id, path = id, frames = frames.len(), "path capacity collapsed");
        self.requeue_frames(&frames);
    }

    /// A suspect path answered: it carries data again with its congestion state as it was.
    pub(super) fn recover_path(&mut self, now: Timestamp, idx: usize) {
        let path = &mut self.paths[idx];
        path.state = PathState::Active;
        path.pto_count = 0;
        path.probes_due = 0;
        if let Some(cc) = path.frozen_cc.take() {
            path.cc = cc;
        }
        path.update_pacing(now);
        let id = path.id;
        tracing::debug!(session = %self.local_id, path = id, "path recovered");
        self.events.push_back(Event::Path(id, PathEvent::Recovered));
    }

    /// Validation of a path ran out of tries. A server forgets the path (the client opens it
    /// again if it wants it). A client keeps its path and tries again in rounds of one
    /// challenge, 1 s after the failure and doubling to [`VALIDATION_RETRY_MAX`] apart: a link
    /// that is up but cannot reach the server yet (a modem attaching, coverage regained,
    /// seed 003 Fig. 8's 3G joining mid-walk) joins when it can, at a cost of one 1200-byte
    /// packet per round (about 1.5 MB a day on a link that never answers). The first failure
    /// is reported as [`PathEvent::Failed`]; the path leaves when the application removes it.
    pub(super) fn fail_validation(&mut self, now: Timestamp, idx: usize) {
        let client = self.side == Side::Client;
        let path = &mut self.paths[idx];
        if path.state != PathState::Validating {
            // A migration to a new address failed: keep the old address.
            path.challenge = None;
            return;
        }
        let id = path.id;
        if client {
            path.stats.validation_failures += 1;
            let n = path.stats.validation_failures;
            let wait = (VALIDATION_RETRY_FIRST * (1u32 << (n - 1).min(16) as u32)).min(VALIDATION_RETRY_MAX);
            if let Some(c) = path.challenge.as_mut() {
                c.started = now + wait;
                c.sent = None;
                // One challenge per round: from the 7th try on, the resend interval (64 × at
                // least 200 ms) is longer than the round.
                c.tries = 7;
            }
            tracing::debug!(session = %self.local_id, path = id, retry_in = ?wait, "path validation failed");
            if n == 1 {
                self.events.push_back(Event::Path(id, PathEvent::Failed));
            }
            return;
        }
        self.retire_path(now, id, true);
        // Replace the Closed event by Failed: validation never succeeded.
        if let Some(Event::Path(_, e)) = self.events.back_mut() {
            *e = PathEvent::Failed;
        }
    }
}
