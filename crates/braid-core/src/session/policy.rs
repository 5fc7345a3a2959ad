//! The client's policy in the session (see `crate::policy`): the client sends it whenever it
//! changes (and again if the POLICY frame is lost); the server applies it, so that downloads
//! run the scheduler, classes and path limits the client chose. Also where secondary-tier
//! paths are engaged.

use super::{Session, Side};
use crate::config::TrafficClass;
use crate::path::{Path, PathId};
use crate::policy::{PathLimits, Policy};
use crate::scheduler::Kind;
use crate::time::Timestamp;
use crate::timing::{SECONDARY_HOLD, SECONDARY_SATURATION};
use crate::wire::PathStatusKind;
use std::sync::Arc;

/// Where the session's policy stands.
#[derive(Debug, Default)]
pub(super) struct PolicyState {
    /// Client: sequence number of the current policy.
    seq: u64,
    /// Client: the POLICY frame is owed.
    pub(super) due: bool,
    /// Server: sequence number of the policy in force.
    peer_seq: Option<u64>,
    /// Server: the policy in force (path limits of paths that join later come from here).
    peer: Option<Policy>,
    /// Until when secondary paths carry data.
    secondary_until: Option<Timestamp>,
}

impl PolicyState {
    /// A client owes its first policy as soon as the session is up.
    pub(super) fn new(side: Side) -> Self {
        PolicyState { due: side == Side::Client, ..PolicyState::default() }
    }

    pub(super) fn seq(&self) -> u64 {
        self.seq
    }
}

impl Session {
    /// The policy in force: the session's scheduler, classes, admission and path limits.
    pub fn policy(&self) -> Policy {
        Policy {
            scheduler: self.schedulers.kind(),
            admission: self.config.path_admission,
            classes: self.config.classes.clone(),
            paths: self
                .paths
                .iter()
                .filter(|p| p.weight.is_some() || p.max_rate.is_some())
                .map(|p| (p.id, PathLimits { weight: p.weight, max_rate: p.max_rate }))
                .collect(),
        }
    }

    /// Server: the scheduler the client asked for (None before its policy arrived).
    pub fn peer_scheduler(&self) -> Option<Kind> {
        self.policy.peer.as_ref().map(|p| p.scheduler)
    }

    /// Client: the policy changed; the server is told.
    pub(super) fn policy_changed(&mut self) {
        if self.side == Side::Client {
            self.policy.seq += 1;
            self.policy.due = true;
        }
    }

    /// Sets traffic class `class` (priority, deadline, scheduler, rates), live; on a client
    /// the server applies it to downloads too.
    pub fn set_class(&mut self, class: u8, settings: TrafficClass) {
        let kind = settings.scheduler;
        Arc::make_mut(&mut self.config).classes.insert(class, settings);
        self.set_class_scheduler(class, kind);
        self.policy_changed();
    }

    /// Caps what path `id` carries each way, bytes/s (None: no cap); on a client the server
    /// caps its side too.
    pub fn set_path_max_rate(
        &mut self,
        now: Timestamp,
        id: PathId,
        max_rate: Option<u64>,
    ) -> Result<(), super::PathError> {
        let p = self.path_mut(id).ok_or(super::PathError::Unknown)?;
        p.max_rate = max_rate;
        p.update_pacing(now);
        self.policy_changed();
        Ok(())
    }

    /// Path admission on or off (seed 000's bound, seed 002's rules), live.
    pub fn set_path_admission(&mut self, on: bool) {
        if self.config.path_admission != on {
            Arc::make_mut(&mut self.config).path_admission = on;
            if !on {
                for p in &mut self.paths {
                    p.admitted = true;
                }
            }
            self.policy_changed();
        }
    }

    /// Server: a POLICY frame arrived.
    pub(super) fn on_policy(&mut self, now: Timestamp, seq: u64, body: &[u8]) -> Result<(), String> {
        if self.side == Side::Client {
            return Err("POLICY from the server".into());
        }
        if self.policy.peer_seq.is_some_and(|s| seq <= s) {
            return Ok(()); // an older copy
        }
        let p = Policy::decode(body).map_err(|e| format!("POLICY: {e}"))?;
        self.policy.peer_seq = Some(seq);
        tracing::debug!(session = %self.local_id, scheduler = %p.scheduler, classes = p.classes.len(), "client policy applied");
        self.apply_policy(now, &p);
        self.policy.peer = Some(p);
        Ok(())
    }

    fn apply_policy(&mut self, now: Timestamp, p: &Policy) {
        if self.schedulers.kind() != p.scheduler {
            self.set_scheduler(p.scheduler);
        }
        let old: Vec<u8> =
            self.config.classes.keys().copied().filter(|c| !p.classes.contains_key(c)).collect();
        for c in old {
            Arc::make_mut(&mut self.config).classes.remove(&c);
            self.set_class_scheduler(c, None);
        }
        for (c, settings) in &p.classes {
            if self.config.classes.get(c) != Some(settings) {
                Arc::make_mut(&mut self.config).classes.insert(*c, settings.clone());
                self.set_class_scheduler(*c, settings.scheduler);
            }
        }
        self.set_path_admission(p.admission);
        for path in &mut self.paths {
            apply_limits(now, path, p.paths.get(&path.id));
        }
    }

    /// Server: path limits the client asked for a path that joins now.
    pub(super) fn limits_for_new_path(&self, now: Timestamp, path: &mut Path) {
        if let Some(p) = &self.policy.peer {
            apply_limits(now, path, p.paths.get(&path.id));
        }
    }

    /// Engages secondary paths while the active ones are down or short (called with the
    /// housekeeping).
    pub(super) fn update_secondary(&mut self, now: Timestamp) {
        if !self.paths.iter().any(|p| p.status() == PathStatusKind::Secondary) {
            return;
        }
        let active = self.paths.iter().any(|p| p.is_usable() && p.status() == PathStatusKind::Active);
        let rate = self.active_capacity(now);
        let backlog = (self.streams.unsent_total() + self.datagrams.queued_bytes()) as f64;
        let short = !active || backlog / rate.max(1.0) > SECONDARY_SATURATION.as_secs_f64();
        if short {
            self.policy.secondary_until = Some(now + SECONDARY_HOLD);
        }
    }

    /// What the active paths drain together, bytes/s: their capacities as the schedulers use
    /// them (under each path's policy cap).
    pub(super) fn active_capacity(&self, now: Timestamp) -> f64 {
        let active = self.paths.iter().filter(|p| p.is_usable() && p.status() == PathStatusKind::Active);
        active.map(|p| p.usable_capacity(now)).sum()
    }

    /// Whether secondary paths carry data now.
    pub fn secondary_engaged(&self, now: Timestamp) -> bool {
        self.policy.secondary_until.is_some_and(|t| now < t)
    }
}

fn apply_limits(now: Timestamp, path: &mut Path, limits: Option<&PathLimits>) {
    let l = limits.copied().unwrap_or_default();
    path.weight = l.weight;
    if path.max_rate != l.max_rate {
        path.max_rate = l.max_rate;
        path.update_pacing(now);
    }
}
