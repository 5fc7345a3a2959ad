//! Drives one client and one server core over the simulated network in virtual time.

use crate::connect::Connector;
use crate::flow::{Flow, FlowSpec};
use crate::link::LinkSpec;
use crate::net::{client_addr, link_of, Net, SERVER};
use crate::reorder::LossFreeReorder;
use crate::report::{CutReport, HandshakeReport, PathReport, SimReport};
use crate::short::{ShortFlows, ShortSpec};
use crate::workload::{Bulk, Timeline};
use braid_core::scheduler::Kind;
use braid_core::{
    ClientConfig, DatagramEvent, Endpoint, Seed, ServerConfig, Session, SessionConfig, StaticSecret,
    Timestamp,
};
use bytes::BytesMut;
use std::time::{Duration, Instant};

/// Width of a timeline bucket.
pub const TIMELINE_BUCKET: Duration = Duration::from_millis(100);
/// Interval of the per-path goodput timelines.
pub const PATH_SAMPLE: Duration = Duration::from_secs(1);
/// Virtual-time steps allowed without the clock moving before the run is declared stuck
/// (a core that keeps asking to be woken "now" without doing anything is a bug).
pub(crate) const MAX_IDLE_STEPS: u32 = 100_000;

/// A simulation run.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// The links, in order (link 0 carries the first handshake attempt).
    pub links: Vec<LinkSpec>,
    /// Virtual duration.
    pub duration: Duration,
    /// Seed of every random choice (links and cores).
    pub seed: u64,
    /// Session settings (scheduler, congestion controller, …) for both sides.
    pub session: SessionConfig,
    /// Run the bulk stream.
    pub bulk: bool,
    /// Bytes the bulk stream transfers; None for as many as the run allows.
    pub bulk_bytes: Option<u64>,
    /// Datagram flows (one traffic class each).
    pub flows: Vec<FlowSpec>,
    /// Print every path's state to stderr at this interval (a debugging aid).
    pub trace: Option<Duration>,
    /// Static weighted-round-robin weight of each link's path (None: automatic), by link.
    pub weights: Vec<Option<u32>>,
    /// Links whose paths the client marks as backup.
    pub backup: Vec<usize>,
    /// Links whose paths the client marks as secondary (used when the others are short).
    pub secondary: Vec<usize>,
    /// Per-link rate caps in bytes/s, in link order (None: no cap); both directions.
    pub max_rates: Vec<Option<u64>>,
    /// Figures marked "steady" leave out this much of the start (slow start, first estimates).
    pub warmup: Duration,
    /// Live scheduler changes on the client: at this time, give this traffic class (None: the
    /// session) this scheduler.
    pub switches: Vec<(Duration, Option<u8>, Kind)>,
    /// Short request/response flows on streams of class 0 (see [`crate::short`]).
    pub short: Option<ShortSpec>,
    /// How long each link's first handshake attempt lasts before the next link is tried
    /// (None: the core's [`braid_core::timing::HANDSHAKE_FIRST_TRY`]; the session's handshake
    /// timeout: one link at a time, each for the whole timeout).
    pub handshake_first_try: Option<Duration>,
    /// Links whose paths join late: (link, time). The client adds the path then, as the
    /// daemon does when an interface comes up (a phone entering 3G coverage, seed 003 Fig. 8);
    /// the other links' paths are added at the start. Link 0 carries the first handshake
    /// attempt and is always there; a link that joins late is not tried for the handshake.
    pub joins: Vec<(usize, Duration)>,
    /// The MTU of the client's interfaces, in IP bytes (None: not known). Each path may
    /// search up to it less the IP and UDP headers, as the daemon's client does with the MTU
    /// it reads from each link's interface (`path::mtu`).
    pub interface_mtu: Option<usize>,
    /// The client's controllers are told that other senders share its bottlenecks, as a
    /// crowd's server tells its clients (`braid_core::session::sharing`); false: a client
    /// alone, as every client starts.
    pub shared_bottleneck: bool,
}

impl SimConfig {
    /// A bulk-only run.
    pub fn bulk(links: Vec<LinkSpec>, duration: Duration, seed: u64, session: SessionConfig) -> Self {
        SimConfig {
            links,
            duration,
            seed,
            session,
            bulk: true,
            bulk_bytes: None,
            flows: Vec::new(),
            trace: None,
            weights: Vec::new(),
            backup: Vec::new(),
            secondary: Vec::new(),
            max_rates: Vec::new(),
            warmup: (duration / 5).min(Duration::from_secs(5)),
            switches: Vec::new(),
            short: None,
            joins: Vec::new(),
            handshake_first_try: None,
            interface_mtu: None,
            shared_bottleneck: false,
        }
    }

    /// When flows stop sending, so that what they sent can arrive before the run ends.
    pub fn flow_stop(&self) -> Duration {
        self.duration - (self.duration / 10).min(Duration::from_secs(2))
    }
}

/// Adds link `i`'s path on the client and applies the link's settings to it.
pub(crate) fn join_path(cfg: &SimConfig, client: &mut Session, now: Duration, i: usize) {
    if let Ok(id) = client.add_path(ts(now), Some(client_addr(i)), SERVER) {
        configure_path(cfg, client, now, i, id);
    }
}

/// Applies link `i`'s weight, status and rate cap to its path `id`.
pub(crate) fn configure_path(cfg: &SimConfig, client: &mut Session, now: Duration, i: usize, id: u8) {
    if let Some(w) = cfg.weights.get(i).copied().flatten() {
        let _ = client.set_path_weight(id, Some(w));
    }
    if cfg.backup.contains(&i) {
        let _ = client.set_path_status(id, braid_core::wire::PathStatusKind::Backup);
    }
    if cfg.secondary.contains(&i) {
        let _ = client.set_path_status(id, braid_core::wire::PathStatusKind::Secondary);
    }
    if let Some(cap) = cfg.max_rates.get(i).copied().flatten() {
        let _ = client.set_path_max_rate(ts(now), id, Some(cap));
    }
    if let Some(mtu) = cfg.interface_mtu {
        // The simulator's addresses are IPv4: 20 bytes of IP header and 8 of UDP.
        let _ = client.set_path_mtu_ceiling(id, mtu.saturating_sub(28));
    }
}

/// Why a run could not complete.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No links.
    #[error("at least one --link is needed")]
    NoLinks,
    /// More links than the simulator addresses.
    #[error("at most 250 links")]
    TooManyLinks,
    /// The cores stopped making progress in virtual time.
    #[error("simulation stuck at t={0:?}: a core keeps asking to be woken without acting (timers: {1})")]
    Stuck(Duration, String),
}

pub(crate) fn ts(t: Duration) -> Timestamp {
    Timestamp::from_duration(t)
}

struct Sides {
    client: Session,
    endpoint: Endpoint,
    server: Option<Box<Session>>,
}

/// Runs a simulation.
pub fn run(cfg: &SimConfig) -> Result<SimReport, SimError> {
    if cfg.links.is_empty() {
        return Err(SimError::NoLinks);
    }
    if cfg.links.len() > 250 {
        return Err(SimError::TooManyLinks);
    }
    let wall = Instant::now();
    let client_key = StaticSecret::from_bytes(seeded_key(cfg.seed, 1));
    let server_key = StaticSecret::from_bytes(seeded_key(cfg.seed, 2));
    let client_cfg = ClientConfig {
        secret: client_key.clone(),
        server_key: server_key.public_key(),
        session: cfg.session.clone(),
    };
    let server_cfg = ServerConfig {
        secret: server_key,
        clients: vec![client_key.public_key()],
        session: cfg.session.clone(),
    };
    let now = Duration::ZERO;
    // Paths that join late wait; the others are added at the start (they wait for the
    // handshake, then validate).
    let mut joins: Vec<(usize, Duration)> = Vec::new();
    for i in 1..cfg.links.len() {
        match cfg.joins.iter().find(|(l, _)| *l == i) {
            Some(&(_, at)) if at > now => joins.push((i, at)),
            _ => {}
        }
    }
    let pending: Vec<usize> = joins.iter().map(|(i, _)| *i).collect();
    let (mut connector, client) = Connector::start(cfg, client_cfg, now, &pending);
    let mut now = now;
    let mut sides = Sides {
        client,
        endpoint: Endpoint::new(server_cfg, Seed::from_u64(cfg.seed ^ 0x5e7e7)),
        server: None,
    };
    let mut whole_run_reorder = 0usize;
    let mut holes = crate::holes::HoleFill::default();
    let mut receive_window = 0u64;
    let mut lossfree = LossFreeReorder::new(&cfg.links);
    let mut switched: Vec<(Duration, Option<u8>)> = Vec::new();
    let mut warmed_up = false;
    let mut net = Net::new(cfg.links.clone(), cfg.seed);
    let mut bulk = Bulk::new(cfg.seed, cfg.bulk_bytes);
    let mut short = cfg.short.map(|s| ShortFlows::new(s, cfg.seed));
    let mut flows: Vec<Flow> = cfg
        .flows
        .iter()
        .map(|f| {
            let deadline = cfg.session.classes.get(&f.class).and_then(|c| c.deadline);
            Flow::new(f.clone(), Duration::ZERO).with_deadline(deadline)
        })
        .collect();
    let flow_stop = cfg.flow_stop();
    let mut timeline = Timeline::new(TIMELINE_BUCKET, cfg.duration);
    let mut buf = Vec::with_capacity(2048);
    let mut idle_steps = 0u32;
    let mut finished_at = None;
    let mut next_trace = Duration::ZERO;
    // Stream bytes received on each link's path, sampled every second (per-path timelines).
    let mut path_samples: Vec<Vec<u64>> = vec![Vec::new(); cfg.links.len()];
    let mut next_sample = Duration::ZERO;
    let mut arrived: Vec<(usize, braid_core::datagram::Datagram)> = Vec::new();
    loop {
        // Packets arriving now.
        while let Some(a) = net.pop_due(now) {
            let data = BytesMut::from(&a.data[..]);
            if a.to_server {
                deliver_to_server(&mut sides, now, a.link, data);
                // Datagrams this packet carried, tagged with the link they came on.
                if let Some(s) = sides.server.as_mut() {
                    while let Some(d) = s.recv_datagram() {
                        arrived.push((a.link, d));
                    }
                }
            } else {
                sides.client.handle_datagram(ts(now), Some(client_addr(a.link)), SERVER, data);
            }
        }
        // Timers.
        if sides.client.poll_timeout().is_some_and(|t| t <= ts(now)) {
            sides.client.handle_timeout(ts(now));
        }
        if let Some(s) = sides.server.as_mut() {
            if s.poll_timeout().is_some_and(|t| t <= ts(now)) {
                s.handle_timeout(ts(now));
            }
        }
        // A handshake attempt that ended unanswered: the next link, as the daemon does.
        if sides.client.is_closed() {
            let pending: Vec<usize> = joins.iter().map(|(i, _)| *i).collect();
            if let Some(next) = connector.next(cfg, now, &sides.client, &pending) {
                sides.client = next;
            }
        }
        // Paths joining now.
        joins.retain(|&(i, at)| {
            if at <= now {
                join_path(cfg, &mut sides.client, now, i);
            }
            at > now
        });
        // Live scheduler changes due now.
        for (at, class, kind) in &cfg.switches {
            if *at <= now && !switched.contains(&(*at, *class)) {
                switched.push((*at, *class));
                match class {
                    None => sides.client.set_scheduler(*kind),
                    Some(c) => sides.client.set_class_scheduler(*c, Some(*kind)),
                }
            }
        }
        // Applications, then transmissions, until both sides are quiet.
        loop {
            let mut progressed = false;
            while let Some(e) = sides.client.poll_event() {
                if matches!(e, braid_core::Event::Connected) {
                    connector.established(now);
                }
                if cfg.bulk {
                    bulk.client_step(&mut sides.client, Some(&e));
                }
            }
            if cfg.bulk {
                bulk.client_step(&mut sides.client, None);
            }
            if let Some(sf) = short.as_mut() {
                sf.client_step(now, &mut sides.client, flow_stop);
            }
            if now < flow_stop {
                for f in &mut flows {
                    f.send_due(now, &mut sides.client);
                }
            }
            if let Some(s) = sides.server.as_mut() {
                while let Some(e) = s.poll_event() {
                    if cfg.bulk {
                        let got = bulk.server_step(s, Some(&e));
                        timeline.add(now, got);
                    }
                    // The bulk stream is the bulk workload's, not a short flow.
                    let bulk_stream = matches!(e, braid_core::Event::Stream(braid_core::StreamEvent::Opened(id))
                        if cfg.bulk && bulk.stream() == Some(id));
                    if let Some(sf) = short.as_mut().filter(|_| !bulk_stream) {
                        sf.server_step(s, Some(&e));
                    }
                }
                if let Some(sf) = short.as_mut() {
                    sf.server_step(s, None);
                }
                if cfg.bulk {
                    let got = bulk.server_step(s, None);
                    timeline.add(now, got);
                }
                let released = std::iter::from_fn(|| s.recv_datagram()).map(|d| (None, d));
                for (link, d) in arrived.drain(..).map(|(l, d)| (Some(l), d)).chain(released) {
                    timeline.add(now, d.data.len() as u64);
                    if let Some(f) = flows.iter_mut().find(|f| f.spec.class == d.class) {
                        f.on_received(now, &d.data, link);
                    }
                }
            }
            while let Some(t) = sides.client.poll_transmit(ts(now), &mut buf) {
                let link = t.source.and_then(link_of).unwrap_or(0);
                net.send(now, link, true, &buf[..t.size]);
                progressed = true;
            }
            if let Some(s) = sides.server.as_mut() {
                while let Some(t) = s.poll_transmit(ts(now), &mut buf) {
                    let link = link_of(t.destination).unwrap_or(0);
                    net.send(now, link, false, &buf[..t.size]);
                    progressed = true;
                }
            }
            if !progressed {
                break;
            }
        }
        for r in sides.client.drain_lost_ranges() {
            holes.on_lost(&r, bulk.delivered);
        }
        holes.on_delivered(now, bulk.delivered);
        if let Some(every) = cfg.trace {
            if now >= next_trace {
                eprintln!("{}", trace_line(now, &sides, bulk.delivered));
                next_trace = now + every;
            }
        }
        while now >= next_sample && next_sample <= cfg.duration {
            let got = server_stream_bytes(&sides, cfg.links.len());
            for (samples, b) in path_samples.iter_mut().zip(got) {
                samples.push(b);
            }
            next_sample += PATH_SAMPLE;
        }
        let drops = (0..cfg.links.len())
            .map(|i| net.counters(i))
            .map(|c| c.up_drops.iter().chain(&c.down_drops).sum::<u64>())
            .sum();
        if let Some(s) = sides.server.as_ref() {
            lossfree.observe(now, drops, warmed_up, || s.reorder_now());
            receive_window = receive_window.max(s.receive_windows().1);
        }
        if !warmed_up && now >= cfg.warmup {
            warmed_up = true;
            if let Some(s) = sides.server.as_mut() {
                whole_run_reorder = s.reorder_max();
                s.reset_reorder_max();
            }
        }
        if bulk.complete && finished_at.is_none() {
            finished_at = Some(now);
        }
        if sides.client.is_closed()
            || (cfg.bulk && cfg.bulk_bytes.is_some() && bulk.complete && flows.is_empty())
        {
            break;
        }
        // Next instant something happens.
        let next_switch = cfg
            .switches
            .iter()
            .map(|(t, c, _)| (*t, *c))
            .filter(|k| !switched.contains(k))
            .map(|(t, _)| t)
            .min();
        let next_flow = short.as_ref().map(ShortFlows::next_wake).filter(|t| *t > now && *t < flow_stop);
        let next_join = joins.iter().map(|(_, t)| *t).min();
        let next = [
            net.next_arrival(),
            next_switch,
            next_join,
            next_flow,
            sides.client.poll_timeout().map(|t| t.as_duration()),
            sides.server.as_ref().and_then(|s| s.poll_timeout()).map(|t| t.as_duration()),
        ]
        .into_iter()
        .flatten()
        .min();
        let Some(next) = next else { break };
        if next <= now {
            idle_steps += 1;
            if idle_steps > MAX_IDLE_STEPS {
                let mut timers = format!("client {:?}", sides.client.timers());
                if let Some(s) = sides.server.as_ref() {
                    timers += &format!(", server {:?}", s.timers());
                }
                return Err(SimError::Stuck(now, timers));
            }
        } else {
            idle_steps = 0;
        }
        let next = next.max(now);
        if next > cfg.duration {
            break;
        }
        now = next;
    }
    let end = finished_at.unwrap_or(cfg.duration).max(Duration::from_millis(1));
    let mut report = build_report(cfg, &sides, &net, &bulk, timeline, end, wall.elapsed());
    report.handshake = HandshakeReport {
        attempts: connector.attempts(),
        established_ms: connector.established_on().map(|(_, t)| t.as_secs_f64() * 1e3),
        link: connector.established_on().map(|(l, _)| l),
        gave_up: connector.gave_up().map(|(e, _)| e.to_string()),
        gave_up_ms: connector.gave_up().map(|(_, t)| t.as_secs_f64() * 1e3),
    };
    report.reorder_max_steady_packets = report.reorder_max_packets;
    report.reorder_max_lossfree_packets = lossfree.max;
    report.reorder_mean_lossfree_packets = lossfree.mean();
    report.receive_window_bytes = receive_window;
    report.reorder_max_packets = report.reorder_max_packets.max(whole_run_reorder);
    report.classes = flows.iter().map(|f| f.report()).collect();
    if let Some(sf) = &short {
        report.short_flows = Some(sf.report());
        report.intact &= sf.intact && sf.errors.is_empty();
        report.errors.extend(sf.errors.iter().cloned());
    }
    let fetch = sides.client.fetch_stats();
    report.hole_fill = crate::holes::HoleFillReport {
        fetched_packets: fetch.fetched_packets,
        fetch_fallbacks: fetch.fallbacks,
        ..holes.report()
    };
    for (p, samples) in report.paths.iter_mut().zip(&path_samples) {
        p.timeline_bps =
            samples.windows(2).map(|w| (w[1] - w[0]) as f64 * 8.0 / PATH_SAMPLE.as_secs_f64()).collect();
    }
    if !cfg.bulk {
        report.intact &= report.classes.iter().all(|c| c.duplicates == 0) && report.closed.is_none();
    }
    Ok(report)
}

/// One line of `--trace` output: delivered bytes and every path's state on both sides.
fn trace_line(now: Duration, sides: &Sides, delivered: u64) -> String {
    let mut line = format!("{:>8.3}s delivered={delivered}", now.as_secs_f64());
    let sessions = std::iter::once(("c", &sides.client)).chain(sides.server.as_deref().map(|s| ("s", s)));
    for (side, s) in sessions {
        for id in s.path_ids() {
            if let Some(p) = s.path_info(id) {
                line += &format!(
                    " | {side}{id} {:?} cwnd={} inflight={}{} pace={:.0}k cap={:.0}k dr={:.0}k pair={:.0}k srtt={:.1}ms via={} sent={} lost={}",
                    p.state,
                    p.cwnd,
                    p.in_flight,
                    if p.stranded > 0 { format!(" stranded={}", p.stranded) } else { String::new() },
                    p.pacing_rate * 8.0 / 1e3,
                    p.capacity * 8.0 / 1e3,
                    p.delivery_rate * 8.0 / 1e3,
                    p.packet_pair.unwrap_or(0.0) * 8.0 / 1e3,
                    p.srtt.as_secs_f64() * 1e3,
                    p.ack_route.map_or("-".to_string(), |r| r.to_string()),
                    p.stats.packets_sent,
                    p.stats.packets_lost
                );
            }
        }
        line += &format!(" | {side} reorder={} flow={:?}", s.reorder_now(), s.flow_control());
    }
    line
}

/// Stream bytes the server has received on each link's path so far.
fn server_stream_bytes(sides: &Sides, links: usize) -> Vec<u64> {
    let mut out = vec![0; links];
    if let Some(s) = sides.server.as_deref() {
        for id in s.path_ids() {
            if let Some(p) = s.path_info(id) {
                if let Some(slot) = link_of(p.remote).and_then(|i| out.get_mut(i)) {
                    *slot = p.stats.stream_bytes_received;
                }
            }
        }
    }
    out
}

fn deliver_to_server(sides: &mut Sides, now: Duration, link: usize, data: BytesMut) {
    let remote = client_addr(link);
    match sides.endpoint.handle_inline(ts(now), Some(SERVER), remote, &data) {
        DatagramEvent::Route(id) => {
            if let Some(s) = sides.server.as_mut().filter(|s| s.id() == id) {
                s.handle_datagram(ts(now), Some(SERVER), remote, data);
            }
        }
        DatagramEvent::Accepted { session, .. } => sides.server = Some(session),
        DatagramEvent::Respond(_) | DatagramEvent::Dropped(_) | DatagramEvent::Handshake(_) => {}
    }
}

/// 32 key bytes derived from the run's seed (`which` tells the keys of one run apart).
pub(crate) fn seeded_key(seed: u64, which: u64) -> [u8; 32] {
    use rand_core::{RngCore, SeedableRng};
    let mut k = [0u8; 32];
    rand_chacha::ChaCha8Rng::seed_from_u64(seed.wrapping_mul(31).wrapping_add(which)).fill_bytes(&mut k);
    k
}

fn build_report(
    cfg: &SimConfig,
    sides: &Sides,
    net: &Net,
    bulk: &Bulk,
    timeline: Timeline,
    end: Duration,
    wall: Duration,
) -> SimReport {
    let secs = end.as_secs_f64();
    let capacity: u64 = cfg.links.iter().map(|l| l.rate_bps).sum();
    let goodput = timeline.bytes.iter().sum::<u64>() as f64 * 8.0 / secs;
    let server = sides.server.as_deref();
    let paths = (0..cfg.links.len())
        .map(|i| {
            let client_path = sides.client.path_ids().into_iter().find_map(|id| {
                let info = sides.client.path_info(id)?;
                (info.local == Some(client_addr(i))).then_some(info)
            });
            let server_path = server.and_then(|s| {
                s.path_ids().into_iter().find_map(|id| {
                    let info = s.path_info(id)?;
                    (info.remote == client_addr(i)).then_some(info)
                })
            });
            let assigned =
                client_path.as_ref().map_or(0, |p| p.stats.datagrams_sent + p.stats.datagrams_expired);
            let arrived = server_path.as_ref().map_or(0, |p| p.stats.datagrams_received);
            PathReport {
                datagrams_assigned: assigned,
                datagrams_received: arrived,
                datagram_loss_pct: if assigned == 0 {
                    0.0
                } else {
                    100.0 * assigned.saturating_sub(arrived) as f64 / assigned as f64
                },
                monitor: client_path
                    .as_ref()
                    .map_or_else(|| "down".into(), |p| p.monitor_state.name().into()),
                capacity_bps: client_path.as_ref().map_or(0.0, |p| p.capacity * 8.0),
                impairment_loss_pct: client_path.as_ref().map_or(0.0, |p| p.impairment_loss * 100.0),
                random_losses: client_path.as_ref().map_or(0, |p| p.random_losses),
                reported_loss_pct: client_path.as_ref().and_then(|p| p.reported_loss).map(|l| l * 100.0),
                congestion_losses: client_path.as_ref().map_or(0, |p| p.congestion_losses),
                blackouts: client_path.as_ref().map_or(0, |p| p.stats.blackouts),
                link: cfg.links[i].to_string(),
                goodput_bps: server_path
                    .as_ref()
                    .map_or(0.0, |p| p.stats.stream_bytes_received as f64 * 8.0 / secs),
                srtt_ms: client_path.as_ref().map_or(0.0, |p| p.srtt.as_secs_f64() * 1e3),
                mtu: client_path.as_ref().map_or(0, |p| p.mtu),
                server_mtu: server_path.as_ref().map_or(0, |p| p.mtu),
                lost_packets: client_path.as_ref().map_or(0, |p| p.stats.packets_lost),
                retransmitted_bytes: client_path.as_ref().map_or(0, |p| p.stats.retransmitted_bytes),
                state: client_path
                    .as_ref()
                    .map_or_else(|| "closed".into(), |p| format!("{:?}", p.state).to_lowercase()),
                timeline_bps: Vec::new(),
                queue_drops: net.counters(i).up_drops[0],
                wire_drops: net.counters(i).up_drops[1],
                return_bytes: net.counters(i).down_bytes,
            }
        })
        .collect();
    let cuts = cut_reports(cfg, &timeline);
    SimReport {
        seed: cfg.seed,
        scheduler: sides.client.scheduler_name().to_string(),
        congestion: cfg.session.congestion.to_string(),
        duration_s: secs,
        goodput_bps: goodput,
        capacity_bps: capacity as f64,
        efficiency: goodput / capacity as f64,
        intact: bulk.intact && bulk.errors.is_empty() && (cfg.bulk_bytes.is_none() || bulk.complete),
        classes: Vec::new(),
        delivered_bytes: bulk.delivered,
        complete: bulk.complete,
        reorder_max_packets: server.map_or(0, |s| s.reorder_max()),
        reorder_max_steady_packets: 0,
        reorder_max_lossfree_packets: 0,
        reorder_mean_lossfree_packets: 0.0,
        receive_window_bytes: 0,
        warmup_s: cfg.warmup.as_secs_f64(),
        retransmitted_bytes: sides.client.retransmitted_bytes(),
        hole_fill: Default::default(),
        packets_sent: sides.client.stats().packets_sent + server.map_or(0, |s| s.stats().packets_sent),
        bytes_sent: [Some(&sides.client), server]
            .into_iter()
            .flatten()
            .flat_map(|s| s.path_ids().into_iter().filter_map(|id| s.path_info(id)))
            .map(|p| p.stats.bytes_sent)
            .sum(),
        critical_copies: [Some(&sides.client), server]
            .into_iter()
            .flatten()
            .map(|s| s.critical_copies().0)
            .sum(),
        critical_copy_bytes: [Some(&sides.client), server]
            .into_iter()
            .flatten()
            .map(|s| s.critical_copies().1)
            .sum(),
        acks_offloaded: [Some(&sides.client), server]
            .into_iter()
            .flatten()
            .map(|s| s.ack_offload_stats().offloaded)
            .sum(),
        acks_dropped: [Some(&sides.client), server]
            .into_iter()
            .flatten()
            .map(|s| s.ack_offload_stats().dropped)
            .sum(),
        short_flows: None,
        key_phase: sides.client.key_phase(),
        paths,
        timeline: timeline
            .bytes
            .iter()
            .enumerate()
            .take_while(|(i, _)| (*i as u64) * 100 < end.as_millis() as u64)
            .map(|(i, b)| (i as u64 * 100, *b as f64 * 8.0 / TIMELINE_BUCKET.as_secs_f64()))
            .collect(),
        cuts,
        closed: sides.client.close_reason().map(|r| r.to_string()),
        handshake: HandshakeReport::default(),
        errors: bulk.errors.clone(),
        wire_digest: format!("{:016x}", net.digest()),
        wall_s: wall.as_secs_f64(),
        speedup: end.as_secs_f64() / wall.as_secs_f64().max(1e-9),
    }
}

/// For every outage: how long until the 1-second goodput average reached 90% of the capacity
/// of the links still up.
fn cut_reports(cfg: &SimConfig, timeline: &Timeline) -> Vec<CutReport> {
    let mut out = Vec::new();
    for (i, l) in cfg.links.iter().enumerate() {
        for (from, to) in &l.down {
            let surviving: u64 = cfg
                .links
                .iter()
                .enumerate()
                .filter(|(j, o)| *j != i && !o.is_down(*from))
                .map(|(_, o)| o.rate_bps)
                .sum();
            let target = 0.9 * surviving as f64;
            let mut recovery = None;
            let mut t = *from;
            while t + Duration::from_secs(1) <= cfg.duration.min(*to) {
                if timeline.average(t, Duration::from_secs(1)) >= target {
                    recovery = Some((t - *from).as_millis() as u64);
                    break;
                }
                t += TIMELINE_BUCKET;
            }
            out.push(CutReport {
                link: i,
                at_ms: from.as_millis() as u64,
                until_ms: (*to < Duration::MAX / 2).then_some(to.as_millis() as u64),
                surviving_bps: surviving as f64,
                recovery_ms: recovery,
            });
        }
    }
    out
}
