//! Schedulers: which path (or paths, or none) carries the next packet.
//!
//! A scheduler sees a [`PathView`] of every path — state, RTT, window, when its pacer lets the
//! next packet go, estimated rate, loss, what is already queued on it — and a [`PacketInfo`]
//! about what is to be sent, and returns a [`Decision`]. One is chosen per session and,
//! optionally, one per traffic class; either may be swapped at any time without disturbing
//! streams (a swap only changes where future packets go).
//!
//! | name | file | rule |
//! | --- | --- | --- |
//! | `random` | [`random`] | a uniformly random path per packet (seed 000) |
//! | `rr` | [`round_robin`] | paths in strict turn (seed 000; TEQL in seed 002) |
//! | `wrr` | [`wrr`] | surplus round-robin, static or auto weights (seeds 000, 002) |
//! | `minrtt` | [`minrtt`] | lowest RTT among paths that can send now (Linux MPTCP) |
//! | `edpf` | [`edpf`] | earliest delivery path first (seed 004) |
//! | `redundant` | [`redundant`] | a copy on every path, or on the best N (seed 003) |
//! | `backup` | [`backup`] | backup paths only when the others are down or saturated |
//! | `lps`, `fps`, `ips` | [`lps`], [`fps`], [`ips`] on [`priority`] | classes onto paths by importance and reliability (seed 000) |
//! | `deadline` | [`deadline`] | drop at the sender what cannot arrive in time (seed 001 MMTP) |
//!
//! Two families behave differently when their chosen path cannot send yet:
//!
//! * **Striping** schedulers (`random`, `rr`, `wrr`, `lps`, `fps`, `ips`) decide by their rule
//!   alone, as the papers' stripers do. A datagram they assign to a busy path waits in that
//!   path's queue (bounded by its class deadline); stream data waits for the path.
//! * **Work-conserving** schedulers (`minrtt`, `edpf`, `backup`, `deadline`, `redundant`) look
//!   at when each path can send and where a packet would arrive first.
//!
//! When path admission ([`admission`], off by default) is on, every scheduler but `redundant`
//! and the priority-aware ones respects it for stream data: a path the monitor put in standby
//! carries no stream data while others can ([`eligible_for`]).

pub mod admission;
pub mod backup;
pub mod deadline;
pub mod edpf;
pub mod fps;
pub mod ips;
pub mod lps;
pub mod minrtt;
pub mod priority;
pub mod random;
pub mod redundant;
pub mod round_robin;
mod surplus;
pub mod wrr;

use crate::path::PathId;
use crate::time::Timestamp;
use crate::wire::PathStatusKind;
use smallvec::SmallVec;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// The paths one scheduling decision considers, kept on the stack: a decision per packet must
/// not allocate (issue 13); sessions rarely have more than eight paths.
pub type Candidates<'a> = SmallVec<[&'a PathView; 8]>;

/// What a scheduler may know about one path.
#[derive(Debug, Clone)]
pub struct PathView {
    /// Path id.
    pub id: PathId,
    /// Validated and answering (not suspect, not validating).
    pub usable: bool,
    /// How the path is to be used.
    pub status: PathStatusKind,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Base RTT: the minimum's floor ([`crate::path::rtt::RttEstimator::floor`]), raised after
    /// a lasting rise of the path's base delay ([`crate::path::base_rtt`]). What EDPF sizes a
    /// pipe from, and what the one-way delay starts from.
    pub min_rtt: Duration,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window, bytes.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// When a packet of the intended size may leave (pacing); None while the window is full.
    pub ready_at: Option<Timestamp>,
    /// Estimated path capacity, bytes/s: the path's one estimate under its policy cap
    /// ([`crate::path::Path::usable_capacity`], see [`crate::path::capacity`]).
    pub rate: f64,
    /// The packet pair's rate under the path's policy cap, bytes/s (seed 001 §4.1: a direct
    /// measurement of the bottleneck's spacing); None unless one completed within the
    /// capacity estimate's window.
    pub pair: Option<f64>,
    /// Smoothed loss fraction.
    pub loss_rate: f64,
    /// Maximum packet size.
    pub mtu: usize,
    /// Path admission (seeds 000, 002): false while the monitor keeps the path in standby
    /// because using it would lower the total.
    pub admitted: bool,
    /// Estimated one-way delay to the peer, what [`PathView::arrival`] adds (deadlines, loss
    /// fetching, EDPF's other readers): [`PathView::measured_delay`] once both legs are
    /// measured, else half the base RTT (corrected for acknowledgements that travel on another
    /// path) plus what stands in the queue beyond the pipe.
    pub one_way_delay: Duration,
    /// The one-way delay from the legs measured with the peer's ACK timestamps: the forward
    /// leg, or the queue ahead drained when one stands, without transmission
    /// (`session::scheduling::arrival_delay`); None until both legs are measured. EDPF places
    /// stream data by it with a late margin ([`edpf::planned_arrival`]): it compares paths,
    /// and this estimate holds no return route the peer chose.
    pub measured_delay: Option<Duration>,
    /// Bytes already committed to this path and waiting for its pacer (queued datagrams,
    /// redundant copies).
    pub queued_bytes: u64,
    /// Static weighted-round-robin weight; None: weighted automatically.
    pub weight: Option<u32>,
    /// How much the one-way delay varies from packet to packet: as the receiver measured it
    /// (RFC 3550 §6.4.1 inter-arrival jitter, reported in PATH_REPORT: seed 000's two-sided
    /// channel monitor) while receiver reports are on and fresh, else the mean deviation of
    /// the forward samples the peer's ACK timestamps give
    /// ([`crate::path::one_way::OneWay::forward_variation`]), else, before those, half the
    /// sender's RTT variation (RFC 6298's RTTVAR, which holds both directions).
    pub jitter: Duration,
}

impl PathView {
    /// True when a packet can leave on this path at `now`.
    pub fn ready(&self, now: Timestamp) -> bool {
        self.usable && self.queued_bytes == 0 && self.ready_at.is_some_and(|t| t <= now)
    }

    /// True when the path is eligible for ordinary data.
    pub fn carries_data(&self) -> bool {
        self.usable && self.status == PathStatusKind::Active
    }

    /// Seconds a packet of `bytes` takes at the path's rate.
    pub fn serialization(&self, bytes: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 / self.rate.max(1.0))
    }

    /// The rate the path can send at now, bytes/s: its capacity, or a window per round trip
    /// when the congestion window is the tighter limit (a controller probing its minimum RTT,
    /// a window cut after a loss).
    pub fn send_rate(&self) -> f64 {
        let window_rate = self.cwnd as f64 / self.srtt.as_secs_f64().max(1e-4);
        self.rate.min(window_rate).max(1.0)
    }

    /// Seconds the path needs to send `bytes` at its send rate.
    pub fn send_time(&self, bytes: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 / self.send_rate())
    }

    /// When a packet of `bytes` handed to this path now would leave: when its pacer and window
    /// allow, behind what is already queued on it.
    pub fn departure(&self, now: Timestamp, bytes: u64) -> Timestamp {
        let start = match self.ready_at {
            Some(t) => t.max(now),
            // Window full: it opens as acknowledgements return, at the path's send rate.
            None => now + self.send_time((self.in_flight + bytes).saturating_sub(self.cwnd).max(bytes)),
        };
        start + self.send_time(self.queued_bytes)
    }

    /// When a packet of `bytes` handed to this path now would arrive at the peer (seed 004's
    /// EDPF estimate): departure + one-way delay + transmission time at the bottleneck.
    pub fn arrival(&self, now: Timestamp, bytes: u64) -> Timestamp {
        self.departure(now, bytes) + self.one_way_delay + self.serialization(bytes)
    }
}

/// What is about to be sent.
#[derive(Debug, Clone)]
pub struct PacketInfo {
    /// Traffic class of the most important content.
    pub class: u8,
    /// Its priority (0 most important).
    pub priority: u8,
    /// A datagram deadline, if the content has one.
    pub deadline: Option<Timestamp>,
    /// Packet size in bytes.
    pub bytes: usize,
    /// The content is a retransmission (or control frames).
    pub retransmit: bool,
    /// The content is a datagram: a scheduler may commit it to a path that cannot send yet
    /// (it then waits in that path's queue).
    pub datagram: bool,
    /// New stream data available beyond this packet, in packets: how far `Decision::Ahead`
    /// may reach.
    pub ahead_packets: u32,
    /// Bytes waiting to be sent in total (stream data not yet sent, queued datagrams).
    pub backlog_bytes: u64,
    /// The stream's data queued for retransmission, in packets (this one included when it is
    /// one): it leaves before the stream's new data.
    pub retransmit_packets: u32,
}

/// A scheduler's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Send on this path. If it cannot send now, a datagram waits in the path's queue; any
    /// other content waits until the path can send.
    Send(PathId),
    /// Send on the first path now and a copy on each of the others (copies wait in their
    /// paths' queues when those cannot send yet).
    Redundant(SmallVec<[PathId; 4]>),
    /// Send on this path (which can send now) new stream data that lies this many packets
    /// ahead of the next in-order data: the skipped packets will leave on faster paths and
    /// arrive first (EDPF over per-path queues, computed lazily — seed 004).
    Ahead(PathId, u32),
    /// Nothing can leave now; try again at this time (None: when an ACK opens a window).
    Wait(Option<Timestamp>),
    /// The content cannot arrive in time on any path, or its class is not carried: drop it at
    /// the sender.
    Drop,
}

/// What a scheduler may know about one traffic class.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassView {
    /// Class id.
    pub class: u8,
    /// Priority, 0 most important.
    pub priority: u8,
    /// Offered rate, bytes/s, averaged over about a second (infinite for stream classes,
    /// which take what they are given).
    pub rate: f64,
    /// Peak rate, bytes/s: the busiest 100 ms of the last second.
    pub peak_rate: f64,
}

/// A packet scheduler.
pub trait Scheduler: fmt::Debug + Send + Sync {
    /// Name as used on the command line.
    fn name(&self) -> &'static str;
    /// Chooses where the next packet goes.
    fn select(&mut self, now: Timestamp, paths: &[PathView], packet: &PacketInfo) -> Decision;
    /// The traffic classes and their measured rates (called about every 100 ms while
    /// datagrams flow). Schedulers that allocate paths to classes use it; others ignore it.
    fn on_classes(&mut self, _now: Timestamp, _classes: &[ClassView]) {}
}

/// The paths eligible for data: active admitted ones; backup ones when no active path is
/// usable; paths left out by admission when nothing else is usable (the common rule most
/// schedulers apply first).
pub fn eligible(paths: &[PathView]) -> impl Iterator<Item = &PathView> {
    let any_admitted = paths.iter().any(|p| p.carries_data() && p.admitted);
    usable_for_data(paths).filter(move |p| p.admitted || !any_admitted)
}

/// The paths eligible for `packet`: [`eligible`] for stream data and control; for a datagram
/// admission does not apply ([`usable_for_data`]). Admission protects the goodput of reliable
/// transfers (seeds 000 and 002 reason about TCP); a datagram flow only gains capacity from
/// another path, and its loss per path is what the priority-aware schedulers weigh.
/// (One iterator type for both, so nothing is boxed: it runs for every packet.)
pub fn eligible_for<'a>(
    paths: &'a [PathView],
    packet: &PacketInfo,
) -> impl Iterator<Item = &'a PathView> + 'a {
    let datagram = packet.datagram;
    let any_admitted = !datagram && paths.iter().any(|p| p.carries_data() && p.admitted);
    usable_for_data(paths).filter(move |p| datagram || p.admitted || !any_admitted)
}

/// Like [`eligible`] but ignoring admission: schedulers that choose their own subset of paths
/// (redundant, priority-aware) start from here. (A secondary path reaches a scheduler as
/// `Active` while the session engages it and as `Secondary` otherwise, which carries nothing.)
pub fn usable_for_data(paths: &[PathView]) -> impl Iterator<Item = &PathView> {
    let any_active = paths.iter().any(|p| p.carries_data());
    paths.iter().filter(move |p| {
        p.usable
            && match p.status {
                PathStatusKind::Active => true,
                PathStatusKind::Backup => !any_active,
                PathStatusKind::Standby | PathStatusKind::Secondary => false,
            }
    })
}

/// The lowest-RTT path among `paths` that can send now (ties to the lower id): min-RTT's pick.
pub fn fastest_ready<'a>(
    now: Timestamp,
    paths: impl IntoIterator<Item = &'a PathView>,
) -> Option<&'a PathView> {
    paths.into_iter().filter(|p| p.ready(now)).min_by_key(|p| (p.srtt, p.id))
}

/// `Wait` until the earliest time an eligible path can send.
pub fn wait_for<'a>(paths: impl Iterator<Item = &'a PathView>) -> Decision {
    Decision::Wait(paths.filter(|p| p.queued_bytes == 0).filter_map(|p| p.ready_at).min())
}

/// The answer of a striping scheduler that chose `path` by its own rule: send there; for
/// stream content on a path that cannot send yet, wait for it. Returns whether the choice was
/// consumed (the caller then advances its turn).
pub fn striped(now: Timestamp, path: &PathView, packet: &PacketInfo) -> (Decision, bool) {
    if packet.datagram || path.ready(now) {
        (Decision::Send(path.id), true)
    } else if path.queued_bytes > 0 {
        // Its queue drains first; it is re-examined after every send.
        (Decision::Wait(path.ready_at.filter(|t| *t > now)), false)
    } else {
        (Decision::Wait(path.ready_at), false)
    }
}

/// The schedulers braid knows, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kind {
    /// A uniformly random path per packet.
    Random,
    /// Strict round-robin.
    RoundRobin,
    /// Weighted (surplus) round-robin.
    Wrr,
    /// Lowest RTT first.
    MinRtt,
    /// Earliest delivery path first: the default (in the lab, 0 % of 100 ms intervals below
    /// half the mean on lab/lossy.toml both ways, where min-RTT had 2.2 % down and 7.7 % up;
    /// bench/smoothness.py).
    #[default]
    Edpf,
    /// Copies on every path (0) or on the best N paths.
    Redundant(u8),
    /// Backup paths only when needed.
    Backup,
    /// Layer-priority striping.
    Lps,
    /// Frame-priority striping.
    Fps,
    /// Independent-path striping.
    Ips,
    /// Deadline-aware (drops what cannot arrive in time).
    Deadline,
}

impl Kind {
    /// Every scheduler with its command-line name and a one-line description.
    pub const ALL: [(&'static str, Kind, &'static str); 11] = [
        ("random", Kind::Random, "a uniformly random path per packet (seed 000)"),
        ("rr", Kind::RoundRobin, "paths in strict turn (seed 000)"),
        (
            "wrr",
            Kind::Wrr,
            "surplus round-robin by weight: --weights, or auto from measured capacity (seed 002)",
        ),
        ("minrtt", Kind::MinRtt, "lowest smoothed RTT among paths that can send now"),
        ("edpf", Kind::Edpf, "earliest delivery path first, in-order arrival (seed 004)"),
        ("redundant", Kind::Redundant(0), "a copy on every path; redundant:N on the best N (seed 003)"),
        ("backup", Kind::Backup, "backup paths only when the others are down or saturated"),
        ("lps", Kind::Lps, "layer-priority striping: base layer on the most reliable paths (seed 000)"),
        ("fps", Kind::Fps, "frame-priority striping: I>P>B classes by peak rate (seed 000)"),
        ("ips", Kind::Ips, "independent-path striping: one path per class (seed 000)"),
        ("deadline", Kind::Deadline, "drop at the sender what cannot arrive by its deadline (seed 001)"),
    ];

    /// A fresh scheduler of this kind (random choices from a fixed seed).
    pub fn build(self) -> Box<dyn Scheduler> {
        self.build_seeded(0x5eed)
    }

    /// A fresh scheduler of this kind whose random choices derive from `seed`.
    pub fn build_seeded(self, seed: u64) -> Box<dyn Scheduler> {
        match self {
            Kind::Random => Box::new(random::Random::new(seed)),
            Kind::RoundRobin => Box::new(round_robin::RoundRobin::default()),
            Kind::Wrr => Box::new(wrr::Wrr::default()),
            Kind::MinRtt => Box::new(minrtt::MinRtt),
            Kind::Edpf => Box::new(edpf::Edpf),
            Kind::Redundant(n) => Box::new(redundant::Redundant::new(n)),
            Kind::Backup => Box::new(backup::Backup),
            Kind::Lps => Box::new(lps::lps()),
            Kind::Fps => Box::new(fps::fps()),
            Kind::Ips => Box::new(ips::ips()),
            Kind::Deadline => Box::new(deadline::DeadlineAware),
        }
    }

    /// Its code in a POLICY frame: the index in [`Kind::ALL`] and the parameter
    /// (`redundant:N`'s N).
    pub fn code(self) -> (u8, u8) {
        let (base, param) = match self {
            Kind::Redundant(n) => (Kind::Redundant(0), n),
            k => (k, 0),
        };
        let i = Self::ALL.iter().position(|(_, k, _)| *k == base).expect("every kind is listed");
        (i as u8, param)
    }

    /// The kind of a POLICY code (None: unknown or a bad parameter).
    pub fn from_code(code: u8, param: u8) -> Option<Kind> {
        match Self::ALL.get(usize::from(code))?.1 {
            Kind::Redundant(_) if param == 1 => None,
            Kind::Redundant(_) => Some(Kind::Redundant(param)),
            k if param == 0 => Some(k),
            _ => None,
        }
    }

    /// Command-line name.
    pub fn name(self) -> &'static str {
        let base = match self {
            Kind::Redundant(_) => Kind::Redundant(0),
            k => k,
        };
        Self::ALL.iter().find(|(_, k, _)| *k == base).map_or("?", |(n, _, _)| n)
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let names = || Self::ALL.iter().map(|(n, _, _)| *n).collect::<Vec<_>>().join(", ");
        if let Some(n) = s.strip_prefix("redundant:") {
            return match n.parse::<u8>() {
                Ok(n) if n >= 2 => Ok(Kind::Redundant(n)),
                _ => Err(format!("'{s}': redundant:N needs N of at least 2 (copies on the best N paths)")),
            };
        }
        Self::ALL
            .iter()
            .find(|(n, _, _)| n.eq_ignore_ascii_case(s))
            .map(|(_, k, _)| *k)
            .ok_or_else(|| format!("unknown scheduler '{s}' (one of: {})", names()))
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kind::Redundant(n) if *n > 0 => write!(f, "redundant:{n}"),
            k => f.write_str(k.name()),
        }
    }
}

/// A small deterministic generator (SplitMix64) for schedulers that choose at random.
#[derive(Debug, Clone)]
pub struct SplitMix(u64);

impl SplitMix {
    /// A generator from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    use super::*;

    /// A usable active path with the given id, RTT in ms and readiness (nanoseconds).
    pub fn view(id: PathId, rtt_ms: u64, ready: Option<u64>) -> PathView {
        PathView {
            id,
            usable: true,
            status: PathStatusKind::Active,
            srtt: Duration::from_millis(rtt_ms),
            min_rtt: Duration::from_millis(rtt_ms),
            rttvar: Duration::ZERO,
            cwnd: 100_000,
            in_flight: 0,
            ready_at: ready.map(Timestamp::from_nanos),
            rate: 1e6,
            pair: None,
            loss_rate: 0.0,
            mtu: 1452,
            admitted: true,
            one_way_delay: Duration::from_millis(rtt_ms / 2),
            measured_delay: None,
            queued_bytes: 0,
            weight: None,
            jitter: Duration::ZERO,
        }
    }

    /// A path of `mbit` Mbit/s and `owd_ms` one-way delay, ready at time 0.
    pub fn link(id: PathId, mbit: f64, owd_ms: u64) -> PathView {
        PathView { rate: mbit * 1e6 / 8.0, ..view(id, 2 * owd_ms, Some(0)) }
    }

    /// A 1200-byte stream packet of class 0.
    pub fn packet() -> PacketInfo {
        PacketInfo {
            class: 0,
            priority: 0,
            deadline: None,
            bytes: 1200,
            retransmit: false,
            datagram: false,
            ahead_packets: 0,
            backlog_bytes: 1200,
            retransmit_packets: 0,
        }
    }

    /// A 1000-byte datagram of `class`.
    pub fn datagram(class: u8) -> PacketInfo {
        PacketInfo { class, bytes: 1000, datagram: true, ..packet() }
    }

    /// The path of a `Send` decision (panics otherwise).
    pub fn sent(d: Decision) -> PathId {
        match d {
            Decision::Send(p) => p,
            other => panic!("expected Send, got {other:?}"),
        }
    }

    /// Timestamp at `ms` milliseconds.
    pub fn ms(ms: u64) -> Timestamp {
        Timestamp::from_nanos(ms * 1_000_000)
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn names_round_trip() {
        for (name, kind, _) in Kind::ALL {
            assert_eq!(name.parse::<Kind>().unwrap(), kind);
            assert_eq!(kind.to_string(), name);
        }
        assert_eq!("redundant:2".parse::<Kind>().unwrap(), Kind::Redundant(2));
        assert_eq!(Kind::Redundant(2).to_string(), "redundant:2");
        assert_eq!(Kind::Redundant(2).name(), "redundant");
        assert!("redundant:1".parse::<Kind>().is_err());
        assert!("fastest".parse::<Kind>().unwrap_err().contains("edpf"));
        for (name, kind, _) in Kind::ALL {
            assert_eq!(kind.build().name(), name);
        }
    }

    #[test]
    fn admission_leaves_standby_paths_out_unless_nothing_else() {
        let mut paths = vec![view(0, 10, Some(0)), view(1, 10, Some(0))];
        paths[1].admitted = false;
        assert_eq!(eligible(&paths).map(|p| p.id).collect::<Vec<_>>(), vec![0]);
        assert_eq!(usable_for_data(&paths).count(), 2);
        paths[0].usable = false;
        assert_eq!(eligible(&paths).map(|p| p.id).collect::<Vec<_>>(), vec![1]);
    }

    #[test]
    fn arrival_counts_queue_delay_and_transmission() {
        let mut p = link(0, 8.0, 10); // 1 MB/s: 1000 bytes = 1 ms
        assert_eq!(p.arrival(ms(0), 1000), ms(11));
        p.queued_bytes = 5000;
        assert_eq!(p.arrival(ms(0), 1000), ms(16));
        p.queued_bytes = 0;
        p.ready_at = Some(ms(3));
        assert_eq!(p.arrival(ms(0), 1000), ms(14));
        assert!(!p.ready(ms(2)) && p.ready(ms(3)));
    }

    #[test]
    fn splitmix_is_uniform_enough() {
        let mut r = SplitMix::new(3);
        let mut counts = [0u32; 4];
        for _ in 0..4000 {
            counts[r.below(4)] += 1;
        }
        assert!(counts.iter().all(|&c| (900..1100).contains(&c)), "{counts:?}");
    }
}
