//! Congestion control, one controller per path behind the [`Controller`] trait.
//!
//! Per-path control is the point (seed 004): a loss on one link must not slow the others, so
//! every path owns its controller and nothing is coupled. Controllers are told about sends,
//! acknowledgements (with a delivery-rate sample) and congestion events; they answer with a
//! congestion window and, optionally, a pacing rate.
//!
//! * [`newreno::NewReno`] — RFC 9002 §7.
//! * [`cubic::Cubic`] — RFC 9438.
//! * [`bbr::Bbr`] — a delivery-rate model after BBR v1 (draft-cardwell-iccrg-bbr-congestion-
//!   control-00): it paces at the measured bottleneck rate and does not read random loss as
//!   congestion, which is what keeps a lossy wireless path useful.

pub mod bbr;
pub mod cubic;
pub mod delivery;
pub mod newreno;
pub mod pacer;
#[cfg(test)]
mod tests;

use crate::path::rtt::RttEstimator;
use crate::time::Timestamp;
use std::fmt;
use std::str::FromStr;

pub use delivery::RateSample;

/// The maximum payload a path's packets carry, used as the congestion control segment size.
pub const DEFAULT_MSS: u64 = 1452;

/// RFC 9002 §7.2: "kInitialWindow = min(10 * max_datagram_size, max(2 * max_datagram_size, 14720))".
pub fn initial_window(mss: u64) -> u64 {
    (10 * mss).min((2 * mss).max(14720))
}

/// RFC 9002 §7.2: "kMinimumWindow = 2 * max_datagram_size".
pub fn minimum_window(mss: u64) -> u64 {
    2 * mss
}

/// RFC 9002 §7.8: "When bytes in flight is smaller than the congestion window and sending is
/// not pacing limited, the congestion window is underutilized ... the congestion window
/// SHOULD NOT be increased". Window growth is allowed when at least half the window was in
/// flight, or nearly all of it while the application had nothing more to send.
pub fn window_limited(ev: &AckEvent, window: u64, mss: u64) -> bool {
    let used = ev.prior_in_flight;
    if ev.rate.is_app_limited {
        used + 3 * mss >= window
    } else {
        used * 2 >= window
    }
}

/// Newly acknowledged data, reported once per ACK frame.
#[derive(Debug, Clone)]
pub struct AckEvent {
    /// When the ACK was processed.
    pub now: Timestamp,
    /// Bytes newly acknowledged (in-flight packets only).
    pub acked_bytes: u64,
    /// Send time of the newest packet acknowledged.
    pub largest_sent_time: Timestamp,
    /// Bytes in flight before this ACK was processed.
    pub prior_in_flight: u64,
    /// The delivery-rate sample this ACK produced.
    pub rate: RateSample,
}

/// Packets declared lost, reported once per loss-detection pass.
#[derive(Debug, Clone)]
pub struct LossEvent {
    /// When the loss was detected.
    pub now: Timestamp,
    /// Bytes declared lost.
    pub lost_bytes: u64,
    /// Send time of the newest lost packet (a congestion event starts a recovery period only if
    /// this is after the previous one started).
    pub largest_sent_time: Timestamp,
    /// RFC 9002 §7.6 persistent congestion was established.
    pub persistent: bool,
    /// The loss was classed as random (not caused by a queue): see `monitor` loss
    /// discrimination. Controllers that honour it keep their window.
    pub random: bool,
    /// The loss judge saw a queue behind the loss: its verdict whether loss discrimination
    /// is on or not (`random` carries it only when it is).
    pub queued: bool,
}

#[cfg(test)]
impl LossEvent {
    /// A loss behind a queue, neither persistent nor judged random: what most tests lose.
    pub(crate) fn congestion(now: Timestamp, lost_bytes: u64, largest_sent_time: Timestamp) -> Self {
        LossEvent { now, lost_bytes, largest_sent_time, persistent: false, random: false, queued: true }
    }
}

/// A per-path congestion controller.
pub trait Controller: fmt::Debug + Send + Sync {
    /// A packet of `bytes` left; `in_flight` counts it already.
    fn on_sent(&mut self, now: Timestamp, bytes: u64, in_flight: u64);
    /// Data was acknowledged.
    fn on_ack(&mut self, ev: &AckEvent, rtt: &RttEstimator);
    /// Data was lost.
    fn on_congestion(&mut self, ev: &LossEvent, rtt: &RttEstimator);
    /// The congestion window in bytes.
    fn window(&self) -> u64;
    /// The pacing rate in bytes per second, or None for the default (RFC 9002 §7.7:
    /// 1.25 × window / smoothed RTT).
    fn pacing_rate(&self, rtt: &RttEstimator) -> Option<f64>;
    /// The controller's estimate of the path's bottleneck rate in bytes/s, if it has one.
    fn bandwidth(&self) -> Option<f64> {
        None
    }
    /// While `on`, keep the path's bottleneck queue near empty at some cost in throughput:
    /// a latency-sensitive class is active and every packet of it waits behind that queue
    /// (issue 11). Controllers without a rate model (loss-based ones fill the queue by
    /// design) ignore it.
    fn set_latency_bound(&mut self, _on: bool) {}
    /// Whether other senders' flows may share this path's bottleneck (true until told
    /// otherwise). A server sending to one client at a time knows it is alone; `bbr-shared`
    /// then drains ProbeRTT to one BDP as `bbr` does, where a crowd needs half
    /// ([`bbr::Bbr::shared`]). Other controllers ignore it.
    fn set_shared_bottleneck(&mut self, _shared: bool) {}
    /// What the controller was last told by [`set_shared_bottleneck`](Self::set_shared_bottleneck)
    /// (the BBR family records it; only `bbr-shared` acts on it), or None for a controller that
    /// does not record it.
    fn shared_bottleneck(&self) -> Option<bool> {
        None
    }
    /// True while the controller is in slow start (or BBR's startup).
    fn in_slow_start(&self) -> bool;
    /// A copy of the full state, for blackout freeze (seed 003): saved when a path is
    /// suspected, restored when it answers again.
    fn clone_box(&self) -> Box<dyn Controller>;
    /// Short name for status output.
    fn name(&self) -> &'static str;
}

/// Which controller a path uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// RFC 9002 NewReno.
    NewReno,
    /// RFC 9438 CUBIC.
    Cubic,
    /// Delivery-rate model after BBR v1.
    #[default]
    Bbr,
    /// The same for a bottleneck shared with many other flows, such as a server's uplink
    /// with many clients behind it: ProbeRTT drains to half a bandwidth-delay product, as
    /// BBRv2 does, so that the flows see the empty queue together and converge to equal
    /// shares (see [`bbr::Bbr::shared`]).
    BbrShared,
}

impl Algorithm {
    /// A fresh controller of this kind.
    pub fn build(self, mss: u64) -> Box<dyn Controller> {
        match self {
            Algorithm::NewReno => Box::new(newreno::NewReno::new(mss)),
            Algorithm::Cubic => Box::new(cubic::Cubic::new(mss)),
            Algorithm::Bbr => Box::new(bbr::Bbr::new(mss)),
            Algorithm::BbrShared => Box::new(bbr::Bbr::shared(mss)),
        }
    }

    /// Every algorithm, with its name.
    pub const ALL: [(&'static str, Algorithm); 4] = [
        ("newreno", Algorithm::NewReno),
        ("cubic", Algorithm::Cubic),
        ("bbr", Algorithm::Bbr),
        ("bbr-shared", Algorithm::BbrShared),
    ];
}

impl FromStr for Algorithm {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Self::ALL
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, a)| *a)
            .ok_or_else(|| format!("unknown congestion controller '{s}' (newreno, cubic, bbr, bbr-shared)"))
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let name = Self::ALL.iter().find(|(_, a)| a == self).map_or("?", |(n, _)| n);
        f.write_str(name)
    }
}
