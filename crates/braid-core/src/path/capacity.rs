//! A path's capacity: the one estimate, in bytes/s, that every reader of a path's rate goes
//! through — the schedulers (`PathView::rate`, WRR's weights, EDPF's arrival times, priority
//! striping), path admission, the ACK carrier, loss fetching, secondary paths, the status
//! API ([`crate::session::PathInfo::capacity`]) and the silence timer; the send buffer reads
//! [`CapacityEstimate::carried`] (below).
//!
//! **Inputs**, all measured on the path:
//! * delivery-rate samples (draft-cheng-iccrg-delivery-rate-estimation), each marked
//!   application-limited or not; a sample taken while the scheduler held the path back counts
//!   as application-limited ([`CapacityEstimate::hold_back`]), and is also kept apart
//!   ([`CapacityEstimate::on_held_back_rate`]);
//! * the latest packet pair (seed 001 §4.1: "bandwidth = size/Δ");
//! * given by the path when asked: the congestion controller's bottleneck model (BBR's
//!   max-filtered delivery rate, `Controller::bandwidth`) and the pacer's rate.
//!
//! **The estimate** ([`CapacityEstimate::estimate`]), the channel monitor's "available
//! bandwidth" of seed 000 §III-B and the rate seed 004's EDPF divides a packet by:
//! 1. saturated within the last [`RATE_WINDOW`]: the largest saturated delivery rate — BBR's
//!    max filter over the delivery rate ("BtlBw = max(delivery rate) over a window", Cardwell
//!    et al., *BBR*, ACM Queue 2016), with a 2 s window so it follows a link that slowed — or
//!    the controller's model if larger (it rides out short dips such as a minimum-RTT probe),
//!    or the largest sample of the window taken while the scheduler held the path back, if
//!    larger still. Such a sample is a lower bound (draft-cheng §3.4: an application-limited
//!    sample "can only underestimate"), so the capacity is at least that. Without it, a path
//!    the scheduler bounds by its estimate (EDPF's [`crate::scheduler::edpf::free`]) kept the
//!    estimate of its first saturated samples: every later sample was taken under the bound
//!    and counted as a lower bound below nothing (`braid sim --link 50kbit/5ms/jitter=1ms
//!    --link 100mbit/50ms/jitter=1ms --scheduler edpf --duration 20s --seed 5`: 4 packets in
//!    flight on the 100 Mbit/s path for 12 s, efficiency 0.317; 0.835 with it at 0934ca4).
//!    Samples limited by the application stay out of this rule: an idle path's estimate keeps
//!    its saturated peak. A sample held back while the session had no other path to use raises the
//!    estimate by at most [`HELD_BACK_GAIN`] over the saturated maximum, a doubling a window:
//!    such a path starves no other, and its estimate feeds its own bound, so in a crowd of
//!    single-path sessions a latecomer, whose samples read high while the queue it joined
//!    drained, loosened its bound in one step and ran ahead (`crowd 100 200mbit/10ms 60 1
//!    bbr-shared`: largest deviation 44.5 % uncapped, 8.3 % capped). Capping every held-back
//!    sample (by 1.25) put the two-path run above at 0.718; ignoring a lone path's samples
//!    made the smaller crowds worse (docs/benchmarks.md);
//! 2. else the latest packet pair: a direct measurement, where an application-limited sample
//!    only bounds the capacity from below and a controller's model may carry an inflated
//!    sample — unless the largest sample of the window taken while held back exceeds it by
//!    more than a quarter ([`PAIR_LOW`]): that sample is a lower bound of a path that was
//!    sending all along, and the pair read low. A pair's gap widened by a millisecond of
//!    jitter read 36 and then 15 Mbit/s on a 100 Mbit/s path that EDPF held at its bound;
//!    taken as the capacity, it shrank the bound, and the samples under the bound (54
//!    Mbit/s, held back, never saturated) could not raise it for 6 s (`braid sim --link
//!    50kbit/5ms/jitter=1ms --link 100mbit/50ms/jitter=1ms --scheduler edpf --duration 20s
//!    --seed 6`: efficiency 0.692);
//! 3. else the largest recent sample of any kind, or the model;
//! 4. else (nothing measured yet) the pacer's rate without its gain, or the decaying maximum.
//!
//! It is at least 1 byte/s, so readers may divide by it. The path caps it by what its own
//! queue allows while its window is full ([`crate::path::Path::queue_bound`]): after a
//! collapse every input above keeps the old rate for many of the new, long round trips.
//!
//! **Other quantities** readers need are named accessors here, derived from the same inputs:
//! * [`CapacityEstimate::drain_rate`], for the silence timer: how fast what is in flight
//!   drains. It must not shrink while the path is silent (the windows of the estimate expire
//!   after 2 s without samples, and a silent path gives none), so it is the larger of the
//!   packet pair and a maximum that decays only as new samples come (× 0.98 a sample).
//! * [`CapacityEstimate::carried`], for the send buffer: the estimate without the packet
//!   pair, what the path has shown it delivers. The send buffer is memory bought by the rate:
//!   sized from a pair read at the gap floor (11.6 Gbit/s), every stream of an unsaturated
//!   path filled its 8 MB cap (100 downloads on one server: 640–756 MB resident; sized from
//!   this, 154–165 MB; `many_sessions`).
//! * [`CapacityEstimate::recent_pair`], for EDPF's rule that leaves out paths too slow for
//!   in-order data ([`crate::scheduler::edpf::keep_in_order_capable`]): a path that rule left
//!   out is fed only probes, its saturated samples are a packet or two a round trip, and they
//!   outrank the pair here, so the rule weighs the pair (if no older than [`RATE_WINDOW`])
//!   beside the estimate.
//! * [`goodput_capacity`]: the estimate less the loss, S·(1 − p) — what a path delivers (seed
//!   000 Eq. 4's per-path cap, and the "effective bandwidth" its priority striping fills).
//! * [`weight_filter`]: WRR's weights follow the estimate through one more filter, an EWMA of
//!   the estimate sampled once a reweight (seed 002 §V: the bandwidth "combined and filtered to
//!   calculate a link weight set"). Weighting by the estimate directly was measured: it moves
//!   the weights faster (seed 002's changing-capacity run: mean 10.26 → 11.14 Mb/s) but loses
//!   on equal links (seed 004's piconet TCP at 8 links: 789 → 728 kb/s), so the filter stays.
//! * The pacer's own rate is the controller's (RFC 9002 §7.7) and stays the pacer's: it is a
//!   send rate, not a capacity.

use crate::time::Timestamp;
use crate::timing::RATE_WINDOW;

/// RFC 9002 §7.7's pacing gain N ("rate = N * congestion_window / smoothed_rtt", N = 1.25):
/// before anything is measured, the capacity is taken as the pacer's rate without it.
const PACING_GAIN: f64 = 1.25;
/// How far a held-back sample must exceed the packet pair for the pair to count as low (rule
/// 2). Any excess moved EDPF's reorder on 41 of 90 sweep mixes (sum 2099 → 2304 packets); at
/// a quarter, none.
pub const PAIR_LOW: f64 = 1.25;
/// How far above the saturated maximum a sample held back while the session had no other path
/// may raise the estimate (rule 1): such a path at most doubles its estimate a window, the
/// growth BBR's startup seeks each round (Cardwell et al., *BBR*, ACM Queue 2016). Its probing
/// gain, 1.25, was measured too: it converged too slowly for 30-s crowds (`crowd 30
/// 100mbit/10ms 30 1 bbr-shared`: largest deviation 34.4 % against 8.9 % with 2;
/// docs/benchmarks.md).
pub const HELD_BACK_GAIN: f64 = 2.0;
/// Each new sample below it lowers the decaying maximum by this factor.
const DECAY: f64 = 0.98;

/// One path's capacity estimate and the measurements it rests on (see the module docs).
#[derive(Debug, Clone, Default)]
pub struct CapacityEstimate {
    /// Latest valid delivery-rate sample, bytes/s.
    latest: f64,
    /// Largest delivery-rate sample not limited by the application, decaying by [`DECAY`] per
    /// sample, bytes/s.
    decaying_max: f64,
    /// Largest delivery-rate sample (any) in the current and previous half windows.
    recent_max: [(Timestamp, f64); 2],
    /// Largest saturated (not application-limited) sample in the current and previous half
    /// windows.
    saturated_max: [(Timestamp, f64); 2],
    /// Largest sample taken while the scheduler held the path back in favour of another path
    /// (and the application was not limiting) in the current and previous half windows.
    held_for_another_max: [(Timestamp, f64); 2],
    /// The same for samples held back while the session had no other path to use.
    held_alone_max: [(Timestamp, f64); 2],
    /// Latest packet-pair estimate, bytes/s, and when it was taken.
    packet_pair: Option<(f64, Timestamp)>,
    /// Samples until the path has delivered this many bytes are not saturated: the scheduler
    /// held the path back while it could have sent.
    held_back_until: u64,
    /// Of those, samples until this many bytes were held back in favour of another path.
    held_for_another_until: u64,
}

impl CapacityEstimate {
    /// A new delivery-rate sample at `now`; `app_limited` when the sender had too little to
    /// send (or the sample was taken while [held back](CapacityEstimate::hold_back)).
    pub fn on_delivery_rate(&mut self, now: Timestamp, rate: f64, app_limited: bool) {
        self.latest = rate;
        if !app_limited || rate > self.decaying_max {
            // Decay slowly so the maximum follows a path whose capacity shrank.
            self.decaying_max = rate.max(self.decaying_max * DECAY);
        }
        windowed_max(&mut self.recent_max, now, rate);
        if !app_limited {
            windowed_max(&mut self.saturated_max, now, rate);
        }
    }

    /// A new delivery-rate sample at `now`, taken while the scheduler [held the path
    /// back](CapacityEstimate::hold_back) although the application had data: a lower bound
    /// that rule 1 of the module docs takes when it exceeds the saturated samples (by at most
    /// [`HELD_BACK_GAIN`] unless `for_another`: held in favour of another path).
    pub fn on_held_back_rate(&mut self, now: Timestamp, rate: f64, for_another: bool) {
        let w = if for_another { &mut self.held_for_another_max } else { &mut self.held_alone_max };
        windowed_max(w, now, rate);
        self.on_delivery_rate(now, rate, true);
    }

    /// A completed packet pair measured `rate` bytes/s at `now`.
    pub fn on_packet_pair(&mut self, now: Timestamp, rate: f64) {
        self.packet_pair = Some((rate, now));
    }

    /// The scheduler held the path back while it could have sent: delivery-rate samples until
    /// `delivered` bytes are delivered are lower bounds, not saturated ones. `another_path`:
    /// the session had another path to use instead.
    pub fn hold_back(&mut self, delivered: u64, another_path: bool) {
        self.held_back_until = delivered;
        if another_path {
            self.held_for_another_until = delivered;
        }
    }

    /// True when a sample taken at `delivered` bytes falls in a stretch the scheduler held
    /// the path back.
    pub fn held_back(&self, delivered: u64) -> bool {
        delivered <= self.held_back_until
    }

    /// True when a sample taken at `delivered` bytes falls in a stretch the scheduler held
    /// the path back in favour of another path.
    pub fn held_for_another(&self, delivered: u64) -> bool {
        delivered <= self.held_for_another_until
    }

    /// The capacity in bytes/s at `now` (the module docs give the rule). `model` is the
    /// congestion controller's bottleneck estimate if it keeps one, `pacing_rate` the pacer's
    /// rate.
    pub fn estimate(&self, now: Timestamp, model: Option<f64>, pacing_rate: f64) -> f64 {
        let model = model.unwrap_or(0.0);
        let c = if let Some(s) = self.saturated_value(now) {
            s.max(model)
        } else if let Some((pair, _)) = self.packet_pair {
            // A pair well below what the path carried while held back read low (its gap
            // widened by jitter): the held-back sample is a lower bound (rule 2).
            let (for_another, alone) = self.held_maxima(now);
            let held = for_another.max(alone);
            if held > PAIR_LOW * pair {
                held
            } else {
                pair
            }
        } else {
            let recent = window_value(&self.recent_max, now).unwrap_or(0.0).max(model);
            if recent > 0.0 {
                recent
            } else {
                (pacing_rate / PACING_GAIN).max(self.decaying_max)
            }
        };
        c.max(1.0)
    }

    /// What the path has shown it carries, bytes/s: the estimate without the packet pair
    /// (rules 1 and 3 of the module docs, or the decaying maximum). A pair is a measurement
    /// of the bottleneck's spacing, not of what the path delivered; one read at the gap floor
    /// says 11.6 Gbit/s. Readers that size memory by the rate use this, so a pair they cannot
    /// confirm buys no buffer.
    pub fn carried(&self, now: Timestamp, model: Option<f64>) -> f64 {
        let model = model.unwrap_or(0.0);
        let c = match self.saturated_value(now) {
            Some(s) => s.max(model),
            None => window_value(&self.recent_max, now).unwrap_or(0.0).max(model).max(self.decaying_max),
        };
        c.max(1.0)
    }

    /// Rule 1's rate without the model: the largest saturated sample of the window, or a
    /// larger one taken while held back (one held back alone, by at most [`HELD_BACK_GAIN`]).
    /// None when the path was not saturated in the window.
    fn saturated_value(&self, now: Timestamp) -> Option<f64> {
        let (for_another, alone) = self.held_maxima(now);
        window_value(&self.saturated_max, now).map(|s| s.max(for_another).max(alone.min(HELD_BACK_GAIN * s)))
    }

    /// The largest samples of the window taken while held back: in favour of another path,
    /// and alone (0: none).
    fn held_maxima(&self, now: Timestamp) -> (f64, f64) {
        let max = |w| window_value(w, now).unwrap_or(0.0);
        (max(&self.held_for_another_max), max(&self.held_alone_max))
    }

    /// How fast what is in flight drains, bytes/s, for the silence timer (0: not measured):
    /// the larger of the packet pair and the decaying maximum, which do not expire while the
    /// path is silent.
    pub fn drain_rate(&self) -> f64 {
        self.packet_pair.map_or(0.0, |(r, _)| r).max(self.decaying_max)
    }

    /// True when the path carried as much as it could within the last [`RATE_WINDOW`].
    pub fn saturated(&self, now: Timestamp) -> bool {
        window_value(&self.saturated_max, now).is_some()
    }

    /// True once the path has a measurement of its own (packet pair or delivery rate).
    pub fn measured(&self) -> bool {
        self.packet_pair.is_some() || self.decaying_max > 0.0
    }

    /// The latest delivery-rate sample, bytes/s (status output).
    pub fn latest_delivery_rate(&self) -> f64 {
        self.latest
    }

    /// The largest delivery-rate sample, decaying (0: none yet), bytes/s: what the path has
    /// shown it delivers, for judging a packet pair (`Monitor::on_ack_for_pair`).
    pub fn delivered_peak(&self) -> f64 {
        self.decaying_max
    }

    /// The latest packet-pair estimate, bytes/s.
    pub fn packet_pair(&self) -> Option<f64> {
        self.packet_pair.map(|(r, _)| r)
    }

    /// The packet pair if taken within the last [`RATE_WINDOW`], bytes/s: no older than the
    /// delivery-rate samples it is weighed against. A pair is asked for only while the path is
    /// not saturated, so a path that slowed down while it carried data keeps its old pair.
    pub fn recent_pair(&self, now: Timestamp) -> Option<f64> {
        self.packet_pair.filter(|(_, at)| now.saturating_since(*at) <= RATE_WINDOW).map(|(r, _)| r)
    }
}

/// What a path of capacity `capacity` delivers at loss fraction `loss`: S·(1 − p) (seed 000
/// Eq. 4's per-path cap; its priority striping's "effective bandwidth of each channel from its
/// raw bandwidth and loss-rate information").
pub fn goodput_capacity(capacity: f64, loss: f64) -> f64 {
    capacity * (1.0 - loss).max(0.0)
}

/// EWMA weight of a new estimate in [`weight_filter`].
const WEIGHT_ALPHA: f64 = 0.5;

/// WRR's filtered capacity: the EWMA (α = 0.5) of the estimate sampled at each reweight,
/// starting at the first sample (see the module docs for why WRR keeps this filter).
pub fn weight_filter(previous: Option<f64>, estimate: f64) -> f64 {
    WEIGHT_ALPHA * estimate + (1.0 - WEIGHT_ALPHA) * previous.unwrap_or(estimate)
}

/// A maximum over two half windows: the current one and the one before.
fn windowed_max(w: &mut [(Timestamp, f64); 2], now: Timestamp, v: f64) {
    let half = RATE_WINDOW / 2;
    if w[0].1 == 0.0 || now >= w[0].0 + half {
        w[1] = w[0];
        w[0] = (now, v);
    } else {
        w[0].1 = w[0].1.max(v);
    }
}

fn window_value(w: &[(Timestamp, f64); 2], now: Timestamp) -> Option<f64> {
    w.iter().filter(|(t, v)| *v > 0.0 && now < *t + RATE_WINDOW).map(|(_, v)| *v).reduce(f64::max)
}

#[cfg(test)]
mod tests;
