//! The per-flow reorder window for datagrams of the TUN front end (UDP flows: QUIC, RTP, DNS).
//!
//! Datagrams of one flow may take different paths and arrive out of order; QUIC (RFC 9002
//! §6.1.1: a packet three numbers behind the newest is declared lost) and RTP jitter buffers
//! read that as loss. The receiver therefore releases each flow's datagrams in the sender's
//! order (a per-flow sequence number, [`crate::appproto`]) and holds one that arrives ahead of
//! a gap for at most the *hold time*: long enough for a datagram on the slowest active path
//! to catch up, never longer than a configured cap. When the hold runs out the gap is given
//! up (a real loss) and what follows goes on in order. A datagram older than what was already
//! released is passed on at once (late, counted): dropping it would turn reordering into loss.
//!
//! Sans-IO: time is passed in; the owner polls [`Reorder::next_deadline`].

use braid_core::monitor::MonitorState;
use braid_core::PathInfo;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Datagrams one flow holds at most; past that the oldest gap is given up.
pub const MAX_HELD: usize = 512;
/// Default cap of the hold time (`tun.reorder_max`).
pub const DEFAULT_CAP: Duration = Duration::from_millis(150);
/// Added to a late datagram's lateness when the window learns from it.
const LEARN_SLACK: Duration = Duration::from_millis(2);

/// Counters of one flow's window.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReorderStats {
    /// Datagrams released in order after being held.
    pub held: u64,
    /// Gaps given up (the hold ran out, or the window was full).
    pub gaps: u64,
    /// Datagrams that arrived after their place was given up, passed on at once.
    pub late: u64,
}

/// The reorder window of one flow, for items of type `T`.
#[derive(Debug)]
pub struct Reorder<T> {
    /// The next sequence number to release (extended to 64 bits), once one arrived.
    next: Option<u64>,
    held: BTreeMap<u64, (Instant, T)>,
    /// The last gap given up: every number up to the first was given up at the second.
    gave_up: Option<(u64, Instant)>,
    /// What this flow's late datagrams showed the hold lacks; added to every hold after.
    learned: Duration,
    /// The longest any datagram waits, learned part included.
    cap: Duration,
    /// Counters.
    pub stats: ReorderStats,
}

impl<T> Default for Reorder<T> {
    fn default() -> Self {
        Reorder {
            next: None,
            held: BTreeMap::new(),
            gave_up: None,
            learned: Duration::ZERO,
            cap: DEFAULT_CAP,
            stats: ReorderStats::default(),
        }
    }
}

impl<T> Reorder<T> {
    /// The window of a sender that numbers its datagrams from 0 (both ends of an ordered
    /// association do): a flow's first datagram that overtakes datagram 0 waits for it, where
    /// [`Reorder::default`] would start at whichever arrives first and pass 0 on late. No
    /// datagram waits longer than `cap` (`tun.reorder_max`), learned part included.
    pub fn from_zero(cap: Duration) -> Self {
        Reorder { next: Some(0), cap, ..Reorder::default() }
    }

    /// Takes datagram `seq` at `now`; what may be released goes to `out`, in order. A
    /// datagram ahead of a gap waits at most `hold` plus what the flow learned (zero: nothing
    /// waits). A datagram whose gap was already given up is passed on at once, and the window
    /// learns from it: later gaps wait as much longer as it came after its gap was given up
    /// (in all at most the cap), so a path whose delay outgrows the measured hold — a queue
    /// building faster than the smoothed RTT follows — costs one late burst, not one per gap.
    pub fn push(&mut self, now: Instant, seq: u32, item: T, hold: Duration, out: &mut Vec<T>) {
        let next = *self.next.get_or_insert(u64::from(seq));
        // Serial-number arithmetic (RFC 1982): within 2^31 either way of the next one.
        let ext = next.wrapping_add(seq.wrapping_sub(next as u32) as i32 as i64 as u64);
        if (ext as i64) < (next as i64) {
            self.stats.late += 1;
            if let Some((_, at)) = self.gave_up.filter(|(upto, _)| ext <= *upto) {
                let lateness = now.saturating_duration_since(at) + LEARN_SLACK;
                self.learned = self.learned.max(lateness).min(self.cap);
            }
            out.push(item);
            return;
        }
        if ext == next {
            out.push(item);
            self.next = Some(next + 1);
            self.release_run(out);
            return;
        }
        if hold.is_zero() {
            self.stats.gaps += 1;
            self.release_through(ext - 1, out);
            out.push(item);
            self.next = Some(ext + 1);
            self.release_run(out);
            return;
        }
        let wait = (hold + self.learned).min(self.cap.max(hold));
        self.held.entry(ext).or_insert((now + wait, item));
        while self.held.len() > MAX_HELD {
            let first = *self.held.keys().next().expect("not empty");
            self.give_up_through(now, first, out);
        }
    }

    /// Releases what waited its full hold at `now` (and what follows it in order).
    pub fn poll(&mut self, now: Instant, out: &mut Vec<T>) {
        while let Some(last_due) =
            self.held.iter().filter(|(_, (due, _))| *due <= now).map(|(k, _)| *k).next_back()
        {
            self.give_up_through(now, last_due, out);
        }
    }

    /// When the next held datagram's hold runs out.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.held.values().map(|(due, _)| *due).min()
    }

    /// Datagrams held now.
    pub fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether none is held.
    pub fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// The hold this flow's late datagrams added.
    pub fn learned(&self) -> Duration {
        self.learned
    }

    /// Gives up, at `now`, the gaps before `seq` (held): releases every held datagram up to it.
    fn give_up_through(&mut self, now: Instant, seq: u64, out: &mut Vec<T>) {
        self.stats.gaps += 1;
        self.gave_up = Some((seq, now));
        self.release_through(seq, out);
        self.next = Some(seq + 1);
        self.release_run(out);
    }

    fn release_through(&mut self, seq: u64, out: &mut Vec<T>) {
        while let Some(entry) = self.held.first_entry() {
            if *entry.key() > seq {
                break;
            }
            out.push(entry.remove().1);
            self.stats.held += 1;
        }
    }

    /// Releases held datagrams that follow the next one without a gap.
    fn release_run(&mut self, out: &mut Vec<T>) {
        let Some(mut next) = self.next else { return };
        while let Some((_, item)) = self.held.remove(&next) {
            out.push(item);
            self.stats.held += 1;
            next += 1;
        }
        self.next = Some(next);
    }
}

/// The hold time the session's paths call for: how much later than a datagram on the fastest
/// path one on the slowest can arrive, plus twice the largest jitter (RFC 3550 §6.4.1) and 2 ms
/// of scheduling slack, at most `cap`. See [`hold_from`]. With one path (or none measured yet)
/// nothing needs reordering but jitter can still reorder, so the jitter term stays.
pub fn hold_for(paths: &[PathInfo], cap: Duration) -> Duration {
    let live = paths
        .iter()
        .filter(|p| matches!(p.monitor_state, MonitorState::Active | MonitorState::Probing))
        .filter(|p| !p.srtt.is_zero())
        .map(|p| PathDelay { srtt: p.srtt, rttvar: p.rttvar, min_rtt: p.min_rtt, jitter: p.jitter });
    hold_from(live, cap)
}

/// What [`hold_from`] needs of one path.
#[derive(Debug, Clone, Copy)]
pub struct PathDelay {
    /// Smoothed RTT (with what stands in the path's queue now).
    pub srtt: Duration,
    /// RTT variation (RFC 6298's RTTVAR).
    pub rttvar: Duration,
    /// Lowest RTT seen (propagation alone).
    pub min_rtt: Duration,
    /// Delay variation.
    pub jitter: Duration,
}

/// The hold for paths measured as `paths`. Acknowledgements ride the lowest-RTT path
/// (`AckPath::LowestRtt`), so each path's RTT is its own one-way delay plus that one return
/// trip: the one-way *difference* of two paths is their whole RTT difference, not half of it.
/// The worst case is a datagram on the slowest path behind its current queue against the next
/// one on the fastest path with an empty queue (smallest minimum RTT). A queue can grow faster
/// than the smoothed RTT follows, so the slow side is SRTT + 2·RTTVAR, not SRTT alone: with
/// SRTT alone each new flow's first datagrams behind a growing queue came out late (2–27 per
/// run in the lab; 0–1 with this bound). RFC 6298's 4·RTTVAR held so much at once that its
/// release overflowed the application's socket (loss 0.01 % → 0.32–0.93 % at 55 Mbit/s).
/// Where each path acknowledges on itself this holds twice what is needed, which costs time
/// only when a datagram was really lost.
pub fn hold_from(paths: impl Iterator<Item = PathDelay>, cap: Duration) -> Duration {
    let (mut slow, mut fast, mut jitter, mut count) = (Duration::ZERO, Duration::MAX, Duration::ZERO, 0);
    for p in paths {
        count += 1;
        slow = slow.max(p.srtt + p.rttvar * 2);
        fast = fast.min(if p.min_rtt.is_zero() { p.srtt } else { p.min_rtt });
        jitter = jitter.max(p.jitter);
    }
    // One path is first-in first-out: its queue delays every datagram alike.
    let spread = match count {
        0 => return cap,
        1 => Duration::ZERO,
        _ => slow.saturating_sub(fast),
    };
    (spread + jitter * 2 + Duration::from_millis(2)).min(cap)
}

/// The hold time of a session, shared by its flows: updated by the session's driver as the
/// paths are measured, read by every flow's window.
#[derive(Debug, Clone)]
pub struct SharedHold {
    nanos: Arc<AtomicU64>,
    cap: Duration,
}

impl SharedHold {
    /// Starts at `cap` until paths are measured.
    pub fn new(cap: Duration) -> Self {
        SharedHold { nanos: Arc::new(AtomicU64::new(cap.as_nanos() as u64)), cap }
    }

    /// The longest any datagram may wait (`tun.reorder_max`).
    pub fn cap(&self) -> Duration {
        self.cap
    }

    /// The hold now.
    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }

    /// Recomputes it from the session's paths.
    pub fn update(&self, paths: &[PathInfo]) {
        self.nanos.store(hold_for(paths, self.cap).as_nanos() as u64, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOLD: Duration = Duration::from_millis(50);

    fn push_all(r: &mut Reorder<u32>, now: Instant, seqs: &[u32]) -> Vec<u32> {
        let mut out = Vec::new();
        for &s in seqs {
            r.push(now, s, s, HOLD, &mut out);
        }
        out
    }

    fn ms(v: f64) -> Duration {
        Duration::from_secs_f64(v / 1e3)
    }

    #[test]
    fn the_hold_covers_a_slow_paths_whole_one_way_lead_when_acks_ride_the_fast_path() {
        // The server's paths in bench/equal-udp.toml (links 10, 20, 40 ms one-way), measured
        // during a 25 Mbit/s download: a datagram on link 3 arrives up to 30 ms after the next
        // one on an idle link 1. Half the RTT spread held 15 ms, and iperf3 counted 80 to 110
        // datagrams out of order per run.
        let paths = [(29.29, 19.26, 0.92), (30.21, 29.13, 0.76), (50.50, 49.39, 1.24)]
            .map(|(s, m, j)| PathDelay { srtt: ms(s), rttvar: ms(0.5), min_rtt: ms(m), jitter: ms(j) });
        let hold = hold_from(paths.into_iter(), DEFAULT_CAP);
        assert!(hold >= ms(30.0), "{hold:?}");
        assert!(hold <= ms(40.0), "{hold:?}");
    }

    #[test]
    fn a_slow_path_whose_rtt_varies_is_held_for_up_to_its_rtt_bound() {
        // The slow path's queue is growing: its samples vary by 5 ms around a 50 ms SRTT, so a
        // datagram on it is held for up to SRTT + 2·RTTVAR = 60 ms against 20 ms on the fast
        // one, plus jitter and slack (SRTT alone held 34 ms).
        let fast = PathDelay { srtt: ms(21.0), rttvar: ms(0.5), min_rtt: ms(20.0), jitter: ms(0.5) };
        let slow = PathDelay { srtt: ms(50.0), rttvar: ms(5.0), min_rtt: ms(40.0), jitter: ms(1.0) };
        let hold = hold_from([fast, slow].into_iter(), DEFAULT_CAP);
        assert_eq!(hold, ms(44.0));
    }

    #[test]
    fn one_path_holds_for_jitter_alone_and_the_cap_bounds_the_hold() {
        let one = PathDelay { srtt: ms(30.0), rttvar: ms(2.0), min_rtt: ms(20.0), jitter: ms(1.0) };
        // One path: its queue delays every datagram alike; only jitter reorders.
        assert_eq!(hold_from([one].into_iter(), DEFAULT_CAP), ms(4.0));
        let far = PathDelay { srtt: ms(600.0), rttvar: ms(2.0), min_rtt: ms(590.0), jitter: ms(1.0) };
        assert_eq!(hold_from([one, far].into_iter(), DEFAULT_CAP), DEFAULT_CAP);
        assert_eq!(hold_from(std::iter::empty(), DEFAULT_CAP), DEFAULT_CAP);
    }

    #[test]
    fn a_late_straggler_lengthens_the_hold_for_the_gaps_after_it() {
        let hold = Duration::from_millis(10);
        let t = Instant::now();
        let at = |ms: u64| t + Duration::from_millis(ms);
        let mut r = Reorder::from_zero(DEFAULT_CAP);
        let mut out = Vec::new();
        r.push(at(0), 0, 0, hold, &mut out);
        r.push(at(0), 2, 2, hold, &mut out);
        r.poll(at(10), &mut out);
        // 1 comes 15 ms after its gap was given up: late, and the window learns 17 ms.
        r.push(at(25), 1, 1, hold, &mut out);
        assert_eq!(out, vec![0, 2, 1]);
        assert_eq!(r.learned(), Duration::from_millis(17));
        // The next gap waits 10 + 17 ms: 3, 15 ms behind 4, is put back in order.
        r.push(at(30), 4, 4, hold, &mut out);
        r.poll(at(40), &mut out);
        r.push(at(45), 3, 3, hold, &mut out);
        assert_eq!(out, vec![0, 2, 1, 3, 4]);
        assert_eq!(r.stats.late, 1);
        // Learning is bounded by the cap.
        r.push(at(50), 6, 6, hold, &mut out);
        r.poll(at(100), &mut out);
        r.push(at(10_000), 5, 5, hold, &mut out);
        assert_eq!(r.learned(), DEFAULT_CAP);
        r.push(at(10_000), 8, 8, hold, &mut out);
        assert_eq!(r.next_deadline(), Some(at(10_000) + DEFAULT_CAP));
    }

    #[test]
    fn a_flows_first_datagram_overtaken_at_the_start_is_still_in_order() {
        let t = Instant::now();
        assert_eq!(push_all(&mut Reorder::from_zero(DEFAULT_CAP), t, &[1, 0, 2]), vec![0, 1, 2]);
        let mut unknown_start = Reorder::default();
        assert_eq!(push_all(&mut unknown_start, t, &[1, 0, 2]), vec![1, 0, 2]);
        assert_eq!(unknown_start.stats.late, 1);
    }

    #[test]
    fn in_order_passes_straight_through() {
        let mut r = Reorder::default();
        assert_eq!(push_all(&mut r, Instant::now(), &[5, 6, 7]), vec![5, 6, 7]);
        assert!(r.is_empty() && r.next_deadline().is_none());
    }

    #[test]
    fn a_swapped_pair_comes_out_in_order() {
        let mut r = Reorder::default();
        let t = Instant::now();
        assert_eq!(push_all(&mut r, t, &[0, 2, 3]), vec![0]);
        assert_eq!(r.len(), 2);
        assert_eq!(r.next_deadline(), Some(t + HOLD));
        assert_eq!(push_all(&mut r, t, &[1]), vec![1, 2, 3]);
        assert_eq!(r.stats, ReorderStats { held: 2, gaps: 0, late: 0 });
    }

    #[test]
    fn a_gap_is_given_up_when_the_hold_runs_out_and_a_straggler_is_late() {
        let mut r = Reorder::default();
        let t = Instant::now();
        assert_eq!(push_all(&mut r, t, &[0, 2]), vec![0]);
        let mut out = Vec::new();
        r.poll(t + HOLD / 2, &mut out);
        assert!(out.is_empty());
        r.push(t + HOLD / 2, 3, 3, HOLD, &mut out);
        r.poll(t + HOLD, &mut out);
        // 2's hold ran out: the gap at 1 is given up; 3 follows 2 without a gap.
        assert_eq!(out, vec![2, 3]);
        r.push(t + HOLD, 1, 1, HOLD, &mut out);
        assert_eq!(out, vec![2, 3, 1]);
        assert_eq!(r.stats.late, 1);
        assert_eq!(r.stats.gaps, 1);
    }

    #[test]
    fn sequence_numbers_wrap() {
        let mut r = Reorder::default();
        let t = Instant::now();
        assert_eq!(push_all(&mut r, t, &[u32::MAX - 1, 0, u32::MAX, 1]), vec![u32::MAX - 1, u32::MAX, 0, 1]);
    }

    #[test]
    fn a_zero_hold_never_waits_and_the_window_is_bounded() {
        let mut r = Reorder::default();
        let mut out = Vec::new();
        let t = Instant::now();
        r.push(t, 0, 0, Duration::ZERO, &mut out);
        r.push(t, 2, 2, Duration::ZERO, &mut out);
        assert_eq!(out, vec![0, 2]);
        let mut r = Reorder::default();
        let mut out = Vec::new();
        r.push(t, 0, 0, HOLD, &mut out);
        for s in 2..(MAX_HELD as u32 + 10) {
            r.push(t, s, s, HOLD, &mut out);
        }
        assert!(r.len() <= MAX_HELD);
        assert_eq!(out[..3], [0, 2, 3]);
    }
}
