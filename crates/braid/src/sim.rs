//! `braid sim`: the simulator on the command line.

use anyhow::{bail, Context};
use braid_core::cc::Algorithm;
use braid_core::crypto::aead::Cipher;
use braid_core::scheduler::Kind;
use braid_core::{AckPath, SessionConfig, TrafficClass};
use braid_sim::short::ShortSpec;
use braid_sim::units::{parse_duration, parse_rate};
use braid_sim::FlowSpec;
use braid_sim::{LinkSpec, SimConfig};
use clap::Args;
use std::process::ExitCode;
use std::time::Duration;

/// Arguments of `braid sim`.
#[derive(Args, Debug)]
#[command(after_help = "LINK is RATE/DELAY[/key=value...], DELAY one-way: e.g. 20mbit/10ms, \
5mbit/40ms/loss=1%/jitter=2ms. Keys: loss=P%, jitter=D, queue=BYTES|Np|D, ge=P:R:L% \
(Gilbert-Elliott), dup=P%, reorder=P%, capacity=R@T,R@T..., delay=D@T,D@T... (one-way delay changes: a route change), down=T-T,..., drop=T,... (one \
client->server packet lost at each T), back=D (server->client delay), mtu=BYTES (largest IP \
packet; larger ones vanish, as behind a path MTU black hole), mac=D (medium access time per \
packet), shared (both directions share one rate and queue, like Wi-Fi)")]
pub struct SimArgs {
    /// A link (repeat for each): RATE/DELAY[/key=value...].
    #[arg(long = "link", value_name = "LINK", required_unless_present = "lab_links")]
    links: Vec<String>,
    /// The links of a `braid lab` scenario file (the same link spec), before any --link: the
    /// simulator's figure for a lab run.
    #[arg(long = "lab-links", value_name = "SCENARIO.toml")]
    lab_links: Option<std::path::PathBuf>,
    /// Packet scheduler.
    #[arg(long, default_value = "minrtt", help = scheduler_help())]
    scheduler: Kind,
    /// Congestion controller of every path: bbr, bbr-shared, cubic or newreno.
    #[arg(long, default_value = "bbr", value_parser = parse_cc)]
    congestion: Algorithm,
    /// Tell the client's controllers that other senders share its bottlenecks, as a crowd's
    /// server does (with bbr-shared: ProbeRTT drains to half a BDP); without it the client is
    /// alone, as every client starts, and bbr-shared drains as bbr.
    #[arg(long)]
    shared_bottleneck: bool,
    /// Virtual duration of the run.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    duration: Duration,
    /// Seed of every random choice.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Cut link I at time T (0-based link index): I@T, e.g. 0@10s.
    #[arg(long = "cut", value_name = "I@T")]
    cuts: Vec<String>,
    /// Restore link I at time T: I@T.
    #[arg(long = "restore", value_name = "I@T")]
    restores: Vec<String>,
    /// Link I's path joins at time T (the client adds it then, as when an interface comes
    /// up): I@T, I ≥ 1 (link 0 carries the first handshake attempt).
    #[arg(long = "join", value_name = "I@T")]
    joins: Vec<String>,
    /// The client's handshake timeout (the session's): no attempt on one link waits longer,
    /// and the client gives up after this much per link present at the start.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    handshake_timeout: Duration,
    /// How long the handshake's first attempt on each link lasts before the next link is tried
    /// (default 2s; later rounds double it). Set to the handshake timeout for one link at a
    /// time, each for the whole timeout (the daemon's client before failover moved into the
    /// core).
    #[arg(long, value_parser = parse_duration)]
    handshake_first_try: Option<Duration>,
    /// The MTU of the client's interfaces (IP bytes, e.g. 9000): paths search up to it
    /// (RFC 8899), as the daemon's client does with the MTU it reads from each link's
    /// interface. Default: none, every path stays at the session's starting size.
    #[arg(long, value_name = "BYTES")]
    interface_mtu: Option<usize>,
    /// What the client sends: bulk (one stream), cbr:RATE (datagrams of class 0),
    /// layered:RATE,RATE,... (one datagram class per layer, base layer first and most important),
    /// or short:SIZE@INTERVAL (a request/response of SIZE bytes each way on a new stream every
    /// INTERVAL, e.g. short:2kB@100ms; completion times reported).
    #[arg(long, default_value = "bulk", value_parser = Workload::parse)]
    workload: Workload,
    /// Also run short request/response flows next to the workload: SIZE@INTERVAL, e.g.
    /// 2kB@100ms (as the short workload; with bulk, on streams of the same class).
    #[arg(long, value_name = "SIZE@INTERVAL", value_parser = parse_short)]
    short: Option<ShortSpec>,
    /// Payload size of workload datagrams, bytes.
    #[arg(long, default_value_t = 1000)]
    datagram_size: usize,
    /// Delivery deadline of workload datagrams (e.g. 150ms): a datagram still at the sender
    /// when it passes is dropped there; the `deadline` scheduler drops it as soon as no path
    /// can deliver it in time.
    #[arg(long, value_parser = parse_duration)]
    deadline: Option<Duration>,
    /// Transfer exactly this many bytes (e.g. 50MB) instead of running for the whole duration.
    #[arg(long, value_parser = parse_size)]
    bytes: Option<u64>,
    /// Per-stream receive window, bytes (the floor when windows are sized from skew).
    #[arg(long, value_parser = parse_size)]
    stream_window: Option<u64>,
    /// Session-wide receive window, bytes (the floor when windows are sized from skew).
    #[arg(long, value_parser = parse_size)]
    session_window: Option<u64>,
    /// Largest receive window sizing from the paths' delay skew may grant (seed 004 §V); 1
    /// (or anything at or below the configured windows) keeps them fixed.
    #[arg(long, value_parser = parse_size)]
    window_cap: Option<u64>,
    /// Where acknowledgements travel: lowest-rtt, same-path, or secondary (seed 003's
    /// offloading-ACK: the primary path's ACKs on the secondary while its window is large).
    #[arg(long, default_value = "lowest-rtt", value_parser = parse_ack_path)]
    ack_path: AckPath,
    /// Disable blackout freeze (a silent path's congestion state collapses like TCP's).
    #[arg(long)]
    no_blackout_freeze: bool,
    /// Enable loss discrimination (random losses do not cut the window).
    #[arg(long)]
    loss_discrimination: bool,
    /// Which judge classes a loss as random: rtt (the sender's RTT trend) or arrival (the
    /// receiver's inter-arrival times, seed 001 §4.3, reported in PATH_REPORT).
    #[arg(long, default_value = "rtt")]
    loss_judge: braid_core::path::judge::LossJudge,
    /// The two-sided channel monitor (seed 000): the receiver reports loss, jitter and rate
    /// per path, and the schedulers read the reported loss.
    #[arg(long)]
    receiver_reports: bool,
    /// Enable loss fetching (seed 003): stream bytes lost on the primary (highest-capacity)
    /// path are resent on the secondary path, ahead of new data, one packet time apart.
    #[arg(long)]
    loss_fetching: bool,
    /// The packet cipher: aes-256-gcm (the default: what the daemon picks on any CPU with AES
    /// instructions, fixed so that a run reads the same on every machine) or
    /// chacha20-poly1305. Only the key-update limit below depends on it, so a run's figures do
    /// not below 2^22 packets a key; its wall time does (`--link 25mbit/20ms --duration 30s`:
    /// 107× real time against 83× with ChaCha20-Poly1305 here, medians of 10).
    #[arg(long, default_value = "aes-256-gcm")]
    cipher: Cipher,
    /// Update the packet keys after this many packets sealed with one key (default: the
    /// cipher's limit, 2^22 for AES-256-GCM, 2^28 for ChaCha20-Poly1305).
    #[arg(long, value_name = "PACKETS")]
    key_update_packets: Option<u64>,
    /// Update the packet keys after this long (default 2 min).
    #[arg(long, value_parser = parse_duration)]
    key_update_interval: Option<Duration>,
    /// Enable path admission: a path that the seed 000/002 rules predict would lower the total
    /// is kept in standby until it improves.
    #[arg(long)]
    admission: bool,
    /// Static weights for wrr, one per link in link order (e.g. 4,2,1); `auto` or omitted
    /// links are weighted from their measured capacity.
    #[arg(long, value_name = "W,W,...", value_parser = parse_weights)]
    weights: Option<Weights>,
    /// Mark link I's path as backup (repeat for more): used by `backup` only when the others
    /// are down or saturated, by the other schedulers only when nothing else is usable.
    #[arg(long = "backup", value_name = "I")]
    backup: Vec<usize>,
    /// Mark link I's path as secondary (repeat for more): it carries data only while the
    /// other paths are down or cannot keep up.
    #[arg(long = "secondary", value_name = "I")]
    secondary: Vec<usize>,
    /// Cap link I at RATE each way (repeatable): I=RATE, e.g. 1=4mbit.
    #[arg(long = "max-rate", value_name = "I=RATE", value_parser = parse_link_rate)]
    max_rates: Vec<(usize, u64)>,
    /// Cap traffic class C at RATE (repeatable): C=RATE, e.g. 0=2mbit (seed 001's maximum rate).
    #[arg(long = "class-max-rate", value_name = "C=RATE", value_parser = parse_link_rate)]
    class_max_rates: Vec<(usize, u64)>,
    /// Serve traffic class C ahead of its priority until it has RATE (repeatable): C=RATE
    /// (seed 001's minimum rate).
    #[arg(long = "class-min-rate", value_name = "C=RATE", value_parser = parse_link_rate)]
    class_min_rates: Vec<(usize, u64)>,
    /// Give traffic class C its own scheduler, e.g. 0=redundant (repeatable; layered workloads
    /// number their classes 0, 1, 2… base layer first).
    #[arg(long = "class-scheduler", value_name = "C=SCHEDULER", value_parser = parse_class_scheduler)]
    class_schedulers: Vec<(u8, Kind)>,
    /// Selective redundancy (seed 003 §5): critical also copies control frames that stall the
    /// peer if lost and each stream's first bytes onto a second path.
    #[arg(long, default_value = "none")]
    redundancy: braid_core::Redundancy,
    /// Copy the datagrams of traffic class C onto a second path (repeatable; a base layer).
    #[arg(long = "class-duplicate", value_name = "C")]
    class_duplicates: Vec<u8>,
    /// Switch schedulers live at time T: T=SCHEDULER for the session, T=C=SCHEDULER for class
    /// C (repeatable), e.g. 10s=edpf.
    #[arg(long = "switch", value_name = "T=[C=]SCHEDULER", value_parser = parse_switch)]
    switches: Vec<(Duration, Option<u8>, Kind)>,
    /// Leave this much of the start out of the steady-state figures (default: a fifth of the
    /// run, at most 5 s).
    #[arg(long, value_parser = parse_duration)]
    warmup: Option<Duration>,
    /// Print every path's state to stderr at this interval (e.g. 100ms), for debugging.
    #[arg(long, value_parser = parse_duration)]
    trace: Option<Duration>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn scheduler_help() -> String {
    let names: Vec<String> = Kind::ALL.iter().map(|(n, _, d)| format!("{n} ({d})")).collect();
    format!("Packet scheduler: {}", names.join("; "))
}

/// Per-link static weights (None: automatic).
#[derive(Debug, Clone)]
pub struct Weights(Vec<Option<u32>>);

fn parse_weights(s: &str) -> Result<Weights, String> {
    s.split(',')
        .map(|w| match w.trim() {
            "auto" | "" => Ok(None),
            w => match w.parse::<u32>() {
                Ok(n) if n > 0 => Ok(Some(n)),
                _ => Err(format!("weight '{w}' must be a positive whole number or auto")),
            },
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Weights)
}

/// `I=RATE` (a link or class index and a rate such as 4mbit), the rate in bytes/s.
fn parse_link_rate(s: &str) -> Result<(usize, u64), String> {
    let (i, r) = s.split_once('=').ok_or_else(|| format!("'{s}': expected I=RATE, e.g. 1=4mbit"))?;
    let i = i.trim().parse::<usize>().map_err(|_| format!("'{i}' is not an index"))?;
    let bps = parse_rate(r.trim())?;
    if bps < 8 {
        return Err(format!("'{r}': a rate of at least 8 bit/s"));
    }
    Ok((i, bps / 8))
}

fn parse_class_scheduler(s: &str) -> Result<(u8, Kind), String> {
    let (c, k) =
        s.split_once('=').ok_or_else(|| format!("'{s}': expected CLASS=SCHEDULER, e.g. 0=redundant"))?;
    let class = c.trim().parse::<u8>().map_err(|_| format!("'{c}' is not a class number (0-255)"))?;
    Ok((class, k.trim().parse()?))
}

fn parse_switch(s: &str) -> Result<(Duration, Option<u8>, Kind), String> {
    let (t, rest) =
        s.split_once('=').ok_or_else(|| format!("'{s}': expected T=SCHEDULER or T=C=SCHEDULER"))?;
    let at = parse_duration(t)?;
    match rest.split_once('=') {
        Some((c, k)) => {
            let class = c.trim().parse::<u8>().map_err(|_| format!("'{c}' is not a class number (0-255)"))?;
            Ok((at, Some(class), k.trim().parse()?))
        }
        None => Ok((at, None, rest.trim().parse()?)),
    }
}

fn parse_cc(s: &str) -> Result<Algorithm, String> {
    s.parse()
}

fn parse_ack_path(s: &str) -> Result<AckPath, String> {
    match s {
        "lowest-rtt" => Ok(AckPath::LowestRtt),
        "same-path" => Ok(AckPath::SamePath),
        "secondary" => Ok(AckPath::Secondary),
        _ => Err(format!("'{s}': use lowest-rtt, same-path or secondary")),
    }
}

/// Sizes such as `50MB`, `1.5GB`, `700kB` ([`braid_core::units::parse_bytes`]), or a bare
/// number of bytes.
pub fn parse_size(s: &str) -> Result<u64, String> {
    match s.trim().parse::<u64>() {
        Ok(0) => Err(format!("size '{s}' must be positive")),
        Ok(n) => Ok(n),
        Err(_) => braid_core::units::parse_bytes(s),
    }
}

fn parse_event(s: &str, what: &str, links: usize) -> anyhow::Result<(usize, Duration)> {
    let (i, t) = s.split_once('@').with_context(|| format!("--{what} '{s}': expected I@T, e.g. 0@10s"))?;
    let i: usize = i.parse().with_context(|| format!("--{what} '{s}': '{i}' is not a link index"))?;
    if i >= links {
        bail!("--{what} '{s}': link {i} does not exist (links are numbered 0 to {})", links - 1);
    }
    let t = parse_duration(t).map_err(|e| anyhow::anyhow!("--{what} '{s}': {e}"))?;
    Ok((i, t))
}

/// Builds the run from the arguments.
pub fn config(args: &SimArgs) -> anyhow::Result<SimConfig> {
    let mut links = Vec::new();
    if let Some(file) = &args.lab_links {
        links.extend(braid_lab::load_scenario(file)?.links);
    }
    for l in &args.links {
        links.push(LinkSpec::parse(l).map_err(|e| anyhow::anyhow!("--link '{l}': {e}"))?);
    }
    let mut cuts: Vec<(usize, Duration)> = Vec::new();
    for c in &args.cuts {
        cuts.push(parse_event(c, "cut", links.len())?);
    }
    for r in &args.restores {
        let (i, t) = parse_event(r, "restore", links.len())?;
        let Some(pos) = cuts.iter().position(|(ci, ct)| *ci == i && *ct < t) else {
            bail!("--restore '{r}': link {i} has no earlier --cut to undo");
        };
        let (_, from) = cuts.remove(pos);
        links[i].down.push((from, t));
    }
    for (i, from) in cuts {
        links[i].down.push((from, Duration::MAX));
    }
    for (flag, &b) in args
        .backup
        .iter()
        .map(|b| ("--backup", b))
        .chain(args.secondary.iter().map(|b| ("--secondary", b)))
        .chain(args.max_rates.iter().map(|(b, _)| ("--max-rate", b)))
    {
        if b >= links.len() {
            bail!("{flag} {b}: link {b} does not exist (links are numbered 0 to {})", links.len() - 1);
        }
    }
    let mut max_rates = vec![None; links.len()];
    for (i, r) in &args.max_rates {
        max_rates[*i] = Some(*r);
    }
    if let Some(w) = &args.weights {
        if w.0.len() > links.len() {
            bail!("--weights gives {} weights for {} links", w.0.len(), links.len());
        }
    }
    let mut session = SessionConfig {
        scheduler: args.scheduler,
        congestion: args.congestion,
        ack_path: args.ack_path,
        blackout_freeze: !args.no_blackout_freeze,
        loss_discrimination: args.loss_discrimination,
        loss_judge: args.loss_judge,
        receiver_reports: args.receiver_reports,
        loss_fetching: args.loss_fetching,
        path_admission: args.admission,
        redundancy: args.redundancy,
        handshake_timeout: args.handshake_timeout,
        cipher: args.cipher,
        ..SessionConfig::default()
    };
    if let Some(w) = args.stream_window {
        session.stream_window = w;
    }
    if let Some(w) = args.session_window {
        session.session_window = w;
    }
    if let Some(w) = args.window_cap {
        session.receive_window_cap = w;
    }
    session.key_update.packets = args.key_update_packets;
    if let Some(i) = args.key_update_interval {
        session.key_update.interval = i;
    }
    let flows = args.workload.flows(args.datagram_size);
    for (i, f) in flows.iter().enumerate() {
        let class = TrafficClass { priority: i as u8, deadline: args.deadline, ..TrafficClass::default() };
        session.classes.insert(f.class, class);
    }
    for (class, kind) in &args.class_schedulers {
        session.classes.entry(*class).or_default().scheduler = Some(*kind);
    }
    for class in &args.class_duplicates {
        session.classes.entry(*class).or_default().duplicate = true;
    }
    for (class, rate) in &args.class_max_rates {
        let class = u8::try_from(*class)
            .map_err(|_| anyhow::anyhow!("--class-max-rate: class {class} is over 255"))?;
        session.classes.entry(class).or_default().max_rate = Some(*rate);
    }
    for (class, rate) in &args.class_min_rates {
        let class = u8::try_from(*class)
            .map_err(|_| anyhow::anyhow!("--class-min-rate: class {class} is over 255"))?;
        session.classes.entry(class).or_default().min_rate = Some(*rate);
    }
    let mut joins = Vec::new();
    for j in &args.joins {
        let (i, t) = parse_event(j, "join", links.len())?;
        if i == 0 {
            bail!("--join '{j}': link 0 carries the first handshake attempt and is there from the start");
        }
        joins.push((i, t));
    }
    let base = SimConfig::bulk(links, args.duration, args.seed, session);
    Ok(SimConfig {
        bulk: matches!(args.workload, Workload::Bulk),
        bulk_bytes: args.bytes,
        flows,
        trace: args.trace,
        weights: args.weights.clone().map(|w| w.0).unwrap_or_default(),
        backup: args.backup.clone(),
        secondary: args.secondary.clone(),
        max_rates,
        warmup: args.warmup.unwrap_or(base.warmup),
        switches: args.switches.clone(),
        joins,
        handshake_first_try: args.handshake_first_try,
        interface_mtu: args.interface_mtu,
        shared_bottleneck: args.shared_bottleneck,
        short: match args.workload {
            Workload::Short(s) => Some(s),
            _ => args.short,
        },
        ..base
    })
}

/// Runs `braid sim`.
pub fn run(args: SimArgs) -> anyhow::Result<ExitCode> {
    let cfg = config(&args)?;
    let report = braid_sim::run(&cfg)?;
    if args.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.to_table());
    }
    Ok(if report.intact { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// `SIZE@INTERVAL` of short flows.
fn parse_short(s: &str) -> Result<ShortSpec, String> {
    let (size, every) =
        s.split_once('@').ok_or_else(|| format!("'{s}': expected SIZE@INTERVAL, e.g. 2kB@100ms"))?;
    let interval = parse_duration(every)?;
    if interval.is_zero() {
        return Err(format!("'{s}': the interval must be positive"));
    }
    Ok(ShortSpec { size: parse_size(size)?, interval })
}

/// The traffic a simulation runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Workload {
    /// One bulk stream.
    Bulk,
    /// Constant-bit-rate datagrams at this rate.
    Cbr(u64),
    /// One datagram class per layer, at these rates, base layer first.
    Layered(Vec<u64>),
    /// Short request/response flows.
    Short(ShortSpec),
}

impl Workload {
    /// Parses `bulk`, `cbr:RATE` or `layered:RATE,RATE,...`.
    pub fn parse(s: &str) -> Result<Workload, String> {
        if s == "bulk" {
            return Ok(Workload::Bulk);
        }
        if let Some(r) = s.strip_prefix("cbr:") {
            return parse_rate(r).map(Workload::Cbr);
        }
        if let Some(list) = s.strip_prefix("layered:") {
            let rates = list.split(',').map(parse_rate).collect::<Result<Vec<_>, _>>()?;
            return Ok(Workload::Layered(rates));
        }
        if let Some(spec) = s.strip_prefix("short:") {
            return parse_short(spec).map(Workload::Short);
        }
        Err(format!("'{s}' is not a workload: bulk, cbr:RATE, layered:RATE,RATE,... or short:SIZE@INTERVAL"))
    }

    /// The datagram flows of this workload.
    pub fn flows(&self, size: usize) -> Vec<FlowSpec> {
        let rates = match self {
            Workload::Bulk | Workload::Short(_) => return Vec::new(),
            Workload::Cbr(r) => vec![*r],
            Workload::Layered(r) => r.clone(),
        };
        rates.iter().enumerate().map(|(i, r)| FlowSpec { class: i as u8, rate_bps: *r, size }).collect()
    }
}
