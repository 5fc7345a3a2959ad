//! The send queue: which stream sends next, and the backlog counters the sender asks for on
//! every packet.
//!
//! The order is that of a FIFO of stream ids: a stream joins at the back when it may have
//! something to send and is not queued; each `Streams::next_chunk` first drops every queued
//! stream with nothing to send at the session credit of that moment, then serves the first
//! stream of the best-ranked class and puts it back at the back when more remains (round-robin
//! among equals). Rather than sweeping that FIFO on every packet and removing from its middle,
//! each queued stream keeps the turn number it joined with, on one of three shelves of its
//! class ordered by turn: sendable without session credit, sendable only with it, or with
//! nothing to send (dropped at the next sweep, kept until then so that a stream whose data
//! comes back before the sweep keeps its turn, as in the FIFO). A packet costs
//! O(classes + log streams) and no allocation.

use std::collections::BTreeMap;

/// What the queue and its counters know of one stream, as of its last change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct SendState {
    /// Traffic class.
    pub(super) class: u8,
    /// STREAM_OPEN is owed.
    pub(super) announce: bool,
    /// A STREAM frame could be built with no session credit (`SendStream::has_sendable(0)`).
    pub(super) without_credit: bool,
    /// A STREAM frame could be built with some session credit.
    pub(super) with_credit: bool,
    /// Retransmissions are queued.
    pub(super) retransmit: bool,
    /// Unsent bytes in two parts (`SendStream::unsent_parts`).
    pub(super) gap: u64,
    pub(super) new: u64,
}

impl SendState {
    fn shelf(&self) -> Shelf {
        if self.announce || self.without_credit {
            Shelf::Free
        } else if self.with_credit {
            Shelf::Credit
        } else {
            Shelf::Stale
        }
    }
}

/// Where a queued stream waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shelf {
    /// Sendable whatever the session credit.
    Free,
    /// Sendable while the session credit is not zero.
    Credit,
    /// Nothing to send: leaves at the next sweep.
    Stale,
}

#[derive(Debug, Clone, Copy)]
struct Slot {
    state: SendState,
    /// The turn number while queued.
    turn: Option<u64>,
}

/// The queued streams of one class, by turn (turn → stream id).
#[derive(Debug, Default)]
struct ClassTurns {
    free: BTreeMap<u64, u64>,
    credit: BTreeMap<u64, u64>,
    stale: BTreeMap<u64, u64>,
    /// Queued streams with data (not just an announcement) to send without / with credit.
    without_credit: usize,
    with_credit: usize,
}

impl ClassTurns {
    fn shelf(&mut self, shelf: Shelf) -> &mut BTreeMap<u64, u64> {
        match shelf {
            Shelf::Free => &mut self.free,
            Shelf::Credit => &mut self.credit,
            Shelf::Stale => &mut self.stale,
        }
    }

    fn add(&mut self, turn: u64, id: u64, s: &SendState) {
        self.shelf(s.shelf()).insert(turn, id);
        self.without_credit += usize::from(s.without_credit);
        self.with_credit += usize::from(s.with_credit);
    }

    fn take(&mut self, turn: u64, s: &SendState) {
        self.shelf(s.shelf()).remove(&turn);
        self.without_credit -= usize::from(s.without_credit);
        self.with_credit -= usize::from(s.with_credit);
    }

    /// A queued stream's state changed from `old` to `new` on the same shelf.
    fn recount(&mut self, old: &SendState, new: &SendState) {
        self.without_credit =
            self.without_credit - usize::from(old.without_credit) + usize::from(new.without_credit);
        self.with_credit = self.with_credit - usize::from(old.with_credit) + usize::from(new.with_credit);
    }

    /// The first turn that may send at this credit: (turn, stream id).
    fn front(&self, credit_zero: bool) -> Option<(u64, u64)> {
        let free = self.free.first_key_value();
        let credit = if credit_zero { None } else { self.credit.first_key_value() };
        free.into_iter().chain(credit).min().map(|(t, id)| (*t, *id))
    }

    /// Queued streams with data to send at this credit.
    fn sendable(&self, credit_zero: bool) -> usize {
        if credit_zero {
            self.without_credit
        } else {
            self.with_credit
        }
    }

    fn is_empty(&self) -> bool {
        self.free.is_empty() && self.credit.is_empty() && self.stale.is_empty()
    }
}

/// The send queue and the running backlog counters of every stream.
#[derive(Debug, Default)]
pub(super) struct SendQueue {
    /// Every stream, queued or not.
    slots: BTreeMap<u64, Slot>,
    classes: BTreeMap<u8, ClassTurns>,
    next_turn: u64,
    /// Sums over every stream of `SendState::gap` and `SendState::new`.
    gap_total: u64,
    new_total: u64,
    /// The non-zero `SendState::new` values (value → streams), for the few streams whose new
    /// bytes the session credit caps.
    news: BTreeMap<u64, u32>,
    /// Streams with retransmissions queued.
    retransmitting: usize,
    /// Streams queued (with a turn).
    queued: usize,
}

impl SendQueue {
    /// A new stream, not queued.
    pub(super) fn insert(&mut self, id: u64, state: SendState) {
        self.count(&state, true);
        self.slots.insert(id, Slot { state, turn: None });
    }

    /// Stream `id` changed: its counters follow, and a queued stream moves to the shelf (and
    /// class) of its new state, keeping its turn.
    pub(super) fn update(&mut self, id: u64, state: SendState) {
        let Some(slot) = self.slots.get_mut(&id) else { return };
        let old = std::mem::replace(&mut slot.state, state);
        if old == state {
            return;
        }
        if let Some(turn) = slot.turn {
            match self.classes.get_mut(&old.class) {
                // Same class and shelf (a bulk stream's every packet): only the counts move,
                // not the turn between shelves.
                Some(c) if old.class == state.class && old.shelf() == state.shelf() => {
                    c.recount(&old, &state)
                }
                c => {
                    if let Some(c) = c {
                        c.take(turn, &old);
                    }
                    self.classes.entry(state.class).or_default().add(turn, id, &state);
                }
            }
        }
        // The new state counts before the old leaves: a map holding only the old value is
        // not emptied and refilled (its node freed and allocated again) on every packet.
        self.count(&state, true);
        self.count(&old, false);
    }

    /// A forgotten stream.
    pub(super) fn remove(&mut self, id: u64) {
        self.dequeue(id);
        if let Some(slot) = self.slots.remove(&id) {
            self.count(&slot.state, false);
        }
    }

    /// Puts stream `id` at the back of the queue unless it is queued.
    pub(super) fn enqueue(&mut self, id: u64) {
        let Some(slot) = self.slots.get_mut(&id) else { return };
        if slot.turn.is_none() {
            let turn = self.next_turn;
            self.next_turn += 1;
            slot.turn = Some(turn);
            self.queued += 1;
            self.classes.entry(slot.state.class).or_default().add(turn, id, &slot.state);
        }
    }

    /// Enqueues every stream, in id order.
    pub(super) fn enqueue_all(&mut self) {
        for (id, slot) in &mut self.slots {
            if slot.turn.is_none() {
                let turn = self.next_turn;
                self.next_turn += 1;
                slot.turn = Some(turn);
                self.queued += 1;
                self.classes.entry(slot.state.class).or_default().add(turn, *id, &slot.state);
            }
        }
    }

    /// Takes stream `id` out of the queue.
    pub(super) fn dequeue(&mut self, id: u64) {
        let Some(slot) = self.slots.get_mut(&id) else { return };
        if let Some(turn) = slot.turn.take() {
            self.queued -= 1;
            if let Some(c) = self.classes.get_mut(&slot.state.class) {
                c.take(turn, &slot.state);
            }
        }
    }

    /// Stream `id` just sent and has more: it goes to the back of the queue (round-robin
    /// among equals). When it is the only stream queued the order cannot change, and it keeps
    /// its turn (no removal and insertion per packet of a lone bulk stream).
    pub(super) fn send_to_back(&mut self, id: u64) {
        let queued = self.slots.get(&id).is_some_and(|s| s.turn.is_some());
        if queued && self.queued == 1 {
            return;
        }
        self.dequeue(id);
        self.enqueue(id);
    }

    /// Drops every queued stream with nothing to send at this credit (`credit_zero`: none).
    pub(super) fn sweep(&mut self, credit_zero: bool) {
        for c in self.classes.values_mut() {
            let shelves = [Some(&mut c.stale), credit_zero.then_some(&mut c.credit)];
            let (mut without, mut with) = (0, 0);
            for shelf in shelves.into_iter().flatten() {
                while let Some((_, id)) = shelf.pop_first() {
                    if let Some(slot) = self.slots.get_mut(&id) {
                        slot.turn = None;
                        self.queued -= 1;
                        without += usize::from(slot.state.without_credit);
                        with += usize::from(slot.state.with_credit);
                    }
                }
            }
            c.without_credit -= without;
            c.with_credit -= with;
        }
    }

    /// The stream that sends next at this credit: the first in turn of the best rank (lower
    /// first; classes ranked None wait).
    pub(super) fn next(&self, credit_zero: bool, rank: &impl Fn(u8) -> Option<u8>) -> Option<u64> {
        let mut best: Option<(u8, u64, u64)> = None;
        for (class, c) in &self.classes {
            let Some((turn, id)) = c.front(credit_zero) else { continue };
            let Some(p) = rank(*class) else { continue };
            if best.is_none_or(|b| (p, turn) < (b.0, b.1)) {
                best = Some((p, turn, id));
            }
        }
        best.map(|(_, _, id)| id)
    }

    /// Queued streams with data to send at this credit whose class ranks `p`.
    pub(super) fn sendable_at(
        &self,
        credit_zero: bool,
        rank: &impl Fn(u8) -> Option<u8>,
        p: Option<u8>,
    ) -> usize {
        self.classes
            .iter()
            .filter(|(class, _)| rank(**class) == p)
            .map(|(_, c)| c.sendable(credit_zero))
            .sum()
    }

    /// True when a queued stream may send at this credit.
    pub(super) fn has_sendable(&self, credit_zero: bool) -> bool {
        self.classes.values().any(|c| c.front(credit_zero).is_some())
    }

    /// True when some stream has retransmissions queued (every such stream is queued: a loss
    /// enqueues it, and it leaves only with nothing to send).
    pub(super) fn has_retransmit(&self) -> bool {
        self.retransmitting > 0
    }

    /// Classes of the queued streams, ascending.
    pub(super) fn classes(&self) -> Vec<u8> {
        self.classes.iter().filter(|(_, c)| !c.is_empty()).map(|(class, _)| *class).collect()
    }

    /// Unsent bytes across streams at this session credit: Σ (gap + min(new, credit)).
    /// O(1) unless the credit caps some streams' new bytes, then O(those streams).
    pub(super) fn unsent_total(&self, credit: u64) -> u64 {
        let capped: u64 =
            self.news.range(credit.saturating_add(1)..).map(|(new, n)| (new - credit) * u64::from(*n)).sum();
        self.gap_total + self.new_total - capped
    }

    fn count(&mut self, s: &SendState, add: bool) {
        if add {
            self.gap_total += s.gap;
            self.new_total += s.new;
            self.retransmitting += usize::from(s.retransmit);
            if s.new > 0 {
                *self.news.entry(s.new).or_insert(0) += 1;
            }
        } else {
            self.gap_total -= s.gap;
            self.new_total -= s.new;
            self.retransmitting -= usize::from(s.retransmit);
            if s.new > 0 {
                if let Some(n) = self.news.get_mut(&s.new) {
                    *n -= 1;
                    if *n == 0 {
                        self.news.remove(&s.new);
                    }
                }
            }
        }
    }
}
