//! The bound a path's own queue sets on its capacity estimate, and the cap it leaves under
//! EDPF while that queue stands: a path whose rate collapses keeps its old estimate for many
//! of the new, long round trips, and EDPF would go on filling it.

use super::{one_way, Path};
use crate::time::Timestamp;

/// The margin [`Path::queue_bound`] allows over the rate the queue implies.
pub const QUEUE_BOUND_MARGIN: f64 = 2.0;

impl Path {
    /// A forward one-way sample came in at `now`: once [`Path::queue_bound`] has bound the
    /// estimate (the window full, the bound below it), the bound stays as a cap on the
    /// capacity while the queue stands — recomputed from each sample, also when the window has
    /// room — and goes once the queue is within [`crate::timing::QUEUE_BOUND_MIN`] or the
    /// minimum RTT again, once no traffic is scheduled by EDPF, or when the path moves
    /// ([`Path::forget_one_way`]).
    ///
    /// Why: once the bound lowered the estimate, EDPF stopped filling the collapsed path, the
    /// window had room, the bound no longer applied and the estimate went back to the old rate
    /// — which EDPF then filled again, each packet seconds late. On real links
    /// (`lab/collapse.toml`, 20 Mbit/s falling to 50 kbit/s) the receiver delivered in bursts
    /// for as long as the run lasted. The cap is only ever set while the window is full, so a
    /// path held below its window never starts the spiral [`Path::queue_bound`] describes;
    /// and only where the bound binds: set wherever it applied, the cap bound 28 of the 90
    /// sweep mixes once their windows had room (within 10 packets 71 → 66).
    ///
    /// Only while EDPF schedules ([`Path::keep_queue_cap`]): it plans each packet's arrival by
    /// the capacity, and a stale one is what made the receiver hold. WRR, which weighs paths
    /// by it, lost a quarter of a phase with the cap on a path whose queue was background
    /// traffic's (seed 002 Fig. 7, 70–90 s: 7.77 → 5.76 Mb/s).
    pub fn on_forward_sample(&mut self, now: Timestamp) {
        let floor = crate::timing::QUEUE_BOUND_MIN.max(self.rtt.floor());
        let queue = self.one_way.forward_queue().filter(|q| *q > floor && self.keep_queue_cap);
        let Some(queue) = queue else {
            self.queue_cap = None;
            return;
        };
        let bound = QUEUE_BOUND_MARGIN * self.outstanding() as f64 / queue.as_secs_f64();
        let full = self.window_full();
        if self.queue_cap.is_some() || (full && bound < self.unbounded_capacity(now)) {
            self.queue_cap = Some(bound);
        }
    }

    /// Whether the path's capacity is capped by a queue it met with its window full
    /// ([`Path::on_forward_sample`]): its rate fell below what it has outstanding.
    pub fn queue_capped(&self) -> bool {
        self.queue_cap.is_some()
    }

    /// Forgets the one-way legs and what they bound (the path moved to another route).
    pub fn forget_one_way(&mut self) {
        self.one_way = one_way::OneWay::default();
        self.queue_cap = None;
    }

    /// The most the path can carry given the queue its latest packet met on the way to the
    /// peer ([`one_way::OneWay::forward_queue`]), bytes/s: a queue of `q` seconds in front of
    /// a bottleneck of rate C holds C·q bytes; if the queue is the path's own, they are part of
    /// what it has outstanding, so C ≤ outstanding ÷ q. Taken with a margin of
    /// [`QUEUE_BOUND_MARGIN`], once the queue is longer than
    /// [`crate::timing::QUEUE_BOUND_MIN`] and than the
    /// minimum RTT, and only while the path's congestion window is full: a queue the path made
    /// itself never binds it; a rate the path no longer has does.
    ///
    /// Why: when a path's capacity collapses, every input of its estimate keeps the old rate
    /// for many of the new, long round trips — a packet pair is not taken while the path is
    /// busy, BBR's model filters over ten round trips, and the samples of what was queued come
    /// a round trip late and count as held back — and EDPF, planning by the old rate, went on
    /// placing packets that took seconds to arrive (`braid sim --scheduler edpf --seed 1 --link
    /// 100mbit/20ms --link 20mbit/50ms/capacity=20mbit@0s,50kbit@10s`: the estimate stayed at
    /// 19.6 Mbit/s to the end, the receiver held 2,027 packets on average; with the bound 208).
    /// Why only with a full window: a path EDPF holds below its window has outstanding what
    /// the estimate allows, so a queue not its own (a return route's, a startup's) lowered the
    /// estimate, the estimate the outstanding, and so on down (`--seed 11 --link 200kbit/20ms
    /// --link 5mbit/150ms`: efficiency 0.848 → 0.331 without the condition; with it, the
    /// bound changes none of the 270 mixes of the EDPF sweeps).
    pub fn queue_bound(&self) -> Option<f64> {
        let queue = self.one_way.forward_queue()?;
        // The queue first: it is a field read, the window a controller's call, and it is read
        // wherever the estimate is (once per path view).
        (queue > crate::timing::QUEUE_BOUND_MIN.max(self.rtt.floor()) && self.window_full())
            .then(|| QUEUE_BOUND_MARGIN * self.outstanding() as f64 / queue.as_secs_f64())
    }

    /// Whether the window has no room for another packet. Stranded bytes count: they hold the
    /// window as in-flight ones do ([`Path::outstanding`]). Counting in-flight bytes alone,
    /// a path whose silence stranded what it had queued never read full again, so its queue
    /// never bound it (`lab/collapse.toml`: the uploads whose sender suspected the collapsing
    /// path delivered in bursts, or not at all, to the end of the run).
    fn window_full(&self) -> bool {
        self.outstanding() + self.mtu as u64 >= self.cc.window()
    }
}
