//! What the status API shows about a path: [`PathInfo`], a snapshot of its state, estimates
//! and counters.

use super::Session;
use crate::monitor::MonitorState;
use crate::path::{PathId, PathState, PathStats};
use crate::wire::PathStatusKind;
use std::net::SocketAddr;
use std::time::Duration;

impl Session {
    /// A snapshot of one path for status output.
    pub fn path_info(&self, id: PathId) -> Option<PathInfo> {
        let p = self.path(id)?;
        Some(PathInfo {
            id,
            local: p.local,
            remote: p.remote,
            state: p.state,
            status: p.status(),
            srtt: p.rtt.smoothed(),
            min_rtt: p.rtt.min(),
            ack_route: p.rtt.route(),
            rttvar: p.rtt.var(),
            cwnd: p.cc.window(),
            in_flight: p.in_flight,
            stranded: p.stranded,
            pacing_rate: p.pacer.rate(),
            delivery_rate: p.capacity_estimate.latest_delivery_rate(),
            loss_rate: p.monitor.loss_rate,
            jitter: p.monitor.jitter,
            congestion: p.cc.name(),
            shared_bottleneck: p.cc.shared_bottleneck(),
            stats: p.stats.clone(),
            monitor_state: p.monitor_state(),
            capacity: p.capacity(self.last_activity),
            packet_pair: p.capacity_estimate.packet_pair(),
            model: p.cc.bandwidth(),
            impairment_loss: p.monitor.impairment_loss,
            random_losses: p.monitor.random_losses,
            congestion_losses: p.monitor.congestion_losses,
            reported_loss: (p.peer.packets > 0).then_some(p.peer.loss),
            admitted: p.admitted,
            mtu: p.mtu,
            mtu_black_holes: p.pmtu.black_holes,
            weight: p.weight,
            max_rate: p.max_rate,
        })
    }
}

/// What the status API shows about a path.
#[derive(Debug, Clone)]
pub struct PathInfo {
    /// Path id.
    pub id: PathId,
    /// Local address.
    pub local: Option<SocketAddr>,
    /// Peer address.
    pub remote: SocketAddr,
    /// Life-cycle state.
    pub state: PathState,
    /// Usage status.
    pub status: PathStatusKind,
    /// Smoothed RTT.
    pub srtt: Duration,
    /// Minimum RTT.
    pub min_rtt: Duration,
    /// The path whose return leg brings this path's ACKs back (itself when they ride on it),
    /// once samples have settled it.
    pub ack_route: Option<PathId>,
    /// RTT variation.
    pub rttvar: Duration,
    /// Congestion window.
    pub cwnd: u64,
    /// Bytes in flight.
    pub in_flight: u64,
    /// Bytes stranded when the path went silent, not yet acknowledged or declared lost.
    pub stranded: u64,
    /// Pacing rate, bytes/s.
    pub pacing_rate: f64,
    /// Latest delivery rate, bytes/s.
    pub delivery_rate: f64,
    /// Smoothed loss fraction.
    pub loss_rate: f64,
    /// RTT jitter.
    pub jitter: Duration,
    /// Congestion controller name.
    pub congestion: &'static str,
    /// What the controller was last told about sharing its bottleneck with other senders
    /// ([`crate::cc::Controller::shared_bottleneck`]; None for one that does not record it).
    /// The daemon's status shows the session's flag, which every path follows.
    pub shared_bottleneck: Option<bool>,
    /// Counters.
    pub stats: PathStats,
    /// State as the path monitor reports it (probing, active, standby, suspect, down).
    pub monitor_state: MonitorState,
    /// Capacity estimate, bytes/s (saturated delivery rate or packet pair).
    pub capacity: f64,
    /// Latest packet-pair estimate, bytes/s.
    pub packet_pair: Option<f64>,
    /// The congestion controller's bottleneck model (BBR's max-filtered delivery rate),
    /// bytes/s, if it keeps one.
    pub model: Option<f64>,
    /// Loss fraction due to the link itself (losses without a queue).
    pub impairment_loss: f64,
    /// Loss events classed as random.
    pub random_losses: u64,
    /// Loss events classed as congestion.
    pub congestion_losses: u64,
    /// Loss fraction the peer reported in PATH_REPORT (the two-sided monitor), if it did.
    pub reported_loss: Option<f64>,
    /// Path admission's verdict (false: kept in standby).
    pub admitted: bool,
    /// Maximum UDP payload the path carries now (lowered when a black hole was found).
    pub mtu: usize,
    /// Path MTU black holes detected (see `path::mtu`).
    pub mtu_black_holes: u32,
    /// Weighted-round-robin weight (None: automatic).
    pub weight: Option<u32>,
    /// Rate cap, bytes/s (None: none).
    pub max_rate: Option<u64>,
}

#[cfg(test)]
mod tests {
    use crate::crypto::{Seed, StaticSecret};
    use crate::path::PathState;
    use crate::scheduler::PathView;
    use crate::{ClientConfig, Session, SessionConfig, Timestamp};
    use std::time::Duration;

    fn session() -> Session {
        let config = ClientConfig {
            secret: StaticSecret::from_bytes([11; 32]),
            server_key: StaticSecret::from_bytes([22; 32]).public_key(),
            session: SessionConfig::default(),
        };
        let now = Timestamp::from_nanos(1_000_000_000);
        let (local, server) = ("10.0.0.1:4000".parse().unwrap(), "10.9.0.1:443".parse().unwrap());
        Session::connect(&config, now, Some(local), server, Seed::from_u64(1), 1000)
    }

    /// The scheduler's view of path 0 and the status API's, at the session's clock.
    fn both(s: &mut Session) -> (PathView, super::PathInfo) {
        let now = s.last_activity;
        let mut views = Vec::new();
        s.path_views(now, 1200, 0, &mut views);
        (views.remove(0), s.path_info(0).unwrap())
    }

    #[test]
    fn status_and_scheduler_read_the_same_capacity() {
        let mut s = session();
        // Fresh: both take the pacer's rate without its gain.
        let (view, info) = both(&mut s);
        assert_eq!(view.rate, info.capacity);
        assert_eq!(info.capacity, s.paths[0].capacity(s.last_activity));
        // After delivery-rate samples and a packet pair.
        let now = s.last_activity;
        let p = &mut s.paths[0];
        p.capacity_estimate.on_packet_pair(now, 2e6);
        p.capacity_estimate.on_delivery_rate(now, 1.5e6, false);
        let (view, info) = both(&mut s);
        assert_eq!((view.rate, info.capacity), (1.5e6, 1.5e6));
        assert_eq!((info.delivery_rate, info.packet_pair), (1.5e6, Some(2e6)));
        // A policy cap: the scheduler uses the capped estimate, the status shows the estimate
        // and the cap.
        s.paths[0].max_rate = Some(1_000_000);
        let (view, info) = both(&mut s);
        assert_eq!(view.rate, info.capacity.min(info.max_rate.unwrap() as f64));
        assert_eq!((view.rate, info.capacity), (1e6, 1.5e6));
        // Path admission and the secondary-path trigger judge the path by the same figure.
        s.paths[0].state = PathState::Active;
        let now = s.last_activity;
        let (view, _) = both(&mut s);
        assert_eq!(s.admission_candidates(now)[0].rate, view.rate);
        assert_eq!(s.active_capacity(now), view.rate);
        // The silence timer drains what is in flight at the same measurements.
        let p = &mut s.paths[0];
        p.in_flight = 150_000;
        let base = p.silence_threshold() - Duration::from_secs_f64(150_000.0 / 2e6);
        p.in_flight = 0;
        assert_eq!(p.silence_threshold(), base);
    }
}
