//! Many sessions through one link: N clients, each one [`Session`] with one path, upload a
//! bulk stream to one server [`Endpoint`] through the same simulated link (one queue, one
//! rate), as the households behind an ISP's shaper or the users of one server's uplink do.
//! What it measures is how evenly their congestion controllers share that link (issue 13:
//! "100 active sessions share a bottleneck within 10 % of each other"), in virtual time and
//! from a seed, where `braid-emu`'s `many_sessions` example measures the same with real
//! sockets, in both directions.
//!
//! The server host counts its sessions receiving data every [`COUNT_EVERY`], as the daemon
//! does (`braid_core::crowd`), and tells each client whether others upload too (a SHARING
//! frame): a `bbr-shared` client drains as a crowd's only once told.

use crate::harness::{seeded_key, ts, MAX_IDLE_STEPS};
use crate::link::LinkSpec;
use crate::net::{Net, SERVER};
use crate::workload::Bulk;
use braid_core::crowd::{self, Crowd};
use braid_core::{
    ClientConfig, DatagramEvent, Endpoint, Seed, ServerConfig, Session, SessionConfig, StaticSecret,
    Timestamp,
};
use bytes::BytesMut;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::Duration;

/// Bytes in front of each datagram on the simulated wire: the index of the session it
/// belongs to (the network has one link, so the link index cannot tell them apart).
const TAG: usize = 2;

/// How often the server host counts its busy sessions (the daemon's status refresh).
pub const COUNT_EVERY: Duration = Duration::from_millis(500);

/// Sessions a crowd holds at most (the tag's range, and client addresses in 10.1.0.0/16).
pub const MAX_SESSIONS: usize = 4096;

/// One crowd run.
#[derive(Debug, Clone)]
pub struct CrowdConfig {
    /// Sessions, each one client with one path.
    pub sessions: usize,
    /// The link they all share.
    pub link: LinkSpec,
    /// Virtual run time.
    pub duration: Duration,
    /// Session `i` connects at `i × stagger` (clients never all start in the same instant);
    /// the last must start by half the duration, where the measurement begins.
    pub stagger: Duration,
    /// The run's seed: keys, connection ids and the link's randomness derive from it.
    pub seed: u64,
    /// Every session's configuration (congestion control, scheduler, …).
    pub session: SessionConfig,
}

/// What a crowd run measured.
#[derive(Debug, Clone)]
pub struct CrowdReport {
    /// Each session's goodput over the second half of the run, bit/s.
    pub goodput_bps: Vec<f64>,
    /// The largest deviation of a session's goodput from the mean, as a share of the mean.
    pub max_deviation: f64,
    /// Jain's fairness index of the goodputs (1 = all equal).
    pub jain: f64,
    /// The sum of the goodputs as a share of the link's rate.
    pub utilisation: f64,
    /// Every session delivered intact data and saw no stream error.
    pub intact: bool,
    /// Each session's sending path at the end: (minimum RTT, smoothed RTT, congestion window).
    pub paths: Vec<Option<(Duration, Duration, u64)>>,
}

/// Why a crowd run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum CrowdError {
    /// No sessions, or more than [`MAX_SESSIONS`].
    #[error("a crowd needs 1 to {MAX_SESSIONS} sessions")]
    Sessions,
    /// The last session would start after the second half began (its goodput would cover
    /// only part of the measured half, or nothing).
    #[error(
        "the last session starts after half the run: (sessions - 1) × stagger must be at most duration / 2"
    )]
    Stagger,
    /// The cores stopped making progress in virtual time.
    #[error("crowd simulation stuck at t={0:?}")]
    Stuck(Duration),
}

/// One session's two ends and its workload.
struct Member {
    client: Session,
    server: Option<Box<Session>>,
    bulk: Bulk,
    addr: SocketAddr,
    /// Bytes delivered when the second half began.
    at_half: u64,
    /// Its place in the server's count of sessions receiving.
    receiving: crowd::Member,
}

fn member_addr(i: usize) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::new(10, 1, (i >> 8) as u8, i as u8)), 4000)
}

fn key(seed: u64, which: u64) -> StaticSecret {
    StaticSecret::from_bytes(seeded_key(seed, which))
}

/// When session `i` connects: `i × stagger`, or None beyond `Duration::MAX`.
fn start_of(stagger: Duration, i: usize) -> Option<Duration> {
    stagger.checked_mul(u32::try_from(i).ok()?)
}

fn tagged(i: usize, data: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.extend_from_slice(&(i as u16).to_be_bytes());
    out.extend_from_slice(data);
}

/// Runs a crowd.
pub fn run(cfg: &CrowdConfig) -> Result<CrowdReport, CrowdError> {
    if cfg.sessions == 0 || cfg.sessions > MAX_SESSIONS {
        return Err(CrowdError::Sessions);
    }
    let half = cfg.duration / 2;
    if start_of(cfg.stagger, cfg.sessions - 1).is_none_or(|last| last > half) {
        return Err(CrowdError::Stagger);
    }
    let server_key = key(cfg.seed, 0);
    let client_keys: Vec<StaticSecret> = (0..cfg.sessions).map(|i| key(cfg.seed, 1 + i as u64)).collect();
    let mut endpoint = Endpoint::new(
        ServerConfig {
            secret: server_key.clone(),
            clients: client_keys.iter().map(StaticSecret::public_key).collect(),
            session: cfg.session.clone(),
        },
        Seed::from_u64(cfg.seed ^ 0x5e7e7),
    );
    let mut members: Vec<Option<Member>> = (0..cfg.sessions).map(|_| None).collect();
    let mut net = Net::new(vec![cfg.link.clone()], cfg.seed);
    let mut halved = false;
    let mut now = Duration::ZERO;
    let mut buf = Vec::with_capacity(2048);
    let mut wire = Vec::with_capacity(2048);
    let mut idle_steps = 0u32;
    let receiving = Crowd::new();
    let mut next_count = COUNT_EVERY;
    loop {
        // Clients whose start is due.
        for (i, slot) in members.iter_mut().enumerate() {
            if slot.is_none() && start_of(cfg.stagger, i).is_some_and(|t| t <= now) {
                let client_cfg = ClientConfig {
                    secret: client_keys[i].clone(),
                    server_key: server_key.public_key(),
                    session: cfg.session.clone(),
                };
                let addr = member_addr(i);
                let seed = Seed::from_u64(cfg.seed ^ 0xc11e47 ^ ((i as u64) << 20));
                let client = Session::connect(&client_cfg, ts(now), Some(addr), SERVER, seed, 1);
                *slot = Some(Member {
                    client,
                    server: None,
                    bulk: Bulk::new(cfg.seed ^ i as u64, None),
                    addr,
                    at_half: 0,
                    receiving: receiving.join(),
                });
            }
        }
        // Packets arriving now.
        while let Some(a) = net.pop_due(now) {
            if a.data.len() < TAG {
                continue;
            }
            let i = usize::from(u16::from_be_bytes([a.data[0], a.data[1]]));
            let Some(m) = members.get_mut(i).and_then(Option::as_mut) else { continue };
            let data = BytesMut::from(&a.data[TAG..]);
            if a.to_server {
                match endpoint.handle_inline(ts(now), Some(SERVER), m.addr, &data) {
                    DatagramEvent::Route(id) => {
                        if let Some(s) = m.server.as_mut().filter(|s| s.id() == id) {
                            s.handle_datagram(ts(now), Some(SERVER), m.addr, data);
                        }
                    }
                    DatagramEvent::Accepted { session, .. } => m.server = Some(session),
                    DatagramEvent::Respond(_) | DatagramEvent::Dropped(_) | DatagramEvent::Handshake(_) => {}
                }
            } else {
                m.client.handle_datagram(ts(now), Some(m.addr), SERVER, data);
            }
        }
        // Timers, applications and transmissions of every member.
        for (i, m) in members.iter_mut().enumerate().filter_map(|(i, m)| m.as_mut().map(|m| (i, m))) {
            if m.client.poll_timeout().is_some_and(|t| t <= ts(now)) {
                m.client.handle_timeout(ts(now));
            }
            if let Some(s) = m.server.as_mut() {
                if s.poll_timeout().is_some_and(|t| t <= ts(now)) {
                    s.handle_timeout(ts(now));
                }
            }
            loop {
                let mut progressed = false;
                while let Some(e) = m.client.poll_event() {
                    m.bulk.client_step(&mut m.client, Some(&e));
                }
                m.bulk.client_step(&mut m.client, None);
                if let Some(s) = m.server.as_mut() {
                    while let Some(e) = s.poll_event() {
                        m.bulk.server_step(s, Some(&e));
                    }
                    m.bulk.server_step(s, None);
                }
                while let Some(t) = m.client.poll_transmit(ts(now), &mut buf) {
                    tagged(i, &buf[..t.size], &mut wire);
                    net.send(now, 0, true, &wire);
                    progressed = true;
                }
                if let Some(s) = m.server.as_mut() {
                    while let Some(t) = s.poll_transmit(ts(now), &mut buf) {
                        tagged(i, &buf[..t.size], &mut wire);
                        net.send(now, 0, false, &wire);
                        progressed = true;
                    }
                }
                if !progressed {
                    break;
                }
            }
        }
        if now >= next_count {
            next_count += COUNT_EVERY;
            for m in members.iter_mut().flatten() {
                if let Some(s) = m.server.as_mut() {
                    let others = m.receiving.update(s.is_busy_receiving(ts(now), COUNT_EVERY));
                    s.set_shares_ingress(others);
                }
            }
        }
        if !halved && now >= half {
            halved = true;
            for m in members.iter_mut().flatten() {
                m.at_half = m.bulk.delivered;
            }
        }
        let next_start = members.iter().position(Option::is_none).and_then(|i| start_of(cfg.stagger, i));
        let timers = members.iter().flatten().flat_map(|m| {
            [m.client.poll_timeout(), m.server.as_ref().and_then(|s| s.poll_timeout())].into_iter().flatten()
        });
        let next = [net.next_arrival(), next_start, (!halved).then_some(half), Some(next_count)]
            .into_iter()
            .flatten()
            .chain(timers.map(Timestamp::as_duration))
            .min();
        let Some(next) = next else { break };
        if next <= now {
            idle_steps += 1;
            if idle_steps > MAX_IDLE_STEPS {
                return Err(CrowdError::Stuck(now));
            }
        } else {
            idle_steps = 0;
        }
        if next > cfg.duration {
            break;
        }
        now = next.max(now);
    }
    Ok(report(cfg, &members))
}

fn report(cfg: &CrowdConfig, members: &[Option<Member>]) -> CrowdReport {
    let secs = (cfg.duration - cfg.duration / 2).as_secs_f64().max(1e-9);
    let goodput_bps: Vec<f64> = members
        .iter()
        .map(|m| m.as_ref().map_or(0.0, |m| (m.bulk.delivered - m.at_half) as f64 * 8.0 / secs))
        .collect();
    let n = goodput_bps.len() as f64;
    let total: f64 = goodput_bps.iter().sum();
    let mean = total / n;
    let max_deviation = goodput_bps.iter().map(|g| (g - mean).abs()).fold(0.0, f64::max) / mean.max(1e-9);
    let squares: f64 = goodput_bps.iter().map(|g| g * g).sum();
    CrowdReport {
        max_deviation,
        jain: total * total / (n * squares).max(1e-9),
        utilisation: total / cfg.link.rate_bps as f64,
        intact: members.iter().flatten().all(|m| m.bulk.intact && m.bulk.errors.is_empty()),
        paths: members
            .iter()
            .map(|m| m.as_ref().and_then(|m| m.client.path_info(0)).map(|p| (p.min_rtt, p.srtt, p.cwnd)))
            .collect(),
        goodput_bps,
    }
}
