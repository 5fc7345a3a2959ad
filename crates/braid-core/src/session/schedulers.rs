//! The session's schedulers: one for the session, and one per scheduler kind that some traffic
//! classes use instead (classes with the same kind share one instance, so that it sees all of
//! their packets). Kinds change live (seed 002: the scheduler is swapped without disturbing
//! streams); every instance draws its random choices from a seed of its own.

use crate::scheduler::{ClassView, Kind, PathView, Scheduler};
use crate::time::Timestamp;
use std::collections::BTreeMap;

/// The schedulers in use, and the path-view scratch space they read.
pub(super) struct Schedulers {
    session: Box<dyn Scheduler>,
    /// The kind of `session` (what the policy names).
    kind: Kind,
    /// Schedulers of traffic classes that have their own, one instance per kind.
    classes: Vec<(Kind, Box<dyn Scheduler>)>,
    /// Which classes use which scheduler kind (from the config, changed live).
    class_kinds: BTreeMap<u8, Kind>,
    /// Seed of the schedulers' random choices.
    seed: u64,
    /// The scheduler's path views, rebuilt for every data packet in this one allocation.
    views: Vec<PathView>,
}

impl Schedulers {
    /// The session scheduler of `kind` and the class schedulers of `class_kinds`, seeded from
    /// `seed`.
    pub(super) fn new(kind: Kind, class_kinds: BTreeMap<u8, Kind>, seed: u64) -> Self {
        let mut s = Schedulers {
            session: kind.build_seeded(seed),
            kind,
            classes: Vec::new(),
            class_kinds: BTreeMap::new(),
            seed,
            views: Vec::new(),
        };
        for k in class_kinds.values() {
            s.add_instance(*k);
        }
        s.class_kinds = class_kinds;
        s
    }

    fn add_instance(&mut self, k: Kind) {
        if !self.classes.iter().any(|(have, _)| *have == k) {
            let seed = class_seed(self.seed, self.classes.len());
            self.classes.push((k, k.build_seeded(seed)));
        }
    }

    /// The session scheduler's kind.
    pub(super) fn kind(&self) -> Kind {
        self.kind
    }

    /// Whether the session or some class is scheduled by `kind`.
    pub(super) fn uses(&self, kind: Kind) -> bool {
        self.kind == kind || self.class_kinds.values().any(|k| *k == kind)
    }

    /// The kind that serves `class`.
    pub(super) fn kind_of(&self, class: u8) -> Kind {
        self.class_kinds.get(&class).copied().unwrap_or(self.kind)
    }

    /// The session scheduler's name.
    pub(super) fn name(&self) -> &'static str {
        self.session.name()
    }

    /// Replaces the session scheduler with a new one of `kind`.
    pub(super) fn set(&mut self, kind: Kind) {
        self.session = kind.build_seeded(self.seed);
        self.kind = kind;
    }

    /// Replaces the session scheduler with a custom one.
    pub(super) fn set_boxed(&mut self, scheduler: Box<dyn Scheduler>) {
        self.session = scheduler;
    }

    /// Gives `class` its own scheduler kind (None: the session's again); instances no class
    /// uses any more go.
    pub(super) fn set_class(&mut self, class: u8, kind: Option<Kind>) {
        match kind {
            Some(k) => {
                self.class_kinds.insert(class, k);
                self.add_instance(k);
            }
            None => {
                self.class_kinds.remove(&class);
            }
        }
        let kinds = &self.class_kinds;
        self.classes.retain(|(k, _)| kinds.values().any(|used| used == k));
    }

    /// The scheduler for `class`.
    pub(super) fn for_class(&mut self, class: u8) -> &mut dyn Scheduler {
        let i =
            self.class_kinds.get(&class).and_then(|k| self.classes.iter().position(|(have, _)| have == k));
        match i {
            Some(i) => self.classes[i].1.as_mut(),
            None => self.session.as_mut(),
        }
    }

    /// Tells every scheduler the traffic classes' measured rates.
    pub(super) fn on_classes(&mut self, now: Timestamp, classes: &[ClassView]) {
        self.session.on_classes(now, classes);
        for (_, s) in &mut self.classes {
            s.on_classes(now, classes);
        }
    }

    /// Lends out the path-view scratch space (give it back with [`Schedulers::put_views`]).
    pub(super) fn take_views(&mut self) -> Vec<PathView> {
        std::mem::take(&mut self.views)
    }

    /// Takes the path-view scratch space back, keeping its allocation.
    pub(super) fn put_views(&mut self, views: Vec<PathView>) {
        self.views = views;
    }
}

/// The seed of the `n`th class scheduler: distinct from the session scheduler's (`n` + 1 is
/// never 0) and from the other classes'.
fn class_seed(scheduler_seed: u64, n: usize) -> u64 {
    scheduler_seed ^ (n as u64 + 1)
}
