//! A path: one 4-tuple of a session, with its own packet numbers, acknowledgements, loss
//! detection, RTT estimate, congestion controller and pacer (seed 004: per-path congestion
//! control, so a loss on one link never slows another).

pub mod arrivals;
pub mod base_rtt;
pub mod capacity;
pub mod judge;
pub mod loss;
pub mod mtu;
pub mod one_way;
pub mod peer_report;
mod queue_bound;
pub mod received;
pub mod rtt;
pub mod sent;
#[cfg(test)]
mod tests;

use crate::cc::delivery::DeliveryRate;
use crate::cc::pacer::Pacer;
use crate::cc::{Algorithm, Controller};
use crate::monitor::{Monitor, MonitorState};
use crate::time::Timestamp;
use crate::wire::PathStatusKind;
use base_rtt::BaseRtt;
use capacity::CapacityEstimate;
use mtu::MtuDiscovery;
use received::Received;
use rtt::RttEstimator;
use sent::{SentPacket, SentPackets};
use std::net::SocketAddr;
use std::time::Duration;

pub use queue_bound::QUEUE_BOUND_MARGIN;

/// Identifies a path within its session (chosen by the client, 0 is the handshake path).
pub type PathId = u8;

/// Where a path is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// Challenge sent, no valid response yet: carries no data.
    Validating,
    /// Validated and answering.
    Active,
    /// Silent for longer than max(200 ms, 3 × smoothed RTT): its in-flight data was moved to
    /// the other paths and it is probed until it answers.
    Suspect,
    /// Abandoned or failed validation; kept only until the session forgets it.
    Closed,
}

/// Counters of one path, published by the status API.
#[derive(Debug, Clone, Default)]
pub struct PathStats {
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP payload bytes received (authenticated packets only).
    pub bytes_received: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets received (authenticated).
    pub packets_received: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// Stream bytes sent on this path that had been sent before (on any path).
    pub retransmitted_bytes: u64,
    /// New stream bytes that arrived on this path (the path's share of the goodput).
    pub stream_bytes_received: u64,
    /// Times the path went suspect.
    pub blackouts: u64,
    /// Datagrams that left on this path (copies included).
    pub datagrams_sent: u64,
    /// Datagrams assigned to this path and dropped in its queue (deadline passed).
    pub datagrams_expired: u64,
    /// Datagrams that arrived on this path (copies included).
    pub datagrams_received: u64,
    /// Validation rounds that ran out of time (a client path keeps retrying: see
    /// `Session::fail_validation`).
    pub validation_failures: u64,
}

/// An outstanding path validation.
#[derive(Debug, Clone, Copy)]
pub struct Challenge {
    /// The token we expect back.
    pub token: [u8; 8],
    /// The address being validated (differs from the path's address during a migration).
    pub remote: SocketAddr,
    /// When it was last sent.
    pub sent: Option<Timestamp>,
    /// How many times it was sent.
    pub tries: u32,
    /// When validation began (it fails if not done within `VALIDATION_TIMEOUT`); a retry
    /// round of a client path begins in the future, and nothing is sent before it.
    pub started: Timestamp,
    /// Bytes received from `remote` since validation began, and bytes sent there: a migration
    /// (RFC 9000 §9.3.1) may send at most three times what came from the new address.
    pub bytes_in: u64,
    /// Bytes sent to `remote` for this validation.
    pub bytes_out: u64,
}

impl Challenge {
    /// A challenge of `remote` with `token`, started at `now`, for a packet of `bytes` that
    /// came from `remote`.
    pub fn new(token: [u8; 8], remote: SocketAddr, now: Timestamp, bytes: u64) -> Self {
        Challenge { token, remote, sent: None, tries: 0, started: now, bytes_in: bytes, bytes_out: 0 }
    }
}

/// One path of a session.
#[derive(Debug)]
pub struct Path {
    /// Path id.
    pub id: PathId,
    /// Local address the path's packets leave from (None: the driver's default).
    pub local: Option<SocketAddr>,
    /// The peer's address.
    pub remote: SocketAddr,
    /// Life-cycle state.
    pub state: PathState,
    /// How we want the path used (set locally, announced with PATH_STATUS).
    pub local_status: PathStatusKind,
    /// How the peer wants the path used.
    pub remote_status: PathStatusKind,
    /// Sequence number of our last PATH_STATUS.
    pub status_seq: u64,
    /// Highest PATH_STATUS sequence number received.
    pub remote_status_seq: Option<u64>,
    /// Next packet number.
    pub next_pn: u64,
    /// Outstanding packets.
    pub sent: SentPackets,
    /// Bytes in flight (in-flight packets not acked, lost or requeued).
    pub in_flight: u64,
    /// Bytes of in-flight packets stranded when the path went silent (their frames moved to
    /// other paths) and not yet acknowledged or declared lost. A slow link's queue still holds
    /// them after it answers again (20 kbit/s: 14.5 kB is 6 s), so what the path may send next,
    /// when it arrives and whether the window is full ([`Path::window_full`]) count them;
    /// congestion control does not.
    pub stranded: u64,
    /// RTT estimate.
    pub rtt: RttEstimator,
    /// The base RTT a pipe is sized from: the minimum, raised after a lasting rise.
    pub base_rtt: BaseRtt,
    /// Forward and return legs from the peer's ACK timestamps.
    pub one_way: one_way::OneWay,
    /// A cap on the capacity: [`Path::queue_bound`] once it bound the estimate with the
    /// window full, then recomputed from each forward sample while the queue stands
    /// ([`Path::on_forward_sample`]).
    queue_cap: Option<f64>,
    /// Whether the cap is kept: the session schedules some traffic by EDPF, which plans
    /// arrival times by the capacity (set by the session before each ACK).
    pub keep_queue_cap: bool,
    /// Congestion controller.
    pub cc: Box<dyn Controller>,
    /// Saved controller state while suspect (blackout freeze).
    pub frozen_cc: Option<Box<dyn Controller>>,
    /// Pacer.
    pub pacer: Pacer,
    /// Delivery-rate counters.
    pub delivery: DeliveryRate,
    /// Receive state.
    pub received: Received,
    /// What arrives on the path, for our PATH_REPORTs (the receiving side of the two-sided
    /// monitor, seed 000).
    pub arrivals: arrivals::Arrivals,
    /// The peer's PATH_REPORTs about our packets on the path (the sending side).
    pub peer: peer_report::PeerReport,
    /// Which loss judge classifies this path's losses.
    pub loss_judge: judge::LossJudge,
    /// When we last sent a PATH_REPORT for this path.
    pub report_sent: Option<Timestamp>,
    /// Received bytes at that report (for the received rate).
    pub report_bytes: u64,
    /// A gap verdict not yet reported.
    pub report_verdict: bool,
    /// Largest packet number acknowledged by the peer.
    pub largest_acked: Option<u64>,
    /// Time-threshold loss timer (RFC 9002 `loss_time`).
    pub loss_time: Option<Timestamp>,
    /// Consecutive probe timeouts.
    pub pto_count: u32,
    /// Probe packets owed after a PTO.
    pub probes_due: u32,
    /// Last time an ack-eliciting packet left.
    pub last_eliciting_sent: Option<Timestamp>,
    /// Last time any packet left.
    pub last_sent: Option<Timestamp>,
    /// Last time an ACK acknowledged something on this path.
    pub last_ack: Option<Timestamp>,
    /// Last time a packet arrived on this path.
    pub last_received: Option<Timestamp>,
    /// Our outstanding validation, if any.
    pub challenge: Option<Challenge>,
    /// Tokens of PATH_CHALLENGEs to answer, with the address they came from.
    pub responses: Vec<([u8; 8], SocketAddr)>,
    /// Maximum UDP payload on this path (lowered by black-hole detection, see `mtu`).
    pub mtu: usize,
    /// Path MTU discovery.
    pub pmtu: MtuDiscovery,
    /// Counters.
    pub stats: PathStats,
    /// Measurements for schedulers and status.
    pub monitor: Monitor,
    /// The capacity estimate and the rate samples it rests on (read it through
    /// [`Path::capacity`]).
    pub capacity_estimate: CapacityEstimate,
    /// When the path was created.
    pub created: Timestamp,
    /// Path admission: false while the path is kept in standby because it would lower the
    /// total (see `scheduler::admission`).
    pub admitted: bool,
    /// When admission last changed its verdict.
    pub admission_changed: Timestamp,
    /// Static weighted-round-robin weight (None: automatic).
    pub weight: Option<u32>,
    /// Most bytes a second this path may carry (the client's link policy; None: no cap).
    pub max_rate: Option<u64>,
}

impl Path {
    /// A new path in `state`.
    pub fn new(
        id: PathId,
        local: Option<SocketAddr>,
        remote: SocketAddr,
        state: PathState,
        algorithm: Algorithm,
        mtu: usize,
        now: Timestamp,
    ) -> Self {
        Path {
            id,
            local,
            remote,
            state,
            local_status: PathStatusKind::Active,
            remote_status: PathStatusKind::Active,
            status_seq: 0,
            remote_status_seq: None,
            next_pn: 0,
            sent: SentPackets::default(),
            in_flight: 0,
            stranded: 0,
            rtt: RttEstimator::default(),
            base_rtt: BaseRtt::default(),
            one_way: one_way::OneWay::default(),
            queue_cap: None,
            keep_queue_cap: false,
            cc: algorithm.build(mtu as u64),
            frozen_cc: None,
            pacer: Pacer::new(mtu as u64),
            delivery: DeliveryRate::default(),
            received: Received::default(),
            arrivals: Default::default(),
            peer: Default::default(),
            loss_judge: Default::default(),
            report_sent: None,
            report_bytes: 0,
            report_verdict: false,
            largest_acked: None,
            loss_time: None,
            pto_count: 0,
            probes_due: 0,
            last_eliciting_sent: None,
            last_sent: None,
            last_ack: None,
            last_received: None,
            challenge: None,
            responses: Vec::new(),
            mtu,
            pmtu: MtuDiscovery::new(mtu),
            stats: PathStats::default(),
            monitor: Monitor::default(),
            capacity_estimate: CapacityEstimate::default(),
            created: now,
            admitted: true,
            admission_changed: now,
            weight: None,
            max_rate: None,
        }
    }

    /// The path's state as the monitor reports it.
    pub fn monitor_state(&self) -> MonitorState {
        match self.state {
            PathState::Validating => MonitorState::Probing,
            PathState::Closed => MonitorState::Down,
            PathState::Suspect => MonitorState::Suspect,
            PathState::Active if !self.admitted || self.status() == PathStatusKind::Standby => {
                MonitorState::Standby
            }
            PathState::Active if !self.rtt.has_sample() || !self.capacity_estimate.measured() => {
                MonitorState::Probing
            }
            PathState::Active => MonitorState::Active,
        }
    }

    /// The path's capacity in bytes/s: [`CapacityEstimate::estimate`] with the controller's
    /// bottleneck model and the pacer's rate. Every reader of a path's capacity comes here
    /// (or to [`Path::usable_capacity`]).
    ///
    /// Behind a token-bucket shaper ([`crate::monitor::Monitor::long_train`]) the model is
    /// left out: two packets sent together after a pause pass the bucket at line rate, a
    /// delivery-rate sample of them reads two packets per round trip, and BBR's max filter
    /// keeps that for ten round trips (the lab's 50 kbit/s link, 10 ms RTT: a model of
    /// 1.6–3.3 Mbit/s, which EDPF took for the path's rate and queued 4 s of data on it).
    ///
    /// It is at most what the path's own queue allows ([`Path::queue_bound`]) and, under EDPF,
    /// at most the cap that queue left ([`Path::on_forward_sample`]).
    pub fn capacity(&self, now: Timestamp) -> f64 {
        let estimate = self.unbounded_capacity(now);
        let bound = [self.queue_bound(), self.queue_cap].into_iter().flatten().reduce(f64::min);
        bound.map_or(estimate, |b| estimate.min(b).max(1.0))
    }

    /// The capacity estimate before [`Path::queue_bound`] and the cap it leaves.
    fn unbounded_capacity(&self, now: Timestamp) -> f64 {
        let model = if self.monitor.long_train { None } else { self.cc.bandwidth() };
        self.capacity_estimate.estimate(now, model, self.pacer.rate())
    }

    /// What this path has shown it carries ([`CapacityEstimate::carried`]), under the
    /// client's cap if it has one.
    pub fn carried_capacity(&self, now: Timestamp) -> f64 {
        let model = if self.monitor.long_train { None } else { self.cc.bandwidth() };
        let rate = self.capacity_estimate.carried(now, model);
        self.max_rate.map_or(rate, |cap| rate.min(cap as f64))
    }

    /// The rate a packet crosses the path's bottleneck at, bytes/s: the capacity estimate
    /// while the path has been saturated within the estimate's window, else None. An
    /// application-limited path's estimate is a packet pair or a lower bound, which jitter
    /// and idleness make read far off (a 2 Mbit/s path with 60 ms of jitter under a 500 kbit/s
    /// flow read 0.33 to 11,600 Mbit/s). What the clock offset takes transmission out at
    /// ([`one_way::OneWay::offset`]).
    pub fn wire_rate(&self, now: Timestamp) -> Option<f64> {
        self.capacity_estimate.saturated(now).then(|| self.capacity(now))
    }

    /// The clock offset to the peer (`one_way::OneWay::offset`) over the active paths among
    /// `paths`: what the scheduler's views and the ACK-carrier ranking read the legs with.
    pub fn clock_offset(paths: &[Path], now: Timestamp) -> Option<i64> {
        let active = paths.iter().filter(|p| p.state == PathState::Active);
        one_way::OneWay::offset(active.map(|p| (&p.one_way, || p.wire_rate(now))))
    }

    /// The capacity this path may use: its estimate, under the client's cap if it has one.
    pub fn usable_capacity(&self, now: Timestamp) -> f64 {
        let rate = self.capacity(now);
        self.max_rate.map_or(rate, |cap| rate.min(cap as f64))
    }

    /// The packet pair's rate under the client's cap, bytes/s, if taken within the estimate's
    /// window ([`CapacityEstimate::recent_pair`]).
    pub fn usable_pair(&self, now: Timestamp) -> Option<f64> {
        let pair = self.capacity_estimate.recent_pair(now)?;
        Some(self.max_rate.map_or(pair, |cap| pair.min(cap as f64)))
    }

    /// Anti-amplification (RFC 9000 §8): before the server has validated a path it sends at
    /// most three times what it received on it. Returns the bytes it may still send.
    pub fn amplification_budget(&self, server: bool) -> usize {
        if server && self.state == PathState::Validating {
            (self.stats.bytes_received * 3).saturating_sub(self.stats.bytes_sent) as usize
        } else {
            usize::MAX
        }
    }

    /// What a validation may still send now: the path's anti-amplification budget and, for a
    /// migration to an unvalidated address, three times what came from that address (RFC 9000
    /// §9.3.1: "an endpoint MUST limit the amount of data it sends to the unvalidated address
    /// to three times the amount of data received from that address").
    pub fn challenge_budget(&self, server: bool) -> usize {
        let path = self.amplification_budget(server);
        match self.challenge {
            Some(c) if c.remote != self.remote => {
                path.min((c.bytes_in * 3).saturating_sub(c.bytes_out) as usize)
            }
            _ => path,
        }
    }

    /// True when the path may carry data (validated, answering, not abandoned).
    pub fn is_usable(&self) -> bool {
        self.state == PathState::Active
    }

    /// The effective usage status: the stricter of ours and the peer's.
    pub fn status(&self) -> PathStatusKind {
        use PathStatusKind::*;
        match (self.local_status, self.remote_status) {
            (Standby, _) | (_, Standby) => Standby,
            (Backup, _) | (_, Backup) => Backup,
            (Secondary, _) | (_, Secondary) => Secondary,
            _ => Active,
        }
    }

    /// Bounds (or frees) the queue this path keeps at its bottleneck: see
    /// [`crate::cc::Controller::set_latency_bound`].
    pub fn set_latency_bound(&mut self, on: bool) {
        self.cc.set_latency_bound(on);
    }

    /// Tells the path's controller whether other senders may share its bottleneck
    /// ([`crate::cc::Controller::set_shared_bottleneck`]).
    pub fn set_shared_bottleneck(&mut self, shared: bool) {
        self.cc.set_shared_bottleneck(shared);
    }

    /// The path may carry datagrams of up to `bytes` (its interface's limit, or one that
    /// large arrived on it), within `most`: its MTU search may rise to that
    /// ([`mtu::MtuDiscovery::raise_ceiling`]).
    pub fn raise_mtu_ceiling(&mut self, bytes: usize, most: usize) {
        self.pmtu.raise_ceiling(bytes.min(most), self.mtu);
    }

    /// A packet of `size` bytes carrying stream data was acknowledged or arrived: the path
    /// carries bulk data ([`mtu::MtuDiscovery::on_stream_packet`]).
    pub fn on_stream_packet(&mut self, size: usize) {
        self.pmtu.on_stream_packet(size, self.mtu);
    }

    /// The congestion window, in bytes.
    pub fn window(&self) -> u64 {
        self.cc.window()
    }

    /// Room left in the congestion window, in bytes.
    pub fn window_room(&self) -> u64 {
        self.cc.window().saturating_sub(self.outstanding())
    }

    /// Bytes the path's link still holds or may hold: in flight and stranded.
    pub fn outstanding(&self) -> u64 {
        self.in_flight + self.stranded
    }

    /// Updates the pacer's rate from the controller (call after acks and losses).
    pub fn update_pacing(&mut self, now: Timestamp) {
        let rate = self.cc.pacing_rate(&self.rtt).unwrap_or_else(|| {
            // RFC 9002 §7.7: "rate = N * congestion_window / smoothed_rtt" with N = 1.25
            // (2 in slow start, so that pacing does not slow the doubling).
            let n = if self.cc.in_slow_start() { 2.0 } else { 1.25 };
            let srtt = self.rtt.smoothed().as_secs_f64().max(1e-4);
            n * self.cc.window() as f64 / srtt
        });
        // A link capped by policy (a metered link's throttle) never sends faster than its cap.
        let rate = self.max_rate.map_or(rate, |cap| rate.min(cap as f64));
        self.pacer.set_rate(now, rate, self.mtu as u64);
    }

    /// When a packet of `bytes` may leave on this path: None while the window is full.
    pub fn ready_at(&mut self, now: Timestamp, bytes: u64) -> Option<Timestamp> {
        self.ready_at_over(now, bytes, 0)
    }

    /// As [`Path::ready_at`], for a packet that may exceed the window by `overdraft` bytes: a
    /// latency-sensitive datagram does not wait for an ACK behind bulk data that filled the
    /// window (its few bytes cannot congest the path; QUIC's probe packets pass a full window
    /// the same way, RFC 9002 §7.5).
    pub fn ready_at_over(&mut self, now: Timestamp, bytes: u64, overdraft: u64) -> Option<Timestamp> {
        let outstanding = self.outstanding();
        if outstanding + bytes > self.cc.window() + overdraft && outstanding > 0 {
            return None;
        }
        Some(self.pacer.release_time(now, bytes))
    }

    /// Allocates the next packet number.
    pub fn take_pn(&mut self) -> u64 {
        let pn = self.next_pn;
        self.next_pn += 1;
        pn
    }

    /// Records a packet that just left.
    pub fn on_packet_sent(&mut self, mut p: SentPacket) {
        let now = p.sent_time;
        self.stats.bytes_sent += u64::from(p.size);
        self.stats.packets_sent += 1;
        self.last_sent = Some(now);
        if p.in_flight {
            p.rate = self.delivery.on_sent(now, self.in_flight);
            self.in_flight += u64::from(p.size);
            self.cc.on_sent(now, u64::from(p.size), self.in_flight);
            self.pacer.on_sent(now, u64::from(p.size));
        }
        if p.ack_eliciting {
            self.last_eliciting_sent = Some(now);
        }
        self.sent.insert(p);
    }

    /// The time without acknowledgements after which the path is suspected:
    /// max(200 ms, 3 × smoothed RTT) (seed 003's fast blackout detection), plus the time the
    /// path needs to transmit what is in flight — on a slow link a single full packet takes
    /// longer than 200 ms, and its acknowledgement cannot come sooner.
    pub fn silence_threshold(&self) -> Duration {
        let rate = self.capacity_estimate.drain_rate();
        let transmit = if rate > 0.0 {
            Duration::from_secs_f64((self.outstanding() as f64 / rate).min(60.0))
        } else {
            Duration::ZERO
        };
        (3 * self.rtt.smoothed()).max(crate::timing::SILENCE_MIN) + transmit
    }

    /// When the path will count as silent, if it has ack-eliciting data outstanding.
    pub fn silence_deadline(&self) -> Option<Timestamp> {
        if self.state != PathState::Active {
            return None;
        }
        let oldest = self.sent.oldest_live()?.sent_time;
        let since = self.last_ack.map_or(oldest, |a| a.max(oldest));
        Some(since + self.silence_threshold())
    }
}
